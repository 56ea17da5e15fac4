"""Shared look of every AnalySIM figure: colours keyed by policy, time units, labels.

The colour of a policy is fixed (``fifo`` is always the same blue), so one policy looks the
same in every figure and notebook. A label such as ``"las+preemption"`` takes the colour of
its first part (``las``), darkened once per extra part, so variants of one policy stay in its
family. Labels the palette does not know get a colour from a stable hash of the label.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from matplotlib import colors as mcolors

from analysim.results.readable import readable_unit

# seaborn's "colorblind" palette, spelled out so the colours never depend on a library version
COLORBLIND = (
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
)

PALETTE: dict[str, str] = {
    # scheduling policies
    "fifo": COLORBLIND[0],
    "sjf": COLORBLIND[1],
    "srtf": COLORBLIND[2],
    "las": COLORBLIND[3],
    "fair": COLORBLIND[4],
    "priority": COLORBLIND[5],
    # placement policies
    "consolidate": COLORBLIND[0],
    "first_fit": COLORBLIND[1],
    "spread": COLORBLIND[2],
    "random": COLORBLIND[7],
    "topology": COLORBLIND[4],
    # placement policies of the FGD study (GPU sharing, analysim.sharing)
    "fgd": COLORBLIND[3],
    "best_fit": COLORBLIND[0],
    "dot_product": COLORBLIND[2],
    "gpu_packing": COLORBLIND[1],
    "gpu_clustering": COLORBLIND[4],
    # on/off arms of the paper's experiments (analysim.experiments.study's "baseline" has neither
    # switch)
    "baseline": COLORBLIND[7],
    "no preemption": COLORBLIND[7],
    "preemption": COLORBLIND[3],
    "no migration": COLORBLIND[7],
    "migration": COLORBLIND[2],
    "no borrowing": COLORBLIND[7],
    "borrowing": COLORBLIND[9],
}
"""Fixed colour of each policy and experiment arm."""

ALL_VCS = "(all)"

UNIT_SECONDS = {"s": 1.0, "min": 60.0, "h": 3_600.0, "days": 86_400.0}

RC: dict[str, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "analysim",
    "svg.fonttype": "path",
    "path.simplify": True,
}
"""rcParams every figure is drawn and saved with (fixed, so figures are byte-stable)."""

LABELS: dict[str, str] = {
    "jct": "job completion time",
    "queue_delay": "queueing delay",
    "avg_jct": "mean JCT",
    "median_jct": "median JCT",
    "p95_jct": "95th percentile JCT",
    "p99_jct": "99th percentile JCT",
    "avg_queue_delay": "mean queueing delay",
    "median_queue_delay": "median queueing delay",
    "p95_queue_delay": "95th percentile queueing delay",
    "avg_slowdown": "mean slowdown (JCT / run time)",
    "makespan": "makespan",
    "gpu_utilization": "GPU utilisation",
    "preemptions": "preemptions",
    "preempted_jobs": "jobs preempted",
    "used_gpus": "GPUs in use",
    "free_gpus": "free GPUs",
    "pending_gpus": "GPUs asked for by waiting jobs",
    "running_jobs": "running jobs",
    "waiting_jobs": "waiting jobs",
    "utilization": "GPU utilisation",
    "fragmented_gpus": "fragmented GPUs",
    "fgd_frag_milli": "FGD fragmentation (GPU milli)",
    "blocked_jobs": "jobs blocked by fragmentation",
    "frag_index": "fragmentation index",
    "borrowed_gpus": "borrowed GPUs",
    "avg_fragmented_gpus": "mean fragmented GPUs",
    "avg_blocked_jobs": "mean jobs blocked by fragmentation",
    "migrations": "migrations",
    "migrated_jobs": "jobs migrated",
    "borrowed_gpu_hours": "borrowed GPU-hours",
    "reclaims": "reclaims",
    "jain_fairness": "Jain's fairness index",
    "ftf_rho": "finish-time fairness rho",
    "max_ftf_rho": "largest finish-time fairness rho",
    "ftf_jain": "Jain's index over rho",
    "lost_gpu_hours": "GPU-hours lost to failures",
    "goodput_ratio": "goodput ratio (useful / held GPU-seconds)",
    "restarts": "restarts",
    "checkpoint_every": "checkpoint interval (s)",
}
"""Readable axis labels of result columns and summary metrics."""

TIME_METRICS = frozenset(
    {
        "jct",
        "queue_delay",
        "run_time",
        "duration",
        "avg_jct",
        "median_jct",
        "p95_jct",
        "p99_jct",
        "avg_queue_delay",
        "median_queue_delay",
        "p95_queue_delay",
        "makespan",
    }
)
"""Metrics measured in seconds (shown in a readable unit)."""

FRACTION_METRICS = frozenset({"gpu_utilization", "utilization", "frag_index", "jain_fairness"})


def base_name(label: str) -> str:
    """The policy part of a label: ``"las+preemption"`` → ``"las"``, ``"fifo (seed 1)"`` →
    ``"fifo"``."""
    return label.split("+")[0].split(" (")[0].strip()


def policy_color(label: str) -> str:
    """The fixed colour of a policy or arm label (hex string)."""
    if label in PALETTE:
        return PALETTE[label]
    base = base_name(label)
    if base in PALETTE:
        color = PALETTE[base]
    else:
        color = COLORBLIND[zlib.crc32(base.encode()) % len(COLORBLIND)]
    extra = label.count("+")
    return _darken(color, 0.3 * extra) if extra else color


def _darken(color: str, amount: float) -> str:
    rgb = np.array(mcolors.to_rgb(color)) * (1.0 - min(amount, 0.8))
    return mcolors.to_hex(rgb)


def colors_for(labels: Iterable[str]) -> dict[str, str]:
    """Colours of several labels; labels that would share a colour are told apart by shade."""
    result: dict[str, str] = {}
    seen: dict[str, int] = {}
    for label in labels:
        color = policy_color(label)
        count = seen.get(color, 0)
        seen[color] = count + 1
        result[label] = _darken(color, 0.25 * count) if count else color
    return result


def time_unit(seconds: Any) -> tuple[str, float]:
    """A readable unit for these durations: (name, seconds per unit), from their 90th
    percentile (:func:`analysim.results.readable.readable_unit`: ``s`` below 2 minutes, ``min``
    below 2 hours, ``h`` below 2 days, else ``days``)."""
    values = np.asarray(seconds, dtype=float)
    values = values[np.isfinite(values)]
    level = float(np.quantile(np.abs(values), 0.9)) if len(values) else 0.0
    return readable_unit(level)


def unit_seconds(unit: str) -> float:
    """Seconds in ``unit`` (``"s"``, ``"min"``, ``"h"`` or ``"days"``)."""
    if unit not in UNIT_SECONDS:
        raise ValueError(f"unit must be one of {list(UNIT_SECONDS)}, got {unit!r}")
    return UNIT_SECONDS[unit]


def resolve_unit(unit: str | None, seconds: Any) -> tuple[str, float]:
    """``unit`` if given, else the readable one for ``seconds``."""
    if unit is None:
        return time_unit(seconds)
    return unit, unit_seconds(unit)


def label_for(metric: str, unit: str | None = None) -> str:
    """Axis label of a metric, with its unit: ``"mean JCT (h)"``."""
    text = LABELS.get(metric, metric.replace("_", " "))
    return f"{text} ({unit})" if unit else text


def ordered(labels: Iterable[str], order: Mapping[str, int] | None = None) -> list[str]:
    """Labels in the given order (unknown ones last, in their own order)."""
    labels = list(labels)
    if not order:
        return labels
    return sorted(labels, key=lambda x: (order.get(x, len(order)), labels.index(x)))
