"""The calibration check: each calibrated preset's month under its own scheduling, against
the published summary (``analysim presets --check``): the four Helios presets and the two
Acme ones (``seren``, ``kalos``).

>>> from analysim.presets import calibration
>>> table = calibration.check(["earth"], seeds=[0], days=2)   # doctest: +SKIP
>>> print(calibration.format_check(table))                      # doctest: +SKIP

For GPU jobs (every calibrated job uses GPUs): jobs per day, mean and median run time, mean
and median GPUs per job, mean and median queueing delay, total GPUs; each with its relative
error and PASS/MISS against :data:`CRITERIA` (issue 14). GPU-seconds per job are reported
beside them without a tolerance (``info``). The Acme presets add the largest job and the
failed share of GPU jobs (:data:`ACME_CRITERIA`, issue 28), and their queueing delays include
the launch delay of :data:`analysim.presets.acme.LAUNCH_DELAY`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysim.inputs.workload import FAILED_STATES
from analysim.presets import acme as acme_presets
from analysim.presets import helios as helios_presets
from analysim.presets.calibrated import Shape
from analysim.simulate import simulate


@dataclass(frozen=True)
class Criterion:
    """A measured quantity and how close to the published value it must be.

    ``tolerance``: largest relative error allowed (with ``absolute``: largest difference,
    for a share: 0.05 is 5 points); ``0.0`` means equal; ``None`` means reported only."""

    metric: str
    label: str
    tolerance: float | None
    absolute: bool = False


CRITERIA: tuple[Criterion, ...] = (
    Criterion("jobs_per_day", "jobs per day", 0.10),
    Criterion("mean_run", "mean run time (s)", 0.10),
    Criterion("median_run", "median run time (s)", 0.15),
    Criterion("mean_gpus", "mean GPUs per job", 0.10),
    Criterion("median_gpus", "median GPUs per job", 0.0),
    Criterion("mean_queue", "mean queueing delay (s)", 0.25),
    Criterion("median_queue", "median queueing delay (s)", 0.0),
    Criterion("total_gpus", "total GPUs", 0.05),
    Criterion("gpu_seconds_per_job", "GPU-seconds per job", None),
)
"""The issue's tolerances, in the order the report prints them."""

ACME_CRITERIA: tuple[Criterion, ...] = (
    *CRITERIA[:-1],
    Criterion("max_gpus", "largest job (GPUs)", 0.0),
    Criterion("failed_share", "failed share of GPU jobs", 0.05, absolute=True),
    CRITERIA[-1],
)
"""The Acme presets' criteria (issue 28): the Helios ones, the largest job (equal) and the
share of GPU jobs that fail (FAILED, TIMEOUT, NODE_FAIL) within 5 points."""

SOURCES = {
    **{name: helios_presets for name in helios_presets.PUBLISHED},
    **{name: acme_presets for name in acme_presets.PUBLISHED},
}
"""The module of each calibrated preset (its ``PUBLISHED``, ``cluster``, ``workload``,
``config``)."""

CHECK_DAYS = {"kalos": float(acme_presets.TRACE_DAYS["kalos"])}
"""Days :func:`check` simulates by default: a 30-day month, except Kalos: its whole trace
(123 days, about 20,000 GPU jobs, as many as the published numbers come from); a Kalos
month holds 4,900 jobs, whose mean queueing delay turns on a handful of 1,024-GPU jobs
(``docs/calibration.md``)."""


def criteria(name: str) -> tuple[Criterion, ...]:
    """The criteria preset ``name`` is checked on."""
    return ACME_CRITERIA if _check_name(name) in acme_presets.PUBLISHED else CRITERIA


def check_days(name: str) -> float:
    """The days :func:`check` simulates for ``name`` by default (:data:`CHECK_DAYS`)."""
    return CHECK_DAYS.get(name, helios_presets.MONTH_DAYS)


def published(name: str) -> dict[str, float]:
    """The published value of every :data:`CRITERIA` metric for preset ``name``."""
    facts = SOURCES[_check_name(name)].PUBLISHED[name]
    extra = {}
    if name in acme_presets.PUBLISHED:
        extra = {"max_gpus": float(facts.max_gpus), "failed_share": facts.failed_share}
    return {
        **extra,
        "jobs_per_day": facts.jobs_per_day,
        "mean_run": facts.mean_run,
        "median_run": facts.median_run,
        "mean_gpus": facts.mean_gpus,
        "median_gpus": facts.median_gpus,
        "mean_queue": facts.mean_queue,
        "median_queue": facts.median_queue,
        "total_gpus": float(facts.total_gpus),
        "gpu_seconds_per_job": facts.gpu_seconds / facts.gpu_jobs,
    }


def measure(
    jobs: pd.DataFrame,
    total_gpus: int,
    days: float,
    *,
    launch: float = 0.0,
    states: pd.Series | None = None,
) -> dict[str, float]:
    """The :data:`CRITERIA` metrics of a run's ``jobs`` table (GPU jobs only); ``launch``
    seconds are added to every queueing delay; given the workload's ``states`` (aligned with
    ``jobs``), the largest job and the failed share too (:data:`ACME_CRITERIA`)."""
    gpu_jobs = jobs[jobs["num_gpus"] > 0]
    run = gpu_jobs["run_time"].to_numpy(dtype=float)
    gpus = gpu_jobs["num_gpus"].to_numpy(dtype=float)
    queue = gpu_jobs["queue_delay"].to_numpy(dtype=float) + launch
    extra = {}
    if states is not None:
        failed = states.to_numpy(dtype=object)[jobs["num_gpus"].to_numpy() > 0]
        extra = {
            "max_gpus": float(gpus.max()),
            "failed_share": float(np.isin(failed, FAILED_STATES).mean()),
        }
    return {
        **extra,
        "jobs_per_day": len(gpu_jobs) / days,
        "mean_run": float(run.mean()),
        "median_run": float(np.median(run)),
        "mean_gpus": float(gpus.mean()),
        "median_gpus": float(np.median(gpus)),
        "mean_queue": float(np.nanmean(queue)),
        "median_queue": float(np.nanmedian(queue)),
        "total_gpus": float(total_gpus),
        "gpu_seconds_per_job": float((gpus * run).mean()),
    }


def _check_name(name: str) -> str:
    if name not in SOURCES:
        raise ValueError(
            f"no published numbers for preset {name!r}; calibrated presets: {sorted(SOURCES)}"
        )
    return name


def run_month(
    name: str, seed: int = 0, days: float | None = None, shape: Shape | None = None
) -> dict:
    """Generate and simulate preset ``name``'s ``days`` days (default: :func:`check_days`)
    under its own config; return the measured metrics. ``shape`` replaces the preset's
    (``benchmarks/tune_presets.py``)."""
    source = SOURCES[_check_name(name)]
    days = check_days(name) if days is None else days
    cluster = source.cluster(name)
    workload = source.workload(name, seed=seed, days=days, shape=shape)
    result = simulate(workload, cluster, source.config(name))
    if source is acme_presets:
        states = workload.jobs.set_index("job_id")["state"].reindex(result.jobs["job_id"])
        return measure(
            result.jobs,
            cluster.total_gpus,
            days,
            launch=acme_presets.LAUNCH_DELAY[name],
            states=states.reset_index(drop=True),
        )
    return measure(result.jobs, cluster.total_gpus, days)


def compare(name: str, seed: int, simulated: dict[str, float]) -> pd.DataFrame:
    """One row per criterion: simulated, published, relative error, tolerance, verdict."""
    reference = published(name)
    rows = []
    for criterion in criteria(name):
        sim, pub = simulated[criterion.metric], reference[criterion.metric]
        if criterion.absolute:
            error = sim - pub
        else:
            error = (sim - pub) / pub if pub else (0.0 if sim == pub else np.inf)
        if criterion.tolerance is None:
            verdict = "info"
        elif criterion.tolerance == 0.0:
            verdict = "PASS" if sim == pub else "MISS"
        else:
            verdict = "PASS" if abs(error) <= criterion.tolerance else "MISS"
        rows.append(
            {
                "preset": name,
                "seed": seed,
                "metric": criterion.metric,
                "label": criterion.label,
                "simulated": sim,
                "published": pub,
                "rel_error": error,
                "tolerance": criterion.tolerance,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


def check(
    names: Iterable[str] | None = None,
    seeds: Iterable[int] = (0, 1, 2),
    days: float | None = None,
) -> pd.DataFrame:
    """Simulate each preset (default: all six calibrated ones) for each seed over ``days``
    days (default: :func:`check_days`); a tidy table of :func:`compare` rows."""
    chosen = sorted(SOURCES) if names is None else list(names)
    for name in chosen:
        _check_name(name)
    frames = [compare(name, seed, run_month(name, seed, days)) for name in chosen for seed in seeds]
    return pd.concat(frames, ignore_index=True)


def passed(table: pd.DataFrame) -> bool:
    """Whether every criterion with a tolerance passed."""
    return bool((table["verdict"] != "MISS").all())


def format_check(table: pd.DataFrame) -> str:
    """The check as text: one block per preset, a column per seed."""
    blocks = []
    for name, rows in table.groupby("preset", sort=False):
        wide = rows.pivot_table(
            index=["metric", "label"], columns="seed", values="simulated", sort=False
        )
        lines = [f"{name}: simulated (relative error, verdict) per seed"]
        header = f"  {'':<28}{'published':>12}" + "".join(
            f"{'seed ' + str(s):>26}" for s in wide.columns
        )
        lines.append(header)
        for (metric, label), _ in wide.iterrows():
            per_metric = rows[rows["metric"] == metric]
            pub = per_metric["published"].iloc[0]
            cells = "".join(
                f"{r.simulated:>12.4g} ({r.rel_error:+6.1%} {r.verdict:>4})"
                for r in per_metric.itertuples()
            )
            lines.append(f"  {label:<28}{pub:>12.4g}{cells}")
        verdicts = rows.loc[rows["verdict"] != "info", "verdict"]
        lines.append(f"  {int((verdicts == 'PASS').sum())}/{len(verdicts)} PASS")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
