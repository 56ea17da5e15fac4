"""The saturation experiment of the FGD study (Weng et al., ATC'23): tasks arrive until the
cluster is full, under each placement policy of :mod:`analysim.sharing`, and the GPUs
allocated are read against the arrived tasks' demand; the comparison with the peer's cached
curves; the sweep over seeds and policies (on Dask) and the ``analysim saturate`` command.
"""

import importlib

from analysim.experiments.saturation.peer import (
    PEER_POLICIES,
    compare_with_peer,
    read_peer_curves,
)
from analysim.experiments.saturation.run import (
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
    "SharedTrace",
    "compare_with_peer",
    "peer_order_files",
    "read_peer_arrivals",
    "read_peer_curves",
    "read_peer_tie_break",
    "saturate",
    "saturate_sweep",
    "saturation_curve",
    "saturation_log",
]


def __getattr__(name: str):
    """``FGD_STUDY`` and ``saturate_sweep``, from :mod:`analysim.experiments.saturation.sweep`
    on first use (it needs the sweeps' Dask)."""
    if name in ("FGD_STUDY", "saturate_sweep"):
        return getattr(importlib.import_module("analysim.experiments.saturation.sweep"), name)
    raise AttributeError(f"module 'analysim.experiments.saturation' has no attribute {name!r}")
