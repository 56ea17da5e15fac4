"""The failure settings of a :class:`~analysim.inputs.config.SimConfig`, checked.

``node_mtbf``, ``failure_shape``, ``repair_time``, ``checkpoint_every``,
``restart_overhead``, ``failures`` (a table of node downtimes: ``node, down, up``),
``job_failure_prob``, ``retry_failed`` and ``spare_nodes``; ``docs/failures.md`` gives the
rules. Each bad value is a ``ValueError`` naming the field (and, for the table, the row and
column) and the value. A schedule's node names, and the spares', are checked against the
cluster when the simulation is built (:func:`check_schedule_nodes`, :func:`spare_node_indices`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from analysim.inputs.validation import bounded, plain_number, seconds

#: one node downtime of a failure schedule: (node name, down, up), seconds
Downtime = tuple[str, float, float]
SCHEDULE_COLUMNS = ("node", "down", "up")
#: the optional seconds of a config's failure settings (None: off)
SECONDS_FIELDS = ("node_mtbf", "repair_time", "checkpoint_every", "restart_overhead")
FATES = ("model", "recorded")
"""The values of ``SimConfig.fates``: the failure model decides how each job ends, or the
workload's recorded ``state`` does (``docs/failures.md``, "Recorded fates")."""


def failure_schedule(value: Any) -> tuple[Downtime, ...] | None:
    """A failure schedule as a tuple of ``(node, down, up)``, from a DataFrame with columns
    ``node, down, up`` or a list of records (dicts with those keys, or 3-item sequences);
    checked: times are seconds >= 0, ``down < up``, and one node's downtimes do not overlap.
    Rows are numbered from 0 in the order given."""
    if value is None:
        return None
    rows = _records(value)
    out: list[Downtime] = []
    for i, row in enumerate(rows):
        node, down, up = row
        where = f"SimConfig: failures row {i}"
        if isinstance(node, (bool, np.bool_)) or node is None or _missing(node):
            raise ValueError(f"{where}: column 'node' must name a node, got {node!r}")
        down = seconds(down, f"{where}: column 'down'", positive=False)
        up = seconds(up, f"{where}: column 'up'", positive=False)
        if not down < up:
            raise ValueError(
                f"{where} (node {str(node)!r}): 'down' ({down:g}) must be before 'up' ({up:g})"
            )
        out.append((str(node), down, up))
    _check_overlaps(out)
    return tuple(out)


def _missing(value: Any) -> bool:
    return isinstance(value, float) and value != value  # NaN


def _records(value: Any) -> list[tuple[Any, Any, Any]]:
    """The rows of a schedule given as a DataFrame or a list of records."""
    columns = getattr(value, "columns", None)
    if columns is not None:  # a DataFrame
        absent = [c for c in SCHEDULE_COLUMNS if c not in columns]
        if absent:
            raise ValueError(
                f"SimConfig: failures must have the columns {list(SCHEDULE_COLUMNS)}; "
                f"missing {absent}"
            )
        return list(zip(*(value[c].tolist() for c in SCHEDULE_COLUMNS), strict=True))
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ValueError(
            "SimConfig: failures must be a table of node downtimes (a DataFrame with columns "
            f"node, down, up, or a list of such records), got {value!r}"
        )
    rows = []
    for i, row in enumerate(value):
        if isinstance(row, Mapping):
            absent = [c for c in SCHEDULE_COLUMNS if c not in row]
            extra = sorted(str(k) for k in row if k not in SCHEDULE_COLUMNS)
            if absent or extra:
                raise ValueError(
                    f"SimConfig: failures row {i} must have the keys {list(SCHEDULE_COLUMNS)}, "
                    f"got {sorted(str(k) for k in row)}"
                )
            rows.append(tuple(row[c] for c in SCHEDULE_COLUMNS))
        elif isinstance(row, Sequence) and not isinstance(row, (str, bytes)) and len(row) == 3:
            rows.append(tuple(row))
        else:
            raise ValueError(
                f"SimConfig: failures row {i} must be a record (node, down, up), got {row!r}"
            )
    return rows


def _check_overlaps(rows: list[Downtime]) -> None:
    """Two downtimes of one node may not overlap (one may start when the other ends)."""
    by_node: dict[str, list[tuple[float, float, int]]] = {}
    for i, (node, down, up) in enumerate(rows):
        by_node.setdefault(node, []).append((down, up, i))
    for node, spans in by_node.items():
        spans.sort()
        for (_, up, i), (down, _, k) in zip(spans, spans[1:], strict=False):
            if down < up:
                first, second = sorted((i, k))
                raise ValueError(
                    f"SimConfig: failures rows {first} and {second}: downtimes of node "
                    f"{node!r} overlap (one is down until {up:g}, the other from {down:g})"
                )


def spare_setting(value: Any) -> int | tuple[str, ...]:
    """``spare_nodes`` as a count (the last nodes of the cluster, >= 0) or a tuple of node
    names (no repeats); anything else is an error naming the value."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if value < 0:
            raise ValueError(f"SimConfig: spare_nodes must be 0 or more nodes, got {value!r}")
        return int(value)
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ValueError(
            "SimConfig: spare_nodes must be a number of nodes or a list of node names, "
            f"got {value!r}"
        )
    names: list[str] = []
    for name in value:
        if not isinstance(name, str) or not name:
            raise ValueError(f"SimConfig: spare_nodes must name nodes as text, got {name!r}")
        if name in names:
            raise ValueError(f"SimConfig: spare_nodes names node {name!r} twice")
        names.append(name)
    return tuple(names)


def spare_node_indices(value: int | tuple[str, ...], names: Sequence[str], cluster: str):
    """The nodes ``spare_nodes`` sets aside (indices, in node order): the last ``value`` of
    the cluster, or the nodes named; at least one node must stay in service."""
    if isinstance(value, int):
        chosen = list(range(len(names) - value, len(names)))
    else:
        index = {name: i for i, name in enumerate(names)}
        for name in value:
            if name not in index:
                raise ValueError(
                    f"SimConfig: spare_nodes: {name!r} is not a node of cluster {cluster!r}"
                )
        chosen = sorted(index[name] for name in value)
    if len(chosen) >= len(names):
        raise ValueError(
            f"SimConfig: spare_nodes sets aside {len(chosen)} node(s), but cluster {cluster!r} "
            f"has {len(names)}: at least one must stay in service"
        )
    return chosen


def schedule_records(schedule: tuple[Downtime, ...] | None) -> list[dict[str, Any]] | None:
    """A schedule as plain JSON records ``{"node", "down", "up"}``."""
    if schedule is None:
        return None
    return [{"node": n, "down": d, "up": u} for n, d, u in schedule]


def check_failure_settings(config: Any) -> None:
    """The failure fields of ``config`` (a SimConfig), checked (and numpy numbers made plain
    Python numbers by the caller)."""
    for name in SECONDS_FIELDS:
        value = getattr(config, name)
        if name == "node_mtbf" and isinstance(value, Mapping):
            _check_mtbf_per_type(value)
        elif value is not None:
            if isinstance(value, (bool, np.bool_)):
                plain_number(value, f"SimConfig: {name}")
            # an interval or a mean time between failures must be > 0; a repair or restart
            # may take no time
            positive = name in ("node_mtbf", "checkpoint_every")
            seconds(value, f"SimConfig: {name}", positive=positive)
    bounded(config.failure_shape, "SimConfig: failure_shape", low=0.0, high=100.0, low_open=True)
    bounded(config.job_failure_prob, "SimConfig: job_failure_prob", low=0.0, high=1.0)
    if not isinstance(config.retry_failed, bool):
        raise ValueError(
            f"SimConfig: retry_failed must be True or False, got {config.retry_failed!r}"
        )
    _check_fates(config)
    if config.node_mtbf is not None and config.repair_time is None:
        raise ValueError(
            "SimConfig: node_mtbf needs repair_time (the seconds a failed node stays down)"
        )
    if config.spare_nodes and config.node_mtbf is None and config.failures is None:
        raise ValueError(
            "SimConfig: spare_nodes stand in for failed nodes: give node failures too "
            "(failures or node_mtbf)"
        )
    if config.node_mtbf is not None and config.failures is not None:
        raise ValueError(
            "SimConfig: give node failures either as a schedule (failures) or drawn "
            "(node_mtbf), not both"
        )


def _check_fates(config: Any) -> None:
    """``fates`` is one of :data:`FATES`; recorded fates leave no job failure to draw."""
    if not isinstance(config.fates, str) or config.fates not in FATES:
        raise ValueError(f"SimConfig: fates must be one of {list(FATES)}, got {config.fates!r}")
    if config.fates != "recorded":
        return
    if config.job_failure_prob > 0:
        raise ValueError(
            f"SimConfig: job_failure_prob ({config.job_failure_prob:g}) draws jobs' own "
            "failures, but with fates='recorded' the workload's state says which jobs fail: "
            "set job_failure_prob=0 or fates='model'"
        )
    if config.retry_failed:
        raise ValueError(
            "SimConfig: retry_failed restarts jobs whose drawn failure killed them; with "
            "fates='recorded' a job recorded as failed fails for good: set retry_failed=False"
        )


def _check_mtbf_per_type(values: Mapping) -> None:
    """``node_mtbf`` given per GPU type: ``{type: seconds > 0}``, at least one."""
    if not values:
        raise ValueError("SimConfig: node_mtbf per GPU type must name at least one type")
    for key, value in values.items():
        if not isinstance(key, str):
            raise ValueError(f"SimConfig: node_mtbf's GPU types must be text, got {key!r}")
        seconds(value, f"SimConfig: node_mtbf[{key!r}]")


def mtbf_per_node(mtbf: Any, gpu_types: Sequence[str], names: Sequence[str], cluster: str):
    """Each node's MTBF: ``mtbf`` for all, or (a dict) its GPU type's; a type the dict does
    not name is an error naming it and a node of it."""
    if not isinstance(mtbf, Mapping):
        return [float(mtbf)] * len(gpu_types)
    for gpu_type, name in zip(gpu_types, names, strict=True):
        if gpu_type not in mtbf:
            raise ValueError(
                f"SimConfig: node_mtbf gives no MTBF for GPU type {gpu_type!r} (node {name!r} "
                f"of cluster {cluster!r}); it names {sorted(mtbf)}"
            )
    return [float(mtbf[t]) for t in gpu_types]


def failures_configured(config: Any) -> bool:
    """Whether ``config`` asks for any failure, checkpoint or restart rule, or for recorded
    fates (then the run keeps the failure records and its results have the failure
    columns)."""
    return (
        config.fates == "recorded"
        or config.node_mtbf is not None
        or config.failures is not None
        or config.checkpoint_every is not None
        or config.job_failure_prob > 0
    )


def check_schedule_nodes(
    schedule: tuple[Downtime, ...], names: Sequence[str], cluster: str
) -> None:
    """Every node a schedule names is a node of the cluster (named ``cluster``)."""
    known = set(names)
    for i, (node, _, _) in enumerate(schedule):
        if node not in known:
            raise ValueError(
                f"SimConfig: failures row {i}: column 'node': {node!r} is not a node of "
                f"cluster {cluster!r}"
            )


__all__ = [
    "FATES",
    "SCHEDULE_COLUMNS",
    "check_failure_settings",
    "check_schedule_nodes",
    "failure_schedule",
    "failures_configured",
    "mtbf_per_node",
    "schedule_records",
    "spare_node_indices",
    "spare_setting",
]
