"""Plots over time: a timeline column per run, and GPUs in use per node over time.

Timeline samples (every ``sample_every`` seconds, 5 minutes by default) are averaged over
windows so that a line has at most ``max_points`` points: a month-long run is drawn from
about 500 window means rather than ~9,000 samples, which keeps figures and their CSV small.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from analysim.plotting.base import as_results, get_ax, remember
from analysim.plotting.jobs import LINESTYLES, identical_curves
from analysim.plotting.style import (
    ALL_VCS,
    FRACTION_METRICS,
    colors_for,
    label_for,
    resolve_unit,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from analysim.results.result import Result

MILLI_COLUMNS = {"fgd_frag_milli": 1000.0}
"""Timeline columns in GPU milli, drawn in GPUs (milli / 1000)."""
MILLI_LABELS = {"fgd_frag_milli": "FGD fragmentation (GPUs)"}
MILLI_GPUS = {"fgd_frag_milli": "fgd_frag_gpus"}
"""The CSV column of a milli column in GPUs, as drawn."""
COUNT_COLUMNS = frozenset(
    {"used_gpus", "free_gpus", "pending_gpus", "running_jobs", "waiting_jobs", "borrowed_gpus",
     "fragmented_gpus", "blocked_jobs"}
)  # fmt: skip
"""Timeline columns of whole GPUs or jobs (integer ticks)."""
MAX_POINTS = 500
HEATMAP_COLUMNS = 150


def window_for(times: np.ndarray, max_points: int) -> float | None:
    """Seconds of a window that leaves at most ``max_points`` windows over ``times`` (None
    when the samples are few enough already)."""
    if len(times) <= max_points:
        return None
    times = np.unique(times)
    spacing = float(np.min(np.diff(times))) if len(times) > 1 else 1.0
    return spacing * math.ceil(len(times) / max_points)


def resample(frame: pd.DataFrame, column: str, every: float | None) -> pd.DataFrame:
    """Mean of ``column`` over windows of ``every`` seconds, stamped with each window's start
    (``frame`` unchanged when ``every`` is None)."""
    if every is None:
        return frame[["time", column]].reset_index(drop=True)
    start = np.floor(frame["time"].to_numpy() / every) * every
    means = frame.groupby(start, sort=True)[column].mean()
    return pd.DataFrame({"time": means.index.to_numpy(dtype=float), column: means.to_numpy()})


def timeline_data(
    results: Any,
    column: str = "utilization",
    vc: str = ALL_VCS,
    max_points: int = MAX_POINTS,
    until: float | None = None,
) -> pd.DataFrame:
    """``column`` of ``result.timeline`` for one VC (``"(all)"``: the whole cluster) of each
    run, averaged over windows: columns ``label, time`` (seconds, window start) ``, <column>``
    and ``window`` (seconds; 0 when not averaged); only up to ``until`` seconds if given."""
    frames = []
    for label, result in as_results(results).items():
        timeline = result.timeline
        if column not in timeline.columns:
            raise ValueError(
                f"result.timeline has no column {column!r}; it has "
                f"{[c for c in timeline.columns if c not in ('time', 'vc')]}"
            )
        rows = timeline[timeline["vc"] == vc]
        if rows.empty:
            known = list(dict.fromkeys(timeline["vc"].astype(str)))
            raise ValueError(f"no timeline rows for vc={vc!r}; known: {known}")
        if until is not None:
            rows = rows[rows["time"] <= until]
        every = window_for(rows["time"].to_numpy(), max_points)
        part = resample(rows, column, every)
        part.insert(0, "label", label)
        part["window"] = every or 0.0
        frames.append(part)
    return pd.concat(frames, ignore_index=True)


def timeline(
    results: Any,
    column: str = "utilization",
    vc: str = ALL_VCS,
    ax: Axes | None = None,
    *,
    unit: str | None = None,
    max_points: int = MAX_POINTS,
    until: float | None = None,
) -> Axes:
    """``column`` of the timeline (utilisation, queue, fragmentation, ...) over time, one line
    per run, for the cluster (``vc="(all)"``) or one VC, up to ``until`` seconds if given.
    Time is in ``unit`` (chosen from the run's length by default)."""
    data = timeline_data(results, column, vc, max_points, until)
    unit, scale = resolve_unit(unit, [data["time"].max()] if len(data) else [0.0])
    ax = get_ax(ax, figsize=(8.0, 3.5))
    labels = list(dict.fromkeys(data["label"]))
    palette = colors_for(labels)
    per_gpu = MILLI_COLUMNS.get(column, 1.0)  # GPU milli drawn as GPUs
    same = identical_curves(data, column)
    for k, label in enumerate(labels):
        part = data[data["label"] == label]
        ax.plot(
            part["time"] / scale,
            part[column] / per_gpu,
            label=f"{label} (same as {same[label]})" if label in same else label,
            color=palette[label],
            linewidth=1.0,
            linestyle=LINESTYLES[k % len(LINESTYLES)],  # lines that coincide stay visible
            drawstyle="steps-post",
        )
    ax.set_xlabel(f"time ({unit})" + _shown_part(results, until, unit, scale))
    ax.set_ylabel(MILLI_LABELS.get(column) or label_for(column))
    if column in FRACTION_METRICS:
        ax.set_ylim(0, 1.02)
    if column in COUNT_COLUMNS:  # whole GPUs and jobs: from 0, no ticks at 2.5
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
    if vc != ALL_VCS:
        ax.set_title(f"VC {vc}")
    if len(labels) > 1:
        ax.legend(title=None)
    shown = data.assign(vc=vc).rename(columns={"time": "time_s", "window": "window_s"})
    if per_gpu != 1.0:
        shown[MILLI_GPUS[column]] = shown[column] / per_gpu
    remember(ax, shown)
    return ax


def _shown_part(results: Any, until: float | None, unit: str, scale: float) -> str:
    """``"; the first 35 of 3,480 h shown"`` when ``until`` cuts the runs short, else ``""``."""
    if until is None:
        return ""
    end = max(float(r.timeline["time"].max()) for r in as_results(results).values())
    if until >= end:
        return ""
    return f"; the first {until / scale:,.3g} of {end / scale:,.0f} {unit} shown"


def node_usage_data(result: Result, columns: int = HEATMAP_COLUMNS) -> pd.DataFrame:
    """GPUs in use per node over time (``result.node_usage()``), averaged over at most
    ``columns`` time windows: a wide frame, index window start (seconds), columns nodes."""
    if not hasattr(result, "node_usage"):
        raise NotImplementedError(
            "node_time_heatmap needs Result.node_usage(), which this version of analysim "
            "does not have yet"
        )
    usage = result.node_usage()
    times = usage.index.to_numpy(dtype=float)
    every = window_for(times, columns)
    if every is None:
        return usage
    start = np.floor(times / every) * every
    return usage.groupby(start, sort=True).mean().rename_axis("time")


def node_time_heatmap(
    result: Result,
    ax: Axes | None = None,
    *,
    unit: str | None = None,
    columns: int = HEATMAP_COLUMNS,
    cmap: str = "viridis",
) -> Axes:
    """Heatmap of GPUs in use on each node (rows, in the cluster's order) over time
    (columns, window means), from ``result.node_usage()``."""
    usage = node_usage_data(result, columns)
    times = usage.index.to_numpy(dtype=float)
    unit, scale = resolve_unit(unit, [times.max()] if len(times) else [0.0])
    step = float(np.diff(times).min()) if len(times) > 1 else 1.0
    ax = get_ax(ax, figsize=(8.0, max(3.0, min(8.0, 0.04 * usage.shape[1] + 2))))
    image = ax.imshow(
        usage.to_numpy(dtype=float).T,
        aspect="auto",
        interpolation="nearest",
        cmap=cmap,
        origin="upper",
        extent=(times[0] / scale, (times[-1] + step) / scale, usage.shape[1], 0),
        vmin=0,
    )
    ax.figure.colorbar(image, ax=ax, label="GPUs in use")
    ax.set_xlabel(f"time ({unit})")
    ax.grid(False)
    groups = owner_groups(result, list(usage.columns))
    if groups:
        _label_groups(ax, groups)
        ax.set_ylabel(f"nodes ({usage.shape[1]}) by owning VC")
    else:
        ax.set_ylabel(f"node ({usage.shape[1]})")
    tidy = usage.rename_axis(index="time_s", columns="node").stack().rename("used_gpus")
    remember(ax, tidy.reset_index())
    return ax


def owner_groups(result: Result, nodes: list[str]) -> list[tuple[str, int, int]]:
    """Runs of consecutive nodes owned by one VC: ``(vc, first row, end row)``; empty when
    no VC owns nodes (or the result cannot say)."""
    if not hasattr(result, "snapshot"):
        return []
    owners = result.snapshot(0.0).drop_duplicates("node").set_index("node")["node_vc"]
    labels = [owners.get(node) for node in nodes]
    if all(label is None or pd.isna(label) for label in labels):
        return []
    groups: list[tuple[str, int, int]] = []
    for row, label in enumerate(labels):
        name = "(pool)" if label is None or pd.isna(label) else str(label)
        if groups and groups[-1][0] == name:
            groups[-1] = (name, groups[-1][1], row + 1)
        else:
            groups.append((name, row, row + 1))
    return groups


def _label_groups(ax: Axes, groups: list[tuple[str, int, int]]) -> None:
    """VC names at the middle of their rows (left out for VCs too small to hold a label
    among many rows), thin white lines between VCs."""
    rows = groups[-1][2]
    smallest = rows / 60  # a 7-point label needs about 1/60 of a figure-high axis
    names = [name if end - first >= smallest else "" for name, first, end in groups]
    ax.set_yticks([(first + end) / 2 for _, first, end in groups], names)
    ax.tick_params(axis="y", labelsize=7 if len(groups) > 12 else 9, length=0)
    for _, _, end in groups[:-1]:
        ax.axhline(end, color="white", linewidth=0.6)
