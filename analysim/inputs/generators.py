"""Seeded synthetic workloads: daily-cycle arrivals, heavy-tailed GPU demand and durations.

:func:`synthetic` builds a :class:`~analysim.inputs.workload.Workload` from a few numbers per
virtual cluster (VC). Its pieces are small functions that take a ``numpy.random.Generator``
so they can be used and tested alone:

- :func:`daily_cycle` / :func:`arrival_times` -- a non-homogeneous Poisson process whose rate
  follows a daily cosine, ``rate(t) = mean_rate * (1 + amplitude * cos(2π (t - peak) / day))``,
  sampled by thinning;
- :func:`demand_table` / :func:`draw_gpus` -- GPUs per job from a probability table (mostly
  1 GPU, then 2, 4, 8 and rarely 16/32/64), truncated to what the VC can hold;
- :func:`lognormal_mu` / :func:`draw_durations` -- lognormal run times clipped to
  ``[min_duration, max_duration]`` whose clipped mean is exactly the target mean;
- :func:`zipf_shares` / :func:`draw_users` -- a few users per VC with Zipf-like shares of the
  VC's jobs, named ``<vc>-u07``;
- :func:`arrival_rates` -- each VC's job rate from the GPUs it offers (GPU-seconds per second).

Every random choice of :func:`synthetic` goes through one ``np.random.default_rng(seed)``, so
the same arguments give the same jobs table. Times are whole seconds from the trace start
(``t = 0`` is midnight of day 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from analysim.inputs.workload import Workload

DAY = 86_400.0
"""Seconds in a day: the period of the arrival cycle."""

DEFAULT_GPU_DEMAND: dict[int, float] = {
    1: 0.52,
    2: 0.03,
    4: 0.03,
    8: 0.35,
    16: 0.04,
    32: 0.025,
    64: 0.005,
}
"""GPUs per job and their probabilities, Helios-Venus-like: median 1 GPU, whole-node (8-GPU)
jobs common, multi-node (16-64 GPU) jobs 7%. Mean 5.26 GPUs, so large jobs hold most of the
GPU time (Helios Venus: median 1 GPU, mean 6.7)."""

_PROBABILITY_TOLERANCE = 1e-6

MAX_GENERATED_BYTES = 4 * 2**30
"""Most memory a generated workload may take while it is built (4 GiB)."""
BYTES_PER_JOB = 500
"""Peak memory of one generated job while its workload is built (measured: a 300-day
``saturn`` month of 1.1 million jobs peaks at about 500 bytes a job)."""
MAX_GENERATED_JOBS = MAX_GENERATED_BYTES // BYTES_PER_JOB


def check_seed(seed: object, name: str = "seed") -> int:
    """``seed`` as an int in ``[0, 2**63 - 1]``; a ValueError naming ``name`` otherwise. A
    bool is not a seed, and neither is None: a generator seeded from the clock would give a
    different workload on every call (pass ``seed=0`` for the default)."""
    from analysim.inputs.validation import MAX_SEED

    if seed is None:
        raise ValueError(
            f"{name} must be a whole number from 0 to {MAX_SEED}, got None (a seed drawn "
            "afresh would give a different workload on every call; pass seed=0 for the default)"
        )
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(
            f"{name} must be a whole number from 0 to {MAX_SEED}, got {seed!r} "
            f"({type(seed).__name__})"
        )
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"{name} must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    return int(seed)


def check_generated_jobs(expected: float, lower: str) -> None:
    """Refuse, before drawing anything, a workload of about ``expected`` jobs that would not
    fit in :data:`MAX_GENERATED_BYTES`: the message gives the estimate, the limit and
    ``lower`` (what to lower, e.g. ``"days or load_scale"``)."""
    if expected <= MAX_GENERATED_JOBS:
        return
    need = expected * BYTES_PER_JOB / 2**30
    factor = MAX_GENERATED_JOBS / expected
    raise ValueError(
        f"the workload would have about {expected:,.0f} jobs, about {need:,.1f} GiB to build; "
        f"the limit is {MAX_GENERATED_BYTES / 2**30:g} GiB ({MAX_GENERATED_JOBS:,} jobs): "
        f"lower {lower} by a factor of at least {1 / factor:,.3g}"
    )


# -- parameter checks --------------------------------------------------------------------------
def _check_number(
    name: str,
    value: float,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = False,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` naming ``name`` and the bounds."""
    bounds = []
    if low is not None:
        bounds.append(f"{'>=' if low_inclusive else '>'} {low:g}")
    if high is not None:
        bounds.append(f"{'<=' if high_inclusive else '<'} {high:g}")
    expected = "a finite number" + (" " + " and ".join(bounds) if bounds else "")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    number = float(value)
    too_low = low is not None and (number < low or (number == low and not low_inclusive))
    too_high = high is not None and (number > high or (number == high and not high_inclusive))
    if not math.isfinite(number) or too_low or too_high:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return number


def _check_count(name: str, value: int, *, low: int = 1) -> int:
    """Return ``value`` as an int >= ``low``, or raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _check_vcs(vcs: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(vcs, Mapping) or not vcs:
        raise ValueError(f"vcs must be a non-empty mapping {{vc: offered GPUs}}, got {vcs!r}")
    checked = {}
    for vc, offered in vcs.items():
        if not isinstance(vc, str) or not vc.strip():
            raise ValueError(f"vcs: VC names must be non-empty strings, got {vc!r}")
        checked[vc] = _check_number(f"vcs[{vc!r}]", offered, low=0.0, low_inclusive=True)
    if sum(checked.values()) <= 0:
        raise ValueError(f"vcs: offered GPUs must add up to more than 0, got {vcs!r}")
    return checked


def check_gpu_demand(gpu_demand: Mapping[int, float]) -> dict[int, float]:
    """Validate a ``{gpus: probability}`` table; return it sorted by GPU count.

    Raises ``ValueError`` naming ``gpu_demand`` when a size is not a whole number >= 1, a
    probability is negative or not finite, or the probabilities do not add up to 1.
    """
    if not isinstance(gpu_demand, Mapping) or not gpu_demand:
        raise ValueError(
            f"gpu_demand must be a non-empty mapping {{gpus: probability}}, got {gpu_demand!r}"
        )
    table = {}
    for size, probability in sorted(gpu_demand.items()):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"gpu_demand: GPU counts must be whole numbers >= 1, got {size!r}")
        table[int(size)] = _check_number(
            f"gpu_demand[{size}]", probability, low=0.0, low_inclusive=True, high=1.0
        )
    total = sum(table.values())
    if abs(total - 1.0) > _PROBABILITY_TOLERANCE:
        raise ValueError(
            f"gpu_demand: probabilities must add up to 1, got {total:g} ({gpu_demand!r})"
        )
    return table


# -- arrivals ----------------------------------------------------------------------------------
def daily_cycle(times: np.ndarray, amplitude: float, peak_hour: float) -> np.ndarray:
    """Relative arrival rate at ``times`` (s): ``1 + amplitude * cos(2π (t - peak) / day)``.

    Its average over a whole day is 1; it peaks at ``peak_hour`` o'clock every day.
    """
    phase = 2.0 * np.pi * (np.asarray(times, dtype=float) - peak_hour * 3600.0) / DAY
    return 1.0 + amplitude * np.cos(phase)


def cumulative_cycle(span: float, amplitude: float, peak_hour: float) -> float:
    """Integral of :func:`daily_cycle` over ``[0, span]``: the mean number of arrivals of a
    process with average rate 1 per second (equal to ``span`` over whole days)."""
    peak = peak_hour * 3600.0
    omega = 2.0 * math.pi / DAY
    return span + amplitude / omega * (math.sin(omega * (span - peak)) + math.sin(omega * peak))


def arrival_times(
    rng: np.random.Generator, count: int, span: float, amplitude: float, peak_hour: float
) -> np.ndarray:
    """``count`` unsorted arrival times in ``[0, span)`` with density proportional to
    :func:`daily_cycle` -- a daily-cycle Poisson process conditioned on its count.

    Sampled by thinning: uniform proposals are kept with probability
    ``daily_cycle(t) / (1 + amplitude)`` (at least one half), in vectorised batches.
    """
    kept: list[np.ndarray] = []
    have = 0
    ceiling = 1.0 + amplitude
    while have < count:
        batch = math.ceil((count - have) * ceiling * 1.1) + 64
        proposals = rng.uniform(0.0, span, size=batch)
        heights = rng.uniform(0.0, ceiling, size=batch)
        accept = heights < daily_cycle(proposals, amplitude, peak_hour)
        kept.append(proposals[accept])
        have += int(accept.sum())
    return np.concatenate(kept)[:count] if kept else np.empty(0)


# -- GPU demand --------------------------------------------------------------------------------
def demand_table(gpu_demand: Mapping[int, float], max_gpus: float = math.inf) -> dict[int, float]:
    """The demand table restricted to sizes ``<= max_gpus`` and renormalised.

    Raises ``ValueError`` when no size fits (``max_gpus`` below the smallest size).
    """
    table = check_gpu_demand(gpu_demand)
    fitting = {size: p for size, p in table.items() if size <= max_gpus}
    total = sum(fitting.values())
    if total <= 0:
        raise ValueError(
            f"max_gpus: no GPU count of gpu_demand {sorted(table)} with probability > 0 fits "
            f"in {max_gpus:g} GPUs"
        )
    return {size: p / total for size, p in fitting.items()}


def mean_gpus(table: Mapping[int, float]) -> float:
    """Mean GPUs per job of a ``{gpus: probability}`` table."""
    return float(sum(size * p for size, p in table.items()))


def draw_gpus(rng: np.random.Generator, count: int, table: Mapping[int, float]) -> np.ndarray:
    """``count`` GPU counts (int64) drawn from a ``{gpus: probability}`` table."""
    sizes = np.fromiter(table.keys(), dtype=np.int64)
    cdf = np.cumsum(np.fromiter(table.values(), dtype=float))
    cdf /= cdf[-1]
    picks = np.searchsorted(cdf, rng.uniform(size=count), side="right")
    return sizes[np.minimum(picks, len(sizes) - 1)]


# -- durations ---------------------------------------------------------------------------------
def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def clipped_lognormal_mean(mu: float, sigma: float, low: float, high: float) -> float:
    """Mean of ``clip(exp(mu + sigma * Z), low, high)`` for a standard normal ``Z``."""
    a = (math.log(low) - mu) / sigma
    b = (math.log(high) - mu) / sigma
    middle = math.exp(mu + sigma**2 / 2.0) * (_normal_cdf(b - sigma) - _normal_cdf(a - sigma))
    return low * _normal_cdf(a) + high * (1.0 - _normal_cdf(b)) + middle


def lognormal_mu(mean: float, sigma: float, low: float, high: float) -> float:
    """The ``mu`` whose lognormal, clipped to ``[low, high]``, has mean ``mean`` (bisection)."""
    if not low < mean < high:
        raise ValueError(
            f"mean_duration must lie strictly between min_duration and max_duration, got "
            f"{mean:g} not in ({low:g}, {high:g})"
        )
    lo, hi = math.log(low) - 10.0 * sigma, math.log(high) + 10.0 * sigma
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if clipped_lognormal_mean(mid, sigma, low, high) < mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def draw_durations(
    rng: np.random.Generator, count: int, mean: float, sigma: float, low: float, high: float
) -> np.ndarray:
    """``count`` run times (s): lognormal with shape ``sigma`` clipped to ``[low, high]``, with
    expected value ``mean``, rounded to whole seconds (at least 1)."""
    mu = lognormal_mu(mean, sigma, low, high)
    raw = np.clip(rng.lognormal(mu, sigma, size=count), low, high)
    return np.maximum(np.rint(raw), 1.0)


# -- users -------------------------------------------------------------------------------------
def zipf_shares(users: int, exponent: float) -> np.ndarray:
    """Shares of jobs of ``users`` users, ``∝ 1 / rank**exponent`` (rank 1 submits most)."""
    weights = 1.0 / np.arange(1, users + 1, dtype=float) ** exponent
    return weights / weights.sum()


def user_names(vc: str, users: int) -> list[str]:
    """Names of a VC's users: ``<vc>-u00``, ``<vc>-u01``, ... (wider when >= 100 users)."""
    width = max(2, len(str(users - 1)))
    return [f"{vc}-u{k:0{width}d}" for k in range(users)]


def draw_users(
    rng: np.random.Generator, count: int, vc: str, users: int, exponent: float
) -> np.ndarray:
    """``count`` user names of VC ``vc`` drawn with :func:`zipf_shares`."""
    cdf = np.cumsum(zipf_shares(users, exponent))
    picks = np.searchsorted(cdf, rng.uniform(size=count) * cdf[-1], side="right")
    return np.asarray(user_names(vc, users), dtype=object)[np.minimum(picks, users - 1)]


# -- the generator -----------------------------------------------------------------------------
def job_ids(count: int) -> np.ndarray:
    """Job ids ``j000001``, ``j000002``, ... (at least six digits; wider for more jobs)."""
    width = max(6, len(str(count)))
    numbers = np.arange(1, count + 1, dtype=np.int64)
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    chars = np.empty((count, width + 1), dtype=np.uint8)
    chars[:, 0] = ord("j")
    chars[:, 1:] = numbers[:, None] // powers % 10 + ord("0")
    return chars.view(f"S{width + 1}").ravel().astype(str).astype(object)


def arrival_rates(
    vcs: Mapping[str, float],
    *,
    mean_duration: float,
    gpu_demand: Mapping[int, float] = DEFAULT_GPU_DEMAND,
    max_gpus: Mapping[str, int] | None = None,
    load_scale: float = 1.0,
) -> dict[str, float]:
    """Mean jobs per second of each VC so that it offers ``vcs[vc] * load_scale`` GPUs.

    A VC offering ``g`` GPUs with jobs of mean ``m`` GPUs (its demand table truncated to
    ``max_gpus[vc]``) and mean run time ``d`` submits ``g / (m * d)`` jobs per second.
    """
    offered = _check_vcs(vcs)
    mean_duration = _check_number("mean_duration", mean_duration, low=0.0)
    load_scale = _check_number("load_scale", load_scale, low=0.0)
    caps = dict(max_gpus or {})
    unknown = sorted(set(caps) - set(offered))
    if unknown:
        raise ValueError(f"max_gpus: VC(s) {unknown} are not in vcs {sorted(offered)}")
    rates = {}
    for vc, gpus in offered.items():
        cap = _check_count(f"max_gpus[{vc!r}]", caps[vc]) if vc in caps else math.inf
        table = demand_table(gpu_demand, cap)
        rates[vc] = gpus * load_scale / (mean_gpus(table) * mean_duration)
    return rates


def synthetic(
    vcs: Mapping[str, float],
    days: float = 1.0,
    seed: int = 0,
    *,
    mean_duration: float = 13_000.0,
    duration_sigma: float = 2.5,
    min_duration: float = 10.0,
    max_duration: float = 7 * DAY,
    gpu_demand: Mapping[int, float] = DEFAULT_GPU_DEMAND,
    max_gpus: Mapping[str, int] | None = None,
    load_scale: float = 1.0,
    daily_amplitude: float = 0.5,
    peak_hour: float = 15.0,
    users_per_vc: int = 10,
    user_zipf: float = 1.2,
    jobs: int | None = None,
    name: str = "synthetic",
) -> Workload:
    """A seeded synthetic workload of ``days`` days, sorted by submit time.

    The defaults are calibrated on Helios Venus (mean GPU-job run time 13,000 s, median 1 GPU,
    heavy tails); see :mod:`analysim.presets` for the ``venus`` preset built on them.

    vcs: ``{vc: offered GPUs}`` -- the average number of GPUs each VC's jobs would keep busy
        (GPU-seconds asked for per second of trace). Divided by a VC's GPU capacity this is
        its offered load. Arrival rates follow from it (see :func:`arrival_rates`).
    days: trace length; submissions fall in ``[0, days * 86400)`` seconds.
    seed: seed of the single ``np.random.default_rng`` every random choice uses.
    mean_duration, duration_sigma, min_duration, max_duration: run times are lognormal with
        shape ``duration_sigma``, clipped to ``[min_duration, max_duration]``, with expected
        value ``mean_duration`` (all in seconds), independent of the GPU count.
    gpu_demand: ``{gpus: probability}`` (see :data:`DEFAULT_GPU_DEMAND`).
    max_gpus: ``{vc: GPUs}`` -- the most GPUs a job of that VC may ask for (its capacity);
        sizes above it are dropped from that VC's table and the rest renormalised.
    load_scale: multiplies every arrival rate (and so the offered load).
    daily_amplitude, peak_hour: the arrival rate swings by ``± daily_amplitude`` (0..1) around
        its mean, peaking at ``peak_hour`` o'clock (see :func:`daily_cycle`).
    users_per_vc, user_zipf: each VC has ``users_per_vc`` users named ``<vc>-u00`` ...; the
        user of rank ``k`` (from 1) submits a share ``∝ 1 / k**user_zipf`` of the VC's jobs.
    jobs: if given, exactly this many jobs (the process conditioned on its total count, shared
        among VCs by their arrival rates); otherwise each VC's count is Poisson.
    name: the workload's name.

    Raises ``ValueError`` naming the parameter and its value when a parameter is out of range.
    """
    span = _check_number("days", days, low=0.0) * DAY
    duration_sigma = _check_number("duration_sigma", duration_sigma, low=0.0)
    min_duration = _check_number("min_duration", min_duration, low=0.0)
    max_duration = _check_number("max_duration", max_duration, low=min_duration)
    daily_amplitude = _check_number(
        "daily_amplitude", daily_amplitude, low=0.0, low_inclusive=True, high=1.0
    )
    peak_hour = _check_number(
        "peak_hour", peak_hour, low=0.0, low_inclusive=True, high=24.0, high_inclusive=False
    )
    users_per_vc = _check_count("users_per_vc", users_per_vc)
    user_zipf = _check_number("user_zipf", user_zipf, low=0.0, low_inclusive=True)
    if jobs is not None:
        jobs = _check_count("jobs", jobs, low=0)
    rates_by_vc = arrival_rates(
        vcs,
        mean_duration=mean_duration,
        gpu_demand=gpu_demand,
        max_gpus=max_gpus,
        load_scale=load_scale,
    )
    lognormal_mu(mean_duration, duration_sigma, min_duration, max_duration)  # range check
    names = list(rates_by_vc)
    caps = dict(max_gpus or {})
    tables = [demand_table(gpu_demand, caps.get(vc, math.inf)) for vc in names]
    rates = np.fromiter(rates_by_vc.values(), dtype=float)

    seed = check_seed(seed)
    expected = rates * cumulative_cycle(span, daily_amplitude, peak_hour)
    lower = "jobs" if jobs is not None else f"days={days:g} or load_scale={load_scale:g}"
    check_generated_jobs(float(expected.sum()) if jobs is None else jobs, lower)
    rng = np.random.default_rng(seed)
    if jobs is None:
        counts = rng.poisson(expected)
    else:
        counts = rng.multinomial(jobs, rates / rates.sum())
    total = int(counts.sum())
    bounds = np.concatenate([[0], np.cumsum(counts)])
    submit = np.floor(arrival_times(rng, total, span, daily_amplitude, peak_hour))
    gpus = np.empty(total, dtype=np.int64)
    users = np.empty(total, dtype=object)
    for index, (vc, table) in enumerate(zip(names, tables, strict=True)):
        block = slice(bounds[index], bounds[index + 1])
        gpus[block] = draw_gpus(rng, int(counts[index]), table)
        users[block] = draw_users(rng, int(counts[index]), vc, users_per_vc, user_zipf)
    duration = draw_durations(rng, total, mean_duration, duration_sigma, min_duration, max_duration)

    order = np.argsort(submit, kind="stable")
    frame = pd.DataFrame(
        {
            "job_id": job_ids(total),
            "vc": np.repeat(np.asarray(names, dtype=object), counts)[order],
            "user": users[order],
            "submit_time": submit[order],
            "duration": duration[order],
            "num_gpus": gpus[order],
        }
    )
    return Workload.from_frame(frame, vcs=names, name=name)
