"""Resource mode: jobs that share a GPU, and CPU and memory, in the time engine.

A workload with any of the columns ``gpu_milli``, ``cpu_milli``, ``memory_mib``, or a config
whose ``placement`` names a placer of the FGD study (``fgd``, ``best_fit``, ``dot_product``,
``gpu_packing``, ``gpu_clustering``), runs on :class:`ResourceSimulation` (chosen by
``Simulation(...)`` itself). Everything else runs on the whole-GPU engine as before.

* :class:`ResourceBook`: per node, CPU and memory left and the milli left on each GPU;
* :class:`ResourceLedger`: the only writer of that book and of the ledger's whole-GPU
  counters; every change is checked (no GPU over 1000 milli, whole-GPU jobs only on fully
  free GPUs, no node over its CPU or memory, no VC over its quota in GPU milli);
* :class:`ResourceSimulation`: the rounds ask it where a job fits (on the real book, or on a
  trial copy when they weigh evictions or migrations).

The rules (``docs/semantics.md``, "Resource mode"): a share (``gpu_milli`` < 1000, one GPU)
or a CPU-only job runs on one node; a whole-GPU job takes fully free GPUs, on one node or
spread like today, and ``ceil(cpu_milli / num_gpus)`` CPU (and likewise memory) per GPU on
each node it uses. Quotas, borrowing limits and ``vc_used`` count GPU milli.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from analysim.domains import Domain
from analysim.engine.ledger import Ledger
from analysim.engine.records import FRAGMENTED, FULL, MIGRATION_FAILED, Capture
from analysim.engine.rounds import _Trial
from analysim.engine.simulation import Simulation
from analysim.engine.tenancy import MOST_MOVABLE_PER_NODE
from analysim.errors import PolicyError, describe_rows
from analysim.policies import PLACERS
from analysim.sharing.fragmentation import FragMeter, typical_shapes
from analysim.sharing.placers import Context, Request, best_fit_gpus, share_placer_of
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
            sim._usage,
            sim._vc,
            [None if d.quota is None else d.quota * MILLI for d in sim._domain],
        )
        self.book = book
        self._kind = sim._kind
        # FGD's fragmentation of each node, kept up to date as nodes change
        self.meter = sim.meter
        n_nodes = len(sim.capacity)
        self.node_frag = (
            [self.meter.frag(book.key(n)) for n in range(n_nodes)]
            if self.meter
            else [0.0] * n_nodes
        )
        self.claims: dict[int, list[Claim]] = {}
        # the placement decided for each job about to start or move (the rounds write it)
        self.plans: dict[int, list[Claim]] = {}
        self._node_group: list[list[int]] = [[] for _ in range(len(sim.capacity))]

    def set_groups(self, group: list[int], group_nodes: list[np.ndarray]) -> None:
        super().set_groups(group, group_nodes)
        self._node_group = [[] for _ in range(len(self.capacity))]  # the groups of each node
        for g, nodes in enumerate(group_nodes):
            for node in nodes.tolist():
                self._node_group[node].append(g)

    def take(  # type: ignore[override]
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        borrowed: bool,
        now: float,
    ) -> tuple[tuple[int, ...], ...]:
        """Give job ``j`` the claims planned for it (checked): GPUs, CPU and memory on each
        node."""
        claims = self.plans.pop(j, None)
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
        self._check_sizes(jobs)

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
        self._usage = self.milli_total.tolist()  # set again by _init_records (same list)
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
        self._empty_gpu_left = self.book.gpu_left.copy()  # milli per GPU, nothing running
        types = self.workload.jobs.get("gpu_type")
        types = (
            np.full(self.n_jobs, "", dtype=object)
            if types is None
            else types.where(types.notna(), "").astype(str).to_numpy(dtype=object)
        )
        tasks = Tasks(self.job_ids, self.cpu, self.memory, self.gpus, self.gpu_milli, types)
        # FGD's target workload: the task shapes of this workload
        self.meter = FragMeter(typical_shapes(tasks), self.book.models) if len(tasks) else None
        self._tie_rank = np.arange(len(self.capacity))
        return ResourceLedger(self, self.book)

    def _init_cluster(self) -> None:
        super()._init_cluster()
        self._mark_unschedulable()

    def _init_records(self) -> None:
        super()._init_records()
        self._usage = self.ledger._gpus  # GPU milli: usage, quotas and borrowing count it
        self._nothing_free_ends_round = False  # a share or a CPU job may fit all the same

    def _init_tenancy(self) -> None:
        super()._init_tenancy()
        self._borrow_cap = [cap * MILLI for cap in self._borrow_cap]

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
                fits = known[key] = self._place_on(empty, j, self._domain[j], rng) is not None
            if not fits:
                self.unschedulable[j] = True
        self._unschedulable = self.unschedulable.tolist()

    # -- where a job fits -----------------------------------------------------------------------
    def _place_on(
        self,
        book: ResourceBook,
        j: int,
        domain: Domain,
        rng: np.random.Generator,
        avoid: set[int] | None = None,
    ) -> list[Claim] | None:
        """Where ``j`` would go on ``book`` within ``domain`` (never on a node in ``avoid``):
        its claims, or None."""
        nodes = domain.nodes
        if avoid:
            nodes = nodes[~np.isin(nodes, list(avoid))]
        if not len(nodes):
            return None
        need, milli = self._gpus[j], self._milli[j]
        cpu, mem = self._cpu[j], self._mem[j]
        if milli < MILLI or (
            self.share_placer is not None and need <= domain.topology.largest
        ):  # a share, a CPU-only job, or a job that fits one node under an FGD-study placer
            return self._one_node_claim(book, j, nodes, domain, rng)
        # whole GPUs: the whole-GPU placer over what each node could give
        per_cpu, per_mem = -(-cpu // need), -(-mem // need)
        room = book.gpu_left[nodes] == MILLI
        room = room.sum(axis=1)
        if per_cpu:
            room = np.minimum(room, book.cpu_left[nodes] // per_cpu)
        if per_mem:
            room = np.minimum(room, book.mem_left[nodes] // per_mem)
        room = room.astype(np.int64)
        if int(room.sum()) < need:
            return None
        topology = domain.topology
        if avoid:  # the topology of the nodes left
            topology = type(topology)(
                self.capacity[nodes], topology.rack[np.isin(domain.nodes, nodes)], topology.n_racks
            )
        take = self._ask_placer(need, room, topology)
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

    def _one_node_claim(
        self,
        book: ResourceBook,
        j: int,
        nodes: np.ndarray,
        domain: Domain,
        rng: np.random.Generator,
    ) -> list[Claim] | None:
        """A share, a CPU-only job, or (under an FGD-study placer) a job that fits one node."""
        need, milli = self._gpus[j], self._milli[j]
        cpu, mem = self._cpu[j], self._mem[j]
        if need > 1:  # whole GPUs: the same CPU and memory as spread over one node
            cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        per_cpu, per_mem = cpu, mem
        ok = (book.cpu_left[nodes] >= per_cpu) & (book.mem_left[nodes] >= per_mem)
        if need:
            left = book.gpu_left[nodes]
            holds = (left == MILLI) if milli == MILLI else (left >= milli)
            ok &= holds.sum(axis=1) >= need
        if not ok.any():
            return None
        task = Request(per_cpu, per_mem, need, milli, self._kind[j])
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

    def _fits_on(
        self, book: ResourceBook, j: int, domain: Domain | None = None, avoid: set | None = None
    ) -> list[Claim] | None:
        """Where ``j`` would go on a trial book (draws nothing from the run's generator)."""
        state = self.rng.bit_generator.state
        try:
            return self._place_on(book, j, domain or self._domain[j], self.rng, avoid)
        finally:
            self.rng.bit_generator.state = state

    def _place(self, j: int, free: np.ndarray, domain: Domain | None = None):
        """Where ``j`` goes now (on its own nodes, or those of ``domain``): the nodes and
        GPUs per node, its claims kept for the ledger; None (and why) if nowhere."""
        domain = domain or self._domain[j]
        claims = self._place_on(self.book, j, domain, self.rng)
        if claims is None:
            self._why = self._why_not(j, domain)
            self._room_seen = int(self.free[domain.nodes].sum())
            return None
        self.ledger.plans[j] = claims
        return np.array([c[0] for c in claims]), np.array([len(c[1]) for c in claims])

    def _why_not(self, j: int, domain: Domain) -> int:
        """FULL when the domain lacks the GPU milli, CPU or memory in all, else FRAGMENTED."""
        book, nodes = self.book, domain.nodes
        enough = (
            int(book.gpu_left[nodes].sum()) >= self._usage[j]
            and int(book.cpu_left[nodes].sum()) >= self._cpu[j]
            and int(book.mem_left[nodes].sum()) >= self._mem[j]
        )
        return FRAGMENTED if enough else FULL

    def _quota_allows(self, j: int, vc_used) -> bool:
        quota = self._domain[j].quota
        return quota is None or vc_used[self._vc[j]] + self._usage[j] <= quota * MILLI

    def _room_of(self, j: int) -> int:
        return int(self.free[self._domain[j].nodes].sum())

    def _held_by_vc(self) -> list[int]:
        """What schedulers see as each VC's usage: the ``num_gpus`` of its running jobs
        (a share counts as one GPU, as in each job's own ``num_gpus``), own and borrowed."""
        held = [0] * len(self.partition.vc_names)
        vc, gpus = self._vc, self._gpus
        for running in self.running:
            for j in running:
                held[vc[j]] += gpus[j]
        return held

    # -- evicting --------------------------------------------------------------------------------
    def _trial_for(self, j: int, candidates: list[int]) -> _Trial | None:
        return _ResourceTrial(self, j)

    def _claims_of(self, r: int) -> list[Claim]:
        return self.ledger.claims[r]

    # -- migration and defragmentation ----------------------------------------------------------
    def _movable(self, group: int) -> dict[int, list[int]]:
        """Per node, the running one-node jobs of ``group`` on their own GPUs, start order."""
        on_node: dict[int, list[int]] = {}
        for r in self.running[group]:
            claims = self.ledger.claims[r]
            if len(claims) == 1 and not self.borrowed[r]:
                on_node.setdefault(claims[0][0], []).append(r)
        return on_node

    def _relocate_on(
        self, book: ResourceBook, jobs: list[int], avoid: set[int]
    ) -> list[tuple[int, list[Claim]]] | None:
        """Claims elsewhere for each of ``jobs`` (largest first), made on ``book``; None if
        one has nowhere to go."""
        moves = []
        for r in sorted(jobs, key=lambda r: (-self._usage[r], -self._cpu[r], r)):
            claims = self._fits_on(book, r, avoid=avoid)
            if claims is None:
                return None
            for claim in claims:
                book.take(claim, self._kind[r])
            moves.append((r, claims))
        return moves

    def _try_migrate(self, j: int) -> bool:
        """Move running one-node jobs off one node of ``j``'s domain (fewest GPU milli
        moved, then fewest jobs, then the lowest node) so that ``j`` fits, and start it."""
        domain = self._domain[j]
        if not self._quota_allows(j, self.vc_used) or self._why_not(j, domain) == FULL:
            return False  # not fragmentation: too little is free in all
        epoch = self._epoch[self._group[j]]
        self._own_room_why |= MIGRATION_FAILED
        if self._migrate_failed_at.get(j) == epoch:
            return False
        on_node = self._movable(self._group[j])
        book, need = self.book, self._gpus[j]
        bound = _FitBound(self, j) if self.shortcuts.trial_bounds else None
        leaves: dict[int, bool] = {}
        best = None
        for node in domain.nodes.tolist():
            if (
                node not in on_node
                or self.capacity[node] < need
                or book.nodes.cpu[node] < self._cpu[j]
                or book.nodes.memory[node] < self._mem[j]
            ):
                continue  # nothing to move, or too small even when empty
            jobs = sorted(on_node[node], key=lambda r: (self._usage[r], self._cpu[r], r))
            jobs = jobs[:MOST_MOVABLE_PER_NODE]
            first = 1
            if bound is not None:
                first = bound.first(node, jobs)
                if first is None:
                    continue  # j fits nowhere even with all of them gone
            for k in range(first, len(jobs) + 1):
                chosen = jobs[:k]
                key = (sum(self._usage[r] for r in chosen), k, node)
                if best is not None and key >= best[0]:
                    break
                if bound is not None and not self._could_leave(jobs[k - 1], {node}, leaves):
                    break  # it has nowhere else to go, in this trial or any larger one
                book = self.book.clone()
                for r in chosen:
                    for claim in self.ledger.claims[r]:
                        book.give(claim, self._kind[r])
                moves = self._relocate_on(book, chosen, avoid={node})
                if moves is not None and self._fits_on(book, j) is not None:
                    best = (key, moves)
                    break
        if best is None:
            self._migrate_failed_at[j] = epoch
            return False
        for r, claims in best[1]:
            self._move(r, claims, cause=j)
        if not self._try_start(j):
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return True

    def _could_leave(self, r: int, avoid: set[int], known: dict[int, bool]) -> bool:
        """Whether running job ``r`` could fit off the nodes in ``avoid`` (its own among
        them) on the book as it is now, in CPU, memory and GPUs alone (``known`` keeps the
        answers, for one ``avoid`` set per job)."""
        could = known.get(r)
        if could is None:
            could = known[r] = _FitBound(self, r).fits_without(avoid)
        return could

    def _move(self, r: int, claims: list[Claim], cause: int | None = None) -> None:
        self.ledger.plans[r] = claims
        nodes = np.array([c[0] for c in claims])
        self._migrate(r, nodes, np.array([len(c[1]) for c in claims]), cause=cause)

    def _defragment(self) -> set[int]:
        """Empty the least-used nodes (fewest GPU milli, then CPU, in use) by moving their
        jobs onto other used nodes, while that empties a whole node."""
        changed: set[int] = set()
        if self.shortcuts.memos and getattr(self, "_defrag_failed_at", None) == self.changes:
            return changed  # nothing changed since a pass that moved nothing
        book = self.book
        bounds = self.shortcuts.trial_bounds
        for group, nodes in enumerate(self.group_nodes):
            while self.running[group]:
                listed = nodes.tolist()
                held = self._held(nodes).tolist()
                in_use = (MILLI - book.gpu_left[nodes]).clip(0).sum(axis=1).tolist()
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
                    if len(jobs) != jobs_on.get(node, 0):
                        continue
                    avoid = empty | {node}
                    if bounds and not all(self._could_leave(r, avoid, leaves) for r in jobs):
                        continue  # one of them has nowhere else to go
                    trial = book.clone()
                    for r in jobs:
                        for claim in self.ledger.claims[r]:
                            trial.give(claim, self._kind[r])
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
            self._defrag_failed_at = self.changes
        return changed

    def _held(self, nodes: np.ndarray) -> np.ndarray:
        """Whether each of ``nodes`` holds anything (CPU, memory or GPU milli in use)."""
        book = self.book
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


class _FitBound:
    """Whether job ``j`` could fit (in CPU, memory and GPUs alone, the placer's choice
    aside) once some jobs leave one node, all else as now.

    A migration moves jobs off one node onto the others, so every other node ends with at
    most what it has now and that node with at most what it has now plus what they free;
    what cannot hold ``j`` then cannot hold it after the moves either (the trial's
    ``_fits_on`` would say None): such trials are skipped. Exact: only failing trials go."""

    def __init__(self, sim: ResourceSimulation, j: int) -> None:
        self.sim, self.j = sim, j
        need, milli = sim._gpus[j], sim._milli[j]
        cpu, mem = sim._cpu[j], sim._mem[j]
        domain = sim._domain[j]
        self.one_node = milli < MILLI or (
            sim.share_placer is not None and need <= domain.topology.largest
        )
        if self.one_node:
            if need > 1:
                cpu, mem = -(-cpu // need) * need, -(-mem // need) * need
        else:
            cpu, mem = -(-cpu // need), -(-mem // need)
        self.need, self.milli, self.cpu, self.mem = need, milli, cpu, mem
        book = sim.book
        nodes = domain.nodes
        self.room = self._room(book.cpu_left[nodes], book.mem_left[nodes], book.gpu_left[nodes])
        self.index = {n: i for i, n in enumerate(nodes.tolist())}
        self.total = int(self.room.sum())

    def _room(self, cpu_left: np.ndarray, mem_left: np.ndarray, gpu_left: np.ndarray):
        """Per node: 1 if ``j`` fits there alone, else 0 (one-node jobs); the whole GPUs it
        could take there (others), as ``_place_on`` counts them."""
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


class _ResourceTrial(_Trial):
    """Trial evictions on a copy of the resource book."""

    def __init__(self, sim: ResourceSimulation, j: int) -> None:
        self.sim, self.j = sim, j
        self.reset()

    def reset(self) -> None:
        self.book = self.sim.book.clone()
        self.vc_used = list(self.sim.vc_used)

    def release(self, r: int, sign: int) -> None:
        sim = self.sim
        for claim in sim._claims_of(r):
            if sign > 0:
                self.book.give(claim, sim._kind[r])
            else:
                self.book.take(claim, sim._kind[r])
        if not sim.borrowed[r]:
            self.vc_used[sim._vc[r]] -= sign * sim._usage[r]

    def fits(self) -> bool:
        sim = self.sim
        return sim._quota_allows(self.j, self.vc_used) and (
            sim._fits_on(self.book, self.j) is not None
        )


__all__ = [
    "ResourceBook",
    "ResourceLedger",
    "ResourceSimulation",
]
