"""GPU sharing and multi-resource nodes: the resource model, the FGD fragmentation measure and
the placement policies of the FGD study.

The model here sits below the time engine (``analysim.engine.book`` uses it) and imports
nothing above it; the saturation experiment that replays the FGD study on it is
:mod:`analysim.experiments.saturation`.
"""

from analysim.sharing.fragmentation import FragMeter, Shape, typical_shapes
from analysim.sharing.placers import SHARE_PLACERS, Context, Request, SharePlacer
from analysim.sharing.resources import Nodes, NodeState, ResourceError, Tasks

__all__ = [
    "SHARE_PLACERS",
    "Context",
    "FragMeter",
    "NodeState",
    "Nodes",
    "Request",
    "ResourceError",
    "Shape",
    "SharePlacer",
    "Tasks",
    "typical_shapes",
]
