"""``simulate``: the one-call entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysim.config import SimConfig
from analysim.engine import Simulation
from analysim.validation import seconds

if TYPE_CHECKING:
    from analysim.cluster import Cluster
    from analysim.result import Result
    from analysim.workload import Workload


def simulate(
    workload: Workload,
    cluster: Cluster,
    config: SimConfig | dict[str, Any] | None = None,
    *,
    compat: str | None = None,
    until: float | None = None,
    progress: bool = False,
    **options: Any,
) -> Result:
    """Run ``workload`` on ``cluster`` and return the :class:`~analysim.result.Result`.

    ``config`` is a :class:`SimConfig` or a dict of its fields; any field may also be given
    as a keyword (``scheduler="las", preemption=True``), overriding ``config``.

    ``compat="helios"`` replays the trace with the public Helios simulator's semantics
    instead (schedulers ``fifo``, ``sjf``, ``srtf``, ``tiresias``; see ``docs/compat.md``);
    it reads only ``scheduler`` and ``sample_every`` and refuses any other option.
    """
    if compat is not None:
        if until is not None:
            seconds(until, "simulate: until", positive=False)
        from analysim.compat import simulate_compat

        return simulate_compat(
            compat, workload, cluster, config, options, until=until, progress=progress
        )
    if config is None:
        config = SimConfig.from_dict(options)
    else:
        base = config if isinstance(config, SimConfig) else SimConfig.from_dict(config)
        config = base.replace(**options) if options else base
    sim = Simulation(workload, cluster, config, progress=progress)
    return sim.run(until=until).result()
