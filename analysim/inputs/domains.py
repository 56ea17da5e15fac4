"""Where each job may run: its VC's nodes or quota, narrowed by its GPU type.

A *domain* is one (VC, GPU-type constraint) pair: the nodes such a job may use, the quota it
counts against (if its VC holds one), and the most GPUs it could ever get. Jobs asking for
more than that are unschedulable.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.workload import validate_jobs
from analysim.policies.placement import Topology

POOL = "(pool)"


@dataclass(frozen=True)
class Domain:
    vc: int
    gpu_type: str | None
    mask: np.ndarray
    nodes: np.ndarray  # indices of the nodes in ``mask``: placers see only these
    topology: Topology  # of ``nodes``, in that order
    quota: int | None
    max_gpus: int
    type_mask: np.ndarray | None = None  # every node of the accepted GPU types


def make_domain(
    vc: int, mask: np.ndarray, capacity: np.ndarray, rack_codes: np.ndarray, n_racks: int
) -> Domain:
    """A domain over the nodes in ``mask`` without a quota (e.g. the GPUs a VC may borrow)."""
    usable = np.flatnonzero(mask)
    topology = Topology(capacity[usable], rack_codes[usable].astype(np.int64), n_racks)
    return Domain(vc, None, mask, usable, topology, None, int(capacity[usable].sum()))


@dataclass(frozen=True)
class Partition:
    """The VCs of a simulation and the domain of every job."""

    vc_names: list[str]
    vc_capacity: np.ndarray
    vc_quota: np.ndarray  # -1 where the VC has no quota (owns nodes, or the cluster is a pool)
    job_vc: np.ndarray
    job_domain: np.ndarray
    domains: list[Domain]
    domain_group: np.ndarray  # domains that share nodes or a quota interact: one group

    @property
    def n_groups(self) -> int:
        return int(self.domain_group.max()) + 1 if len(self.domain_group) else 0

    @property
    def has_quotas(self) -> bool:
        """Whether some job's domain has a quota (if none has, no start needs the check)."""
        return any(d.quota is not None for d in self.domains)

    def as_one_group(self) -> Partition:
        """The same partition with every domain in one group (when VCs may borrow from each
        other, every job competes with every other)."""
        return dataclasses.replace(self, domain_group=np.zeros_like(self.domain_group))


def allowed_types(spec: str | None) -> set[str] | None:
    """``"V100M16|V100M32"`` -> the set of GPU types a job accepts (``None``: any)."""
    if spec is None or (isinstance(spec, float) and np.isnan(spec)) or str(spec).strip() == "":
        return None
    return {part.strip() for part in str(spec).split("|") if part.strip()}


def build_partition(jobs: pd.DataFrame, cluster: Cluster) -> Partition:
    """Map every job to its VC and domain; unknown VCs are an error naming the rows."""
    nodes = cluster.nodes
    if cluster.partitioned:
        validate_jobs(jobs, vcs=cluster.vcs)  # raises naming rows with an unknown VC
        vc_names = cluster.vcs
        capacity = cluster.vc_capacity()
        vc_capacity = np.array([capacity[v] for v in vc_names], dtype=np.int64)
        vc_quota = np.array([cluster.quotas.get(v, -1) for v in vc_names], dtype=np.int64)
    else:
        vc_names = sorted(jobs["vc"].unique().tolist()) or [POOL]
        vc_capacity = np.full(len(vc_names), cluster.total_gpus, dtype=np.int64)
        vc_quota = np.full(len(vc_names), -1, dtype=np.int64)
    vc_index = {v: i for i, v in enumerate(vc_names)}
    job_vc = jobs["vc"].map(vc_index).to_numpy(dtype=np.int64)

    owner = nodes["vc"].to_numpy(dtype=object)
    node_type = nodes["gpu_type"].to_numpy(dtype=object)
    capacity_per_node = nodes["gpus"].to_numpy(dtype=np.int64)
    rack_codes, rack_names = pd.factorize(nodes["rack"])
    types = jobs["gpu_type"] if "gpu_type" in jobs.columns else pd.Series([None] * len(jobs))
    type_key = types.where(types.notna(), "").astype(str).to_numpy(dtype=object)

    keys = pd.DataFrame({"vc": job_vc, "type": type_key})
    codes, uniques = pd.MultiIndex.from_frame(keys).factorize()
    domains = []
    for vc, spec in uniques:
        name = vc_names[vc]
        if not cluster.partitioned:
            mask = np.ones(len(nodes), dtype=bool)
        elif vc_quota[vc] >= 0:
            mask = pd.isna(owner)
        else:
            mask = owner == name
        accepted = allowed_types(spec or None)
        type_mask = np.ones(len(nodes), dtype=bool)
        if accepted is not None:
            type_mask = np.isin(node_type, list(accepted))
            mask = mask & type_mask
        usable = np.flatnonzero(mask)
        quota = int(vc_quota[vc]) if vc_quota[vc] >= 0 else None
        total = int(capacity_per_node[usable].sum())
        most = total if quota is None else min(total, quota)
        topology = Topology(
            capacity_per_node[usable], rack_codes[usable].astype(np.int64), len(rack_names)
        )
        domains.append(Domain(vc, spec or None, mask, usable, topology, quota, most, type_mask))
    return Partition(
        vc_names,
        vc_capacity,
        vc_quota,
        job_vc,
        codes.astype(np.int64),
        domains,
        group_domains(domains),
    )


def group_domains(domains: list[Domain]) -> np.ndarray:
    """Number the groups of domains that interact (share a node or a VC), 0, 1, ... in order
    of first appearance. Jobs of different groups never compete, so rounds run per group."""
    parent = list(range(len(domains)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(domains):
        for k in range(i):
            b = domains[k]
            if a.vc == b.vc or (a.mask & b.mask).any():
                parent[root(i)] = root(k)
    roots = [root(i) for i in range(len(domains))]
    _, group = np.unique(roots, return_inverse=True)
    return group.astype(np.int64)
