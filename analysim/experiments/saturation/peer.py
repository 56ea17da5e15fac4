"""The FGD simulator's (hkust-adsl/kubernetes-scheduler-simulator) cached saturation curves,
read so that our curves can be compared with them point by point.

The peer's repository keeps, per workload, policy, tune ratio and seed, one row per curve in
``experiments/analysis/expected_results/analysis_{allo,frag_ratio,frag}_discrete.csv``
(columns ``workload, sc_policy, tune, seed, [total_gpus,] 0, 1, ..., 130``).
:func:`read_peer_curves` turns them into one tidy table; :func:`compare_with_peer` lines our
curves up against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from analysim.sharing.resources import ResourceError

#: our placement name -> the peer's policy folder name
PEER_POLICIES = {
    "random": "01-Random",
    "dot_product": "02-DotProd",
    "gpu_clustering": "03-GpuClustering",
    "gpu_packing": "04-GpuPacking",
    "best_fit": "05-BestFit",
    "fgd": "06-FGD",
}
#: the placements whose runs are fully determined by the arrival order and tie-break prefixes
DETERMINISTIC = ("fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering")

_FILES = {
    "alloc_pct": "analysis_allo_discrete.csv",
    "frag_ratio_pct": "analysis_frag_ratio_discrete.csv",
    "frag_amount_pct": "analysis_frag_discrete.csv",
}
METRICS = {
    "allocated_pct": "alloc_pct",
    "frag_ratio_pct": "frag_ratio_pct",
    "frag_amount_pct": "frag_amount_pct",
}


def _tidy(path: Path, value: str) -> pd.DataFrame:
    if not path.is_file():
        raise ResourceError(f"peer curves: {path} is missing")
    wide = pd.read_csv(path)
    keys = ["workload", "sc_policy", "tune", "seed"]
    missing = [c for c in keys if c not in wide.columns]
    if missing:
        raise ResourceError(
            f"{path}: no column {missing[0]!r} (found {list(wide.columns)[:6]} ...)"
        )
    points = [c for c in wide.columns if c.isdigit()]
    long = wide.melt(id_vars=keys, value_vars=points, var_name="arrived_pct", value_name=value)
    long["arrived_pct"] = long["arrived_pct"].astype(int)
    return long.dropna(subset=[value])


def read_peer_curves(folder: str | Path, workloads: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per ``workload, policy, tune, seed, arrived_pct`` with ``alloc_pct,
    frag_ratio_pct, frag_amount_pct`` from a folder of the peer's ``analysis_*_discrete.csv``.
    ``workload`` loses its ``openb_pod_list_`` prefix (``multigpu50``); ``policy`` is our
    placement name (``fgd``)."""
    folder = Path(folder)
    frames = [_tidy(folder / name, value) for value, name in _FILES.items()]
    keys = ["workload", "sc_policy", "tune", "seed", "arrived_pct"]
    table = frames[0]
    for frame in frames[1:]:
        table = table.merge(frame, on=keys, how="outer")
    table["workload"] = table["workload"].str.replace("openb_pod_list_", "", regex=False)
    ours = {v: k for k, v in PEER_POLICIES.items()}
    unknown = sorted(set(table["sc_policy"]) - set(ours))
    if unknown:
        raise ResourceError(f"peer curves: unknown policy {unknown[0]!r} in {folder}")
    table["policy"] = table["sc_policy"].map(ours)
    if workloads is not None:
        table = table[table["workload"].isin(list(workloads))]
    columns = ["workload", "policy", "tune", "seed", "arrived_pct", *_FILES]
    return table[columns].sort_values(columns[:5]).reset_index(drop=True)


def compare_with_peer(curve: pd.DataFrame, peer: pd.DataFrame) -> pd.DataFrame:
    """Our curve (``saturate``) beside the peer's rows for the same run (one workload,
    policy, seed), one row per percent the peer has: ``arrived_pct`` and for each metric
    ours, the peer's and the absolute difference (``allocated_pct``, ``peer_allocated_pct``,
    ``diff_allocated_pct``, ...)."""
    peer = peer.set_index("arrived_pct")
    mine = curve.set_index("arrived_pct")
    out = pd.DataFrame(index=peer.index)
    for ours, theirs in METRICS.items():
        out[ours] = mine[ours].reindex(peer.index).astype(float)
        out[f"peer_{ours}"] = peer[theirs].astype(float)
        out[f"diff_{ours}"] = (out[ours] - out[f"peer_{ours}"]).abs()
    return out.reset_index()


def count_matching(comparison: pd.DataFrame, tolerance: dict[str, float] | None = None) -> dict:
    """Points where ours equals the peer's, per metric: ``allocated_pct`` exactly (both are
    rounded to 0.01), ``frag_ratio_pct`` within 1e-9 (an unrounded mean), ``frag_amount_pct``
    within 0.011 (one rounding step: the peer's per-arrival amounts are printed with two
    decimals, ours are exact). Returns ``{metric: (matching, points, largest difference)}``."""
    tolerance = {
        "allocated_pct": 0.0,
        "frag_ratio_pct": 1e-9,
        "frag_amount_pct": 0.011,
        **(tolerance or {}),
    }
    out = {}
    for metric in METRICS:
        diff = comparison[f"diff_{metric}"].to_numpy(dtype=float)
        diff = np.where(np.isnan(diff), np.inf, diff)
        ok = diff <= tolerance[metric] + 1e-12
        out[metric] = (int(ok.sum()), len(diff), float(diff.max()) if len(diff) else 0.0)
    return out
