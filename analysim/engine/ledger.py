"""The allocation ledger: who holds which GPUs, and the counters that follow from it.

The ledger is the only writer of the cluster's state: :meth:`Ledger.take` and
:meth:`Ledger.release` are the two ways GPUs change hands, and each checks what it is asked
(no GPU booked twice, no VC over its quota). Everything else reads the ledger's arrays and
lists (``free``, ``vc_used``, ...) and never writes them.
"""

from __future__ import annotations

import numpy as np

from analysim.errors import PolicyError


class Ledger:
    """The GPUs of every node and the jobs holding them.

    ``gpus``, ``vc``, ``group`` and ``quota`` are per job (its GPU count, VC index, group
    index and its VC's quota or None); ``group_nodes`` are the nodes of each group.
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
        self.alloc_gpus: dict[int, list[tuple[int, ...]]] = {}  # per node used, the GPUs taken
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

    def set_groups(self, group: list[int], group_nodes: list[np.ndarray]) -> None:
        """Per job its group, and per group its nodes (whose free GPUs are counted)."""
        self._group = group
        self.group_free = [int(self.free[nodes].sum()) for nodes in group_nodes]

    # -- the two changes ----------------------------------------------------------------------
    def take(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        borrowed: bool,
        now: float,
        claims: list | None = None,
    ) -> tuple[tuple[int, ...], ...]:
        """Give job ``j`` GPUs: ``counts[i]`` on node ``nodes[i]`` (checked); returns the
        global indices of the GPUs taken, per node. (``claims``: resource mode's, unused
        here: whole GPUs need none.)"""
        taken: list[tuple[int, ...]] = []
        free = self.free
        pairs = tuple(zip(nodes.tolist(), counts.tolist(), strict=True))
        for node, count in pairs:
            slots = self.free_slots[node]
            if len(slots) < count:
                raise PolicyError(
                    f"internal: job {self.job_ids[j]!r} would double-book a GPU on node "
                    f"{self.node_names[node]}"
                )
            taken.append(tuple(slots[:count]))  # tuples of ints: no GC work
            del slots[:count]
            free[node] -= count  # an item at a time: faster than numpy's fancy indexing
        size = self._gpus[j]
        self.group_free[self._group[j]] -= size
        self.alloc_gpus[j] = taken
        self.alloc_nodes[j] = nodes
        self.alloc_counts[j] = counts
        self.alloc_pairs[j] = pairs
        self.last_nodes[j] = nodes
        self._charge(j, size, borrowed, now)
        return tuple(taken)

    def _charge(self, j: int, size: int, borrowed: bool, now: float) -> None:
        """Count job ``j``'s ``size`` against its VC from ``now``: as borrowed, or as the VC's
        own (checked against its quota)."""
        vc = self._vc[j]
        self._integrate(vc, now)
        if borrowed:  # borrowed GPUs do not count against the VC's own GPUs or quota
            self.vc_borrowed[vc] += size
            self.borrowed[j] = True
            self.borrowers[j] = None
        else:
            used = self.vc_used[vc] + size
            self.vc_used[vc] = used
            quota = self._quota[j]
            if quota is not None and used > quota:
                raise PolicyError(f"internal: VC {self.vc_names[vc]!r} over its quota")
        self.vc_running_jobs[vc] += 1

    def release(self, j: int, at: float, elapsed: float) -> None:
        """Job ``j`` gives back its GPUs at ``at`` after holding them ``elapsed`` seconds."""
        nodes = self.alloc_nodes.pop(j)
        del self.alloc_counts[j]
        del self.alloc_pairs[j]
        size = self._gpus[j]
        self.group_free[self._group[j]] += size
        free = self.free
        for node, taken in zip(nodes.tolist(), self.alloc_gpus.pop(j), strict=True):
            free[node] += len(taken)
            slots = self.free_slots[node]
            slots += taken
            slots.sort()
        vc = self._vc[j]
        self._integrate(vc, at)  # busy until the job ends, not until the step it is seen
        if self.borrowed[j]:
            self.vc_borrowed[vc] -= size
            self.borrowed[j] = False
            self.borrowed_gpu_seconds[j] += elapsed * size
            del self.borrowers[j]
        else:
            self.vc_used[vc] -= size
        self.vc_running_jobs[vc] -= 1

    # -- reading ------------------------------------------------------------------------------
    def held_by_vc(self) -> list[int]:
        """GPUs each VC's jobs hold, own and borrowed."""
        return [u + b for u, b in zip(self.vc_used, self.vc_borrowed, strict=True)]

    def gpu_owner(self) -> np.ndarray:
        """The job holding each GPU (-1 for free), checked: no GPU may be held twice."""
        owner = np.full(int(self.capacity.sum()), -1, dtype=np.int64)
        for j, taken in self.alloc_gpus.items():
            for slots in taken:
                slots = list(slots)
                if (owner[slots] >= 0).any():
                    raise PolicyError(f"internal: job {self.job_ids[j]!r} shares a GPU")
                owner[slots] = j
        held = np.zeros(len(self.capacity), dtype=np.int64)
        np.add.at(held, np.repeat(np.arange(len(self.capacity)), self.capacity), owner >= 0)
        if (held + self.free != self.capacity).any():
            raise PolicyError("internal: free GPU counts disagree with the GPUs held")
        return owner

    def busy_gpu_seconds(self, now: float) -> np.ndarray:
        """GPU-seconds each VC's jobs have held GPUs for (borrowed ones too), from 0 to now."""
        used = np.array(self.vc_used, dtype=float) + np.array(self.vc_borrowed, dtype=float)
        return np.array(self._busy) + used * (now - np.array(self._busy_at))

    def _integrate(self, vc: int, at: float) -> None:
        """Add the VC's busy GPU-seconds from the last change of its usage to ``at``."""
        held = self.vc_used[vc] + self.vc_borrowed[vc]
        self._busy[vc] += held * (at - self._busy_at[vc])
        self._busy_at[vc] = at
