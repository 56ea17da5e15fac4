"""Migration and defragmentation planned on whole-GPU counts: the planner
:class:`~analysim.engine.tenancy.Tenancy` asks when no job asks for GPU shares, CPU or
memory (in resource mode :class:`~analysim.engine.book_moves.BookMoves` plans the same
rules on the resource book).

A planner reads the ledger and the rounds, plans on trial copies of the free-GPU counts, and
changes state only through the engine's ``migrate``. ``docs/semantics.md`` gives the rules.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation
    from analysim.inputs.domains import Domain

#: the most jobs on one node a migration plan considers moving (the smallest ones)
MOST_MOVABLE_PER_NODE = 12

#: a plan: (job, destination node) moves
Plan = list[tuple[int, int]]


class GpuMoves:
    """Migration and defragmentation plans for the simulation ``sim``, on GPU counts."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.ledger = sim.ledger
        self.decider = sim.decider

    def enough_free(self, j: int) -> bool:
        """Whether enough GPUs are free to ``j`` in all (else migration cannot help)."""
        domain = self.sim.facts.domain[j]
        return self.ledger.free[domain.nodes].sum() >= self.sim.facts.gpus[j]

    def plan(self, j: int) -> Plan | None:
        """Moves after which ``j`` fits, moving as few GPUs as possible; None if none do."""
        plan = self._plan_migration(j)
        if plan is None or not self._fits_after(j, plan):
            return None
        return plan

    def make(self, plan: Plan, cause: int | None = None) -> None:
        """Make the moves of ``plan`` (for job ``cause``)."""
        gpus = self.sim.facts.gpus
        for r, node in plan:
            self.sim.migrate(r, np.array([node]), np.array([gpus[r]]), cause=cause)

    def _fits_after(self, j: int, plan: list[tuple[int, int]]) -> bool:
        """Would ``j`` fit once the planned moves are made?"""
        sim, ledger = self.sim, self.ledger
        free = ledger.free.copy()
        for r, dest in plan:
            free[ledger.alloc_nodes[r]] += ledger.alloc_counts[r]
            free[dest] -= sim.facts.gpus[r]
        return self.decider.evictions.fits_hypothetically(j, free, ledger.vc_used)

    def _movable_by_node(self, group: int) -> dict[int, list[int]]:
        """Per node, the running jobs of ``group`` a migration may move: one-node jobs on
        their own GPUs (jobs spanning nodes and borrowers stay), in start order."""
        ledger = self.ledger
        alloc_nodes, borrowed = ledger.alloc_nodes, ledger.borrowed
        on_node: dict[int, list[int]] = {}
        for r in self.sim.running[group]:
            nodes = alloc_nodes[r]
            if len(nodes) == 1 and not borrowed[r]:
                on_node.setdefault(int(nodes[0]), []).append(r)
        return on_node

    def _plan_migration(self, j: int) -> list[tuple[int, int]] | None:
        """Moves (job, destination node) after which ``j`` fits, moving as few GPUs as
        possible; ``None`` if no such moves exist."""
        sim = self.sim
        domain, need = sim.facts.domain[j], sim.facts.gpus[j]
        on_node = self._movable_by_node(sim.facts.group[j])
        if need <= domain.topology.largest:
            return self._plan_one_node(j, domain, need, on_node)
        return self._plan_many_nodes(j, domain, on_node)

    def _plan_one_node(
        self, j: int, domain: Domain, need: int, on_node: dict[int, list[int]]
    ) -> list[tuple[int, int]] | None:
        """For a job that fits on one node: the node that needs the fewest GPUs moved off it
        (ties: fewer jobs, then the lowest node), and where each goes."""
        best: tuple[int, int, int] | None = None
        best_moves: list[tuple[int, int]] | None = None
        free, capacity, gpus = self.ledger.free, self.ledger.capacity, self.sim.facts.gpus
        for node in domain.nodes.tolist():
            if capacity[node] < need:
                continue
            short = need - int(free[node])
            jobs = sorted(on_node.get(node, []), key=lambda r: (gpus[r], r))
            jobs = jobs[:MOST_MOVABLE_PER_NODE]
            if short <= 0 or sum(gpus[r] for r in jobs) < short:
                continue
            for moved, chosen in _subsets_by_size(jobs, gpus, short):
                key = (moved, len(chosen), node)
                if best is not None and key >= best:
                    break
                moves = self._relocate(chosen, avoid={node})
                if moves is not None:
                    best, best_moves = key, moves
                    break
        return best_moves

    def _plan_many_nodes(
        self, j: int, domain: Domain, on_node: dict[int, list[int]]
    ) -> list[tuple[int, int]] | None:
        """For a job larger than a node: empty nodes one at a time, the cheapest first (a
        greedy plan, not always the fewest GPUs), until the job fits."""
        sim, ledger = self.sim, self.ledger
        gpus, capacity = sim.facts.gpus, ledger.capacity
        free = ledger.free.copy()
        vc_used = ledger.vc_used.copy()
        emptied: set[int] = set()
        moves: list[tuple[int, int]] = []
        while not self.decider.evictions.fits_hypothetically(j, free, vc_used):
            options = []
            for node in domain.nodes.tolist():
                held = int(capacity[node] - free[node])
                if node in emptied or held == 0:
                    continue
                jobs = on_node.get(node, [])
                if sum(gpus[r] for r in jobs) == held:  # only movable jobs on it
                    options.append((held, node, jobs))
            for _, node, jobs in sorted(options):
                planned = self._relocate(jobs, avoid=emptied | {node}, free=free)
                if planned is not None:
                    break
            else:
                return None
            emptied.add(node)
            for r, dest in planned:
                free[dest] -= gpus[r]
                free[node] += gpus[r]
            moves += planned
        return moves

    def _relocate(
        self, jobs: list[int], avoid: set[int], free: np.ndarray | None = None
    ) -> list[tuple[int, int]] | None:
        """A destination for each of ``jobs`` (largest first, best fit on their own
        domain's nodes, never a node in ``avoid``), or None if one has nowhere to go."""
        sim = self.sim
        gpus, job_domain = sim.facts.gpus, sim.facts.domain
        free = (self.ledger.free if free is None else free).copy()
        moves = []
        for r in sorted(jobs, key=lambda r: (-gpus[r], r)):
            size, nodes = gpus[r], job_domain[r].nodes
            room = free[nodes]
            fits = (room >= size) & ~np.isin(nodes, list(avoid))
            if not fits.any():
                return None
            candidates = np.flatnonzero(fits)
            dest = int(nodes[candidates[np.argmin(room[candidates])]])
            free[dest] -= size
            moves.append((r, dest))
        return moves

    def defragment(self) -> set[int]:
        """A periodic pass: empty the least-used nodes by moving their jobs onto fuller ones
        (never onto empty nodes) while that frees a whole node. Returns the groups changed."""
        sim, ledger = self.sim, self.ledger
        capacity, free, gpus = ledger.capacity, ledger.free, sim.facts.gpus
        changed: set[int] = set()
        for group, nodes in enumerate(sim.group_nodes):
            if not sim.running[group]:
                continue
            while True:
                held = capacity[nodes] - free[nodes]
                partly = [int(n) for n, h in zip(nodes, held, strict=True) if h > 0]
                moved = False
                on_node = self._movable_by_node(group)
                for node in sorted(partly, key=lambda n: (capacity[n] - free[n], n)):
                    jobs = on_node.get(node, [])
                    if sum(gpus[r] for r in jobs) != capacity[node] - free[node]:
                        continue
                    empty = {int(n) for n in nodes if free[n] == capacity[n]}
                    plan = self._relocate(jobs, avoid=empty | {node})
                    if plan is None:
                        continue
                    self.make(plan)
                    changed.add(group)
                    moved = True
                    break
                if not moved:
                    break
        return changed


def _subsets_by_size(jobs: list[int], gpus: list[int], short: int):
    """Subsets of ``jobs`` holding at least ``short`` GPUs, fewest GPUs (then fewest jobs)
    first, as (GPUs, subset)."""
    found = []
    for k in range(1, len(jobs) + 1):
        for chosen in combinations(jobs, k):
            moved = sum(gpus[r] for r in chosen)
            if moved >= short:
                found.append((moved, k, chosen))
    found.sort(key=lambda item: (item[0], item[1]))
    return [(moved, list(chosen)) for moved, _, chosen in found]


__all__ = ["MOST_MOVABLE_PER_NODE", "GpuMoves"]
