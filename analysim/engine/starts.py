"""Trying to start a waiting job: its VC's quota, where the placer puts it (checked), the EASY
backfill reservations it must keep, and the memos of tries that failed.

:class:`StartTries` is a collaborator of :class:`~analysim.engine.rounds.Rounds`
(``Rounds.starts``). The rounds ask it :meth:`StartTries.try_start` (or
:meth:`StartTries.try_start_alike`) for each job they try; the trial evictions and the
tenancy ask it to start a job once they have made room, EASY backfill and borrowing ask
:meth:`StartTries.place`, and they ask :meth:`StartTries.quota_allows` too. A try returns a
:class:`StartTry`: whether the job started and, if not, why (the records' code), the GPUs
free it saw and the reservation that stopped it. Nothing is left in attributes for the
caller to read.

It owns the memos of failed tries (``Shortcuts.memos``, ``alike_tries``, ``reserved_memo``),
reads the rounds' per group ``epoch`` and release counts, the ledger and, in resource mode,
asks the rounds' :class:`~analysim.engine.book_fit.BookFit`; it changes state only through
the engine's ``start_running``. ``docs/semantics.md`` gives the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from analysim.engine.records import FRAGMENTED, FULL, QUOTA, RESERVED
from analysim.errors import PolicyError

if TYPE_CHECKING:
    from analysim.engine.book_fit import BookFit
    from analysim.engine.book_fit import Placed as BookPlaced
    from analysim.engine.reservations import Reservation
    from analysim.engine.rounds import Rounds
    from analysim.inputs.domains import Domain

    #: where a job goes, as ``start_running`` takes it: the nodes, GPUs per node (and, in
    #: resource mode, the claims on the book)
    Placed = tuple[np.ndarray, np.ndarray] | BookPlaced
    #: a placement, or None; why not (the records' code) and the whole GPUs free it saw
    Placing = tuple[Placed | None, int, int]


class StartTry(NamedTuple):
    """What a try to start a job found."""

    #: whether the job started
    started: bool
    #: why it did not (the records' code: ``FULL``, ``FRAGMENTED``, ``QUOTA`` or, when only
    #: reservations stopped it, ``RESERVED``); 0 if it started
    why: int = 0
    #: the whole GPUs free to it that it saw (left in its VC's quota, with ``QUOTA``)
    room: int = 0
    #: with ``RESERVED``: the reservation that stopped it, as (its head, its time)
    blocking: tuple[int, float] | None = None


#: the answer of every try that started its job
STARTED = StartTry(True)


class StartTries:
    """Tries to start the waiting jobs of the rounds ``rounds``, with their memos."""

    def __init__(
        self,
        rounds: Rounds,
        book_fit: BookFit | None,
        covers_group: list[bool],
        releases: list[int],
    ) -> None:
        """``book_fit``: where a job fits in resource mode (None with whole GPUs only);
        ``covers_group``: per domain, whether it spans its group's nodes; ``releases``: per
        group, the rounds' count of releases (read here, as is ``rounds.epoch``). The
        rounds' parts ``easy`` (the reservations a job would delay, and where it goes on
        what they leave) and ``evictions`` (whether it fits on every free GPU) are asked
        through ``rounds``, which makes them after this."""
        sim, facts, shortcuts = rounds.sim, rounds.sim.facts, rounds.sim.shortcuts
        self.rounds, self.sim, self.ledger = rounds, sim, sim.ledger
        self.placer, self._ask_placer, self._book_fit = sim.placer, sim.ask_placer, book_fit
        # the jobs' fixed values (read one item at a time)
        self.job_ids = sim.job_ids
        self._gpus, self._vc, self._group = facts.gpus, facts.vc, facts.group
        self._domain, self._domain_index = facts.domain, facts.domain_index
        # read, never written here: the rounds' counters
        self._covers_group, self._releases, self.epoch = covers_group, releases, rounds.epoch
        #: whether a VC has a quota (if none has, a start never needs the quota check)
        self.quotas = sim.partition.has_quotas
        needs_are_gpus, draws = book_fit is None, self.placer.random
        # job -> its group's release count when it did not fit, and why it did not then
        self._failed_at: dict[int, int] = shortcuts.memo()
        self._start_why: dict[int, int] = {}
        #: whether tries are answered for jobs alike (:meth:`try_start_alike`)
        self.alike = shortcuts.alike_tries and needs_are_gpus and not draws
        # ... and, for a failure that no reservation caused, whatever the reservations kept
        # (``Shortcuts.refused_alike``: :meth:`refused`)
        self._refuses_alike = self.alike and shortcuts.refused_alike
        # per group, at its epoch ``alike_epoch``: (domain, GPUs, VC, the reservations kept)
        # -> the failed try of a job of those needs (and the reservations, held); (domain,
        # GPUs, VC) -> the try of a job of those needs that failed for want of room or quota
        groups = len(releases)
        self._alike_tries: list[dict[Any, tuple]] = [{} for _ in range(groups)]
        #: per group, :meth:`refused`'s answer, good while the group's epoch is its
        #: ``alike_epoch`` (the rounds read them in place)
        self.refused_by_group: list[dict[tuple[int, int, int], StartTry]] = [
            {} for _ in range(groups)
        ]
        self.alike_epoch = [-1] * groups
        #: per job, its needs: (domain index, GPUs, VC)
        self.needs_of = list(zip(self._domain_index, self._gpus, self._vc, strict=True))
        # EASY backfill: job -> (release count, epoch, the reservations) when only those
        # reservations stopped it (a placer that draws may draw when it fails: not kept)
        self._room_first = needs_are_gpus and shortcuts.reserved_memo
        self._reserved_seen: dict[int, tuple[int, int, list[Reservation]]] = shortcuts.memo(
            shortcuts.reserved_memo and not draws
        )

    def quota_allows(self, j: int, vc_used: np.ndarray | list[int]) -> bool:
        """Would ``j`` keep its VC within its quota, given ``vc_used``?"""
        if self._book_fit is not None:
            return self._book_fit.quota_allows(j, vc_used)
        quota = self._domain[j].quota
        return quota is None or vc_used[self._vc[j]] + self._gpus[j] <= quota

    def place(self, j: int, free: np.ndarray, domain: Domain | None = None) -> Placing:
        """Ask the placer for GPUs for ``j`` on its own nodes (or those of ``domain``) given
        the ``free`` GPUs per node: the nodes and GPUs per node it chose (checked), or None
        and why not (``FULL`` or ``FRAGMENTED``) and the GPUs free it saw. (Resource mode:
        where it goes on the book now, with its claims.)"""
        if self._book_fit is not None:
            return self._book_fit.place(j, domain)
        own = domain is None
        domain, need = (self._domain[j] if own else domain), self._gpus[j]
        if own and free is self.ledger.free and self._covers_group[self._domain_index[j]]:
            room = self.ledger.group_free[self._group[j]]  # counted already
            if room < need:
                return None, FULL, room
            free = free[domain.nodes]
        else:
            free = free[domain.nodes]
            room = int(free.sum())
            if room < need:
                return None, FULL, room
        take = self._ask_placer(need, free, domain.topology)
        if take is None:
            return None, FRAGMENTED, room  # enough GPUs free, but no placement of them fits
        if isinstance(take, (int, np.integer)):  # one node, from the placer's pick_node
            if not 0 <= take < len(free) or free[take] < need:
                raise PolicyError(
                    f"placement policy {self.placer.name!r} gave job {self.job_ids[j]!r}: "
                    f"node {take} of {len(free)}, which has not {need} GPUs free"
                )
            take = int(take)
            return (domain.nodes[take : take + 1], np.array([need])), 0, room
        chosen = np.flatnonzero(take) if isinstance(take, np.ndarray) else None
        problem = None
        if chosen is None or take.shape != free.shape or take.dtype.kind not in "iu":
            problem = f"an array of {free.shape[0]} whole numbers, got {take!r}"
        else:  # few nodes: plain Python beats numpy here
            counts = take[chosen]
            wanted, spare = counts.tolist(), free[chosen].tolist()
            if any(c < 0 or c > f for c, f in zip(wanted, spare, strict=True)):
                problem = "GPUs that are not free to this job (double-booked or outside its VC)"
            elif sum(wanted) != need:
                problem = f"{sum(wanted)} GPUs for a job that asks for {need}"
        if problem:
            raise PolicyError(
                f"placement policy {self.placer.name!r} gave job {self.job_ids[j]!r}: {problem}"
            )
        return (domain.nodes[chosen], counts), 0, room

    def try_start(self, j: int, active: list[Reservation] | None = None) -> StartTry:
        """Start ``j`` on free GPUs if it fits (and, with EASY backfill, if it keeps the
        ``active`` reservations: ``RESERVED`` when only they stop it)."""
        keep = self.rounds.easy.kept_by(j, active) if active else []
        return self._try_keeping_any(j, keep)

    def try_start_alike(self, j: int, active: list[Reservation]) -> StartTry:
        """:meth:`try_start`, answered at once for a job whose needs (domain, GPUs, VC) and
        reservations to keep are those of a job that failed to start with nothing of its
        group started or stopped since (``Shortcuts.alike_tries``; asked only when
        ``alike``): its try would ask the same questions of the same free GPUs and
        reservations. A failure that no reservation caused answers for any reservations
        kept: the caller reads it first (:meth:`refused`, or ``refused_by_group`` in place
        while the group's epoch is its ``alike_epoch``); this does not look it up again
        (asked for a job of those needs, it tries and fails alike)."""
        group = self._group[j]
        needs = self.needs_of[j]  # its domain, GPUs and VC
        key: Any = needs  # and the reservations kept
        keep = self.rounds.easy.kept_by(j, active) if active else []
        if keep:
            key = (key, id(keep[0])) if len(keep) == 1 else (key, *map(id, keep))
        if self.alike_epoch[group] != self.epoch[group]:
            self._renew(group)  # nothing is known at the new epoch
        else:
            seen = self._alike_tries[group].get(key)
            if seen is not None:
                return seen[0]
        tried = self._try_keeping_any(j, keep)
        if tried.started:
            return tried
        if tried.why != RESERVED and self._refuses_alike:
            self.refused_by_group[group][needs] = tried
        else:
            # (``keep`` is held so that no other reservation takes one of its ids)
            self._alike_tries[group][key] = (tried, keep)
        return tried

    def refused(self, group: int) -> dict[tuple[int, int, int], StartTry]:
        """The tries of jobs of ``group`` that failed, since its epoch was last bumped, for
        want of room or quota (no reservation stopped them), by the jobs' needs
        (``needs_of``); empty without ``Shortcuts.refused_alike``. A job of those needs
        fails alike whatever reservations it would keep: its try (the quota, then the
        placer on the free GPUs, and on what its reservations leave of them, no more)
        ends the same way. The rounds read it in place of a try; it holds while the
        group's epoch is unchanged."""
        if self.alike_epoch[group] != self.epoch[group]:
            self._renew(group)
        return self.refused_by_group[group]

    def _renew(self, group: int) -> None:
        """The group's epoch moved on: its alike tries are forgotten."""
        self._alike_tries[group].clear()
        self.refused_by_group[group].clear()
        self.alike_epoch[group] = self.epoch[group]

    def _try_keeping_any(self, j: int, keep: list[Reservation]) -> StartTry:
        """Start ``j`` if it fits, keeping the reservations ``keep`` (those it would run
        past). A job that did not fit is not tried again until GPUs of its group are
        released: placement only gets easier as GPUs free up (asked first: on the GPUs the
        reservations leave it fits no better)."""
        group = self._group[j]
        if self._failed_at.get(j) == self._releases[group]:
            # as it was (why, for the records): GPUs only got fewer since
            why = self._start_why[j]
            if why == QUOTA or (self.quotas and not self.quota_allows(j, self.ledger.vc_used)):
                return StartTry(False, QUOTA, self._quota_room(j))
            room = self._room_of(j)
            if why == FRAGMENTED and room < self._gpus[j]:
                why = FULL
            return StartTry(False, why, room)
        if keep:
            return self._try_keeping(j, keep)
        if not self.quotas or self.quota_allows(j, self.ledger.vc_used):  # the quota first
            placed, why, room = self.place(j, self.ledger.free)
        else:
            placed, why, room = None, QUOTA, self._quota_room(j)
        if placed is None:
            self._failed_at[j] = self._releases[group]
            self._start_why[j] = why
            return StartTry(False, why, room)
        self.sim.start_running(j, *placed)
        return STARTED

    def _try_keeping(self, j: int, keep: list[Reservation]) -> StartTry:
        """Start ``j`` on GPUs that the reservations ``keep`` do not need, if it fits there;
        else why not: ``RESERVED`` if it would fit on all free GPUs."""
        group = self._group[j]
        releases = self._releases[group]
        if not self.quota_allows(j, self.ledger.vc_used):
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
            placed = self.rounds.easy.place_keeping(j, keep)
            if placed is not None:
                self.sim.start_running(j, *placed)
                return STARTED
            if not self._fits_now(j):
                return self.try_start(j)  # does not fit even on every free GPU
            self._reserved_seen[j] = (releases, self.epoch[group], keep)
        blocking = keep[0]
        return StartTry(False, RESERVED, self._room_of(j), (blocking.head, blocking.at))

    def _fits_now(self, j: int) -> bool:
        """Would ``j`` fit on every free GPU, reservations aside? (Draws nothing.)"""
        if self._book_fit is not None:
            return self._book_fit.fits_now(j)
        ledger = self.ledger
        return self.rounds.evictions.fits_hypothetically(j, ledger.free, ledger.vc_used)

    def _quota_room(self, j: int) -> int:
        """The whole GPUs left in ``j``'s VC's quota (the records of a ``QUOTA`` try; the
        ledger counts GPU milli in resource mode)."""
        quota, used = self._domain[j].quota, int(self.ledger.vc_used[self._vc[j]])
        unit = self.ledger.unit
        return quota - used if unit == 1 else (quota * unit - used) // unit

    def _room_of(self, j: int) -> int:
        """The GPUs free on ``j``'s own nodes."""
        if self._book_fit is not None:
            return self._book_fit.room_of(j)
        if self._covers_group[self._domain_index[j]]:
            return self.ledger.group_free[self._group[j]]
        return int(self.ledger.free[self._domain[j].nodes].sum())


__all__ = ["STARTED", "StartTries", "StartTry"]
