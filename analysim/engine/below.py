"""What a waiting job could free by evicting, at a glance (a shortcut of the rounds).

In a preemptive round a waiting job that does not fit may evict running jobs ranked below
it whose protection has ended. Evicting them can give it no more GPUs than they hold; so a
job that asks for more GPUs than its group has free plus all those they hold fails its
trial evictions, whatever the placer says, and its start too (more than the group has free:
``full``). :class:`EvictableBelow` counts, for LAS's kept ranking
(:class:`~analysim.engine.las_ranking.KeyedOrder`) at one moment of a round, the GPUs held
by the evictable running jobs below any position, and tells whether a protected one is below
it (the reason the records give). ``Shortcuts.evictions_at_a_glance``; ``docs/semantics.md``.
"""

from __future__ import annotations

from bisect import bisect_right
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
