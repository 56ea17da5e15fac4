"""The ``Result`` frames of a compat replay, with the columns the engine's results have."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.engine import EVENT_NAMES, FINISH, PREEMPT, RESUME, START, SUBMIT
from analysim.results.result import ALL, Result, labelled_categorical

if TYPE_CHECKING:
    from analysim.compat.helios_engine import Record
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload


def _node_names(cluster: Cluster, allocations: list[tuple[int, ...] | None]) -> pd.Categorical:
    """Comma-joined node names of each allocation (``None``: no nodes), as a categorical."""
    names = cluster.nodes["node"].tolist()
    return labelled_categorical(allocations, lambda nodes: ",".join(names[i] for i in nodes))


def _gpu_names(cluster: Cluster, allocations: list[tuple | None]) -> pd.Categorical:
    """``node:gpu,node:gpu`` lists of each allocation (``None``: no GPUs), as a categorical."""
    names = cluster.nodes["node"].tolist()
    return labelled_categorical(
        allocations, lambda gpus: ",".join(f"{names[n]}:{g}" for n, g in gpus)
    )


def jobs_frame(
    jobs_in: pd.DataFrame, cluster: Cluster, record: Record, rejected: np.ndarray
) -> pd.DataFrame:
    """One row per job, with the columns of :func:`analysim.results.build.build_result` (no job of
    the Helios simulator migrates, borrows or is reclaimed: those columns are 0)."""
    submit = jobs_in["submit_time"].to_numpy(dtype=float)
    end = np.asarray(record.end, dtype=float)
    jct = end - submit
    held = np.asarray(record.held, dtype=float)
    status = np.where(rejected, "unschedulable", np.where(np.isnan(end), "waiting", "done"))
    jobs = pd.DataFrame(
        {
            "job_id": jobs_in["job_id"].to_numpy(),
            "vc": jobs_in["vc"].to_numpy(),
            "user": jobs_in["user"].to_numpy(),
            "num_gpus": jobs_in["num_gpus"].to_numpy(dtype=np.int64),
            "submit_time": submit,
            "duration": jobs_in["duration"].to_numpy(dtype=float),
            "start_time": np.asarray(record.start, dtype=float),
            "end_time": end,
            "jct": jct,
            "queue_delay": jct - held,
            "run_time": held,
            "preemptions": np.asarray(record.preemptions, dtype=np.int64),
            "migrations": np.zeros(len(jobs_in), dtype=np.int64),
            "reclaims": np.zeros(len(jobs_in), dtype=np.int64),
            "borrowed_gpu_seconds": np.zeros(len(jobs_in)),
            "status": status.astype(object),
            "nodes": _node_names(cluster, record.nodes),
        }
    )
    if "gpu_type" in jobs_in.columns:
        jobs.insert(4, "gpu_type", jobs_in["gpu_type"].to_numpy())
    return jobs


def events_frame(jobs_in: pd.DataFrame, cluster: Cluster, record: Record) -> pd.DataFrame:
    """One row per state change, in time order (at one time, in the order they happened)."""
    events = record.events
    time = np.array([e[0] for e in events], dtype=float)
    order = np.argsort(time, kind="stable")
    kind = np.array([e[1] for e in events], dtype=np.int64)[order]
    job = np.array([e[2] for e in events], dtype=np.int64)[order]
    at = order.tolist()
    vcs = cluster.vcs
    vc_code = pd.Categorical(jobs_in["vc"].to_numpy(), categories=vcs).codes
    return pd.DataFrame(
        {
            "time": time[order],
            "event": pd.Categorical.from_codes(kind, categories=list(EVENT_NAMES)),
            "job_id": jobs_in["job_id"].to_numpy()[job],
            "vc": pd.Categorical.from_codes(vc_code[job], categories=vcs),
            "num_gpus": _event_gpus(jobs_in, record)[order],
            "nodes": _node_names(cluster, [events[i][3] for i in at]),
            "gpus": _gpu_names(cluster, [events[i][4] for i in at]),
            "from_nodes": pd.Series([None] * len(at), dtype=object),  # nothing migrates
            "cause": pd.Series([None] * len(at), dtype=object),
            "borrowed": np.zeros(len(at), dtype=bool),  # nothing is borrowed
        }
    )


def _event_gpus(jobs_in: pd.DataFrame, record: Record) -> np.ndarray:
    """GPUs of the job of each event: the record's sizes, else the job's ``num_gpus``."""
    if record.sizes is not None:
        return np.asarray(record.sizes, dtype=np.int64)
    job = np.array([e[2] for e in record.events], dtype=np.int64)
    return jobs_in["num_gpus"].to_numpy(dtype=np.int64)[job]


Segment = tuple[int, int, int, int]  # (job, from, to, GPUs held)


def _segments(record: Record, gpus: np.ndarray) -> tuple[list[Segment], list[Segment]]:
    """(job, from, to, GPUs) of every run on GPUs and of every wait, from the events;
    ``gpus``: the GPUs of each event (a run holds those of the event that began it)."""
    opened: dict[int, tuple[int, int]] = {}
    runs, waits = [], []
    for (t, kind, j, _, _), size in zip(record.events, gpus.tolist(), strict=True):
        if kind == SUBMIT:
            opened[j] = (t, size)
        elif kind in (START, RESUME):
            waits.append((j, *opened[j], t))
            opened[j] = (t, size)
        elif kind == PREEMPT:
            runs.append((j, *opened[j], t))
            opened[j] = (t, size)
        elif kind == FINISH:
            runs.append((j, *opened.pop(j), t))
    return [(j, a, b, g) for j, a, g, b in runs], [(j, a, b, g) for j, a, g, b in waits]


def _counts(
    segments: list[Segment], vc_code: np.ndarray, n_vc: int, times: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per sample time and VC: how many segments hold ``from <= t < to``, and their GPUs."""
    count = np.zeros((len(times), n_vc), dtype=np.int64)
    weight = np.zeros((len(times), n_vc), dtype=np.int64)
    if not segments:
        return count, weight
    job, start, stop, gpus = (np.array(c, dtype=np.int64) for c in zip(*segments, strict=True))
    for k in range(n_vc):
        mine = vc_code[job] == k
        starts, stops, w = start[mine], stop[mine], gpus[mine]
        by_start, by_stop = np.argsort(starts), np.argsort(stops)
        began = np.searchsorted(starts[by_start], times, side="right")
        ended = np.searchsorted(stops[by_stop], times, side="right")
        count[:, k] = began - ended
        w_start = np.concatenate([[0], np.cumsum(w[by_start])])
        w_stop = np.concatenate([[0], np.cumsum(w[by_stop])])
        weight[:, k] = w_start[began] - w_stop[ended]
    return count, weight


def timeline_frame(
    jobs_in: pd.DataFrame, cluster: Cluster, record: Record, every: float, last: float
) -> pd.DataFrame:
    """Every ``every`` seconds from 0 to ``last``: the state after that moment's decisions,
    cluster-wide (``vc == "(all)"``) and per VC, as in the engine's timeline."""
    vcs = cluster.vcs
    n_vc = len(vcs)
    times = np.arange(0.0, last + every * 1e-9, every) if last >= 0 else np.zeros(0)
    vc_code = pd.Categorical(jobs_in["vc"].to_numpy(), categories=vcs).codes
    runs, waits = _segments(record, _event_gpus(jobs_in, record))
    running, used = _counts(runs, vc_code, n_vc, times)
    waiting, pending = _counts(waits, vc_code, n_vc, times)
    capacity = cluster.vc_capacity()
    cap = np.array([capacity[vc] for vc in vcs], dtype=float)
    total = float(cluster.total_gpus)
    whole = pd.DataFrame(
        {
            "time": times,
            "vc": ALL,
            "used_gpus": used.sum(axis=1),
            "free_gpus": (total - used.sum(axis=1)).astype(np.int64),
            "pending_gpus": pending.sum(axis=1),
            "running_jobs": running.sum(axis=1),
            "waiting_jobs": waiting.sum(axis=1),
            "utilization": used.sum(axis=1) / total,
        }
    )
    per_vc = pd.DataFrame(
        {
            "time": np.repeat(times, n_vc),
            "vc": np.tile(np.array(vcs, dtype=object), len(times)),
            "used_gpus": used.ravel(),
            "free_gpus": (cap[None, :] - used).astype(np.int64).ravel(),
            "pending_gpus": pending.ravel(),
            "running_jobs": running.ravel(),
            "waiting_jobs": waiting.ravel(),
            "utilization": (used / cap[None, :]).ravel(),
        }
    )
    frame = pd.concat([whole, per_vc], ignore_index=True)
    return frame.sort_values(["time"], kind="stable", ignore_index=True)


def replay_result(
    workload: Workload,
    cluster: Cluster,
    record: Record,
    jobs: pd.DataFrame,
    busy_gpu_seconds: list[float],
    config: dict,
) -> Result:
    """A compat replay's ``Result``: its ``jobs`` frame, the meta every result carries (the
    GPU-seconds busy per VC as the replay counts them) and ``config`` (``compat``,
    ``scheduler``, ``placement``, ``step``, ``sample_every``); the events and timeline are
    built when first read (a sweep that only wants ``summary()`` never pays for them)."""
    last = max((e[0] for e in record.events), default=0)
    vcs = list(cluster.vcs)
    capacity = cluster.vc_capacity()
    nodes = cluster.nodes
    meta = {
        "workload": workload.name,
        "cluster": cluster.name,
        "now": float(last),
        "total_gpus": cluster.total_gpus,
        "vcs": vcs,
        "vc_capacity": [int(capacity[vc]) for vc in vcs],
        "busy_gpu_seconds": busy_gpu_seconds,
        "nodes": {
            "node": [str(n) for n in nodes["node"]],
            "rack": [str(r) for r in nodes["rack"]],
            "gpus": [int(g) for g in nodes["gpus"]],
            "vc": [str(v) for v in nodes["vc"]],
        },
    }
    sample_every = config["sample_every"]
    events = partial(events_frame, workload.jobs, cluster, record)
    timeline = partial(timeline_frame, workload.jobs, cluster, record, sample_every, last)
    return Result(jobs, events, timeline, config, meta)
