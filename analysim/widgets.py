"""The explorer's former home: ``analysim.widgets.explore`` and friends, kept working.

The explorer lives in :mod:`analysim.explorer`; this module re-exports its public names.
"""

from __future__ import annotations

from analysim.explorer import (
    ExploreArgumentError,
    Explorer,
    Stepper,
    explore,
    parse_cost,
    scale_cluster,
    teach,
)

__all__ = [
    "ExploreArgumentError",
    "Explorer",
    "Stepper",
    "explore",
    "parse_cost",
    "scale_cluster",
    "teach",
]
