"""LAS's ranking kept job by job, for the engine's hot loop.

:class:`~analysim.policies.scheduling.LAS` ranks, promotes and bounds its ranking through
:class:`~analysim.policies.scheduling.JobView` arrays: simple, and the rule custom schedulers
follow, but each round pays for arrays over all of a group's active jobs. When a simulation's
scheduler keeps LAS's own rules (:func:`keeps_las_rules`), the engine asks this class instead.
It gives the same answers from state kept per job:

* per group, sorted lists of the ``queue * n_jobs + job`` keys of its waiting jobs and of
  its running jobs (LAS's order: queue, then job), handed to the rounds as a
  :class:`KeyedOrder`;
* a heap per group of the times running jobs reach their queue's limit;
* a heap per group of the times waiting jobs are due a promotion (the starvation guard).

Each answer applies LAS's own rule methods (``queue_of``, ``time_to_limit``, ``promotion_due``,
``starving``: the code its array methods call too) to the few jobs at the top of a heap, so the
values are the very floats the array code gives (``tests/test_fast_paths.py`` runs both).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from analysim.policies.scheduling import LAS, RUNNING, WAITING, Scheduler

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

#: how far (seconds) past a heap entry's time the exact expression is also evaluated: far
#: above float noise, so no job whose exact time is the smallest can be missed
_SLACK = 1.0

_RULES = (
    "priority",
    "next_change",
    "service_resets",
    "queue",
    "queue_of",
    "time_to_limit",
    "promotion_due",
    "starving",
)


def keeps_las_rules(scheduler: Scheduler) -> bool:
    """Whether ``scheduler`` is LAS with its ranking, promotions and bound unchanged."""
    cls = type(scheduler)
    return isinstance(scheduler, LAS) and all(getattr(cls, m) is getattr(LAS, m) for m in _RULES)


class KeyedOrder:
    """A group's active jobs in LAS's order, as the sorted keys (``queue * n + job``) of its
    waiting jobs and of its running jobs: a :class:`~analysim.engine.ranking.Ranking` whose
    positions are the keys. The lists follow starts and evictions live (a job keeps its
    key), so they always hold exactly the group's waiting and running jobs."""

    __slots__ = ("waiting", "running", "n")

    def __init__(self, n: int) -> None:
        self.waiting: list[int] = []
        self.running: list[int] = []
        self.n = n

    def waiting_from(self, key: int) -> Iterator[tuple[int, int]]:
        """(key, job) of the jobs waiting now from ``key`` on, in order (read lazily from a
        copy: jobs that come to wait later are not among them)."""
        n, waiting = self.n, self.waiting
        return ((k, k % n) for k in waiting[bisect_left(waiting, key) :])

    def running_below(self, key: int) -> list[int]:
        """The running jobs ranked below ``key``, lowest-ranked first."""
        n, running = self.n, self.running
        return [k % n for k in reversed(running[bisect_right(running, key) :])]

    def first_waiting(self) -> int | None:
        """The key of the highest-ranked waiting job; None if none waits."""
        return self.waiting[0] if self.waiting else None

    def lowest_running(self, test: Callable[[int], bool]) -> int | None:
        """The key of the lowest-ranked running job for which ``test(job)`` holds; None if
        there is none."""
        n = self.n
        for k in reversed(self.running):
            if test(k % n):
                return k
        return None

    def jobs(self) -> np.ndarray:
        """All the jobs, in order."""
        return np.array(sorted(self.waiting + self.running), dtype=np.int64) % self.n


class LASRanking:
    """Per group: the active jobs in LAS's order, when it next changes, who is promoted."""

    def __init__(self, sim: Simulation, scheduler: LAS, groups: int) -> None:
        self.sim = sim
        # per job: its group and GPUs (fixed), and its run's version (the engine bumps it)
        self._group, self._gpus, self._versions = (
            sim.facts.group,
            sim.facts.gpus,
            sim.job_state.versions,
        )
        self.las = scheduler  # its rules: queue_of, time_to_limit, promotion_due, starving
        self.limits = scheduler.limits  # upper bound of each queue
        self.factor = scheduler.starvation_factor
        self.n = max(sim.n_jobs, 1)
        self.queue_of = [0] * sim.n_jobs  # as last ranked
        self.orders = [KeyedOrder(self.n) for _ in range(groups)]
        self.crossings: list[list[tuple[float, int, int]]] = [[] for _ in range(groups)]
        self.dues: list[list[tuple[float, int, int]]] = [[] for _ in range(groups)]
        self.dirty: list[set[int]] = [set() for _ in range(groups)]  # queue to recompute

    # -- what the engine tells it -----------------------------------------------------------
    def arrived(self, j: int) -> None:
        """``j`` arrived: it waits in the top queue (no service yet)."""
        self.queue_of[j] = 0
        insort(self.orders[self._group[j]].waiting, j)

    def ran(self, j: int) -> None:
        """``j`` (re)started or migrated: note when it will reach its queue's limit."""
        group = self._group[j]
        order, key = self.orders[group], self.queue_of[j] * self.n + j
        waiting = order.waiting
        i = bisect_left(waiting, key)
        if i < len(waiting) and waiting[i] == key:  # it started
            del waiting[i]
            insort(order.running, key)
        else:  # it migrated: it may have passed a limit whose entry is now out of date
            self.dirty[group].add(j)
        # (``_left``, inline: it runs from now, so its service is that attained by now)
        sim, las, gpus = self.sim, self.las, self._gpus[j]
        state, now = sim.job_state, sim.clock.now
        attained = state.attained.item(j) + (now - state.since.item(j)) * gpus
        left = las.time_to_limit(self.limits[las.queue_of(attained)], attained, gpus)
        if left < math.inf:
            heapq.heappush(self.crossings[group], (now + left, j, self._versions[j]))

    def stopped(self, j: int) -> None:
        """``j`` was evicted and waits: note when it is due a promotion, if ever."""
        group = self._group[j]
        order, key = self.orders[group], self.queue_of[j] * self.n + j
        running = order.running
        del running[bisect_left(running, key)]
        insort(order.waiting, key)
        self.dirty[group].add(j)
        if self.factor is not None:
            state = self.sim.job_state
            if self.las.queue_of(state.attained.item(j)) > 0:
                due = self.las.promotion_due(state.since.item(j), state.executed.item(j))
                heapq.heappush(self.dues[group], (due, j, self._versions[j]))

    def finished(self, j: int) -> None:
        """``j`` finished: it leaves the ranking."""
        group = self._group[j]
        running = self.orders[group].running
        del running[bisect_left(running, self.queue_of[j] * self.n + j)]
        self.dirty[group].discard(j)

    # -- what the engine asks -----------------------------------------------------------------
    def order(self, group: int) -> KeyedOrder:
        """The group's active jobs in LAS's order now (what ``Rounds._rank(group,
        include_running=True)`` gives): by queue of the service attained by now, then by
        job. Queues change only here, as a new ranking would change them."""
        now, crossings, dirty = self.sim.clock.now, self.crossings[group], self.dirty[group]
        near = []
        while crossings and crossings[0][0] <= now + _SLACK:  # may have reached a limit
            entry = heapq.heappop(crossings)
            if self._running(entry):
                near.append(entry)
                dirty.add(entry[1])
        for j in dirty:
            self._requeue(j, group)
        dirty.clear()
        for entry in near:  # a job that passed a limit: when it reaches the next one
            t, j, version = entry
            renewed = now + self._left(j)
            if renewed > t + _SLACK:
                entry = (renewed, j, version)
            if entry[0] < math.inf:
                heapq.heappush(crossings, entry)
        return self.orders[group]

    def next_change(self, group: int) -> float:
        """``LAS.next_change`` over the group's active jobs now (the same float)."""
        return min(self._next_crossing(group), self._next_due(group))

    def promotions(self, group: int) -> list[int]:
        """The waiting jobs ``LAS.service_resets`` promotes now."""
        if self.factor is None:
            return []
        sim, now, starving = self.sim, self.sim.clock.now, self.las.starving
        dues, promoted, again = self.dues[group], [], []
        while dues and dues[0][0] <= now + _SLACK:
            entry = heapq.heappop(dues)
            if not self._starving(entry):
                continue
            j = entry[1]
            if starving(now - float(sim.job_state.since[j]), float(sim.job_state.executed[j])):
                promoted.append(j)
                self.dirty[group].add(j)
            else:
                again.append(entry)
        for entry in again:
            heapq.heappush(dues, entry)
        return promoted

    # -- helpers --------------------------------------------------------------------------
    def _left(self, j: int) -> float:
        """Seconds until running job ``j`` reaches its present queue's limit (LAS's rule, on
        the service attained by now as ``JobView.attained`` counts it)."""
        state = self.sim.job_state
        gpus = self._gpus[j]
        attained = state.attained.item(j) + (self.sim.clock.now - state.since.item(j)) * gpus
        las = self.las
        return las.time_to_limit(self.limits[las.queue_of(attained)], attained, gpus)

    def _running(self, entry: tuple[float, int, int]) -> bool:
        """Whether a crossing entry belongs to the job's present run."""
        j = entry[1]
        return entry[2] == self._versions[j] and self.sim.job_state.status.item(j) == RUNNING

    def _starving(self, entry: tuple[float, int, int]) -> bool:
        """Whether a due entry still belongs to a waiting job out of the top queue."""
        _, j, version = entry
        state = self.sim.job_state
        return (
            version == self._versions[j]
            and state.status.item(j) == WAITING
            and self.las.queue_of(state.attained.item(j)) > 0
        )

    def _next_crossing(self, group: int) -> float:
        """The earliest time a running job reaches its queue's limit. Entries are exact up
        to float noise unless the job passed a limit since (its entry is then early): the
        entries near the top are evaluated exactly, and any found early are renewed."""
        now, crossings = self.sim.clock.now, self.crossings[group]
        while True:
            while crossings and not self._running(crossings[0]):
                heapq.heappop(crossings)
            if not crossings:
                return math.inf
            t, j, _ = crossings[0]
            size, near_by = len(crossings), t + _SLACK
            if (size < 2 or crossings[1][0] > near_by) and (size < 3 or crossings[2][0] > near_by):
                left = self._left(j)  # the top alone is near (the usual case)
                if now + left <= t + _SLACK:
                    return now + left
            near = [e for e in _near_top(crossings) if self._running(e)]
            lefts = [self._left(e[1]) for e in near]
            early = [
                (e, now + left)
                for e, left in zip(near, lefts, strict=True)
                if now + left > e[0] + _SLACK
            ]
            if not early:
                return now + min(lefts)
            for e, _ in early:
                self.dirty[group].add(e[1])  # its queue changes at the next ranking
            stale = {e for e, _ in early}
            crossings[:] = [e for e in crossings if e not in stale]
            crossings += [(t, e[1], e[2]) for e, t in early if t < math.inf]
            heapq.heapify(crossings)

    def _next_due(self, group: int) -> float:
        """The earliest promotion due after now (LAS counts none due already)."""
        now, dues = self.sim.clock.now, self.dues[group]
        while dues and not self._starving(dues[0]):
            heapq.heappop(dues)
        if not dues:
            return math.inf
        if dues[0][0] > now:
            return dues[0][0]
        return min((e[0] for e in dues if e[0] > now and self._starving(e)), default=math.inf)

    def _requeue(self, j: int, group: int) -> None:
        """Move active ``j`` to the queue its attained service gives now."""
        sim = self.sim
        status = sim.job_state.status[j]
        if status != RUNNING and status != WAITING:
            return
        attained = float(sim.job_state.attained[j])
        if status == RUNNING:
            attained += (sim.clock.now - float(sim.job_state.since[j])) * self._gpus[j]
        queue = self.las.queue_of(attained)
        old = self.queue_of[j]
        if queue != old:
            order = self.orders[group]
            keys = order.running if status == RUNNING else order.waiting
            del keys[bisect_left(keys, old * self.n + j)]
            self.queue_of[j] = queue
            insort(keys, queue * self.n + j)


def _near_top(heap: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
    """The entries of a non-empty heap within ``_SLACK`` of its top: a walk down from the
    root that stops below any entry beyond (all below it are later still)."""
    limit, size = heap[0][0] + _SLACK, len(heap)
    near, stack = [], [0]
    while stack:
        i = stack.pop()
        if heap[i][0] <= limit:
            near.append(heap[i])
            stack.extend(c for c in (2 * i + 1, 2 * i + 2) if c < size)
    return near
