"""Fragmentation of the free GPUs at each timeline sample (definitions in ``docs/semantics.md``).

* **fragmented GPUs**: free GPUs that no waiting job can use because of where they are: those
  on nodes with fewer free GPUs than the smallest waiting job of any VC that may use the node
  needs there (``min(its GPUs, the node's GPUs)``). Nodes no waiting job may use count 0.
* **blocked jobs**: waiting jobs whose GPU count fits in what is free to them (their VC's free
  GPUs, within its quota) but for which the placement policy finds no placement.
* **fragmentation index**: the share of the free GPUs that sit on partly used nodes (0 when
  every free GPU is on a wholly free node, or nothing is free).

The engine only *captures* the state at each sample (``Simulation.capture``: free GPUs per
node, waiting jobs per domain and size, GPUs per VC: a few array copies); :func:`measure`
computes the metrics for all samples at once, vectorised, when the result is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from analysim.engine.records import Capture
    from analysim.engine.snapshot import RunRecord


class Tables:
    """What the measurements need about the cluster and the domains."""

    def __init__(self, run: RunRecord) -> None:
        partition = run.partition
        owner = run.cluster.nodes["vc"].to_numpy(dtype=object)
        n_nodes, n_vc = len(run.capacity), len(partition.vc_names)
        member = np.zeros((n_vc, n_nodes))
        for v, name in enumerate(partition.vc_names):
            if not run.cluster.partitioned:
                member[v] = 1.0
            elif partition.vc_quota[v] >= 0:
                member[v] = [o is None or o != o for o in owner]  # the pool (None or NaN)
            else:
                member[v] = owner == name
        self.member = member
        domains = partition.domains
        self.n_vc = n_vc
        self.domain_vc = np.array([d.vc for d in domains], dtype=np.int64)
        self.largest = np.array([d.topology.largest for d in domains], dtype=np.int64)
        self.sizes = np.asarray(run.size_buckets, dtype=np.int64)
        seen = np.zeros(n_nodes, dtype=np.int64)
        for domain in domains:
            seen[domain.nodes] += 1
        self.disjoint = bool((seen <= 1).all())


def measure(run: RunRecord, captures: list[Capture]) -> dict[str, np.ndarray]:
    """Per sample: ``fragmented`` and ``blocked`` (samples x VCs), ``frag_index`` (samples x
    VCs), ``cluster_fragmented`` and ``cluster_frag_index`` (samples)."""
    tables = Tables(run)
    n_vc = tables.n_vc
    if not captures:
        empty = np.zeros((0, n_vc), dtype=np.int64)
        return {
            "fragmented": empty,
            "blocked": empty,
            "frag_index": empty.astype(float),
            "cluster_fragmented": np.zeros(0, dtype=np.int64),
            "cluster_frag_index": np.zeros(0),
        }
    # captures repeat while nothing changes: measure each distinct one once
    distinct: dict[int, int] = {}
    which = np.array([distinct.setdefault(id(c), len(distinct)) for c in captures])
    unique = list({id(c): c for c in captures}.values())
    free = np.stack([c.free for c in unique]).astype(np.int64)
    shape = (len(unique), len(run.partition.domains), len(tables.sizes))
    waiting = np.stack([c.waiting for c in unique]).astype(np.int64).reshape(shape)
    vc_used = np.array([c.vc_used for c in unique], dtype=np.int64).reshape(len(unique), n_vc)
    out = {
        "frag_index": _frag_index(free, run.capacity, tables.member),
        "cluster_frag_index": _cluster_frag_index(free, run.capacity),
    }
    stuck = _stuck(free, waiting, run, tables)
    out["fragmented"] = _per_vc_fragmented(free, stuck, run, tables)
    covered = stuck["covered"]
    out["cluster_fragmented"] = (free * (covered & ~stuck["usable_any"])).sum(axis=1)
    out["blocked"] = _blocked(free, waiting, vc_used, run, tables)
    return {name: values[which] for name, values in out.items()}


def _frag_index(free: np.ndarray, capacity: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Share of the free GPUs of each node set (rows of ``member``) on partly used nodes."""
    as_float = free.astype(float)
    total = as_float @ member.T
    whole = np.where(free == capacity[None, :], as_float, 0.0) @ member.T
    return np.divide(total - whole, total, out=np.zeros_like(total), where=total > 0)


def _cluster_frag_index(free: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    total = free.sum(axis=1)
    whole = np.where(free == capacity[None, :], free, 0).sum(axis=1)
    return np.divide(total - whole, total, out=np.zeros(len(total)), where=total > 0)


def _smallest(waiting: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per sample and domain, the GPUs of the smallest waiting job (0: none waits)."""
    if waiting.shape[1] == 0 or waiting.shape[2] == 0:
        return np.zeros(waiting.shape[:2], dtype=np.int64)
    has = waiting > 0
    first = np.argmax(has, axis=2)
    return np.where(has.any(axis=2), sizes[first], 0)


def _stuck(
    free: np.ndarray, waiting: np.ndarray, run: RunRecord, tables: Tables
) -> dict[str, np.ndarray]:
    """Per sample and node: whether some waiting domain may use it (``covered``), whether any
    of them could use its free GPUs (``usable_any``), and the same per domain."""
    smallest = _smallest(waiting, tables.sizes)  # samples x domains
    capacity = run.capacity
    covered = np.zeros(free.shape, dtype=bool)
    usable_any = np.zeros(free.shape, dtype=bool)
    per_domain = []
    for d, domain in enumerate(run.partition.domains):
        nodes = domain.nodes
        need = np.minimum(smallest[:, d][:, None], capacity[nodes][None, :])
        waits = smallest[:, d][:, None] > 0
        usable = waits & (free[:, nodes] >= need)
        covered[:, nodes] |= waits
        usable_any[:, nodes] |= usable
        per_domain.append((nodes, waits, usable))
    return {"covered": covered, "usable_any": usable_any, "per_domain": per_domain}


def _per_vc_fragmented(free: np.ndarray, stuck: dict, run: RunRecord, tables: Tables) -> np.ndarray:
    """Per sample and VC: free GPUs on nodes the VC's waiting jobs may use but none can."""
    out = np.zeros((free.shape[0], tables.n_vc), dtype=np.int64)
    if tables.disjoint:
        for d, (nodes, waits, usable) in enumerate(stuck["per_domain"]):
            lost = free[:, nodes] * (waits & ~usable)
            out[:, tables.domain_vc[d]] += lost.sum(axis=1)
        return out
    for vc in range(tables.n_vc):
        covered = np.zeros(free.shape, dtype=bool)
        usable = np.zeros(free.shape, dtype=bool)
        for d, (nodes, waits, fits) in enumerate(stuck["per_domain"]):
            if tables.domain_vc[d] == vc:
                covered[:, nodes] |= waits
                usable[:, nodes] |= fits
        out[:, vc] = (free * (covered & ~usable)).sum(axis=1)
    return out


def _blocked(
    free: np.ndarray, waiting: np.ndarray, vc_used: np.ndarray, run: RunRecord, tables: Tables
) -> np.ndarray:
    """Per sample and VC: waiting jobs that fit in their free GPUs by count but not by shape."""
    out = np.zeros((free.shape[0], tables.n_vc), dtype=np.int64)
    sizes = tables.sizes
    for d, domain in enumerate(run.partition.domains):
        room = free[:, domain.nodes]
        total = room.sum(axis=1)
        if domain.quota is not None:
            total = np.minimum(total, domain.quota - vc_used[:, domain.vc])
        most = room.max(axis=1, initial=0)
        counts = waiting[:, d, :]  # samples x size buckets
        by_count = (counts > 0) & (sizes[None, :] <= total[:, None])
        one_node = run.picks_any_fitting_node & (sizes <= tables.largest[d])
        # one-node jobs under a placer that finds any fitting node: fit iff a node has room
        simple = by_count & one_node[None, :]
        out[:, domain.vc] += (counts * (simple & (sizes[None, :] > most[:, None]))).sum(axis=1)
        # the others: ask the placer, once per distinct shape of what is free
        asked = by_count & ~one_node[None, :]
        if asked.any():
            rows = np.flatnonzero(asked.any(axis=1))
            shapes, shape_of = np.unique(room[rows], axis=0, return_inverse=True)
            for k in np.flatnonzero(asked.any(axis=0)).tolist():
                need = int(sizes[k])
                wanted = np.flatnonzero(asked[rows, k])
                fits = {
                    u: run.placer_fits(need, shapes[u], domain)
                    for u in set(shape_of[wanted].tolist())
                }
                lost = np.array([not fits[u] for u in shape_of[wanted].tolist()], dtype=bool)
                out[rows[wanted[lost]], domain.vc] += counts[rows[wanted[lost]], k]
    return out
