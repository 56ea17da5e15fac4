"""Borrowing, reclaiming and migration: the multi-tenant half of the engine's decisions.

A mixin of :class:`~analysim.engine.Simulation`, like :class:`~analysim.rounds.Rounds`. It
reads the engine's state, plans on trial copies, and changes state only through the engine's
``_start_running``, ``_preempt`` and ``_migrate``. ``docs/semantics.md`` gives the rules.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

from analysim.domains import Domain, make_domain
from analysim.engine.records import MIGRATION_FAILED, RECLAIM, RECLAIM_FAILED
from analysim.errors import PolicyError

#: the most jobs on one node a migration plan considers moving (the smallest ones)
MOST_MOVABLE_PER_NODE = 12


class Tenancy:
    """Borrowing idle GPUs of other VCs, reclaiming them, and migrating running jobs."""

    def _init_tenancy(self) -> None:
        self._borrow_failed_at: dict[int, int] = self.shortcuts.memo()
        self._reclaim_failed_at: dict[int, int] = self.shortcuts.memo()
        self._migrate_failed_at: dict[int, int] = self.shortcuts.memo()
        self._borrow_domains: list[Domain | None] = []
        self._borrow_cap = [0] * len(self.partition.vc_names)
        # whether a job that does not fit may get room by reclaiming or migrating
        self._own_room = self._borrowing or self.config.migration
        self._own_room_why = 0  # what the last try to make room within its VC did in vain
        if self._borrowing:
            self._init_borrowing()

    def _init_borrowing(self) -> None:
        """Per domain, the nodes its jobs may borrow; per VC, how many GPUs at most."""
        nodes = self.cluster.nodes
        owner = nodes["vc"].to_numpy(dtype=object)
        rack_codes, rack_names = pd.factorize(nodes["rack"])
        names = self.partition.vc_names
        for domain in self.partition.domains:
            type_mask = domain.type_mask if domain.type_mask is not None else domain.mask
            if domain.quota is None:  # it owns nodes: it borrows those of the others
                mask = type_mask & (owner != names[domain.vc])
            else:  # it holds a quota: beyond it, any GPU of its type
                mask = type_mask.copy()
            usable = mask & (self.capacity > 0)
            self._borrow_domains.append(
                make_domain(domain.vc, usable, self.capacity, rack_codes, len(rack_names))
                if usable.any()
                else None
            )
        limit = self.config.borrow_limit
        own = self.partition.vc_quota
        for v, capacity in enumerate(self.partition.vc_capacity.tolist()):
            share = int(own[v]) if own[v] >= 0 else capacity
            self._borrow_cap[v] = int(math.floor(limit * share + 1e-9))

    def _held_by_vc(self) -> list[int]:
        """GPUs each VC's jobs hold, own and borrowed (what schedulers see as usage)."""
        if not self._borrowing:
            return list(self.vc_used)
        return [u + b for u, b in zip(self.vc_used, self.vc_borrowed, strict=True)]

    # -- borrowing and reclaiming -------------------------------------------------------------
    def _try_borrow(self, j: int) -> bool:
        """Start ``j`` on idle GPUs of other VCs, within its VC's borrowing limit."""
        vc, need = self._vc[j], self._gpus[j]
        if self.vc_borrowed[vc] + self._usage[j] > self._borrow_cap[vc]:
            return False
        domain = self._borrow_domains[self._domain_index[j]]
        if domain is None or need > domain.max_gpus:
            return False
        epoch = self._epoch[self._group[j]]
        if self._borrow_failed_at.get(j) == epoch:
            return False
        placed = self._place(j, self.free, domain)
        if placed is None:
            self._borrow_failed_at[j] = epoch
            return False
        self._start_running(j, *placed, borrowed=True)
        return True

    def _try_reclaim(self, j: int) -> bool:
        """Preempt jobs of other VCs that borrowed GPUs ``j`` is entitled to, if that lets
        ``j`` start; the newest borrowers go first."""
        if not self.borrowers or not self._quota_allows(j, self.vc_used):
            return False
        epoch = self._epoch[self._group[j]]
        self._own_room_why |= RECLAIM_FAILED  # until it succeeds
        if self._reclaim_failed_at.get(j) == epoch:
            return False
        domain, vc = self._domain[j], self._vc[j]
        candidates = [
            r
            for r in reversed(self.borrowers)
            if self._vc[r] != vc and domain.mask[self.alloc_nodes[r]].any()
        ]
        victims = self._fewest_to_free(j, candidates) if candidates else None
        if victims is None:
            self._reclaim_failed_at[j] = epoch
            return False
        for r in victims:
            self._preempt(r, cause=j, kind=RECLAIM)
        if not self._try_start(j):
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return True

    # -- migration ----------------------------------------------------------------------------
    def _try_migrate(self, j: int) -> bool:
        """If ``j`` does not fit although enough GPUs are free to it, move running jobs to
        other nodes (fewest GPUs moved) so that it does, and start it."""
        domain, need = self._domain[j], self._gpus[j]
        if not self._quota_allows(j, self.vc_used) or self.free[domain.nodes].sum() < need:
            return False  # not fragmentation: too few GPUs are free
        epoch = self._epoch[self._group[j]]
        self._own_room_why |= MIGRATION_FAILED  # until it succeeds
        if self._migrate_failed_at.get(j) == epoch:
            return False
        plan = self._plan_migration(j)
        if plan is None or not self._fits_after(j, plan):
            self._migrate_failed_at[j] = epoch
            return False
        for r, node in plan:
            self._migrate(r, np.array([node]), np.array([self._gpus[r]]), cause=j)
        if not self._try_start(j):
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return True

    def _fits_after(self, j: int, plan: list[tuple[int, int]]) -> bool:
        """Would ``j`` fit once the planned moves are made?"""
        free = self.free.copy()
        for r, dest in plan:
            free[self.alloc_nodes[r]] += self.alloc_counts[r]
            free[dest] -= self._gpus[r]
        return self._fits_hypothetically(j, free, self.vc_used)

    def _movable_by_node(self, group: int) -> dict[int, list[int]]:
        """Per node, the running jobs of ``group`` a migration may move: one-node jobs on
        their own GPUs (jobs spanning nodes and borrowers stay), in start order."""
        on_node: dict[int, list[int]] = {}
        for r in self.running[group]:
            nodes = self.alloc_nodes[r]
            if len(nodes) == 1 and not self.borrowed[r]:
                on_node.setdefault(int(nodes[0]), []).append(r)
        return on_node

    def _plan_migration(self, j: int) -> list[tuple[int, int]] | None:
        """Moves (job, destination node) after which ``j`` fits, moving as few GPUs as
        possible; ``None`` if no such moves exist."""
        domain, need = self._domain[j], self._gpus[j]
        on_node = self._movable_by_node(self._group[j])
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
        free = self.free
        for node in domain.nodes.tolist():
            if self.capacity[node] < need:
                continue
            short = need - int(free[node])
            jobs = sorted(on_node.get(node, []), key=lambda r: (self._gpus[r], r))
            jobs = jobs[:MOST_MOVABLE_PER_NODE]
            if short <= 0 or sum(self._gpus[r] for r in jobs) < short:
                continue
            for moved, chosen in _subsets_by_size(jobs, self._gpus, short):
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
        free = self.free.copy()
        vc_used = self.vc_used.copy()
        emptied: set[int] = set()
        moves: list[tuple[int, int]] = []
        while not self._fits_hypothetically(j, free, vc_used):
            options = []
            for node in domain.nodes.tolist():
                held = int(self.capacity[node] - free[node])
                if node in emptied or held == 0:
                    continue
                jobs = on_node.get(node, [])
                if sum(self._gpus[r] for r in jobs) == held:  # only movable jobs on it
                    options.append((held, node, jobs))
            for _, node, jobs in sorted(options):
                planned = self._relocate(jobs, avoid=emptied | {node}, free=free)
                if planned is not None:
                    break
            else:
                return None
            emptied.add(node)
            for r, dest in planned:
                free[dest] -= self._gpus[r]
                free[node] += self._gpus[r]
            moves += planned
        return moves

    def _relocate(
        self, jobs: list[int], avoid: set[int], free: np.ndarray | None = None
    ) -> list[tuple[int, int]] | None:
        """A destination for each of ``jobs`` (largest first, best fit on their own
        domain's nodes, never a node in ``avoid``), or None if one has nowhere to go."""
        free = (self.free if free is None else free).copy()
        moves = []
        for r in sorted(jobs, key=lambda r: (-self._gpus[r], r)):
            size, nodes = self._gpus[r], self._domain[r].nodes
            room = free[nodes]
            fits = (room >= size) & ~np.isin(nodes, list(avoid))
            if not fits.any():
                return None
            candidates = np.flatnonzero(fits)
            dest = int(nodes[candidates[np.argmin(room[candidates])]])
            free[dest] -= size
            moves.append((r, dest))
        return moves

    def _defragment(self) -> set[int]:
        """A periodic pass: empty the least-used nodes by moving their jobs onto fuller ones
        (never onto empty nodes) while that frees a whole node. Returns the groups changed."""
        changed: set[int] = set()
        for group, nodes in enumerate(self.group_nodes):
            if not self.running[group]:
                continue
            while True:
                held = self.capacity[nodes] - self.free[nodes]
                partly = [int(n) for n, h in zip(nodes, held, strict=True) if h > 0]
                moved = False
                on_node = self._movable_by_node(group)
                for node in sorted(partly, key=lambda n: (self.capacity[n] - self.free[n], n)):
                    jobs = on_node.get(node, [])
                    if sum(self._gpus[r] for r in jobs) != self.capacity[node] - self.free[node]:
                        continue
                    empty = {int(n) for n in nodes if self.free[n] == self.capacity[n]}
                    plan = self._relocate(jobs, avoid=empty | {node})
                    if plan is None:
                        continue
                    for r, dest in plan:
                        self._migrate(r, np.array([dest]), np.array([self._gpus[r]]))
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
