"""Plots of the saturation experiment (FGD, ATC'23): allocation and fragmentation against the
arrived GPU demand, one line per placement policy, the mean over seeds with a band from the
lowest to the highest seed.

>>> frame = saturate_sweep("bundled:openb", seeds=range(42, 52))   # analysim.sharing
>>> saturation_curves(frame, "allocated_pct")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from analysim.plotting.base import get_ax, new_figure, remember
from analysim.plotting.jobs import LINESTYLES, MARKERS
from analysim.plotting.panels import INTERVALS, panel_letters
from analysim.plotting.style import colors_for

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SATURATION_LABELS = {
    "allocated_pct": "GPU milli allocated (% of capacity)",
    "frag_amount_pct": "fragmented GPU milli (% of capacity)",
    "frag_ratio_pct": "fragmented share of idle GPU milli (%)",
    "failed_pods": "tasks that failed",
}
"""Axis labels of the saturation curve's columns."""

X = "arrived_pct"
X_LABEL = "arrived GPU demand (% of the cluster's GPU capacity)"
MARK_EVERY = 10  # percent points between markers


def saturation_table(frame: pd.DataFrame, y: str) -> pd.DataFrame:
    """Per placement and arrived percent: the mean of ``y`` over seeds, its lowest and highest
    (``low``, ``high``) and the number of seeds (``count``)."""
    missing = [c for c in ("placement", X, y) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"saturation_curves: the frame has no column(s) {missing}; it has "
            f"{list(frame.columns)} (expected the frame of saturate_sweep)"
        )
    table = (
        frame.assign(**{y: frame[y].astype(float)})
        .groupby(["placement", X], sort=False)[y]
        .agg(["mean", "min", "max", "count"])
        .reset_index()
        .rename(columns={"mean": y, "min": "low", "max": "high"})
    )
    table["interval"] = INTERVALS["range"]
    return table


def saturation_curves(
    frame: pd.DataFrame, y: str = "allocated_pct", ax: Axes | None = None
) -> Axes:
    """``y`` (``allocated_pct``, ``frag_amount_pct``, ``frag_ratio_pct``, ``failed_pods``)
    against the arrived GPU demand, one line per placement (told apart by colour, line style
    and marker), the mean over seeds with a band from the lowest to the highest seed."""
    table = saturation_table(frame, y)
    ax = get_ax(ax)
    placements = list(dict.fromkeys(table["placement"]))
    palette = colors_for(placements)
    for k, name in enumerate(placements):
        part = table[table["placement"] == name]
        ax.plot(
            part[X],
            part[y],
            label=name,
            color=palette[name],
            linestyle=LINESTYLES[k % len(LINESTYLES)],
            marker=MARKERS[k % len(MARKERS)],
            markevery=(k % MARK_EVERY, MARK_EVERY),
            markersize=5,
        )
        if (part["count"] > 1).any():
            ax.fill_between(part[X], part["low"], part["high"], color=palette[name], alpha=0.15)
    seeds = sorted(set(table["count"]))
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
    spread = f"\n(mean of n = {n} seeds; band: lowest to highest)" if seeds[-1] > 1 else ""
    ax.set_xlabel(X_LABEL + spread)
    ax.set_ylabel(SATURATION_LABELS.get(y, y))
    ax.legend(title="placement")
    remember(ax, table.assign(unit="count" if y == "failed_pods" else "%"))
    return ax


def saturation_panels(
    frame: pd.DataFrame, columns: tuple[str, ...] = ("allocated_pct", "frag_ratio_pct")
) -> Figure:
    """:func:`saturation_curves` of several columns side by side, lettered (a), (b), ..."""
    fig, axes = new_figure((6.0 * len(columns), 4.4), 1, len(columns), squeeze=False)
    for ax, column in zip(axes[0], columns, strict=True):
        saturation_curves(frame, column, ax=ax)
    panel_letters(fig)
    return fig
