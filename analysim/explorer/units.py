"""Numbers as a reader wants them: each summary metric with its unit and meaning, times in
seconds, minutes, hours or days as natural."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from analysim.results.readable import readable_unit

# metric -> (kind, meaning); kinds: time (seconds in Result.summary), count, fraction, ratio,
# gpus, gpu_hours, milli (GPU milli in Result.summary, shown in GPUs)
METRICS: dict[str, tuple[str, str]] = {
    "jobs": ("count", "jobs in the workload"),
    "finished": ("count", "jobs that finished"),
    "unschedulable": ("count", "jobs asking for more GPUs than their VC could ever get"),
    "avg_jct": ("time", "mean job completion time (end - submit), finished jobs"),
    "median_jct": ("time", "median job completion time"),
    "p95_jct": ("time", "95th percentile of job completion time"),
    "p99_jct": ("time", "99th percentile of job completion time"),
    "avg_queue_delay": ("time", "mean time a job was not running (JCT - time on GPUs)"),
    "median_queue_delay": ("time", "median queueing delay"),
    "p95_queue_delay": ("time", "95th percentile of queueing delay"),
    "avg_slowdown": ("ratio", "mean JCT / duration (1 = never waited)"),
    "makespan": ("time", "last end - first submit"),
    "gpu_utilization": ("fraction", "busy GPU-time / (GPUs x makespan)"),
    "preemptions": ("count", "jobs evicted (each time)"),
    "preempted_jobs": ("count", "distinct jobs evicted at least once"),
    "migrations": ("count", "jobs moved to other nodes (each time)"),
    "migrated_jobs": ("count", "distinct jobs moved at least once"),
    "reclaims": ("count", "borrowed GPUs taken back by their owner (each time)"),
    "borrowed_gpu_hours": ("gpu_hours", "GPU-hours jobs ran on other VCs' GPUs"),
    "gpu_hours": ("gpu_hours", "GPU-hours the jobs held"),
    "share_gpu_hours": ("gpu_hours", "a VC's share of all GPU-hours, by its GPUs"),
    "avg_fragmented_gpus": ("gpus", "time-mean of free GPUs no waiting job can use"),
    "avg_blocked_jobs": ("count", "time-mean of jobs blocked by fragmentation alone"),
    "avg_frag_index": ("fraction", "time-mean fragmentation index (0 = none)"),
    "avg_fgd_frag_milli": (
        "milli",
        "time-mean of FGD's fragmentation (ATC'23): GPU capacity the workload's task shapes "
        "could not use, cluster-wide; recorded in GPU milli, shown in GPUs (milli / 1000)",
    ),
    "idle_while_waiting": ("fraction", "share of the time with free GPUs while jobs wait"),
    "jain_fairness": ("ratio", "Jain's fairness index over VCs (1 = equal)"),
    "max_ftf_rho": ("ratio", "largest finish-time fairness rho (JCT / JCT alone on 1/N)"),
    "ftf_unfair_share": ("fraction", "share of finished jobs with rho > 1"),
    "ftf_jain": ("ratio", "Jain's index over the jobs' rho (1 = all slowed alike)"),
}
KEY_METRICS = (
    "jobs",
    "finished",
    "avg_jct",
    "median_jct",
    "p95_jct",
    "avg_queue_delay",
    "avg_slowdown",
    "makespan",
    "gpu_utilization",
    "preemptions",
    "migrations",
    "reclaims",
    "borrowed_gpu_hours",
    "avg_fragmented_gpus",
    "jain_fairness",
)
"""The summary rows shown unless the user asks for all metrics."""


def time_unit(seconds: float) -> tuple[str, float]:
    """The natural unit for a span of ``seconds``: (name, seconds per unit), by
    :func:`analysim.results.readable.readable_unit`, days written ``d``."""
    name, size = readable_unit(seconds)
    return ("d" if name == "days" else name), size


def duration(seconds: float) -> str:
    """``seconds`` in its natural unit: ``45 s``, ``12.5 min``, ``3.2 h``, ``2.1 d``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "–"
    name, size = time_unit(seconds)
    return f"{_short(seconds / size)} {name}"


def moment(seconds: float) -> str:
    """A simulated moment in words and seconds: ``16 min 40 s (1,000 s)``,
    ``5 h 20 min (19,200 s)``, ``3 d 14 h 20 min (310,800 s)``; under a minute ``45 s``."""
    total = int(round(float(seconds)))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if total < 60:
        return f"{total} s"
    if total < 3600:
        words = f"{minutes} min" + (f" {secs} s" if secs else "")
    elif total < 86400:
        words = f"{hours} h {minutes:02d} min"
    else:
        words = f"{days} d {hours} h {minutes:02d} min"
    return f"{words} ({total:,} s)"


def _short(value: float) -> str:
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.2f}"


def metric_unit(metric: str, values: pd.Series) -> tuple[str, float]:
    """(unit label, divisor) for a summary row, one unit for the whole row."""
    kind = METRICS.get(metric, ("", ""))[0]
    if kind == "time":
        finite = values.dropna()
        return time_unit(float(finite.abs().max()) if len(finite) else 0.0)
    return {
        "fraction": ("%", 0.01),
        "gpu_hours": ("GPU-h", 1.0),
        "gpus": ("GPUs", 1.0),
        "milli": ("GPUs", 1000.0),
        "count": (
            "jobs" if "job" in metric or metric in ("finished", "unschedulable") else "times",
            1.0,
        ),
        "ratio": ("×" if metric == "avg_slowdown" else "", 1.0),
    }.get(kind, ("", 1.0))


def number(value: Any) -> str:
    """A table cell: thousands separated, 3 significant digits for small numbers."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    value = float(value)
    if value.is_integer() or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def summary_html(
    table: pd.DataFrame, change_column: str | None = None, roles: list[str] | None = None
) -> str:
    """The summary table: metric (its meaning as a tooltip), unit, one column per run (its
    role, e.g. ``baseline``, under its name), and the relative change column if named."""
    runs = [c for c in table.columns if c != change_column]
    roles = roles or [""] * len(runs)
    heads = [
        f"<th>{html.escape(str(c))}"
        + (f"<br><small>{html.escape(r)}</small>" if r else "")
        + "</th>"
        for c, r in zip(runs, roles, strict=True)
    ]
    head = (
        "<th>metric</th><th>unit</th>"
        + "".join(heads)
        + (f"<th>{html.escape(change_column)}</th>" if change_column else "")
    )
    rows = []
    for metric, values in table.iterrows():
        unit, size = metric_unit(str(metric), values[runs].astype(float))
        meaning = METRICS.get(str(metric), ("", ""))[1]
        cells = [number(float(values[c]) / size) for c in runs]
        if change_column:
            change = values[change_column]
            cells.append("" if pd.isna(change) else f"{change:+.1%}")
        tds = "".join(f"<td class='num'>{c}</td>" for c in cells)
        tip = html.escape(f"{metric}: {meaning}" + (f" ({unit})" if unit else ""), quote=True)
        rows.append(
            f"<tr><td title='{tip}'>{html.escape(str(metric))}</td>"
            f"<td class='unit'>{html.escape(unit)}</td>{tds}</tr>"
        )
    return f"<table class='analysim-table'><tr>{head}</tr>{''.join(rows)}</table>"
