"""Who held which GPU when, replayed from a run's events: per-GPU spells (for Gantt charts
and heatmaps), one row per GPU at a moment, and each job's status at a moment."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.results.result import parse_gpu_list

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result

RUN_EVENTS = ("start", "resume", "migrate", "resize")  # (resize: elastic jobs)
STOP_EVENTS = ("preempt", "reclaim", "finish", "fail", "failed")
SNAPSHOT_COLUMNS = ["node", "rack", "gpu", "node_vc", "job_id", "job_vc", "borrowed"]


def events_until(result: Result, time: float) -> pd.DataFrame:
    events = result.events
    return events[events["time"] <= time + 1e-9]


def status_at(result: Result, time: float) -> np.ndarray:
    """Each job's status after the decisions at ``time`` (an array aligned with ``jobs``)."""
    jobs = result.jobs
    last = events_until(result, time).drop_duplicates("job_id", keep="last")
    kind = jobs["job_id"].map(dict(zip(last["job_id"], last["event"].astype(str), strict=True)))
    names = {
        "submit": "waiting",
        "preempt": "waiting",
        "reclaim": "waiting",
        "finish": "done",
        "fail": "waiting",
        "failed": "failed",
        "unschedulable": "unschedulable",
        **dict.fromkeys(RUN_EVENTS, "running"),
    }
    return kind.map(names).fillna("pending").to_numpy(dtype=object)


def allocations(result: Result, cluster: Cluster | None = None) -> pd.DataFrame:
    """Every spell of a job on a GPU: ``job_id, vc, node, gpu`` (index on the node), ``start,
    end`` (``end`` is NaN while it still runs at the end of the records).

    Rebuilt from the events: their ``gpus`` column (``"n0:0,n0:1"``) where the engine
    records it; otherwise a job on one node takes that node's lowest free GPUs, as the engine
    does, and a job over several nodes fills its whole free nodes first and puts the remainder
    on the others (the events name its nodes but not the GPUs on each).
    """
    nodes = cluster_of(result, cluster).nodes
    capacity = dict(zip(nodes["node"], nodes["gpus"].astype(int), strict=True))
    free = {n: list(range(c)) for n, c in capacity.items()}
    held: dict[str, list[tuple[str, int, float]]] = {}
    sharers: dict[tuple[str, int], int] = {}  # jobs on each GPU held
    rows: list[tuple[str, str, str, int, float, float]] = []
    vc_of = dict(zip(result.jobs["job_id"], result.jobs["vc"], strict=True))
    events = result.events
    moving = events[events["event"].astype(str).isin(RUN_EVENTS + STOP_EVENTS)]
    exact = (
        moving["gpus"].astype(object).tolist() if "gpus" in moving.columns else [None] * len(moving)
    )
    for time, kind, job, gpus, where, slots in zip(
        moving["time"].tolist(),
        moving["event"].astype(str).tolist(),
        moving["job_id"].tolist(),
        moving["num_gpus"].tolist(),
        moving["nodes"].astype(object).tolist(),
        exact,
        strict=True,
    ):
        if job in held:  # stops, or moves (migrate): release what it holds
            for node, gpu, start in held.pop(job):
                sharers[(node, gpu)] -= 1
                if not sharers[(node, gpu)]:  # resource mode: the last job on it left
                    free[node].append(gpu)
                    free[node].sort()
                rows.append((job, vc_of[job], node, gpu, start, time))
        if kind in RUN_EVENTS and isinstance(slots, str):
            # exact GPUs (none for a CPU-only job; in resource mode a GPU may be shared)
            taken = parse_gpu_list(slots)
            for n, g in taken:
                if g in free[n]:
                    free[n].remove(g)
                sharers[(n, g)] = sharers.get((n, g), 0) + 1
            held[job] = [(n, g, time) for n, g in taken]
        elif kind in RUN_EVENTS and isinstance(where, str):
            taken = _take(free, capacity, where.split(","), gpus)
            for n, g in taken:
                sharers[(n, g)] = 1
            held[job] = [(n, g, time) for n, g in taken]
    for job, spells in held.items():
        rows.extend((job, vc_of[job], n, g, s, np.nan) for n, g, s in spells)
    frame = pd.DataFrame(rows, columns=["job_id", "vc", "node", "gpu", "start", "end"])
    return frame.sort_values(["start", "node", "gpu"], kind="stable", ignore_index=True)


def _take(
    free: dict[str, list[int]], capacity: dict[str, int], names: list[str], gpus: int
) -> list[tuple[str, int]]:
    """GPUs for a job on ``names``: the lowest free ones, whole free nodes filled first."""
    if len(names) == 1:
        counts = {names[0]: gpus}
    else:
        order = sorted(names, key=lambda n: len(free[n]) != capacity[n])  # whole nodes first
        counts, left = {}, gpus
        for name in order:
            counts[name] = min(left, len(free[name]))
            left -= counts[name]
    taken = []
    for name, count in counts.items():
        slots = free[name][:count]
        del free[name][:count]
        taken.extend((name, g) for g in slots)
    return taken


def gpu_snapshot(
    result: Result,
    time: float,
    cluster: Cluster | None = None,
    spells: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per GPU after the decisions at ``time``: ``node, rack, gpu, node_vc, job_id,
    job_vc, borrowed``. Uses ``result.snapshot`` when the result has it; otherwise rebuilt
    with :func:`allocations` (pass ``spells``, its answer, to reuse it)."""
    if hasattr(result, "snapshot"):
        return result.snapshot(time)
    nodes = cluster_of(result, cluster).nodes
    gpus = nodes.loc[nodes.index.repeat(nodes["gpus"].astype(int))]
    frame = pd.DataFrame(
        {
            "node": gpus["node"].to_numpy(dtype=object),
            "rack": gpus["rack"].to_numpy(dtype=object),
            "gpu": gpus.groupby("node", sort=False).cumcount().to_numpy(),
            "node_vc": gpus["vc"].astype(object).where(gpus["vc"].notna(), None).to_numpy(),
        }
    )
    if spells is None:
        spells = allocations(result, cluster)
    now = spells[(spells["start"] <= time + 1e-9) & ~(spells["end"] <= time + 1e-9)]
    on = now.set_index(["node", "gpu"])
    key = pd.MultiIndex.from_arrays([frame["node"], frame["gpu"]])
    for column, source in (("job_id", "job_id"), ("job_vc", "vc")):
        values = np.array(on[source].reindex(key).to_numpy(), dtype=object)
        values[pd.isna(values)] = None
        frame[column] = pd.Series(values, dtype=object)
    owned = frame["node_vc"].notna() & frame["job_vc"].notna()
    frame["borrowed"] = owned & (frame["node_vc"] != frame["job_vc"])
    return frame[SNAPSHOT_COLUMNS]


def cluster_of(result: Result, cluster: Cluster | None) -> Cluster:
    if cluster is not None:
        return cluster
    known = getattr(result, "cluster", None)
    if known is not None and hasattr(known, "nodes"):
        return known
    if hasattr(result, "snapshot"):
        return _cluster_from_snapshot(result)
    raise ValueError(
        "this Result does not record its cluster's nodes: pass cluster= (the cluster it ran on)"
    )


def _cluster_from_snapshot(result: Result) -> Cluster:
    """The nodes (and quotas) of a run, as far as its snapshot and meta tell them."""
    from analysim.inputs.cluster import Cluster

    gpus = result.snapshot(0.0)
    nodes = gpus.groupby("node", sort=False).agg(
        rack=("rack", "first"), gpus=("gpu", "size"), vc=("node_vc", "first")
    )
    nodes = nodes.reset_index()
    layout = result.meta.get("nodes") or {}
    if "gpu_type" in layout:  # (results saved before it was recorded: the default type)
        types = dict(zip(layout["node"], layout["gpu_type"], strict=True))
        nodes["gpu_type"] = nodes["node"].map(types)
    owners = set(nodes["vc"].dropna())
    total = int(nodes["gpus"].sum())
    capacity = dict(zip(result.meta["vcs"], result.meta["vc_capacity"], strict=True))
    quotas = {vc: c for vc, c in capacity.items() if vc not in owners and c < total}
    return Cluster.from_frame(nodes, quotas=quotas or None, name=result.meta.get("cluster", ""))
