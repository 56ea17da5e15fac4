"""Spare nodes: nodes held out of placement that stand in for failed ones
(``SimConfig.spare_nodes``; ``docs/failures.md``, "Spare nodes").

A part of :class:`~analysim.engine.failures.Failures`, made only when the config sets spares
aside. The rule, as a cluster operator runs a pool of hot spares:

* the spares are held out of placement from the start (the ledger holds them, as it holds a
  node down): no job is ever placed on a spare by the scheduler, and every job must fit on
  its own domain's nodes in service (else it could never run: an error);
* when a node fails under jobs, the first spare in node order that is up and can take its
  place (same GPU type, at least its GPUs (resource mode: also its CPU and memory), owned by
  the same VC, so in the same domains) is swapped in: it leaves the pool and serves from now
  on, and each job the failure killed restarts at once in place, on its other nodes and the
  spare (same GPUs per node, paying the restart overhead, having lost the work since its
  last checkpoint);
* the failed node, once repaired, joins the pool (the pool keeps its size); a node that
  failed with no spare swapped in for it returns to service;
* a spare may fail too: it is then down, and a spare again when repaired.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.inputs.failures import spare_node_indices

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

#: what a job killed by a node failure held: (nodes, GPUs per node, claims or None, borrowed)
Held = tuple[list[int], list[int], list | None, bool]


class Spares:
    """The spare pool of ``sim`` (its ledger holds the spares that are up)."""

    def __init__(self, sim: Simulation, node_groups: list[list[int]]) -> None:
        self.sim, self.ledger = sim, sim.ledger
        names = sim.node_names.tolist()
        chosen = spare_node_indices(sim.config.spare_nodes, names, sim.cluster.name)
        nodes = sim.cluster.nodes
        self._type = nodes["gpu_type"].astype(str).tolist()
        # whose each node is ("": the shared pool); with borrowing, one group holds all nodes
        self._owner = nodes["vc"].fillna("").astype(str).tolist()
        self._groups = [tuple(g) for g in node_groups]
        book = self.ledger.book
        self._cpu = None if book is None else book.nodes.cpu
        self._memory = None if book is None else book.nodes.memory
        #: the spares (up or down), and the failed nodes a spare stood in for
        self.pool: set[int] = set(chosen)
        self._replaced: set[int] = set()
        for node in chosen:
            self.ledger.set_aside(node)
        self._check_jobs_fit(chosen, names)

    def _check_jobs_fit(self, chosen: list[int], names: list[str]) -> None:
        """Every job can still be placed on the empty cluster, the spares set aside, as its
        rounds would place it: on its own domain's nodes in service (its VC's nodes, of its
        GPU types; borrowing does not count, as for a job larger than its VC), as the placer
        puts it (a job that fits on one node of its domain goes on one node; in resource
        mode with its CPU and memory). A swap never shrinks a domain's nodes in service (a
        spare is at least the node it replaces, of the same VC and type)."""
        sim, ledger = self.sim, self.ledger
        # a generator of its own from the config's seed: the run's draws are left untouched
        rng, known = np.random.default_rng(sim.config.seed), {}
        facts = sim.facts
        for j, (gpus, d) in enumerate(zip(sim.gpus.tolist(), facts.domain_index, strict=True)):
            if sim.table.unschedulable[j]:
                continue
            key = (d, gpus, facts.milli[j], facts.cpu[j], facts.mem[j])
            if key not in known:
                known[key] = self._places(j, rng)
            if known[key]:
                continue
            domain, job = facts.domain[j], sim.job_ids[j]
            room = int(ledger.free[domain.nodes].sum())
            asks = f"{gpus} GPU{'s' * (gpus != 1)}{', its CPU and memory' if sim.placement else ''}"
            what = (
                f"{room} GPUs in service where job {job!r} asks for {gpus}"
                if gpus > room
                else f"no nodes in service where placement {sim.placer.name!r} can put job "
                f"{job!r} ({asks}; a job that fits on one node of its VC goes on one node)"
            )
            raise ValueError(
                f"SimConfig: spare_nodes {[names[n] for n in chosen]} leave {what}: it could "
                "never run"
            )

    def _places(self, j: int, rng: np.random.Generator) -> bool:
        """Whether job ``j`` could be placed now (the spares set aside, no job running)."""
        sim, domain = self.sim, self.sim.facts.domain[j]
        if sim.placement is not None:  # resource mode: on the ledger's book
            return sim.placement.place_on(sim.placement.book, j, domain, rng) is not None
        free, need = self.ledger.free[domain.nodes], int(sim.gpus[j])
        return free.sum() >= need and sim.ask_placer(need, free, domain.topology, rng) is not None

    # -- a node fails -------------------------------------------------------------------------
    def held(self, j: int) -> Held:
        """What running job ``j`` holds (read before a failure kills it)."""
        ledger = self.ledger
        nodes, counts = zip(*ledger.alloc_pairs[j], strict=True)
        claims = ledger.claims.get(j)
        return list(nodes), list(counts), claims, bool(ledger.borrowed[j])

    def going_down(self, node: int) -> None:
        """``node`` fails: a spare that fails is no longer held as one (it is down)."""
        if self.ledger.spare[node]:
            self.ledger.bring_in(node)

    def stand_in(self, node: int, killed: dict[int, Held]) -> None:
        """``node`` is down, the jobs ``killed`` on it waiting: swap a spare in for it, if
        one can stand in, and restart each there at once (its other nodes as they were)."""
        sim = self.sim
        restart = {j: held for j, held in killed.items() if self._restarts_in_place(j, held)}
        if not restart:
            return
        spare = self._spare_for(node)
        if spare is None:
            return
        self.pool.discard(spare)
        self._replaced.add(node)
        self.ledger.bring_in(spare)
        groups = [g for g, nodes in enumerate(sim.group_nodes) if spare in nodes]
        sim.decider.nodes_changed(groups)
        left = np.array([node])
        for j, (nodes, counts, claims, borrowed) in restart.items():
            where = np.array([spare if n == node else n for n in nodes])
            if claims is not None:
                claims = [(spare, *c[1:]) if c[0] == node else c for c in claims]
            sim.start_running(j, where, np.array(counts), claims, borrowed, left=left)

    def _restarts_in_place(self, j: int, held: Held) -> bool:
        """Whether killed job ``j`` waits to run again on the GPUs it asked for (an elastic
        job resized, or a job that failed for good, waits in the queue or not at all)."""
        sim = self.sim
        return j in sim.waiting[sim.facts.group[j]] and sum(held[1]) == int(sim.gpus[j])

    def _spare_for(self, node: int) -> int | None:
        """The first spare (node order) that is up and can take ``node``'s place."""
        ledger = self.ledger
        for spare in sorted(self.pool):
            if not ledger.spare[spare] or self._type[spare] != self._type[node]:
                continue
            if self._groups[spare] != self._groups[node]:
                continue
            if self._owner[spare] != self._owner[node]:
                continue
            if ledger.capacity[spare] < ledger.capacity[node]:
                continue
            if self._cpu is not None and not _at_least(self._cpu, self._memory, spare, node):
                continue
            return spare
        return None

    # -- a node is repaired -------------------------------------------------------------------
    def repaired(self, node: int) -> None:
        """``node`` is up: a spare, or a node a spare stood in for, joins the pool."""
        if node in self._replaced:
            self._replaced.discard(node)
            self.pool.add(node)
        if node in self.pool:
            self.ledger.set_aside(node)
            groups = [g for g, nodes in enumerate(self.sim.group_nodes) if node in nodes]
            self.sim.decider.nodes_changed(groups)
            if self.sim.elastic is not None:
                self.sim.elastic.nodes_changed(groups)


def _at_least(cpu: Any, memory: Any, spare: int, node: int) -> bool:
    """Resource mode: ``spare`` has at least ``node``'s CPU and memory."""
    return int(cpu[spare]) >= int(cpu[node]) and int(memory[spare]) >= int(memory[node])


__all__ = ["Spares"]
