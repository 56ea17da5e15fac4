"""Build a :class:`~analysim.results.result.Result` from a run's frozen record
(:meth:`analysim.engine.Simulation.record`): the jobs frame (with the columns of failures and
job speeds when in use), the events and the timeline samples, and the summary means."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.policies.scheduling import DONE, FAILED, STATUS_NAMES
from analysim.results import fairness, goodput
from analysim.results.decisions import build_decisions
from analysim.results.result import ALL, Result, labelled_categorical

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord


def _node_lists(names: np.ndarray, allocations: list[Any]) -> pd.Categorical:
    """Comma-joined node names of each allocation (an array of node indices, or None), as a
    categorical: events of one placement share its array, so each is joined once (the arrays
    are all alive here, so their ids are unique)."""
    names = names.tolist()
    return labelled_categorical(
        allocations, lambda nodes: ",".join([names[i] for i in nodes.tolist()]), key=id
    )


def build_result(run: RunRecord) -> Result:
    """Collect a simulation's record (:meth:`analysim.engine.Simulation.record`) into a
    :class:`Result`."""
    jobs_in = run.workload.jobs
    status = np.array(STATUS_NAMES, dtype=object)[run.status]
    running = run.status == 2
    ran = run.executed + np.where(running, run.now - run.since, 0.0)
    # GPUs a job holds: in resource mode its GPU milli / 1000 (as its borrowed GPU-seconds)
    held = run.milli_total / 1000 if run.resource_mode else run.gpus
    borrowed_now = np.where(run.borrowed, (run.now - run.since) * held, 0.0)
    end = run.end
    jct = end - run.submit
    jobs = pd.DataFrame(
        {
            "job_id": run.job_ids,
            "vc": jobs_in["vc"].to_numpy(),
            "user": jobs_in["user"].to_numpy(),
            "num_gpus": run.gpus,
            "submit_time": run.submit,
            "duration": run.duration,
            "start_time": run.first_start,
            "end_time": end,
            "jct": jct,
            "queue_delay": jct - ran,
            "run_time": ran,
            "preemptions": run.preemptions,
            "migrations": run.migrations.copy(),
            "reclaims": run.reclaims.copy(),
            "borrowed_gpu_seconds": run.borrowed_gpu_seconds + borrowed_now,
            "status": status,
            "nodes": _node_lists(
                run.node_names, [run.last_nodes.get(j) for j in range(run.n_jobs)]
            ),
        }
    )
    if run.resource_mode:  # what each job asked for besides whole GPUs
        jobs.insert(4, "gpu_milli", run.gpu_milli)
        jobs.insert(5, "cpu_milli", run.cpu)
        jobs.insert(6, "memory_mib", run.memory)
    if "gpu_type" in jobs_in.columns:
        jobs.insert(4, "gpu_type", jobs_in["gpu_type"].to_numpy())
    if run.rate is not None:  # a performance model is in use (docs/performance.md)
        _add_rates(jobs, jobs_in, run)
    if run.failures is not None:  # failures configured (docs/failures.md)
        _add_failures(jobs, run)
    if run.elastic is not None:  # elastic jobs (docs/elastic.md)
        goodput.add_elastic_columns(jobs, run)
    samples = run.samples
    # built when first read, from what was recorded up to now (the records only grow)
    events = partial(_events_frame, run, run.records.EVENT_NAMES, run.n_events)
    timeline = partial(_timeline_frame, run, samples)
    nodes = run.cluster.nodes
    meta = {
        "workload": run.workload.name,
        "cluster": run.cluster.name,
        "now": float(run.now),
        "resource_mode": bool(run.resource_mode),  # GPUs may be shared (docs/semantics.md)
        "total_gpus": int(run.capacity.sum()),
        "vcs": list(run.partition.vc_names),
        "vc_capacity": [int(c) for c in run.partition.vc_capacity],
        "busy_gpu_seconds": [float(b) for b in run.busy_gpu_seconds],
        "sample_means": partial(_sample_means, run, samples),
        "nodes": {
            "node": [str(n) for n in nodes["node"]],
            "rack": [str(r) for r in nodes["rack"]],
            "gpus": [int(g) for g in nodes["gpus"]],
            "vc": [None if pd.isna(v) else str(v) for v in nodes["vc"]],
            "gpu_type": [str(t) for t in nodes["gpu_type"]],  # what typed jobs may use
            # resource mode: CPU and memory per node (what explain words the room in)
            **{
                name: [int(v) for v in nodes[name]]
                for name in ("cpu_milli", "memory_mib")
                if run.resource_mode and name in nodes.columns
            },
        },
    }
    decisions = partial(build_decisions, run, run.n_rounds, run.n_tries)
    return Result(jobs, events, timeline, run.config.to_dict(), meta, decisions)


def _add_failures(jobs: pd.DataFrame, run: RunRecord) -> None:
    """With failures configured: each job's final ``state`` (COMPLETED, FAILED; with
    recorded fates its recorded state; None while it has not ended), the workload's
    ``recorded_state`` when it has one, its ``restarts`` after failures, the run time it
    lost to failures (``lost_seconds``) and spent on work it kept (``useful_seconds``), and
    the time it waited to run again after kills (``recovery_seconds``); with elastic jobs
    also the first two in GPU-seconds at the GPUs each run held (``lost_gpu_seconds``,
    ``useful_gpu_seconds``)."""
    ended = (run.status == DONE) | (run.status == FAILED)
    recorded = None
    if "state" in run.workload.jobs.columns:
        recorded = run.workload.jobs["state"].to_numpy(dtype=object)
        recorded = np.where(pd.isna(recorded), None, recorded)
    if run.config.fates == "recorded":  # each job ends as recorded (COMPLETED if not given)
        words = np.array([w or "COMPLETED" for w in recorded], dtype=object)
    else:
        words = np.where(run.status == DONE, "COMPLETED", "FAILED")
    jobs["state"] = np.where(ended, words, None).astype(object)
    if recorded is not None:  # (text; a state not recorded is missing)
        jobs["recorded_state"] = recorded.astype(object)
    jobs["restarts"] = run.failures.restarts
    jobs["lost_seconds"] = run.failures.lost
    jobs["useful_seconds"] = run.failures.useful
    jobs["recovery_seconds"] = run.failures.recovery
    if run.elastic is not None:  # the GPUs of an elastic job's runs vary (docs/elastic.md)
        jobs["lost_gpu_seconds"] = run.failures.lost_gpu
        jobs["useful_gpu_seconds"] = run.failures.useful_gpu


def _add_rates(jobs: pd.DataFrame, jobs_in: pd.DataFrame, run: RunRecord) -> None:
    """The application of each job and its rate on its last run (NaN: it never ran),
    after ``duration``."""
    at = jobs.columns.get_loc("duration") + 1
    ran = ~np.isnan(run.first_start)
    if "application" in jobs_in.columns:  # (elastic jobs have rates without applications)
        jobs.insert(at, "application", jobs_in["application"].to_numpy())
        at += 1
    jobs.insert(at, "rate", np.where(ran, run.rate, np.nan))
    if "batch_size" in jobs_in.columns:  # the batch size each job asks for (inputs/batch.py)
        jobs.insert(at + 1, "batch_size", jobs_in["batch_size"].to_numpy(dtype=float))
    if run.type_rates is not None:  # typed applications: finish-time fairness
        _, type_gpus, rates = run.type_rates
        done = run.status == STATUS_NAMES.index("done")
        counted = run.status != STATUS_NAMES.index("unschedulable")
        rho = fairness.ftf_rho(
            run.submit,
            np.where(done, run.end, np.nan),
            run.duration,
            run.gpus,
            counted,
            type_gpus,
            rates,
        )
        jobs.insert(at + 1, fairness.COLUMN, rho)


def _joined_names(names: np.ndarray, allocations: list[Any]) -> np.ndarray:
    """Comma-joined node names (or None) of a few allocations, as a plain object column."""
    return np.array(
        [None if nodes is None else ",".join(names[nodes].tolist()) for nodes in allocations],
        dtype=object,
    )


def _gpu_lists(run: RunRecord, allocations: list[Any]) -> pd.Categorical:
    """``node:gpu`` lists of each allocation (tuples of global GPU indices per node); read
    back by :func:`parse_gpu_list`."""
    node_of = np.repeat(np.arange(len(run.capacity)), run.capacity)
    names = run.node_names.tolist()
    offsets = run.gpu_offset.tolist()
    return labelled_categorical(
        allocations,
        lambda taken: ",".join(
            f"{names[node_of[g]]}:{g - offsets[node_of[g]]}" for slots in taken for g in slots
        ),
    )


def _events_frame(run: RunRecord, names: np.ndarray, count: int) -> pd.DataFrame:
    """The first ``count`` recorded events, in time order."""
    records = run.records
    time = np.array(records.event_time[:count], dtype=float)
    # records are in processing order; sort by time, keeping that order within a time
    order = np.argsort(time, kind="stable")
    at = order.tolist()
    job = np.array(records.event_job[:count], dtype=np.int64)[order]
    kind = np.array(records.event_kind[:count], dtype=np.int64)[order]
    cause = np.full(count, None, dtype=object)
    for position, i in enumerate(at):
        j = records.event_cause.get(i)
        if j is not None:
            cause[position] = run.job_ids[j]
    job_ids, vc, gpus = run.job_ids[job], run.job_vc[job], run.gpus[job]
    nodeless = job < 0  # a node going down or up (failures): no job; the node's GPUs
    if nodeless.any():
        job_ids = job_ids.astype(object)
        job_ids[nodeless] = None
        vc, gpus = vc.copy(), gpus.copy()
        vc[nodeless] = -1
        nodes = [records.event_nodes[i] for i in order[nodeless].tolist()]
        gpus[nodeless] = [int(run.capacity[n].sum()) for n in nodes]
    frame = pd.DataFrame(
        {
            "time": time[order],
            "event": pd.Categorical.from_codes(kind, categories=list(names)),
            "job_id": job_ids,
            "vc": pd.Categorical.from_codes(vc, categories=run.partition.vc_names),
            "num_gpus": gpus,
            "nodes": _node_lists(run.node_names, [records.event_nodes[i] for i in at]),
            "gpus": _gpu_lists(run, [records.event_gpus[i] for i in at]),
            "from_nodes": _joined_names(run.node_names, [records.event_from.get(i) for i in at]),
            "cause": cause,
            "borrowed": np.array([i in records.event_borrowed for i in at], dtype=bool),
        }
    )
    if run.elastic is not None:  # each run's rate and GPU count (docs/elastic.md)
        goodput.add_elastic_events(frame, run, at)
    return frame


def _sample_arrays(run: RunRecord, samples: list) -> dict[str, np.ndarray]:
    """The samples as arrays: ``starts`` and ``counts`` (one entry per run of identical
    samples), per-VC matrices (runs x VCs) and cluster-wide vectors."""
    from analysim.results.fragmentation import measure

    n_vc = len(run.partition.vc_names)
    names = ("used", "running", "waiting", "pending", "borrowed")
    if samples:
        starts, counts, snaps, captures = zip(*samples, strict=True)
    else:
        starts, counts, snaps, captures = (), (), (), ()
    # resource mode counts GPUs used in GPU milli / 1000, and adds FGD's fragmentation
    dtype = float if run.resource_mode else np.int64
    out = {
        name: np.array([s[i] for s in snaps], dtype=dtype).reshape(len(snaps), n_vc)
        for i, name in enumerate(names)
    }
    if run.resource_mode:
        out["fgd_frag_milli"] = np.array([s[5] for s in snaps], dtype=float)
    if run.failures is not None:  # the nodes and GPUs down, last in each sample
        out["down_nodes"] = np.array([s[-2] for s in snaps], dtype=np.int64)
        out["down_gpus"] = np.array([s[-1] for s in snaps], dtype=np.int64)
    out.update(measure(run, list(captures)))
    out["starts"] = np.array(starts, dtype=float)
    out["counts"] = np.array(counts, dtype=np.int64)
    return out


def _vc_free(run: RunRecord, used: np.ndarray) -> np.ndarray:
    """A VC's free GPUs: of its own nodes or quota; on an unpartitioned cluster, the pool's."""
    capacity = run.partition.vc_capacity.astype(float)
    total = float(run.capacity.sum())
    if run.cluster.partitioned:
        free = capacity[None, :] - used
    else:
        free = total - used.sum(axis=1)[:, None]
    return np.broadcast_to(free, used.shape)


def _jain_per_sample(run: RunRecord, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Per sample, Jain's index across the VCs that want GPUs of the service each gets,
    normalised by what it is due: held GPUs / min(GPUs its jobs want, its share), capped at
    1. NaN when no VC wants GPUs."""
    held = arrays["used"] + arrays["borrowed"]
    wanted = held + arrays["pending"]
    share = run.partition.vc_capacity.astype(float)
    if not run.cluster.partitioned:
        share = np.full(len(share), float(run.capacity.sum()) / max(len(share), 1))
    due = np.minimum(wanted, share[None, :])
    active = due > 0
    served = np.minimum(np.divide(held, due, out=np.zeros(due.shape), where=active), 1.0)
    total, squares, count = served.sum(axis=1), (served**2).sum(axis=1), active.sum(axis=1)
    out = np.divide(total**2, count * squares, out=np.ones(len(held)), where=squares > 0)
    out[count == 0] = np.nan
    return out


def _sample_means(run: RunRecord, samples: list) -> dict[str, dict[str, float]]:
    """Time averages over the samples, cluster-wide (``ALL``) and per VC."""
    arrays = _sample_arrays(run, samples)
    weights = arrays["counts"].astype(float)
    total = weights.sum()

    def mean(values: np.ndarray) -> float:
        return float((values * weights).sum() / total) if total else float("nan")

    free = _vc_free(run, arrays["used"])
    idle_waiting = (free > 0) & (arrays["waiting"] > 0)
    cluster_free = float(run.capacity.sum()) - arrays["used"].sum(1) - arrays["borrowed"].sum(1)
    if "down_gpus" in arrays:  # failures: GPUs down are not free
        cluster_free = cluster_free - arrays["down_gpus"]
    jain = _jain_per_sample(run, arrays)
    has_jain = ~np.isnan(jain)
    means = {
        ALL: {
            "avg_fragmented_gpus": mean(arrays["cluster_fragmented"]),
            "avg_blocked_jobs": mean(arrays["blocked"].sum(1)),
            "avg_frag_index": mean(arrays["cluster_frag_index"]),
            "idle_while_waiting": mean((cluster_free > 0) & (arrays["waiting"].sum(1) > 0)),
            "jain_fairness": float(
                (jain[has_jain] * weights[has_jain]).sum() / weights[has_jain].sum()
            )
            if has_jain.any()
            else float("nan"),
        }
    }
    if "fgd_frag_milli" in arrays:  # resource mode: FGD's fragmentation, cluster-wide
        means[ALL]["avg_fgd_frag_milli"] = mean(arrays["fgd_frag_milli"])
    for v, name in enumerate(run.partition.vc_names):
        means[name] = {
            "avg_fragmented_gpus": mean(arrays["fragmented"][:, v]),
            "avg_blocked_jobs": mean(arrays["blocked"][:, v]),
            "avg_frag_index": mean(arrays["frag_index"][:, v]),
            "idle_while_waiting": mean(idle_waiting[:, v]),
        }
    return means


def _timeline_frame(run: RunRecord, samples: list) -> pd.DataFrame:
    every = run.config.sample_every
    vcs = list(run.partition.vc_names)
    n_vc = len(vcs)
    arrays = _sample_arrays(run, samples)
    counts = arrays["counts"]
    offsets = np.concatenate([np.arange(c) for c in counts]) if len(counts) else np.zeros(0)
    times = np.repeat(arrays["starts"], counts) + offsets * every

    def expand(name: str) -> np.ndarray:
        return np.repeat(arrays[name], counts, axis=0)

    used, running, waiting, pending = (expand(n) for n in ("used", "running", "waiting", "pending"))
    borrowed, fragmented, blocked, index = (
        expand(n) for n in ("borrowed", "fragmented", "blocked", "frag_index")
    )
    held = used + borrowed
    capacity = run.partition.vc_capacity.astype(float)
    total = float(run.capacity.sum())
    vc_free = _vc_free(run, used)
    cluster = pd.DataFrame(
        {
            "time": times,
            "vc": ALL,
            "used_gpus": held.sum(axis=1),
            "free_gpus": total - held.sum(axis=1),
            "pending_gpus": pending.sum(axis=1),
            "running_jobs": running.sum(axis=1),
            "waiting_jobs": waiting.sum(axis=1),
            "utilization": held.sum(axis=1) / total,
            "borrowed_gpus": borrowed.sum(axis=1),
            "fragmented_gpus": expand("cluster_fragmented"),
            "blocked_jobs": blocked.sum(axis=1),
            "frag_index": expand("cluster_frag_index"),
        }
    )
    per_vc = pd.DataFrame(
        {
            "time": np.repeat(times, n_vc),
            "vc": np.tile(np.array(vcs, dtype=object), len(times)),
            "used_gpus": held.ravel(),
            "free_gpus": vc_free.ravel(),
            "pending_gpus": pending.ravel(),
            "running_jobs": running.ravel(),
            "waiting_jobs": waiting.ravel(),
            "utilization": np.divide(
                held, capacity[None, :], out=np.full(held.shape, np.nan), where=capacity > 0
            ).ravel(),
            "borrowed_gpus": borrowed.ravel(),
            "fragmented_gpus": fragmented.ravel(),
            "blocked_jobs": blocked.ravel(),
            "frag_index": index.ravel(),
        }
    )
    if "fgd_frag_milli" in arrays:  # resource mode: cluster-wide only (NaN per VC)
        cluster["fgd_frag_milli"] = expand("fgd_frag_milli")
        per_vc["fgd_frag_milli"] = np.nan
    if "down_nodes" in arrays:  # failures: the nodes down, cluster-wide (NaN per VC)
        down = expand("down_gpus")
        cluster["free_gpus"] = cluster["free_gpus"] - down
        cluster["down_nodes"] = expand("down_nodes").astype(float)
        cluster["down_gpus"] = down.astype(float)
        per_vc["down_nodes"] = per_vc["down_gpus"] = np.nan
    frame = pd.concat([cluster, per_vc], ignore_index=True)
    if not run.resource_mode:
        frame["free_gpus"] = frame["free_gpus"].astype(np.int64)
    return frame.sort_values(["time"], kind="stable", ignore_index=True)
