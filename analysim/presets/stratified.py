"""Stratified draws of calibrated workloads: GPU counts, run-time quantiles, dealt arrivals."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from analysim.inputs import generators
from analysim.inputs.generators import DAY


def stratified_uniform(rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` uniforms on ``(0, 1)``, one in each slice ``[k/count, (k+1)/count)``, in a
    random order."""
    slices = rng.permutation(count).astype(float)
    return np.clip((slices + rng.uniform(size=count)) / max(count, 1), 1e-12, 1.0 - 1e-12)


def draw_sizes(rng: np.random.Generator, count: int, table: Mapping[int, float]) -> np.ndarray:
    """``count`` GPU counts from ``table`` by stratified sampling."""
    sizes = np.fromiter(table.keys(), dtype=np.int64)
    cdf = np.cumsum(np.fromiter(table.values(), dtype=float))
    cdf /= cdf[-1]
    picks = np.searchsorted(cdf, stratified_uniform(rng, count), side="right")
    return sizes[np.minimum(picks, len(sizes) - 1)]


def quantiles_by_size(rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
    """Run-time quantiles, stratified separately among the jobs of each GPU count (so that
    each size's GPU time, not only the overall mean, is close to its expectation)."""
    out = np.empty(len(sizes))
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        out[members] = stratified_uniform(rng, len(members))
    return out


def largest_remainder(total: int, shares: np.ndarray) -> np.ndarray:
    """``total`` split in whole numbers as close as can be to ``total * shares`` (Hamilton's
    method: floors, then one more to the largest remainders, ties to the first)."""
    exact = total * np.asarray(shares, dtype=float) / float(np.sum(shares))
    counts = np.floor(exact).astype(np.int64)
    short = int(total - counts.sum())
    if short > 0:
        counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return counts


def cycle_times(
    u: np.ndarray, span: float, amplitude: float, peak_hour: float, grain: float = 60.0
) -> np.ndarray:
    """The times in ``[0, span)`` at which the daily cycle's cumulative arrivals reach the
    fractions ``u`` (its inverse CDF, tabulated every ``grain`` seconds)."""
    edges = np.linspace(0.0, span, max(2, int(math.ceil(span / grain)) + 1))
    middles = 0.5 * (edges[1:] + edges[:-1])
    mass = generators.daily_cycle(middles, amplitude, peak_hour) * np.diff(edges)
    cumulative = np.concatenate([[0.0], np.cumsum(mass)])
    cumulative /= cumulative[-1]
    return np.minimum(np.interp(u, cumulative, edges), np.nextafter(span, 0.0))


def dealt_arrivals(
    rng: np.random.Generator,
    weight: np.ndarray,
    span: float,
    amplitude: float,
    peak_hour: float,
) -> np.ndarray:
    """Arrival times for one VC's jobs of GPU-seconds ``weight``, spreading its GPU time
    evenly over the days of ``[0, span)``.

    The jobs' times are stratified draws of the daily cycle (one in each of ``n`` equal
    slices of its cumulative arrivals); the month is cut into days (at least one stratum),
    each holding the times that fall in it. The jobs are dealt heaviest first (ties in a
    random order) in rounds: each round gives one job to every day that still has times
    free, the days in a random order; each day's jobs then take its times in a random order.
    So a VC's heaviest jobs land on different days, as in a Latin hypercube, and a few heavy
    jobs on the same days no longer set a month's queueing delay."""
    n = len(weight)
    if n == 0:
        return np.empty(0)
    times = np.sort(cycle_times(stratified_uniform(rng, n), span, amplitude, peak_hour))
    strata = max(1, int(round(span / DAY)))
    day = np.minimum((times * strata / span).astype(np.int64), strata - 1)
    free = np.bincount(day, minlength=strata)
    shuffled = rng.permutation(n)
    order = shuffled[np.argsort(-np.asarray(weight)[shuffled], kind="stable")]
    stratum_of = np.empty(n, dtype=np.int64)
    done = 0
    while done < n:
        open_days = rng.permutation(np.flatnonzero(free > 0))[: n - done]
        stratum_of[order[done : done + len(open_days)]] = open_days
        free[open_days] -= 1
        done += len(open_days)
    out = np.empty(n)
    first = np.concatenate([[0], np.cumsum(np.bincount(day, minlength=strata))])
    for s in range(strata):
        members = np.flatnonzero(stratum_of == s)
        out[members] = times[first[s] + rng.permutation(len(members))]
    return out


def normal_quantile(u: np.ndarray) -> np.ndarray:
    """Standard normal quantile of ``u`` in ``(0, 1)`` (Acklam's rational approximation,
    relative error < 1.2e-9)."""
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    u = np.asarray(u, dtype=float)
    out = np.empty_like(u)
    tail = 0.02425
    low, high = u < tail, u > 1.0 - tail
    mid = ~(low | high)
    q = u[mid] - 0.5
    r = q * q
    out[mid] = (
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
        * q
        / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    )
    for mask, sign, p in ((low, 1.0, u[low]), (high, -1.0, 1.0 - u[high])):
        q = np.sqrt(-2.0 * np.log(p))
        out[mask] = (
            sign
            * (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
        )
    return out
