"""The calibration check as a figure: each preset's relative error per metric and seed,
against the issue's tolerance bands (:func:`analysim.presets.calibration.check`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.plotting.base import new_figure, remember

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PRESET_COLORS = {"venus": "#0173b2", "earth": "#029e73", "saturn": "#de8f05", "uranus": "#cc78bc"}
METRIC_UNITS = {
    "jobs_per_day": "jobs/day",
    "mean_run": "s",
    "median_run": "s",
    "mean_gpus": "GPUs",
    "median_gpus": "GPUs",
    "mean_queue": "s",
    "median_queue": "s",
    "total_gpus": "GPUs",
    "gpu_seconds_per_job": "GPU-s",
    "max_gpus": "GPUs",
    "failed_share": "share",
}
"""The unit of each checked metric's simulated and published values (the CSV's ``unit``)."""
ERROR_LIMIT = 1.0
"""Relative errors beyond ±100% are drawn at the edge (their value stays in the CSV)."""


def calibration_errors(table: pd.DataFrame) -> Figure:
    """One row per metric with a tolerance: each preset's relative error (a dot per seed,
    shifted a little per preset), the tolerance as a grey band (a line at 0 for "equal");
    misses drawn hollow. ``table`` is :func:`analysim.presets.calibration.check`'s."""
    checked = table[table["tolerance"].notna()].reset_index(drop=True)
    labels = list(dict.fromkeys(checked["label"]))
    presets = list(dict.fromkeys(checked["preset"]))
    fig, ax = new_figure((7.0, 0.45 * len(labels) + 1.6))
    rows = {label: i for i, label in enumerate(labels)}
    for label, part in checked.groupby("label", sort=False):
        tolerance = float(part["tolerance"].iloc[0])
        y = rows[label]
        if tolerance > 0:
            ax.fill_betweenx([y - 0.4, y + 0.4], -tolerance, tolerance, color="0.85", linewidth=0)
        else:
            ax.plot([0, 0], [y - 0.4, y + 0.4], color="0.6", linewidth=2)
    offsets = np.linspace(-0.25, 0.25, max(len(presets), 1))
    for offset, preset in zip(offsets, presets, strict=True):
        part = checked[checked["preset"] == preset]
        y = part["label"].map(rows).to_numpy(dtype=float) + offset
        x = part["rel_error"].clip(-ERROR_LIMIT, ERROR_LIMIT).to_numpy(dtype=float)
        missed = (part["verdict"] == "MISS").to_numpy()
        color = PRESET_COLORS.get(str(preset), "0.3")
        ax.scatter(x[~missed], y[~missed], color=color, s=18, label=preset, zorder=3)
        ax.scatter(x[missed], y[missed], facecolors="none", edgecolors=color, s=18, zorder=3)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(-ERROR_LIMIT * 1.05, ERROR_LIMIT * 1.05)
    ax.xaxis.set_major_formatter(lambda value, _: f"{value:+.0%}")
    ax.set_xlabel("simulated vs published (relative error; hollow: outside tolerance)")
    ax.legend(title="preset (dot per seed)", loc="lower right", fontsize="small")
    columns = ["preset", "seed", "metric", "simulated", "published", "rel_error", "verdict"]
    shown = checked[columns].copy()
    shown.insert(5, "unit", shown["metric"].map(METRIC_UNITS).fillna(""))
    remember(ax, shown.rename(columns={"rel_error": "rel_error_fraction"}))
    return fig
