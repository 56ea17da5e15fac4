"""The interactive explorer: change the policies inline, watch the cluster, ask why a job waits.

This package is the only part of AnalySIM that imports ipywidgets (``pip install
analysim[notebooks]``); ``import analysim`` does not import it. In a notebook::

    import analysim as asim
    app = asim.explore(workload="venus")   # the Venus preset, 7 days by default
    app                                    # shows the controls and outputs

Every control change reruns the simulation after a short pause (debounced; a progress bar
shows while it runs) and updates the summary table (the baseline and kept runs beside the
current one, labelled by what differs), the JCT CDF, the timelines with the slider's moment
marked, a node × GPU occupancy heatmap with the jobs waiting at that moment, and "why is
this job waiting?" (:mod:`analysim.results.explain`). A bad combination shows a message and leaves
the previous results in place; bad arguments to ``explore()`` are refused with a one-line
reason.

Modules: ``app`` (the :class:`Explorer`), ``layout`` (widgets and their arrangement),
``inputs`` (checking controls and arguments), ``sources`` (the workload choices: presets,
scenarios, a trace), ``compare`` (baseline, kept runs, labels, identical-results notes),
``moment`` (the cluster at the slider's moment), ``render`` (figures), ``units`` (units and
readable numbers), ``export``, ``stepper`` (the step-through panel).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysim.explorer.app import Explorer
from analysim.explorer.inputs import (
    DEFAULT_DAYS,
    ExploreArgumentError,
    MissingFolderError,
    parse_cost,
    scale_cluster,
)
from analysim.explorer.stepper import Stepper, teach
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload

__all__ = [
    "ExploreArgumentError",
    "MissingFolderError",
    "Explorer",
    "Stepper",
    "explore",
    "parse_cost",
    "scale_cluster",
    "teach",
]


def explore(
    workload: str | Path | Workload | Any = "venus",
    cluster: str | Cluster | None = None,
    *,
    days: float = DEFAULT_DAYS,
    config: SimConfig | dict[str, Any] | None = None,
    sync: bool = False,
    debounce: float = 0.4,
    run: bool = True,
    export_dir: str | Path = "analysim-export",
) -> Explorer:
    """The explorer app on a preset workload (``"toy"``, ``"venus"``), a teaching scenario
    (``"preemption"``, ``"las_queues"``, ``"fragmentation"``, ``"migration"``,
    ``"borrowing"``: :mod:`analysim.inputs.scenarios`) or a trace: a folder of one (read with
    :func:`analysim.traces.read_folder`; ``"bundled:openb"``), a
    :class:`~analysim.traces.Trace` from a reader (its cluster unless ``cluster`` is given)
    or a :class:`~analysim.inputs.workload.Workload` with its ``cluster``.

    ``days``: length of the ``venus`` workload (7 by default, so a run takes about a second
    under ``fifo``). ``config``: the starting :class:`~analysim.inputs.config.SimConfig`.
    ``sync=True`` runs each change at once (no thread; for tests); ``debounce`` is the pause
    in seconds after the last change before a run. ``run=False`` skips the first run.
    ``export_dir``: where the export button writes. Bad arguments raise
    :class:`ExploreArgumentError` (a ``ValueError``; for a missing folder
    :class:`MissingFolderError`, also a ``FileNotFoundError``) with a one-line reason;
    nothing is clamped.
    """
    return Explorer(
        workload,
        cluster,
        days=days,
        config=config,
        sync=sync,
        debounce=debounce,
        run=run,
        export_dir=export_dir,
    )
