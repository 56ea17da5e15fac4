"""Migration and defragmentation in resource mode: moving jobs that share GPUs and ask for
CPU and memory, planned on trial copies of the resource book.

:class:`BookMoves` is the planner :class:`~analysim.engine.tenancy.Tenancy` asks in resource
mode: the whole-GPU rules of :class:`~analysim.engine.gpu_moves.GpuMoves` in GPU milli, CPU
and memory. Migration moves the running one-node jobs off one node (fewest GPU milli moved),
defragmentation empties the least-used nodes; both ask the simulation's
:class:`~analysim.engine.resource_placement.ResourcePlacement` where a job fits on a trial
book (``fits_on``) and skip trials that cannot succeed (:class:`_FitBound`, under
``Shortcuts.trial_bounds``). Moves go through the engine's ``migrate``, which hands their
claims to the ledger.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.gpu_moves import MOST_MOVABLE_PER_NODE
from analysim.engine.records import FULL
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.book import Claim, ResourceBook
    from analysim.engine.simulation import Simulation

#: a plan: (job, its claims at its destination) moves
Plan = list[tuple[int, list["Claim"]]]


class BookMoves:
    """Migration and defragmentation plans for the simulation ``sim``, on its book."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.ledger = sim.ledger
        self.decider = sim.decider
        self._defrag_failed_at: int | None = None  # ``sim.changes`` after a vain pass
        self._empty_gpu_left = sim.book.gpu_left.copy()  # milli per GPU, nothing running

    def enough_free(self, j: int) -> bool:
        """Whether enough is free to ``j`` in all (else migration cannot help)."""
        return self.sim.placement.why_not(j, self.sim.facts.domain[j]) != FULL

    def plan(self, j: int) -> Plan | None:
        """Moves after which ``j`` fits (the fewest GPU milli moved); None if none do."""
        sim = self.sim
        facts = sim.facts
        on_node = self._movable(facts.group[j])
        topology = sim.placement.topology_for(j, facts.domain[j])
        if facts.milli[j] == MILLI and facts.gpus[j] > topology.largest:
            return self._plan_many_nodes(j, on_node)
        return self._plan_one_node(j, on_node)

    def make(self, plan: Plan, cause: int | None = None) -> None:
        """Make the moves of ``plan`` (for job ``cause``)."""
        for r, claims in plan:
            self._move(r, claims, cause=cause)

    # -- migration and defragmentation ----------------------------------------------------------
    def _movable(self, group: int) -> dict[int, list[int]]:
        """Per node, the running one-node jobs of ``group`` on their own GPUs, start order."""
        ledger = self.ledger
        claims_of, borrowed = ledger.claims, ledger.borrowed
        on_node: dict[int, list[int]] = {}
        for r in self.sim.running[group]:
            claims = claims_of[r]
            if len(claims) == 1 and not borrowed[r]:
                on_node.setdefault(claims[0][0], []).append(r)
        return on_node

    def _relocate_on(
        self, book: ResourceBook, jobs: list[int], avoid: set[int]
    ) -> list[tuple[int, list[Claim]]] | None:
        """A destination for each of ``jobs`` (largest first), one node each, the best fit
        on their own domain's nodes (never a node in ``avoid``), taken on ``book``; None if
        one has nowhere to go. The whole-GPU rule (``Tenancy._relocate``) on the book."""
        facts = self.sim.facts
        moves = []
        for r in sorted(jobs, key=lambda r: (-facts.usage[r], -facts.cpu[r], r)):
            claim = self._best_fit_claim(book, r, avoid)
            if claim is None:
                return None
            book.take(claim, facts.kind[r])
            moves.append((r, [claim]))
        return moves

    def _best_fit_claim(self, book: ResourceBook, r: int, avoid: set[int]) -> Claim | None:
        """Where running one-node job ``r`` would go on ``book`` off ``avoid``: the node of
        its domain with the least room for it that holds it (room: fully free GPUs for
        whole GPUs, the tightest GPU that holds a share, CPU left for a CPU-only job; ties:
        the lowest node), whole GPUs the lowest free ones, a share the tightest GPU."""
        facts = self.sim.facts
        nodes = facts.domain[r].nodes
        if avoid:
            nodes = nodes[~np.isin(nodes, list(avoid))]
        if not len(nodes):
            return None
        need, milli = facts.gpus[r], facts.milli[r]
        cpu, mem = facts.cpu[r], facts.mem[r]
        if need > 1:  # whole GPUs on one node: the CPU and memory per GPU, on one node
            cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        left = book.gpu_left[nodes]
        ok = (book.cpu_left[nodes] >= cpu) & (book.mem_left[nodes] >= mem)
        if not need:
            room = book.cpu_left[nodes]
        elif milli == MILLI:
            room = (left == MILLI).sum(axis=1)
            ok &= room >= need
        else:
            holds = left >= milli
            ok &= holds.any(axis=1)
            room = np.where(holds, left, MILLI + 1).min(axis=1)
        if not ok.any():
            return None
        candidates = np.flatnonzero(ok)
        node = int(nodes[candidates[np.argmin(room[candidates])]])
        gpus = book.gpus_of(node)
        if not need:
            taken: tuple[int, ...] = ()
        elif milli == MILLI:
            taken = tuple(g for g, x in enumerate(gpus) if x == MILLI)[:need]
        else:
            taken = (min((x, g) for g, x in enumerate(gpus) if x >= milli)[1],)
        return (node, taken, cpu, mem, milli)

    def _fits_after(self, j: int, book: ResourceBook) -> bool:
        """Would ``j`` fit on ``book`` (the book once the planned moves are made)?"""
        return (
            self.decider.starts.quota_allows(j, self.ledger.vc_used)
            and self.sim.placement.fits_on(book, j) is not None
        )

    def _plan_one_node(
        self, j: int, on_node: dict[int, list[int]]
    ) -> list[tuple[int, list[Claim]]] | None:
        """For a job one node could hold: the node that needs the fewest GPU milli moved off
        it (ties: fewer jobs, then the lowest node; any subset of its 12 smallest movable
        jobs), and where each goes; None if no moves let ``j`` fit."""
        sim, ledger = self.sim, self.ledger
        facts = sim.facts
        usage, cpu, kind = facts.usage, facts.cpu, facts.kind
        bound = _FitBound(sim, j) if sim.shortcuts.trial_bounds else None
        leaves: dict[int, bool] = {}
        best = None
        for node in facts.domain[j].nodes.tolist():
            if node not in on_node or not self._holds_alone(j, node, empty=True):
                continue  # nothing to move, or too small even when empty
            if self._holds_alone(j, node, empty=False):
                continue  # it fits there already: not this node's fragmentation
            jobs = sorted(on_node[node], key=lambda r: (usage[r], cpu[r], r))
            jobs = jobs[:MOST_MOVABLE_PER_NODE]
            least = 0
            if bound is not None:
                if bound.first(node, jobs) is None:
                    continue  # j fits nowhere even with all of them gone
                # a job with nowhere else to go fails every trial that moves it; and a trial
                # moving less GPU milli than the node must gain for j cannot make it fit
                jobs = [r for r in jobs if self._could_leave(r, {node}, leaves)]
                least = self._least_to_move(j, node)
            fits_with = self._node_fit(j, node, jobs)
            for moved, chosen in _subsets_by_usage(jobs, usage):
                key = (moved, len(chosen), node)
                if best is not None and key >= best[0]:
                    break
                if moved < least or not fits_with(chosen):
                    continue
                book = sim.book.clone()
                for r in chosen:
                    for claim in ledger.claims[r]:
                        book.give(claim, kind[r])
                moves = self._relocate_on(book, chosen, avoid={node})
                if moves is not None:
                    best = (key, moves, book)
                    break
        if best is None or not self._fits_after(j, best[2]):
            return None
        return best[1]

    def _holds_alone(self, j: int, node: int, empty: bool) -> bool:
        """Whether ``node`` could hold ``j`` by itself: as it is now, or when ``empty``."""
        book = self.sim.book
        if empty:
            cpu_left, mem_left = int(book.nodes.cpu[node]), int(book.nodes.memory[node])
            left = self._empty_gpu_left[node]
        else:
            cpu_left, mem_left = int(book.cpu_left[node]), int(book.mem_left[node])
            left = book.gpu_left[node]
        return self._node_fit(j, node, [], cpu_left, mem_left, left)([])

    def _least_to_move(self, j: int, node: int) -> int:
        """The fewest GPU milli that must leave ``node`` for ``j`` to fit there: for whole
        GPUs, the milli in use on the emptiest GPUs that must become fully free; for a share,
        what its roomiest GPU lacks."""
        facts, book = self.sim.facts, self.sim.book
        need, milli = facts.gpus[j], facts.milli[j]
        if not need:
            return 0
        left = book.gpus_of(node)
        if milli < MILLI:
            return max(0, milli - max(left))
        in_use = sorted(MILLI - x for x in left if x < MILLI)
        short = need - (len(left) - len(in_use))
        return sum(in_use[:short]) if short > 0 else 0

    def _node_fit(
        self,
        j: int,
        node: int,
        jobs: list[int],
        cpu_left: int | None = None,
        mem_left: int | None = None,
        gpu_left: np.ndarray | None = None,
    ):
        """A test of whether ``node`` (as it is now, or with the given CPU, memory and GPU
        milli left) could hold ``j`` by itself once some of ``jobs`` (running there) gave
        back what they hold there: each job's share of the node counted once."""
        facts, book = self.sim.facts, self.sim.book
        need, milli = facts.gpus[j], facts.milli[j]
        cpu, mem = facts.cpu[j], facts.mem[j]
        if need > 1:
            cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        if cpu_left is None:
            cpu_left, mem_left = int(book.cpu_left[node]), int(book.mem_left[node])
            gpu_left = book.gpu_left[node]
        base = gpu_left[: book.nodes.gpus[node]].tolist()
        held: dict[int, tuple[int, int, list[tuple[int, int]]]] = {}
        for r in jobs:
            c = m = 0
            gpus: list[tuple[int, int]] = []
            for n, taken, cc, mm, share in self.ledger.claims[r]:
                if n == node:
                    c, m = c + cc, m + mm
                    gpus += [(g, share) for g in taken]
            held[r] = (c, m, gpus)

        def fits_with(chosen: list[int]) -> bool:
            c, m, left = cpu_left, mem_left, list(base)
            for r in chosen:
                cc, mm, gpus = held[r]
                c, m = c + cc, m + mm
                for g, share in gpus:
                    left[g] += share
            if c < cpu or m < mem:
                return False
            if not need:
                return True
            if milli == MILLI:
                return sum(1 for x in left if x == MILLI) >= need
            return any(x >= milli for x in left)

        return fits_with

    def _plan_many_nodes(
        self, j: int, on_node: dict[int, list[int]]
    ) -> list[tuple[int, list[Claim]]] | None:
        """For a job larger than a node: empty nodes one at a time, the least used first
        (fewest GPU milli; a greedy plan, as ``Tenancy._plan_many_nodes``), until it fits."""
        sim, ledger = self.sim, self.ledger
        facts = sim.facts
        book = sim.book.clone()
        emptied: set[int] = set()
        moves: list[tuple[int, list[Claim]]] = []
        while not self._fits_after(j, book):
            options = []
            for node in facts.domain[j].nodes.tolist():
                jobs = on_node.get(node, [])
                if node in emptied or not jobs or not self._only_these_on(book, node, jobs):
                    continue
                in_use = int((self._empty_gpu_left[node] - book.gpu_left[node]).sum())
                options.append((in_use, node, jobs))
            for _, node, jobs in sorted(options):
                trial = book.clone()
                for r in jobs:
                    for claim in ledger.claims[r]:
                        trial.give(claim, facts.kind[r])
                planned = self._relocate_on(trial, jobs, avoid=emptied | {node})
                if planned is not None:
                    break
            else:
                return None
            book = trial
            emptied.add(node)
            moves += planned
        return moves

    def _only_these_on(self, book: ResourceBook, node: int, jobs: list[int]) -> bool:
        """Whether ``jobs`` (where they run now) hold everything in use on ``node`` of
        ``book``: nothing else (a job spanning nodes, a borrower, one moved there) is on it."""
        cpu = mem = 0
        left = self._empty_gpu_left[node].copy()
        for r in jobs:
            for n, gpus, c, m, milli in self.ledger.claims[r]:
                if n == node:
                    cpu, mem = cpu + c, mem + m
                    for g in gpus:
                        left[g] -= milli
        nodes = book.nodes
        return (
            int(nodes.cpu[node]) - cpu == int(book.cpu_left[node])
            and int(nodes.memory[node]) - mem == int(book.mem_left[node])
            and bool((left == book.gpu_left[node]).all())
        )

    def _could_leave(self, r: int, avoid: set[int], known: dict[int, bool]) -> bool:
        """Whether running job ``r`` could fit off the nodes in ``avoid`` (its own among
        them) on the book as it is now, in CPU, memory and GPUs alone (``known`` keeps the
        answers, for one ``avoid`` set per job)."""
        could = known.get(r)
        if could is None:
            could = known[r] = _FitBound(self.sim, r, one_node=True).fits_without(avoid)
        return could

    def _move(self, r: int, claims: list[Claim], cause: int | None = None) -> None:
        nodes = np.array([c[0] for c in claims])
        counts = np.array([len(c[1]) for c in claims])
        self.sim.migrate(r, nodes, counts, cause=cause, claims=claims)

    def defragment(self) -> set[int]:
        """Empty the least-used nodes (fewest GPU milli, then CPU, in use) by moving their
        jobs onto other used nodes, while that empties a whole node."""
        sim, ledger = self.sim, self.ledger
        changed: set[int] = set()
        if sim.shortcuts.memos and self._defrag_failed_at == sim.changes:
            return changed  # nothing changed since a pass that moved nothing
        book = sim.book
        bounds = sim.shortcuts.trial_bounds
        for group, nodes in enumerate(sim.group_nodes):
            while sim.running[group]:
                listed = nodes.tolist()
                held = self._held(nodes).tolist()
                in_use = (self._empty_gpu_left[nodes] - book.gpu_left[nodes]).sum(axis=1).tolist()
                cpu_left = book.cpu_left[nodes].tolist()
                used = [
                    (int(in_use[i]), int(cpu_left[i]), n) for i, n in enumerate(listed) if held[i]
                ]
                on_node = self._movable(group)
                empty = {n for i, n in enumerate(listed) if not held[i]}
                jobs_on = self._jobs_per_node()
                leaves: dict[int, bool] = {}
                moved = False
                for _, _, node in sorted(used, key=lambda u: (u[0], -u[1], u[2])):
                    jobs = on_node.get(node, [])
                    if not jobs or len(jobs) != jobs_on.get(node, 0):
                        continue  # (a node in use without jobs is down: nothing to move)
                    avoid = empty | {node}
                    if bounds and not all(self._could_leave(r, avoid, leaves) for r in jobs):
                        continue  # one of them has nowhere else to go
                    trial = book.clone()
                    for r in jobs:
                        for claim in ledger.claims[r]:
                            trial.give(claim, sim.facts.kind[r])
                    plan = self._relocate_on(trial, jobs, avoid=avoid)
                    if plan is None:
                        continue
                    for r, claims in plan:
                        self._move(r, claims)
                    changed.add(group)
                    moved = True
                    break
                if not moved:
                    break
        if not changed:
            self._defrag_failed_at = sim.changes
        return changed

    def _held(self, nodes: np.ndarray) -> np.ndarray:
        """Whether each of ``nodes`` holds anything (CPU, memory or GPU milli in use)."""
        book = self.sim.book
        return (
            (book.cpu_left[nodes] != book.nodes.cpu[nodes])
            | (book.mem_left[nodes] != book.nodes.memory[nodes])
            | (book.gpu_left[nodes] != self._empty_gpu_left[nodes]).any(axis=1)
        )

    def _jobs_per_node(self) -> dict[int, int]:
        """How many running jobs hold something on each node."""
        count: dict[int, int] = {}
        for claims in self.ledger.claims.values():
            for node in {c[0] for c in claims}:
                count[node] = count.get(node, 0) + 1
        return count


class _FitBound:
    """Whether job ``j`` could fit (in CPU, memory and GPUs alone, the placer's choice
    aside) once some jobs leave one node, all else as now.

    A migration moves jobs off one node onto the others, so every other node ends with at
    most what it has now and that node with at most what it has now plus what they free;
    what cannot hold ``j`` then cannot hold it after the moves either (the trial's
    ``fits_on`` would say None): such trials are skipped. Exact: only failing trials go."""

    def __init__(self, sim: Simulation, j: int, one_node: bool | None = None) -> None:
        """``one_node``: whether ``j`` goes on one node (a moved job does); by default as its
        placement would put it."""
        self.sim, self.j = sim, j
        need, milli = sim.facts.gpus[j], sim.facts.milli[j]
        cpu, mem = sim.facts.cpu[j], sim.facts.mem[j]
        domain = sim.facts.domain[j]
        if one_node is None:
            one_node = sim.placement.takes_one_node(j, sim.placement.topology_for(j, domain))
        self.one_node = one_node
        if self.one_node:
            if need > 1:
                cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        else:
            cpu, mem = -(-cpu // need), -(-mem // need)
        self.need, self.milli, self.cpu, self.mem = need, milli, cpu, mem
        book = sim.book
        nodes = domain.nodes
        self.room = self._room(book.cpu_left[nodes], book.mem_left[nodes], book.gpu_left[nodes])
        self.index = sim.facts.node_position[sim.facts.domain_index[j]]  # node -> position
        self.total = int(self.room.sum())

    def _room(self, cpu_left: np.ndarray, mem_left: np.ndarray, gpu_left: np.ndarray):
        """Per node: 1 if ``j`` fits there alone, else 0 (one-node jobs); the whole GPUs it
        could take there (others), as ``ResourcePlacement.place_on`` counts them."""
        need, milli = self.need, self.milli
        if self.one_node:
            ok = (cpu_left >= self.cpu) & (mem_left >= self.mem)
            if need:
                holds = (gpu_left == MILLI) if milli == MILLI else (gpu_left >= milli)
                ok &= holds.sum(axis=1) >= need
            return ok.astype(np.int64)
        room = (gpu_left == MILLI).sum(axis=1)
        if self.cpu:
            room = np.minimum(room, cpu_left // self.cpu)
        if self.mem:
            room = np.minimum(room, mem_left // self.mem)
        return room.astype(np.int64)

    def fits_without(self, avoid: set[int]) -> bool:
        """Whether ``j`` could fit on the nodes not in ``avoid``."""
        here = sum(int(self.room[i]) for n in avoid if (i := self.index.get(n)) is not None)
        return self.total - here >= (1 if self.one_node else self.need)

    def first(self, node: int, jobs: list[int]) -> int | None:
        """The fewest of ``jobs`` (a prefix) whose leaving ``node`` could let ``j`` fit;
        None if not even all of them."""
        i = self.index.get(node)
        here = 0 if i is None else int(self.room[i])
        others = self.total - here
        enough = 1 if self.one_node else self.need
        if others >= enough:
            return 1
        if i is None:
            return None  # j cannot use this node
        sim, book = self.sim, self.sim.book
        cpu = np.array([book.cpu_left[node]])
        mem = np.array([book.mem_left[node]])
        gpus = book.gpu_left[node : node + 1].copy()
        for k, r in enumerate(jobs, start=1):
            for n, taken, c, m, milli in sim.ledger.claims[r]:
                if n == node:
                    cpu[0] += c
                    mem[0] += m
                    for g in taken:
                        gpus[0, g] += milli
            if others + int(self._room(cpu, mem, gpus)[0]) >= enough:
                return k
        return None


def _subsets_by_usage(jobs: list[int], usage: list[int]):
    """Every non-empty subset of ``jobs`` (sorted by usage, lowest first), fewest GPU milli
    (then fewest jobs, then in ``itertools.combinations`` order) first, as (GPU milli,
    subset): the order of ``tenancy._subsets_by_size``, made lazily. A best-first walk: a
    subset's children (add the next job; swap its last job for the next) never sort before
    it, so the heap hands them out in order without listing all 2^n first."""
    weight = [usage[r] for r in jobs]
    n = len(jobs)
    if not n:
        return
    heap = [(weight[0], 1, (0,))]
    while heap:
        moved, k, chosen = heapq.heappop(heap)
        yield moved, [jobs[i] for i in chosen]
        last = chosen[-1]
        if last + 1 < n:
            heapq.heappush(heap, (moved + weight[last + 1], k + 1, (*chosen, last + 1)))
            swapped = moved - weight[last] + weight[last + 1]
            heapq.heappush(heap, (swapped, k, (*chosen[:-1], last + 1)))


__all__ = ["BookMoves"]
