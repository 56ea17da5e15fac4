"""GPU sharing and multi-resource nodes: the resource model, the FGD fragmentation measure,
the placement policies of the FGD study and the saturation experiment (``saturate``).

The model here sits below the time engine (``analysim.engine.book`` uses it); the
sweeps of ``sharing.sweep`` sit above it (they run on ``analysim.sweep``), so they are loaded
when first asked for, not with this package.
"""

import importlib

from analysim.sharing.fragmentation import FragMeter, Shape, typical_shapes
from analysim.sharing.peer import PEER_POLICIES, compare_with_peer, read_peer_curves
from analysim.sharing.placers import SHARE_PLACERS, Context, Request, SharePlacer
from analysim.sharing.resources import Nodes, NodeState, ResourceError, Tasks
from analysim.sharing.saturate import (
    SharedTrace,
    peer_order_files,
    read_peer_arrivals,
    read_peer_tie_break,
    saturate,
    saturation_curve,
    saturation_log,
)

__all__ = [
    "FGD_STUDY",
    "PEER_POLICIES",
    "SHARE_PLACERS",
    "Context",
    "FragMeter",
    "NodeState",
    "Nodes",
    "Request",
    "ResourceError",
    "Shape",
    "SharePlacer",
    "SharedTrace",
    "Tasks",
    "compare_with_peer",
    "peer_order_files",
    "read_peer_arrivals",
    "read_peer_curves",
    "read_peer_tie_break",
    "saturate",
    "saturate_sweep",
    "saturation_curve",
    "saturation_log",
    "typical_shapes",
]


def __getattr__(name: str):
    """``FGD_STUDY`` and ``saturate_sweep``, from :mod:`analysim.sharing.sweep` on first use."""
    if name in ("FGD_STUDY", "saturate_sweep"):
        return getattr(importlib.import_module("analysim.sharing.sweep"), name)
    raise AttributeError(f"module 'analysim.sharing' has no attribute {name!r}")
