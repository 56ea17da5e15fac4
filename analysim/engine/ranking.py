"""A group's jobs in rank order, as the decision rounds read them: one interface, :class:`Ranking`.

A round asks a ranking three things: the waiting jobs from a position on (to try them in
order), the running jobs ranked below a position (to evict, lowest-ranked first), and the
position of the first waiting job (to know which running jobs could ever make room). Three
forms answer them, each where it is cheapest:

* :class:`ArrayRanking`: the scheduler's ranking as an array of job indices (a job's index
  in it is its position), with the jobs' status read live;
* :class:`WaitingStream`: the waiting jobs only, read lazily from a ranking kept sorted
  (static schedulers without preemption: a round reads only as far as it gets, and may
  read on from a later position);
* :class:`~analysim.engine.las_ranking.KeyedOrder`: LAS's ranking kept job by job, where a
  job's key stands for its position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np

from analysim.policies.placement import SMALL
from analysim.policies.scheduling import RUNNING, WAITING


class Ranking(Protocol):
    """What a round reads of a ranking (positions are comparable within one ranking)."""

    def waiting_from(self, pos: int) -> Iterable[tuple[int, int]]:
        """(position, job) of the jobs waiting now, from position ``pos`` on, in order."""
        ...

    def running_below(self, pos: int) -> list[int]:
        """The running jobs ranked below position ``pos``, lowest-ranked first."""
        ...

    def first_waiting(self) -> int | None:
        """The position of the highest-ranked waiting job; None if none waits."""
        ...

    def lowest_running(self, test: Callable[[int], bool]) -> int | None:
        """The position of the lowest-ranked running job for which ``test(job)`` holds;
        None if there is none."""
        ...


class ArrayRanking:
    """A ranking as an array of job indices, best first; ``status`` is the engine's live
    per-job status array (so the ranking follows starts and evictions made since)."""

    __slots__ = ("order", "status")

    def __init__(self, order: np.ndarray, status: np.ndarray) -> None:
        self.order = order
        self.status = status

    def waiting_from(self, pos: int) -> Iterable[tuple[int, int]]:
        tail = self.order[pos:]
        if len(tail) > SMALL:  # a long queue: numpy
            where = np.flatnonzero(self.status[tail] == WAITING)
            return zip((where + pos).tolist(), tail[where].tolist(), strict=True)
        return [  # a short one: plain Python is faster
            (at, j)
            for at, j, status in zip(
                range(pos, len(self.order)), tail.tolist(), self.status[tail].tolist(), strict=True
            )
            if status == WAITING
        ]

    def running_below(self, pos: int) -> list[int]:
        below = self.order[pos + 1 :][::-1]
        return below[self.status[below] == RUNNING].tolist()

    def first_waiting(self) -> int | None:
        waiting = np.flatnonzero(self.status[self.order] == WAITING)
        return int(waiting[0]) if waiting.size else None

    def lowest_running(self, test: Callable[[int], bool]) -> int | None:
        order = self.order
        for at in np.flatnonzero(self.status[order] == RUNNING)[::-1].tolist():
            if test(int(order[at])):
                return at
        return None


class WaitingStream:
    """The waiting jobs of a ranking, best first, read lazily (a round without preemption:
    no running job is ever asked for): the ``jobs`` in order or, with ``job_at``, their
    ranks in order and the job at each rank. It is read from any position, again."""

    __slots__ = ("jobs", "job_at")

    def __init__(self, jobs: list[int], job_at: Callable[[int], int] | None = None) -> None:
        self.jobs = jobs
        self.job_at = job_at

    def waiting_from(self, pos: int) -> Iterable[tuple[int, int]]:
        jobs = iter(self.jobs)
        if pos:  # read on from ``pos``, without copying the rest (a list iterator's index)
            jobs.__setstate__(pos)
        return enumerate(jobs if self.job_at is None else map(self.job_at, jobs), pos)

    def running_below(self, pos: int) -> list[int]:
        return []  # it lists no running job

    def lowest_running(self, test: Callable[[int], bool]) -> int | None:
        return None  # it lists no running job

    def first_waiting(self) -> int | None:
        raise TypeError("a WaitingStream is read once, in order: it has no first position")
