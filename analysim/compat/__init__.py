"""Compatibility modes: replay a trace with another simulator's exact semantics.

``simulate(workload, cluster, compat="helios", scheduler="fifo")`` runs the Helios-compatible
replay (:mod:`analysim.compat.helios`) instead of AnalySIM's engine. The rules, and how they
differ from AnalySIM's defaults, are in ``docs/compat.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from analysim.compat.helios import SCHEDULERS as HELIOS_SCHEDULERS
from analysim.compat.helios import simulate_helios
from analysim.compat.pollux import SCHEDULERS as POLLUX_SCHEDULERS
from analysim.compat.pollux import simulate_pollux

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result

MODES = ("helios", "pollux")
#: the schedulers of each mode (the first is the default)
SCHEDULERS = {"helios": HELIOS_SCHEDULERS, "pollux": POLLUX_SCHEDULERS}
# the SimConfig fields a compat mode reads; it fixes (and so refuses) every other one
USED_OPTIONS = ("scheduler", "sample_every")
#: options a mode reads beyond those: the Pollux policy's random draws need a seed
MODE_OPTIONS = {"helios": (), "pollux": ("seed",)}

__all__ = [
    "HELIOS_SCHEDULERS",
    "MODES",
    "POLLUX_SCHEDULERS",
    "SCHEDULERS",
    "simulate_compat",
    "simulate_helios",
    "simulate_pollux",
]


def simulate_compat(
    compat: str,
    workload: Workload,
    cluster: Cluster,
    config: SimConfig | Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    until: float | None = None,
    progress: bool = False,
) -> Result:
    """Run the ``compat`` mode on ``workload`` and ``cluster``.

    ``config`` and ``options`` are read as by :func:`analysim.simulate`; the only options a
    mode uses are ``scheduler`` (a name, or ``{"name": ...}``) and ``sample_every``. Any
    other option that is set (a keyword, a dict key, or a ``SimConfig`` field away from its
    default) raises ``ValueError`` naming it, since the mode would ignore it.
    """
    if compat not in MODES:
        raise ValueError(f"simulate: unknown compat mode {compat!r}; known modes: {list(MODES)}")
    settings = _explicit_settings(config, options or {})
    used = (*USED_OPTIONS, *MODE_OPTIONS[compat])
    ignored = sorted(set(settings) - set(used))
    if until is not None:
        ignored.append("until")
    if ignored:
        raise ValueError(
            f"compat={compat!r} ignores option(s) {ignored}: the {compat.capitalize()} "
            "simulator fixes them "
            f"(it reads only {list(used)}; see docs/compat.md)"
        )
    scheduler = _scheduler_name(settings.get("scheduler", SCHEDULERS[compat][0]), compat)
    sample_every = settings.get("sample_every", 300.0)
    if (
        isinstance(sample_every, bool)
        or not isinstance(sample_every, (int, float))
        or not sample_every > 0
    ):
        raise ValueError(
            f"compat={compat!r}: sample_every must be seconds > 0, got {sample_every!r}"
        )
    if compat == "pollux":
        seed = settings.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"compat='pollux': seed must be a whole number >= 0, got {seed!r}")
        return simulate_pollux(workload, cluster, scheduler, float(sample_every), seed=seed)
    return simulate_helios(workload, cluster, scheduler, float(sample_every), progress=progress)


def _explicit_settings(
    config: SimConfig | Mapping[str, Any] | None, options: Mapping[str, Any]
) -> dict[str, Any]:
    """The options the caller set: keywords, dict keys, and SimConfig fields off default."""
    from analysim.inputs.config import SimConfig

    if config is None:
        settings: dict[str, Any] = {}
    elif isinstance(config, SimConfig):
        default = SimConfig()
        settings = {
            f.name: getattr(config, f.name)
            for f in dataclasses.fields(SimConfig)
            if getattr(config, f.name) != getattr(default, f.name)
        }
        settings["scheduler"] = config.scheduler
    elif isinstance(config, Mapping):
        settings = dict(config)
    else:
        raise TypeError(
            f"simulate: config must be a SimConfig, a dict or None, got {type(config).__name__}"
        )
    settings.update(options)
    unknown = sorted(set(settings) - set(SimConfig.fields()))
    if unknown:
        raise ValueError(f"simulate: unknown option(s) {unknown}; options are {SimConfig.fields()}")
    return settings


def _scheduler_name(spec: Any, compat: str) -> str:
    """A scheduler name from ``"srtf"`` or ``{"name": "srtf"}`` (no parameters)."""
    if isinstance(spec, Mapping):
        extra = sorted(set(spec) - {"name"})
        if extra:
            raise ValueError(
                f"compat={compat!r}: the scheduler takes no parameters, got {extra} in {spec!r}"
            )
        spec = spec.get("name")
    if not isinstance(spec, str) or spec not in SCHEDULERS[compat]:
        raise ValueError(
            f"compat={compat!r} supports the schedulers {list(SCHEDULERS[compat])}, got {spec!r}"
        )
    return spec
