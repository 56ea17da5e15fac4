"""Scheduling policies: each ranks the active jobs and mutates nothing.

A scheduler's :meth:`Scheduler.priority` returns one or more key arrays over the active jobs
(lowest first, the first array most significant); the engine breaks remaining ties by submit
order. :meth:`Scheduler.next_change` tells the engine the earliest time the ranking could
change with no arrival or completion in between, so it can leap over idle scheduling rounds.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from analysim.inputs.validation import MAX_WEIGHT, bounded, weight_map
from analysim.policies.registry import Policy, Registry

#: job status codes, shared by the engine and the views policies see
PENDING, WAITING, RUNNING, DONE, UNSCHEDULABLE = 0, 1, 2, 3, 4
#: a job that failed for good (with failures configured: ``docs/failures.md``)
FAILED = 5
STATUS_NAMES = ("pending", "waiting", "running", "done", "unschedulable", "failed")


class _lazy:  # noqa: N801 - used as a decorator, like functools.cached_property
    """A cached attribute without ``functools.cached_property``'s lock (this is a hot path)."""

    def __init__(self, compute: Any) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        value = self.compute(obj)
        obj.__dict__[self.name] = value
        return value


class JobView:
    """Read-only arrays describing the active (waiting or running) jobs at time ``now``.

    Times are seconds; ``attained`` is GPU-seconds of service received, ``executed`` seconds
    run, ``remaining`` work still to do (seconds at rate 1; a job of an application runs at
    its ``rate``, ``docs/performance.md``); ``since`` is when the job last started, stopped
    or was submitted; ``vc`` indexes ``vc_used``, the GPUs each VC holds now. Arrays are
    built on first use from the engine's per-job ``columns``, so a policy pays only for what
    it reads.
    """

    def __init__(
        self,
        now: float,
        index: np.ndarray,
        columns: Mapping[str, np.ndarray],
        vc_used: Sequence[int] | np.ndarray,
    ) -> None:
        self.now = now
        self.index = index
        self._vc_used = vc_used
        self._columns = columns

    @_lazy
    def vc_used(self) -> np.ndarray:
        return np.asarray(self._vc_used)

    @classmethod
    def from_arrays(cls, now: float, vc_used: np.ndarray | None = None, **arrays: Any) -> JobView:
        """A view over jobs given directly as arrays (for tests and notebooks)."""
        columns = {k: np.asarray(v) for k, v in arrays.items()}
        n = len(next(iter(columns.values())))
        columns.setdefault("status", np.full(n, WAITING))
        used = np.zeros(int(columns["vc"].max()) + 1) if vc_used is None else vc_used
        return cls(now, np.arange(n), columns, used)

    def __len__(self) -> int:
        return len(self.index)

    def _take(self, name: str) -> np.ndarray:
        return self._columns[name][self.index]

    @_lazy
    def num_gpus(self) -> np.ndarray:
        return self._take("num_gpus")

    @_lazy
    def submit_time(self) -> np.ndarray:
        return self._take("submit_time")

    @_lazy
    def duration(self) -> np.ndarray:
        return self._take("duration")

    @_lazy
    def vc(self) -> np.ndarray:
        return self._take("vc")

    @_lazy
    def priority(self) -> np.ndarray:
        return self._take("priority")

    @_lazy
    def since(self) -> np.ndarray:
        return self._take("since")

    @_lazy
    def running(self) -> np.ndarray:
        return self._take("status") == RUNNING

    @_lazy
    def _elapsed(self) -> np.ndarray:
        return np.where(self.running, self.now - self.since, 0.0)

    @_lazy
    def remaining(self) -> np.ndarray:
        return self._take("remaining") - self._elapsed * self.rate

    @_lazy
    def rate(self) -> np.ndarray:
        """Each job's rate where it runs or last ran (1.0 without a performance model)."""
        if "rate" not in self._columns:
            return np.ones(len(self.index))
        return self._take("rate")

    @_lazy
    def attained(self) -> np.ndarray:
        return self._take("attained") + self._elapsed * self.num_gpus

    @_lazy
    def executed(self) -> np.ndarray:
        return self._take("executed") + self._elapsed


class Scheduler(Policy):
    """Base class: rank active jobs. Subclasses set ``name`` through the registry."""

    name: ClassVar[str] = "scheduler"
    #: whether the ranking can change with time alone (then ``next_change`` says when)
    dynamic: ClassVar[bool] = False
    #: whether a round's own starts and evictions never move a waiting job ahead of another
    #: (then a round that stopped at a job need not be repeated before something happens)
    round_stable: ClassVar[bool] = False
    #: whether a newly arrived job can never make the ranking change sooner than
    #: ``next_change`` said without it (the engine then need not ask again after arrivals)
    arrivals_keep_next_change: ClassVar[bool] = False
    #: whether the keys depend only on fixed job attributes (submit time, duration, ...):
    #: the engine then ranks every job once, up front
    static: ClassVar[bool] = False
    #: whether the order of the active jobs (waiting and running together) changes only
    #: when jobs arrive, through service resets, or at the times ``next_change`` gives,
    #: never because a job starts, stops or is evicted: the engine then keeps a group's
    #: ranking until one of those happens
    ranking_kept: ClassVar[bool] = False
    #: the optional workload columns the ranking reads: a workload without one of them is
    #: refused where the simulation's arguments are checked (``analysim/inputs/arguments.py``)
    columns: ClassVar[tuple[str, ...]] = ()

    def bind(self, vcs: Sequence[str], capacity: np.ndarray) -> None:
        """Called once when a simulation starts with the VC names and GPUs each may use."""

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        raise NotImplementedError

    def service_resets(self, jobs: JobView) -> np.ndarray | None:
        """Jobs whose attained service the engine should reset to 0 before ranking (a
        starvation guard's promotion), as a boolean mask; ``None`` for none."""
        return None

    def next_change(self, jobs: JobView) -> float:
        """Earliest time the ranking may change without an arrival or completion."""
        return math.inf


SCHEDULERS: Registry[Scheduler] = Registry("scheduler", Scheduler)


@SCHEDULERS.register("fifo")
class FIFO(Scheduler):
    """First in, first out: submit order (ties by job order)."""

    static = True

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.submit_time,)


@SCHEDULERS.register("sjf")
class SJF(Scheduler):
    """Shortest job first, by the job's true duration (an oracle)."""

    static = True

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.duration,)


@SCHEDULERS.register("srtf")
class SRTF(Scheduler):
    """Shortest remaining time first (an oracle).

    A running job's remaining time only falls while a waiting job's stays, so without an
    arrival or completion no waiting job can overtake a running one: ``next_change`` is never.
    An evicted job's remaining time grows by its cost, so it cannot overtake a waiting job.
    """

    round_stable = True

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.remaining,)


@SCHEDULERS.register("priority")
class Priority(Scheduler):
    """The workload's ``priority`` column, lower first, then submit order (a workload
    without the column is refused)."""

    static = True
    columns = ("priority",)

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.priority, jobs.submit_time)


@SCHEDULERS.register("las")
class LAS(Scheduler):
    """Tiresias-style discretised two-dimensional least attained service.

    ``thresholds``: the queue limits in **GPU-seconds** of attained service (GPUs held x
    seconds run), increasing; the default ``[18000]`` (5 GPU-hours) makes two queues.
    Jobs sit in queues by attained GPU-seconds (``thresholds`` split the queues), in submit
    order within a queue. Starvation guard: a waiting job that has waited
    ``starvation_factor`` times as long as it has run, since it last ran, is promoted to the
    top queue by having its attained service reset to 0 (as in Tiresias), so it keeps the top
    queue until it has received a threshold's worth of service again (``None`` turns the
    guard off).
    """

    dynamic = True
    # a new job has no service: it sits in the top queue and is not due a promotion
    arrivals_keep_next_change = True
    round_stable = True  # an evicted job keeps its attained service, so its queue
    ranking_kept = True  # a queue changes only at next_change; ties go to submit order

    def __init__(
        self, thresholds: Sequence[float] = (18_000.0,), starvation_factor: float | None = 4.0
    ) -> None:
        if isinstance(thresholds, (str, bytes)) or not isinstance(thresholds, Iterable):
            raise ValueError(f"las: thresholds must be a list of GPU-seconds, got {thresholds!r}")
        thresholds = [
            bounded(t, f"las: thresholds[{i}] (GPU-seconds)", low=0.0, high=1e18, low_open=True)
            for i, t in enumerate(thresholds)
        ]
        if thresholds != sorted(set(thresholds)):
            raise ValueError(f"las: thresholds must be increasing and > 0, got {thresholds}")
        if starvation_factor is not None:
            bounded(
                starvation_factor, "las: starvation_factor", low=0.0, high=MAX_WEIGHT, low_open=True
            )
        self.thresholds = thresholds
        self.starvation_factor = starvation_factor
        self._limit_list = [*thresholds, math.inf]
        self._limits = np.array(self._limit_list)

    @property
    def limits(self) -> list[float]:
        """The upper bound of each queue's attained service (the last is infinite)."""
        return self._limit_list

    # -- LAS's rules, each in one place: the array methods below and the engine's job-by-job
    # -- ranking (analysim.engine.las_ranking) both call them, on arrays or on floats
    def queue_of(self, attained: float) -> int:
        """The queue of a job that has attained ``attained`` GPU-seconds: how many thresholds
        it has reached (0 is served first). :meth:`queue` is the same count over arrays."""
        return bisect_right(self._limit_list, attained)

    @staticmethod
    def time_to_limit(limit: Any, attained: Any, gpus: Any) -> Any:
        """Seconds until a running job on ``gpus`` GPUs with ``attained`` GPU-seconds reaches
        its queue's ``limit`` (never for a job without GPUs: a CPU-only job of resource mode)."""
        if isinstance(gpus, np.ndarray):
            out = np.full(np.broadcast(limit, attained, gpus).shape, math.inf)
            return np.divide(limit - attained, gpus, out=out, where=gpus > 0)
        return (limit - attained) / gpus if gpus else math.inf

    def promotion_due(self, since: Any, executed: Any) -> Any:
        """When a waiting job out of the top queue, which last stopped at ``since`` after
        running ``executed`` seconds in all, is due a promotion."""
        return since + self.starvation_factor * executed

    def starving(self, waited: Any, executed: Any) -> Any:
        """Whether a waiting job out of the top queue that has waited ``waited`` seconds
        since it last ran (``executed`` seconds in all) is due a promotion now."""
        return waited >= self.starvation_factor * executed - 1e-9

    def queue(self, jobs: JobView) -> np.ndarray:
        """The queue index of each active job (0 is served first): :meth:`queue_of`."""
        return self._limits.searchsorted(jobs.attained, side="right")

    def service_resets(self, jobs: JobView) -> np.ndarray | None:
        if self.starvation_factor is None:
            return None
        waited = jobs.now - jobs.since
        out_of_top = ~jobs.running & (self.queue(jobs) > 0)
        return out_of_top & self.starving(waited, jobs.executed)

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (self.queue(jobs),)  # within a queue, ties go to submit order

    def next_change(self, jobs: JobView) -> float:
        soonest = math.inf
        attained, run = jobs.attained, jobs.running
        queue = self._limits.searchsorted(attained, side="right")
        if run.any():
            # a running job crosses into the next queue when attained reaches its queue's limit
            left = self.time_to_limit(self._limits[queue], attained, jobs.num_gpus)
            soonest = jobs.now + float(left[run].min())
        if self.starvation_factor is not None:
            waiting = ~run & (queue > 0)
            if waiting.any():
                due = self.promotion_due(jobs.since[waiting], jobs.executed[waiting])
                due = due[due > jobs.now]
                if due.size:
                    soonest = min(soonest, float(due.min()))
        return soonest


@SCHEDULERS.register("fair")
class FairShare(Scheduler):
    """Weighted fair share of GPUs across VCs (progressive filling).

    Within a VC, running jobs come first, then waiting jobs in submit order; each job's key
    is the VC's GPUs up to and including that job (counting running jobs not in the view, as
    ``vc_used`` shows) divided by the VC's share, so the VC
    furthest below its share is served next. A VC's share is its capacity (owned GPUs or
    quota; every VC alike on an unpartitioned cluster), unless ``weights`` gives it.
    """

    def __init__(self, weights: dict[str, float] | None = None) -> None:
        if weights is not None:
            weight_map(weights, "fair: weights")
        self.weights = weights
        self._share = np.ones(0)

    def bind(self, vcs: Sequence[str], capacity: np.ndarray) -> None:
        share = np.where(capacity > 0, capacity, 1.0).astype(float)
        if self.weights is not None:
            unknown = sorted(set(self.weights) - set(vcs))
            if unknown:
                raise ValueError(f"fair: weights name unknown VC(s) {unknown}; VCs are {list(vcs)}")
            share = np.array([self.weights.get(vc, 1.0) for vc in vcs], dtype=float)
        self._share = share

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        order = np.lexsort((jobs.index, jobs.submit_time, ~jobs.running, jobs.vc))
        gpus = jobs.num_gpus[order].astype(float)
        vc = jobs.vc[order]
        total = np.cumsum(gpus)
        starts = np.flatnonzero(np.r_[True, vc[1:] != vc[:-1]])
        offset = np.repeat(total[starts] - gpus[starts], np.diff(np.r_[starts, len(vc)]))
        in_view = np.bincount(
            jobs.vc[jobs.running], weights=jobs.num_gpus[jobs.running], minlength=len(jobs.vc_used)
        )
        base = jobs.vc_used - in_view
        key = np.empty(len(order))
        key[order] = (base[vc] + total - offset) / self._share[vc]
        return (key, jobs.submit_time)
