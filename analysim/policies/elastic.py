"""Elastic schedulers: a ranking (first in, first out) and a rule that sizes elastic jobs.

At a scheduling round the engine (``analysim/engine/elastic.py``) gives an elastic
scheduler the running elastic jobs of a domain (:class:`ElasticJob`: the GPU counts each may
have and its speed at each) and a **budget**: the GPUs it may hand out beyond each job's
smallest count. :meth:`ElasticScheduler.sizes` returns the count of each. Both rules here
start every job at its smallest count and hand out the budget one step (to a job's next
allowed count) at a time, always the step of the highest score per GPU (the earliest job
among equals), while some step has a positive score and fits what is left: deterministic,
no random draw.

* ``elastic_goodput`` (Pollux-style): the score of a step is how much it raises Pollux's
  fitness, the power mean (p = -1) of the jobs' speed-ups (``analysim/policies/goodput.py``,
  the rule the Pollux replay uses), a job's speed-up being its goodput over its goodput on
  its smallest count. The artifact searches allocations with NSGA-II (random, per node,
  with a second objective and a restart penalty); this greedy is not that search: it gives
  the allocation a marginal-gain walk reaches, whole jobs packed by the engine's placer.
* ``elastic_gain`` (Optimus-style, with an oracle): the score of a step is the seconds it
  saves the job, its remaining work times (1 / speed now - 1 / speed after), the remaining
  work at the round.

Both are asked at the first round after a job of the group arrived, started or stopped
(``time_dependent`` False): between such changes the sizes stay.

The names are not ``pollux`` and ``optimus``: those are the artifact's own policies, which
only the replay (``compat="pollux"``) runs (``docs/pollux.md``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import ClassVar, NamedTuple

import numpy as np

from analysim.inputs.validation import bounded
from analysim.policies.goodput import fitness_term
from analysim.policies.scheduling import SCHEDULERS, JobView, Scheduler


class ElasticJob(NamedTuple):
    """What an elastic scheduler knows of one running elastic job."""

    #: the GPU counts it may have, ascending
    sizes: tuple[int, ...]
    #: its goodput at each of them (useful work per second, packed)
    speed: tuple[float, ...]
    #: its remaining work (seconds at rate 1; NaN for a scheduler that does not read it:
    #: ``scores_read_work`` False, no restart penalty)
    remaining: float
    #: the index in ``sizes`` of the count it holds (-1: none of them)
    current: int = -1
    #: the weight of its speed-up at any other count (Pollux's restart weight; 1: none)
    weight: float = 1.0


class ElasticScheduler(Scheduler):
    """Base of the elastic schedulers: first in, first out; subclasses score a step."""

    static = True
    #: whether the sizes it gives may change with time alone (then asked at every round
    #: while elastic jobs run; else at the round after a change in their group)
    time_dependent: ClassVar[bool] = False
    #: whether a step's score reads the job's remaining work (else remembered per job shape)
    scores_read_work: ClassVar[bool] = False
    #: whether it chooses the batch size of a job with batch data with its GPU count (the
    #: best goodput for the count, ``inputs/batch.py``; else the job keeps its batch size)
    chooses_batch: ClassVar[bool] = False
    #: seconds of Pollux's restart penalty in the restart weight (``ElasticJob.weight``;
    #: 0: no weight)
    restart_penalty: float = 0.0

    def priority(self, jobs: JobView) -> Sequence[np.ndarray]:
        return (jobs.submit_time,)

    def score(self, job: ElasticJob, k: int) -> float:
        """The worth of moving ``job`` from its ``k``-th size to the next one."""
        raise NotImplementedError

    def sizes(self, jobs: Sequence[ElasticJob], budget: int) -> list[int]:
        """The GPU count of each job, handing out at most ``budget`` GPUs beyond their
        smallest counts (the greedy of the module's description)."""
        values = [self.values(job) for job in jobs]
        if budget >= sum(job.sizes[-1] - job.sizes[0] for job in jobs) and all(
            v > 0 for per_job in values for v in per_job
        ):
            return [job.sizes[-1] for job in jobs]  # every step helps, and all of them fit
        at = [0] * len(jobs)
        heap = [(-v[0], i) for i, v in enumerate(values) if v and v[0] > 0]
        heapq.heapify(heap)
        while heap and budget > 0:
            _, i = heapq.heappop(heap)
            sizes, scores, k = jobs[i].sizes, values[i], at[i]
            # the job takes its steps while its next one stays ahead of every other job's
            # (as popping and pushing it one step at a time would)
            while sizes[k + 1] - sizes[k] <= budget:  # else it does not fit; others may
                budget -= sizes[k + 1] - sizes[k]
                k += 1
                if k == len(scores) or scores[k] <= 0:
                    break
                entry = (-scores[k], i)
                if heap and heap[0] < entry:
                    heapq.heappush(heap, entry)
                    break
            at[i] = k
        return [job.sizes[k] for job, k in zip(jobs, at, strict=True)]

    def values(self, job: ElasticJob) -> list[float]:
        """The score per GPU of each step of ``job`` (remembered per sizes and speeds when
        the score does not depend on time)."""
        key = (job.sizes, job.speed)
        remembered = not (self.time_dependent or self.scores_read_work) and job.weight == 1.0
        known = self._known.get(key) if remembered else None
        if known is None:
            sizes = job.sizes
            known = [self.score(job, k) / (sizes[k + 1] - sizes[k]) for k in range(len(sizes) - 1)]
            if remembered:
                self._known[key] = known
        return known

    @property
    def _known(self) -> dict:
        memo = self.__dict__.get("_memo")
        if memo is None:
            memo = self.__dict__["_memo"] = {}
        return memo


@SCHEDULERS.register("elastic_goodput")
class ElasticGoodput(ElasticScheduler):
    """Pollux-style: each step raises the power-mean (p = -1) fitness of the speed-ups most;
    with a ``restart_penalty`` (seconds, default 0: off), a job's speed-up at a count other
    than the one it holds is weighted by Pollux's restart weight (the artifact's penalty is
    30 s). A job with batch data (``batch_size``) is sized with the best batch size for each
    count within its limits (Pollux's joint choice of GPUs and batch size)."""

    chooses_batch = True

    def __init__(self, restart_penalty: float = 0.0) -> None:
        self.restart_penalty = bounded(
            restart_penalty, "elastic_goodput: restart_penalty (seconds)", low=0.0, high=1e9
        )

    def score(self, job: ElasticJob, k: int) -> float:
        return fitness_term(self.speedup(job, k)) - fitness_term(self.speedup(job, k + 1))

    @staticmethod
    def speedup(job: ElasticJob, k: int) -> float:
        """The job's speed-up at its ``k``-th count over its smallest, weighted by its restart
        weight unless that is the count it holds."""
        value = job.speed[k] / job.speed[0]
        return value if k == job.current else value * job.weight

    def values(self, job: ElasticJob) -> list[float]:
        """As :meth:`ElasticScheduler.values`; with a restart weight, the same scores from
        the job shape's remembered speed-ups (the weighted ones change at every pass)."""
        if job.weight == 1.0:
            return super().values(job)
        key = ("speedups", job.sizes, job.speed)
        known = self._known.get(key)
        if known is None:
            sizes, base = job.sizes, job.speed[0]
            gaps = [sizes[k + 1] - sizes[k] for k in range(len(sizes) - 1)]
            known = self._known[key] = ([v / base for v in job.speed], gaps)
        speedups, gaps = known
        weight, current = job.weight, job.current
        terms = [fitness_term(v * weight) for v in speedups]
        if current >= 0:
            terms[current] = fitness_term(speedups[current])
        return [(terms[k] - terms[k + 1]) / gap for k, gap in enumerate(gaps)]


@SCHEDULERS.register("elastic_gain")
class ElasticGain(ElasticScheduler):
    """Optimus-style (oracle): each step saves its job the most seconds of remaining run,
    with the remaining work at the round (asked, like ``elastic_goodput``, at the round after
    a change in the group: between changes, as between the artifact's epoch ends, the gains
    it acts on are those of its last round)."""

    scores_read_work = True

    def score(self, job: ElasticJob, k: int) -> float:
        return job.remaining * (1.0 / job.speed[k] - 1.0 / job.speed[k + 1])


__all__ = ["ElasticGain", "ElasticGoodput", "ElasticJob", "ElasticScheduler"]
