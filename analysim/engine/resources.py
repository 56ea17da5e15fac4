"""Resource mode: jobs that share a GPU, and CPU and memory, in the time engine.

A workload with any of the columns ``gpu_milli``, ``cpu_milli``, ``memory_mib``, or a config
whose ``placement`` names a placer of the FGD study (``fgd``, ``best_fit``, ``dot_product``,
``gpu_packing``, ``gpu_clustering``), runs on :class:`ResourceSimulation` (chosen by
``Simulation(...)`` itself). Everything else runs on the whole-GPU engine as before.

* :class:`ResourceBook`: per node, CPU and memory left and the milli left on each GPU;
* :class:`ResourceLedger`: the only writer of that book and of the ledger's whole-GPU
  counters; every change is checked (no GPU over 1000 milli, whole-GPU jobs only on fully
  free GPUs, no node over its CPU or memory, no VC over its quota in GPU milli);
* :class:`ResourceSimulation`: the wiring of resource mode: the jobs' asks
  (:class:`~analysim.engine.jobs.ResourceJobFacts`), the book and ledger, and its
  ``placement`` (:class:`~analysim.engine.resource_placement.ResourcePlacement`), which the
  rounds and the tenancy ask where a job fits (on the real book, or on a trial copy when they
  weigh evictions or migrations).

The rules (``docs/semantics.md``, "Resource mode"): a share (``gpu_milli`` < 1000, one GPU)
or a CPU-only job runs on one node; a whole-GPU job takes fully free GPUs, on one node or
spread like today, and ``ceil(cpu_milli / num_gpus)`` CPU (and likewise memory) per GPU on
each node it uses. Quotas, borrowing limits and ``vc_used`` count GPU milli.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from analysim.engine.jobs import ResourceJobFacts
from analysim.engine.ledger import Ledger
from analysim.engine.records import Capture
from analysim.engine.resource_placement import ResourcePlacement
from analysim.engine.resource_rounds import ResourceRounds
from analysim.engine.resource_tenancy import ResourceTenancy
from analysim.engine.simulation import Simulation
from analysim.errors import PolicyError, describe_rows
from analysim.policies import PLACERS
from analysim.sharing.fragmentation import FragMeter, typical_shapes
from analysim.sharing.placers import share_placer_of
from analysim.sharing.resources import MILLI, Nodes, NodeState, Tasks, task_kind

#: a node's CPU or memory when the cluster does not say (more than any job asks for)
UNLIMITED = 2**40
#: the whole-GPU placer that spreads jobs larger than a node under an FGD-study placer
SPREADER = "consolidate"

# one piece of a job's allocation: (node, its GPUs there (local indices), CPU, memory, milli
# per GPU)
Claim = tuple[int, tuple[int, ...], int, int, int]


class ResourceBook(NodeState):
    """What is left on every node (CPU, memory, milli per GPU), with the task kinds on it.

    ``take`` and ``give`` are its only writers and check every change."""

    def take(self, claim: Claim, kind: str | None) -> None:
        node, gpus, cpu, memory, milli = claim
        name = self.nodes.names[node]
        if self.cpu_left[node] < cpu:
            raise PolicyError(f"internal: node {name} would be over its CPU")
        if self.mem_left[node] < memory:
            raise PolicyError(f"internal: node {name} would be over its memory")
        if len(set(gpus)) != len(gpus):
            raise PolicyError(f"internal: a GPU of node {name} taken twice by one job")
        for g in gpus:
            if not 0 <= g < self.nodes.gpus[node]:
                raise PolicyError(f"internal: node {name} has no GPU {g}")
            left = self.gpu_left[node, g]
            if left < milli or (milli == MILLI and left != MILLI):
                raise PolicyError(f"internal: GPU {g} of node {name} would be over 1000 milli")
        self.place(node, list(gpus), cpu, memory, milli, kind)

    def give(self, claim: Claim, kind: str | None) -> None:
        node, gpus, cpu, memory, milli = claim
        self.cpu_left[node] += cpu
        self.mem_left[node] += memory
        for g in gpus:
            self.gpu_left[node, g] += milli
        if (
            self.cpu_left[node] > self.nodes.cpu[node]
            or self.mem_left[node] > self.nodes.memory[node]
            or (self.gpu_left[node] > MILLI).any()
        ):
            raise PolicyError(f"internal: node {self.nodes.names[node]} got back more than it has")
        if kind is not None:
            left = self.kinds[node][kind] - 1
            if left:
                self.kinds[node][kind] = left
            else:
                del self.kinds[node][kind]
        self.version[node] += 1
        self._keys[node] = self._key(node)

    def full_gpus(self, node: int) -> list[int]:
        """The fully free GPUs of a node (local indices)."""
        return [g for g, left in enumerate(self.gpus_of(node)) if left == MILLI]

    def clone(self) -> ResourceBook:
        other = copy.copy(self)
        other.cpu_left = self.cpu_left.copy()
        other.mem_left = self.mem_left.copy()
        other.gpu_left = self.gpu_left.copy()
        other.kinds = [dict(k) for k in self.kinds]
        other.version = self.version.copy()
        other._keys = list(self._keys)
        return other


class ResourceLedger(Ledger):
    """The allocation ledger of resource mode: the book of CPU, memory and GPU milli, and
    the whole-GPU counters of :class:`Ledger` (``free``: fully free GPUs per node), with
    usage and quotas in GPU milli."""

    def __init__(self, sim: ResourceSimulation, book: ResourceBook) -> None:
        super().__init__(
            sim.capacity,
            sim.node_names,
            sim.job_ids,
            list(sim.partition.vc_names),
            sim.facts.usage,
            sim.facts.vc,
            [None if d.quota is None else d.quota * MILLI for d in sim.facts.domain],
        )
        self.book = book
        self._kind = sim.facts.kind
        # FGD's fragmentation of each node, kept up to date as nodes change
        self.meter = sim.meter
        n_nodes = len(sim.capacity)
        self.node_frag = (
            [self.meter.frag(book.key(n)) for n in range(n_nodes)]
            if self.meter
            else [0.0] * n_nodes
        )
        self.claims: dict[int, list[Claim]] = {}
        self._node_group: list[list[int]] = [[] for _ in range(len(sim.capacity))]

    def set_groups(self, group: list[int], group_nodes: list[np.ndarray]) -> None:
        super().set_groups(group, group_nodes)
        self._node_group = [[] for _ in range(len(self.capacity))]  # the groups of each node
        for g, nodes in enumerate(group_nodes):
            for node in nodes.tolist():
                self._node_group[node].append(g)

    def take(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        borrowed: bool,
        now: float,
        claims: list[Claim] | None = None,
    ) -> tuple[tuple[int, ...], ...]:
        """Give job ``j`` its ``claims`` (checked): GPUs, CPU and memory on each node."""
        if claims is None:
            raise PolicyError(f"internal: job {self.job_ids[j]!r} started without a placement")
        if [c[0] for c in claims] != nodes.tolist():
            raise PolicyError(f"internal: job {self.job_ids[j]!r}: claims and nodes disagree")
        kind = self._kind[j]
        for claim in claims:
            self.book.take(claim, kind)
        self._refresh([c[0] for c in claims])
        self.claims[j] = claims
        taken = [tuple(self.gpu_offset[c[0]] + g for g in c[1]) for c in claims]
        taken = [tuple(int(x) for x in t) for t in taken]
        self.alloc_gpus[j] = taken
        self.alloc_nodes[j] = nodes
        self.alloc_counts[j] = counts
        self.alloc_pairs[j] = tuple(zip(nodes.tolist(), counts.tolist(), strict=True))
        self.last_nodes[j] = nodes
        self._charge(j, self._gpus[j], borrowed, now)  # ``_gpus`` holds GPU milli here
        return tuple(taken)

    def release(self, j: int, at: float, elapsed: float) -> None:
        """Job ``j`` gives back everything it holds."""
        del self.alloc_nodes[j], self.alloc_counts[j], self.alloc_pairs[j], self.alloc_gpus[j]
        claims = self.claims.pop(j)
        kind = self._kind[j]
        for claim in claims:
            self.book.give(claim, kind)
        self._refresh([c[0] for c in claims])
        size, vc = self._gpus[j], self._vc[j]
        self._integrate(vc, at)
        if self.borrowed[j]:
            self.vc_borrowed[vc] -= size
            self.borrowed[j] = False
            self.borrowed_gpu_seconds[j] += elapsed * size / MILLI
            del self.borrowers[j]
        else:
            self.vc_used[vc] -= size
        self.vc_running_jobs[vc] -= 1

    def _refresh(self, nodes: list[int]) -> None:
        """Recount the fully free GPUs of ``nodes`` (and of their groups), and their FGD
        fragmentation."""
        meter = self.meter
        for node in nodes:
            if meter is not None:
                self.node_frag[node] = meter.frag(self.book.key(node))
            full = self.book.full_gpus(node)
            delta = len(full) - int(self.free[node])
            self.free[node] = len(full)
            offset = int(self.gpu_offset[node])
            self.free_slots[node][:] = [offset + g for g in full]
            for g in self._node_group[node]:
                self.group_free[g] += delta

    def gpu_holders(self) -> list[list[int]]:
        """The jobs holding each GPU (global index), checked against the book: no GPU over
        1000 milli, none held both whole and shared."""
        holders: list[list[int]] = [[] for _ in range(int(self.capacity.sum()))]
        used = np.zeros(len(holders), dtype=np.int64)
        for j, claims in self.claims.items():
            for node, gpus, _, _, milli in claims:
                for g in gpus:
                    index = int(self.gpu_offset[node]) + g
                    holders[index].append(j)
                    used[index] += milli
        if (used > MILLI).any():
            raise PolicyError("internal: a GPU is over 1000 milli")
        left = np.concatenate(
            [self.book.gpu_left[n, :c] for n, c in enumerate(self.capacity.tolist())]
        )
        if (left + used != MILLI).any():
            raise PolicyError("internal: GPU milli disagree with the jobs holding them")
        return holders

    def gpu_owner(self) -> np.ndarray:
        """A job holding each GPU (the first to take it; -1 for free), checked."""
        holders = self.gpu_holders()
        return np.array([h[0] if h else -1 for h in holders], dtype=np.int64)

    def busy_gpu_seconds(self, now: float) -> np.ndarray:
        """GPU-seconds each VC's jobs have held (milli-seconds / 1000), from 0 to now."""
        return super().busy_gpu_seconds(now) / MILLI


class ResourceSimulation(Simulation):
    """The time engine in resource mode (see the module's description)."""

    resource_mode = True
    facts: ResourceJobFacts
    rounds_class = ResourceRounds
    tenancy_class = ResourceTenancy

    def _make_placer(self):
        self.share_placer = share_placer_of(self.config.placement)
        if self.share_placer is not None:
            return PLACERS.make(SPREADER)
        return self.config.make_placer()

    def _init_jobs(self, jobs) -> None:
        super()._init_jobs(jobs)
        n = self.n_jobs
        gpus = self.gpus

        def column(name: str, default: np.ndarray) -> np.ndarray:
            if name in jobs.columns:
                return jobs[name].to_numpy(dtype=np.int64)
            return default

        self.gpu_milli = column("gpu_milli", np.where(gpus > 0, MILLI, 0))
        self.cpu = column("cpu_milli", np.zeros(n, dtype=np.int64))
        self.memory = column("memory_mib", np.zeros(n, dtype=np.int64))
        self.milli_total = self.gpus * self.gpu_milli
        self._milli = self.gpu_milli.tolist()
        self._cpu, self._mem = self.cpu.tolist(), self.memory.tolist()
        self._kind = [task_kind(g, m) for g, m in zip(self._gpus, self._milli, strict=True)]
        self._usage = self.milli_total.tolist()  # GPU milli: usage, quotas and borrowing
        self._check_sizes(jobs)

    def _job_facts(self) -> ResourceJobFacts:
        facts = super()._job_facts()
        shared = {f.name: getattr(facts, f.name) for f in dataclasses.fields(facts)}
        return ResourceJobFacts(
            **shared, milli=self._milli, cpu=self._cpu, mem=self._mem, kind=self._kind
        )

    def _check_sizes(self, jobs) -> None:
        """CPU or memory larger than every node is bad input (named): for a job of several
        whole GPUs, the least it needs on one node (its amount per GPU)."""
        nodes = self.cluster.nodes
        for name in ("cpu_milli", "memory_mib"):
            if name not in jobs.columns or name not in nodes.columns:
                continue
            most = int(nodes[name].max())
            amount = jobs[name].to_numpy()
            too_big = -(-amount // np.maximum(self.gpus, 1)) > most
            if too_big.any():
                raise ValueError(
                    f"Workload: column {name!r} must be at most {most:,} (the most any node of "
                    f"cluster {self.cluster.name!r} has); "
                    + describe_rows(jobs, too_big, name, "job_id")
                )

    def _new_ledger(self) -> Ledger:
        nodes = self.cluster.nodes

        def capacity(name: str) -> np.ndarray:
            if name in nodes.columns:
                return nodes[name].to_numpy(dtype=np.int64)
            return np.full(len(nodes), UNLIMITED, dtype=np.int64)

        spec = Nodes(
            self.node_names,
            capacity("cpu_milli"),
            capacity("memory_mib"),
            self.capacity,
            nodes["gpu_type"].astype(str).to_numpy(dtype=object),
        )
        self.book = ResourceBook(spec)
        types = self.workload.jobs.get("gpu_type")
        types = (
            np.full(self.n_jobs, "", dtype=object)
            if types is None
            else types.where(types.notna(), "").astype(str).to_numpy(dtype=object)
        )
        tasks = Tasks(self.job_ids, self.cpu, self.memory, self.gpus, self.gpu_milli, types)
        # FGD's target workload: the task shapes of this workload
        self.meter = FragMeter(typical_shapes(tasks), self.book.models) if len(tasks) else None
        return ResourceLedger(self, self.book)

    def _init_cluster(self) -> None:
        super()._init_cluster()
        #: where a job fits (``engine/resource_placement.py``): the rounds and tenancy ask it
        self.placement = ResourcePlacement(
            self.facts,
            self.job_ids,
            self.capacity,
            self.book,
            self.placer,
            self.ask_placer,
            self.share_placer,
            self.meter,
            self.rng,
        )
        self._mark_unschedulable()

    def _mark_unschedulable(self) -> None:
        """A job that no node of its domain could hold on an empty cluster (or asks for
        more GPU milli than its VC's quota) is unschedulable."""
        empty = self.book.clone()
        rng = np.random.default_rng(0)
        known: dict[tuple, bool] = {}
        for j in range(self.n_jobs):
            if self.unschedulable[j]:
                continue
            quota = self._domain[j].quota
            if quota is not None and self._usage[j] > quota * MILLI:
                self.unschedulable[j] = True
                continue
            key = (
                self._domain_index[j],
                self._gpus[j],
                self._milli[j],
                self._cpu[j],
                self._mem[j],
            )
            fits = known.get(key)
            if fits is None:
                fits = known[key] = (
                    self.placement.place_on(empty, j, self._domain[j], rng) is not None
                )
            if not fits:
                self.unschedulable[j] = True
        self._unschedulable = self.unschedulable.tolist()

    # -- what is seen -----------------------------------------------------------------------------
    @property
    def gpu_holders(self) -> list[list[int]]:
        """The jobs holding each GPU (global index), checked."""
        return self.ledger.gpu_holders()

    def fgd_frag_milli(self) -> float:
        """FGD's fragmentation of the whole cluster now (GPU milli the workload's task
        shapes cannot use)."""
        return math.fsum(self.ledger.node_frag)

    def node_fgd_frag(self) -> list[float]:
        """FGD's fragmentation of each node now."""
        return list(self.ledger.node_frag)

    def sample_counters(self) -> tuple:
        """As the whole-GPU engine's, with GPUs used and borrowed in GPU milli / 1000, and
        FGD's fragmentation last."""
        return (
            tuple(u / MILLI for u in self.vc_used),
            tuple(self.vc_running_jobs),
            tuple(self.vc_waiting_jobs),
            tuple(self.vc_waiting_gpus),
            tuple(b / MILLI for b in self.vc_borrowed),
            self._fgd_now(),
        )

    def _fgd_now(self) -> float:
        if getattr(self, "_fgd_at", None) != self.changes:
            self._fgd_at, self._fgd_value = self.changes, self.fgd_frag_milli()
        return self._fgd_value

    def capture(self) -> Capture:
        """As the whole-GPU engine's, with quota usage in whole GPUs (rounded up)."""
        used = [math.ceil(u / MILLI) for u in self.vc_used]
        return self.records.capture(self.changes, self.free, self.waiting_counts, used)


Simulation.resource_variant = ResourceSimulation  # Simulation(...) picks it when needed


__all__ = [
    "ResourceBook",
    "ResourceLedger",
    "ResourceSimulation",
]
