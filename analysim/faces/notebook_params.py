"""Checks of notebook parameters: a bad value fails at once, in one line naming the parameter.

Each notebook calls :func:`check_parameters` right after its ``parameters`` cell::

    check_parameters(schedulers=schedulers, load_scale=load_scale, seeds=seeds)

A parameter is checked by the rule of its name (:data:`RULES`): ``schedulers`` must be known
scheduler names, ``load_scale`` a number > 0, ``trace_path`` an existing file or folder, ...
The error is a :class:`ParameterError` whose message is one line; in Jupyter it is shown as
that line alone, without a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysim.traces.bundled import resolve


class ParameterError(ValueError):
    """A notebook parameter with a bad value; the message names the parameter."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"ParameterError: {self}"]


Rule = Callable[[Any], str | None]  # returns what is wrong, or None


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def positive(value: Any) -> str | None:
    return None if _is_number(value) and value > 0 else "must be a number > 0"


def non_negative(value: Any) -> str | None:
    return None if _is_number(value) and value >= 0 else "must be a number >= 0"


def count(value: Any) -> str | None:
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= 1
    return None if ok else "must be a whole number >= 1"


def seed(value: Any) -> str | None:
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= 0
    return None if ok else "must be a whole number >= 0"


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be True or False"


def backfill_mode(value: Any) -> str | None:
    """A rule: a value of ``SimConfig.backfill`` (False, True or "easy")."""
    return None if isinstance(value, bool) or value == "easy" else 'must be False, True or "easy"'


def fraction(value: Any) -> str | None:
    return None if _is_number(value) and 0 <= value <= 1 else "must be a number from 0 to 1"


def pollux_workload(value: Any) -> str | None:
    ok = not isinstance(value, bool) and isinstance(value, int) and 1 <= value <= 8
    return None if ok else "must be the number of a bundled Pollux workload, 1 to 8"


def text(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "must be a non-empty string"


def one_of(names: Callable[[], list[str]], what: str) -> Rule:
    """A rule: a name among ``names()``."""

    def rule(value: Any) -> str | None:
        known = names()
        if isinstance(value, str) and value in known:
            return None
        return f"unknown {what}; choose one of {', '.join(known)}"

    return rule


def list_of(item: Rule, *, allow_empty: bool = False) -> Rule:
    """A rule: a list whose every item passes ``item`` (and, unless ``allow_empty``, not
    empty)."""

    def rule(value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return "must be a list"
        if not value and not allow_empty:
            return "must not be empty"
        for k, entry in enumerate(value):
            problem = item(entry)
            if problem:
                return f"item {k} ({entry!r}): {problem}"
        return None

    return rule


def existing_path(value: Any) -> str | None:
    if not isinstance(value, (str, Path)) or not str(value):
        return "must be the path of a trace file or folder, or bundled:openb"
    try:
        path = resolve(value)
    except ValueError as exc:
        return str(exc)
    if not path.exists():
        return (
            "no such file or folder; download the trace, or pass its path with -p trace_path PATH"
        )
    return None


def _schedulers() -> list[str]:
    from analysim.policies import SCHEDULERS

    return list(SCHEDULERS.names)


def _placers() -> list[str]:
    """The time engine's placers: the whole-GPU ones and the FGD study's (resource mode)."""
    from analysim.policies import PLACERS
    from analysim.sharing.placers import SHARE_PLACERS

    return [*PLACERS.names, *(n for n in SHARE_PLACERS.names if n not in PLACERS.names)]


def _share_placers() -> list[str]:
    from analysim.sharing.placers import SHARE_PLACERS

    return list(SHARE_PLACERS.names)


def _trace_formats() -> list[str]:
    from analysim.traces import TRACE_FORMATS

    return list(TRACE_FORMATS)


def _presets() -> list[str]:
    from analysim import presets

    return presets.names()


def _partitions(value: Any) -> str | None:
    from analysim.presets import TOY_PARTITIONS

    return None if value in TOY_PARTITIONS else f"must be one of {list(TOY_PARTITIONS)}"


def _gavel_families() -> list[str]:
    from analysim.experiments.heterogeneity_study import FAMILIES

    return list(FAMILIES)


def _calibrated() -> list[str]:
    from analysim.presets.helios import PUBLISHED

    return sorted(PUBLISHED)


_scheduler = one_of(_schedulers, "scheduler")
_placement = one_of(_placers, "placement")
_preset = one_of(_presets, "preset")
_share_placement = one_of(_share_placers, "share placement")

RULES: dict[str, Rule] = {
    "workload": _preset,
    "cluster": _preset,
    "calibrated_presets": list_of(one_of(_calibrated, "calibrated preset")),
    "partition": _partitions,
    "scheduler": _scheduler,
    "schedulers": list_of(_scheduler),
    "placement": _placement,
    "placements": list_of(_placement),
    "share_placements": list_of(_share_placement),
    "inflate": positive,
    "preemption": flag,
    "preemptive": list_of(_scheduler, allow_empty=True),
    "migration": flag,
    "borrowing": flag,
    "backfill": backfill_mode,
    "load_scale": positive,
    "load_scales": list_of(positive),
    "days": positive,
    "seed_days": positive,
    "quantum": positive,
    "quanta": list_of(positive),
    "checkpoint_cost": non_negative,
    "checkpoint_costs": list_of(non_negative),
    "migration_cost": non_negative,
    "rescale_cost": non_negative,
    "elastic_shares": list_of(fraction),
    "pollux_workloads": list_of(pollux_workload),
    "migration_costs": list_of(non_negative),
    "checkpoint_every": positive,
    "checkpoint_intervals": list_of(positive),
    "node_mtbf": positive,
    "node_mtbfs": list_of(positive),
    "repair_time": positive,
    "restart_overhead": non_negative,
    "borrow_limit": non_negative,
    "borrow_limits": list_of(non_negative),
    "sample_every": positive,
    "seed": seed,
    "seeds": list_of(seed),
    "share_seeds": list_of(seed),
    "load_seeds": list_of(seed),
    "max_jobs": count,
    "jobs": count,
    "input_rates": list_of(positive),
    "policy_families": list_of(one_of(_gavel_families, "Gavel policy family")),
    "until": positive,
    "speedup": positive,
    "cluster_size": positive,
    "workers": seed,
    "trace_path": existing_path,
    "trace_format": one_of(lambda: list(_trace_formats()), "trace format"),
    "figures_dir": text,
    "vc": text,
}
"""The rule of each parameter name the notebooks use."""


def check_parameters(**values: Any) -> None:
    """Check each ``name=value`` by the rule of its name; raise :class:`ParameterError`
    (one line, naming the parameter and its value) on the first bad one.

    A name without a rule is a programming error (``TypeError``), not a silent pass.
    """
    unknown = sorted(set(values) - set(RULES))
    if unknown:
        raise TypeError(f"check_parameters: no rule for parameter(s) {unknown}")
    for name, value in values.items():
        problem = RULES[name](value)
        if problem:
            raise ParameterError(f"parameter {name} = {value!r}: {problem}")
