"""The front door's checks: what ``simulate``, ``Simulation`` and the study accept as a
workload, a cluster and a config, and the one-line message for anything else.

* a workload is a :class:`~analysim.inputs.workload.Workload`; ``simulate`` and the study also take
  a preset name (``"venus"``: :func:`analysim.presets.workload` seeded by the config's seed,
  as ``analysim run --workload venus --seed N`` does); a DataFrame, a trace or a path is
  refused with the call that turns it into one;
* a cluster is a :class:`~analysim.inputs.cluster.Cluster` (or, where names are taken, a preset
  name);
* a config is a :class:`~analysim.inputs.config.SimConfig`, a dict of its fields, a scheduler name
  (``simulate(wl, cl, "las")`` is ``scheduler="las"``) or ``None`` (the defaults);
* a scheduler that ranks by a workload column (``priority``) needs the workload to have it.

Every refusal is a ``ValueError`` (a wrong type is an
:class:`~analysim.errors.InputTypeError`, also a ``TypeError``) that starts with the name of
the function called.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.errors import InputTypeError
from analysim.inputs.config import SimConfig

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload


def _is_trace(value: Any) -> bool:
    """Whether ``value`` is what a trace reader returns (duck-typed: no import of traces)."""
    return hasattr(value, "workload") and hasattr(value, "report")


def _not_a_preset(where: str, kind: str, name: str) -> ValueError:
    from analysim import presets

    return ValueError(
        f"{where}: {kind} {name!r} is not a preset (presets: {', '.join(presets.names())}); "
        "read a trace folder with asim.traces.read_folder(path) or a CSV with "
        "asim.traces.read_csv_trace(path), then pass trace.workload and trace.cluster"
    )


def _preset_name(value: str, where: str, kind: str, names_allowed: bool) -> str:
    """``value`` if it is a preset name and names are allowed; a ValueError saying what to
    call otherwise."""
    from analysim import presets

    if value not in presets.names():
        raise _not_a_preset(where, kind, value)
    if not names_allowed:
        raise ValueError(
            f"{where}: {kind} {value!r} is a preset name: use asim.presets.{kind}({value!r})"
        )
    return value


def workload_argument(
    value: Any, where: str, *, seed: int = 0, names_allowed: bool = True
) -> Workload:
    """``value`` as a Workload: a Workload itself or (``names_allowed``) a preset name,
    built with ``seed``; anything else is refused saying what to pass instead."""
    from analysim import presets
    from analysim.inputs.workload import Workload

    if isinstance(value, Workload):
        return value
    if isinstance(value, pd.DataFrame):
        raise InputTypeError(f"{where}: workload is a DataFrame: use asim.Workload.from_frame(df)")
    if _is_trace(value):
        raise InputTypeError(f"{where}: workload is a Trace: pass trace.workload and trace.cluster")
    if isinstance(value, Path):
        raise InputTypeError(
            f"{where}: workload is a path ({str(value)!r}): read it with "
            "asim.traces.read_folder(path) or asim.traces.read_csv_trace(path), then pass "
            "trace.workload and trace.cluster"
        )
    if isinstance(value, str):
        return presets.workload(_preset_name(value, where, "workload", names_allowed), seed=seed)
    raise InputTypeError(
        f"{where}: workload must be a Workload (asim.Workload.from_frame(df) or "
        f"asim.presets.workload(name)), got {type(value).__name__}"
    )


def cluster_argument(value: Any, where: str, *, names_allowed: bool = True) -> Cluster:
    """``value`` as a Cluster: a Cluster itself or (``names_allowed``) a preset name."""
    from analysim import presets
    from analysim.inputs.cluster import Cluster

    if isinstance(value, Cluster):
        return value
    if isinstance(value, pd.DataFrame):
        raise InputTypeError(f"{where}: cluster is a DataFrame: use asim.Cluster.from_frame(df)")
    if _is_trace(value):
        raise InputTypeError(f"{where}: cluster is a Trace: pass trace.cluster")
    if isinstance(value, str):
        return presets.cluster(_preset_name(value, where, "cluster", names_allowed))
    raise InputTypeError(
        f"{where}: cluster must be a Cluster (asim.Cluster.from_frame(nodes_df) or "
        f"asim.presets.cluster(name)), got {type(value).__name__}"
    )


def config_argument(config: Any, where: str, options: Mapping[str, Any] | None = None) -> SimConfig:
    """``config`` as a SimConfig, with ``options`` (SimConfig fields) overriding it: a
    SimConfig, a dict of its fields, a scheduler name or ``None`` (the defaults)."""
    options = dict(options or {})
    if isinstance(config, str):
        if "scheduler" in options:
            raise ValueError(
                f"{where}: config {config!r} names the scheduler and so does "
                f"scheduler={options['scheduler']!r}; give one"
            )
        config = {"scheduler": config}
    if config is None:
        return SimConfig.from_dict(options)
    if isinstance(config, SimConfig):
        return config.replace(**options) if options else config
    if isinstance(config, Mapping):
        return SimConfig.from_dict({**config, **options})
    raise InputTypeError(
        f"{where}: config must be a SimConfig, a dict of its fields, a scheduler name or "
        f"None, got {type(config).__name__}"
    )


def check_scheduler_columns(workload: Workload, config: SimConfig, where: str) -> None:
    """Refuse a scheduler that ranks by a workload column (its ``columns``) the workload
    lacks, instead of ranking every job alike."""
    scheduler = config.make_scheduler()
    columns = list(workload.jobs.columns)
    missing = [c for c in getattr(scheduler, "columns", ()) if c not in columns]
    if missing:
        name = getattr(scheduler, "name", type(scheduler).__name__)
        raise ValueError(
            f"{where}: scheduler {name!r} ranks jobs by the workload's {missing[0]!r} column, "
            f"which workload {workload.name!r} does not have (its columns: {columns}); add a "
            f"{missing[0]!r} column to the jobs table, or choose another scheduler"
        )


def simulation_arguments(
    workload: Any, cluster: Any, config: Any, where: str = "Simulation"
) -> tuple[Workload, Cluster, SimConfig]:
    """The checked arguments of ``Simulation(workload, cluster, config)``: objects only (a
    preset name is refused saying which call builds it), a config as :func:`config_argument`
    takes it, and the scheduler's columns present."""
    workload = workload_argument(workload, where, names_allowed=False)
    cluster = cluster_argument(cluster, where, names_allowed=False)
    config = config_argument(config, where)
    check_scheduler_columns(workload, config, where)
    return workload, cluster, config
