"""EASY backfill's side of the rounds: which reservations a job would delay, placing it on
the GPUs they leave spare, making and keeping a queue head's reservation, and claiming it
when a job takes GPUs it needs (``docs/semantics.md``, "EASY backfill").

:class:`EasyBackfill` is a part of :class:`~analysim.engine.rounds.Rounds` (a base class of
the one ``Rounds``: the same object and state, its methods kept in their own file).
"""

from __future__ import annotations

import bisect

import numpy as np

from analysim.engine.clock import EPS
from analysim.engine.records import RESERVED
from analysim.engine.reservations import Reservation
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain


class EasyBackfill:
    """The EASY backfill methods of :class:`~analysim.engine.rounds.Rounds`."""

    def _kept_by(self, j: int, active: list[Reservation]) -> list[Reservation]:
        """The reservations ``j`` would delay if it ran past them: those it does not end
        before (its run seen to end at the step its remaining work ends at its slowest rate,
        wherever it is placed)."""
        due = self.clock.due(self.clock.now + self.remaining.item(j) / self._slowest[j])
        # (``Reservation.runs_past``, inline: asked for every job tried)
        return [r for r in active if due > r.at + 1e-9 and r.head != j and not r.broken]

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
        return len(ends) - bisect.bisect_right(ends, now) == len(self.running[group])

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
                free_at = np.array(room, dtype=self.free.dtype)
            else:
                free_at = np.array(room, dtype=self.free.dtype)
                if not self.placer_fits(need, free_at, domain, total):
                    continue
            take = self._placement_at(need, free_at, domain)
            reserved = np.zeros_like(self.free)
            if isinstance(take, (int, np.integer)):
                reserved[nodes[int(take)]] = need
            else:
                reserved[nodes] = take
            spare = np.full_like(self.free, np.iinfo(self.free.dtype).max // 4)
            spare[nodes] = free_at - reserved[nodes]
            return Reservation(
                head=j,
                at=at,
                reserved=reserved,
                spare=spare,
                quota_spare=None if quota is None else quota - used - need,
                vc=vc,
                releases=self._releases[group],
                ends=[e for e, _ in ends] if self._keep_reservations else None,
                takes=self._takes[group],
            )
        return None

    def _running_ends(self, group: int) -> list[tuple[float, int]]:
        """The group's running jobs as (the step at which each is seen to end, the job),
        sorted: kept as they start and stop (``Shortcuts.kept_ends``), or sorted now."""
        if self._ends is not None:
            return self._ends[group]
        due_of, since, remaining, rate = self.clock.due, self.since, self.remaining, self.rate
        return sorted(
            (due_of(float(since[r]) + float(remaining[r]) / float(rate[r])), r)
            for r in self.running[group]
        )

    def _end_due(self, j: int) -> float:
        """The step at which ``j``, starting now, is seen to end (as the engine schedules it)."""
        return self.clock.due(self.clock.now + float(self.remaining[j]) / float(self.rate[j]))

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
        reservation whose head started is dropped), those it ends before count its end;
        its end is kept among the group's."""
        group = self._group[j]
        due = None
        if self._ends is not None:  # kept sorted (``_running_ends``)
            due = self._end_due(j)
            self._end_of[j] = due
            bisect.insort(self._ends[group], (due, j))
        reservations = self._reservations[group]
        if not reservations:
            return
        if due is None:
            due = self._end_due(j)
        book_fit = self._book_fit
        for queue, r in list(reservations.items()):
            if r.head == j:
                del reservations[queue]
            elif not r.runs_past(due):
                if r.ends is not None and r.takes + 1 == self._takes[group]:
                    # it ends by ``at``: made again later, the reservation would count its
                    # end and be the same (``_foresaw_releases``)
                    bisect.insort(r.ends, due)
                    r.takes += 1
            elif book_fit is not None:  # on the reservation's book: its claims
                book_fit.claim(r, j)
            else:
                r.claim(nodes, counts, self._gpus[j], self._vc[j], not self.borrowed[j])
