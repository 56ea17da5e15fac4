"""What a waiting job could free by evicting, at a glance (a shortcut of the rounds).

In a preemptive round a waiting job that does not fit may evict running jobs ranked below
it whose protection has ended. Evicting them can give it no more GPUs than they hold; so a
job that asks for more GPUs than its group has free plus all those they hold fails its
trial evictions, whatever the placer says, and its start too (more than the group has free:
``full``). :class:`EvictableBelow` counts, for LAS's kept ranking
(:class:`~analysim.engine.las_ranking.KeyedOrder`) at one moment of a round, the GPUs held
by the evictable running jobs below any position, and tells whether a protected one is below
it (the reason the records give). ``Shortcuts.evictions_at_a_glance``; ``docs/semantics.md``.

It also finds the run of waiting jobs after one answered so that the same glance answers
alike (:meth:`EvictableBelow.run_after`, ``Shortcuts.glance_runs``): the rounds record them
at once.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from analysim.engine.las_ranking import KeyedOrder


class EvictableBelow:
    """The running jobs of a :class:`KeyedOrder` as they are now (a copy: told of each job
    that starts, made again once one stops or a protection ends), with each one's GPUs if
    its protection has ended by ``now`` (``evictable_from <= now``)."""

    __slots__ = (
        "keys",
        "held_from",
        "lowest_protected",
        "_n",
        "_gpus",
        "_from",
        "_now",
        "_of",
        "_until",
        "_releases",
    )

    def __init__(
        self,
        order: KeyedOrder,
        gpus: list[int],
        evictable_from: np.ndarray,
        now: float,
        of_jobs: tuple[list[int], list[int]] = ([], []),
        releases: int = -1,
    ) -> None:
        """``of_jobs``: per job, its GPUs if a glance may answer it (else -1) and its queue
        (read by :meth:`run_after`); ``releases``: the group's count of releases now (read
        by :meth:`holds`)."""
        n = self._n = order.n
        self._gpus, self._from, self._now, self._of = gpus, evictable_from, now, of_jobs
        keys = list(order.running)
        held_from = [0] * (len(keys) + 1)  # GPUs of the evictable jobs from each index on
        total, lowest_protected, until = 0, -1, math.inf
        for i in range(len(keys) - 1, -1, -1):
            r = keys[i] % n
            t = evictable_from.item(r)
            if t <= now:
                total += gpus[r]
            else:
                if lowest_protected < 0:
                    lowest_protected = keys[i]
                if t < until:
                    until = t
            held_from[i] = total
        #: the running jobs' keys, in order, and the GPUs of the evictable ones from each
        #: index on (the rounds' hot loop reads them as :meth:`gpus_below` does)
        self.keys, self.held_from = keys, held_from
        #: the key of the lowest-ranked protected running job (-1: none)
        self.lowest_protected = lowest_protected
        # the earliest end of a protection, and the releases counted
        self._until, self._releases = until, releases

    def holds(self, order: KeyedOrder, releases: int, now: float) -> bool:
        """Whether the counts hold at ``now`` (then taken as of ``now``): no job of the
        group released GPUs since (``releases`` is the count it was made at), none started
        but those it was told of and no running job moved in the order (the order's running
        keys are its keys), and no protection has ended by ``now``."""
        if releases == self._releases and now < self._until and self.keys == order.running:
            self._now = now
            return True
        return False

    def gpus_below(self, key: int) -> int:
        """The GPUs held by the evictable running jobs ranked below ``key``."""
        return self.held_from[bisect_right(self.keys, key)]

    def protected_below(self, key: int) -> bool:
        """Whether a running job ranked below ``key`` is still protected."""
        return self.lowest_protected > key

    def started(self, key: int) -> None:
        """The waiting job of ``key`` started (it runs at its key, as the order keeps it):
        counted as a rebuild would count it."""
        i = bisect_left(self.keys, key)
        self.keys.insert(i, key)
        held_from, r = self.held_from, key % self._n
        if self._from.item(r) <= self._now:  # (no protection: evictable at once)
            gpus = self._gpus[r]
            for t in range(i + 1):
                held_from[t] += gpus
            held_from.insert(i + 1, held_from[i] - gpus)
        else:
            held_from.insert(i, held_from[i])
            if key > self.lowest_protected:
                self.lowest_protected = key
            self._until = min(self._until, self._from.item(r))

    def run_after(
        self,
        waiting: list[int],
        key: int,
        room: int,
        reserved: set[int] | None,
    ) -> tuple[list[int], int]:
        """The jobs waiting right after ``key`` (in ``waiting``, the order's waiting keys)
        whose glance gives the answer of the job at ``key`` (which it answered), and the key
        to read on from: each asks for more GPUs than ``room`` plus those the evictable jobs
        below it hold, none is ranked below the lowest protected running job unless that
        job is below ``key`` too (the reason stays), and, with ``reserved``, its queue has
        its reservation (it makes none). Read a run of jobs at a time between running jobs,
        where the GPUs below stay the same."""
        keys, held_from, n = self.keys, self.held_from, self._n
        need_of, queue_of = self._of
        lowest, last = self.lowest_protected, len(keys)
        end = bisect_left(waiting, lowest) if lowest > key else len(waiting)
        first = at = bisect_right(waiting, key)
        seg = bisect_right(keys, key)
        bound, threshold = keys[seg] if seg < last else math.inf, room + held_from[seg]
        run: list[int] = []
        while at < end:  # (plain Python: few running jobs lie between waiting ones)
            k = waiting[at]
            if k > bound:  # past a running job: fewer GPUs below
                seg = bisect_right(keys, k, seg)
                bound, threshold = keys[seg] if seg < last else math.inf, room + held_from[seg]
            r = k % n
            if need_of[r] <= threshold or (reserved is not None and queue_of[r] not in reserved):
                break
            run.append(r)
            at += 1
        return run, (waiting[at - 1] + 1 if at > first else key + 1)


class Belows:
    """Per group, the last :class:`EvictableBelow` counted, kept while it holds (asked of
    the rounds' first glance in a round, and after an eviction)."""

    def __init__(
        self,
        groups: int,
        gpus: list[int],
        evictable_from: np.ndarray,
        of_jobs: tuple[list[int], list[int]],
        releases: list[int],
    ) -> None:
        """``releases``: per group, the rounds' count of releases (read here); the rest as
        :class:`EvictableBelow` takes them."""
        self._kept: list[EvictableBelow | None] = [None] * groups
        self._gpus, self._from, self._of, self._releases = (
            gpus,
            evictable_from,
            of_jobs,
            releases,
        )

    def of(self, order: KeyedOrder, group: int, now: float) -> EvictableBelow:
        """The counts of ``group``'s running jobs in ``order`` at ``now``: the last ones
        if they hold, else counted afresh."""
        kept, releases = self._kept[group], self._releases[group]
        if kept is None or not kept.holds(order, releases, now):
            kept = EvictableBelow(order, self._gpus, self._from, now, self._of, releases)
            self._kept[group] = kept
        return kept
