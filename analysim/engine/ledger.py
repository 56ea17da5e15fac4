"""The allocation ledger: who holds which GPUs, and the counters that follow from it.

The ledger is the only writer of the cluster's state: :meth:`Ledger.take` and
:meth:`Ledger.release` are the two ways GPUs change hands, and each checks what it is asked
(no GPU booked twice, no VC over its quota). Everything else reads the ledger's arrays and
lists (``free``, ``vc_used``, ...) and never writes them.

One ledger for both modes. With whole GPUs only it counts free GPUs per node. In resource
mode (a :class:`~analysim.engine.book.ResourceBook` given) it also keeps the book of CPU,
memory and GPU milli, takes and gives back each job's claims on it (checked there), and
derives the whole-GPU counters from the book (``free``: fully free GPUs per node); usage and
quotas are then in GPU milli.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.errors import PolicyError
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.book import Claim, ResourceBook
    from analysim.sharing.fragmentation import FragMeter


class Ledger:
    """The GPUs of every node and the jobs holding them.

    ``gpus``, ``vc`` and ``quota`` are per job (what it counts against its VC's usage: its
    GPU count, or GPU milli in resource mode; its VC index; its VC's quota in the same unit,
    or None); ``group_nodes`` (:meth:`set_groups`) are the nodes of each group. In resource
    mode ``book`` is the book of every node's CPU, memory and milli per GPU, ``kinds`` each
    job's task kind and ``meter`` FGD's fragmentation (None: not measured).
    """

    def __init__(
        self,
        capacity: np.ndarray,
        node_names: np.ndarray,
        job_ids: np.ndarray,
        vc_names: list[str],
        gpus: list[int],
        vc: list[int],
        quota: list[int | None],
        book: ResourceBook | None = None,
        kinds: list[str] | None = None,
        meter: FragMeter | None = None,
    ) -> None:
        self.capacity = capacity
        self.node_names = node_names
        self.job_ids = job_ids
        self.vc_names = vc_names
        self._gpus, self._vc, self._quota = gpus, vc, quota
        self._group: list[int] = []
        n_jobs, n_vc = len(gpus), len(vc_names)
        self.free = capacity.copy()  # free GPUs per node
        self.gpu_offset = np.r_[0, np.cumsum(capacity)[:-1]]
        # per node, the free GPUs' global indices (kept sorted lowest first)
        self.free_slots = [
            list(range(lo, lo + c))
            for lo, c in zip(self.gpu_offset.tolist(), capacity.tolist(), strict=True)
        ]
        # where each running job is: its nodes, GPUs taken on each, and global GPU indices
        self.alloc_nodes: dict[int, np.ndarray] = {}
        self.alloc_counts: dict[int, np.ndarray] = {}
        self.alloc_pairs: dict[int, tuple[tuple[int, int], ...]] = {}  # (node, GPUs) pairs
        self.alloc_gpus: dict[int, tuple[tuple[int, ...], ...]] = {}  # per node, GPUs taken
        self.last_nodes: dict[int, np.ndarray] = {}  # where each job ran last
        # per VC counters, as Python lists: the hot loop reads them one at a time
        self.vc_used = [0] * n_vc  # GPUs held on the VC's own nodes or quota
        self.vc_borrowed = [0] * n_vc  # GPUs the VC's jobs hold on borrowed GPUs
        self.vc_running_jobs = [0] * n_vc
        self.borrowed = np.zeros(n_jobs, dtype=bool)  # whether the job runs on borrowed GPUs
        self.borrowers: dict[int, None] = {}  # the running jobs on borrowed GPUs, start order
        self.borrowed_gpu_seconds = np.zeros(n_jobs)
        self.group_free: list[int] = []
        self._busy = [0.0] * n_vc  # GPU-seconds per VC up to self._busy_at[vc]
        self._busy_at = [0.0] * n_vc
        #: resource mode: the book, each running job's claims on it, and FGD's
        #: fragmentation of each node (kept up to date as nodes change)
        self.book = book
        self._kinds = kinds
        self.meter = meter
        self.claims: dict[int, list[Claim]] = {}
        self.node_frag = (
            [meter.frag(book.key(n)) for n in range(len(capacity))]
            if meter is not None and book is not None
            else [0.0] * len(capacity)
        )
        self._node_group: list[list[int]] = [[] for _ in range(len(capacity))]
        #: nodes down (failed, until repaired) and spares (``engine/spares.py``): none of their
        #: GPUs is free; in resource mode the claim that holds the whole node on the book
        self.down = np.zeros(len(capacity), dtype=bool)
        self.spare = np.zeros(len(capacity), dtype=bool)
        self.down_claims: dict[int, Claim] = {}

    @property
    def unit(self) -> int:
        """What one GPU counts in ``vc_used``, ``vc_borrowed`` and quotas: 1, or 1000 (GPU
        milli) in resource mode."""
        return 1 if self.book is None else MILLI

    def set_groups(self, group: list[int], group_nodes: list[np.ndarray]) -> None:
        """Per job its group, and per group its nodes (whose free GPUs are counted)."""
        self._group = group
        self.group_free = [int(self.free[nodes].sum()) for nodes in group_nodes]
        self._node_group = [[] for _ in range(len(self.capacity))]  # the groups of each node
        for g, nodes in enumerate(group_nodes):
            for node in nodes.tolist():
                self._node_group[node].append(g)

    # -- the two changes ----------------------------------------------------------------------
    def take(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        borrowed: bool,
        now: float,
        claims: list[Claim] | None = None,
    ) -> tuple[tuple[int, ...], ...]:
        """Give job ``j`` GPUs: ``counts[i]`` on node ``nodes[i]`` (checked); returns the
        global indices of the GPUs taken, per node. In resource mode ``claims`` say what it
        takes on each node (GPUs, CPU, memory, milli per GPU), checked on the book."""
        if self.book is not None:
            return self._take_claims(j, nodes, counts, borrowed, now, claims)
        # (an item at a time, read with ``item`` and written whole: faster than numpy's fancy
        # indexing and its scalar arithmetic on so few nodes)
        free, free_slots = self.free, self.free_slots
        if len(nodes) == 1:  # (most jobs take one node: no list to build)
            node, count = nodes.item(0), counts.item(0)
            pairs: tuple[tuple[int, int], ...] = ((node, count),)
            slots = free_slots[node]
            if len(slots) < count:
                self._double_booked(j, node)
            taken = (tuple(slots[:count]),)  # tuples of ints: no GC work
            del slots[:count]
            free[node] = free.item(node) - count
        else:
            pairs = tuple(zip(nodes.tolist(), counts.tolist(), strict=True))
            held: list[tuple[int, ...]] = []
            for node, count in pairs:
                slots = free_slots[node]
                if len(slots) < count:
                    self._double_booked(j, node)
                held.append(tuple(slots[:count]))
                del slots[:count]
                free[node] = free.item(node) - count
            taken = tuple(held)
        size = self._gpus[j]
        self.group_free[self._group[j]] -= size
        self.alloc_gpus[j] = taken
        self.alloc_nodes[j] = nodes
        self.alloc_counts[j] = counts
        self.alloc_pairs[j] = pairs
        self.last_nodes[j] = nodes
        self._charge(j, size, borrowed, now)
        return taken

    def _double_booked(self, j: int, node: int) -> None:
        """Refuse job ``j``'s take of more GPUs on ``node`` than are free there."""
        raise PolicyError(
            f"internal: job {self.job_ids[j]!r} would double-book a GPU on node "
            f"{self.node_names[node]}"
        )

    def _take_claims(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        borrowed: bool,
        now: float,
        claims: list[Claim] | None,
    ) -> tuple[tuple[int, ...], ...]:
        """Resource mode's take: job ``j``'s ``claims`` on the book (checked there)."""
        if claims is None:
            raise PolicyError(f"internal: job {self.job_ids[j]!r} started without a placement")
        if [c[0] for c in claims] != nodes.tolist():
            raise PolicyError(f"internal: job {self.job_ids[j]!r}: claims and nodes disagree")
        kind = self._kinds[j] if self._kinds is not None else None
        for claim in claims:
            self.book.take(claim, kind)
        self._refresh([c[0] for c in claims])
        self.claims[j] = claims
        taken = tuple(tuple(int(self.gpu_offset[c[0]] + g) for g in c[1]) for c in claims)
        self.alloc_gpus[j] = taken
        self.alloc_nodes[j] = nodes
        self.alloc_counts[j] = counts
        self.alloc_pairs[j] = tuple(zip(nodes.tolist(), counts.tolist(), strict=True))
        self.last_nodes[j] = nodes
        self._charge(j, self._gpus[j], borrowed, now)
        return taken

    def _charge(self, j: int, size: int, borrowed: bool, now: float) -> None:
        """Count job ``j``'s ``size`` against its VC from ``now``: as borrowed, or as the VC's
        own (checked against its quota)."""
        vc = self._vc[j]
        vc_used, vc_borrowed = self.vc_used, self.vc_borrowed
        # the VC's busy GPU-seconds up to now, at its usage until now
        busy_at = self._busy_at
        self._busy[vc] += (vc_used[vc] + vc_borrowed[vc]) * (now - busy_at[vc])
        busy_at[vc] = now
        if borrowed:  # borrowed GPUs do not count against the VC's own GPUs or quota
            vc_borrowed[vc] += size
            self.borrowed[j] = True
            self.borrowers[j] = None
        else:
            used = vc_used[vc] + size
            vc_used[vc] = used
            quota = self._quota[j]
            if quota is not None and used > quota:
                raise PolicyError(f"internal: VC {self.vc_names[vc]!r} over its quota")
        self.vc_running_jobs[vc] += 1

    def release(self, j: int, at: float, elapsed: float) -> None:
        """Job ``j`` gives back its GPUs at ``at`` after holding them ``elapsed`` seconds."""
        del self.alloc_nodes[j], self.alloc_counts[j]
        pairs = self.alloc_pairs.pop(j)
        taken = self.alloc_gpus.pop(j)
        size = self._gpus[j]
        if self.book is not None:
            claims = self.claims.pop(j)
            kind = self._kinds[j] if self._kinds is not None else None
            for claim in claims:
                self.book.give(claim, kind)
            self._refresh([c[0] for c in claims])
        else:
            self.group_free[self._group[j]] += size
            free, free_slots = self.free, self.free_slots
            for (node, count), gpus in zip(pairs, taken, strict=True):
                free[node] = free.item(node) + count
                slots = free_slots[node]
                slots += gpus
                slots.sort()
        vc = self._vc[j]
        vc_used, vc_borrowed = self.vc_used, self.vc_borrowed
        # the VC's busy GPU-seconds up to ``at``: busy until the job ends, not until the step
        # it is seen
        busy_at = self._busy_at
        self._busy[vc] += (vc_used[vc] + vc_borrowed[vc]) * (at - busy_at[vc])
        busy_at[vc] = at
        if j in self.borrowers:  # (``borrowed[j]``, read from the dict)
            vc_borrowed[vc] -= size
            self.borrowed[j] = False
            self.borrowed_gpu_seconds[j] += elapsed * size / self.unit
            del self.borrowers[j]
        else:
            vc_used[vc] -= size
        self.vc_running_jobs[vc] -= 1

    def _refresh(self, nodes: list[int]) -> None:
        """Resource mode: recount the fully free GPUs of ``nodes`` (and of their groups) from
        the book, and their FGD fragmentation."""
        book, meter = self.book, self.meter
        for node in nodes:
            if meter is not None:
                self.node_frag[node] = meter.frag(book.key(node))
            full = book.full_gpus(node)
            delta = len(full) - int(self.free[node])
            self.free[node] = len(full)
            offset = int(self.gpu_offset[node])
            self.free_slots[node][:] = [offset + g for g in full]
            for g in self._node_group[node]:
                self.group_free[g] += delta

    # -- nodes that fail, and spares ----------------------------------------------------------
    def node_down(self, node: int) -> None:
        """``node`` fails: no job may be placed on it until :meth:`node_up`. Its jobs must
        have been released first (checked)."""
        if self.down[node]:
            raise PolicyError(f"internal: node {self.node_names[node]} is down already")
        self._hold(node, "goes down")
        self.down[node] = True

    def node_up(self, node: int) -> None:
        """``node`` is repaired: its GPUs are free again."""
        if not self.down[node]:
            raise PolicyError(f"internal: node {self.node_names[node]} is not down")
        self.down[node] = False
        self._unhold(node)

    def set_aside(self, node: int) -> None:
        """``node`` (up, nothing on it) becomes a spare: held out of placement, like a node
        down, until :meth:`bring_in`."""
        if self.spare[node] or self.down[node]:
            raise PolicyError(f"internal: node {self.node_names[node]} cannot be set aside")
        self._hold(node, "is set aside")
        self.spare[node] = True

    def bring_in(self, node: int) -> None:
        """Spare ``node`` is no longer held: its GPUs are free."""
        if not self.spare[node]:
            raise PolicyError(f"internal: node {self.node_names[node]} is not a spare")
        self.spare[node] = False
        self._unhold(node)

    def _hold(self, node: int, what: str) -> None:
        """Hold all of ``node`` (nothing may be on it: checked), so no placer sees it free."""
        if self.book is not None:
            book = self.book
            gpus = tuple(range(int(self.capacity[node])))
            claim = (node, gpus, int(book.nodes.cpu[node]), int(book.nodes.memory[node]), MILLI)
            book.take(claim, None)  # checked there: every GPU, CPU and memory is free
            self.down_claims[node] = claim
            self._refresh([node])
            return
        if self.free[node] != self.capacity[node]:
            raise PolicyError(f"internal: node {self.node_names[node]} {what} with jobs on it")
        count = int(self.free[node])
        self.free[node] = 0
        self.free_slots[node].clear()
        for g in self._node_group[node]:
            self.group_free[g] -= count

    def _unhold(self, node: int) -> None:
        """Give back all of ``node``, held by :meth:`_hold`."""
        if self.book is not None:
            self.book.give(self.down_claims.pop(node), None)
            self._refresh([node])
            return
        count = int(self.capacity[node])
        self.free[node] = count
        offset = int(self.gpu_offset[node])
        self.free_slots[node][:] = range(offset, offset + count)
        for g in self._node_group[node]:
            self.group_free[g] += count

    # -- reading ------------------------------------------------------------------------------
    def held_by_vc(self) -> list[int]:
        """GPUs each VC's jobs hold, own and borrowed."""
        return [u + b for u, b in zip(self.vc_used, self.vc_borrowed, strict=True)]

    def gpu_holders(self) -> list[list[int]]:
        """The jobs holding each GPU (global index), checked: whole GPUs held once; in resource
        mode against the book too: no GPU over 1000 milli, none held both whole and shared."""
        if self.book is None:
            return [[] if j < 0 else [int(j)] for j in self.gpu_owner().tolist()]
        holders: list[list[int]] = [[] for _ in range(int(self.capacity.sum()))]
        used = np.zeros(len(holders), dtype=np.int64)
        for j, claims in self.claims.items():
            for node, gpus, _, _, milli in claims:
                for g in gpus:
                    index = int(self.gpu_offset[node]) + g
                    holders[index].append(j)
                    used[index] += milli
        for node in self.down_claims:  # a node down (or a spare) holds all its GPUs
            start = int(self.gpu_offset[node])
            used[start : start + int(self.capacity[node])] += MILLI
        if (used > MILLI).any():
            raise PolicyError("internal: a GPU is over 1000 milli")
        left = np.concatenate(
            [self.book.gpu_left[n, :c] for n, c in enumerate(self.capacity.tolist())]
        )
        if (left + used != MILLI).any():
            raise PolicyError("internal: GPU milli disagree with the jobs holding them")
        return holders

    def gpu_owner(self) -> np.ndarray:
        """The job holding each GPU (-1 for free; in resource mode the first to take it),
        checked: no GPU may be held twice (resource mode: over 1000 milli)."""
        if self.book is not None:
            holders = self.gpu_holders()
            return np.array([h[0] if h else -1 for h in holders], dtype=np.int64)
        owner = np.full(int(self.capacity.sum()), -1, dtype=np.int64)
        for j, taken in self.alloc_gpus.items():
            for slots in taken:
                slots = list(slots)
                if (owner[slots] >= 0).any():
                    raise PolicyError(f"internal: job {self.job_ids[j]!r} shares a GPU")
                owner[slots] = j
        held = np.zeros(len(self.capacity), dtype=np.int64)
        np.add.at(held, np.repeat(np.arange(len(self.capacity)), self.capacity), owner >= 0)
        held_out = np.where(self.down | self.spare, self.capacity, 0)  # down, or spares
        if (held + self.free + held_out != self.capacity).any():
            raise PolicyError("internal: free GPU counts disagree with the GPUs held")
        return owner

    def busy_gpu_seconds(self, now: float) -> np.ndarray:
        """GPU-seconds each VC's jobs have held GPUs for (borrowed ones too), from 0 to now."""
        used = np.array(self.vc_used, dtype=float) + np.array(self.vc_borrowed, dtype=float)
        busy = np.array(self._busy) + used * (now - np.array(self._busy_at))
        return busy if self.book is None else busy / MILLI
