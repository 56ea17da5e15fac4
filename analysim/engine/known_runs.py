"""Runs of waiting jobs whose tries are known at a glance, recorded at once (a shortcut of
the backfill rounds, ``Shortcuts.known_runs``).

In a backfill round without preemption, on a static ranking, with whole GPUs and no quota
(where the rounds record a job ``full`` at a glance), the answer to a waiting job's try is
known without asking anything when its queue already has its EASY reservation (or the
backfill is greedy) and either it asks for more GPUs than its group has free, on a domain
that spans the group (``full``, with the group's free GPUs: ``Shortcuts.full_at_a_glance``),
or a job of its needs (domain, GPUs, VC) failed for want of room since the group's epoch
last moved (that failure: ``StartTries.refused``). Such a job starts nothing, makes no
reservation and is stopped by none: the round only records its try.

:class:`KnownRuns` keeps, per group, the waiting jobs' ranks by their needs (as they queue
and stop waiting). When the round meets a job recorded ``full`` at a glance, it asks
:meth:`KnownRuns.record` for the next waiting job whose answer is not known (the first one
after it, by rank, among the needs that are not) and records the tries of every job up to
it at once, in rank order, as the round would one by one. ``docs/semantics.md`` lists it;
``Simulation(..., reference=True)`` turns it off.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from analysim.engine.records import FULL

if TYPE_CHECKING:
    from analysim.engine.rounds import Rounds

#: a job's needs: (domain index, GPUs, VC)
Needs = tuple[int, int, int]


class KnownRuns:
    """The waiting jobs of each group by needs, for the rounds ``rounds`` to record runs of
    known tries at once."""

    def __init__(self, rounds: Rounds, covers_group: list[bool], easy: bool) -> None:
        """``covers_group``: per domain, whether it spans its group's nodes; ``easy``: EASY
        backfill (a queue's first failed job makes its reservation: not known before)."""
        sim = rounds.sim
        self._starts, self._records, self._easy = rounds.starts, sim.records, easy
        self._group, self._queue = sim.facts.group, sim.facts.queue
        self._needs_of = rounds.starts.needs_of
        self._rank_of, self._job_at_rank = rounds.ranker.rank_of, rounds.ranker.job_at_rank
        self._ranks_are_jobs = rounds.ranker.ranks_are_jobs
        self._group_free = sim.ledger.group_free
        self._covers_group = covers_group
        # the needs met so far, numbered as met (a kind): per job its kind (-1: not met),
        # per kind its needs, its GPUs if its domain spans its group (else -1) and its jobs'
        # queue, and why its jobs failed and the GPUs free to them (:meth:`record`'s)
        self._kind_of = [-1] * len(self._needs_of)
        self._kind_id: dict[Needs, int] = {}
        self._kinds: list[tuple[Needs, int, int]] = []
        self._why: list[int] = []
        self._room: list[int] = []
        # per group: kind -> the waiting jobs' ranks, sorted (no empty list kept)
        self._waiting: list[dict[int, list[int]]] = [{} for _ in range(sim.partition.n_groups)]

    def queued(self, j: int) -> None:
        """``j`` waits (again)."""
        kind = self._kind_of[j]
        if kind < 0:
            needs = self._needs_of[j]
            kind = self._kind_id.get(needs)
            if kind is None:
                kind = self._kind_id[needs] = len(self._kinds)
                domain, gpus, _ = needs
                need = gpus if self._covers_group[domain] else -1
                self._kinds.append((needs, need, self._queue[j]))
                self._why.append(0)
                self._room.append(0)
            self._kind_of[j] = kind
        waiting = self._waiting[self._group[j]]
        ranks = waiting.get(kind)
        if ranks is None:
            waiting[kind] = [self._rank_of[j]]
        else:
            bisect.insort(ranks, self._rank_of[j])

    def unqueued(self, j: int) -> None:
        """``j`` stopped waiting."""
        kind = self._kind_of[j]
        waiting = self._waiting[self._group[j]]
        ranks = waiting[kind]
        if len(ranks) == 1:
            del waiting[kind]
        else:
            del ranks[bisect.bisect_left(ranks, self._rank_of[j])]

    def record(self, group: int, ranks: list[int], pos: int, reserved: set[int], stop: int) -> int:
        """Record the tries of the job at ``ranks[pos]`` (of ``group``'s waiting ranks in
        order; its try known) and of the jobs after it whose tries are known, up to the
        first one whose try is not, or the rank ``stop`` (-1: none); ``reserved``: the
        queues with a reservation this round. Returns how many jobs after ``pos`` it
        recorded."""
        free, easy = self._group_free[group], self._easy
        refused = self._starts.refused(group)
        at, end = ranks[pos], stop if stop > ranks[pos] else len(self._rank_of)
        kinds, why, room = self._kinds, self._why, self._room
        full_only = True  # whether every known kind is ``full`` at a glance
        same_room = True  # whether the GPUs free to each are the group's
        for kind, waiting in self._waiting[group].items():
            needs, need, queue = kinds[kind]
            if not easy or queue in reserved:
                if need > free:
                    why[kind], room[kind] = FULL, free
                    continue
                tried = refused.get(needs)
                if tried is not None:
                    why[kind], room[kind] = tried.why, tried.room
                    full_only = False
                    same_room = same_room and tried.room == free
                    continue
            i = bisect.bisect_right(waiting, at)
            if i < len(waiting) and waiting[i] < end:
                end = waiting[i]
        last = bisect.bisect_left(ranks, end, pos + 1)
        jobs = ranks[pos:last]
        if not self._ranks_are_jobs:
            jobs = list(map(self._job_at_rank.__getitem__, jobs))
        records = self._records
        records.try_job.extend(jobs)
        if full_only:
            records.try_code.extend([FULL] * len(jobs))
        else:
            kind_of = list(map(self._kind_of.__getitem__, jobs))
            records.try_code.extend(map(why.__getitem__, kind_of))
        if same_room:
            records.try_free.extend([free] * len(jobs))
        else:
            records.try_free.extend(map(room.__getitem__, kind_of))
        return len(jobs) - 1
