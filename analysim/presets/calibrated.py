"""A workload generator calibrated on published summary statistics (the ``venus``, ``earth``,
``saturn`` and ``uranus`` presets).

:func:`calibrated_workload` turns a :class:`Targets` -- jobs per day, mean and median run
time, mean GPUs per job (median 1) and GPU-seconds per job -- and the GPUs each virtual
cluster (VC) owns into a seeded :class:`~analysim.inputs.workload.Workload` whose month reproduces
those numbers:

- **GPUs per job** come from one table per cluster: a share ``one_gpu_share`` (> 1/2, so the
  median is 1 GPU) of 1-GPU jobs, the rest over 2, 4, ..., 128 GPUs with weights
  ``∝ size**tilt``; ``tilt`` is solved so that the mean over all jobs, after each VC's table
  is cut at its largest job (``max_job_fraction`` of its GPUs), is the target
  (:func:`solve_demand`).
- **Run times** are lognormal with one shape ``sigma`` and a median that changes with the GPU
  count as ``size**beta``, clipped to ``[min_duration, max_duration]``; ``sigma`` and the
  scale are solved so that the overall median and mean are the targets. ``beta`` is
  ``Shape.size_growth`` (the presets tune it), or, with ``size_growth=None``, solved so that
  the mean GPU-seconds per job are the target too (:func:`solve_durations`).
- **VCs**: each VC gets a share of the jobs such that every VC offers the same load (its
  expected GPU-seconds per second over its GPUs), or a load growing with its size
  (``load_skew``); arrivals follow the daily cycle of
  :func:`analysim.inputs.generators.arrival_times`.
- **Stratified draws**: GPU counts and run-time quantiles are drawn by stratified sampling
  (one uniform in each of ``n`` equal slices of ``[0, 1)``, shuffled), so a month's means are
  within a few percent of the targets whatever the seed; the job count, arrival times, VCs
  and users are plain Poisson / multinomial draws (``Shape.arrivals="dealt"`` stratifies
  the VCs' job counts and arrival times too, and spreads each VC's GPU time evenly over the
  days: :func:`~analysim.presets.stratified.dealt_arrivals`; not used by the presets, see
  ``docs/calibration.md``; the draws are in :mod:`analysim.presets.stratified`).

Every random choice goes through one ``np.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from analysim.inputs import generators
from analysim.inputs.generators import DAY, clipped_lognormal_mean
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_SECONDS, bounded, plain_number
from analysim.inputs.workload import Workload
from analysim.presets.stratified import cycle_times as cycle_times
from analysim.presets.stratified import (
    dealt_arrivals,
    draw_sizes,
    largest_remainder,
    normal_quantile,
    quantiles_by_size,
)
from analysim.presets.stratified import stratified_uniform as stratified_uniform

JOB_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
"""GPU counts a calibrated job may ask for by default (Helios jobs are mostly powers of two);
``Shape.largest_size`` extends them to larger powers of two (Acme: 1,024)."""
MAX_SIZE_POWER = 20  # a largest size of at most 2**20 GPUs

_BISECTIONS = 60
PLAN_PASSES = 3
"""Rounds of solving the demand tables, run times and VC shares in turn (they depend on each
other). The shares of the last round are not fed back, so the mean GPUs per job can miss the
target by a few percent when run times grow fast with the GPU count (Earth: -3.5%); more
rounds do not converge there."""


@dataclass(frozen=True)
class Targets:
    """What a calibrated month must reproduce (GPU jobs only; seconds)."""

    jobs_per_day: float
    mean_duration: float
    median_duration: float
    mean_gpus: float
    gpu_seconds_per_job: float

    def __post_init__(self) -> None:
        for name in ("jobs_per_day", "mean_duration", "median_duration", "mean_gpus"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"Targets: {name} must be a finite number > 0, got {value!r}")
        if self.mean_gpus < 1:
            raise ValueError(f"Targets: mean_gpus must be >= 1, got {self.mean_gpus!r}")

    @classmethod
    def of_summary(cls, row: Any) -> Targets:
        """The targets of a published summary row (Helios' or Acme's): its ``jobs_per_day``,
        ``mean_run``, ``median_run``, ``mean_gpus``, and ``gpu_seconds`` over ``gpu_jobs``."""
        return cls(
            jobs_per_day=row.jobs_per_day,
            mean_duration=row.mean_run,
            median_duration=row.median_run,
            mean_gpus=row.mean_gpus,
            gpu_seconds_per_job=row.gpu_seconds / row.gpu_jobs,
        )


ARRIVALS = ("iid", "dealt")
"""The ways :class:`Shape` may place a month's jobs in time."""


SHAPE_RANGES: dict[str, tuple[float, float, bool]] = {
    # field: (low, high, low open): what the generator can honour
    "one_gpu_share": (0.0, 1.0, False),
    "max_job_fraction": (0.0, 1.0, True),
    "size_growth": (-10.0, 10.0, False),
    "load_skew": (-10.0, 10.0, False),
    "min_duration": (0.0, MAX_SECONDS, True),
    "max_duration": (0.0, MAX_SECONDS, True),
    "daily_amplitude": (0.0, 1.0, False),
    "user_zipf": (0.0, 100.0, False),
    "max_gpu_days": (0.0, MAX_SECONDS / DAY * MAX_JOB_GPUS, True),
}
"""The range of each number of :class:`Shape` (and ``peak_hour`` in ``[0, 24)``)."""
OPTIONAL_FIELDS = ("size_growth", "max_gpu_days")
MAX_USERS = 1_000_000


@dataclass(frozen=True)
class Shape:
    """How a calibrated workload is shaped where the published numbers say nothing.

    one_gpu_share: share of 1-GPU jobs (> 0.5 keeps the median at 1 GPU).
    max_job_fraction: the largest job of a VC, as a fraction of its GPUs.
    size_growth: run-time median ∝ GPUs**size_growth (``None``: solved so that the GPU-seconds
        per job are the target's).
    load_skew: a VC's offered load ∝ its GPUs**load_skew (0: every VC the same load).
    min_duration, max_duration: run times are clipped to this range (s).
    daily_amplitude, peak_hour: the daily arrival cycle (see :mod:`analysim.inputs.generators`).
    users_per_vc, user_zipf: users of each VC and their Zipf shares of its jobs.
    arrivals: ``"iid"`` (the presets): multinomial VC counts and independent arrival times
        from the daily cycle. ``"dealt"``: each VC gets its expected share of the jobs
        (largest remainder), its jobs arrive at stratified times of the daily cycle and are
        dealt to the days heaviest first, one per day in each round, so that every day of a
        VC carries about the same GPU-seconds
        (:func:`~analysim.presets.stratified.dealt_arrivals`); measured in
        ``docs/calibration.md``: steadier from seed to seed at a given shape, but the months
        queue far less, and at the published delay the spread returns.
    max_gpu_days: ``None`` (the default): run times are only clipped to ``max_duration``.
        A number: no job holds more than this many GPU-days (a job of ``g`` GPUs runs at most
        ``max_gpu_days / g`` days), which thins the joint tail of jobs both large and long;
        the run-time fit accounts for the cap (measured in ``docs/calibration.md``, "A cap on
        each job's GPU-time"; which Helios presets cap, and at what, is in
        :data:`analysim.presets.helios.SHAPES`).
    largest_size: the largest GPU count a job may ask for (its powers of two up to it are the
        sizes; default 128, :data:`JOB_SIZES`), before each VC's ``max_job_fraction`` cut.
    """

    one_gpu_share: float = 0.6
    max_job_fraction: float = 0.5
    size_growth: float | None = 0.0
    load_skew: float = 0.0
    min_duration: float = 1.0
    max_duration: float = 14 * DAY
    daily_amplitude: float = 0.5
    peak_hour: float = 15.0
    users_per_vc: int = 10
    user_zipf: float = 1.2
    arrivals: str = "iid"
    max_gpu_days: float | None = None
    largest_size: int = JOB_SIZES[-1]

    def __post_init__(self) -> None:
        if not isinstance(self.arrivals, str) or self.arrivals not in ARRIVALS:
            raise ValueError(
                f"Shape: arrivals must be one of {list(ARRIVALS)}, got {self.arrivals!r}"
            )
        for name, (low, high, low_open) in SHAPE_RANGES.items():
            value = getattr(self, name)
            if value is None and name in OPTIONAL_FIELDS:
                continue
            bounded(value, f"Shape: {name}", low=low, high=high, low_open=low_open)
        hour = plain_number(self.peak_hour, "Shape: peak_hour")
        if not 0 <= hour < 24:
            raise ValueError(f"Shape: peak_hour must be in [0, 24), got {self.peak_hour!r}")
        bounded(self.users_per_vc, "Shape: users_per_vc", low=1, high=MAX_USERS, whole=True)
        bounded(self.largest_size, "Shape: largest_size", low=2, high=2**MAX_SIZE_POWER, whole=True)
        if not self.min_duration < self.max_duration:
            raise ValueError(
                f"Shape: min_duration ({self.min_duration:g} s) must be below max_duration "
                f"({self.max_duration:g} s)"
            )


# -- GPU demand ----------------------------------------------------------------------------------
def largest_job(vc_gpus: int, max_job_fraction: float) -> int:
    """The most GPUs a job of a VC with ``vc_gpus`` GPUs may ask for (at least 1)."""
    return max(1, int(vc_gpus * max_job_fraction))


def job_sizes(largest: int = JOB_SIZES[-1]) -> tuple[int, ...]:
    """The powers of two from 1 to ``largest`` GPUs (:data:`JOB_SIZES` for 128)."""
    return tuple(2**k for k in range(int(largest).bit_length()) if 2**k <= largest)


def tilted_table(
    tilt: float, one_gpu_share: float, cap: float = math.inf, largest: int = JOB_SIZES[-1]
) -> dict[int, float]:
    """``{gpus: probability}``: ``one_gpu_share`` on 1 GPU, the rest over the larger sizes
    (powers of two up to ``largest``, :data:`JOB_SIZES` by default) ``∝ size**tilt``; cut at
    ``cap`` GPUs and renormalised."""
    larger = np.array([s for s in job_sizes(largest)[1:] if s <= cap], dtype=float)
    if larger.size == 0:
        return {1: 1.0}
    weights = larger**tilt
    weights *= (1.0 - one_gpu_share) / weights.sum()
    table = {1: one_gpu_share, **{int(s): float(w) for s, w in zip(larger, weights, strict=True)}}
    return table


def _mean_over_vcs(
    tilt: float, one_gpu_share: float, caps: tuple, shares: tuple, largest: int
) -> float:
    tables = [tilted_table(tilt, one_gpu_share, cap, largest) for cap in caps]
    return sum(w * generators.mean_gpus(t) for w, t in zip(shares, tables, strict=True))


def solve_demand(
    mean_gpus: float,
    one_gpu_share: float,
    caps: tuple[int, ...],
    shares: tuple[float, ...],
    largest: int = JOB_SIZES[-1],
) -> float:
    """The ``tilt`` whose tables (sizes up to ``largest``), cut at each VC's ``caps`` and
    weighted by the VCs' job ``shares``, give ``mean_gpus`` GPUs per job. Raises
    ``ValueError`` when out of reach."""
    lo, hi = -10.0, 10.0
    reach = (
        _mean_over_vcs(lo, one_gpu_share, caps, shares, largest),
        _mean_over_vcs(hi, one_gpu_share, caps, shares, largest),
    )
    if not reach[0] <= mean_gpus <= reach[1]:
        raise ValueError(
            f"mean_gpus {mean_gpus:g} is out of reach of these VCs: {reach[0]:.3g}..{reach[1]:.3g}"
        )
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if _mean_over_vcs(mid, one_gpu_share, caps, shares, largest) < mean_gpus:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# -- run times -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DurationModel:
    """Run time of a job of ``g`` GPUs: ``clip(exp(mu + beta ln g + sigma Z), low, high_g)``
    with ``high_g = min(high, gpu_time_cap / g)`` (a cap on each job's GPU-seconds)."""

    mu: float
    sigma: float
    beta: float
    low: float
    high: float
    gpu_time_cap: float = math.inf

    def log_median(self, gpus: np.ndarray) -> np.ndarray:
        return self.mu + self.beta * np.log(gpus)

    def highest(self, gpus: np.ndarray | int) -> np.ndarray | float:
        """The longest run time of a job of ``gpus`` GPUs (at least ``low``)."""
        return np.maximum(np.minimum(self.high, self.gpu_time_cap / np.asarray(gpus)), self.low)

    def mean(self, gpus: int) -> float:
        """Expected run time of a job of ``gpus`` GPUs."""
        return clipped_lognormal_mean(
            self.mu + self.beta * math.log(gpus), self.sigma, self.low, float(self.highest(gpus))
        )


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _median_mu(median: float, sigma: float, beta: float, table: Mapping[int, float]) -> float:
    """The ``mu`` whose mixture over ``table`` has median ``median``."""
    spread = 20.0 + 10.0 * abs(beta)
    lo, hi = math.log(median) - spread, math.log(median) + spread
    for _ in range(_BISECTIONS):
        mu = 0.5 * (lo + hi)
        below = sum(
            p * _normal_cdf((math.log(median) - mu - beta * math.log(g)) / sigma)
            for g, p in table.items()
        )
        if below > 0.5:
            lo = mu
        else:
            hi = mu
    return 0.5 * (lo + hi)


def _fit_sigma(
    targets: Targets,
    beta: float,
    table: Mapping[int, float],
    low: float,
    high: float,
    gpu_time_cap: float = math.inf,
) -> DurationModel:
    """For ``beta``, the model with the target median and mean (bisection on ``sigma``)."""
    lo, hi = 0.05, 6.0
    model = None
    for _ in range(_BISECTIONS):
        sigma = 0.5 * (lo + hi)
        mu = _median_mu(targets.median_duration, sigma, beta, table)
        model = DurationModel(mu, sigma, beta, low, high, gpu_time_cap)
        mean = sum(p * model.mean(g) for g, p in table.items())
        if mean < targets.mean_duration:
            lo = sigma
        else:
            hi = sigma
    assert model is not None
    return model


def gpu_seconds(model: DurationModel, table: Mapping[int, float]) -> float:
    """Expected GPU-seconds of one job: ``E[gpus * run time]``."""
    return sum(p * g * model.mean(g) for g, p in table.items())


@lru_cache(maxsize=64)
def _solve_durations(
    targets: Targets, table_items: tuple[tuple[int, float], ...], low: float, high: float
) -> DurationModel:
    table = dict(table_items)
    lo, hi = 0.0, 3.0
    model = _fit_sigma(targets, lo, table, low, high)
    if gpu_seconds(model, table) >= targets.gpu_seconds_per_job:
        return model  # sizes and run times independent already give enough GPU time
    for _ in range(40):
        beta = 0.5 * (lo + hi)
        model = _fit_sigma(targets, beta, table, low, high)
        if gpu_seconds(model, table) < targets.gpu_seconds_per_job:
            lo = beta
        else:
            hi = beta
    return model


def solve_durations(
    targets: Targets, table: Mapping[int, float], low: float, high: float
) -> DurationModel:
    """The run-time model whose median, mean and GPU-seconds per job over jobs sized by
    ``table`` are the targets' (``beta`` in ``[0, 3]``: the GPU-seconds may fall short when
    the target asks for a steeper growth)."""
    return _solve_durations(targets, tuple(sorted(table.items())), float(low), float(high))


# -- the generator -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What :func:`plan` solved: per-VC job shares and demand tables, and the run times."""

    vcs: tuple[str, ...]
    shares: tuple[float, ...]
    tables: tuple[dict[int, float], ...]
    durations: DurationModel
    tilt: float

    def overall_table(self) -> dict[int, float]:
        table: dict[int, float] = {}
        for share, vc_table in zip(self.shares, self.tables, strict=True):
            for g, p in vc_table.items():
                table[g] = table.get(g, 0.0) + share * p
        return dict(sorted(table.items()))


def plan(targets: Targets, vc_gpus: Mapping[str, int], shape: Shape = Shape()) -> Plan:
    """Solve the demand tables, the run-time model and the VCs' job shares (equal offered
    load per VC, or skewed by ``shape.load_skew``) in :data:`PLAN_PASSES` passes: the shares
    depend on the tables and run times and vice versa. Cached: solved once per process."""
    return _plan(targets, tuple(vc_gpus.items()), shape)


@lru_cache(maxsize=32)
def _plan(targets: Targets, vc_items: tuple[tuple[str, int], ...], shape: Shape) -> Plan:
    vcs = tuple(vc for vc, _ in vc_items)
    capacity = np.array([gpus for _, gpus in vc_items], dtype=float)
    caps = tuple(largest_job(int(c), shape.max_job_fraction) for c in capacity)
    shares = tuple(capacity / capacity.sum())
    for _ in range(PLAN_PASSES):
        tilt = solve_demand(
            targets.mean_gpus, shape.one_gpu_share, caps, shares, shape.largest_size
        )
        tables = tuple(
            tilted_table(tilt, shape.one_gpu_share, cap, shape.largest_size) for cap in caps
        )
        overall: dict[int, float] = {}
        for share, table in zip(shares, tables, strict=True):
            for g, p in table.items():
                overall[g] = overall.get(g, 0.0) + share * p
        if shape.size_growth is None:
            durations = solve_durations(targets, overall, shape.min_duration, shape.max_duration)
        else:
            durations = _fit_sigma(
                targets,
                shape.size_growth,
                overall,
                shape.min_duration,
                shape.max_duration,
                math.inf if shape.max_gpu_days is None else shape.max_gpu_days * DAY,
            )
        per_job = np.array([gpu_seconds(durations, t) for t in tables])
        # load ∝ capacity**load_skew: jobs ∝ GPUs**(1 + skew) / GPU-seconds per job
        weights = capacity ** (1.0 + shape.load_skew) / per_job
        shares = tuple(weights / weights.sum())
    return Plan(vcs, shares, tables, durations, tilt)


def calibrated_workload(
    targets: Targets,
    vc_gpus: Mapping[str, int],
    days: float = 30.0,
    seed: int = 0,
    *,
    shape: Shape = Shape(),
    load_scale: float = 1.0,
    name: str = "calibrated",
) -> Workload:
    """A seeded month (``days`` days) reproducing ``targets`` on VCs owning ``vc_gpus`` GPUs.

    ``load_scale`` multiplies the arrival rate (jobs per day), nothing else.
    """
    span = generators._check_number("days", days, low=0.0) * DAY
    load_scale = generators._check_number("load_scale", load_scale, low=0.0)
    seed = generators.check_seed(seed)
    if not isinstance(shape, Shape):
        raise ValueError(f"shape must be a Shape, got {type(shape).__name__}")
    expected = targets.jobs_per_day * load_scale * span / DAY
    generators.check_generated_jobs(expected, f"days={days:g} or load_scale={load_scale:g}")
    solved = plan(targets, vc_gpus, shape)
    rng = np.random.default_rng(seed)
    total = int(rng.poisson(expected))
    dealt = shape.arrivals == "dealt"
    if dealt:
        counts = largest_remainder(total, np.asarray(solved.shares))
    else:
        counts = rng.multinomial(total, np.asarray(solved.shares))
        submit = np.floor(
            generators.arrival_times(rng, total, span, shape.daily_amplitude, shape.peak_hour)
        )
    gpus = np.empty(total, dtype=np.int64)
    users = np.empty(total, dtype=object)
    quantiles = np.empty(total)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    for index, (vc, table) in enumerate(zip(solved.vcs, solved.tables, strict=True)):
        block = slice(bounds[index], bounds[index + 1])
        gpus[block] = draw_sizes(rng, int(counts[index]), table)
        quantiles[block] = quantiles_by_size(rng, gpus[block])
        users[block] = generators.draw_users(
            rng, int(counts[index]), vc, shape.users_per_vc, shape.user_zipf
        )
    model = solved.durations
    z = normal_quantile(quantiles)
    raw = np.exp(model.log_median(gpus.astype(float)) + model.sigma * z)
    duration = np.maximum(np.rint(np.clip(raw, model.low, model.highest(gpus))), 1.0)
    if dealt:
        submit = np.empty(total)
        for index in range(len(solved.vcs)):
            block = slice(bounds[index], bounds[index + 1])
            submit[block] = dealt_arrivals(
                rng, gpus[block] * duration[block], span, shape.daily_amplitude, shape.peak_hour
            )
        submit = np.floor(submit)

    order = np.argsort(submit, kind="stable")
    frame = pd.DataFrame(
        {
            "job_id": generators.job_ids(total),
            "vc": np.repeat(np.asarray(solved.vcs, dtype=object), counts)[order],
            "user": users[order],
            "submit_time": submit[order],
            "duration": duration[order],
            "num_gpus": gpus[order],
        }
    )
    return Workload.from_frame(frame, vcs=list(solved.vcs), name=name)
