"""The engine's shortcuts, and the one switch that turns them all off.

Each shortcut gives the very answers of the plain rule, only sooner (``docs/semantics.md``
says why each is exact). ``Simulation(..., reference=True)`` runs the plain rules alone, so
tests and ``benchmarks/same_results.py --reference`` compare whole runs against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Shortcuts:
    """Which shortcuts a simulation takes."""

    #: "failed at" memos: a job that could not start, preempt, borrow, reclaim or migrate is
    #: not tried again until something it could use has changed; timeline captures are
    #: shared while nothing changes
    memos: bool = True
    #: rounds that provably change nothing are skipped, and their times not visited; a group
    #: with no GPU free and none to reclaim ends its event round at once; the ranking's next
    #: change and the next end of a protection are asked for only when they may have moved
    skip_rounds: bool = True
    #: rankings kept between rounds: a static scheduler's ranking computed once, LAS's kept
    #: job by job (``las_ranking``), a ranking kept while the scheduler says it holds
    kept_ranking: bool = True
    #: the placer's rules used without asking it: a one-node job's node straight from
    #: ``pick_node``, "fits on one node" as "some node has room", ``can_spread``, and trial
    #: evictions counted in plain Python
    placer: bool = True
    #: resource mode: a migration trial (moving some jobs off one node) is built only when
    #: the job could fit once they are gone, counting the node's freed CPU, memory and GPU
    #: milli and what the other nodes have now (moves only take from other nodes)
    trial_bounds: bool = True
    #: in a round, a job is not put to trial evictions when one ranked above it with the
    #: same needs (domain, GPUs, VC) failed them and nothing started or stopped since: it
    #: could evict only fewer of the same running jobs
    alike_evictions: bool = True
    #: EASY backfill: a job that only reservations stopped is not placed again on the GPUs
    #: they leave while no GPU of its group has been released and the same reservations
    #: stop it (the free and spare GPUs only got fewer)
    reserved_memo: bool = True
    #: EASY backfill: a reservation is kept past releases it foresaw (its running jobs ended
    #: at the steps it counted, and none of the group took GPUs since), as making it again
    #: would give it again
    kept_reservations: bool = True
    #: whether a lower-ranked running job is still protected (for the records of a failed
    #: preemption) is read off the position of the lowest-ranked protected one, found once
    #: while nothing starts or stops
    protection_bound: bool = True
    #: backfill with a static ranking: a round without preemption copies the records of
    #: the jobs the round before tried after its last start, when nothing started or
    #: stopped since and they come up again with the same reservations (``tails``)
    replayed_tails: bool = True
    #: backfill with whole GPUs, no preemption, quota or borrowing: a job that asks for more
    #: GPUs than its group has free (on a domain that spans the group) is recorded as full
    #: without trying to place it, or to migrate jobs for it (a queue's first failed job
    #: under EASY backfill too, which then makes its reservation)
    full_at_a_glance: bool = True
    #: whole GPUs, a placer that does not draw: a job whose needs (domain, GPUs, VC) and
    #: EASY reservations to keep are those of a job that failed to start, with nothing of
    #: its group started or stopped since, fails too, for the same reason, without a try
    alike_tries: bool = True
    #: with ``alike_tries``: a job whose needs (domain, GPUs, VC) are those of a job that
    #: failed to start for want of room or quota (no reservation stopped it), with nothing
    #: of its group started or stopped since, fails alike whatever EASY reservations it would
    #: keep; the rounds read it without a try (``StartTries.refused``)
    refused_alike: bool = True
    #: backfill with a static ranking, whole GPUs, no preemption and no quota: the tries of
    #: a run of waiting jobs full at a glance or refused alike (their queue reserved) are
    #: recorded at once, the run's end found among the waiting jobs kept by needs
    #: (``known_runs``)
    known_runs: bool = True
    #: EASY backfill, whole GPUs: the running jobs' end steps kept sorted per group as they
    #: start and stop, not computed and sorted again for every reservation
    kept_ends: bool = True
    #: preemption on LAS's kept ranking, whole GPUs, no quota or borrowing: a job asking for
    #: more GPUs than its group has free plus all those held by the evictable running jobs
    #: ranked below it is recorded full, its migration and evictions failed, without a try
    #: (``below``)
    evictions_at_a_glance: bool = True
    #: with ``evictions_at_a_glance`` and backfill: the jobs right after one answered so
    #: that the same glance answers alike (their queue reserved, the reason the same) are
    #: recorded at once, read a run at a time between running jobs (``below``)
    glance_runs: bool = True

    @classmethod
    def none(cls) -> Shortcuts:
        """The plain rules: no shortcut at all."""
        return cls(
            memos=False,
            skip_rounds=False,
            kept_ranking=False,
            placer=False,
            trial_bounds=False,
            alike_evictions=False,
            reserved_memo=False,
            kept_reservations=False,
            protection_bound=False,
            replayed_tails=False,
            full_at_a_glance=False,
            alike_tries=False,
            refused_alike=False,
            known_runs=False,
            kept_ends=False,
            evictions_at_a_glance=False,
            glance_runs=False,
        )

    def memo(self, on: bool | None = None) -> dict[Any, Any]:
        """A memo: a dict, or (without memos, or when ``on`` is False) one that forgets
        everything it is told."""
        return {} if (self.memos if on is None else on) else _Forgetful()


class _Forgetful(dict):
    """A dict that stays empty: ``memo[k] = v`` does nothing, ``memo.get(k)`` is None."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass
