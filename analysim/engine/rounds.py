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

The tenancy asks it :meth:`Rounds.try_start`, :meth:`Rounds.place`,
:meth:`Rounds.quota_allows`, :meth:`Rounds.fits_hypothetically`,
:meth:`Rounds.fewest_to_free` and ``epoch`` (its failed-try memos).

It owns its state: the kept rankings (and a static scheduler's ranks), the per-group flags
that let a round be skipped (``events_since_round``, ``changed_since_full``,
``ranking_valid_until``, ``protected_until``, ``wake_at``), the epochs and the "failed at"
memos, EASY backfill's reservations, and why each job last failed (for the records). It
reads the cluster from the ledger (``free``, ``vc_used``, ... never written here), asks the
scheduler and the placer, checks their answers, and changes state only through the
engine's ``start_running`` and ``preempt`` (and the tenancy's tries). See
``docs/semantics.md`` for the rules.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.book_fit import BookFit, BookTrial
from analysim.engine.clock import EPS, ceil_to, on_multiple
from analysim.engine.ranking import ArrayRanking, Ranking, WaitingStream
from analysim.engine.records import (
    BORROW_FAILED,
    FRAGMENTED,
    FULL,
    PREEMPT_NO_ROOM,
    PREEMPT_PROTECTED,
    QUOTA,
    RESERVED,
    ROUND_FULL,
    ROUND_NOTHING_FREE,
)
from analysim.engine.reservations import Reservation
from analysim.engine.tails import Tail, make_tail, replay, same_reservations
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain
from analysim.policies.placement import SMALL
from analysim.policies.scheduling import JobView

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

_NO_GROUPS: frozenset[int] = frozenset()  # off a quantum boundary: no group's full round


class Rounds:
    """The scheduling rounds of the simulation ``sim``, group by group."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        #: resource mode: where a job fits on the book of GPU milli, CPU and memory (asked in
        #: place of the whole-GPU counting below); None with whole GPUs only
        self._book_fit = BookFit(self) if sim.resource_mode else None
        #: whether a job's needs are its domain, GPUs and VC (resource mode: not only)
        self._needs_are_gpus = self._book_fit is None
        # what the rounds read of the engine: its parts, its policies, and per job and per
        # group containers it changes in place (never rebound after set-up)
        self.clock, self.ledger, self.records = sim.clock, sim.ledger, sim.records
        self.config, self.shortcuts = sim.config, sim.shortcuts
        self.scheduler, self.placer, self.rng = sim.scheduler, sim.placer, sim.rng
        self._ask_placer = sim.ask_placer
        flags = sim.flags  # local names: the hot loop reads them often
        self._skip_rounds = flags.skip_rounds
        self._picks_one_node = flags.picks_one_node
        self._picks_any_fitting_node = flags.picks_any_fitting_node
        self._borrowing, self._partitioned = flags.borrowing, flags.partitioned
        self._static, self._ranking_kept = flags.static, flags.ranking_kept
        ledger = sim.ledger
        # the ledger's arrays and lists: read, never written here
        self.free, self.free_slots, self.group_free = (
            ledger.free,
            ledger.free_slots,
            ledger.group_free,
        )
        self.vc_used, self.borrowed, self.borrowers = (
            ledger.vc_used,
            ledger.borrowed,
            ledger.borrowers,
        )
        self.alloc_nodes, self.alloc_counts = ledger.alloc_nodes, ledger.alloc_counts
        self._alloc_pairs = ledger.alloc_pairs
        # the jobs: fixed values, and the state the engine changes (read here)
        self.job_ids, self.job_domain = sim.job_ids, sim.job_domain
        facts = sim.facts  # (lists: local names, read one item at a time)
        self._gpus, self._usage, self._vc, self._queue = (
            facts.gpus,
            facts.usage,
            facts.vc,
            facts.queue,
        )
        self._group, self._domain = facts.group, facts.domain
        self._domain_index, self._node_position = facts.domain_index, facts.node_position
        self._columns = facts.columns
        # no VC has a quota (VCs own nodes, or one pool): a start never needs the quota check
        self._quotas = any(d.quota is not None for d in sim.partition.domains)
        self.status, self.remaining, self.since = sim.status, sim.remaining, sim.since
        # each running job's rate, and the lowest rate each job can have (engine/speed.py)
        self.rate, self._slowest = sim.rate, sim.speed.slowest
        self.attained, self.evictable_from = sim.attained, sim.evictable_from
        self.waiting, self.running, self.group_waiting = sim.waiting, sim.running, sim.group_waiting
        self.group_vcs, self.vc_waiting_jobs = sim.group_vcs, sim.vc_waiting_jobs
        self._init_state(sim.partition.n_groups)

    def _init_state(self, groups: int) -> None:
        """The rounds' own state."""
        sim, scheduler = self.sim, self.scheduler
        self._promoted = False  # whether the current round reset any job's attained service
        self._kept_ranking: list[Any] = [None] * groups  # see _ranked
        if self._static:
            self._rank_all_jobs()
        self._waiting_ranks: list[list[int]] = [[] for _ in range(groups)]
        self._releases = [0] * groups  # times GPUs of each group were released
        # job -> its group's release count when it did not fit
        self._failed_at: dict[int, int] = self.shortcuts.memo()
        # for the records: why each job last did not fit, or could not preempt its way in
        self._start_why: dict[int, int] = {}
        self._preempt_why_of: dict[int, int] = {}
        self._why = self._preempt_why = self._room_seen = self._round_flags = 0
        # EASY backfill: per group, queue -> its first job's reservation (``reservations``);
        # the reservation that last stopped a job (its head and time, for the records)
        self._easy = self.config.backfill == "easy"
        self._reservations: list[dict[int, Any]] = [{} for _ in range(groups)]
        # backfill rounds that replay the tail of the one before (``tails``): not with a
        # placer that draws (it may draw when it fails), nor in resource mode
        self._replay_tails = (
            self.shortcuts.replayed_tails
            and self._static
            and bool(self.config.backfill)
            and self._needs_are_gpus
            and not self.placer.random
            and not self._borrowing
        )
        self._tails: list[Tail | None] = [None] * groups
        self._full_at_a_glance = (
            self.shortcuts.full_at_a_glance
            and bool(self.config.backfill)
            and self._needs_are_gpus
            and not self._quotas
        )
        self._blocking: tuple[int, float] = (-1, math.nan)
        # per group: how many times its jobs took GPUs (a reservation kept past releases it
        # foresaw: ``_foresaw_releases``)
        self._takes = [0] * groups
        # (resource mode: not kept, its free GPUs are not only those of the jobs that left;
        # nor with a placer that draws: made again later, it may be placed elsewhere)
        self._keep_reservations = (
            self._needs_are_gpus and self.shortcuts.kept_reservations and not self.placer.random
        )
        #: per group, a counter bumped by every start, release, promotion and ranking change:
        #: a job that could not start or preempt its way in is not tried again until it moves
        self.epoch = [0] * groups
        self._preempt_failed_at: dict[int, int] = self.shortcuts.memo()
        # the same for preemption alone, which starts cannot help when the ranking is
        # round-stable (a started job is protected, and it only takes GPUs away)
        self._evict_epoch = [0] * groups
        # in the round at hand: (domain, GPUs, VC) -> the group's epoch when a job of those
        # needs failed its trial evictions (None: not kept)
        self._alike = self._needs_are_gpus and self.shortcuts.alike_evictions
        self._evictions_failed: dict[tuple[int, int, int], int] | None = None
        # the ranking, epoch and time at which _protected_below was last asked, whether it
        # found the position of the lowest-ranked protected running job then, and that
        self._protection_bound = self.shortcuts.protection_bound
        self._protection_seen: tuple[Ranking, int, float, bool, int | None] | None = None
        # EASY backfill: job -> (release count, epoch, the reservations) when only those
        # reservations stopped it (a placer that draws may draw when it fails: not kept)
        self._room_first = self._needs_are_gpus and self.shortcuts.reserved_memo
        self._reserved_seen: dict[int, tuple[int, int, list[Reservation]]] = self.shortcuts.memo(
            self.shortcuts.reserved_memo and not self.placer.random
        )
        # per group: arrivals or completions since its last round; any change since its last
        # preemptive round; the time until which its ranking is known not to change
        self.events_since_round = [True] * groups
        self._arrived = [False] * groups  # jobs arrived since the group's last round
        self.changed_since_full = [True] * groups
        self.ranking_valid_until = [-math.inf] * groups
        self._change_unknown = [False] * groups  # see _bound_ranking
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

    def _rank_all_jobs(self) -> None:
        """Rank every job once by a static scheduler's keys (ties by job order)."""
        n_jobs = self.sim.n_jobs
        view = JobView(0.0, np.arange(n_jobs), self._columns, list(self.vc_used))
        keys = [np.asarray(k) for k in self.scheduler.priority(view)]
        order = np.lexsort([view.index, *reversed(keys)])
        rank = np.empty(n_jobs, dtype=np.int64)
        rank[order] = np.arange(n_jobs)
        self._rank_of = rank.tolist()
        self._job_at_rank = order.tolist()

    # -- what the engine tells the rounds -----------------------------------------------------
    def arrived(self, group: int) -> None:
        """A job of ``group`` arrived: its ranking is to be made afresh."""
        self._kept_ranking[group] = None
        self._arrived[group] = True

    def took(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> None:
        """``j`` took GPUs (started or moved)."""
        if self._easy:
            self._takes[self._group[j]] += 1
            self._claim_reservations(j, nodes, counts)
        group = self._group[j]
        self.epoch[group] += 1
        if not self._round_stable:
            self._evict_epoch[group] += 1

    def released(self, j: int) -> None:
        """``j`` gave its GPUs back (ended, was evicted, or is moving)."""
        group = self._group[j]
        self._releases[group] += 1
        self.epoch[group] += 1
        self._evict_epoch[group] += 1

    def queued(self, j: int) -> None:
        """``j`` waits (again): a static scheduler's waiting ranks keep it."""
        bisect.insort(self._waiting_ranks[self._group[j]], self._rank_of[j])

    def unqueued(self, j: int) -> None:
        """``j`` stopped waiting."""
        ranks = self._waiting_ranks[self._group[j]]
        del ranks[bisect.bisect_left(ranks, self._rank_of[j])]

    # -- when rounds are due ------------------------------------------------------------------
    def _pending(self) -> list[bool]:
        """Per group: has anything happened that a full round at the next boundary must
        consider? (Without preemption, a repeated round changes nothing: starting jobs only
        takes GPUs away from the ones that did not fit. With it, an eviction may open room.)"""
        return self.changed_since_full if self.config.preemption else self.events_since_round

    def next_full_round(self, before: float) -> float | None:
        """The next quantum boundary before ``before`` at which a full round could change
        anything, if any."""
        skip = self._skip_rounds
        if skip and not (
            self.config.preemption or self.scheduler.dynamic or not self._round_stable
        ):
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
                change = min(change, wake)
        if math.isinf(change):
            return None
        due = max(after, ceil_to(change, quantum))
        return due if due < before else None

    def step(self, t: float, touched: set[int]) -> None:
        """The rounds due at step ``t``, in group order: an event round for each group in
        ``touched`` (where jobs arrived, ended or moved since its last round) and a full
        round for each group :meth:`full_groups` names; only groups with waiting jobs."""
        for g in touched:
            self.events_since_round[g] = True
            self.changed_since_full[g] = True
        if not self.sim.n_waiting:
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

    def _view(self, group: int, include_running: bool) -> JobView:
        waiting = self.waiting[group]
        if include_running:
            running = self.running[group]
            jobs, count = chain(waiting, running), len(waiting) + len(running)
        else:
            jobs, count = iter(waiting), len(waiting)
        index = np.fromiter(jobs, dtype=np.int64, count=count)
        return JobView(self.clock.now, index, self._columns, self.sim.tenancy.held_by_vc())

    def _ranked(self, group: int, preemptive: bool) -> Ranking:
        """The group's jobs in rank order: its waiting jobs, and its running ones too if
        ``preemptive`` (or if the ranking is kept between rounds; finished jobs may be among
        them then, until it is next ranked). LAS's kept ranking is a :class:`KeyedOrder`."""
        if self._static:
            return self._ranked_static(group, preemptive)
        if self._ranking_kept:
            kept = self._kept_ranking[group]
            if kept is None:
                las = self.sim.las
                kept = (
                    las.order(group)
                    if las
                    else ArrayRanking(self._rank(group, include_running=True), self.status)
                )
                self._kept_ranking[group] = kept
            return kept
        if not preemptive and self.group_waiting[group] == 1 and self._skip_rounds:
            return WaitingStream(iter(list(self.waiting[group])))  # one job: nothing to rank
        return ArrayRanking(self._rank(group, include_running=preemptive), self.status)

    def _rank(self, group: int, include_running: bool) -> np.ndarray:
        """Ask the scheduler to rank the group's waiting (and running) jobs."""
        view = self._view(group, include_running=include_running)
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
        job_at = self._job_at_rank
        if not preemptive:
            return WaitingStream(map(job_at.__getitem__, self._waiting_ranks[group].copy()))
        ranks = self._waiting_ranks[group] + [self._rank_of[j] for j in self.running[group]]
        order = np.array(job_at, dtype=np.int64)[np.sort(ranks)] if ranks else np.zeros(0, int)
        return ArrayRanking(order, self.status)

    def _apply_service_resets(self, group: int) -> bool:
        """Reset the attained service of the group's waiting jobs that the scheduler
        promotes; True if any."""
        if self.sim.las is not None:
            promoted = self.sim.las.promotions(group)
            if not promoted:
                return False
            self.attained[promoted] = 0.0
        else:
            view = self._view(group, include_running=False)
            resets = self.scheduler.service_resets(view)
            if resets is None or not np.any(resets):
                return False
            self.attained[view.index[np.asarray(resets, dtype=bool)]] = 0.0
        self._promoted = True
        self._kept_ranking[group] = None
        return True

    def round(self, group: int, preemptive: bool, full: bool) -> bool:
        """One scheduling round of one group; returns whether anything started or was
        preempted, and updates the group's flags."""
        self._promoted = False
        now = self.clock.now
        first_try = len(self.records.try_job)
        self._round_flags = ROUND_FULL if preemptive else 0
        reranked = self.scheduler.dynamic and now >= self.ranking_valid_until[group] - EPS
        if reranked:
            # the ranking may have changed; promotions (service resets) are due only now
            self.epoch[group] += 1
            self._kept_ranking[group] = None
            self._evict_epoch[group] += 1
            self._apply_service_resets(group)
        if now >= self.protected_until[group] - EPS:
            self.epoch[group] += 1  # running jobs became evictable
            self._evict_epoch[group] += 1
        changed = self._decide(group, preemptive)
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
        if not self.scheduler.dynamic:
            self.ranking_valid_until[group] = math.inf
        elif (
            not self._skip_rounds
            or changed
            or self._promoted
            or self.ranking_valid_until[group] <= now + EPS
            or (self._arrived[group] and not self.scheduler.arrivals_keep_next_change)
            or self._change_unknown[group]
        ):
            # otherwise the old bound still holds: a completion can only put a change off
            # (an early bound is safe), and so can an arrival if the scheduler says so
            self._bound_ranking(group)
        if self.config.preemption and (
            not self._skip_rounds
            or changed
            or reranked
            or self._arrived[group]
            or self.protected_until[group] <= now + EPS
        ):
            self.protected_until[group] = self._next_unprotected(group)
        self.wake_at[group] = min(self.ranking_valid_until[group], self.protected_until[group])
        self._arrived[group] = False
        self.records.rounds.append(
            (now, group, self._round_flags, first_try, self.protected_until[group])
        )
        return changed

    def _bound_ranking(self, group: int) -> None:
        """Ask the scheduler until when the group's ranking holds. While no job of the group
        waits, nothing reads the ranking and the next job to wait arrives (its round asks
        then); if arrivals cannot bring the change forward, asking is put off until then."""
        if (
            self._skip_rounds
            and not self.group_waiting[group]
            and self.scheduler.arrivals_keep_next_change
        ):
            self.ranking_valid_until[group] = math.inf
            self._change_unknown[group] = True
            return
        if self.sim.las is not None:
            self.ranking_valid_until[group] = self.sim.las.next_change(group)
        else:
            view = self._view(group, include_running=True)
            self.ranking_valid_until[group] = self.scheduler.next_change(view)
        self._change_unknown[group] = False

    def _next_unprotected(self, group: int) -> float:
        """When the group's next running job that ranks below one of its waiting jobs may
        be evicted (its protection ends); only such a job can make room for one.

        The answer holds until jobs arrive, start or stop, or the ranking changes. Where
        the positions are not at hand (a ranking made afresh each round), every running
        job counts: an early answer only costs a round that changes nothing."""
        now, running = self.clock.now + EPS, self.running[group]
        if self._static:
            waiting = self._waiting_ranks[group]
            if not waiting:
                return math.inf
            top, rank_of = waiting[0], self._rank_of
            running = [r for r in running if rank_of[r] > top]
        elif self._ranking_kept and self._kept_ranking[group] is not None:
            kept: Ranking = self._kept_ranking[group]
            first = kept.first_waiting()
            if first is None:
                return math.inf
            evictable_from = self.evictable_from
            later = [evictable_from[r] for r in kept.running_below(first)]
            return float(min([t for t in later if t > now], default=math.inf))
        later = [t for t in map(self.evictable_from.item, running) if t > now]
        return min(later, default=math.inf)

    def _decide(self, group: int, preemptive: bool) -> bool:
        if (
            self._nothing_free_ends_round
            and not preemptive
            and not self.group_free[group]
            and not self.borrowers
        ):
            # no GPU free to this group and none to reclaim: nothing can start
            self._round_flags |= ROUND_NOTHING_FREE
            return False
        tenancy = self.sim.tenancy
        own_room = tenancy.own_room
        # backfill with a static ranking, no preemption: the tail of the last round may be
        # replayed (``tails``); ``ranks`` are the waiting jobs' ranks, in order
        replaying = self._replay_tails and not preemptive and not own_room
        if replaying:
            ranks = self._waiting_ranks[group].copy()
            ranked: Ranking = WaitingStream(map(self._job_at_rank.__getitem__, ranks))
            tail = self._tails[group]
            if tail is not None and tail.epoch != self.epoch[group]:
                tail = None
            tail_first = self._job_at_rank[tail.ranks[0]] if tail else -1
            mark_pos, mark_try = 0, len(self.records.try_job)  # after the last start
            marks: list[tuple[int, bool, tuple]] = []  # the round's tries with a reservation
        else:
            ranked, tail_first = self._ranked(group, preemptive), -1
        self._evictions_failed = {} if self._alike and preemptive else None
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
        # GPUs than its group has free is full at a glance (``Shortcuts.full_at_a_glance``)
        glance = self._full_at_a_glance and not preemptive and not own_room
        gpus, group_free = self._gpus, self.group_free
        covers, domain_index = self._covers_group, self._domain_index
        while start is not None:
            order, start = ranked.waiting_from(start), None
            for pos, j in order:  # each waits still: only the job at hand starts
                if j == tail_first and not changed:
                    if self._replay_tail(tail, ranks, pos, active, reserved_queues, marks):
                        active = list(tail.active_after)
                        reserved_queues = set(tail.queues_after)
                        deque(islice(order, len(tail.ranks) - 1), maxlen=0)  # tried
                        continue
                vc = queue_of[j]
                if vc in blocked:
                    continue
                if (
                    glance
                    and gpus[j] > group_free[group]
                    and covers[domain_index[j]]
                    and (vc in reserved_queues or not self._easy)
                ):
                    # more GPUs than its group has free: full, as try_start would find
                    try_job.append(j)
                    try_code.append(FULL)
                    try_free.append(group_free[group])
                    continue
                if self.try_start(j, active):
                    changed = True
                    if replaying:
                        mark_pos, mark_try = pos + 1, len(try_job)
                        marks_before = (list(active), set(reserved_queues))
                    continue
                why, room = self._why, self._room_seen  # why it did not fit (the records)
                if why == RESERVED:  # it fits, but would delay a reservation: it waits
                    if replaying:
                        marks.append((len(try_job), True, (j, len(active))))
                    records.try_reserved[len(try_job)] = self._blocking
                    try_job.append(j)
                    try_code.append(why)
                    try_free.append(room)
                    continue
                if own_room:
                    if tenancy.try_own_room(j):
                        changed = True
                        continue
                    why |= tenancy.own_room_why
                if preemptive:
                    if self._try_preempt_for(j, ranked, pos):
                        # its victims wait now, further down the order: read the rest anew
                        changed, start = True, pos + 1
                        break
                    why |= self._preempt_why
                if self._easy and vc not in reserved_queues:
                    reserved_queues.add(vc)
                    reservation = self._reservation_for(j, vc)
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
        if self._borrowing and self.sim.n_waiting:
            changed = self._borrow_round(group, active) or changed
        return changed

    def _replay_tail(
        self,
        tail: Tail,
        ranks: list[int],
        pos: int,
        active: list[Reservation],
        queues: set[int],
        marks: list[tuple[int, bool, tuple]],
    ) -> bool:
        """Replay the last round's tail if its jobs come next (``ranks`` from ``pos``) with
        the same reservations to keep (``tails``); whether it did."""
        n = len(tail.ranks)
        if (
            ranks[pos : pos + n] != tail.ranks
            or queues != tail.queues_before
            or not same_reservations(active, tail.active_before)
        ):
            return False
        replay(tail, self.records, self._blocking_now, marks)
        return True

    def _blocking_now(self, j: int, active: list[Reservation]) -> tuple[int, float]:
        """The reservation (its head and time) that stops ``j`` now among ``active``."""
        first = self._kept_by(j, active)[0]
        return first.head, first.at

    def _borrow_round(self, group: int, active: list[Reservation]) -> bool:
        """After every job has had its chance on its own GPUs: waiting jobs, in order, try
        idle GPUs of other VCs (each queue's head only, without backfill). A job that comes
        to the head once the one before it has borrowed tries its own GPUs first."""
        changed = False
        done: set[int] = set()
        records = self.records
        for _, j in self._ranked(group, False).waiting_from(0):
            vc = self._queue[j]
            if vc in done:
                continue
            if self.try_start(j, active):  # the head may have moved on
                changed = True
                continue
            why, room = self._why, self._room_seen
            if why == RESERVED:
                records.try_reserved[len(records.try_job)] = self._blocking
            if self.sim.tenancy.try_borrow(j):
                changed = True
                continue
            records.try_job.append(j)
            records.try_code.append(why | BORROW_FAILED)
            records.try_free.append(room)
            if not self.config.backfill:
                done.add(vc)
        return changed

    def quota_allows(self, j: int, vc_used: np.ndarray) -> bool:
        """Would ``j`` keep its VC within its quota, given ``vc_used``?"""
        if self._book_fit is not None:
            return self._book_fit.quota_allows(j, vc_used)
        quota = self._domain[j].quota
        return quota is None or vc_used[self._vc[j]] + self._gpus[j] <= quota

    def place(
        self, j: int, free: np.ndarray, domain: Domain | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Ask the placer for GPUs for ``j`` on its own nodes (or those of ``domain``) given
        the ``free`` GPUs per node; return the nodes and GPUs per node it chose (checked),
        or None. (Resource mode: where it goes on the book now, with its claims.)"""
        if self._book_fit is not None:
            placed, why, room = self._book_fit.place(j, domain)
            if placed is None:
                self._why, self._room_seen = why, room
            return placed
        own = domain is None
        domain, need = (self._domain[j] if own else domain), self._gpus[j]
        if own and free is self.free and self._covers_group[self._domain_index[j]]:
            room = self.group_free[self._group[j]]  # counted already
            if room < need:
                self._why, self._room_seen = FULL, room
                return None
            free = free[domain.nodes]
        else:
            free = free[domain.nodes]
            room = int(free.sum())
            if room < need:
                self._why, self._room_seen = FULL, room
                return None
        take = self._ask_placer(need, free, domain.topology)
        if take is None:
            # enough GPUs free, but no placement of them fits
            self._why, self._room_seen = FRAGMENTED, room
            return None
        if isinstance(take, (int, np.integer)):  # one node, from the placer's pick_node
            if not 0 <= take < len(free) or free[take] < need:
                raise PolicyError(
                    f"placement policy {self.placer.name!r} gave job {self.job_ids[j]!r}: "
                    f"node {take} of {len(free)}, which has not {need} GPUs free"
                )
            take = int(take)
            return domain.nodes[take : take + 1], np.array([need])
        chosen = np.flatnonzero(take) if isinstance(take, np.ndarray) else None
        problem = None
        if chosen is None or take.shape != free.shape or take.dtype.kind not in "iu":
            problem = f"an array of {free.shape[0]} whole numbers, got {take!r}"
        else:  # few nodes: plain Python beats numpy here
            counts = take[chosen]
            wanted, room = counts.tolist(), free[chosen].tolist()
            if any(c < 0 or c > f for c, f in zip(wanted, room, strict=True)):
                problem = "GPUs that are not free to this job (double-booked or outside its VC)"
            elif sum(wanted) != need:
                problem = f"{sum(wanted)} GPUs for a job that asks for {need}"
        if problem:
            raise PolicyError(
                f"placement policy {self.placer.name!r} gave job {self.job_ids[j]!r}: {problem}"
            )
        return domain.nodes[chosen], counts

    def try_start(self, j: int, active: list[Reservation] | None = None) -> bool:
        """Start ``j`` on free GPUs if it fits (and, with EASY backfill, if it keeps the
        ``active`` reservations; ``_why`` is RESERVED when only they stop it). A job that
        did not fit is not tried again until GPUs of its group are released: placement only
        gets easier as GPUs free up (asked first: on the GPUs the ``active`` reservations
        leave it fits no better)."""
        group = self._group[j]
        if self._failed_at.get(j) == self._releases[group]:
            # as it was (``_why`` for the records): GPUs only got fewer since
            why = self._start_why[j]
            if why == QUOTA or (self._quotas and not self.quota_allows(j, self.vc_used)):
                why = QUOTA
                self._room_seen = self._quota_room(j)
            else:
                self._room_seen = self._room_of(j)
                if why == FRAGMENTED and self._room_seen < self._gpus[j]:
                    why = FULL
            self._why = why
            return False
        if active:
            keep = self._kept_by(j, active)
            if keep:
                return self._try_start_keeping(j, keep)
        if not self._quotas or self.quota_allows(j, self.vc_used):  # the quota first
            placed = self.place(j, self.free)  # sets ``_why`` when it finds none
        else:
            placed, self._why = None, QUOTA
            self._room_seen = self._quota_room(j)
        if placed is None:
            self._failed_at[j] = self._releases[group]
            self._start_why[j] = self._why
            return False
        self.sim.start_running(j, *placed)
        return True

    def _quota_room(self, j: int) -> int:
        """The whole GPUs left in ``j``'s VC's quota (the records of a ``quota`` try; the
        ledger counts GPU milli in resource mode)."""
        quota, used = self._domain[j].quota, int(self.vc_used[self._vc[j]])
        unit = self.ledger.unit
        return quota - used if unit == 1 else (quota * unit - used) // unit

    def _kept_by(self, j: int, active: list[Reservation]) -> list[Reservation]:
        """The reservations ``j`` would delay if it ran past them: those it does not end
        before (its run seen to end at the step its remaining work ends at its slowest rate,
        wherever it is placed)."""
        due = self.clock.due(self.clock.now + float(self.remaining[j]) / self._slowest[j])
        return [r for r in active if r.head != j and r.runs_past(due) and not r.broken]

    def _try_start_keeping(self, j: int, keep: list[Reservation]) -> bool:
        """Start ``j`` on GPUs that the reservations ``keep`` do not need, if it fits there;
        else ``_why`` says why: RESERVED if it would fit on all free GPUs."""
        group = self._group[j]
        releases = self._releases[group]
        if not self.quota_allows(j, self.vc_used):
            return self.try_start(j)
        if self._room_first and self._room_of(j) < self._gpus[j]:
            # too few GPUs free on its nodes, let alone spare: neither placement below would
            # ask the placer, and both would fail
            return self.try_start(j)
        seen = self._reserved_seen.get(j)
        if (
            seen is not None
            and seen[0] == releases
            and len(seen[2]) == len(keep)
            and all(a is b for a, b in zip(seen[2], keep, strict=True))
        ):
            # the same reservations stopped it and no GPU was released since: the free and
            # spare GPUs only got fewer, so it still does not fit on those they leave; it
            # still fits on the free GPUs if nothing started or stopped since
            if seen[1] != self.epoch[group] and not self._fits_now(j):
                return self.try_start(j)  # does not fit even on every free GPU
        else:
            placed = self._place_keeping(j, keep)
            if placed is not None:
                self.sim.start_running(j, *placed)
                return True
            if not self._fits_now(j):
                return self.try_start(j)  # does not fit even on every free GPU
            self._reserved_seen[j] = (releases, self.epoch[group], keep)
        self._why, self._room_seen = RESERVED, self._room_of(j)
        blocking = keep[0]
        self._blocking = (blocking.head, blocking.at)
        return False

    def _place_keeping(
        self, j: int, keep: list[Reservation]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Where ``j`` goes on the free GPUs that the reservations ``keep`` leave spare (its
        VC's quota as they leave it too), or None."""
        if self._book_fit is not None:
            return self._book_fit.place_keeping(j, keep)
        gpus, vc = self._gpus[j], self._vc[j]
        if any(r.quota_spare is not None and r.vc == vc and gpus > r.quota_spare for r in keep):
            return None
        room = self.free.copy()
        for r in keep:
            np.minimum(room, np.maximum(r.spare, 0), out=room)
        return self.place(j, room)

    def _fits_now(self, j: int) -> bool:
        """Would ``j`` fit on every free GPU, reservations aside? (Draws nothing.)"""
        if self._book_fit is not None:
            return self._book_fit.fits_now(j)
        return self.fits_hypothetically(j, self.free, self.vc_used)

    def _reservation_for(self, j: int, queue: int) -> Reservation | None:
        """The reservation of ``j``, the first job of its queue that could not start: kept
        from an earlier round if still good, else made now (None if it would never fit)."""
        group = self._group[j]
        kept = self._reservations[group].get(queue)
        if kept is not None and kept.head == j and not kept.broken:
            if kept.releases == self._releases[group]:
                return kept
            if self._foresaw_releases(kept, group):
                kept.releases = self._releases[group]
                return kept
        made = self._make_reservation(j)
        if made is None:
            self._reservations[group].pop(queue, None)
        else:
            self._reservations[group][queue] = made
        return made

    def _foresaw_releases(self, kept: Reservation, group: int) -> bool:
        """Whether every release since ``kept`` was made is one its making foresaw, so that
        making it now would give it again: nothing of the group took GPUs since (no start,
        no move: it was not claimed, and the group's running jobs are some of those it
        counted, each to end at the step it counted), the running jobs now are exactly
        those it counted to end after now (the others released their GPUs, as it counted
        them to by now), and its time is still to come. Then the free GPUs (and quota used)
        now are those it counted at now, and from each later end on it counts the same."""
        ends = kept.ends
        if ends is None or kept.takes != self._takes[group]:
            return False
        now = self.clock.now + EPS
        if kept.at <= now:
            return False
        return len(ends) - bisect.bisect_right(ends, now) == len(self.running[group])

    def _make_reservation(self, j: int) -> Reservation | None:
        """The earliest step at which ``j`` fits once running jobs of its group end, and the
        GPUs the placer gives it then. Draws nothing from the rng."""
        group, domain, need = self._group[j], self._domain[j], self._gpus[j]
        if self._book_fit is not None:
            return self._book_fit.make_reservation(j, self._releases[group], self._takes[group])
        due_of, since, remaining, rate = self.clock.due, self.since, self.remaining, self.rate
        ends = sorted(
            (due_of(float(since[r]) + float(remaining[r]) / float(rate[r])), r)
            for r in self.running[group]
        )
        free, vc_used = self.free.copy(), list(self.vc_used)
        nodes = domain.nodes
        k = 0
        while k < len(ends):
            at = ends[k][0]
            while k < len(ends) and ends[k][0] <= at + EPS:
                self._release_into(ends[k][1], free, vc_used, +1)
                k += 1
            if int(free[nodes].sum()) < need or not self.fits_hypothetically(j, free, vc_used):
                continue
            take = self._placement_at(need, free[nodes], domain)
            reserved = np.zeros_like(free)
            if isinstance(take, (int, np.integer)):
                reserved[nodes[int(take)]] = need
            else:
                reserved[nodes] = take
            spare = np.full_like(free, np.iinfo(free.dtype).max // 4)
            spare[nodes] = free[nodes] - reserved[nodes]
            quota = domain.quota
            vc = self._vc[j]
            return Reservation(
                head=j,
                at=at,
                reserved=reserved,
                spare=spare,
                quota_spare=None if quota is None else quota - vc_used[vc] - need,
                vc=vc,
                releases=self._releases[group],
                ends=[e for e, _ in ends] if self._keep_reservations else None,
                takes=self._takes[group],
            )
        return None

    def _placement_at(self, need: int, room: np.ndarray, domain: Domain) -> np.ndarray | int:
        """Where the placer would put ``need`` GPUs given ``room`` (it fits), without
        drawing from the rng."""
        state = self.rng.bit_generator.state if self.placer.random else None
        take = self._ask_placer(need, room, domain.topology)
        if state is not None:
            self.rng.bit_generator.state = state
        if take is None:  # cannot happen: placer_fits said it fits
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return take

    def _claim_reservations(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> None:
        """``j`` took GPUs: the reservations of its group it runs past have fewer spare (a
        reservation whose head started is dropped)."""
        reservations = self._reservations[self._group[j]]
        if not reservations:
            return
        due = self.clock.due(self.clock.now + float(self.remaining[j]) / float(self.rate[j]))
        book_fit = self._book_fit
        for queue, r in list(reservations.items()):
            if r.head == j:
                del reservations[queue]
            elif not r.runs_past(due):
                continue
            elif book_fit is not None:  # on the reservation's book: its claims
                book_fit.claim(r, j)
            else:
                r.claim(nodes, counts, self._gpus[j], self._vc[j], not self.borrowed[j])

    def _room_of(self, j: int) -> int:
        """The GPUs free on ``j``'s own nodes."""
        if self._book_fit is not None:
            return self._book_fit.room_of(j)
        if self._covers_group[self._domain_index[j]]:
            return self.group_free[self._group[j]]
        return int(self.free[self._domain[j].nodes].sum())

    def _try_preempt_for(self, j: int, ranked: Ranking, pos: int) -> bool:
        """Evict the lowest-ranked running jobs below ``j`` (at ``pos`` in ``ranked``) that
        free room for it, if any do."""
        group = self._group[j]
        epoch = self._evict_epoch[group]
        if self._preempt_failed_at.get(j) == epoch:
            # nothing it could use has changed since it last failed (``_preempt_why``: why;
            # a job started since, below it, is protected)
            why = self._preempt_why_of[j]
            if why == PREEMPT_NO_ROOM and self._protected_below(ranked, pos, group):
                why = PREEMPT_PROTECTED
            self._preempt_why = why
            return False
        failed, needs, now_epoch = self._evictions_failed, None, 0
        if failed is not None:
            needs, now_epoch = (
                (self._domain_index[j], self._gpus[j], self._vc[j]),
                self.epoch[group],
            )
        protected = None  # whether a running job below it is protected (for the records)
        if needs is not None and failed.get(needs) == now_epoch:
            # a job ranked above it with the same needs failed, and nothing started or
            # stopped since: it could evict only some of the same jobs (a prefix of them)
            evicted = False
        else:
            below = ranked.running_below(pos)
            candidates = self._evictable(below)
            evicted = self._evict_for(j, candidates)
            protected = len(candidates) < len(below)
        if evicted:
            return True
        if needs is not None:
            failed[needs] = now_epoch
        self._preempt_failed_at[j] = epoch
        if protected is None:
            protected = self._protected_below(ranked, pos, group)
        why = PREEMPT_PROTECTED if protected else PREEMPT_NO_ROOM
        self._preempt_why = self._preempt_why_of[j] = why
        return False

    def _protected_below(self, ranked: Ranking, pos: int, group: int) -> bool:
        """Whether a running job ranked below position ``pos`` is still protected (may not
        be evicted yet): asked only when preemption failed, for the records."""
        now, evictable_from = self.clock.now + EPS, self.evictable_from
        if self._protection_bound:
            # asked again while nothing started or stopped: ask the ranking once for the
            # position of its lowest-ranked protected running job (one is below ``pos`` iff
            # it is); asked once, look below ``pos`` only
            seen, epoch = self._protection_seen, self.epoch[group]
            if seen is not None and seen[0] is ranked and seen[1] == epoch and seen[2] == now:
                if not seen[3]:
                    lowest = ranked.lowest_running(lambda r: evictable_from[r] > now)
                    seen = self._protection_seen = (ranked, epoch, now, True, lowest)
                return seen[4] is not None and seen[4] > pos
            self._protection_seen = (ranked, epoch, now, False, None)
        return any(evictable_from[r] > now for r in ranked.running_below(pos))

    def _evictable(self, running: list[int]) -> list[int]:
        """Those of the ``running`` jobs whose protection has ended, in the same order (the
        others are protected: they may not be evicted yet)."""
        now, evictable_from = self.clock.now + EPS, self.evictable_from
        return [r for r in running if evictable_from[r] <= now]

    def _evict_for(self, j: int, candidates: list[int]) -> bool:
        """Evict the fewest of ``candidates`` (in the order they should go) that let ``j``
        start, and start it; False if none would."""
        domain, vc = self._domain[j], self._vc[j]
        if not self._covers_group[self.job_domain[j]]:
            candidates = [
                r
                for r in candidates
                if (domain.quota is not None and self._vc[r] == vc)
                or domain.mask[self.alloc_nodes[r]].any()
            ]
        victims = self.fewest_to_free(j, candidates) if candidates else None
        if victims is None:
            return False
        for r in victims:
            self.sim.preempt(r, cause=j)
        started = self.try_start(j)
        if not started:  # cannot happen: the free map is the one that fitted
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return True

    def fewest_to_free(self, j: int, candidates: list[int]) -> list[int] | None:
        """Of ``candidates`` (in the order they should go), the running jobs whose eviction
        lets ``j`` fit: the shortest prefix that does, less any of it (latest first) that
        turns out not to be needed; None if evicting them all would not do."""
        trial = self._trial_for(j, candidates)
        if trial is None:
            return None
        if not trial.cheap:
            # evicting more never hurts: if evicting them all does not make room, nothing
            # will (a quick way to fail when asking whether it fits costs much)
            for r in candidates:
                trial.release(r, +1)
            if not trial.fits():
                return None
            trial.reset()
        victims: list[int] = []
        for r in candidates:
            trial.release(r, +1)
            victims.append(r)
            if trial.fits():
                break
        else:
            return None
        for r in victims[-2::-1]:  # keep any victim not needed, latest first
            trial.release(r, -1)
            if trial.fits():
                victims.remove(r)
            else:
                trial.release(r, +1)
        return victims

    def _trial_for(self, j: int, candidates: list[int]) -> _Trial | BookTrial | None:
        """The trial evictions for ``j`` (None when evicting every candidate would not free
        enough GPUs)."""
        if self._book_fit is not None:
            return self._book_fit.trial(j)
        need, domain = self._gpus[j], self._domain[j]
        if self._covers_group[self._domain_index[j]]:
            room = self.group_free[self._group[j]]  # counted already
        else:
            room = int(self.free[domain.nodes].sum())
        if room + sum(self._gpus[r] for r in candidates) < need:
            return None
        if self._picks_any_fitting_node and need <= domain.topology.largest:
            return _OneNodeTrial(self, j)
        if len(domain.nodes) <= SMALL and self.shortcuts.placer:
            return _FewNodesTrial(self, j)
        return _FreeMapTrial(self, j, room)

    def _release_into(self, r: int, free: np.ndarray, vc_used: np.ndarray, sign: int) -> None:
        """Add (sign +1) or take back (-1) job ``r``'s GPUs in a trial free map."""
        free[self.alloc_nodes[r]] += sign * self.alloc_counts[r]
        if not self.borrowed[r]:  # borrowed GPUs are not counted in the VC's usage
            vc_used[self._vc[r]] -= sign * self._gpus[r]

    def fits_hypothetically(self, j: int, free: np.ndarray, vc_used: np.ndarray) -> bool:
        """Would ``j`` fit given a trial free map and VC usage? (Draws nothing from the rng.)"""
        if not self.quota_allows(j, vc_used):
            return False
        domain = self._domain[j]
        return self.placer_fits(self._gpus[j], free[domain.nodes], domain)

    def placer_fits(
        self, need: int, room: np.ndarray, domain: Domain, total: int | None = None
    ) -> bool:
        """Would the placer find ``need`` GPUs given ``room``, the free GPUs of the domain's
        nodes (``total`` of them, if the caller has counted)? (Draws nothing from the rng.)"""
        if self._picks_any_fitting_node and need <= domain.topology.largest:
            return bool(room.max() >= need)  # it fits on one node iff some node has room
        if (room.sum() if total is None else total) < need:
            return False
        if self._picks_one_node and need > domain.topology.largest:
            answer = self.placer.can_spread(need, room, domain.topology)
            if answer is not None:  # said without placing
                return answer
        # only whether it fits: the placement itself is checked when the job really starts
        if not self.placer.random:
            return self._ask_placer(need, room, domain.topology) is not None
        state = self.rng.bit_generator.state
        take = self._ask_placer(need, room, domain.topology)
        self.rng.bit_generator.state = state
        return take is not None


class _Trial:
    """Trial evictions for job ``j``: release (+1) or take back (-1) a running job's GPUs,
    and ask whether ``j`` would fit; ``reset`` starts again from the present state."""

    #: whether ``fits`` costs next to nothing (then no need to try evicting them all first)
    cheap = False

    def reset(self) -> None:
        raise NotImplementedError

    def release(self, r: int, sign: int) -> None:
        raise NotImplementedError

    def fits(self) -> bool:
        raise NotImplementedError


class _FreeMapTrial(_Trial):
    """On a copy of the free map, asking the placer (any job, any placer)."""

    def __init__(self, rounds: Rounds, j: int, room: int) -> None:
        self.rounds, self.j, self.need, self.start_room = rounds, j, rounds._gpus[j], room
        self.reset()

    def reset(self) -> None:
        self.free, self.vc_used = self.rounds.free.copy(), self.rounds.vc_used.copy()
        self.room = self.start_room  # free GPUs of j's domain, at most (a quick bound)

    def release(self, r: int, sign: int) -> None:
        self.rounds._release_into(r, self.free, self.vc_used, sign)
        self.room += sign * self.rounds._gpus[r]

    def fits(self) -> bool:
        return self.room >= self.need and self.rounds.fits_hypothetically(
            self.j, self.free, self.vc_used
        )


class _FewNodesTrial(_Trial):
    """Asking the placer, with the free GPUs of ``j``'s few nodes kept in a Python list."""

    def __init__(self, rounds: Rounds, j: int) -> None:
        domain = rounds._domain[j]
        self.rounds, self.j, self.need = rounds, j, rounds._gpus[j]
        self.position = rounds._node_position[rounds._domain_index[j]]  # node -> index in domain
        self.start_free = rounds.free[domain.nodes].tolist()
        self.reset()

    def reset(self) -> None:
        self.free, self.vc_used = list(self.start_free), list(self.rounds.vc_used)

    def release(self, r: int, sign: int) -> None:
        rounds, free, position = self.rounds, self.free, self.position
        for node, count in rounds._alloc_pairs[r]:
            i = position.get(node)
            if i is not None:
                free[i] += sign * count
        if not rounds.borrowed[r]:  # borrowed GPUs are not counted in the VC's usage
            self.vc_used[rounds._vc[r]] -= sign * rounds._gpus[r]

    def fits(self) -> bool:
        rounds, need, free = self.rounds, self.need, self.free
        total = sum(free)
        if total < need or not rounds.quota_allows(self.j, self.vc_used):
            return False
        return rounds.placer_fits(
            need, np.array(free, dtype=np.int64), rounds._domain[self.j], total
        )


class _OneNodeTrial(_Trial):
    """For a job that fits on one node, when the placer takes any node with room: counted
    in plain Python over the nodes the released jobs hold (the job fits once one node of its
    domain has room and its quota allows). Each release updates how many nodes have room,
    so asking costs nothing."""

    cheap = True

    def __init__(self, rounds: Rounds, j: int) -> None:
        domain = rounds._domain[j]
        self.rounds, self.j, self.need = rounds, j, rounds._gpus[j]
        self.position = rounds._node_position[rounds._domain_index[j]]  # the domain's nodes
        self.fits_now = int(rounds.free[domain.nodes].max()) >= self.need  # the quota may block
        self.reset()

    def reset(self) -> None:
        self.added: dict[int, int] = {}  # node -> GPUs the trial evictions free on it
        self.vc_used = list(self.rounds.vc_used)
        self.roomy = 0  # nodes of the domain that have room for j only thanks to the trial

    def release(self, r: int, sign: int) -> None:
        rounds, added, need = self.rounds, self.added, self.need
        if not rounds.borrowed[r]:
            self.vc_used[rounds._vc[r]] -= sign * rounds._gpus[r]
        for node, count in rounds._alloc_pairs[r]:
            before = added.get(node, 0)
            added[node] = before + sign * count
            if node in self.position:
                free = len(rounds.free_slots[node])
                if (free + before >= need) != (free + before + sign * count >= need):
                    self.roomy += sign

    def fits(self) -> bool:
        return (self.fits_now or self.roomy > 0) and self.rounds.quota_allows(self.j, self.vc_used)
