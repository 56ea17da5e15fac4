"""Plots of per-job outcomes: JCT distributions, queueing delay, per-VC bars, a summary table.

Every function takes one result, a dict ``{label: Result}`` or a list of results, draws each
label in its policy colour (:mod:`analysim.plotting.style`), shows times in a readable unit
(picked from the data unless ``unit=`` is given) and returns the Axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from analysim.plotting.base import as_results, get_ax, remember
from analysim.plotting.style import (
    FRACTION_METRICS,
    TIME_METRICS,
    colors_for,
    label_for,
    resolve_unit,
    unit_seconds,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PLAIN_NUMBERS = FuncFormatter(lambda value, _: f"{value:g}")
"""Tick labels of log axes as plain numbers (0.1, 1, 10) rather than powers of ten."""

LINESTYLES = ("-", "--", "-.", ":")
"""Line styles of successive runs in a CDF, so curves that coincide stay visible."""

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""Markers of successive runs in a CDF (with the line style, no two of eight runs look
alike, whatever the colours)."""

MARK_EVERY = 20
"""A CDF marks one point in this many (the quantile levels 0, 0.1, ... with 201 points)."""

CDF_POINTS = 201
"""Quantile levels a CDF is drawn at (0, 0.005, ..., 1): exact at those levels, and small."""

DEFAULT_TABLE_METRICS = (
    "finished",
    "avg_jct",
    "p95_jct",
    "avg_queue_delay",
    "avg_slowdown",
    "gpu_utilization",
    "preemptions",
)


LABEL_CHARS = 28
"""Characters per line of a run's label in a legend."""


def _finished(result, column: str) -> np.ndarray:
    jobs = result.jobs
    if column not in jobs.columns:
        raise ValueError(f"result.jobs has no column {column!r}; it has {list(jobs.columns)}")
    return jobs.loc[jobs["status"] == "done", column].to_numpy(dtype=float)


def cdf_data(results: Any, column: str = "jct", points: int = CDF_POINTS) -> pd.DataFrame:
    """The empirical CDF of ``column`` over finished jobs of each run, at ``points`` evenly
    spaced quantile levels: columns ``label, <column> (seconds), fraction``."""
    frames = []
    levels = np.linspace(0.0, 1.0, points)
    for label, result in as_results(results).items():
        values = _finished(result, column)
        if len(values) == 0:
            continue
        frames.append(
            pd.DataFrame({"label": label, column: np.quantile(values, levels), "fraction": levels})
        )
    if not frames:
        raise ValueError(f"no finished jobs to plot the {column} CDF of")
    return pd.concat(frames, ignore_index=True)


def jct_cdf(
    results: Any,
    ax: Axes | None = None,
    *,
    column: str = "jct",
    unit: str | None = None,
    log: bool = True,
) -> Axes:
    """CDF of job completion time (or another per-job time ``column``) of each run.

    The x axis is in ``unit`` (``"s"``, ``"min"``, ``"h"``, ``"days"``; chosen from the data
    by default), log-scaled unless ``log=False``; the y axis is the fraction of finished jobs.
    """
    data = cdf_data(results, column)
    medians = data.loc[data["fraction"] == 0.5, column]
    unit, scale = resolve_unit(unit, medians)  # the unit of a typical job
    data[column] = data[column] / scale
    ax = get_ax(ax)
    labels = list(dict.fromkeys(data["label"]))
    palette = colors_for(labels)
    same = identical_curves(data, column)
    for k, label in enumerate(labels):
        part = data[data["label"] == label]
        ax.plot(
            part[column],
            part["fraction"],
            label=wrapped(f"{label} (same as {same[label]})" if label in same else label),
            color=palette[label],
            linestyle=LINESTYLES[k % len(LINESTYLES)],
            marker=MARKERS[k % len(MARKERS)],
            markevery=(k * 3 % MARK_EVERY, MARK_EVERY),  # runs' markers never sit together
            markersize=5,
            markerfacecolor="none" if label in same else palette[label],
        )
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(PLAIN_NUMBERS)
    ax.set_xlabel(label_for(column, unit))
    ax.set_ylabel("fraction of finished jobs")
    ax.set_ylim(0, 1)
    ax.legend(title=None)
    remember(ax, data.assign(unit=unit))
    return ax


def wrapped(label: str, width: int = LABEL_CHARS) -> str:
    """A run's label for a legend or tick: on lines of at most ``width`` characters, broken
    at spaces only (``las+preemption`` stays whole)."""
    import textwrap

    return "\n".join(textwrap.wrap(label, width, break_long_words=False)) or label


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same values in the same order (NaN equal to NaN: a VC with no finished job)."""
    try:
        return bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:  # not numbers
        return bool(np.array_equal(a, b))


def identical_curves(data: pd.DataFrame, column: str) -> dict[str, str]:
    """``{label: earlier label}`` for each run whose CDF equals an earlier run's at every
    level (its line would hide under that one)."""
    curves: dict[str, np.ndarray] = {
        label: part[column].to_numpy() for label, part in data.groupby("label", sort=False)
    }
    same: dict[str, str] = {}
    labels = list(curves)
    for k, label in enumerate(labels):
        for earlier in labels[:k]:
            if earlier not in same and _equal(curves[label], curves[earlier]):
                same[label] = earlier
                break
    return same


def _stats(values: np.ndarray) -> dict[str, float]:
    if len(values) == 0:
        return dict.fromkeys(("mean", "p5", "p25", "median", "p75", "p95"), float("nan"))
    p5, p25, med, p75, p95 = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95])
    return {
        "mean": float(values.mean()),
        "p5": p5,
        "p25": p25,
        "median": med,
        "p75": p75,
        "p95": p95,
    }


SAME_BARS = {"hatch": "//", "hatchcolor": "white", "linewidth": 0}
"""Bars of a run identical to an earlier one: hatched in white, so both stay visible."""
MEAN_MARK = {"marker": "D", "markerfacecolor": "black", "markeredgecolor": "white", "markersize": 7}
"""The mean on a box plot: a filled black diamond (no outlier is drawn, so nothing else is a
point), with its own legend entry."""
BOX_NOTE = (
    "box: 25th-75th percentile; line: median\nwhiskers: 5th-95th percentile; no outliers drawn"
)
"""What a box plot's box and whiskers show, under its axis."""


def distribution_stats(results: Any, column: str = "queue_delay") -> pd.DataFrame:
    """Mean and percentiles (5, 25, 50, 75, 95) of ``column`` over finished jobs, per run, in
    seconds: one row per label."""
    rows = [
        {"label": label, "jobs": len(values), **_stats(values)}
        for label, values in (
            (label, _finished(result, column)) for label, result in as_results(results).items()
        )
    ]
    return pd.DataFrame(rows)


def queue_delay(
    results: Any,
    ax: Axes | None = None,
    *,
    kind: str = "box",
    column: str = "queue_delay",
    unit: str | None = None,
) -> Axes:
    """Queueing delay of finished jobs per run: ``kind="box"`` draws boxes (quartiles, median,
    whiskers at the 5th and 95th percentiles; no outlier points), ``kind="bar"`` the mean,
    median and 95th percentile as grouped bars."""
    if kind not in ("box", "bar"):
        raise ValueError(f"queue_delay: kind must be 'box' or 'bar', got {kind!r}")
    stats = distribution_stats(results, column)
    unit, scale = resolve_unit(unit, stats[["median", "p95"]].to_numpy().ravel())
    ax = get_ax(ax)
    palette = colors_for(stats["label"])
    positions = np.arange(len(stats))
    if kind == "box":
        boxes = [
            {
                "label": row.label,
                "med": row.median / scale,
                "q1": row.p25 / scale,
                "q3": row.p75 / scale,
                "whislo": row.p5 / scale,
                "whishi": row.p95 / scale,
                "mean": row.mean / scale,
                "fliers": [],
            }
            for row in stats.itertuples()
        ]
        drawn = ax.bxp(
            boxes,
            positions=positions,
            patch_artist=True,
            showmeans=True,
            medianprops={"color": "black"},
            meanprops=MEAN_MARK,
        )
        for patch, label in zip(drawn["boxes"], stats["label"], strict=True):
            patch.set_facecolor(palette[label])
            patch.set_alpha(0.8)
        ax.legend(
            handles=[
                Line2D([], [], linestyle="", label="mean", **MEAN_MARK),
                Line2D([], [], color="black", label="median"),
            ],
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
        )
        ax.set_xlabel(BOX_NOTE)
    else:
        width = 0.8 / 3
        for k, (stat, hatch) in enumerate((("mean", ""), ("median", "//"), ("p95", ".."))):
            ax.bar(
                positions + (k - 1) * width,
                stats[stat] / scale,
                width,
                color=[palette[label] for label in stats["label"]],
                hatch=hatch,
                edgecolor="white",
                label=stat,
            )
        ax.legend(title=None)
    ax.set_xticks(positions, [wrapped(label, 16) for label in stats["label"]])
    ax.set_ylabel(label_for(column, unit))
    remember(ax, stats.assign(unit="s"))
    return ax


def per_vc_data(results: Any, metric: str = "avg_jct") -> pd.DataFrame:
    """``metric`` of each VC in each run (from ``summary(by="vc")``): columns
    ``label, vc, <metric>``, VCs in the cluster's order."""
    frames = []
    for label, result in as_results(results).items():
        table = result.summary(by="vc")
        if metric not in table.columns:
            raise ValueError(
                f"unknown summary metric {metric!r}; choose one of {list(table.columns)}"
            )
        frames.append(pd.DataFrame({"label": label, "vc": table.index, metric: table[metric]}))
    return pd.concat(frames, ignore_index=True)


def _metric_scale(metric: str, values: Any, unit: str | None) -> tuple[str | None, float]:
    if metric in TIME_METRICS:
        return resolve_unit(unit, values)
    if unit is not None:
        return unit, unit_seconds(unit)
    return None, 1.0


def per_vc_bars(
    results: Any,
    metric: str = "avg_jct",
    ax: Axes | None = None,
    *,
    unit: str | None = None,
    vcs: Sequence[str] | None = None,
) -> Axes:
    """Grouped bars of a summary ``metric`` per virtual cluster, one bar per run in each
    group (``vcs`` limits and orders the VCs shown)."""
    data = per_vc_data(results, metric)
    if vcs is not None:
        unknown = sorted(set(vcs) - set(data["vc"]))
        if unknown:
            raise ValueError(f"per_vc_bars: unknown VC(s) {unknown}")
        data = data[data["vc"].isin(vcs)]
        order = list(vcs)
    else:
        order = list(dict.fromkeys(data["vc"]))
    unit, scale = _metric_scale(metric, data[metric], unit)
    labels = list(dict.fromkeys(data["label"]))
    palette = colors_for(labels)
    ax = get_ax(ax, figsize=(max(6.0, 0.35 * len(order) * max(1, len(labels)) / 2), 4.0))
    width = 0.8 / len(labels)
    x = np.arange(len(order))
    same = identical_curves(data, metric)
    for k, label in enumerate(labels):
        part = data[data["label"] == label].set_index("vc").reindex(order)
        ax.bar(
            x + (k - (len(labels) - 1) / 2) * width,
            part[metric] / scale,
            width,
            label=wrapped(f"{label} (same as {same[label]})" if label in same else label),
            color=palette[label],
            **(SAME_BARS if label in same else {}),
        )
    crowded = len(order) > 6
    ax.set_xticks(x, order, rotation=45 if crowded else 0, ha="right" if crowded else "center")
    ax.set_xlabel("virtual cluster")
    ax.set_ylabel(label_for(metric, unit))
    if metric in FRACTION_METRICS:
        ax.set_ylim(0, 1)
    ax.legend(title=None, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside, not on, bars
    remember(ax, data.assign(**{metric: data[metric] / scale}, unit=unit or ""))
    return ax


def comparison_table(
    results: Any,
    metrics: Sequence[str] = DEFAULT_TABLE_METRICS,
    *,
    unit: str = "h",
    by: str | None = None,
) -> pd.DataFrame:
    """One row per run (per run and VC with ``by="vc"``) of summary metrics, times in
    ``unit``; columns are named with their units (``"mean JCT (h)"``)."""
    scale = unit_seconds(unit)
    rows = []
    for label, result in as_results(results).items():
        summary = result.summary(by=by)
        table = summary.to_frame().T if by is None else summary
        missing = [m for m in metrics if m not in table.columns]
        if missing:
            raise ValueError(f"unknown summary metric(s) {missing}; known: {list(table.columns)}")
        table = table[list(metrics)].copy()
        for metric in metrics:
            if metric in TIME_METRICS:
                table[metric] = table[metric] / scale
        table.index = (
            pd.Index([label], name="run")
            if by is None
            else pd.MultiIndex.from_product([[label], table.index], names=["run", by])
        )
        rows.append(table)
    out = pd.concat(rows)
    return out.rename(
        columns={m: label_for(m, unit if m in TIME_METRICS else None) for m in metrics}
    )
