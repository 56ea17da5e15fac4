"""Tenancy: borrowing idle GPUs of other VCs, reclaiming them, migrating running jobs and
defragmenting: the multi-tenant half of the engine's decisions.

:class:`Tenancy` is a collaborator of :class:`~analysim.engine.Simulation`, which makes one
(``Simulation.tenancy``) and asks it, in a round, :meth:`Tenancy.try_own_room` (reclaim, then
migrate) and :meth:`Tenancy.try_borrow`, at a defragmentation boundary
:meth:`Tenancy.defragment`, and for the schedulers' view :meth:`Tenancy.held_by_vc`.

It owns its own state: per domain the nodes its jobs may borrow, per VC the most GPUs it may
borrow, the memos of tries that failed (borrow, reclaim, migrate; against the rounds' per
group ``epoch``), and what the last try to make room did in vain (``own_room_why``, for the
records). It reads the cluster's state from the ledger, asks the rounds
(``Simulation.decider``) where a job fits and which evictions free room, plans on trial
copies, and changes state only through the engine's state changes (``start_running``,
``preempt``, ``migrate``) and the rounds' :meth:`~analysim.engine.rounds.Rounds.try_start`.
``docs/semantics.md`` gives the rules.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.domains import Domain, make_domain
from analysim.engine.records import MIGRATION_FAILED, RECLAIM, RECLAIM_FAILED
from analysim.errors import PolicyError

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

#: the most jobs on one node a migration plan considers moving (the smallest ones)
MOST_MOVABLE_PER_NODE = 12


class Tenancy:
    """Borrowing idle GPUs of other VCs, reclaiming them, migrating running jobs, and
    defragmenting, for the simulation ``sim``."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.ledger = sim.ledger
        self.decider = sim.decider  # the rounds: where a job fits, starting it, their epochs
        #: whether jobs may borrow idle GPUs of other VCs (then every VC is in one group)
        self.borrowing: bool = sim.flags.borrowing
        #: whether running jobs may be moved to make room for a job (``config.migration``)
        self.migration = bool(sim.config.migration)
        #: whether a job that does not fit may get room by reclaiming or migrating
        self.own_room: bool = self.borrowing or self.migration
        #: what the last :meth:`try_own_room` tried in vain (the records' failure bits)
        self.own_room_why = 0
        memo = sim.shortcuts.memo
        self._borrow_failed_at: dict[int, int] = memo()
        self._reclaim_failed_at: dict[int, int] = memo()
        self._migrate_failed_at: dict[int, int] = memo()
        self._borrow_domains: list[Domain | None] = []
        self._borrow_cap = [0] * len(sim.partition.vc_names)
        if self.borrowing:
            self._init_borrowing()

    def _init_borrowing(self) -> None:
        """Per domain, the nodes its jobs may borrow; per VC, how many GPUs at most."""
        sim = self.sim
        nodes = sim.cluster.nodes
        owner = nodes["vc"].to_numpy(dtype=object)
        rack_codes, rack_names = pd.factorize(nodes["rack"])
        names = sim.partition.vc_names
        for domain in sim.partition.domains:
            type_mask = domain.type_mask if domain.type_mask is not None else domain.mask
            if domain.quota is None:  # it owns nodes: it borrows those of the others
                mask = type_mask & (owner != names[domain.vc])
            else:  # it holds a quota: beyond it, any GPU of its type
                mask = type_mask.copy()
            usable = mask & (sim.capacity > 0)
            self._borrow_domains.append(
                make_domain(domain.vc, usable, sim.capacity, rack_codes, len(rack_names))
                if usable.any()
                else None
            )
        limit = sim.config.borrow_limit
        own = sim.partition.vc_quota
        for v, capacity in enumerate(sim.partition.vc_capacity.tolist()):
            share = int(own[v]) if own[v] >= 0 else capacity
            self._borrow_cap[v] = int(math.floor(limit * share + 1e-9))

    def held_by_vc(self) -> list[int]:
        """GPUs each VC's jobs hold, own and borrowed (what schedulers see as usage)."""
        ledger = self.ledger
        if not self.borrowing:
            return list(ledger.vc_used)
        return [u + b for u, b in zip(ledger.vc_used, ledger.vc_borrowed, strict=True)]

    def try_own_room(self, j: int) -> bool:
        """Make room for ``j`` within what its VC is entitled to, without evicting any job
        of its own rank order: reclaim lent GPUs, then migrate (when switched on). What was
        tried in vain is left in ``own_room_why`` (the records' failure bits)."""
        self.own_room_why = 0
        if self.borrowing and self.try_reclaim(j):
            return True
        return self.migration and self.try_migrate(j)

    # -- borrowing and reclaiming -------------------------------------------------------------
    def try_borrow(self, j: int) -> bool:
        """Start ``j`` on idle GPUs of other VCs, within its VC's borrowing limit."""
        sim = self.sim
        vc, need = sim.facts.vc[j], sim.facts.gpus[j]
        if self.ledger.vc_borrowed[vc] + sim.facts.usage[j] > self._borrow_cap[vc]:
            return False
        domain = self._borrow_domains[sim.facts.domain_index[j]]
        if domain is None or need > domain.max_gpus:
            return False
        epoch = self.decider.epoch[sim.facts.group[j]]
        if self._borrow_failed_at.get(j) == epoch:
            return False
        placed = self.decider.place(j, self.ledger.free, domain)
        if placed is None:
            self._borrow_failed_at[j] = epoch
            return False
        sim.start_running(j, *placed, borrowed=True)  # (resource mode: with its claims)
        return True

    def try_reclaim(self, j: int) -> bool:
        """Preempt jobs of other VCs that borrowed GPUs ``j`` is entitled to, if that lets
        ``j`` start; the newest borrowers go first."""
        sim, ledger = self.sim, self.ledger
        if not ledger.borrowers or not self.decider.quota_allows(j, ledger.vc_used):
            return False
        epoch = self.decider.epoch[sim.facts.group[j]]
        self.own_room_why |= RECLAIM_FAILED  # until it succeeds
        if self._reclaim_failed_at.get(j) == epoch:
            return False
        domain, vc, job_vc = sim.facts.domain[j], sim.facts.vc[j], sim.facts.vc
        candidates = [
            r
            for r in reversed(ledger.borrowers)
            if job_vc[r] != vc and domain.mask[ledger.alloc_nodes[r]].any()
        ]
        victims = self.decider.fewest_to_free(j, candidates) if candidates else None
        if victims is None:
            self._reclaim_failed_at[j] = epoch
            return False
        for r in victims:
            sim.preempt(r, cause=j, kind=RECLAIM)
        if not self.decider.try_start(j):
            raise PolicyError(f"placement policy {sim.placer.name!r} is not deterministic")
        return True

    # -- migration ----------------------------------------------------------------------------
    def try_migrate(self, j: int) -> bool:
        """If ``j`` does not fit although enough GPUs are free to it, move running jobs to
        other nodes (fewest GPUs moved) so that it does, and start it."""
        sim, ledger = self.sim, self.ledger
        domain, need = sim.facts.domain[j], sim.facts.gpus[j]
        if (
            not self.decider.quota_allows(j, ledger.vc_used)
            or ledger.free[domain.nodes].sum() < need
        ):
            return False  # not fragmentation: too few GPUs are free
        epoch = self.decider.epoch[sim.facts.group[j]]
        self.own_room_why |= MIGRATION_FAILED  # until it succeeds
        if self._migrate_failed_at.get(j) == epoch:
            return False
        plan = self._plan_migration(j)
        if plan is None or not self._fits_after(j, plan):
            self._migrate_failed_at[j] = epoch
            return False
        gpus = sim.facts.gpus
        for r, node in plan:
            sim.migrate(r, np.array([node]), np.array([gpus[r]]), cause=j)
        if not self.decider.try_start(j):
            raise PolicyError(f"placement policy {sim.placer.name!r} is not deterministic")
        return True

    def _fits_after(self, j: int, plan: list[tuple[int, int]]) -> bool:
        """Would ``j`` fit once the planned moves are made?"""
        sim, ledger = self.sim, self.ledger
        free = ledger.free.copy()
        for r, dest in plan:
            free[ledger.alloc_nodes[r]] += ledger.alloc_counts[r]
            free[dest] -= sim.facts.gpus[r]
        return self.decider.fits_hypothetically(j, free, ledger.vc_used)

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
        while not self.decider.fits_hypothetically(j, free, vc_used):
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
                    for r, dest in plan:
                        sim.migrate(r, np.array([dest]), np.array([gpus[r]]))
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
