"""AnalySIM: simulate multi-tenant GPU clusters and compare how they are scheduled."""

from analysim import policies, presets, traces
from analysim.engine import Simulation
from analysim.errors import PolicyError, ResultFormatError
from analysim.experiments.saturation import saturate
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload
from analysim.policies.costs import young_daly_interval
from analysim.results.result import Result
from analysim.sharing import SHARE_PLACERS
from analysim.simulate import simulate
from analysim.version import VERSION

__all__ = [
    "Cluster",
    "PolicyError",
    "Result",
    "ResultFormatError",
    "SHARE_PLACERS",
    "SimConfig",
    "Simulation",
    "Workload",
    "explore",
    "policies",
    "presets",
    "saturate",
    "simulate",
    "traces",
    "young_daly_interval",
]
__version__ = VERSION


def explore(*args, **kwargs):
    """The interactive explorer (:func:`analysim.explorer.explore`; needs ipywidgets, so it is
    imported only when called)."""
    try:
        from analysim.explorer import explore as _explore
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] == "analysim":
            raise
        from analysim.faces.extras import missing_package

        raise missing_package(exc.name, "explore") from exc
    return _explore(*args, **kwargs)


# Submodules imported on first use, so that ``import analysim`` stays light (no Dask).
# ``analysim.sweep`` is callable: ``asim.sweep(grid, workload=...)``; ``asim.saturation``
# holds the saturation experiment (``asim.saturation.saturate_sweep``, ...).
_LAZY = {
    "sweep": "analysim.sweep",
    "saturation": "analysim.experiments.saturation",
    "figures": "analysim.experiments.figures",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module 'analysim' has no attribute {name!r}")
