"""The decision rounds: ranking, placing and evicting for the waiting jobs of a group.

:class:`Rounds` is a collaborator of :class:`~analysim.engine.Simulation`, which makes one
(``Simulation.decider``, in both modes: in resource mode it asks its
:class:`~analysim.engine.book_fit.BookFit` where a job fits on the resource book) and asks
it, at each step it visits:

* :meth:`Rounds.step` (the rounds due now: an event round for each group where jobs
  arrived or ended, a full round for each group :meth:`Rounds.full_groups` names, each one
  :meth:`Rounds.round` of one group);
* :meth:`Rounds.next_full_round` (the next quantum boundary at which a full round could
  change anything: the leap);
* and, from its state changes, :meth:`Rounds.arrived`, :meth:`Rounds.took`,
  :meth:`Rounds.released`, :meth:`Rounds.queued` and :meth:`Rounds.unqueued`.

It holds its parts, each with its own state (no mixins): the rankings
(:class:`~analysim.engine.ranker.Ranker`, ``ranker``), the tries to start a job
(:class:`~analysim.engine.starts.StartTries`, ``starts``, which answer each try with a
:class:`~analysim.engine.starts.StartTry`: started, or why not), EASY backfill's
reservations (:class:`~analysim.engine.easy.EasyBackfill`, ``easy``) and the trial evictions
(:class:`~analysim.engine.evictions.Evictions`, ``evictions``, which answer why a job could
not evict its way in). The tenancy asks those parts too (``starts``: where a job fits, its
quota, starting it; ``evictions``: which evictions free room) and reads ``epoch``.

It owns the per-group flags that let a round be skipped (``events_since_round`` and
``changed_since_full``, set again after a round for a group to be looked at again;
``ranking_valid_until`` and ``protected_until``, which ``wake`` bounds; ``wake_at``), the
epochs and release counts its parts' memos are kept against, and the tails of backfill
rounds. It reads the cluster from the ledger (never written here), asks the scheduler, and
changes state only through its parts, the engine's ``preempt`` (through the evictions) and
the tenancy's tries. See ``docs/semantics.md`` for the rules.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.allocation_rounds import allocation_rounds
from analysim.engine.below import Belows, EvictableBelow
from analysim.engine.book_fit import BookFit
from analysim.engine.borrow_round import borrow_round
from analysim.engine.clock import EPS, ceil_to, on_multiple
from analysim.engine.easy import EasyBackfill
from analysim.engine.evictions import Evictions
from analysim.engine.known_runs import KnownRuns
from analysim.engine.las_ranking import KeyedOrder
from analysim.engine.ranker import Ranker
from analysim.engine.ranking import Ranking
from analysim.engine.records import (
    FULL,
    PREEMPT_NO_ROOM,
    PREEMPT_PROTECTED,
    RESERVED,
    ROUND_FULL,
    ROUND_NOTHING_FREE,
)
from analysim.engine.reservations import Reservation
from analysim.engine.starts import StartTries
from analysim.engine.tails import Tail, comes_next, make_tail, replay
from analysim.engine.wake import bound_ranking, next_unprotected

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

_NO_GROUPS: frozenset[int] = frozenset()  # off a quantum boundary: no group's full round


class Rounds:
    """The scheduling rounds of the simulation ``sim``, group by group."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        #: resource mode: where a job fits on the book of GPU milli, CPU and memory (asked in
        #: place of the whole-GPU counting below); None with whole GPUs only
        self._book_fit = BookFit(sim) if sim.resource_mode else None
        #: whether a job's needs are its domain, GPUs and VC (resource mode: not only)
        self._needs_are_gpus = self._book_fit is None
        # what the rounds read of the engine: its parts, its policies, and per job and per
        # group containers it changes in place (never rebound after set-up)
        self.clock, self.records = sim.clock, sim.records
        self.config, self.scheduler = sim.config, sim.scheduler
        flags = sim.flags  # local names: the hot loop reads them often
        self._skip_rounds = flags.skip_rounds
        self._borrowing, self._partitioned = flags.borrowing, flags.partitioned
        self._static = flags.static
        # the ledger's: read, never written here
        self.group_free, self.borrowers = sim.ledger.group_free, sim.ledger.borrowers
        # the jobs: fixed values, and the state the engine changes (read here)
        facts = sim.facts  # (lists: local names, read one item at a time)
        self._gpus, self._queue, self._group = facts.gpus, facts.queue, facts.group
        self.evictable_from, self.running = sim.evictable_from, sim.running
        self.group_waiting = sim.group_waiting
        self.group_vcs, self.vc_waiting_jobs = sim.group_vcs, sim.vc_waiting_jobs
        self._init_state(sim.partition.n_groups)
        #: a scheduler that allocates GPU types (Gavel's policies) runs its own rounds
        self.allocator = allocation_rounds(sim)

    def _init_state(self, groups: int) -> None:
        """The rounds' own state."""
        sim, scheduler, shortcuts = self.sim, self.scheduler, self.sim.shortcuts
        #: the rankings the rounds read (and what it keeps of them)
        self.ranker = Ranker(sim)
        self._releases = [0] * groups  # times GPUs of each group were released
        self._round_flags = 0  # the round at hand's flags, for the records
        self._again: set[int] = set()  # the groups due another look (docs/semantics.md)
        # whether a VC has a quota (then no try is answered at a glance: it may be the quota)
        quotas = sim.partition.has_quotas
        # EASY backfill (its reservations: ``self.easy``)
        self._easy = self.config.backfill == "easy"
        # backfill rounds that replay the tail of the one before (``tails``): not with a
        # placer that draws (it may draw when it fails), nor in resource mode
        self._replay_tails = (
            shortcuts.replayed_tails
            and self._static
            and bool(self.config.backfill)
            and self._needs_are_gpus
            and not sim.placer.random
            and not self._borrowing
        )
        self._tails: list[Tail | None] = [None] * groups
        self._full_at_a_glance = (
            shortcuts.full_at_a_glance
            and bool(self.config.backfill)
            and self._needs_are_gpus
            and not quotas
        )
        # preemptive rounds, whole GPUs, no quota: full and too few GPUs to evict at a glance
        self._evictions_at_a_glance = (
            shortcuts.evictions_at_a_glance and self._needs_are_gpus and not quotas
        )
        #: per group, a counter bumped by every start, release, promotion and ranking change:
        #: a job that could not start or preempt its way in is not tried again until it moves
        self.epoch = [0] * groups
        # the same for preemption alone, which starts cannot help when the ranking is
        # round-stable (a started job is protected, and it only takes GPUs away)
        self._evict_epoch = [0] * groups
        # per group: arrivals or completions since its last round; any change since its last
        # preemptive round; the time until which its ranking is known not to change
        self.events_since_round = [True] * groups
        self._arrived = [False] * groups  # jobs arrived since the group's last round
        self.changed_since_full = [True] * groups
        self.ranking_valid_until = [-math.inf] * groups
        self.change_unknown = [False] * groups  # see wake.bound_ranking
        # with preemption: the earliest time a running job of the group stops being protected
        self.protected_until = [math.inf] * groups
        # the earliest of the two: when a round with nothing else new may still change things
        self.wake_at = [-math.inf] * groups
        # a round of a group with no GPU free (and none lent) ends at once: true only when
        # every job needs whole GPUs (resource mode turns it off: a share or a CPU-only job
        # may fit all the same)
        self._nothing_free_ends_round = self._skip_rounds and self._needs_are_gpus
        # per group: whether a change may leave room for jobs a round passed over; per
        # domain: whether it spans its group's nodes
        one_queue = [len(vcs) == 1 or not self._partitioned for vcs in self.group_vcs]
        stable = self._round_stable = scheduler.static or scheduler.round_stable
        self._rescan_after_change = [
            self.config.backfill or not one or not stable for one in one_queue
        ]
        domains, of_group = sim.partition.domains, sim.partition.domain_group.tolist()
        self._covers_group = [
            bool(d.mask[sim.group_nodes[g]].all()) for d, g in zip(domains, of_group, strict=True)
        ]
        # per job: its GPUs if its domain spans its group, else -1 (full at a glance when
        # more than its group has free)
        self._glance_need = [
            g if self._covers_group[d] else -1
            for g, d in zip(self._gpus, sim.facts.domain_index, strict=True)
        ]
        # ... counted per group (kept while they hold); the runs of jobs after one that it
        # answers alike recorded at once (with backfill)
        self._belows = Belows(
            groups, self._gpus, sim.evictable_from, (self._glance_need, self._queue), self._releases
        )
        self._glance_runs = shortcuts.glance_runs and bool(self.config.backfill)
        #: the parts the rounds ask: the tries to start a job (with their memos), trial
        #: evictions, and EASY backfill's reservations
        self.starts = StartTries(self, self._book_fit, self._covers_group, self._releases)
        self.evictions = Evictions(self, self._book_fit, self._covers_group, self._evict_epoch)
        self.easy = EasyBackfill(self, self._book_fit, self._releases, self.evictions.placer_fits)
        # backfill rounds that record runs of jobs full at a glance (or refused alike) at once
        known = shortcuts.known_runs and self._replay_tails and self._full_at_a_glance
        self._known_runs = (
            KnownRuns(self, self._covers_group, self._easy)
            if known and sim.elastic is None
            else None
        )

    # -- what the engine tells the rounds -----------------------------------------------------
    def arrived(self, group: int) -> None:
        """A job of ``group`` arrived: its ranking is to be made afresh."""
        self.ranker.forget(group)
        self._arrived[group] = True

    def requeued(self, group: int) -> None:
        """A job of ``group`` killed by a failure waits again: as for an arrival; and since it
        keeps the service it had (unlike a new job), it may be due a promotion that brings the
        ranking's next change forward, so that is asked afresh too."""
        self.arrived(group)
        self.change_unknown[group] = True

    def took(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> None:
        """``j`` took GPUs (started or moved): ``counts[i]`` on node ``nodes[i]``."""
        group = self._group[j]
        self.epoch[group] += 1
        if not self._round_stable:
            self._evict_epoch[group] += 1
        if self._easy:
            self.easy.took(j, group)

    def released(self, j: int) -> None:
        """``j`` gave its GPUs back (ended, was evicted, or is moving)."""
        group = self._group[j]
        self._releases[group] += 1
        self.epoch[group] += 1
        self._evict_epoch[group] += 1
        if self._easy:
            self.easy.released(j, group)

    def nodes_changed(self, groups: list[int]) -> None:
        """A node of ``groups`` went down or came back up (failures): every memo and
        reservation of those groups is made again, as after a release."""
        for group in groups:
            self._releases[group] += 1
            self.epoch[group] += 1
            self._evict_epoch[group] += 1
            self.easy.forget(group)

    def queued(self, j: int) -> None:
        """``j`` waits (again): a static scheduler's waiting ranks keep it."""
        self.ranker.queued(j)
        if self._known_runs is not None:
            self._known_runs.queued(j)

    def unqueued(self, j: int) -> None:
        """``j`` stopped waiting."""
        self.ranker.unqueued(j)
        if self._known_runs is not None:
            self._known_runs.unqueued(j)

    # -- when rounds are due ------------------------------------------------------------------
    def _pending(self) -> list[bool]:
        """Per group: has anything happened that a full round at the next boundary must
        consider? (Without preemption, a repeated round changes nothing: starting jobs only
        takes GPUs away from the ones that did not fit. With it, an eviction may open room.)"""
        return self.changed_since_full if self.config.preemption else self.events_since_round

    def next_full_round(self, before: float) -> float | None:
        """The next quantum boundary before ``before`` at which a full round could change
        anything, if any."""
        if self.allocator is not None:
            return self.allocator.next_round(before)
        skip = self._skip_rounds
        if skip and not (
            self.config.preemption or self.scheduler.dynamic or not self._round_stable
        ):
            if not self._again:  # (else those groups are pending: read on)
                return None  # event rounds already ran at every change; the ranking is fixed
        quantum = self.config.quantum
        after = self.clock.boundary_after(self.clock.now, quantum)
        if after >= before:
            return None  # something happens first anyway
        if not skip:
            return after  # the plain rule: a full round at every boundary while jobs wait
        due, change = after + EPS, math.inf
        for waiting, pending, wake in zip(
            self.group_waiting, self._pending(), self.wake_at, strict=True
        ):
            if waiting:
                if pending or wake <= due:
                    return after
                if wake < change:
                    change = wake
        if math.isinf(change):
            return None
        due = max(after, ceil_to(change, quantum))
        return due if due < before else None

    def step(self, t: float, touched: set[int]) -> None:
        """The rounds due at step ``t``, in group order: an event round for each group in
        ``touched`` (where jobs arrived, ended or moved since its last round) and a full
        round for each group :meth:`full_groups` names; only groups with waiting jobs."""
        if self.allocator is not None:
            self.allocator.step(t)
            return
        for g in touched:
            self.events_since_round[g] = True
            self.changed_since_full[g] = True
        if not self.sim.queues.n_waiting:
            return
        full = self.full_groups(t) if on_multiple(t, self.config.quantum) else _NO_GROUPS
        preemption = self.config.preemption
        due = full | touched
        for g in sorted(due) if len(due) > 1 else due:
            if self.group_waiting[g]:
                self.round(g, preemptive=preemption and g in full, full=g in full)

    def full_groups(self, t: float) -> set[int]:
        """The groups with waiting jobs due a full round at ``t``, a quantum boundary."""
        pending, valid_until = self._pending(), self.wake_at
        leap = self.config.leap and self._skip_rounds
        return {
            g
            for g, n in enumerate(self.group_waiting)
            if n and (not leap or pending[g] or valid_until[g] <= t + EPS)
        }

    # -- a round ------------------------------------------------------------------------------

    def round(self, group: int, preemptive: bool, full: bool) -> bool:
        """One scheduling round of one group; returns whether anything started or was
        preempted, and updates the group's flags."""
        now, promoted = self.clock.now, False
        first_try = len(self.records.try_job)
        self._round_flags = ROUND_FULL if preemptive else 0
        reranked = self.scheduler.dynamic and now >= self.ranking_valid_until[group] - EPS
        if reranked:
            # the ranking may have changed; promotions (service resets) are due only now
            self.epoch[group] += 1
            self.ranker.forget(group)
            self._evict_epoch[group] += 1
            promoted = self.ranker.apply_service_resets(group)
        if now >= self.protected_until[group] - EPS:
            self.epoch[group] += 1  # running jobs became evictable
            self._evict_epoch[group] += 1
        reclaims = self.sim.tenancy.reclaims
        changed, look_again = self._decide(group, preemptive)
        self.events_since_round[group] = False
        if full and self.config.preemption:
            # With one queue and head-of-line blocking a round stops at the first job that
            # cannot start, after every change it made: the same round again would find that
            # job in the same state (in the same place, if the ranking is round-stable) and
            # stop there too. Otherwise it may have left room for jobs it had passed over.
            self.changed_since_full[group] = changed and self._rescan_after_change[group]
        elif changed:
            self.changed_since_full[group] = True
        if changed and not self._round_stable:
            self.events_since_round[group] = True  # the waiting jobs' order may have moved
        self._again.discard(group)
        if look_again or self.sim.tenancy.reclaims != reclaims:
            # the same round again may start jobs this one could not (docs/semantics.md)
            self.events_since_round[group] = self.changed_since_full[group] = True
            self._again.add(group)
        if not self.scheduler.dynamic:
            self.ranking_valid_until[group] = math.inf
        elif (
            not self._skip_rounds
            or changed
            or promoted
            or self.ranking_valid_until[group] <= now + EPS
            or (self._arrived[group] and not self.scheduler.arrivals_keep_next_change)
            or self.change_unknown[group]
        ):
            # otherwise the old bound still holds: a completion can only put a change off
            # (an early bound is safe), and so can an arrival if the scheduler says so
            self.ranking_valid_until[group], self.change_unknown[group] = bound_ranking(self, group)
        if self.config.preemption and (
            not self._skip_rounds
            or changed
            or reranked
            or self._arrived[group]
            or self.protected_until[group] <= now + EPS
        ):
            self.protected_until[group] = next_unprotected(self, group)
        self.wake_at[group] = min(self.ranking_valid_until[group], self.protected_until[group])
        self._arrived[group] = False
        self.records.rounds.append(
            (now, group, self._round_flags, first_try, self.protected_until[group])
        )
        return changed

    def _decide(self, group: int, preemptive: bool) -> tuple[bool, bool]:
        """The group's round: whether it changed anything, and whether the group is due
        another look (a start by borrowing, or after a job a reservation stopped)."""
        if (
            self._nothing_free_ends_round
            and not preemptive
            and not self.group_free[group]
            and not self.borrowers
        ):
            # no GPU free to this group and none to reclaim: nothing can start
            self._round_flags |= ROUND_NOTHING_FREE
            return False, False
        tenancy = self.sim.tenancy
        own_room = tenancy.own_room
        # backfill with a static ranking, no preemption: the tail of the last round may be
        # replayed (``tails``); ``ranks`` are the waiting jobs' ranks, in order
        replaying = self._replay_tails and not preemptive and not own_room
        if replaying:
            ranks = self.ranker.lend_waiting_ranks(group)  # (they stay as they are)
            ranked: Ranking = self.ranker.waiting_stream(ranks)
            tail = self._tails[group]
            if tail is not None and tail.epoch != self.epoch[group]:
                tail = None
            tail_rank = tail.ranks[0] if tail else -1
            tail_first = self.ranker.job_at_rank[tail_rank] if tail else -1
            mark_pos, mark_try = 0, len(self.records.try_job)  # after the last start
            marks: list[tuple[int, bool, tuple]] = []  # the round's tries with a reservation
        else:
            ranked, tail_first = self.ranker.ranked(group, preemptive), -1
        self.evictions.new_round(preemptive)
        blocked: set[int] = set()
        changed = False
        # EASY backfill: the reservations of the queues whose first job failed this round,
        # which every job tried after it must keep (an empty list: nothing to keep)
        active: list[Reservation] = []
        reserved_queues: set[int] = set()
        queue_of = self._queue
        queues_waiting = None if self._partitioned else 1  # counted when first needed
        start: int | None = 0
        records = self.records
        try_job, try_code, try_free = records.try_job, records.try_code, records.try_free
        marks_before = ([], set())
        # backfill, whole GPUs, no preemption, quota or room to reclaim: a job asking for more
        # GPUs than its group has free is full at a glance (``Shortcuts.full_at_a_glance``);
        # migration cannot help it either (too few GPUs are free to it in all)
        glance = self._full_at_a_glance and not preemptive and not self._borrowing
        glance_need, group_free = self._glance_need, self.group_free
        # ... and the jobs after it whose tries are known (``known_runs``) with it
        runs = self._known_runs if replaying and glance else None
        starts = self.starts  # each try returns why it failed (a StartTry)
        try_start = starts.try_start_alike if starts.alike else starts.try_start
        # the failed tries a job's needs answer at the group's epoch (``refused_alike``),
        # read here only (``try_start_alike`` does not look them up again)
        epoch, needs_of = self.epoch, starts.needs_of
        refused, refused_at = starts.refused_by_group[group], starts.alike_epoch
        # preemptive, on LAS's kept ranking: a job asking for more GPUs than its group has
        # free plus those the evictable running jobs below it hold fails to start and to
        # evict (``Shortcuts.evictions_at_a_glance``); counted again after any change
        below_glance = (
            self._evictions_at_a_glance
            and preemptive
            and not self._borrowing
            and isinstance(ranked, KeyedOrder)
        )
        below: EvictableBelow | None = None
        # ... and the jobs after such a job that it answers alike (``Shortcuts.glance_runs``)
        glance_runs = below_glance and self._glance_runs
        reserved = reserved_queues if self._easy else None
        # a job a reservation stopped may, once a later one started, no longer fit and then
        # make room of its own (which no reservation checks): the group is looked at again
        held = look_again = False
        while start is not None:
            order, start = ranked.waiting_from(start), None
            for pos, j in order:  # each waits still: only the job at hand starts
                if (
                    j == tail_first
                    and not changed
                    and comes_next(tail, ranks, pos, active, reserved_queues)
                ):
                    replay(tail, self.records, self._blocking_now, marks)
                    active = list(tail.active_after)
                    reserved_queues = set(tail.queues_after)
                    start = pos + len(tail.ranks)  # read on after them
                    break
                vc = queue_of[j]
                if vc in blocked:
                    continue
                glanced = False
                if glance and glance_need[j] > group_free[group]:
                    # more GPUs than its group has free: full, as try_start would find
                    if vc in reserved_queues or not self._easy:
                        if runs is not None:  # (and the tail next is replayed)
                            stop = tail_rank if not changed else -1
                            start = pos + 1 + runs.record(group, ranks, pos, reserved_queues, stop)
                            break
                        try_job.append(j)
                        try_code.append(FULL)
                        try_free.append(group_free[group])
                        continue
                    glanced, why, room = True, FULL, group_free[group]  # it reserves, below
                elif below_glance and glance_need[j] > group_free[group]:
                    if below is None:
                        below = self._belows.of(ranked, group, self.clock.now + EPS)
                        below_keys, held_from = below.keys, below.held_from
                    # (``below.gpus_below(pos)``, inline: asked for most jobs tried)
                    room = group_free[group]
                    if glance_need[j] > room + held_from[bisect_right(below_keys, pos)]:
                        # full, and evicting every job it may evict frees too few GPUs
                        glanced = True
                        protected = below.lowest_protected > pos
                        why = FULL | (PREEMPT_PROTECTED if protected else PREEMPT_NO_ROOM)
                        if glance_runs and (vc in reserved_queues or not self._easy):
                            # ... and the jobs after it a glance answers alike, at once
                            run, after = below.run_after(ranked.waiting, pos, room, reserved)
                            if run:
                                try_job += [j, *run]
                                try_code += [why] * (len(run) + 1)
                                try_free += [room] * (len(run) + 1)
                                if len(run) > 12:  # read on from after them, or skip them
                                    start = after
                                    break
                                next(islice(order, len(run), len(run)), None)
                                continue
                if not glanced:
                    tried = (
                        refused.get(needs_of[j]) if refused_at[group] == epoch[group] else None
                    ) or try_start(j, active)
                    if tried.started:
                        changed, look_again = True, look_again or held
                        if below is not None:
                            below.started(pos)
                        if replaying:
                            mark_pos, mark_try = pos + 1, len(try_job)
                            marks_before = (list(active), set(reserved_queues))
                        continue
                    why, room = tried.why, tried.room  # why it did not fit (the records)
                    if why == RESERVED:  # it fits, but would delay a reservation: it waits
                        held = own_room
                        if replaying:
                            marks.append((len(try_job), True, (j, len(active))))
                        records.try_reserved[len(try_job)] = tried.blocking
                        try_job.append(j)
                        try_code.append(why)
                        try_free.append(room)
                        continue
                    if own_room:
                        made = tenancy.try_own_room(j)
                        if made.started:
                            changed, look_again = True, look_again or held
                            continue
                        why |= made.why
                    if preemptive:
                        preempt_why = self.evictions.try_preempt_for(j, ranked, pos)
                        if not preempt_why:
                            # its victims wait now, further down the order: read the rest anew
                            changed, start, below = True, pos + 1, None
                            break
                        why |= preempt_why
                if self._easy and vc not in reserved_queues:
                    reserved_queues.add(vc)
                    reservation = self.easy.reservation_for(j, vc)
                    if reservation is not None:
                        active.append(reservation)
                        records.try_reserved[len(try_job)] = (j, reservation.at)
                        if replaying:
                            marks.append((len(try_job), False, (j, reservation.at)))
                try_job.append(j)
                try_code.append(why)
                try_free.append(room)
                if not self.config.backfill:
                    blocked.add(vc)
                    if queues_waiting is None:
                        queues_waiting = sum(
                            1 for v in self.group_vcs[group] if self.vc_waiting_jobs[v]
                        )
                    if len(blocked) >= queues_waiting:
                        break
        if replaying:
            self._tails[group] = make_tail(
                records,
                self.epoch[group],
                ranks[mark_pos:],
                mark_try,
                marks_before,
                (active, reserved_queues),
                marks,
            )
            self.ranker.take_back_waiting_ranks()
        if self._borrowing and self.sim.queues.n_waiting and borrow_round(self, group, active):
            changed = look_again = True
        return changed, look_again

    def _blocking_now(self, j: int, active: list[Reservation]) -> tuple[int, float]:
        """The reservation (its head and time) that stops ``j`` now among ``active``."""
        first = self.easy.kept_by(j, active)[0]
        return first.head, first.at
