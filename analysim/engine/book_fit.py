"""Where a job fits in resource mode: placing jobs that share GPUs and ask for CPU and memory,
EASY backfill's reservations on the resource book, and trial evictions on copies of it.

:class:`BookFit` is what the rounds (:class:`~analysim.engine.rounds.Rounds`, which hold it)
and their parts ask in resource mode, in place of their own whole-GPU counting: quotas in GPU
milli, placements asked of the simulation's
:class:`~analysim.engine.resource_placement.ResourcePlacement` (``place_on``, on the real
book; the claims handed to the ledger through ``start_running``), and trial evictions on a
copy of the book (:class:`BookTrial`). EASY backfill's reservations
are made and kept on the resource book (``engine/reservations.py``): a job that runs past a
reservation takes only what it leaves, in GPU milli, CPU and memory. It reads the jobs' and
the ledger's state and writes neither: each answer is returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.clock import EPS
from analysim.engine.reservations import Reservation
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.book import Claim
    from analysim.engine.simulation import Simulation
    from analysim.inputs.domains import Domain

#: a placement as ``start_running`` takes it: the nodes, GPUs per node, and the claims
Placed = tuple[np.ndarray, np.ndarray, list["Claim"]]


class BookFit:
    """Where a job fits on the resource book of the simulation ``sim``, for its rounds."""

    def __init__(self, sim: Simulation) -> None:
        self.sim, self.ledger = sim, sim.ledger  # (the ledger's state: read, never written)
        self.placement = sim.placement  # where a job fits
        self.facts = sim.facts

    def place(self, j: int, domain: Domain | None = None) -> tuple[Placed | None, int, int]:
        """Where ``j`` goes now (on its own nodes, or those of ``domain``): the nodes, GPUs
        per node and its claims (for the ledger, through ``start_running``), or None; and
        why not (the records' code) and the whole GPUs free it saw."""
        placement = self.placement
        domain = domain or self.facts.domain[j]
        claims = placement.place_on(placement.book, j, domain, self.sim.rng)
        if claims is None:
            why = placement.why_not(j, domain)
            return None, why, int(self.ledger.free[domain.nodes].sum())
        return placed(claims), 0, 0

    def quota_allows(self, j: int, vc_used) -> bool:
        """Would ``j`` keep its VC within its quota (GPU milli), given ``vc_used``?"""
        quota = self.facts.domain[j].quota
        return quota is None or vc_used[self.facts.vc[j]] + self.facts.usage[j] <= quota * MILLI

    def room_of(self, j: int) -> int:
        """The whole GPUs free on ``j``'s own nodes."""
        return int(self.ledger.free[self.facts.domain[j].nodes].sum())

    def trial(self, j: int) -> BookTrial:
        """Trial evictions for ``j`` on a copy of the book."""
        return BookTrial(self, j)

    # -- EASY backfill on the resource book ---------------------------------------------------
    def fits_now(self, j: int) -> bool:
        """Would ``j`` fit on the book now, reservations aside? (Draws nothing.)"""
        return (
            self.quota_allows(j, self.ledger.vc_used)
            and self.placement.fits_on(self.placement.book, j) is not None
        )

    def place_keeping(self, j: int, keep: list[Reservation]) -> Placed | None:
        """Where ``j`` goes on what the reservations ``keep`` leave: on each head's nodes,
        CPU, memory and (for a share) milli per GPU no more than its book has at its time,
        whole GPUs no more per node than its book has fully free; on nodes a head cannot
        use, all there is (as the whole-GPU rule leaves them unlimited). The claims kept
        for the ledger."""
        facts = self.facts
        usage, vc = facts.usage[j], facts.vc[j]
        if any(r.quota_spare is not None and r.vc == vc and usage > r.quota_spare for r in keep):
            return None
        placement = self.placement
        view = placement.book.clone()
        whole = facts.milli[j] == MILLI
        cap = view.nodes.gpus.copy() if whole else None  # whole GPUs per node: no limit
        for r in keep:
            spare, nodes = r.book, facts.domain[r.head].nodes  # (only the head's nodes)
            view.cpu_left[nodes] = np.minimum(view.cpu_left[nodes], spare.cpu_left[nodes])
            view.mem_left[nodes] = np.minimum(view.mem_left[nodes], spare.mem_left[nodes])
            if whole:
                full = (spare.gpu_left[nodes] == MILLI).sum(axis=1)
                cap[nodes] = np.minimum(cap[nodes], full)
            else:
                view.gpu_left[nodes] = np.minimum(view.gpu_left[nodes], spare.gpu_left[nodes])
        claims = placement.place_on(view, j, facts.domain[j], self.sim.rng, cap=cap)
        return None if claims is None else placed(claims)

    def make_reservation(self, j: int, releases: int, takes: int) -> Reservation | None:
        """The earliest step at which ``j`` fits once running jobs of its group end (their
        claims given back to a copy of the book), and the book then less ``j``'s claims
        (``releases`` and ``takes``: the group's counts now). Draws nothing from the rng."""
        sim, placement, facts, ledger = self.sim, self.placement, self.facts, self.ledger
        group, vc = facts.group[j], facts.vc[j]
        due_of, since, remaining = sim.clock.due, sim.since, sim.remaining
        rate = sim.rate
        ends = sorted(
            (due_of(float(since[r]) + float(remaining[r]) / float(rate[r])), r)
            for r in sim.running[group]
        )
        book, vc_used = placement.book.clone(), list(ledger.vc_used)
        k = 0
        while k < len(ends):
            at = ends[k][0]
            while k < len(ends) and ends[k][0] <= at + EPS:
                r = ends[k][1]
                for claim in ledger.claims[r]:
                    book.give(claim, facts.kind[r])
                if not ledger.borrowed[r]:
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
            quota = facts.domain[j].quota
            return Reservation(
                head=j,
                at=at,
                spare=None,
                quota_spare=None if quota is None else quota * MILLI - vc_used[vc] - facts.usage[j],
                vc=vc,
                releases=releases,
                takes=takes,
                book=book,
                head_whole=head_whole,
            )
        return None

    def claim(self, r: Reservation, j: int) -> None:
        """``j`` started and runs past reservation ``r``: its claims on the head's nodes are
        no longer spare (what it takes elsewhere the head never needs)."""
        facts = self.facts
        own = not self.sim.ledger.borrowed[j]
        head_nodes = facts.domain[r.head].mask
        claims = [c for c in self.sim.ledger.claims[j] if head_nodes[c[0]]]
        r.claim_book(claims, facts.usage[j], facts.vc[j], own, self.placement.book)


def placed(claims: list[Claim]) -> Placed:
    """A placement as ``start_running`` takes it: the nodes, GPUs per node, the claims."""
    return np.array([c[0] for c in claims]), np.array([len(c[1]) for c in claims]), claims


class BookTrial:
    """Trial evictions on a copy of the resource book: release (+1) or take back (-1) a
    running job's claims, and ask whether ``j`` would fit."""

    #: whether ``fits`` costs next to nothing (then no need to try evicting them all first)
    cheap = False
    #: whether the trial counts the GPUs it frees (``Evictions.fewest_to_free``): no
    counts = False

    def __init__(self, fit: BookFit, j: int) -> None:
        self.fit, self.sim, self.j = fit, fit.sim, j
        self.reset()

    def reset(self) -> None:
        self.book = self.fit.placement.book.clone()
        self.used = list(self.fit.ledger.vc_used)  # its own copy of the VCs' usage

    def release(self, r: int, sign: int) -> None:
        sim = self.sim
        for claim in sim.ledger.claims[r]:
            if sign > 0:
                self.book.give(claim, sim.facts.kind[r])
            else:
                self.book.take(claim, sim.facts.kind[r])
        if not sim.ledger.borrowed[r]:
            self.used[sim.facts.vc[r]] -= sign * sim.facts.usage[r]

    def fits(self) -> bool:
        return self.fit.quota_allows(self.j, self.used) and (
            self.fit.placement.fits_on(self.book, self.j) is not None
        )


__all__ = ["BookFit", "BookTrial", "placed"]
