"""Gavel's round-based allocation policies (Narayanan et al., OSDI'20).

Each of these schedulers computes an **allocation** ``X[job, type]``: the fraction of time
each active job should run on GPUs of each type (``sum_T X[j, T] <= 1`` per job,
``sum_j gpus_j X[j, T] <= G_T`` per type). The engine (``analysim/engine/allocation_rounds.py``)
recomputes it when jobs have arrived or finished, and every round (``quantum`` seconds; 360 s
in Gavel's simulator) runs jobs type by type in order of priority ``X / share received``
(``docs/heterogeneity.md``). The policies here only compute ``X`` from plain arrays:

* ``max_min_fairness_perf``: maximise the smallest normalised throughput
  ``gpus_j * sum_T r[j, T] X[j, T] / sum_T r[j, T] P_T`` (``P`` the proportional share of
  each type), a linear programme; ``max_min_fairness`` the same with every usable rate 1.
* ``finish_time_fairness_perf``: minimise the largest estimated finish-time fairness
  ``rho_j = (t_j + w_j / sum_T r[j, T] X[j, T]) / (c_j + w_j / i_j)`` (``t`` time since
  arrival, ``w`` work left, ``c`` isolated time so far, ``i`` the isolated rate), by
  bisection on ``rho`` over linear feasibility problems; ``finish_time_fairness`` with every
  usable rate 1.
* ``fifo_perf``: in arrival order, each job takes the fastest type with GPUs left for it.

Linear programmes are solved by HiGHS (``scipy.optimize.linprog``), which is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import linprog

from analysim.inputs.validation import bounded
from analysim.policies.scheduling import SCHEDULERS, JobView, Scheduler

#: relative precision of the finish-time fairness bisection
RHO_TOLERANCE = 1e-4
#: weight of the total normalised throughput against the max-min level (a tie-break)
TIEBREAK = 1e-6
#: Gavel's default minimum seconds between allocation resets (``scheduler.py``)
MIN_RESET_INTERVAL = 1920.0


class PolicyLPError(RuntimeError):
    """A linear programme of an allocation policy had no solution (a bug, not bad input)."""


@dataclass(frozen=True)
class AllocationInputs:
    """What an allocation is computed from, for the active jobs (rows) and GPU types
    (columns) at the time of a reset.

    ``rates[j, T]``: job ``j``'s packed rate on type ``T`` (0 where it may not run);
    ``gpus``: GPUs per job; ``capacity``: GPUs per type; ``since_arrival``: seconds since
    each job arrived; ``remaining``: work left (seconds at rate 1); ``jobs``: the jobs'
    indices in the workload (for policies that keep per-job state)."""

    rates: np.ndarray
    gpus: np.ndarray
    capacity: np.ndarray
    since_arrival: np.ndarray
    remaining: np.ndarray
    jobs: np.ndarray


class AllocationScheduler(Scheduler):
    """Base class: a round-based allocation policy (the engine's allocation rounds run it)."""

    #: tells the engine to run allocation rounds (``engine/allocation_rounds.py``)
    allocates: ClassVar[bool] = True
    #: whether the policy sees each type's rate (else every usable type has rate 1)
    aware: ClassVar[bool] = True
    #: whether a job runs only on types where its allocation is above 0 (Gavel's FIFO);
    #: else a job may fill GPUs left over on any type it can use
    allocated_types_only: ClassVar[bool] = False

    def __init__(self, min_reset_interval: float = MIN_RESET_INTERVAL) -> None:
        self.min_reset_interval = bounded(
            min_reset_interval, f"{self.name}: min_reset_interval (seconds)", low=0.0, high=1e12
        )

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.submit_time,)  # (not used: allocation rounds rank by allocation)

    def seen_rates(self, rates: np.ndarray) -> np.ndarray:
        """The rates the policy plans with: as they are if ``aware``, else 1 where > 0."""
        return rates if self.aware else (rates > 0).astype(float)

    def allocation(self, inputs: AllocationInputs) -> np.ndarray:
        """``X[job, type]`` for the jobs and types of ``inputs``."""
        raise NotImplementedError


def proportional_share(capacity: np.ndarray, n_jobs: int) -> np.ndarray:
    """Each type's share of one job's time when ``n_jobs`` jobs split the cluster in
    proportion to its GPUs (Gavel's ``ProportionalPolicy``): ``G_T / n``, scaled so that
    the shares add up to at most 1."""
    share = capacity / max(n_jobs, 1)
    total = share.sum()
    return share / total if total > 1 else share


def isolated_rates(rates: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each job's rate alone on its ``1/N`` share (Gavel's ``IsolatedPolicy``; as
    ``results/fairness.py`` counts it): ``x_T = G_T / (N g)`` on the types it may use,
    scaled to add up to at most 1, and its rate ``sum_T x_T r_T``."""
    n = len(rates)
    share = np.where(rates > 0, capacity[None, :] / (n * gpus[:, None]), 0.0)
    total = share.sum(axis=1, keepdims=True)
    share = np.where(total > 1, share / np.where(total > 0, total, 1.0), share)
    return (share * rates).sum(axis=1)


def _base_constraints(
    rates: np.ndarray, gpus: np.ndarray, capacity: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ``sum_j g_j X[j, T] <= G_T`` and ``sum_T X[j, T] <= 1`` over the flattened
    ``X`` (row-major), and bounds that keep ``X`` at 0 where a job's rate is 0 (dense: the
    programmes are small, a few hundred variables)."""
    n, k = rates.shape
    per_type = np.zeros((k, n * k))
    per_job = np.zeros((n, n * k))
    cols = np.arange(n * k)
    per_type[cols % k, cols] = np.repeat(gpus, k)
    per_job[cols // k, cols] = 1.0
    bounds = np.column_stack([np.zeros(n * k), (rates.ravel() > 0).astype(float)])
    return np.vstack([per_type, per_job]), np.r_[capacity, np.ones(n)], bounds


def _per_job_rows(values: np.ndarray) -> np.ndarray:
    """Row ``j`` holds ``values[j]`` in job ``j``'s columns of the flattened ``X``."""
    n, k = values.shape
    rows = np.zeros((n, n * k))
    cols = np.arange(n * k)
    rows[cols // k, cols] = values.ravel()
    return rows


def _solve(c, a_ub, b_ub, bounds, what: str):
    result = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise PolicyLPError(f"{what}: the linear programme failed ({result.message})")
    return result.x


def max_min_allocation(rates: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's max-min fairness: maximise the smallest normalised throughput
    ``g_j sum_T r X / sum_T r P``, and among the allocations that reach it the sum of the
    normalised throughputs (one programme: the level plus ``TIEBREAK`` times the sum, so a
    vertex is chosen deterministically; HiGHS returns a vertex)."""
    n, k = rates.shape
    norm = rates * proportional_share(capacity, n)[None, :]
    weight = gpus[:, None] * rates / norm.sum(axis=1, keepdims=True)
    base, b_base, bounds = _base_constraints(rates, gpus, capacity)
    # t - sum_T weight X <= 0 per job; variables: X (flattened), then t
    a_ub = np.block([[base, np.zeros((n + k, 1))], [-_per_job_rows(weight), np.ones((n, 1))]])
    b_ub = np.r_[b_base, np.zeros(n)]
    c = np.r_[-TIEBREAK / n * weight.ravel(), -1.0]
    x = _solve(c, a_ub, b_ub, np.vstack([bounds, [0.0, np.inf]]), "max_min_fairness")
    return np.clip(x[:-1].reshape(n, k), 0.0, 1.0)


def fifo_allocation(rates: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Gavel's heterogeneity-aware FIFO: in row order (arrival order), each job gets the
    whole of the fastest type (first in column order on ties) that has its GPUs left."""
    n, k = rates.shape
    left = capacity.astype(float).copy()
    x = np.zeros((n, k))
    for j in range(n):
        fits = (left >= gpus[j]) & (rates[j] > 0)
        if not fits.any():
            break  # first in, first out: no later job jumps ahead of this one
        best = int(np.argmax(np.where(fits, rates[j], -1.0)))
        x[j, best] = 1.0
        left[best] -= gpus[j]
    return x


def _ftf_feasible(rho: float, need_num, need_den, rates, base, b_base, bounds):
    """An allocation giving each job at least the throughput that keeps its estimated rho
    at or below ``rho``, or None."""
    room = rho * need_den - need_num[0]
    if np.any(room <= 0):
        return None
    need = need_num[1] / room
    if np.any(need > rates.max(axis=1) * (1 + 1e-12)):
        return None
    n, k = rates.shape
    result = linprog(
        -rates.ravel(),
        A_ub=np.vstack([base, -_per_job_rows(rates)]),
        b_ub=np.r_[b_base, -need],
        bounds=bounds,
        method="highs",
    )
    return result.x.reshape(n, k) if result.status == 0 else None


def finish_time_allocation(
    rates: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    since_arrival: np.ndarray,
    remaining: np.ndarray,
    isolated_so_far: np.ndarray,
    isolated: np.ndarray,
) -> np.ndarray:
    """Gavel's finish-time fairness: the allocation that minimises the largest estimated
    ``rho_j = (t_j + w_j / sum_T r X) / (c_j + w_j / i_j)``, found by bisection on ``rho``
    (each step a linear feasibility problem; the last feasible allocation, which also
    maximises the total throughput, is returned)."""
    base, b_base, bounds = _base_constraints(rates, gpus, capacity)
    den = isolated_so_far + remaining / isolated
    num = (since_arrival, remaining)
    high = float(np.max((since_arrival + remaining / isolated) / den)) * (1 + 1e-9)
    best = _ftf_feasible(high, num, den, rates, base, b_base, bounds)
    while best is None:  # (the isolated allocation is feasible: only rounding gets here)
        high *= 2
        best = _ftf_feasible(high, num, den, rates, base, b_base, bounds)
    low = float(np.max((since_arrival + remaining / rates.max(axis=1)) / den))
    while high - low > RHO_TOLERANCE * high:
        mid = (low + high) / 2
        found = _ftf_feasible(mid, num, den, rates, base, b_base, bounds)
        if found is None:
            low = mid
        else:
            high, best = mid, found
    return np.clip(best, 0.0, 1.0)


@SCHEDULERS.register("max_min_fairness_perf")
class MaxMinFairnessPerf(AllocationScheduler):
    """Gavel's heterogeneity-aware max-min fairness (its LAS-perf): each job's throughput
    normalised by its throughput on its proportional share, maximised for the worst job."""

    def allocation(self, inputs: AllocationInputs) -> np.ndarray:
        rates = self.seen_rates(inputs.rates)
        return max_min_allocation(rates, inputs.gpus.astype(float), inputs.capacity)


@SCHEDULERS.register("max_min_fairness")
class MaxMinFairness(MaxMinFairnessPerf):
    """Gavel's heterogeneity-agnostic max-min fairness (LAS): every job's share of GPU
    time, as if every type were as fast; GPU types are tried in a fresh random order each
    round (from the run's seeded generator), as Gavel's simulator shuffles them."""

    aware = False


@SCHEDULERS.register("finish_time_fairness_perf")
class FinishTimeFairnessPerf(AllocationScheduler):
    """Gavel's heterogeneity-aware finish-time fairness: minimise the largest estimated
    rho with each type's rate."""

    def __init__(self, min_reset_interval: float = MIN_RESET_INTERVAL) -> None:
        super().__init__(min_reset_interval)
        # per job: isolated seconds so far, and the work left and isolated rate last time
        self._isolated_so_far: dict[int, float] = {}
        self._last: dict[int, tuple[float, float]] = {}

    def allocation(self, inputs: AllocationInputs) -> np.ndarray:
        rates = self.seen_rates(inputs.rates)
        gpus = inputs.gpus.astype(float)
        isolated = isolated_rates(rates, gpus, inputs.capacity)
        so_far = np.zeros(len(rates))
        jobs, remaining = inputs.jobs.tolist(), inputs.remaining.tolist()
        for i, (j, left) in enumerate(zip(jobs, remaining, strict=True)):
            done = self._isolated_so_far.get(j, 0.0)
            if j in self._last:
                before, rate = self._last[j]
                done += (before - left) / rate
            self._isolated_so_far[j] = so_far[i] = done
        self._last = {j: (w, r) for j, w, r in zip(jobs, remaining, isolated.tolist(), strict=True)}
        return finish_time_allocation(
            rates,
            gpus,
            inputs.capacity,
            inputs.since_arrival,
            inputs.remaining,
            so_far,
            isolated,
        )


@SCHEDULERS.register("finish_time_fairness")
class FinishTimeFairness(FinishTimeFairnessPerf):
    """Gavel's heterogeneity-agnostic finish-time fairness (Themis-like): minimise the
    largest estimated rho, as if every usable type ran each job at its reference rate;
    types tried in a fresh random order each round."""

    aware = False


@SCHEDULERS.register("fifo_perf")
class FIFOPerf(AllocationScheduler):
    """Gavel's heterogeneity-aware FIFO: in arrival order each job gets the fastest type
    with room for it, re-decided at every reset (a job may move to a faster type)."""

    allocated_types_only = True

    def allocation(self, inputs: AllocationInputs) -> np.ndarray:
        return fifo_allocation(inputs.rates, inputs.gpus, inputs.capacity)


__all__ = [
    "AllocationInputs",
    "AllocationScheduler",
    "FIFOPerf",
    "FinishTimeFairness",
    "FinishTimeFairnessPerf",
    "MaxMinFairness",
    "MaxMinFairnessPerf",
    "PolicyLPError",
    "finish_time_allocation",
    "fifo_allocation",
    "isolated_rates",
    "max_min_allocation",
    "proportional_share",
]
