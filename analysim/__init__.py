"""AnalySIM: simulate multi-tenant GPU clusters and compare how they are scheduled."""

from analysim import policies, presets, traces
from analysim.cluster import Cluster
from analysim.config import SimConfig
from analysim.engine import Simulation
from analysim.errors import PolicyError, ResultFormatError
from analysim.result import Result
from analysim.sharing import SHARE_PLACERS, saturate
from analysim.simulate import simulate
from analysim.version import VERSION
from analysim.workload import Workload

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
        from analysim.extras import missing_package

        raise missing_package(exc.name, "explore") from exc
    return _explore(*args, **kwargs)


# Submodules imported on first use, so that ``import analysim`` stays light (no Dask).
# ``analysim.sweep`` is callable: ``asim.sweep(grid, workload=...)``.
_LAZY = {"sweep": "analysim.sweep"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(_LAZY[name])
    raise AttributeError(f"module 'analysim' has no attribute {name!r}")
