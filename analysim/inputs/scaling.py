"""Scaling a cluster or a workload: fewer or more nodes, faster or slower arrivals.

``scale_cluster(cluster, 0.1)`` keeps a tenth of each VC's nodes (and of the shared pool);
``scale_load(workload, 200)`` makes arrivals 200 times faster. Together they make a sparse
trace queue on its own kind of nodes (notebook 07 replays openb this way; the explorer's
*cluster size* and *load scale* controls are these two calls).
"""

from __future__ import annotations

import math

import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.workload import Workload

__all__ = ["scale_cluster", "scale_load"]


def scale_cluster(cluster: Cluster, factor: float) -> Cluster:
    """``cluster`` with each VC's nodes (and the shared pool) scaled by ``factor``.

    Each owner keeps ``round(nodes x factor)`` nodes (at least one): the first ones when it
    shrinks; copies (named ``<node>+k``, in racks ``<rack>+k``) when it grows. Quotas shrink
    or grow with the pool. Node columns (GPU model, CPU and memory capacities) are kept.
    """
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ValueError(f"cluster size must be a number > 0, got {factor!r}")
    if factor == 1:
        return cluster
    nodes = cluster.nodes
    parts = []
    for _, group in nodes.groupby(nodes["vc"].fillna("\0"), sort=False):
        want = max(1, round(len(group) * factor))
        if want <= len(group):
            parts.append(group.iloc[:want])
            continue
        parts.append(group)
        for k in range(want - len(group)):
            row = group.iloc[[k % len(group)]].copy()
            copy = k // len(group) + 1
            row["node"] = row["node"] + f"+{copy}"
            row["rack"] = row["rack"].astype(str) + f"+{copy}"
            parts.append(row)
    scaled = pd.concat(parts).sort_index(kind="stable").reset_index(drop=True)
    quotas = dict(cluster.quotas)
    if quotas:
        pool = int(scaled.loc[scaled["vc"].isna(), "gpus"].sum())
        ratio = pool / max(1, cluster.pool_gpus)
        quotas = {vc: int(q * ratio) for vc, q in quotas.items()}
    return Cluster.from_frame(scaled, quotas or None, name=f"{cluster.name} x{factor:g}")


def scale_load(workload: Workload, load_scale: float) -> Workload:
    """``workload`` with arrivals ``load_scale`` times faster (submit times divided)."""
    if not load_scale > 0:
        raise ValueError(f"load scale must be > 0, got {load_scale}")
    if load_scale == 1:
        return workload
    jobs = workload.jobs.assign(submit_time=workload.jobs["submit_time"] / load_scale)
    return Workload.from_frame(jobs, name=workload.name)
