"""Where a job fits in resource mode: on the real resource book, or on a trial copy.

:class:`ResourcePlacement` is a part of a :class:`~analysim.engine.Simulation` in resource
mode, which makes one (``Simulation.placement``) and hands it to the rounds' book fit
(:class:`~analysim.engine.book_fit.BookFit`: where a job starts, and whether it would fit
after trial evictions) and the tenancy's planner
(:class:`~analysim.engine.book_moves.BookMoves`: where moved jobs go). It holds
no state of its own beyond what it was given at set-up: the jobs' fixed asks, the whole-GPU
placer (asked through the simulation's ``ask_placer``), the FGD-study placer if any, and
FGD's fragmentation meter. It reads a book and never writes one: the claims it returns are
taken by the ledger (or by a trial copy).

The rules (``docs/semantics.md``, "Resource mode"): a share (``gpu_milli`` < 1000, one GPU)
or a CPU-only job runs on one node; a whole-GPU job takes fully free GPUs, on one node or
spread, and ``ceil(cpu_milli / num_gpus)`` CPU (and likewise memory) per GPU on each node it
uses; under an FGD-study placer a whole-GPU job that fits on one node goes where that placer
says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.records import FRAGMENTED, FULL
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain
from analysim.policies.placement import Topology
from analysim.sharing.placers import Context, Request, best_fit_gpus
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.book import Claim, ResourceBook
    from analysim.engine.jobs import JobFacts
    from analysim.policies.placement import Placer
    from analysim.sharing.fragmentation import FragMeter


class ResourcePlacement:
    """Where a job of a resource-mode simulation fits: its claims on a book, or None."""

    def __init__(
        self,
        facts: JobFacts,
        job_ids: np.ndarray,
        capacity: np.ndarray,
        book: ResourceBook,
        placer: Placer,
        ask_placer: Callable[..., np.ndarray | int | None],
        share_placer,
        meter: FragMeter | None,
        rng: np.random.Generator,
    ) -> None:
        self.facts = facts
        self.job_ids, self.capacity = job_ids, capacity
        #: the real book (the ledger's): what :meth:`why_not` reads
        self.book = book
        self.placer, self.ask_placer, self.share_placer = placer, ask_placer, share_placer
        self.meter = meter
        #: the run's generator: :meth:`fits_on` puts its state back after asking
        self.rng = rng
        self._tie_rank = np.arange(len(capacity))

    def place_on(
        self,
        book: ResourceBook,
        j: int,
        domain: Domain,
        rng: np.random.Generator,
        avoid: set[int] | None = None,
        cap: np.ndarray | None = None,
    ) -> list[Claim] | None:
        """Where ``j`` would go on ``book`` within ``domain`` (never on a node in ``avoid``;
        a job of whole GPUs taking at most ``cap[node]`` of them on a node, the GPUs EASY
        backfill's reservations leave spare): its claims, or None."""
        facts = self.facts
        nodes = domain.nodes
        if avoid:
            nodes = nodes[~np.isin(nodes, list(avoid))]
        if not len(nodes):
            return None
        need = facts.gpus[j]
        topology = self.topology_for(j, domain, nodes)
        if self.takes_one_node(j, topology):
            return self._one_node_claim(book, j, nodes, domain, rng, cap)
        # whole GPUs: the whole-GPU placer over what each node could give
        per_cpu, per_mem = self._per_gpu(j)
        room = book.gpu_left[nodes] == MILLI
        room = room.sum(axis=1)
        if cap is not None:
            room = np.minimum(room, cap[nodes])
        if per_cpu:
            room = np.minimum(room, book.cpu_left[nodes] // per_cpu)
        if per_mem:
            room = np.minimum(room, book.mem_left[nodes] // per_mem)
        room = room.astype(np.int64)
        if int(room.sum()) < need:
            return None
        take = self.ask_placer(need, room, topology, rng)
        if take is None:
            return None
        if isinstance(take, (int, np.integer)):
            counts = np.zeros(len(nodes), dtype=np.int64)
            counts[int(take)] = need
        else:
            counts = np.asarray(take, dtype=np.int64)
        if counts.shape != room.shape or (counts < 0).any() or (counts > room).any():
            raise PolicyError(f"placement policy {self.placer.name!r} gave GPUs that are not free")
        if int(counts.sum()) != need:
            raise PolicyError(f"placement policy {self.placer.name!r} gave the wrong GPU count")
        claims = []
        for i in np.flatnonzero(counts).tolist():
            node, c = int(nodes[i]), int(counts[i])
            gpus = tuple(book.full_gpus(node)[:c])
            claims.append((node, gpus, per_cpu * c, per_mem * c, MILLI))
        return claims

    def _per_gpu(self, j: int) -> tuple[int, int]:
        """The CPU and memory a job of whole GPUs takes per GPU on each node it uses."""
        need = self.facts.gpus[j]
        return -(-self.facts.cpu[j] // need), -(-self.facts.mem[j] // need)

    def topology_for(self, j: int, domain: Domain, nodes: np.ndarray | None = None) -> Topology:
        """The topology ``j`` sees on ``nodes`` of its ``domain`` (all of them by default):
        a node's capacity is the whole GPUs it could give ``j`` when empty, fewer than its
        GPUs where ``j``'s CPU or memory per GPU run out first. So a job whose CPU per GPU
        lets a node hold only part of it is spread as a job larger than that node."""
        topology = domain.topology
        subset = nodes is not None and len(nodes) != len(domain.nodes)
        capacity = topology.capacity[np.isin(domain.nodes, nodes)] if subset else topology.capacity
        limited = capacity
        if self.facts.milli[j] == MILLI and self.facts.gpus[j]:
            per_cpu, per_mem = self._per_gpu(j)
            spec = self.book.nodes
            chosen = domain.nodes if nodes is None else nodes
            if per_cpu:
                limited = np.minimum(limited, spec.cpu[chosen] // per_cpu)
            if per_mem:
                limited = np.minimum(limited, spec.memory[chosen] // per_mem)
        if not subset and limited is capacity:
            return topology
        rack = topology.rack[np.isin(domain.nodes, nodes)] if subset else topology.rack
        return Topology(np.asarray(limited, dtype=np.int64), rack, topology.n_racks)

    def takes_one_node(self, j: int, topology: Topology) -> bool:
        """Whether ``j`` goes on one node: a share or a CPU-only job, or (under an FGD-study
        placer) a job of whole GPUs that one node of ``topology`` could hold."""
        return self.facts.milli[j] < MILLI or (
            self.share_placer is not None and self.facts.gpus[j] <= topology.largest
        )

    def _one_node_claim(
        self,
        book: ResourceBook,
        j: int,
        nodes: np.ndarray,
        domain: Domain,
        rng: np.random.Generator,
        cap: np.ndarray | None = None,
    ) -> list[Claim] | None:
        """A share, a CPU-only job, or (under an FGD-study placer) a job that fits one node
        (of whole GPUs: at most ``cap[node]`` of them on the node, if given)."""
        facts = self.facts
        need, milli = facts.gpus[j], facts.milli[j]
        cpu, mem = facts.cpu[j], facts.mem[j]
        if need > 1:  # whole GPUs: the same CPU and memory as spread over one node
            cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        per_cpu, per_mem = cpu, mem
        ok = (book.cpu_left[nodes] >= per_cpu) & (book.mem_left[nodes] >= per_mem)
        if need:
            left = book.gpu_left[nodes]
            holds = (left == MILLI) if milli == MILLI else (left >= milli)
            ok &= holds.sum(axis=1) >= need
            if cap is not None and milli == MILLI:
                ok &= cap[nodes] >= need
        if not ok.any():
            return None
        task = Request(per_cpu, per_mem, need, milli, facts.kind[j])
        if self.share_placer is not None:
            feasible = nodes[ok]
            ctx = Context(book, self.meter, rng)
            scores = np.asarray(self.share_placer.scores(ctx, feasible, task))
            node = int(self.share_placer.choose_node(ctx, feasible, scores, self._tie_rank))
            gpus = self.share_placer.choose_gpus(ctx, node, task)
        else:
            # the node's room in what the job needs: the most milli left on one of its GPUs
            # (a share), or its CPU left (a CPU-only job); the placer's rule over that
            if need:
                room, size = book.gpu_left[nodes].max(axis=1), milli
            else:
                room, size = book.cpu_left[nodes] + 1, cpu + 1  # + 1: memory-only jobs
            room = np.where(ok, room, 0).astype(np.int64)
            sub = domain.topology
            if len(nodes) != len(domain.nodes):
                sub = type(sub)(
                    self.capacity[nodes], sub.rack[np.isin(domain.nodes, nodes)], sub.n_racks
                )
            pick = self.placer.pick_node(size, room, sub, rng)
            if pick is None:
                return None
            node = int(nodes[int(pick)])
            gpus = best_fit_gpus(book.gpus_of(node), task)
        if node not in nodes.tolist() or not ok[nodes.tolist().index(node)]:
            raise PolicyError(f"placement gave job {self.job_ids[j]!r} a node it does not fit")
        return [(node, tuple(int(g) for g in gpus), per_cpu, per_mem, milli)]

    def fits_on(
        self, book: ResourceBook, j: int, domain: Domain | None = None, avoid: set | None = None
    ) -> list[Claim] | None:
        """Where ``j`` would go on a trial book (draws nothing from the run's generator)."""
        rng = self.rng
        state = rng.bit_generator.state
        try:
            return self.place_on(book, j, domain or self.facts.domain[j], rng, avoid)
        finally:
            rng.bit_generator.state = state

    def why_not(self, j: int, domain: Domain) -> int:
        """FULL when the domain lacks the GPU milli, CPU or memory in all (on the real
        book), else FRAGMENTED."""
        book, nodes, facts = self.book, domain.nodes, self.facts
        enough = (
            int(book.gpu_left[nodes].sum()) >= facts.usage[j]
            and int(book.cpu_left[nodes].sum()) >= facts.cpu[j]
            and int(book.mem_left[nodes].sum()) >= facts.mem[j]
        )
        return FRAGMENTED if enough else FULL


__all__ = ["ResourcePlacement"]
