"""Notebook 11's studies of failures and checkpoints (issue 28): a checkpoint-interval sweep
at a few node MTBFs, and preemption with failures off and on.

>>> from analysim.experiments.failure_study import checkpoint_sweep    # doctest: +SKIP
>>> checkpoint_sweep(jobs, cluster, [1800, 7200], [604800], repair_time=3600)  # doctest: +SKIP

Both reuse :func:`analysim.experiments.figures.sensitivity` (one run per value and seed, the
configuration ``base``, then the common fields) and keep a tidy table: one row per run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.experiments.figures import sensitivity
from analysim.policies.costs import young_daly_interval
from analysim.results.readable import readable_unit

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.workload import Workload

COLUMNS = ("avg_jct", "lost_gpu_hours", "goodput_ratio", "restarts")
"""The metrics each row of the studies keeps (``lost_gpu_hours``: ``lost_gpu_seconds`` / 3600)."""


def mtbf_label(seconds: float) -> str:
    """A node MTBF as a legend reads it: ``"7 days"``, ``"12 h"``."""
    unit, size = readable_unit(float(seconds))
    return f"{float(seconds) / size:,.3g} {unit}"


def _tidy(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    frame = frame.copy()
    for column in ("lost_gpu_seconds", "goodput_ratio", "restarts"):
        if column not in frame.columns:
            frame[column] = float("nan")
    # a run without failures or checkpoints has no such columns: it lost nothing, restarted
    # nothing; its goodput ratio stays NaN (not measured)
    frame[["lost_gpu_seconds", "restarts"]] = frame[["lost_gpu_seconds", "restarts"]].fillna(0.0)
    frame["lost_gpu_hours"] = frame["lost_gpu_seconds"].astype(float) / 3600.0
    return frame[[*keys, *COLUMNS]].reset_index(drop=True)


def checkpoint_sweep(
    workload: Workload | Callable[[int], Workload],
    cluster: Cluster,
    intervals: Sequence[float],
    mtbfs: Sequence[float],
    *,
    repair_time: float,
    restart_overhead: float | None = None,
    seeds: Sequence[int] = (0,),
    base: SimConfig | Mapping[str, Any] | None = None,
    progress: bool = False,
    **common: Any,
) -> pd.DataFrame:
    """Runs with ``checkpoint_every`` set to each of ``intervals`` (seconds) at each node
    MTBF of ``mtbfs`` (seconds; drawn failures, each node down ``repair_time`` s), for each
    seed: one row per run, columns ``checkpoint_every, node_mtbf, mtbf, seed`` (``mtbf``: the
    MTBF as a legend reads it) and :data:`COLUMNS`. ``workload``, ``base`` and ``common`` as
    in :func:`~analysim.experiments.figures.sensitivity`."""
    if not intervals or not mtbfs:
        raise ValueError("checkpoint_sweep: give at least one interval and one MTBF")
    frames = []
    for mtbf in mtbfs:
        frame = sensitivity(
            workload,
            cluster,
            "checkpoint_every",
            list(intervals),
            seeds=seeds,
            base=base,
            progress=progress,
            **{
                **common,
                "node_mtbf": mtbf,
                "repair_time": repair_time,
                "restart_overhead": restart_overhead,
            },
        )
        frame.insert(1, "node_mtbf", float(mtbf))
        frame.insert(2, "mtbf", mtbf_label(mtbf))
        frames.append(frame)
    keys = ["checkpoint_every", "node_mtbf", "mtbf", "seed"]
    return _tidy(pd.concat(frames, ignore_index=True), keys)


def young_daly_marks(mtbfs: Sequence[float], checkpoint_cost: float, nodes: int = 1) -> dict:
    """``{mtbf label: Young/Daly interval}`` (seconds) of a job on ``nodes`` nodes whose
    checkpoint costs ``checkpoint_cost`` s: ``sqrt(2 x cost x MTBF / nodes)`` per MTBF."""
    return {mtbf_label(m): young_daly_interval(checkpoint_cost, m / nodes) for m in mtbfs}


def preemption_under_failures(
    workload: Workload | Callable[[int], Workload],
    cluster: Cluster,
    failures: Mapping[str, Any],
    *,
    seeds: Sequence[int] = (0,),
    base: SimConfig | Mapping[str, Any] | None = None,
    progress: bool = False,
    **common: Any,
) -> pd.DataFrame:
    """Runs without and with preemption, failures off and on (``failures``: the SimConfig
    fields that turn them on, e.g. ``node_mtbf``, ``repair_time``, ``checkpoint_every``),
    for each seed: one row per run, columns ``arm`` (``"no preemption, no failures"``, ...),
    ``preemption, failures, seed`` and :data:`COLUMNS` (failures off: nothing lost, no
    restart, goodput ratio NaN)."""
    frames = []
    for on, fields in ((False, {}), (True, dict(failures))):
        frame = sensitivity(
            workload,
            cluster,
            "preemption",
            [False, True],
            seeds=seeds,
            base=base,
            progress=progress,
            **{**common, **fields},
        )
        frame.insert(1, "failures", on)
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    frame.insert(
        0,
        "arm",
        [
            f"{'preemption' if p else 'no preemption'}, {'failures' if f else 'no failures'}"
            for p, f in zip(frame["preemption"], frame["failures"], strict=True)
        ],
    )
    return _tidy(frame, ["arm", "preemption", "failures", "seed"])


def preemption_gains(frame: pd.DataFrame, metric: str = "avg_jct") -> pd.Series:
    """Mean ``metric`` without preemption over that with it, failures off and on (from
    :func:`preemption_under_failures`): 1.5 means preemption cuts it by a third."""
    means = frame.groupby(["failures", "preemption"])[metric].mean().unstack("preemption")
    return (means[False] / means[True]).rename(f"{metric} gain of preemption")
