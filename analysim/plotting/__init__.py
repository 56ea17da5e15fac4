"""Seaborn-style plots of AnalySIM results, and byte-stable figure files.

Axes-level functions take one ``Result``, a dict ``{label: Result}`` or a list of results,
draw on ``ax`` (a new figure's Axes when ``ax=None``) and return the Axes; figure-level ones
return the Figure. Each policy has one colour everywhere (:data:`style.PALETTE`) and times are
shown in hours or days where seconds would be unreadable.

>>> from analysim import plotting
>>> ax = plotting.jct_cdf({"fifo": fifo_result, "las": las_result})   # doctest: +SKIP
>>> plotting.save_figure(ax.figure, "jct_cdf", "figures")             # doctest: +SKIP

The plots of sweeps (``analysim.sweep.plots``) and the occupancy plots
(``analysim.plotting.occupancy``) are re-exported here when those modules are installed:
they are looked up on first use, so ``analysim.plotting`` works without them.

Importing ``analysim`` does not import this package (nor matplotlib).
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from analysim.plotting.base import as_results, new_figure, plotted_data, run_label
from analysim.plotting.calibration import calibration_errors
from analysim.plotting.jobs import (
    cdf_data,
    comparison_table,
    distribution_stats,
    jct_cdf,
    per_vc_bars,
    per_vc_data,
    queue_delay,
)
from analysim.plotting.panels import (
    curve_data,
    mark_x,
    metric_curve,
    panel_letters,
    policy_comparison,
    summary_bars,
    timeline_panels,
)
from analysim.plotting.saturation import saturation_curves, saturation_panels
from analysim.plotting.save import save_figure, write_csv
from analysim.plotting.style import PALETTE, colors_for, policy_color, time_unit
from analysim.plotting.timeline import (
    node_time_heatmap,
    node_usage_data,
    timeline,
    timeline_data,
)

log = logging.getLogger(__name__)

OPTIONAL_MODULES = ("analysim.sweep.plots", "analysim.plotting.occupancy")
"""Modules whose public plots are re-exported here when they can be imported."""

__all__ = [
    "PALETTE",
    "as_results",
    "calibration_errors",
    "cdf_data",
    "colors_for",
    "comparison_table",
    "curve_data",
    "distribution_stats",
    "jct_cdf",
    "mark_x",
    "metric_curve",
    "new_figure",
    "node_time_heatmap",
    "node_usage_data",
    "panel_letters",
    "per_vc_bars",
    "per_vc_data",
    "plotted_data",
    "policy_color",
    "policy_comparison",
    "queue_delay",
    "run_label",
    "saturation_curves",
    "saturation_panels",
    "save_figure",
    "summary_bars",
    "time_unit",
    "timeline",
    "timeline_data",
    "timeline_panels",
    "write_csv",
]


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        log.debug("analysim.plotting: %s not available (%s)", name, exc)
        return None


def _public(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return list(names)


def __getattr__(name: str) -> Any:
    if not name.startswith("_"):
        for module_name in OPTIONAL_MODULES:
            module = _optional(module_name)
            if module is not None and name in _public(module):
                return getattr(module, name)
    raise AttributeError(f"module 'analysim.plotting' has no attribute {name!r}")


def __dir__() -> list[str]:
    extra = [n for m in OPTIONAL_MODULES if (mod := _optional(m)) for n in _public(mod)]
    return sorted(set(__all__) | set(extra))
