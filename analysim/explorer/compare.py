"""Runs side by side: a pinned baseline, a few kept runs, labels that say what differs, and
a note when a change left every decision the same (and why, where it can be said)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.explorer.inputs import GPU_SECONDS_PER_GPU_HOUR, name_of, thresholds_text

if TYPE_CHECKING:
    from analysim.results.result import Result

MAX_KEPT = 4
"""Runs kept side by side (besides the baseline and the current run)."""
SETTINGS = (
    "scheduler",
    "placement",
    "preemption",
    "migration",
    "borrowing",
    "backfill",
    "quantum",
    "las_thresholds",
    "starvation_factor",
    "checkpoint_cost",
    "migration_cost",
    "cluster_size",
    "seed",
)
"""The settings a run's label may name (the workload is the same for all compared runs)."""
SWITCHES = ("preemption", "migration", "borrowing", "backfill")
LAS_DEFAULTS = {"thresholds": (18_000.0,), "starvation_factor": 4.0}
"""LAS's own parameters when the scheduler is given as plain ``"las"``."""


@dataclass
class Run:
    """One finished run: its settings (what the controls said), the workload it ran on
    (``workload_key``: runs on different workloads are never compared) and its result."""

    result: Result
    settings: dict[str, Any]
    workload_key: tuple
    name: str = ""
    pinned: bool = field(default=False)


def settings_of(config: Any, cluster_size: float) -> dict[str, Any]:
    """The comparable settings of a run from its :class:`~analysim.inputs.config.SimConfig`."""
    scheduler = config.scheduler
    params = dict(scheduler) if isinstance(scheduler, dict) else {}
    if name_of(scheduler) == "las":
        params = {**LAS_DEFAULTS, **params}
    return {
        "scheduler": name_of(scheduler),
        "placement": name_of(config.placement),
        "preemption": bool(config.preemption),
        "migration": bool(config.migration),
        "borrowing": bool(config.borrowing),
        "backfill": config.backfill,
        "quantum": float(config.quantum),
        "las_thresholds": tuple(params.get("thresholds", ())) or None,
        "starvation_factor": params.get("starvation_factor"),
        "checkpoint_cost": _plain(config.checkpoint_cost),
        "migration_cost": _plain(config.migration_cost),
        "cluster_size": float(cluster_size),
        "seed": int(config.seed),
    }


def _plain(spec: Any) -> str:
    if isinstance(spec, dict) and spec.get("name") == "constant":
        return f"{spec.get('seconds', 0):g} s"
    return name_of(spec) if not isinstance(spec, dict) or set(spec) == {"name"} else str(spec)


def applies(key: str, settings: dict[str, Any]) -> bool:
    """Whether the setting ``key`` does anything in a run of ``settings``: LAS's parameters
    only under LAS, the checkpoint cost only with preemption or borrowing (reclaims), the
    migration cost only with migration."""
    if key in ("las_thresholds", "starvation_factor"):
        return settings.get("scheduler") == "las"
    if key == "checkpoint_cost":
        return bool(settings.get("preemption") or settings.get("borrowing"))
    if key == "migration_cost":
        return bool(settings.get("migration"))
    return True


def differing(runs: list[dict[str, Any]], *, everywhere: bool = False) -> list[str]:
    """The settings that are not the same in all of ``runs`` where they apply (``everywhere``:
    in all of ``runs``, whether they apply or not)."""
    return [
        k
        for k in SETTINGS
        if len({repr(r.get(k)) for r in runs if everywhere or applies(k, r)}) > 1
    ]


def label(settings: dict[str, Any], keys: list[str]) -> str:
    """A run named by the settings in ``keys`` that apply to it (:func:`applies`):
    ``fifo``, ``las + preemption``, ``las + LAS queues at 0.5, 2 GPU-h``."""
    parts, offs = [], []
    for key in keys:
        if not applies(key, settings):
            continue
        value = settings.get(key)
        if key == "backfill" and value == "easy":
            parts.append("EASY backfill")
        elif key in SWITCHES:
            (parts if value else offs).append(key if value else f"no {key}")
        elif key in ("scheduler", "placement"):
            parts.append(str(value))
        elif key == "las_thresholds":
            hours = thresholds_text(value or LAS_DEFAULTS["thresholds"])
            parts.append(f"LAS queues at {hours} GPU-h")
        elif key == "starvation_factor":
            parts.append("no starvation promotion" if value is None else f"starvation ×{value:g}")
        elif key == "quantum":
            parts.append(f"quantum {value:g} s")
        elif key == "cluster_size":
            parts.append(f"cluster ×{value:g}")
        elif key == "seed":
            parts.append(f"seed {value}")
        else:
            parts.append(f"{key.replace('_', ' ')} {value}")
    if not parts:
        return " + ".join(offs) or "same settings"
    return " + ".join(parts)


def labels(runs: list[dict[str, Any]]) -> list[str]:
    """Labels for runs shown together: each named by what differs, made unique."""
    keys = differing(runs)
    if not keys:  # one run, or runs alike: the scheduler and the switches that are on
        return labels_unique(
            [label(r, ["scheduler", *[k for k in SWITCHES if r.get(k)]]) for r in runs]
        )
    return labels_unique([label(r, keys) for r in runs])


def labels_unique(names: list[str]) -> list[str]:
    """``names`` with repeats numbered: ``fifo``, ``fifo (2)``."""
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return unique


def same_decisions(a: Result, b: Result) -> bool:
    """Whether two runs started, stopped and ended every job at the same moments."""
    if len(a.jobs) != len(b.jobs):
        return False
    columns = ["job_id", "start_time", "end_time", "preemptions", "migrations"]
    left, right = a.jobs[columns], b.jobs[columns]
    if not (left["job_id"].to_numpy() == right["job_id"].to_numpy()).all():
        return False
    for column in columns[1:]:
        x, y = left[column].to_numpy(dtype=float), right[column].to_numpy(dtype=float)
        if not np.array_equal(np.nan_to_num(x, nan=-1.0), np.nan_to_num(y, nan=-1.0)):
            return False
    return True


def why_identical(before: dict[str, Any], after: dict[str, Any], result: Result) -> str:
    """Why a change of settings gave the same decisions, where it can be said."""
    keys = differing([before, after], everywhere=True)
    counts = result.summary()
    reasons = []
    schedulers = {before["scheduler"], after["scheduler"]}
    if "scheduler" in keys and schedulers == {"fifo", "las"} and not after["preemption"]:
        reasons.append(
            "LAS without preemption ranks like FIFO: a started job runs to its end, so every "
            "waiting job has attained no service yet and LAS orders them by arrival, as FIFO does"
        )
    if "las" in schedulers and after["preemption"] and "scheduler" in keys:
        first = (after.get("las_thresholds") or LAS_DEFAULTS["thresholds"])[0]
        jobs = result.jobs
        most = float((jobs["run_time"] * jobs["num_gpus"]).max()) if len(jobs) else 0.0
        if most < first:
            hour = GPU_SECONDS_PER_GPU_HOUR
            reasons.append(
                f"no job attained LAS's first threshold ({first / hour:g} GPU-h; the most any "
                f"job received was {most / hour:.2g} GPU-h), so every job stayed in the top "
                "queue, where LAS orders by arrival as FIFO does"
            )
    if "preemption" in keys and counts.get("preemptions", 0) == 0:
        reasons.append(
            "preemption evicted no job: no waiting job ever outranked a running one that held "
            "the GPUs it needed"
        )
    if "migration" in keys and counts.get("migrations", 0) == 0:
        reasons.append("migration moved no job: no waiting job was blocked by fragmentation alone")
    if "borrowing" in keys and counts.get("borrowed_gpu_hours", 0) == 0:
        reasons.append("no job borrowed a GPU: no VC was full while another had idle GPUs")
    if "checkpoint_cost" in keys and counts.get("preemptions", 0) == 0:
        reasons.append("the checkpoint cost is paid only on preemption, and no job was preempted")
    if "migration_cost" in keys and counts.get("migrations", 0) == 0:
        reasons.append("the migration cost is paid only when a job migrates, and none did")
    if ("las_thresholds" in keys or "starvation_factor" in keys) and not after["preemption"]:
        reasons.append("LAS's queues only matter with preemption: without it no started job waits")
    if "quantum" in keys and not after["preemption"] and after["scheduler"] in ("fifo", "sjf"):
        reasons.append(
            "the quantum spaces the rounds where preemption and re-ranking happen; without "
            f"preemption {after['scheduler']} starts each job as soon as it fits either way"
        )
    if "placement" in keys:
        reasons.append("every job found the same nodes free or fitting under both placements")
    if not reasons:
        changed = ", ".join(k.replace("_", " ") for k in keys) or "nothing"
        reasons.append(f"changing {changed} altered no decision on this workload")
    return "; ".join(reasons) + "."


def comparison_table(runs: list[Run], names: list[str]) -> pd.DataFrame:
    """Summary metrics, one column per run (named), and the change of the last run against
    the first (the baseline, when one is pinned)."""
    frame = pd.DataFrame(
        {name: run.result.summary() for run, name in zip(runs, names, strict=True)}
    )
    if len(runs) > 1:
        first, last = frame.iloc[:, 0], frame.iloc[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            change = (last - first) / first.abs()
        frame["change"] = change.where(np.isfinite(change))
    return frame


def shown_runs(
    baseline: Run | None, kept: list[Run], last: Run | None, current: Run | None
) -> tuple[list[Run], list[str], list[str]]:
    """The runs shown side by side (the ``baseline``, the ``kept`` runs, the ``last`` run
    when no baseline is pinned, the ``current`` one), their labels (by what differs, or
    their names) and roles."""
    runs, roles = [], []
    if baseline is not None:
        runs.append(baseline)
        roles.append("baseline")
    for run in kept:
        runs.append(run)
        roles.append("kept")
    shown = {id(r.result) for r in runs}
    if baseline is None and last is not None and id(last.result) not in shown:
        runs.append(last)
        roles.append("previous run")
    if current is not None and id(current.result) not in shown:
        runs.append(current)
        roles.append("this run")
    auto = labels([r.settings for r in runs])
    names = [r.name or a for r, a in zip(runs, auto, strict=True)]
    return runs, labels_unique(names), roles


def same_results_note(baseline: Run | None, last: Run | None, current: Run | None) -> list[str]:
    """The note, if any, that the ``current`` run decided as the ``baseline`` (else the
    ``last`` run) did under other settings, and why."""
    other = baseline or last
    if other is None or current is None or other is current:
        return []
    if other.settings == current.settings:
        return []
    if not same_decisions(other.result, current.result):
        return []
    names = labels([other.settings, current.settings])
    why = why_identical(other.settings, current.settings, current.result)
    role = "the baseline" if other is baseline else "the previous run"
    return [
        f"Same results as {role} ({names[0]}): every job started and ended at the same "
        f"moments. Why: {why}"
    ]
