"""The jobs' lines: :class:`Arrivals`, the jobs still to arrive, and :class:`Queues`, the
waiting and running jobs of each group with the counters that follow from them.

The simulation owns one of each (``Simulation.arrivals``, ``Simulation.queues``) and changes
them in its state changes; the rounds, the tenancy and the timeline samples read them.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from analysim.engine.clock import EPS

if TYPE_CHECKING:
    from analysim.engine.jobs import JobFacts, JobTable


class Arrivals:
    """The jobs of ``table`` still to arrive, in submit order, less those that never arrive
    (unschedulable)."""

    def __init__(self, table: JobTable) -> None:
        self.n = table.n
        #: index of the next job to arrive (jobs are in submit order)
        self.next = 0
        #: each job's arrival step, as a Python list: read one item at a time at every step
        self.times = table.arrival.tolist()
        self._unschedulable = table.unschedulable.tolist()

    @property
    def over(self) -> bool:
        """Whether every job has arrived."""
        return self.next >= self.n

    def next_time(self) -> float | None:
        """The step at which the next job arrives (None: none left)."""
        return self.times[self.next] if self.next < self.n else None

    def due(self, t: float) -> list[int]:
        """The schedulable jobs arriving by step ``t``, in order; they have arrived."""
        arrived: list[int] = []
        arrival, unschedulable, n = self.times, self._unschedulable, self.n
        while self.next < n and arrival[self.next] <= t + EPS:
            j = self.next
            self.next += 1
            if not unschedulable[j]:
                arrived.append(j)
        while self.next < n and unschedulable[self.next]:  # (skip_unschedulable, inline)
            self.next += 1
        return arrived

    def skip_unschedulable(self) -> None:
        """Move past jobs that never arrive (they are unschedulable)."""
        while self.next < self.n and self._unschedulable[self.next]:
            self.next += 1


class Queues:
    """Per group, the waiting and running jobs (insertion-ordered sets), and the counters of
    the waiting: in all, per group, per VC (jobs and GPUs asked for) and per domain and GPU
    count (what fragmentation is measured against)."""

    def __init__(self, groups: int, vcs: int, domains: int, facts: JobFacts) -> None:
        self._vc, self._group, self._gpus = facts.vc, facts.group, facts.gpus
        self.waiting: list[dict[int, None]] = [{} for _ in range(groups)]
        self.running: list[dict[int, None]] = [{} for _ in range(groups)]
        self.n_waiting = 0
        self.group_waiting = [0] * groups
        # per VC counters of the waiting jobs, as Python lists: the hot loop updates them
        self.vc_waiting_jobs = [0] * vcs
        self.vc_waiting_gpus = [0] * vcs
        # waiting jobs per domain and GPU count (a bucket per distinct count): fragmentation
        self.size_buckets = sorted(set(self._gpus))
        bucket_of = {size: k for k, size in enumerate(self.size_buckets)}
        # a flat array (domain-major; not tracked by the garbage collector, and cheap to copy)
        self.waiting_counts = array("q", bytes(8 * domains * len(bucket_of)))
        self._count_slot = [
            d * len(bucket_of) + bucket_of[size]
            for d, size in zip(facts.domain_index, self._gpus, strict=True)
        ]

    def add(self, j: int) -> None:
        """``j`` waits."""
        vc, group = self._vc[j], self._group[j]
        self.waiting[group][j] = None
        self.n_waiting += 1
        self.group_waiting[group] += 1
        self.vc_waiting_jobs[vc] += 1
        self.vc_waiting_gpus[vc] += self._gpus[j]
        self.waiting_counts[self._count_slot[j]] += 1

    def remove(self, j: int) -> None:
        """``j`` stops waiting."""
        vc, group = self._vc[j], self._group[j]
        del self.waiting[group][j]
        self.n_waiting -= 1
        self.group_waiting[group] -= 1
        self.vc_waiting_jobs[vc] -= 1
        self.vc_waiting_gpus[vc] -= self._gpus[j]
        self.waiting_counts[self._count_slot[j]] -= 1


__all__ = ["Arrivals", "Queues"]
