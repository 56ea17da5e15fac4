"""``simulate``: the one-call entry point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analysim.config import SimConfig
from analysim.engine import Simulation
from analysim.validation import MAX_SAMPLES, seconds

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
    if until is not None:
        seconds(until, "simulate: until", positive=False)
    if compat is not None:
        from analysim.compat import simulate_compat

        return simulate_compat(
            compat, workload, cluster, config, options, until=until, progress=progress
        )
    if config is None:
        config = SimConfig.from_dict(options)
    else:
        base = config if isinstance(config, SimConfig) else SimConfig.from_dict(config)
        config = base.replace(**options) if options else base
    check_samples(workload, config, until)
    sim = Simulation(workload, cluster, config, progress=progress)
    return sim.run(until=until).result()


def check_samples(workload: Workload, config: SimConfig, until: float | None) -> None:
    """Refuse, before running, a ``sample_every`` that would make the timeline longer than
    ``MAX_SAMPLES`` rows per series: the run lasts at least until its latest job could end
    (its submit time plus its duration), or ``until``."""
    jobs = workload.jobs
    horizon = float((jobs["submit_time"] + jobs["duration"]).max()) if len(jobs) else 0.0
    if until is not None:
        horizon = min(horizon, float(until))
    samples = horizon / config.sample_every
    if samples > MAX_SAMPLES:
        raise ValueError(
            f"SimConfig: sample_every={config.sample_every:g} s would sample the run (at least "
            f"{horizon:,.0f} s) {samples:,.0f} times; at most {MAX_SAMPLES:,} samples: use a "
            f"sample_every of at least {horizon / MAX_SAMPLES:,.3g} s"
        )
