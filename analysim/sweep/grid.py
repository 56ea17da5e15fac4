"""Expanding a sweep grid into runs: plain data naming what to build and how to simulate it.

A grid is a dict of value lists (the cartesian product is swept) or an explicit list of
configurations. Its keys are :class:`~analysim.inputs.config.SimConfig` fields, or preset parameters
prefixed ``workload.`` / ``cluster.`` (``workload.load_scale``, ``workload.days``,
``cluster.partition``), and ``workload.elastic_share`` (any workload: the share of its GPU
jobs made elastic, :func:`~analysim.inputs.elastic.with_elastic_jobs`, drawn with the run's
seed). Names and list shapes are checked here, before any run; a value that
``SimConfig`` rejects makes that run an error row instead (the rest of the sweep still runs).
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysim import presets
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload
from analysim.policies.registry import Policy

WORKLOAD = "workload."
CLUSTER = "cluster."
#: the workload parameter any workload takes (preset or given): the share of elastic jobs
ELASTIC_SHARE = "elastic_share"
KEY_LENGTH = 20  # hex digits of the run key (80 bits)


@dataclass(frozen=True)
class Source:
    """Where a run's workload or cluster comes from: a preset name, or an object given by the
    user (shipped to the workers once). ``ident`` names it in run keys: the preset name, or
    ``object:<content digest>`` so that the same table resumes the same runs."""

    label: str
    preset: str | None
    ident: str
    obj: Workload | Cluster | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Run:
    """One (configuration, seed) of a sweep.

    ``params`` are the frame's parameter columns (grid names, plain values); ``options`` the
    SimConfig fields as given (they may hold policy instances); ``invalid`` the error of a
    configuration SimConfig rejected up front; ``key`` the hash the run is stored under.
    """

    params: dict[str, Any]
    options: dict[str, Any]
    workload: Source
    workload_params: dict[str, Any]
    cluster: Source
    cluster_params: dict[str, Any]
    seed: int
    key: str
    invalid: str | None = None

    def spec(self) -> dict[str, Any]:
        """Everything that identifies the run, as JSON-plain data (what ``key`` hashes)."""
        return {
            "workload": self.workload.ident,
            "workload_params": _plain(self.workload_params),
            "cluster": self.cluster.ident,
            "cluster_params": _plain(self.cluster_params),
            "config": _config_key(self.options, self.seed),
            "seed": self.seed,
        }


# -- values ------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """JSON-plain, canonical form: numbers as floats (``60`` and ``60.0`` are one value),
    numpy scalars unwrapped, policy instances as their class and spec, mappings with sorted
    keys."""
    if isinstance(value, Policy):  # its class too: unregistered classes share a name
        kind = type(value)
        return {"class": f"{kind.__module__}.{kind.__qualname__}", **_plain(value.spec())}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return repr(value)


def column_value(value: Any) -> Any:
    """A parameter value as shown in the frame: names and numbers as they are, policy
    instances as their repr, specs and other structures as compact JSON text."""
    if isinstance(value, Policy):
        return repr(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, sort_keys=True, default=_shown)
    return value


def _shown(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else repr(value)


def _digest(obj: Workload | Cluster) -> str:
    """A content digest of a workload's jobs or a cluster's nodes and quotas."""
    table = obj.jobs if isinstance(obj, Workload) else obj.nodes
    h = hashlib.sha256()
    h.update(json.dumps([obj.name, [str(c) for c in table.columns]]).encode())
    h.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    if isinstance(obj, Cluster):
        h.update(json.dumps(_plain(obj.quotas)).encode())
    return h.hexdigest()[:KEY_LENGTH]


_DEFAULTS = {name: _plain(value) for name, value in SimConfig().to_dict().items()}
_WORKLOAD_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(presets.workload).parameters.items()
    if p.default is not inspect.Parameter.empty and name != "seed"
} | {ELASTIC_SHARE: 0}


def _config_key(options: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The options that differ from SimConfig's defaults (so that fields added later, and
    options written at their default, leave run keys unchanged)."""
    return {
        name: value
        for name, value in _plain(dict(options)).items()
        if name != "seed" and value != _DEFAULTS.get(name, object())
    }


def run_key(spec: Mapping[str, Any]) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


# -- sources and accepted names ----------------------------------------------------------------
def source(value: Any, kind: str) -> Source:
    """A preset name or a Workload/Cluster object, checked."""
    expected = Workload if kind == "workload" else Cluster
    if isinstance(value, str):
        if value not in presets.PRESETS:
            raise ValueError(f"sweep: unknown {kind} preset {value!r}; presets: {presets.names()}")
        return Source(value, value, value)
    if isinstance(value, expected):
        return Source(value.name, None, f"object:{_digest(value)}", value)
    raise ValueError(
        f"sweep: {kind} must be a preset name ({', '.join(presets.names())}) or a "
        f"{expected.__name__}, got {value!r}"
    )


def accepted_names(workload: Source, cluster: Source) -> list[str]:
    """Every name a grid may use with these sources."""
    names = [*SimConfig.fields(), WORKLOAD + ELASTIC_SHARE]
    if workload.preset is not None:
        own = presets.PRESETS[workload.preset].workload_params
        names += [WORKLOAD + p for p in ("load_scale", "days", *own)]
    if cluster.preset is not None:
        names += [CLUSTER + p for p in presets.PRESETS[cluster.preset].cluster_params]
    return names


def check_names(names: Iterable[str], accepted: Sequence[str], where: str) -> None:
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"sweep: {where} has a parameter name that is not text: {name!r}")
        if name in ("seed", WORKLOAD + "seed"):
            raise ValueError(
                f"sweep: {where} sets {name!r}; give the seeds as sweep(seeds=[...]) instead "
                "(each seed seeds both the workload and the run)"
            )
        if name not in accepted:
            close = difflib.get_close_matches(name, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"sweep: unknown parameter {name!r} in {where}{hint}. Parameters are the "
                f"SimConfig fields and the preset parameters: {', '.join(accepted)}"
            )


def check_seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, Iterable):
        raise ValueError(f"sweep: seeds must be a list of seeds such as [0, 1, 2], got {seeds!r}")
    values = list(seeds)
    if not values:
        raise ValueError("sweep: seeds is empty; give at least one seed")
    for seed in values:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"sweep: a seed must be a whole number >= 0, got {seed!r}")
    if len(set(values)) < len(values):
        raise ValueError(f"sweep: seeds repeat a value: {values}")
    return [int(s) for s in values]


# -- configurations ----------------------------------------------------------------------------
def configurations(grid: Any, accepted: Sequence[str]) -> list[dict[str, Any]]:
    """The grid's configurations, each a dict of parameter values, in grid order."""
    if isinstance(grid, Mapping):
        return _product(grid, accepted)
    if isinstance(grid, (list, tuple)):
        return _explicit(grid, accepted)
    raise ValueError(
        "sweep: grid must be a dict of parameter lists or a list of configurations, "
        f"got {type(grid).__name__}"
    )


def _product(grid: Mapping[str, Any], accepted: Sequence[str]) -> list[dict[str, Any]]:
    check_names(grid, accepted, "the grid")
    lists = {}
    for name, values in grid.items():
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
            raise ValueError(
                f"sweep: grid[{name!r}] must be a list of values, got {values!r} "
                f"(write [{values!r}] for a single value)"
            )
        values = list(values)
        if not values:
            raise ValueError(f"sweep: grid[{name!r}] is an empty list; give at least one value")
        plain = [json.dumps(_plain(v), sort_keys=True) for v in values]
        repeated = sorted({v for v in plain if plain.count(v) > 1})
        if repeated:
            raise ValueError(f"sweep: grid[{name!r}] lists a value more than once: {repeated}")
        lists[name] = values
    return [dict(zip(lists, combo, strict=True)) for combo in itertools.product(*lists.values())]


def _explicit(configs: Sequence[Any], accepted: Sequence[str]) -> list[dict[str, Any]]:
    if not configs:
        raise ValueError("sweep: the list of configurations is empty")
    out = []
    for i, config in enumerate(configs):
        if isinstance(config, SimConfig):
            if config.seed != 0:
                raise ValueError(
                    f"sweep: configuration {i} sets seed={config.seed}; give the seeds as "
                    "sweep(seeds=[...]) instead"
                )
            values = {name: getattr(config, name) for name in SimConfig.fields()}
            config = {k: v for k, v in values.items() if _plain(v) != _DEFAULTS[k]}
        if not isinstance(config, Mapping):
            raise ValueError(
                f"sweep: configuration {i} must be a dict or a SimConfig, got {config!r}"
            )
        check_names(config, accepted, f"configuration {i}")
        out.append(dict(config))
    seen: dict[str, int] = {}
    for i, config in enumerate(out):
        text = json.dumps(_plain(config), sort_keys=True)
        if text in seen:
            raise ValueError(f"sweep: configurations {seen[text]} and {i} are the same run")
        seen[text] = i
    return out


def _default_of(name: str) -> Any:
    """The value a configuration that does not name ``name`` runs with."""
    if name.startswith(WORKLOAD):
        return _WORKLOAD_DEFAULTS.get(name[len(WORKLOAD) :])
    if name.startswith(CLUSTER):
        return None
    return SimConfig().to_dict()[name]


def _invalid(options: Mapping[str, Any], seed: int) -> str | None:
    try:
        SimConfig.from_dict({**options, "seed": seed})
    except (ValueError, TypeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def expand(grid: Any, *, workload: Any, cluster: Any, seeds: Any) -> list[Run]:
    """The runs of a sweep, configuration-major, seeds innermost."""
    wl = source(workload, "workload")
    if cluster is None:
        if wl.preset is None:
            raise ValueError("sweep: give cluster= when workload is a Workload object")
        cluster = wl.preset
    cl = source(cluster, "cluster")
    seed_list = check_seeds(seeds)
    configs = configurations(grid, accepted_names(wl, cl))
    columns = list(dict.fromkeys(name for config in configs for name in config))
    shown = _one_type_per_column(
        [
            {name: column_value(config.get(name, _default_of(name))) for name in columns}
            for config in configs
        ]
    )
    runs = []
    for config, params in zip(configs, shown, strict=True):
        options = {k: v for k, v in config.items() if "." not in k}
        wl_params = _preset_params(config, WORKLOAD)
        cl_params = _preset_params(config, CLUSTER)
        for seed in seed_list:
            run = Run(params, options, wl, wl_params, cl, cl_params, seed, "", None)
            key = run_key(run.spec())
            runs.append(
                Run(
                    params,
                    options,
                    wl,
                    wl_params,
                    cl,
                    cl_params,
                    seed,
                    key,
                    _invalid(options, seed),
                )
            )
    return runs


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _one_type_per_column(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The frame's parameter values, with a column that mixes kinds (``checkpoint_cost: [40,
    size_scaled]``: a number and a name, both documented) shown as text throughout, so the
    frame stores to parquet and reloads as it was."""
    for name in rows[0] if rows else ():
        kinds = {_kind(row[name]) for row in rows if row[name] is not None}
        if len(kinds) > 1:
            for row in rows:
                value = row[name]
                if value is not None and not isinstance(value, str):
                    row[name] = json.dumps(value)
    return rows


def _preset_params(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The preset parameters a configuration sets, minus those equal to the defaults."""
    out = {}
    for name, value in config.items():
        if name.startswith(prefix):
            short = name[len(prefix) :]
            default = _WORKLOAD_DEFAULTS.get(short) if prefix == WORKLOAD else None
            if default is not None and _same(value, default):
                continue
            out[short] = value
    return out


def _same(a: Any, b: Any) -> bool:
    a, b = _plain(a), _plain(b)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b
