"""Experiment sweeps: grids of configurations and seeds, run on Dask, resumable.

>>> import analysim as asim
>>> frame = asim.sweep({"scheduler": ["fifo", "las"]}, workload="toy", seeds=[0, 1])

``analysim.sweep`` is this package and can be called as the function :func:`sweep` (so
``asim.sweep(...)`` and ``asim.sweep.plots`` both work). ``overview(frame)`` condenses a
frame to one row per configuration. See ``docs/sweeps.md``.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from analysim.sweep import plots
from analysim.sweep.files import load_sweep_file
from analysim.sweep.grid import Run, expand
from analysim.sweep.report import overview
from analysim.sweep.runner import sweep

__all__ = ["Run", "expand", "load_sweep_file", "overview", "plots", "sweep"]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`sweep`: importing ``analysim.sweep`` (or any of its
    modules) sets the attribute ``analysim.sweep`` to the package, which must stay callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
