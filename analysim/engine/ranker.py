"""The rankings of the rounds: the order in which a group's jobs are tried (a part of the
rounds).

:class:`Ranker` is a collaborator of :class:`~analysim.engine.rounds.Rounds`
(``Rounds.ranker``). It asks the scheduler for the order of a group's waiting (and running)
jobs and owns what it keeps of it: a static scheduler's rank of every job (asked once) with
each group's waiting ranks kept sorted, and a ranking kept between rounds until jobs arrive
or the ranking may change (LAS's kept ranking is a
:class:`~analysim.engine.las_ranking.KeyedOrder`). It also applies the scheduler's
promotions (service resets) and says whether any were due.
"""

from __future__ import annotations

import bisect
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.ranking import ArrayRanking, Ranking, WaitingStream
from analysim.errors import PolicyError
from analysim.policies.scheduling import JobView

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation


class Ranker:
    """The rankings of the simulation ``sim``'s groups, as its rounds ask for them."""

    def __init__(self, sim: Simulation) -> None:
        groups, flags = sim.partition.n_groups, sim.flags
        self.sim, self.clock, self.scheduler = sim, sim.clock, sim.scheduler
        #: whether a static scheduler ranks every job once, and whether a ranking is kept
        #: between rounds
        self.static, self.kept = flags.static, flags.ranking_kept
        self._skip_rounds = flags.skip_rounds
        # read, never written here: the jobs' facts and state
        self._columns, self._group = sim.facts.columns, sim.facts.group
        self.status, self.attained = sim.status, sim.attained
        self.waiting, self.running, self.group_waiting = sim.waiting, sim.running, sim.group_waiting
        #: per group, the ranking kept between rounds (None: to be made afresh)
        self.kept_ranking: list[Any] = [None] * groups
        #: a static scheduler's rank of each job, the job at each rank, and per group its
        #: waiting jobs' ranks, sorted
        self.rank_of: list[int] = []
        self.job_at_rank: list[int] = []
        if self.static:
            self._rank_all_jobs(sim.n_jobs, list(sim.ledger.vc_used))
        #: whether each job's rank is its index (FIFO on jobs in submission order): a rank is
        #: then read as its job without looking it up
        self.ranks_are_jobs = self.static and self.job_at_rank == list(range(sim.n_jobs))
        self.waiting_ranks: list[list[int]] = [[] for _ in range(groups)]
        #: the waiting ranks lent to the round under way (:meth:`lend_waiting_ranks`)
        self._lent: list[int] | None = None

    def _rank_all_jobs(self, n_jobs: int, vc_used: list[int]) -> None:
        """Rank every job once by a static scheduler's keys (ties by job order)."""
        view = JobView(0.0, np.arange(n_jobs), self._columns, vc_used)
        keys = [np.asarray(k) for k in self.scheduler.priority(view)]
        order = np.lexsort([view.index, *reversed(keys)])
        rank = np.empty(n_jobs, dtype=np.int64)
        rank[order] = np.arange(n_jobs)
        self.rank_of = rank.tolist()
        self.job_at_rank = order.tolist()

    def forget(self, group: int) -> None:
        """The group's ranking is to be made afresh (jobs arrived, or it may have changed)."""
        self.kept_ranking[group] = None

    def lend_waiting_ranks(self, group: int) -> list[int]:
        """The group's waiting ranks as they are, for a round to read while its jobs start:
        copied only before they next change (by :meth:`queued` or :meth:`unqueued`; most
        rounds start none), until :meth:`take_back_waiting_ranks`."""
        self._lent = ranks = self.waiting_ranks[group]
        return ranks

    def take_back_waiting_ranks(self) -> None:
        """The round that read the lent waiting ranks is over: they change in place again."""
        self._lent = None

    def queued(self, j: int) -> None:
        """``j`` waits (again): a static scheduler's waiting ranks keep it."""
        bisect.insort(self._ranks_to_change(self._group[j]), self.rank_of[j])

    def unqueued(self, j: int) -> None:
        """``j`` stopped waiting."""
        ranks = self._ranks_to_change(self._group[j])
        del ranks[bisect.bisect_left(ranks, self.rank_of[j])]

    def _ranks_to_change(self, group: int) -> list[int]:
        """The group's waiting ranks, to change in place: a copy first if they are lent (a
        round reads them: it keeps them as they were)."""
        ranks = self.waiting_ranks[group]
        if ranks is self._lent:
            ranks = self.waiting_ranks[group] = ranks.copy()
            self._lent = None
        return ranks

    def view(self, group: int, include_running: bool) -> JobView:
        """What the scheduler sees of the group's waiting (and running) jobs now."""
        waiting = self.waiting[group]
        if include_running:
            running = self.running[group]
            jobs, count = chain(waiting, running), len(waiting) + len(running)
        else:
            jobs, count = iter(waiting), len(waiting)
        index = np.fromiter(jobs, dtype=np.int64, count=count)
        return JobView(self.clock.now, index, self._columns, self.sim.tenancy.held_by_vc())

    def ranked(self, group: int, preemptive: bool) -> Ranking:
        """The group's jobs in rank order: its waiting jobs, and its running ones too if
        ``preemptive`` (or if the ranking is kept between rounds; finished jobs may be among
        them then, until it is next ranked). LAS's kept ranking is a :class:`KeyedOrder`."""
        if self.static:
            return self._ranked_static(group, preemptive)
        if self.kept:
            kept = self.kept_ranking[group]
            if kept is None:
                las = self.sim.las
                kept = (
                    las.order(group)
                    if las
                    else ArrayRanking(self.rank(group, include_running=True), self.status)
                )
                self.kept_ranking[group] = kept
            return kept
        if not preemptive and self.group_waiting[group] == 1 and self._skip_rounds:
            return WaitingStream(list(self.waiting[group]))  # one job: nothing to rank
        return ArrayRanking(self.rank(group, include_running=preemptive), self.status)

    def rank(self, group: int, include_running: bool) -> np.ndarray:
        """Ask the scheduler to rank the group's waiting (and running) jobs."""
        view = self.view(group, include_running=include_running)
        keys = self.scheduler.priority(view)
        keys = [np.asarray(k) for k in keys]
        if any(k.shape != view.index.shape for k in keys):
            raise PolicyError(
                f"scheduler {self.scheduler.name!r} returned keys of the wrong length "
                f"(expected {len(view)})"
            )
        order = np.lexsort([view.index, *reversed(keys)])
        return view.index[order]

    def _ranked_static(self, group: int, preemptive: bool) -> Ranking:
        """Ranking by keys computed once for all jobs: the waiting jobs are kept sorted, and
        a round reads only as far down the queue as it gets."""
        job_at = self.job_at_rank
        if not preemptive:
            return self.waiting_stream(self.waiting_ranks[group].copy())
        ranks = self.waiting_ranks[group] + [self.rank_of[j] for j in self.running[group]]
        order = np.array(job_at, dtype=np.int64)[np.sort(ranks)] if ranks else np.zeros(0, int)
        return ArrayRanking(order, self.status)

    def waiting_stream(self, ranks: list[int]) -> WaitingStream:
        """A static ranking's waiting jobs of the given ``ranks``, read lazily in order."""
        return WaitingStream(ranks, None if self.ranks_are_jobs else self.job_at_rank.__getitem__)

    def apply_service_resets(self, group: int) -> bool:
        """Reset the attained service of the group's waiting jobs that the scheduler
        promotes; whether any were (the group's ranking is then made afresh)."""
        if self.sim.las is not None:
            promoted = self.sim.las.promotions(group)
            if not promoted:
                return False
            self.attained[promoted] = 0.0
        else:
            view = self.view(group, include_running=False)
            resets = self.scheduler.service_resets(view)
            if resets is None or not np.any(resets):
                return False
            self.attained[view.index[np.asarray(resets, dtype=bool)]] = 0.0
        self.kept_ranking[group] = None
        return True
