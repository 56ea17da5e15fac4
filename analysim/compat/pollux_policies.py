"""The Pollux artifact's Tiresias and Optimus policies, as its simulator runs them.

A policy is asked once per round, ``decide(now, active, allocations)``: ``active`` are the
jobs submitted by ``now`` and not finished, in the workload's order; ``allocations`` the node
of each GPU of each job that holds GPUs. It returns the new allocations; a job whose list
is unchanged keeps running undisturbed (``docs/pollux.md``).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

from analysim.compat.pollux_engine import NODE_GPUS, NODES, PolluxJob

QUEUE_THRESHOLD = 3600 * 16  # Tiresias: GPU-seconds of run time that demote a job to queue 1


def fill(order: list[int], want: dict[int, int], allocations: dict[int, list[int]]) -> None:
    """Give each job of ``order`` that wants GPUs and holds none ``want[j]`` GPUs, taking
    block by block the node with the most free GPUs (the lowest-numbered among equals)."""
    used = Counter(n for alloc in allocations.values() for n in alloc)
    free = {n: NODE_GPUS - used[n] for n in range(NODES) if NODE_GPUS - used[n] > 0}
    for j in order:
        if want[j] > 0 and not allocations.get(j):
            alloc: list[int] = []
            while len(alloc) < want[j]:
                node = max(free, key=free.__getitem__)  # the first of the fullest
                take = min(free[node], want[j] - len(alloc))
                alloc += [node] * take
                free[node] -= take
            allocations[j] = alloc


@dataclass
class Tiresias:
    """Two queues split at 16 GPU-hours of run time, no promotion; GPUs from the CSV."""

    jobs: list[PolluxJob]
    queue0: list[int] = field(default_factory=list)
    queue1: list[int] = field(default_factory=list)
    running: dict[int, bool] = field(default_factory=dict)
    last_check: Counter = field(default_factory=Counter)
    executed: Counter = field(default_factory=Counter)

    def decide(
        self, now: int, active: list[int], allocations: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        """The node of each GPU of each job to run from ``now``."""
        gpus = {j: self.jobs[j].replicas for j in active}
        alive = set(active)
        self.queue0 = [j for j in self.queue0 if j in alive]
        self.queue1 = [j for j in self.queue1 if j in alive]
        self.running = {j: r for j, r in self.running.items() if j in alive}
        allocations = {j: a for j, a in allocations.items() if j in alive}
        for j in active:
            if j not in self.running:
                self.running[j] = False
                self.queue0.append(j)
        for j in active:
            if self.running[j]:
                self.executed[j] += now - self.last_check[j]
                if j in self.queue0 and self.executed[j] * gpus[j] >= QUEUE_THRESHOLD:
                    self.queue0.remove(j)
                    self.queue1.append(j)
            self.last_check[j] = now
        left = NODES * NODE_GPUS
        for j in self.queue0 + self.queue1:
            self.running[j] = gpus[j] <= left
            if self.running[j]:
                left -= gpus[j]
            else:
                allocations.pop(j, None)
        want = {j: gpus[j] if self.running[j] else 0 for j in active}
        fill(self.queue0 + self.queue1, want, allocations)
        return allocations


@dataclass
class Optimus:
    """Optimus+Oracle: GPUs by marginal gain of the true iteration time times the iterations
    left; a job's batch size is fixed (the CSV's), its GPU count is not."""

    jobs: list[PolluxJob]
    _times: dict[tuple[int, int], float] = field(default_factory=dict)
    _left: dict[tuple[int, int], float] = field(default_factory=dict)
    _last: tuple = ()  # the active jobs and their epochs at the last decision
    caps: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.caps = [self.replica_cap(job) for job in self.jobs]

    @staticmethod
    def replica_cap(job: PolluxJob) -> int:
        """Most GPUs ``job`` may hold: its batch size over the smallest local batch (ncf 1)."""
        return 1 if job.app.name == "ncf" else job.batch // job.app.min_local_bsz

    def iteration_time(self, j: int, replicas: int) -> float:
        """Job ``j``'s iteration time on ``replicas`` GPUs packed on the fewest nodes."""
        key = (j, replicas)
        if key not in self._times:
            job = self.jobs[j]
            self._times[key] = job.app.packed_iteration_time(job.batch, replicas)
        return self._times[key]

    def remaining(self, j: int) -> float:
        """Iterations job ``j`` has left after its completed epochs (1 in its last epoch)."""
        job = self.jobs[j]
        key = (j, job.epoch)
        if key not in self._left:
            last = job.app.max_epochs - 1
            if job.epoch >= last:
                self._left[key] = 1
            else:
                app = job.app
                self._left[key] = app.iterations(job.batch, last) - app.iterations(
                    job.batch, job.epoch
                )
        return self._left[key]

    def gain(self, j: int, replicas: int, remaining: float) -> float:
        """What one more GPU saves job ``j`` holding ``replicas``: 0 at its cap."""
        if replicas + 1 > self.caps[j]:
            return 0.0
        saved = self.iteration_time(j, replicas) - self.iteration_time(j, replicas + 1)
        return saved * remaining

    def decide(
        self, now: int, active: list[int], allocations: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        """One GPU per job in order while GPUs last, then each next GPU to the largest gain
        (the earliest job among equals) while a gain is positive; then placement. The same
        jobs at the same epochs as last round get the same decision: nothing changes."""
        inputs = (tuple(active), tuple(self.jobs[j].epoch for j in active))
        if inputs == self._last:
            return allocations
        self._last = inputs
        left = NODES * NODE_GPUS
        replicas: dict[int, int] = {}
        remaining: dict[int, float] = {}
        best: list[tuple[float, int, int]] = []
        for position, j in enumerate(active):
            if left < 1:
                replicas[j] = 0
                continue
            replicas[j], left = 1, left - 1
            remaining[j] = self.remaining(j)
            gain = self.gain(j, 1, remaining[j]) if left >= 1 else 0.0
            if gain > 0:
                best.append((-gain, position, j))
        heapq.heapify(best)
        while left > 0 and best:
            _, position, j = heapq.heappop(best)
            replicas[j] += 1
            left -= 1
            gain = self.gain(j, replicas[j], remaining[j])
            if gain > 0:
                heapq.heappush(best, (-gain, position, j))
        kept = {j: a for j, a in allocations.items() if len(a) == replicas.get(j, 0)}
        fill(sorted(active, key=replicas.__getitem__), replicas, kept)
        return kept


POLICIES = {"tiresias": Tiresias, "optimus": Optimus}
