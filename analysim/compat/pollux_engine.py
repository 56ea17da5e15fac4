"""The Pollux artifact's simulator loop under its Tiresias policy (``docs/pollux.md``).

Every 60 s: each placed job trains for the interval (its first 30 s after any
(re)allocation are lost to the restart), the clock moves, and the policy decides for the
jobs submitted by then and not finished. Times are whole seconds, as in the artifact (an
epoch's end is rounded to the second).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from analysim.compat.pollux_model import PolluxApplication

INTERVAL = 60  # seconds between scheduling rounds
RESTART = 30  # seconds a job loses each time it is given GPUs
QUEUE_THRESHOLD = 3600 * 16  # Tiresias: GPU-seconds of run time that demote a job to queue 1
NODES, NODE_GPUS = 16, 4


@dataclass
class PolluxJob:
    """One job's state, as the artifact's ``Job`` keeps it."""

    app: PolluxApplication
    submit: int
    replicas: int
    batch: int
    placement: tuple[int, ...] = ()
    rescale: int = 0
    progress: float = 0.0
    epoch: int = 0
    completion: int | None = None
    atomic: int = 0
    accum: int = 0

    def train(self, now: int, seconds: int) -> None:
        """Train from ``now`` for ``seconds`` on the job's placement."""
        delay = min(self.rescale, seconds)
        self.rescale -= delay
        seconds -= delay
        now += delay
        app = self.app
        while seconds > 0 and self.completion is None:
            batch = self.replicas * self.atomic * (self.accum + 1)
            step, sync = app.throughput(self.placement, self.atomic)
            sqr, var = app.grad_stats(batch, self.epoch)
            gain = (var + sqr) / (var / (batch / app.init_batch_size) + sqr)
            goodput = gain / (step + (step - sync) * self.accum) * 1.0
            target = app.progress_at(self.epoch + 1)
            if self.progress + goodput * seconds < target:
                self.progress += goodput * seconds
                return
            self.epoch += 1
            delta = round(float((target - self.progress) / goodput))
            if self.epoch > app.max_epochs - 1:
                self.completion = now + delta
            self.progress = target
            now += delta
            seconds -= delta

    def place(self, placement: tuple[int, ...]) -> None:
        """Give the job ``placement`` (GPUs per node, ``()``: none), paying the restart."""
        self.placement = placement
        if placement:
            self.atomic, self.accum = self.app.local_batch(self.batch, sum(placement))
            self.rescale = RESTART
        else:
            self.atomic = 0


@dataclass
class Tiresias:
    """The artifact's Tiresias: two queues split at 16 GPU-hours of run time, no promotion."""

    queue0: list[int] = field(default_factory=list)
    queue1: list[int] = field(default_factory=list)
    running: dict[int, bool] = field(default_factory=dict)
    last_check: Counter = field(default_factory=Counter)
    executed: Counter = field(default_factory=Counter)

    def decide(
        self, now: int, active: list[int], gpus: list[int], allocations: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        """The node of each GPU of each job to run from ``now``, ``active`` in list order."""
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
        return self._allocate(gpus, allocations)

    def _allocate(self, gpus: list[int], allocations: dict[int, list[int]]) -> dict[int, list[int]]:
        used = Counter(n for alloc in allocations.values() for n in alloc)
        free = {n: NODE_GPUS - used[n] for n in range(NODES) if NODE_GPUS - used[n] > 0}
        for j in self.queue0 + self.queue1:
            if self.running[j] and not allocations.get(j):
                alloc: list[int] = []
                while len(alloc) < gpus[j]:
                    node = max(free, key=free.__getitem__)  # the first of the fullest
                    take = min(free[node], gpus[j] - len(alloc))
                    alloc += [node] * take
                    free[node] -= take
                allocations[j] = alloc
        return allocations


def shape_of(alloc: list[int]) -> tuple[int, ...]:
    """GPUs per node, in the order the nodes were taken."""
    out: list[int] = []
    for i, node in enumerate(alloc):
        if i and node == alloc[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return tuple(out)


def run_tiresias(jobs: list[PolluxJob], on_change=None) -> None:
    """Run ``jobs`` (in the workload's order) to completion; ``on_change(now, j, alloc)`` is
    told every (re)allocation (``alloc`` empty: preempted)."""
    policy = Tiresias()
    gpus = [job.replicas for job in jobs]
    allocations: dict[int, list[int]] = {}
    order = sorted(range(len(jobs)), key=lambda j: jobs[j].submit)
    now, seen, waiting = 0, 0, set(range(len(jobs)))
    active: list[int] = []
    while waiting:
        for j in active:
            if jobs[j].placement:
                jobs[j].train(now, INTERVAL)
        now += INTERVAL
        while seen < len(order) and jobs[order[seen]].submit <= now:
            seen += 1
        done = {j for j in active if jobs[j].completion is not None}
        waiting -= done
        arrived = {order[k] for k in range(seen)}
        active = [j for j in range(len(jobs)) if j in arrived and j in waiting]
        if not active:
            continue
        allocations = {j: a for j, a in allocations.items() if j in waiting}
        new = policy.decide(now, active, gpus, allocations)
        for j in active:
            if new.get(j) != allocations.get(j):
                alloc = new.get(j, [])
                jobs[j].place(shape_of(alloc))
                if on_change is not None:
                    on_change(now, j, alloc)
        allocations = new


def packed_run_time(app: PolluxApplication, replicas: int, batch: int) -> float:
    """Seconds a job of ``replicas`` GPUs and global ``batch`` trains alone on the fewest
    nodes (4 GPUs each), from start to its last epoch, without the restart penalty or the
    rounding of epoch ends: the ``duration`` ``read_pollux`` gives a job."""
    placement = (NODE_GPUS,) * (replicas // NODE_GPUS) + (replicas % NODE_GPUS,) * bool(
        replicas % NODE_GPUS
    )
    job = PolluxJob(app, 0, replicas, batch)
    job.place(placement)
    atomic, accum = job.atomic, job.accum
    step, sync = app.throughput(placement, atomic)
    batch_now = replicas * atomic * (accum + 1)
    total, progress = 0.0, 0.0
    for epoch in range(app.max_epochs):
        sqr, var = app.grad_stats(batch_now, epoch)
        gain = (var + sqr) / (var / (batch_now / app.init_batch_size) + sqr)
        goodput = gain / (step + (step - sync) * accum)
        target = app.progress_at(epoch + 1)
        total += (target - progress) / goodput
        progress = target
    return total
