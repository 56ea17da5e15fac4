"""The Pollux artifact's simulator loop, under any of its policies (``docs/pollux.md``).

Every 60 s: each placed job trains for the interval (its first 30 s after any
(re)allocation are lost to the restart), the clock moves, and the policy
(:mod:`analysim.compat.pollux_policies`) decides for the jobs submitted by then and not
finished. Times are whole seconds, as in the artifact (an epoch's end is rounded to the
second).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from analysim.compat.pollux_agent import Agent
from analysim.compat.pollux_model import PolluxApplication
from analysim.policies.goodput import gradient_gain

INTERVAL = 60  # seconds between scheduling rounds
RESTART = 30  # seconds a job loses each time it is given GPUs
NODES, NODE_GPUS = 16, 4


@dataclass
class PolluxJob:
    """One job's state, as the artifact's ``Job`` keeps it (``replicas``: the GPUs the
    workload asks for; ``gpus``: the GPUs it holds now)."""

    app: PolluxApplication
    submit: int
    replicas: int
    batch: int
    placement: tuple[int, ...] = ()
    gpus: int = 0
    rescale: int = 0
    progress: float = 0.0
    epoch: int = 0
    completion: int | None = None
    atomic: int = 0
    accum: int = 0
    iteration_time: float = 0.0  # of the placement: step time + accumulation steps
    goodput: float = 0.0  # progress per second in epoch ``goodput_epoch``
    goodput_epoch: int = -1
    agent: Agent | None = None  # under the pollux policy: the job's own batch-size agent
    step_sync: tuple[float, float] = (0.0, 0.0)  # true step and sync time now

    def train(self, now: int, seconds: int) -> None:
        """Train from ``now`` for ``seconds`` on the job's placement."""
        delay = min(self.rescale, seconds)
        self.rescale -= delay
        seconds -= delay
        now += delay
        if self.agent is not None:
            self.agent.attained += delay * self.gpus
            self._train_with_agent(now, seconds)
            return
        app = self.app
        while seconds > 0 and self.completion is None:
            if self.goodput_epoch != self.epoch:
                batch = self.gpus * self.atomic * (self.accum + 1)
                sqr, var = app.grad_stats(batch, self.epoch)
                gain = gradient_gain(sqr, var, batch / app.init_batch_size)
                self.goodput = gain / self.iteration_time * 1.0
                self.goodput_epoch = self.epoch
            goodput = self.goodput
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

    def _train_with_agent(self, now: int, seconds: int) -> None:
        """As :meth:`train`, but the agent profiles every stretch, counts the GPU-seconds and
        picks the batch size again after each (so it can change at every epoch)."""
        app, agent = self.app, self.agent
        nodes = len(self.placement)
        while seconds > 0 and self.completion is None:
            batch = self.gpus * self.atomic * (self.accum + 1)
            sqr, var = app.grad_stats(batch, self.epoch)
            gain = gradient_gain(sqr, var, batch / app.init_batch_size)
            agent.observe(nodes, self.gpus, self.atomic, *self.step_sync, (sqr, var))
            goodput = gain / self.iteration_time * 1.0
            target = app.progress_at(self.epoch + 1)
            if self.progress + goodput * seconds < target:
                self.progress += goodput * seconds
                agent.attained += seconds * self.gpus
                seconds = 0
            else:
                self.epoch += 1
                delta = round(float((target - self.progress) / goodput))
                if self.epoch > app.max_epochs - 1:
                    self.completion = now + delta
                self.progress = target
                agent.attained += delta * self.gpus
                now += delta
                seconds -= delta
            self._set_batch(*agent.choose(nodes, self.gpus))

    def _set_batch(self, atomic: int, accum: int) -> None:
        """Run at atomic batch ``atomic`` with ``accum`` accumulation steps on the placement."""
        if (atomic, accum) != (self.atomic, self.accum) or not self.iteration_time:
            self.atomic, self.accum = atomic, accum
            step, sync = self.app.throughput(self.placement, atomic)
            self.step_sync = (step, sync)
            self.iteration_time = step + (step - sync) * accum
            self.goodput_epoch = -1

    def place(self, placement: tuple[int, ...]) -> None:
        """Give the job ``placement`` (GPUs per node, ``()``: none), paying the restart."""
        self.placement = placement
        self.gpus = sum(placement)
        self.goodput_epoch = -1
        self.iteration_time = 0.0
        if not placement:
            self.atomic = 0
            return
        self.rescale = RESTART
        if self.agent is not None:
            self.agent.restarts = 0 if self.agent.restarts is None else self.agent.restarts + 1
            self._set_batch(*self.agent.choose(len(placement), self.gpus))
            return
        self.atomic, self.accum = self.app.local_batch(self.batch, self.gpus)
        step, sync = self.app.throughput(placement, self.atomic)
        self.iteration_time = step + (step - sync) * self.accum


def shape_of(alloc: list[int]) -> tuple[int, ...]:
    """GPUs per node, in the order the nodes were taken."""
    out: list[int] = []
    for i, node in enumerate(alloc):
        if i and node == alloc[i - 1]:
            out[-1] += 1
        else:
            out.append(1)
    return tuple(out)


class Policy(Protocol):
    """What the loop asks of a policy each round."""

    def decide(
        self, now: int, active: list[int], allocations: dict[int, list[int]]
    ) -> dict[int, list[int]]: ...


def run(
    jobs: list[PolluxJob],
    policy: Policy,
    on_change: Callable[[int, int, list[int]], None] | None = None,
) -> None:
    """Run ``jobs`` (in the workload's order) to completion under ``policy``;
    ``on_change(now, j, alloc)`` is told every (re)allocation (``alloc`` empty: preempted)."""
    allocations: dict[int, list[int]] = {}
    order = sorted(range(len(jobs)), key=lambda j: jobs[j].submit)
    now, seen, waiting = 0, 0, set(range(len(jobs)))
    active: list[int] = []
    while waiting:
        for j in active:
            if jobs[j].placement:
                jobs[j].train(now, INTERVAL)
        now += INTERVAL
        arrivals = []
        while seen < len(order) and jobs[order[seen]].submit <= now:
            arrivals.append(order[seen])
            seen += 1
        done = {j for j in active if jobs[j].completion is not None}
        if done:
            waiting -= done
            active = [j for j in active if j not in done]
            allocations = {j: a for j, a in allocations.items() if j not in done}
        if arrivals:
            active = sorted(active + arrivals)
        if not active:
            continue
        new = policy.decide(now, active, allocations)
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
        gain = gradient_gain(sqr, var, batch_now / app.init_batch_size)
        goodput = gain / (step + (step - sync) * accum)
        target = app.progress_at(epoch + 1)
        total += (target - progress) / goodput
        progress = target
    return total
