"""What a waiting job could free by evicting, at a glance (a shortcut of the rounds).

In a preemptive round a waiting job that does not fit may evict running jobs ranked below
it whose protection has ended. Evicting them can give it no more GPUs than they hold; so a
job that asks for more GPUs than its group has free plus all those they hold fails its
trial evictions, whatever the placer says, and its start too (more than the group has free:
``full``). :class:`EvictableBelow` counts, for LAS's kept ranking
(:class:`~analysim.engine.las_ranking.KeyedOrder`) at one moment of a round, the GPUs held
by the evictable running jobs below any position, and tells whether a protected one is below
it (the reason the records give). ``Shortcuts.evictions_at_a_glance``; ``docs/semantics.md``.

:class:`WaitingBySize` finds, from the waiting jobs indexed by the GPUs they ask, where the
next job that may not be seen full at a glance stands, so that a round records the stretch
of jobs before it at once (``Shortcuts.glance_runs``).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from analysim.engine.las_ranking import KeyedOrder


class EvictableBelow:
    """The running jobs of a :class:`KeyedOrder` as they are now (a copy: made again after
    anything starts or stops), with each one's GPUs if its protection has ended by
    ``now`` (``evictable_from <= now``)."""

    __slots__ = ("keys", "held_from", "lowest_protected")

    def __init__(
        self, order: KeyedOrder, gpus: list[int], evictable_from: np.ndarray, now: float
    ) -> None:
        n = order.n
        keys = list(order.running)
        held_from = [0] * (len(keys) + 1)  # GPUs of the evictable jobs from each index on
        total, lowest_protected = 0, -1
        for i in range(len(keys) - 1, -1, -1):
            r = keys[i] % n
            if evictable_from.item(r) <= now:
                total += gpus[r]
            elif lowest_protected < 0:
                lowest_protected = keys[i]
            held_from[i] = total
        #: the running jobs' keys, in order, and the GPUs of the evictable ones from each
        #: index on (the rounds' hot loop reads them as :meth:`gpus_below` does)
        self.keys, self.held_from = keys, held_from
        #: the key of the lowest-ranked protected running job (-1: none)
        self.lowest_protected = lowest_protected

    def gpus_below(self, key: int) -> int:
        """The GPUs held by the evictable running jobs ranked below ``key``."""
        return self.held_from[bisect_right(self.keys, key)]

    def protected_below(self, key: int) -> bool:
        """Whether a running job ranked below ``key`` is still protected."""
        return self.lowest_protected > key


class WaitingBySize:
    """A group's waiting jobs' positions (a static scheduler's ranks, or LAS's keys) by the
    GPUs they ask, each list sorted, the sizes in increasing order; kept as jobs come to
    wait and stop waiting (``Shortcuts.glance_runs``)."""

    __slots__ = ("lists",)

    def __init__(self) -> None:
        self.lists: dict[int, list[int]] = {}

    def add(self, gpus: int, pos: int) -> None:
        """The job at ``pos``, asking for ``gpus``, waits."""
        positions = self.lists.get(gpus)
        if positions is None:  # a size not seen before (rare): keep the sizes in order
            self.lists[gpus] = positions = []
            self.lists = dict(sorted(self.lists.items()))
        insort(positions, pos)

    def remove(self, gpus: int, pos: int) -> None:
        """The job at ``pos``, asking for ``gpus``, waits no more."""
        positions = self.lists[gpus]
        del positions[bisect_left(positions, pos)]

    def next_unglanced(self, after: int, free: int, below: EvictableBelow | None) -> float:
        """The first position after ``after`` of a waiting job that may not be seen full at
        a glance (``math.inf``: none), given the GPUs its group has ``free`` and, in a
        preemptive round, the GPUs held by the evictable running jobs ``below`` each
        position. A job is full at a glance when it asks for more than ``free`` plus
        (preemptive) those held below it; as its position grows, that bound only falls, so
        the first job of each size after ``after`` is the only one of its size to check,
        and no size above the bound just after ``after`` needs checking."""
        if below is None:
            bound = free
        else:
            bound = free + below.held_from[bisect_right(below.keys, after)]
        first = math.inf
        for gpus, positions in self.lists.items():
            if gpus > bound:
                break
            i = bisect_right(positions, after)
            if i == len(positions):
                continue
            pos = positions[i]
            if pos < first and (
                gpus <= free or gpus <= free + below.held_from[bisect_right(below.keys, pos)]
            ):
                first = pos
        return first
