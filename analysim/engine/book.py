"""Resource mode's book: per node, CPU and memory left and the milli left on each GPU; and
the set-up of resource mode (what each job asks for, the book of a cluster, the jobs no node
could ever hold).

A workload with any of the columns ``gpu_milli``, ``cpu_milli``, ``memory_mib``, or a config
whose ``placement`` names a placer of the FGD study (``fgd``, ``best_fit``, ``dot_product``,
``gpu_packing``, ``gpu_clustering``), runs in resource mode (``Simulation.resource_mode``).
The rules (``docs/semantics.md``, "Resource mode"): a share (``gpu_milli`` < 1000, one GPU)
or a CPU-only job runs on one node; a whole-GPU job takes fully free GPUs, on one node or
spread like today, and ``ceil(cpu_milli / num_gpus)`` CPU (and likewise memory) per GPU on
each node it uses. Quotas, borrowing limits and ``vc_used`` count GPU milli.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analysim.errors import PolicyError, describe_rows
from analysim.sharing.fragmentation import FragMeter, typical_shapes
from analysim.sharing.resources import MILLI, Nodes, NodeState, Tasks, task_kind

if TYPE_CHECKING:
    import pandas as pd

    from analysim.inputs.cluster import Cluster

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


@dataclass(frozen=True)
class Asks:
    """What each job asks for in resource mode (arrays by job)."""

    #: GPUs (``num_gpus``)
    gpus: np.ndarray
    #: GPU milli per GPU (1000 for a whole GPU; 0 for a CPU-only job)
    gpu_milli: np.ndarray
    #: CPU (milli) and memory (MiB) in all
    cpu: np.ndarray
    memory: np.ndarray

    @property
    def milli_total(self) -> np.ndarray:
        """GPU milli in all: what a job counts against its VC's usage and quota."""
        return self.gpus * self.gpu_milli

    def kinds(self) -> list[str]:
        """The task kind FGD's fragmentation counts, per job."""
        return [
            task_kind(g, m)
            for g, m in zip(self.gpus.tolist(), self.gpu_milli.tolist(), strict=True)
        ]


def job_asks(jobs: pd.DataFrame, gpus: np.ndarray, cluster: Cluster) -> Asks:
    """What each job of ``jobs`` asks for (the columns, or whole GPUs and nothing else),
    checked: CPU or memory larger than every node of ``cluster`` is bad input (named): for a
    job of several whole GPUs, the least it needs on one node (its amount per GPU)."""
    n = len(jobs)

    def column(name: str, default: np.ndarray) -> np.ndarray:
        if name in jobs.columns:
            return jobs[name].to_numpy(dtype=np.int64)
        return default

    nodes = cluster.nodes
    for name in ("cpu_milli", "memory_mib"):
        if name not in jobs.columns or name not in nodes.columns:
            continue
        most = int(nodes[name].max())
        amount = jobs[name].to_numpy()
        too_big = -(-amount // np.maximum(gpus, 1)) > most
        if too_big.any():
            raise ValueError(
                f"Workload: column {name!r} must be at most {most:,} (the most any node of "
                f"cluster {cluster.name!r} has); " + describe_rows(jobs, too_big, name, "job_id")
            )
    return Asks(
        gpus=gpus,
        gpu_milli=column("gpu_milli", np.where(gpus > 0, MILLI, 0)),
        cpu=column("cpu_milli", np.zeros(n, dtype=np.int64)),
        memory=column("memory_mib", np.zeros(n, dtype=np.int64)),
    )


def cluster_book(cluster: Cluster, node_names: np.ndarray, capacity: np.ndarray) -> ResourceBook:
    """The book of an empty ``cluster``: every node's CPU and memory (unlimited when the
    cluster does not say), and 1000 milli on each of its GPUs."""
    nodes = cluster.nodes

    def amount(name: str) -> np.ndarray:
        if name in nodes.columns:
            return nodes[name].to_numpy(dtype=np.int64)
        return np.full(len(nodes), UNLIMITED, dtype=np.int64)

    spec = Nodes(
        node_names,
        amount("cpu_milli"),
        amount("memory_mib"),
        capacity,
        nodes["gpu_type"].astype(str).to_numpy(dtype=object),
    )
    return ResourceBook(spec)


def fgd_meter(jobs: pd.DataFrame, job_ids, asks: Asks, book: ResourceBook) -> FragMeter | None:
    """FGD's fragmentation meter for this workload (its task shapes are the target
    workload); None for an empty workload."""
    types = jobs.get("gpu_type")
    types = (
        np.full(len(jobs), "", dtype=object)
        if types is None
        else types.where(types.notna(), "").astype(str).to_numpy(dtype=object)
    )
    tasks = Tasks(job_ids, asks.cpu, asks.memory, asks.gpus, asks.gpu_milli, types)
    return FragMeter(typical_shapes(tasks), book.models) if len(tasks) else None


__all__ = ["Asks", "Claim", "ResourceBook", "cluster_book", "fgd_meter", "job_asks"]
