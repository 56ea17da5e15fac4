"""``JobState``: per job, what changes as the simulation runs, with one owner.

The simulation makes one (``Simulation.job_state``) at set-up and changes it only through
its state changes (``start_running``, ``preempt``, ``migrate``, ``kill`` and a job's end);
the other parts read it (the rounds through their job views' ``columns``, the LAS ranking,
the failures, which also rewrite a stopped job's ``remaining``). Each array is indexed by
job; ``versions`` is a list (read one item at a time in hot loops).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from analysim.policies.scheduling import PENDING

if TYPE_CHECKING:
    from analysim.engine.speed import JobSpeed


class JobState:
    """The changing per-job state: work left, rate, service, times, counts of restarts, the
    run versions and the heap of the runs' ends.

    ``duration`` and ``submit`` are the jobs' (fixed) work and submit times; ``cost`` and
    ``migration_cost`` what a resume after a preemption and a migration cost (seconds of
    work); ``speed`` each job's performance model.
    """

    def __init__(
        self,
        duration: np.ndarray,
        submit: np.ndarray,
        cost: np.ndarray,
        migration_cost: np.ndarray,
        speed: JobSpeed,
    ) -> None:
        n = len(duration)
        #: per job: the checkpoint/restore cost a preemption adds, and a migration's cost
        self.cost, self.migration_cost = cost, migration_cost
        #: work left (seconds at rate 1), including the restore costs still to pay
        self.remaining = duration.copy()
        #: each job's performance model (``engine/speed.py``) and its rate where it runs (or
        #: last ran): 1.0 for a job without an application, and before a job first starts
        self.speed = speed
        self.rate = np.ones(n)
        #: whether any job has an application (else every rate stays 1.0)
        self.rated = speed.in_use
        #: GPU-seconds of service, and seconds run, up to the last stop
        self.attained = np.zeros(n)
        self.executed = np.zeros(n)
        #: since when the job waits or runs (its submit time until it first starts)
        self.since = submit.copy()
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.first_start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.reclaims = np.zeros(n, dtype=np.int64)
        # a job that (re)starts may not be evicted before it has run one quantum past its
        # restore cost: every run then makes progress, so preemption cannot livelock
        self.evictable_from = np.zeros(n)
        #: per job, bumped at each start and preemption: stale heap entries differ (the LAS
        #: ranking reads it too)
        self.versions = [0] * n
        #: the runs' ends: (step, end, job, version); an entry of an older version is stale
        self.completions: list[tuple[float, float, int, int]] = []

    def next_end(self) -> float | None:
        """The step of the soonest end of a run under way (stale entries dropped), or None."""
        completions, version = self.completions, self.versions
        while completions and completions[0][3] != version[completions[0][2]]:
            heapq.heappop(completions)  # the end of a run that was cut short: nothing happens
        return completions[0][0] if completions else None


__all__ = ["JobState"]
