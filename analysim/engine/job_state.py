"""``JobState``: per job, what changes as the simulation runs, with one owner.

The simulation makes one (``Simulation.job_state``) at set-up and changes it only through
its state changes (``start_running``, ``preempt``, ``migrate``, ``kill`` and a job's end);
the other parts read it (the rounds through their job views' ``columns``, the LAS ranking,
the failures, which also rewrite a stopped job's ``remaining``). Each array is indexed by
job; ``versions`` is a list (read one item at a time in hot loops).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.clock import EPS
from analysim.policies.scheduling import DONE, FAILED, PENDING, RUNNING, WAITING

if TYPE_CHECKING:
    from analysim.engine.speed import JobSpeed

#: how many stale entries the heap of the runs' ends may hold (at least) before they are dropped
_COMPACT_AT = 512


class JobState:
    """The changing per-job state: work left, rate, service, times, counts of restarts, the
    run versions and the heap of the runs' ends.

    ``duration`` and ``submit`` are the jobs' (fixed) work and submit times; ``cost`` and
    ``migration_cost`` what a resume after a preemption and a migration cost (seconds of
    work); ``speed`` each job's performance model.
    """

    def __init__(
        self,
        duration: np.ndarray,
        submit: np.ndarray,
        cost: np.ndarray,
        migration_cost: np.ndarray,
        speed: JobSpeed,
    ) -> None:
        n = len(duration)
        #: per job: the checkpoint/restore cost a preemption adds, and a migration's cost
        self.cost, self.migration_cost = cost, migration_cost
        #: work left (seconds at rate 1), including the restore costs still to pay
        self.remaining = duration.copy()
        #: each job's performance model (``engine/speed.py``) and its rate where it runs (or
        #: last ran): 1.0 for a job without an application, and before a job first starts
        self.speed = speed
        self.rate = np.ones(n)
        #: whether any job has an application (else every rate stays 1.0)
        self.rated = speed.in_use
        #: GPU-seconds of service, and seconds run, up to the last stop
        self.attained = np.zeros(n)
        self.executed = np.zeros(n)
        #: since when the job waits or runs (its submit time until it first starts)
        self.since = submit.copy()
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.first_start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.reclaims = np.zeros(n, dtype=np.int64)
        # a job that (re)starts may not be evicted before it has run one quantum past its
        # restore cost: every run then makes progress, so preemption cannot livelock
        self.evictable_from = np.zeros(n)
        #: per job, bumped at each start and preemption: stale heap entries differ (the LAS
        #: ranking reads it too)
        self.versions = [0] * n
        #: the runs' ends: (step, end, job, version); an entry of an older version is stale
        self.completions: list[tuple[float, float, int, int]] = []
        # the heap's size past which its stale entries are dropped all at once (most runs are
        # cut short by evictions: their entries would stay until their time comes)
        self._compact_at = _COMPACT_AT

    # -- the changes (the simulation calls them from its state changes) ----------------------
    def set_rate(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> None:
        """Job ``j`` is to run on ``counts`` GPUs of ``nodes``: its rate there (callers ask
        only when :attr:`rated`: else every rate stays 1.0)."""
        self.rate[j] = self.speed.rate(j, nodes, counts)

    def start(self, j: int, now: float, quantum: float) -> bool:
        """Job ``j`` (re)starts now; it may not be evicted before it has run ``quantum`` past
        its restore cost. Returns whether it resumes (it ran before)."""
        # (items read with ``item`` and written whole: numpy's scalar arithmetic is slow)
        resumed = self.versions[j] > 0
        if not resumed:
            self.first_start[j] = now
        self.status[j] = RUNNING
        self.since[j] = now
        self.evictable_from[j] = now + quantum + (self.cost.item(j) if resumed else 0.0)
        return resumed

    def new_run(self, j: int, now: float, due: Callable[[float], float]) -> None:
        """Job ``j`` runs from ``now``: a new version of its run (its older ends are stale)
        and its end, its remaining work at its rate (exact with rate 1.0: x / 1.0 is x),
        seen at step ``due(end)``."""
        version = self.versions[j] + 1
        self.versions[j] = version
        end = now + self.remaining.item(j) / self.rate.item(j)
        completions = self.completions
        heapq.heappush(completions, (due(end), end, j, version))
        if len(completions) > self._compact_at:
            self._drop_stale()

    def _drop_stale(self) -> None:
        """Drop the stale entries of the heap of the runs' ends (in place: the order in which
        the others come out is the same, no two entries being equal)."""
        versions = self.versions
        live = [e for e in self.completions if e[3] == versions[e[2]]]
        heapq.heapify(live)
        self.completions[:] = live
        self._compact_at = 2 * len(live) + _COMPACT_AT

    def stop(self, j: int, at: float, gpus: int) -> float:
        """Job ``j``'s run on ``gpus`` GPUs stops at ``at``: its service counts, its work
        left shrinks. Returns the seconds it ran."""
        since, executed, attained, remaining = (
            self.since,
            self.executed,
            self.attained,
            self.remaining,
        )
        elapsed = at - since.item(j)
        executed[j] = executed.item(j) + elapsed
        attained[j] = attained.item(j) + elapsed * gpus
        remaining[j] = remaining.item(j) - elapsed * self.rate.item(j)  # (x * 1.0 is x)
        since[j] = at
        return elapsed

    def evicted(self, j: int, reclaimed: bool) -> None:
        """Job ``j``, just stopped, was preempted (or its borrowed GPUs ``reclaimed``): it
        waits again and will pay its checkpoint/restore cost."""
        self.remaining[j] = self.remaining.item(j) + self.cost.item(j)
        counts = self.reclaims if reclaimed else self.preemptions
        counts[j] = counts.item(j) + 1
        self.versions[j] += 1
        self.status[j] = WAITING

    def moved(self, j: int) -> None:
        """Job ``j``, just stopped, migrates: it pays its migration cost."""
        self.remaining[j] += self.migration_cost[j]
        self.migrations[j] += 1

    def resized(self, j: int, cost: float) -> None:
        """Job ``j``, just stopped, is resized: it pays ``cost`` (seconds of work)."""
        self.remaining[j] += cost

    def killed(self, j: int, at: float, restart: bool) -> None:
        """Job ``j``, just stopped, was killed at ``at``: it waits to run again (``restart``)
        or ends failed."""
        self.versions[j] += 1
        if restart:
            self.status[j] = WAITING
        else:
            self.status[j] = FAILED
            self.end[j] = at

    def ends_due(self, t: float) -> Iterator[tuple[float, int]]:
        """The runs that end by step ``t`` (stale ends skipped): (end, job), soonest first;
        the caller stops each (then :meth:`finished`) before the next is read."""
        completions, versions = self.completions, self.versions
        while completions and completions[0][0] <= t + EPS:
            _, end, j, version = heapq.heappop(completions)
            if version == versions[j]:
                yield end, j

    def finished(self, j: int, end: float) -> None:
        """Job ``j``, just stopped, has done all its work at ``end``."""
        self.remaining[j] = 0.0
        self.end[j] = end
        self.status[j] = DONE

    def next_end(self) -> float | None:
        """The step of the soonest end of a run under way (stale entries dropped), or None."""
        completions, version = self.completions, self.versions
        while completions and completions[0][3] != version[completions[0][2]]:
            heapq.heappop(completions)  # the end of a run that was cut short: nothing happens
        return completions[0][0] if completions else None


__all__ = ["JobState"]
