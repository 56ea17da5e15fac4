"""``simulate``: the one-call entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysim.engine import Simulation
from analysim.inputs.arguments import (
    check_scheduler_columns,
    cluster_argument,
    config_argument,
    workload_argument,
)
from analysim.inputs.validation import seconds

if TYPE_CHECKING:
    from collections.abc import Mapping

    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result


def simulate(
    workload: Workload | str,
    cluster: Cluster | str,
    config: SimConfig | dict[str, Any] | str | None = None,
    *,
    compat: str | None = None,
    until: float | None = None,
    progress: bool = False,
    applications: Mapping[str, Any] | None = None,
    **options: Any,
) -> Result:
    """Run ``workload`` on ``cluster`` and return the :class:`~analysim.results.result.Result`.

    ``workload`` and ``cluster`` are a :class:`~analysim.inputs.workload.Workload` and a
    :class:`~analysim.inputs.cluster.Cluster`, or preset names: ``simulate("venus", "venus",
    seed=3)`` builds ``asim.presets.workload("venus", seed=3)`` (seeded by the config's seed,
    as ``analysim run`` does) and ``asim.presets.cluster("venus")``. A DataFrame is refused
    with the call that makes one of it (``asim.Workload.from_frame(df)``).

    ``config`` is a :class:`SimConfig`, a dict of its fields, or a scheduler name
    (``simulate(wl, cl, "las")`` is ``scheduler="las"``); any field may also be given as a
    keyword (``scheduler="las", preemption=True``), overriding ``config``.

    ``until``: stop the run at this time in seconds (jobs still running or waiting then are
    in the result as such; default: when every job has finished). ``progress=True`` shows a
    progress bar over simulated time. ``applications``: job performance models to add to the
    built-in ones, by name (a table of ``gpus, nodes, throughput`` or an
    :class:`~analysim.inputs.applications.Application`), for the workload's ``application``
    column (``docs/performance.md``).

    ``compat="helios"`` replays the trace with the public Helios simulator's semantics
    instead (schedulers ``fifo``, ``sjf``, ``srtf``, ``tiresias``; see ``docs/compat.md``);
    it reads only ``scheduler`` and ``sample_every`` and refuses any other option.
    ``compat="pollux"`` replays a workload of ``asim.traces.read_pollux`` with the Pollux
    artifact's simulator's rules (schedulers ``tiresias``, ``optimus``, ``pollux``;
    ``docs/pollux.md``).
    """
    if compat is not None:
        if until is not None:
            seconds(until, "simulate: until", positive=False)
        from analysim.compat import simulate_compat

        if isinstance(config, str):
            config = {"scheduler": config}
        workload = workload_argument(workload, "simulate", seed=options.get("seed", 0))
        cluster = cluster_argument(cluster, "simulate")
        _no_performance_model(compat, workload, applications)
        return simulate_compat(
            compat, workload, cluster, config, options, until=until, progress=progress
        )
    config = config_argument(config, "simulate", options)
    workload = workload_argument(workload, "simulate", seed=config.seed)
    cluster = cluster_argument(cluster, "simulate")
    check_scheduler_columns(workload, config, "simulate")
    sim = Simulation(workload, cluster, config, progress=progress, applications=applications)
    return sim.run(until=until).result()


def _no_performance_model(
    compat: str, workload: Workload, applications: Mapping[str, Any] | None
) -> None:
    """A Helios replay keeps its peer's rules, which have no job performance model (the
    Pollux replay has its own: the artifact's, read from the ``application`` column)."""
    if compat == "pollux" and not applications:
        return
    jobs = workload.jobs
    if applications or ("application" in jobs.columns and jobs["application"].notna().any()):
        raise ValueError(
            f"simulate: compat={compat!r} replays its simulator's rules, which have no job "
            "performance model; drop the workload's 'application' column and applications="
        )
