"""Figure-level plots (they own the figure and return it) and metric curves over a parameter.

``policy_comparison`` puts the JCT CDF, queueing delay and per-VC bars of several runs side
by side; ``timeline_panels`` stacks timeline columns over one time axis. ``metric_curve`` is
axes-level: a summary metric against a varied parameter, from a tidy table with one row per
run (as :func:`analysim.experiments.figures.sensitivity` or a sweep returns), averaged over seeds
with a 95% confidence band when there are several.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.plotting.base import get_ax, new_figure, remember
from analysim.plotting.jobs import LINESTYLES, MARKERS, jct_cdf, per_vc_bars, queue_delay
from analysim.plotting.style import (
    ALL_VCS,
    FRACTION_METRICS,
    TIME_METRICS,
    colors_for,
    label_for,
    policy_color,
    resolve_unit,
)
from analysim.plotting.timeline import timeline

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# two-sided 95% Student t quantiles for 1..10 degrees of freedom (beyond: 1.96 is close)
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def _t95(dof: int) -> float:
    if dof < 1:
        return float("nan")
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def policy_comparison(results: Any, metric: str = "avg_jct", *, unit: str | None = None) -> Figure:
    """JCT CDF, queueing-delay boxes and per-VC bars of ``metric``, side by side, lettered
    (a), (b), (c)."""
    fig, axes = new_figure((15.0, 4.2), 1, 3, width_ratios=[1.0, 1.0, 1.6])
    cdf, box, bars = axes
    jct_cdf(results, ax=cdf, unit=unit)
    queue_delay(results, ax=box, unit=unit)
    per_vc_bars(results, metric, ax=bars, unit=unit)
    panel_letters(fig)
    return fig


def panel_letters(fig: Figure) -> None:
    """Letter the panels of a multi-panel figure (a), (b), ... in reading order, at the left
    of each panel's title line."""
    for k, ax in enumerate(fig.axes):
        ax.set_title(f"({chr(ord('a') + k)})", loc="left", fontweight="bold")


def timeline_panels(
    results: Any,
    columns: Sequence[str] = ("utilization", "waiting_jobs"),
    vc: str = ALL_VCS,
    *,
    unit: str | None = None,
    until: float | None = None,
) -> Figure:
    """One timeline panel per column, stacked over a shared time axis (up to ``until``
    seconds if given)."""
    fig, axes = new_figure((9.0, 2.4 * len(columns) + 0.6), len(columns), 1, sharex=True)
    for k, (ax, column) in enumerate(zip(np.ravel(axes), columns, strict=True)):
        timeline(results, column, vc, ax=ax, unit=unit, until=until)
        if k < len(columns) - 1:
            ax.set_xlabel("")
        if k > 0 and ax.get_legend() is not None:
            ax.get_legend().remove()
    if len(columns) > 1:
        panel_letters(fig)
    return fig


INTERVALS = {
    "range": "lowest to highest",
    "ci95": "95% confidence interval (Student t)",
}
"""What a band or an error bar over seeds may show, and how a figure says it."""


def curve_data(
    data: pd.DataFrame, x: str, y: str, hue: str | None = None, *, interval: str = "range"
) -> pd.DataFrame:
    """Mean, count and interval (``low``, ``high``) of ``y`` over the rows (e.g. seeds) per
    value of ``x`` (and ``hue``): sorted along a numeric ``x``, else in order of first
    appearance. ``interval="range"`` spans the lowest to the highest row (never past the
    data: a positive metric's bar never goes below zero); ``"ci95"`` is the Student t 95%
    confidence interval of the mean (wide for few seeds, and it may cross zero)."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {list(INTERVALS)}, got {interval!r}")
    missing = [c for c in (x, y, hue) if c is not None and c not in data.columns]
    if missing:
        raise ValueError(f"no column(s) {missing} in the table; it has {list(data.columns)}")
    keys = [x] if hue is None else [hue, x]
    grouped = data.groupby(keys, sort=False, observed=True)[y]
    out = grouped.agg(["mean", "std", "count", "min", "max"]).reset_index()
    if interval == "range":
        out["low"], out["high"] = out["min"], out["max"]
    else:
        t = out["count"].map(lambda n: _t95(n - 1))
        half = (out["std"].fillna(0.0) / np.sqrt(out["count"]) * t).fillna(0.0)
        out["low"] = out["mean"] - half
        out["high"] = out["mean"] + half
    out["interval"] = INTERVALS[interval]
    out = out.drop(columns=["std", "min", "max"]).rename(columns={"mean": y})
    if pd.api.types.is_numeric_dtype(out[x]) and out[x].dtype != bool:
        out = out.sort_values(keys, kind="stable")  # along a numeric axis
    return out.reset_index(drop=True)


def metric_curve(
    data: pd.DataFrame,
    x: str,
    y: str = "avg_jct",
    hue: str | None = None,
    ax: Axes | None = None,
    *,
    unit: str | None = None,
    x_label: str | None = None,
    reference: Mapping[str, float] | None = None,
    interval: str = "range",
) -> Axes:
    """``y`` (a summary metric) against the parameter ``x``, one line per ``hue`` value, the
    mean over the rows (seeds) that share a point with a shaded band (``interval``: lowest
    to highest by default, see :func:`curve_data`); the x label says what the line and band
    are and over how many seeds. ``reference`` draws a dashed horizontal line per ``{label:
    value}`` (in ``y``'s own units, seconds for times), e.g. the run without the feature
    being varied."""
    table = curve_data(data, x, y, hue, interval=interval)
    shown_unit, scale = _y_scale(y, table[y], unit)
    ax = get_ax(ax)
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=False))
    palette = colors_for([str(name) for name, _ in groups if name is not None])
    for k, (name, part) in enumerate(groups):
        color = palette.get(str(name), "#0173b2")
        ax.plot(
            part[x],
            part[y] / scale,
            marker=MARKERS[k % len(MARKERS)],
            linestyle=LINESTYLES[k % len(LINESTYLES)],
            color=color,
            label=name,
        )
        if (part["count"] > 1).any():
            ax.fill_between(
                part[x],
                part["low"] / scale,
                part["high"] / scale,
                color=color,
                alpha=0.2,
                linewidth=0,
            )
    references = pd.DataFrame(
        {"reference": list(reference or {}), y: list((reference or {}).values())}
    )
    for label, value in zip(references["reference"], references[y], strict=True):
        ax.axhline(value / scale, color=policy_color(label), linestyle="--", label=label)
    ax.set_xlabel(_with_spread(x_label or label_for(x), table, "band"))
    ax.set_ylabel(label_for(y, shown_unit))
    if y in FRACTION_METRICS:
        _zoom_fraction(ax, y, [*table["low"], *table["high"], *references[y]])
    if hue is not None or reference:
        ax.legend(title=hue)
    drawn = pd.concat([table, references], ignore_index=True) if reference else table
    remember(ax, _in_unit(drawn, [y, "low", "high"], scale, shown_unit))
    return ax


def mark_x(ax: Axes, marks: Mapping[str, float], name: str = "mark") -> Axes:
    """A dotted vertical line at each ``{label: x}`` of ``marks``, in the colour of the line
    labelled ``label`` on ``ax`` (e.g. a :func:`metric_curve` hue), named ``"{name}, {label}"``
    in the legend; the marks are added to the figure's numbers (columns ``mark, x``)."""
    colors = {line.get_label(): line.get_color() for line in ax.get_lines()}
    for label, x in marks.items():
        ax.axvline(x, color=colors.get(label, "#555555"), linestyle=":", label=f"{name}, {label}")
    title = ax.get_legend().get_title().get_text() if ax.get_legend() else None
    ax.legend(title=title or None)
    remember(ax, pd.DataFrame({"mark": [f"{name}, {k}" for k in marks], "x": list(marks.values())}))
    return ax


def _zoom_fraction(ax: Axes, y: str, values: Sequence[float]) -> None:
    """A fraction's axis from 0 to 1, or zoomed on the values (and references) when they
    span less than a third of it, with a margin so that a line at 1 is not on the frame;
    the y label says it is zoomed."""
    finite = [float(v) for v in values if np.isfinite(v)]
    if not finite:
        ax.set_ylim(0, 1)
        return
    low, high = min(finite), max(finite)
    if high - low >= 1 / 3:
        ax.set_ylim(0, max(1.0, high * 1.02))
        return
    margin = max(0.15 * (high - low), 0.002)
    ax.set_ylim(max(0.0, low - margin), high + margin)
    ax.set_ylabel(f"{ax.get_ylabel()} (axis zoomed)")


def summary_bars(
    data: pd.DataFrame,
    x: str = "scheduler",
    y: str = "avg_jct",
    ax: Axes | None = None,
    *,
    unit: str | None = None,
    interval: str = "range",
) -> Axes:
    """A summary metric per value of ``x`` (one row per run, e.g. a sweep frame): bars of
    the mean over the rows (seeds) in each value's policy colour, with error bars
    (``interval``: lowest to highest by default, see :func:`curve_data`) when there are
    several; the x label says what they are and over how many seeds. A boolean ``x`` (a
    switch such as ``migration``) is shown as ``"no migration"`` / ``"migration"``."""
    if "status" in data.columns:
        data = data[data["status"] == "ok"]
    table = curve_data(data, x, y, interval=interval)
    if table[x].dtype == bool:  # a switch: "no migration" / "migration", as the palette says
        table[x] = table[x].map({False: f"no {x}", True: x})
    shown_unit, scale = _y_scale(y, table[y], unit)
    labels = [str(v) for v in table[x]]
    palette = colors_for(labels)
    ax = get_ax(ax)
    positions = np.arange(len(table))
    errors = None
    if (table["count"] > 1).any():
        errors = np.vstack([table[y] - table["low"], table["high"] - table[y]]) / scale
    ax.bar(
        positions,
        table[y] / scale,
        yerr=errors,
        color=[palette[label] for label in labels],
        capsize=4,
    )
    ax.set_xticks(positions, labels)
    ax.set_xlabel(_with_spread(label_for(x), table, "whiskers"))
    ax.set_ylabel(label_for(y, shown_unit))
    if y in FRACTION_METRICS:
        ax.set_ylim(0, 1)
    remember(ax, _in_unit(table, [y, "low", "high"], scale, shown_unit))
    return ax


def _y_scale(y: str, values: Any, unit: str | None) -> tuple[str | None, float]:
    """The unit and seconds per unit a summary metric is shown in (times only)."""
    if y in TIME_METRICS:
        return resolve_unit(unit, values)
    return None, 1.0


def _with_spread(label: str, table: pd.DataFrame, mark: str) -> str:
    """An axis label with, when points average several rows, what the ``mark`` (band,
    whiskers) shows and over how many seeds."""
    counts = sorted(set(table["count"]))
    if counts[-1] <= 1:
        return label
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return f"{label}\n(mean of n = {n} seeds; {mark}: {table['interval'].iloc[0]})"


def _in_unit(
    table: pd.DataFrame, columns: list[str], scale: float, unit: str | None
) -> pd.DataFrame:
    """``columns`` of the table as drawn (divided by ``scale``), with a ``unit`` column."""
    shown = table.copy()
    for column in columns:
        if column in shown.columns:
            shown[column] = shown[column] / scale
    shown["unit"] = unit or ""
    return shown
