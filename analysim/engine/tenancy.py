"""Tenancy: borrowing idle GPUs of other VCs, reclaiming them, migrating running jobs and
defragmenting: the multi-tenant half of the engine's decisions.

:class:`Tenancy` is a collaborator of :class:`~analysim.engine.Simulation`, which makes one
(``Simulation.tenancy``) and asks it, in a round, :meth:`Tenancy.try_own_room` (reclaim, then
migrate) and :meth:`Tenancy.try_borrow`, at a defragmentation boundary
:meth:`Tenancy.defragment`, and for the schedulers' view :meth:`Tenancy.held_by_vc`.

It owns its own state: per domain the nodes its jobs may borrow, per VC the most GPUs it may
borrow, the memos of tries that failed (borrow, reclaim, migrate; against the rounds' per
group ``epoch``). A try to make room returns a :class:`RoomTry`: whether the job started,
and what was tried in vain (the records' failure bits). It reads the cluster's state from
the ledger, asks the rounds' parts (``Simulation.decider``: its ``starts`` where a job fits,
its ``evictions`` which evictions free room), plans on trial copies, and changes state only
through the engine's state changes (``start_running``, ``preempt``, ``migrate``) and
:meth:`~analysim.engine.starts.StartTries.try_start`.
``docs/semantics.md`` gives the rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from analysim.engine.book_moves import BookMoves
from analysim.engine.gpu_moves import GpuMoves
from analysim.engine.records import MIGRATION_FAILED, RECLAIM, RECLAIM_FAILED
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain, make_domain

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation


@dataclass(frozen=True)
class RoomTry:
    """The answer to a try to make room for a job: whether it started, else the failure
    bits of what was tried in vain (``RECLAIM_FAILED``, ``MIGRATION_FAILED``; 0: nothing
    was tried, as when too few GPUs are free to it in all)."""

    started: bool
    why: int = 0


ROOM_MADE = RoomTry(True)
_BOTH_FAILED = RECLAIM_FAILED | MIGRATION_FAILED
_FAILED = {why: RoomTry(False, why) for why in (0, RECLAIM_FAILED, MIGRATION_FAILED, _BOTH_FAILED)}
NOT_TRIED = _FAILED[0]


class Tenancy:
    """Borrowing idle GPUs of other VCs, reclaiming them, migrating running jobs, and
    defragmenting, for the simulation ``sim``."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.ledger = sim.ledger
        self.decider = sim.decider  # the rounds: their epochs
        #: where a job fits, its VC's quota, starting it (the rounds' part)
        self.starts = sim.decider.starts
        #: whether jobs may borrow idle GPUs of other VCs (then every VC is in one group)
        self.borrowing: bool = sim.flags.borrowing
        #: whether running jobs may be moved to make room for a job (``config.migration``)
        self.migration = bool(sim.config.migration)
        #: whether a job that does not fit may get room by reclaiming or migrating
        self.own_room: bool = self.borrowing or self.migration
        #: how many times a job reclaimed lent GPUs (the rounds look again after one)
        self.reclaims = 0
        memo = sim.shortcuts.memo
        self._borrow_failed_at: dict[int, int] = memo()
        self._reclaim_failed_at: dict[int, int] = memo()
        self._migrate_failed_at: dict[int, int] = memo()
        self._borrow_domains: list[Domain | None] = []
        self._borrow_cap = [0] * len(sim.partition.vc_names)  # (resource mode: GPU milli)
        if self.borrowing:
            self._init_borrowing()
        #: who plans migrations and defragmentation: on the resource book in resource mode,
        #: else on whole-GPU counts (the same rules)
        self.moves: GpuMoves | BookMoves = (BookMoves if sim.resource_mode else GpuMoves)(sim)

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
            self._borrow_cap[v] = int(math.floor(limit * share + 1e-9)) * self.ledger.unit

    def held_by_vc(self) -> list[int]:
        """GPUs each VC's jobs hold, own and borrowed (what schedulers see as usage): the
        ``num_gpus`` of its running jobs (in resource mode a share counts as one GPU, as in
        its own ``num_gpus``; with whole GPUs the ledger's counters say the same)."""
        ledger, sim = self.ledger, self.sim
        if sim.resource_mode:
            held = [0] * len(sim.partition.vc_names)
            vc, gpus = sim.facts.vc, sim.facts.gpus
            for running in sim.running:
                for j in running:
                    held[vc[j]] += gpus[j]
            return held
        if not self.borrowing:
            return list(ledger.vc_used)
        return [u + b for u, b in zip(ledger.vc_used, ledger.vc_borrowed, strict=True)]

    def try_own_room(self, j: int) -> RoomTry:
        """Make room for ``j`` within what its VC is entitled to, without evicting any job
        of its own rank order: reclaim lent GPUs, then migrate (when switched on)."""
        reclaimed = self.try_reclaim(j) if self.borrowing else NOT_TRIED
        if reclaimed.started or not self.migration:
            return reclaimed
        migrated = self.try_migrate(j)
        if migrated.started or not reclaimed.why:
            return migrated
        return _FAILED[reclaimed.why | migrated.why]

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
        placed = self.starts.place(j, self.ledger.free, domain)[0]
        if placed is None:
            self._borrow_failed_at[j] = epoch
            return False
        sim.start_running(j, *placed, borrowed=True)  # (resource mode: with its claims)
        return True

    def try_reclaim(self, j: int) -> RoomTry:
        """Preempt jobs of other VCs that borrowed GPUs ``j`` is entitled to, if that lets
        ``j`` start; the newest borrowers go first."""
        sim, ledger = self.sim, self.ledger
        if not ledger.borrowers or not self.starts.quota_allows(j, ledger.vc_used):
            return NOT_TRIED
        epoch = self.decider.epoch[sim.facts.group[j]]
        failed = _FAILED[RECLAIM_FAILED]
        if self._reclaim_failed_at.get(j) == epoch:
            return failed
        domain, vc, job_vc = sim.facts.domain[j], sim.facts.vc[j], sim.facts.vc
        candidates = [
            r
            for r in reversed(ledger.borrowers)
            if job_vc[r] != vc and domain.mask[ledger.alloc_nodes[r]].any()
        ]
        victims = self.decider.evictions.fewest_to_free(j, candidates) if candidates else None
        if victims is None:
            self._reclaim_failed_at[j] = epoch
            return failed
        self.reclaims += 1
        for r in victims:
            sim.preempt(r, cause=j, kind=RECLAIM)
        if not self.starts.try_start(j).started:
            raise PolicyError(f"placement policy {sim.placer.name!r} is not deterministic")
        return ROOM_MADE

    # -- migration ----------------------------------------------------------------------------
    def try_migrate(self, j: int) -> RoomTry:
        """If ``j`` does not fit although enough is free to it in all, move running jobs to
        other nodes (the fewest GPUs, or GPU milli, moved) so that it does, and start it."""
        sim = self.sim
        if not self.starts.quota_allows(j, self.ledger.vc_used) or not self.moves.enough_free(j):
            return NOT_TRIED  # not fragmentation: too little is free in all
        epoch = self.decider.epoch[sim.facts.group[j]]
        failed = _FAILED[MIGRATION_FAILED]
        if self._migrate_failed_at.get(j) == epoch:
            return failed
        plan = self.moves.plan(j)
        if plan is None:
            self._migrate_failed_at[j] = epoch
            return failed
        self.moves.make(plan, cause=j)
        if not self.starts.try_start(j).started:
            raise PolicyError(f"placement policy {sim.placer.name!r} is not deterministic")
        return ROOM_MADE

    def defragment(self) -> set[int]:
        """A periodic pass: empty the least-used nodes by moving their jobs onto fuller ones
        (never onto empty nodes) while that frees a whole node. Returns the groups changed."""
        return self.moves.defragment()
