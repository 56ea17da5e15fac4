"""GPU sharing and multi-resource nodes: the resource model, the FGD fragmentation measure,
the placement policies of the FGD study and the saturation experiment (``saturate``)."""

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
from analysim.sharing.sweep import FGD_STUDY, saturate_sweep

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
