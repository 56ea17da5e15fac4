"""The decision rounds in resource mode: placing jobs that share GPUs and ask for CPU and
memory, and weighing evictions on trial copies of the resource book.

:class:`ResourceRounds` is the :class:`~analysim.engine.rounds.Rounds` of a
:class:`~analysim.engine.resources.ResourceSimulation`: the same interface and state, with
quotas in GPU milli, placements asked of the simulation's
:class:`~analysim.engine.resource_placement.ResourcePlacement` (``place_on``, on the real
book; the claims handed to the ledger through ``start_running``), and trial evictions on a
copy of the book (:class:`_ResourceTrial`). A round of a group with no whole GPU free does
not end at once (a share or a CPU-only job may fit all the same). EASY backfill's
reservations are made and kept on the resource book (``engine/reservations.py``): a job that
runs past a reservation takes only what it leaves, in GPU milli, CPU and memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.domains import Domain
from analysim.engine.clock import EPS
from analysim.engine.reservations import Reservation
from analysim.engine.rounds import Rounds, _Trial
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.resources import Claim, ResourceSimulation


class ResourceRounds(Rounds):
    """The scheduling rounds of a simulation in resource mode."""

    sim: ResourceSimulation
    _needs_are_gpus = False  # a job needs GPU milli, CPU and memory too

    def __init__(self, sim: ResourceSimulation) -> None:
        super().__init__(sim)
        self.placement = sim.placement  # where a job fits
        self._nothing_free_ends_round = False  # a share or a CPU job may fit all the same

    def place(
        self, j: int, free: np.ndarray, domain: Domain | None = None
    ) -> tuple[np.ndarray, np.ndarray, list[Claim]] | None:
        """Where ``j`` goes now (on its own nodes, or those of ``domain``): the nodes, GPUs
        per node and its claims (for the ledger, through ``start_running``); None (and why)
        if nowhere."""
        placement = self.placement
        domain = domain or self._domain[j]
        claims = placement.place_on(placement.book, j, domain, self.rng)
        if claims is None:
            self._why = placement.why_not(j, domain)
            self._room_seen = int(self.free[domain.nodes].sum())
            return None
        return _placed(claims)

    def quota_allows(self, j: int, vc_used) -> bool:
        quota = self._domain[j].quota
        return quota is None or vc_used[self._vc[j]] + self._usage[j] <= quota * MILLI

    def _room_of(self, j: int) -> int:
        return int(self.free[self._domain[j].nodes].sum())

    def _trial_for(self, j: int, candidates: list[int]) -> _Trial | None:
        return _ResourceTrial(self, j)

    # -- EASY backfill on the resource book ---------------------------------------------------
    def _fits_now(self, j: int) -> bool:
        return (
            self.quota_allows(j, self.vc_used)
            and self.placement.fits_on(self.placement.book, j) is not None
        )

    def _place_keeping(
        self, j: int, keep: list[Reservation]
    ) -> tuple[np.ndarray, np.ndarray, list[Claim]] | None:
        """Where ``j`` goes on what the reservations ``keep`` leave: CPU, memory and (for a
        share) milli per GPU no more than their books have at their times, whole GPUs no
        more per node than their books have fully free (the claims kept for the ledger)."""
        usage, vc = self._usage[j], self._vc[j]
        if any(r.quota_spare is not None and r.vc == vc and usage > r.quota_spare for r in keep):
            return None
        placement = self.placement
        view = placement.book.clone()
        whole = self.sim.facts.milli[j] == MILLI
        cap = None
        for r in keep:
            spare = r.book
            np.minimum(view.cpu_left, spare.cpu_left, out=view.cpu_left)
            np.minimum(view.mem_left, spare.mem_left, out=view.mem_left)
            if whole:
                full = (spare.gpu_left == MILLI).sum(axis=1)
                cap = full if cap is None else np.minimum(cap, full)
            else:
                np.minimum(view.gpu_left, spare.gpu_left, out=view.gpu_left)
        claims = placement.place_on(view, j, self._domain[j], self.rng, cap=cap)
        return None if claims is None else _placed(claims)

    def _make_reservation(self, j: int) -> Reservation | None:
        """The earliest step at which ``j`` fits once running jobs of its group end (their
        claims given back to a copy of the book), and the book then less ``j``'s claims.
        Draws nothing from the rng."""
        sim, placement, ledger = self.sim, self.placement, self.ledger
        group, vc = self._group[j], self._vc[j]
        facts = sim.facts
        due_of, since, remaining = self.clock.due, self.since, self.remaining
        ends = sorted(
            (due_of(float(since[r]) + float(remaining[r])), r) for r in self.running[group]
        )
        book, vc_used = placement.book.clone(), list(self.vc_used)
        k = 0
        while k < len(ends):
            at = ends[k][0]
            while k < len(ends) and ends[k][0] <= at + EPS:
                r = ends[k][1]
                for claim in ledger.claims[r]:
                    book.give(claim, facts.kind[r])
                if not self.borrowed[r]:
                    vc_used[facts.vc[r]] -= facts.usage[r]
                k += 1
            if not self.quota_allows(j, vc_used):
                continue
            claims = placement.fits_on(book, j)
            if claims is None:
                continue
            head_whole: set[tuple[int, int]] = set()
            for node, gpus, cpu, memory, milli in claims:
                if milli == MILLI:  # by count on the node: the GPUs busy now first
                    free_at = [g for g, left in enumerate(book.gpus_of(node)) if left == MILLI]
                    free_at.sort(key=lambda g: (placement.book.gpu_left[node, g] == MILLI, g))
                    gpus = tuple(free_at[: len(gpus)])
                    head_whole.update((node, g) for g in gpus)
                book.take((node, gpus, cpu, memory, milli), None)
            quota = self._domain[j].quota
            return Reservation(
                head=j,
                at=at,
                reserved=None,
                spare=None,
                quota_spare=None if quota is None else quota * MILLI - vc_used[vc] - self._usage[j],
                vc=vc,
                releases=self._releases[group],
                takes=self._takes[group],
                book=book,
                head_whole=head_whole,
            )
        return None

    def _claim_reservations(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> None:
        """As the whole-GPU rounds', on the reservations' books: ``j``'s claims."""
        reservations = self._reservations[self._group[j]]
        if not reservations:
            return
        due = self.clock.due(self.clock.now + float(self.remaining[j]))
        claims = self.ledger.claims[j]
        own = not self.borrowed[j]
        for queue, r in list(reservations.items()):
            if r.head == j:
                del reservations[queue]
            elif r.runs_past(due):
                r.claim_book(claims, self._usage[j], self._vc[j], own, self.placement.book)


def _placed(claims: list[Claim]) -> tuple[np.ndarray, np.ndarray, list[Claim]]:
    """A placement as ``start_running`` takes it: the nodes, GPUs per node, the claims."""
    return np.array([c[0] for c in claims]), np.array([len(c[1]) for c in claims]), claims


class _ResourceTrial(_Trial):
    """Trial evictions on a copy of the resource book."""

    def __init__(self, rounds: ResourceRounds, j: int) -> None:
        self.rounds, self.sim, self.j = rounds, rounds.sim, j
        self.reset()

    def reset(self) -> None:
        self.book = self.sim.book.clone()
        self.vc_used = list(self.rounds.vc_used)

    def release(self, r: int, sign: int) -> None:
        sim = self.sim
        for claim in sim.ledger.claims[r]:
            if sign > 0:
                self.book.give(claim, sim.facts.kind[r])
            else:
                self.book.take(claim, sim.facts.kind[r])
        if not sim.borrowed[r]:
            self.vc_used[sim.facts.vc[r]] -= sign * sim.facts.usage[r]

    def fits(self) -> bool:
        return self.rounds.quota_allows(self.j, self.vc_used) and (
            self.rounds.placement.fits_on(self.book, self.j) is not None
        )
