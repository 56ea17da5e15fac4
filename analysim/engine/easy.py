"""EASY backfill's side of the rounds: which reservations a job would delay, placing it on
the GPUs they leave spare, making and keeping a queue head's reservation, and claiming it
when a job takes GPUs it needs (``docs/semantics.md``, "EASY backfill").

:class:`EasyBackfill` is a collaborator of :class:`~analysim.engine.rounds.Rounds`
(``Rounds.easy``): it owns the reservations (per group, queue -> its head's), the running
jobs' ends kept for them, and how many times each group's jobs took GPUs; the rounds ask it
which reservations a job would delay (:meth:`EasyBackfill.kept_by`), where a job goes on the
GPUs they leave (:meth:`EasyBackfill.place_keeping`) and a queue head's reservation
(:meth:`EasyBackfill.reservation_for`), and tell it when a job takes or releases GPUs.
"""

from __future__ import annotations

import bisect
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.clock import EPS
from analysim.engine.reservations import Reservation
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain

if TYPE_CHECKING:
    from collections.abc import Callable

    from analysim.engine.book_fit import BookFit
    from analysim.engine.rounds import Rounds


class EasyBackfill:
    """EASY backfill's reservations for the rounds ``rounds``."""

    def __init__(
        self,
        rounds: Rounds,
        book_fit: BookFit | None,
        releases: list[int],
        placer_fits: Callable[..., bool],
    ) -> None:
        """``book_fit``: where a job fits in resource mode (None with whole GPUs only);
        ``releases``: per group, the rounds' count of releases (read here); ``placer_fits``:
        whether the placer would find room (:meth:`Evictions.placer_fits`)."""
        sim = rounds.sim
        ledger, facts = sim.ledger, sim.facts
        shortcuts, groups = sim.shortcuts, sim.partition.n_groups
        self.clock, self.placer, self.rng = sim.clock, sim.placer, sim.rng
        self._ask_placer, self._book_fit = sim.ask_placer, book_fit
        self._picks_any_fitting_node = sim.flags.picks_any_fitting_node
        # read, never written here: the ledger's state, the jobs' facts and state, the
        # rounds' release counts
        self.free, self.vc_used, self.borrowed = ledger.free, ledger.vc_used, ledger.borrowed
        self._alloc_pairs = ledger.alloc_pairs
        self.remaining, self.since, self.rate = sim.remaining, sim.since, sim.rate
        self._slowest, self.running = sim.speed.slowest, sim.running
        self._gpus, self._vc, self._group = facts.gpus, facts.vc, facts.group
        self._domain, self._domain_index = facts.domain, facts.domain_index
        self._node_position, self._releases = facts.node_position, releases
        self.place, self.placer_fits = rounds.starts.place, placer_fits
        needs_are_gpus = book_fit is None
        #: per group, queue -> its first job's reservation
        self.reservations: list[dict[int, Reservation]] = [{} for _ in range(groups)]
        # per group, its running jobs as (the step each is seen to end, job), sorted, and
        # each one's end: kept for the reservations (``Shortcuts.kept_ends``; whole GPUs)
        kept_ends = sim.config.backfill == "easy" and needs_are_gpus and shortcuts.kept_ends
        self.ends: list[list[tuple[float, int]]] | None = (
            [[] for _ in range(groups)] if kept_ends else None
        )
        self._end_of: dict[int, float] = {}
        # per group: how many times its jobs took GPUs (a reservation kept past releases it
        # foresaw: ``_foresaw_releases``)
        self._takes = [0] * groups
        # (resource mode: not kept, its free GPUs are not only those of the jobs that left;
        # nor with a placer that draws: made again later, it may be placed elsewhere)
        self.keep_reservations = (
            needs_are_gpus and shortcuts.kept_reservations and not self.placer.random
        )
        # a reservation's spare GPUs on the nodes other than its head's: unlimited
        self._unlimited = np.iinfo(self.free.dtype).max // 4
        # a reservation's spare GPUs placed when first asked for (the placer does not draw)
        self._spare_later = not self.placer.random

    def took(self, j: int, group: int) -> None:
        """``j`` of ``group`` took GPUs (started or moved): its end is kept among the group's,
        and the group's reservations are claimed (:meth:`_claim_reservations`)."""
        self._takes[group] += 1
        due = None
        if self.ends is not None:  # kept sorted (``_running_ends``)
            due = self._end_due(j)
            self._end_of[j] = due
            bisect.insort(self.ends[group], (due, j))
        reservations = self.reservations[group]
        if reservations:
            self._claim_reservations(j, group, reservations, due)

    def released(self, j: int, group: int) -> None:
        """``j`` of ``group`` gave its GPUs back: its end is no longer kept."""
        if self.ends is not None:
            ends = self.ends[group]
            del ends[bisect.bisect_left(ends, (self._end_of.pop(j), j))]

    def forget(self, group: int) -> None:
        """A node of ``group`` went down or came back up: its reservations are made again."""
        self.reservations[group].clear()

    def kept_by(self, j: int, active: list[Reservation]) -> list[Reservation]:
        """The reservations ``j`` would delay if it ran past them: those it does not end
        before (its run seen to end at the step its remaining work ends at its slowest rate,
        wherever it is placed)."""
        due = self.clock.due(self.clock.now + self.remaining.item(j) / self._slowest[j])
        # (``Reservation.runs_past``, inline: asked for every job tried)
        return [r for r in active if due > r.at + 1e-9 and r.head != j and not r.broken]

    def place_keeping(
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
            np.minimum(room, np.maximum(self.spare_of(r), 0), out=room)
        return self.place(j, room)[0]

    def reservation_for(self, j: int, queue: int) -> Reservation | None:
        """The reservation of ``j``, the first job of its queue that could not start: kept
        from an earlier round if still good, else made now (None if it would never fit)."""
        group = self._group[j]
        kept = self.reservations[group].get(queue)
        if kept is not None and kept.head == j and not kept.broken:
            if kept.releases == self._releases[group]:
                return kept
            if self._foresaw_releases(kept, group):
                kept.releases = self._releases[group]
                return kept
        made = self._make_reservation(j)
        if made is None:
            self.reservations[group].pop(queue, None)
        else:
            self.reservations[group][queue] = made
        return made

    def _foresaw_releases(self, kept: Reservation, group: int) -> bool:
        """Whether every release since ``kept`` was made is one its making foresaw, so that
        making it now would give it again: every job of the group that took GPUs since
        ended by its time, counted among its ends as it started (no other start, no move:
        it was not claimed, and the group's running jobs are some of those it counted, each
        to end at the step it counted), the running jobs now are exactly those it counted
        to end after now (the others released their GPUs, as it counted them to by now),
        and its time is still to come. Then the free GPUs (and quota used) at each step up
        to its time are at most those it counted (its head, which did not fit when it was
        made, fits no sooner), and at its time the same: it finds the same placement."""
        ends = kept.ends
        if ends is None or kept.takes != self._takes[group]:
            return False
        now = self.clock.now + EPS
        if kept.at <= now:
            return False
        # (the ends after its time are only counted: all are after now)
        after = len(ends) - bisect.bisect_right(ends, now) + kept.ends_after
        return after == len(self.running[group])

    def _make_reservation(self, j: int) -> Reservation | None:
        """The earliest step at which ``j`` fits once running jobs of its group end, and the
        GPUs the placer gives it then. Draws nothing from the rng."""
        group, domain, need = self._group[j], self._domain[j], self._gpus[j]
        if self._book_fit is not None:
            return self._book_fit.make_reservation(j, self._releases[group], self._takes[group])
        ends = self._running_ends(group)
        nodes, vc, quota = domain.nodes, self._vc[j], domain.quota
        # the free GPUs of its nodes (a list: few nodes) and its VC's quota used, as the
        # running jobs end one step at a time
        position = self._node_position[self._domain_index[j]]
        room = self.free[nodes].tolist()
        total, used = sum(room), self.vc_used[vc]
        one_node = self._picks_any_fitting_node and need <= domain.topology.largest
        pairs, borrowed, vc_of, gpus = self._alloc_pairs, self.borrowed, self._vc, self._gpus
        k, count = 0, len(ends)
        while k < count:
            at = ends[k][0]
            while k < count and ends[k][0] <= at + EPS:
                r = ends[k][1]
                for node, held in pairs[r]:
                    i = position.get(node)
                    if i is not None:
                        room[i] += held
                        total += held
                if vc_of[r] == vc and not borrowed[r]:  # borrowed GPUs are not in its quota
                    used -= gpus[r]
                k += 1
            if total < need or (quota is not None and used + need > quota):
                continue
            if one_node:  # the placer takes any node with room (Evictions.placer_fits)
                if max(room) < need:
                    continue
            elif not self.placer_fits(need, np.array(room, dtype=self.free.dtype), domain, total):
                continue
            return Reservation(
                head=j,
                at=at,
                spare=None if self._spare_later else self._spare(need, room, domain),
                spare_of=(need, room, domain) if self._spare_later else None,
                quota_spare=None if quota is None else quota - used - need,
                vc=vc,
                releases=self._releases[group],
                ends=[e for e, _ in islice(ends, k)] if self.keep_reservations else None,
                ends_after=count - k,
                takes=self._takes[group],
            )
        return None

    def spare_of(self, reservation: Reservation) -> np.ndarray:
        """The reservation's spare GPUs per node (``Reservation.spare``), placed on first
        asking when not placed as it was made (the placer does not draw: the same answer)."""
        if reservation.spare is None:
            reservation.spare = self._spare(*reservation.spare_of)
            reservation.spare_of = None
        return reservation.spare

    def _spare(self, need: int, room: list[int], domain: Domain) -> np.ndarray:
        """The spare GPUs per node of a reservation of ``need`` GPUs on ``domain`` when
        ``room`` GPUs are free on its nodes: those free less the head's placement there,
        unlimited on other nodes."""
        free_at = np.array(room, dtype=self.free.dtype)
        take = self._placement_at(need, free_at, domain)
        if isinstance(take, (int, np.integer)):
            free_at[int(take)] -= need
        else:
            free_at -= take
        spare = np.full_like(self.free, self._unlimited)
        spare[domain.nodes] = free_at
        return spare

    def _running_ends(self, group: int) -> list[tuple[float, int]]:
        """The group's running jobs as (the step at which each is seen to end, the job),
        sorted: kept as they start and stop (``Shortcuts.kept_ends``), or sorted now."""
        if self.ends is not None:
            return self.ends[group]
        due_of, since, remaining, rate = self.clock.due, self.since, self.remaining, self.rate
        return sorted(
            (due_of(float(since[r]) + float(remaining[r]) / float(rate[r])), r)
            for r in self.running[group]
        )

    def _end_due(self, j: int) -> float:
        """The step at which ``j``, starting now, is seen to end (as the engine schedules it)."""
        clock = self.clock
        return clock.due(clock.now + self.remaining.item(j) / self.rate.item(j))

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

    def _claim_reservations(
        self, j: int, group: int, reservations: dict[int, Reservation], due: float | None
    ) -> None:
        """``j`` of ``group`` took GPUs, to be seen to end at step ``due`` (None: not yet
        computed): the ``reservations`` of its group it runs past have fewer spare (a
        reservation whose head started is dropped), those it ends before count its end. A
        broken reservation is left as it is: it is never kept nor read again (``kept_by``,
        ``reservation_for``)."""
        if due is None:
            due = self._end_due(j)
        headed = None  # the queue of the reservation ``j`` was the head of
        for queue, r in reservations.items():
            if r.head == j:
                headed = queue
            elif r.broken:
                continue
            elif not r.runs_past(due):
                if r.ends is not None and r.takes + 1 == self._takes[group]:
                    # it ends by ``at``: made again later, the reservation would count its
                    # end and be the same (``_foresaw_releases``)
                    bisect.insort(r.ends, due)
                    r.takes += 1
            elif self._book_fit is not None:  # on the reservation's book: its claims
                self._book_fit.claim(r, j)
            else:
                self._claim(r, j)
        if headed is not None:
            del reservations[headed]

    def _claim(self, r: Reservation, j: int) -> None:
        """``j``, running past reservation ``r``'s time, took GPUs: less of ``r`` is spare.
        Unplaced yet, ``r`` is broken without placing it when ``j`` took more GPUs on a node
        than are free there at ``r``'s time (its spare there is fewer still)."""
        pairs = self._alloc_pairs[j]
        if r.spare is None:
            room = r.spare_of[1]
            position = self._node_position[self._domain_index[r.head]]
            for node, count in pairs:
                i = position.get(node)
                if i is not None and count > room[i]:
                    r.broken = True
                    return
            self.spare_of(r)  # placed first: the claim takes from it
        r.claim(pairs, self._gpus[j], self._vc[j], not self.borrowed[j])
