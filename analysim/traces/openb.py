"""Alibaba GPU cluster trace 2023 ("openb"): a pod list and a node list.

Pods: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time`` (times in seconds from the trace start;
``gpu_milli`` < 1000 is a share of one GPU; ``gpu_spec`` like ``V100M16|V100M32`` restricts
the GPU models). Nodes: ``sn, cpu_milli, memory_mib, gpu, model``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.validation import MAX_NODE_AMOUNT, seconds
from analysim.traces._common import (
    drop_duplicates,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
)
from analysim.traces._io import existing_file, labels, parse_numbers, read_csv
from analysim.traces.bundled import resolve
from analysim.traces.report import LoadReport, RowFilter, SharedTrace, Trace, TraceError
from analysim.traces.states import OPENB_NOT_FINAL, OPENB_STATES

POD_COLUMNS = (
    "name",
    "num_gpu",
    "gpu_milli",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
POD_OPTIONAL = ("gpu_spec", "qos", "cpu_milli", "memory_mib")
NODE_COLUMNS = ("sn", "gpu", "model")
RUNNING = "Running"
VC = "default"
USER = "unknown"


def read_openb(
    pods: str | Path,
    nodes: str | Path,
    *,
    trace_end: float | None = None,
    drop_oversized: bool = False,
    round_up_shares: bool = False,
    name: str = "openb",
) -> Trace:
    """Read an openb pod list and node list into a Workload and a heterogeneous Cluster.

    Every pod that was scheduled becomes a job submitted at its ``creation_time`` that runs
    from ``scheduled_time`` to ``deletion_time``, with its share of one GPU (``gpu_milli`` <
    1000, counted as ``gpu_share``), its CPU (``cpu_milli``) and memory (``memory_mib``); a
    pod without GPUs is a CPU-only job (``cpu_task``); the nodes keep their CPU and memory.
    Such a workload runs in the engine's resource mode (``docs/semantics.md``). Pods that ask
    for more CPU or memory than any node has are dropped (``oversized``), and so are shares
    outside 1-1000 or with ``num_gpu`` other than 1 (``bad_value``).

    ``round_up_shares=True`` reads the trace as whole GPUs (the reader's former behaviour):
    a share becomes one whole GPU (``rounded_up_gpu``), CPU-only pods are dropped
    (``cpu_only``), the nodes carry GPUs only, and the pods' requests are kept for reference
    as ``pod_gpu_milli``, ``pod_cpu_milli`` and ``pod_memory_mib`` (the engine then ignores
    them).

    A pod still ``Running`` at ``trace_end`` (default: the last deletion time in the file,
    or the last creation or scheduling time when no pod has one) runs until then and has
    ``censored=True`` (``censored``). ``gpu_spec`` becomes the job's ``gpu_type``
    constraint. The trace has no tenants: every job is in VC ``"default"`` on a cluster
    without VCs; the pod's QoS class is kept in a ``qos`` column.
    """
    report = LoadReport(main="pods")
    resources = () if round_up_shares else ("cpu_milli", "memory_mib")
    cluster = _cluster(Path(nodes), name, report, resources)
    path = existing_file(pods, "an openb pod list")
    raw, first = read_csv(
        path,
        required=POD_COLUMNS,
        optional=POD_OPTIONAL,
        strings=("name", "pod_phase", "gpu_spec", "qos"),
    )
    filt = RowFilter(
        report,
        "pods",
        path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw["name"],
        id_name="name",
    )
    pod = keep_labels(filt, raw["name"], "name")
    phase = keep_labels(filt, raw["pod_phase"], "pod_phase")
    gpus = keep_counts(filt, raw["num_gpu"], "num_gpu")
    milli = keep_counts(filt, raw["gpu_milli"], "gpu_milli")
    filt.drop(milli > 1000, "bad_value", "gpu_milli", raw["gpu_milli"])
    if not round_up_shares:
        filt.drop((gpus > 0) & (milli < 1), "bad_value", "gpu_milli", raw["gpu_milli"])
        filt.drop((gpus > 1) & (milli < 1000), "bad_value", "num_gpu", raw["num_gpu"])
        amounts = _amounts(filt, raw, cluster)
    created = keep_counts(filt, raw["creation_time"], "creation_time", whole=False)
    scheduled, _, bad = parse_numbers(raw["scheduled_time"])
    filt.drop(bad | (scheduled < 0), "bad_value", "scheduled_time", raw["scheduled_time"])
    with np.errstate(invalid="ignore"):  # a pod cannot be scheduled before it was created
        early = scheduled < created
    filt.drop(early, "bad_value", "scheduled_time", raw["scheduled_time"])
    deleted, deleted_missing, bad = parse_numbers(raw["deletion_time"])
    filt.drop(bad | (deleted < 0), "bad_value", "deletion_time", raw["deletion_time"])
    drop_duplicates(filt, pod, "name")
    if round_up_shares:
        filt.drop(gpus == 0, "cpu_only", "num_gpu", raw["num_gpu"])
    else:  # a CPU-only pod that asks for nothing is no job
        nothing = (gpus == 0) & (amounts["cpu_milli"] + amounts["memory_mib"] <= 0)
        filt.drop(nothing, "bad_value", "num_gpu", raw["num_gpu"])
    filt.drop(np.isnan(scheduled), "never_started", "pod_phase", raw["pod_phase"])

    end_of_trace = _end_of_trace(trace_end, deleted, created, scheduled)
    running = (phase == RUNNING).to_numpy(dtype=bool, na_value=False)
    with np.errstate(invalid="ignore"):
        censored = running & (deleted_missing | (deleted >= end_of_trace))
    filt.drop(deleted_missing & ~censored, "missing_value", "deletion_time", raw["deletion_time"])
    end = np.where(censored, end_of_trace, deleted)
    duration = end - scheduled
    filt.drop(duration <= 0, "nonpositive_duration", "deletion_time", raw["deletion_time"])
    fraction = (gpus == 1) & (milli > 0) & (milli < 1000)
    filt.flag(
        fraction,
        "rounded_up_gpu" if round_up_shares else "gpu_share",
        "gpu_milli",
        raw["gpu_milli"],
    )
    if not round_up_shares:
        filt.flag(gpus == 0, "cpu_task", "num_gpu", raw["num_gpu"])
    filt.flag(censored, "censored", "deletion_time", raw["deletion_time"])

    trace_state, state = keep_states(
        filt, raw["pod_phase"], "pod_phase", OPENB_STATES, OPENB_NOT_FINAL
    )
    spec = labels(raw["gpu_spec"])[0] if "gpu_spec" in raw.columns else None
    jobs = pd.DataFrame(
        {
            "job_id": pod,
            "vc": VC,
            "user": USER,
            "submit_time": created,
            "duration": duration,
            "num_gpus": gpus,
            "gpu_type": _constraint(spec, len(raw)),
            "trace_state": trace_state,
            "state": state,
            "censored": censored,
        }
    )
    if "qos" in raw.columns:
        jobs["qos"] = raw["qos"]
    if round_up_shares:  # kept for reference under other names: the engine ignores them
        jobs["pod_gpu_milli"] = milli
        for column in ("cpu_milli", "memory_mib"):
            if column in raw.columns:
                jobs[f"pod_{column}"] = pd.to_numeric(raw[column], errors="coerce")
    else:
        jobs["gpu_milli"] = np.where(gpus == 0, 0, np.nan_to_num(milli))
        for column, values in amounts.items():
            jobs[column] = values
    return finish(filt, jobs, cluster, path=path, name=name, drop_oversized=drop_oversized)


def _end_of_trace(
    trace_end: float | None, deleted: np.ndarray, created: np.ndarray, scheduled: np.ndarray
) -> float:
    """``trace_end`` checked, or the last deletion time of the file; a file whose pods have
    none ends at its last creation or scheduling time (0 for a file without any time)."""
    if trace_end is not None:
        return seconds(trace_end, "read_openb: trace_end", positive=False)
    for times in (deleted, np.concatenate([created, scheduled])):
        known = times[np.isfinite(times)]
        if len(known):
            return float(known.max())
    return 0.0


def _constraint(spec: pd.Series | None, n: int) -> pd.Series:
    if spec is None:
        return pd.Series([None] * n, dtype=object)
    out = spec.astype(object)
    return out.where(spec.notna() & (spec != ""), None)


def _cluster(path: Path, name: str, report: LoadReport, resources: tuple[str, ...] = ()) -> Cluster:
    """The node list as a Cluster: one node per GPU machine, racks by GPU model, with the
    node columns in ``resources`` (CPU, memory) as capacities."""
    nodes = _node_table(path, report, resources=resources)
    return Cluster.from_frame(nodes.assign(rack=nodes["gpu_type"]), name=name)


def _amounts(filt: RowFilter, raw: pd.DataFrame, cluster: Cluster) -> dict[str, np.ndarray]:
    """The pods' CPU and memory (0 where the column is absent; an empty cell is dropped as
    ``missing_value``, as :func:`read_openb_tasks` does); a pod asking for more than any
    node has is dropped (``oversized``)."""
    out = {}
    for column in ("cpu_milli", "memory_mib"):
        if column not in raw.columns:
            out[column] = np.zeros(len(raw))
            continue
        values = keep_counts(filt, raw[column], column, high=MAX_NODE_AMOUNT)
        most = int(cluster.nodes[column].max()) if column in cluster.nodes.columns else None
        if most is not None:
            filt.drop(values > most, "oversized", column, raw[column])
        out[column] = np.nan_to_num(values)
    return out


TASK_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


def read_openb_tasks(
    pods: str | Path, nodes: str | Path | None = None, *, round_up_shares: bool = False
) -> SharedTrace:
    """Read an openb trace for the saturation experiment (``analysim.saturate``): every pod
    as a task with its CPU, memory and GPU share (CPU-only and never-started pods included:
    no times are needed), and every node with its CPU, memory and GPUs.

    ``pods`` is the pod list, or a folder (``"bundled:openb"``) holding ``*pod_list*.csv``
    and ``*node_list*.csv`` when ``nodes`` is omitted. Bad rows are dropped and counted by
    reason in the report: a share outside 1-1000 or with ``num_gpu`` other than 1
    (``bad_value``), negative or non-numeric values, duplicate names, and tasks asking for
    more CPU, memory or GPUs than any node has (``oversized``). ``round_up_shares=True``
    turns every share into one whole GPU (``gpu_milli`` 1000, counted as ``rounded_up_gpu``)
    to compare against a cluster without sharing; off by default.
    """
    if nodes is None:
        folder = resolve(pods)
        pods = _only(folder, "*pod_list*.csv", "an openb pod list")
        nodes = _only(folder, "*node_list*.csv", "an openb node list")
    report = LoadReport(main="tasks")
    node_frame = _shared_nodes(Path(nodes), report)
    path = existing_file(pods, "an openb pod list")
    raw, first = read_csv(
        path, required=TASK_COLUMNS, optional=("gpu_spec",), strings=("name", "gpu_spec")
    )
    filt = RowFilter(
        report,
        "tasks",
        path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw["name"],
        id_name="name",
    )
    name = keep_labels(filt, raw["name"], "name")
    cpu = keep_counts(filt, raw["cpu_milli"], "cpu_milli", high=MAX_NODE_AMOUNT)
    memory = keep_counts(filt, raw["memory_mib"], "memory_mib", high=MAX_NODE_AMOUNT)
    gpus = keep_counts(filt, raw["num_gpu"], "num_gpu")
    milli = keep_counts(filt, raw["gpu_milli"], "gpu_milli")
    with np.errstate(invalid="ignore"):
        filt.drop(
            (gpus > 0) & ((milli < 1) | (milli > 1000)), "bad_value", "gpu_milli", raw["gpu_milli"]
        )
        filt.drop((gpus > 1) & (milli < 1000), "bad_value", "num_gpu", raw["num_gpu"])
        for column, need, have in (
            ("cpu_milli", cpu, node_frame["cpu_milli"].max()),
            ("memory_mib", memory, node_frame["memory_mib"].max()),
            ("num_gpu", gpus, node_frame["gpus"].max()),
        ):
            filt.drop(need > have, "oversized", column, raw[column])
    drop_duplicates(filt, name, "name")
    filt.flag(gpus == 0, "cpu_task", "num_gpu", raw["num_gpu"])
    share = (gpus == 1) & (milli < 1000)
    filt.flag(
        share, "rounded_up_gpu" if round_up_shares else "gpu_share", "gpu_milli", raw["gpu_milli"]
    )
    if round_up_shares:
        milli = np.where(share, 1000.0, milli)
    spec = labels(raw["gpu_spec"])[0] if "gpu_spec" in raw.columns else None
    keep = filt.alive
    tasks = pd.DataFrame(
        {
            "name": name[keep].to_numpy(dtype=object),
            "cpu_milli": cpu[keep].astype(np.int64),
            "memory_mib": memory[keep].astype(np.int64),
            "num_gpus": gpus[keep].astype(np.int64),
            "gpu_milli": np.where(gpus[keep] == 0, 0, milli[keep]).astype(np.int64),
            "gpu_type": _constraint(spec, len(raw))[keep].to_numpy(dtype=object),
        }
    )
    if tasks.empty:
        raise TraceError(path, "no task is left:\n" + report.summary())
    return SharedTrace(tasks, node_frame, report)


def _only(folder: Path, pattern: str, what: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise TraceError(
            folder,
            f"expected one {what} ({pattern}) in the folder, found {[f.name for f in found]}",
        )
    return found[0]


def _shared_nodes(path: Path, report: LoadReport) -> pd.DataFrame:
    """The node list with CPU and memory: ``node, cpu_milli, memory_mib, gpus, gpu_type``."""
    return _node_table(path, report, resources=("cpu_milli", "memory_mib"))


def _node_table(path: Path, report: LoadReport, resources: tuple[str, ...] = ()) -> pd.DataFrame:
    """The GPU nodes of an openb node list (``sn, gpu, model`` and the ``resources``
    columns), bad and CPU-only rows dropped and counted: ``node, <resources>, gpus,
    gpu_type``."""
    path = existing_file(path, "an openb node list")
    raw, first = read_csv(path, required=(*NODE_COLUMNS, *resources), strings=("sn", "model"))
    filt = RowFilter(
        report,
        "nodes",
        path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw["sn"],
        id_name="sn",
    )
    node = keep_labels(filt, raw["sn"], "sn")
    amounts = {
        column: keep_counts(filt, raw[column], column, high=MAX_NODE_AMOUNT) for column in resources
    }
    gpus = keep_counts(filt, raw["gpu"], "gpu")
    filt.drop(gpus == 0, "cpu_only", "gpu", raw["gpu"])
    model, missing = labels(raw["model"])
    filt.drop(missing, "missing_value", "model", raw["model"])
    drop_duplicates(filt, node, "sn")
    keep = filt.alive
    if not keep.any():
        raise TraceError(path, "no GPU node in the node list:\n" + report.summary())
    return pd.DataFrame(
        {
            "node": node[keep].to_numpy(dtype=object),
            **{column: amount[keep].astype(np.int64) for column, amount in amounts.items()},
            "gpus": gpus[keep].astype(np.int64),
            "gpu_type": model[keep].to_numpy(dtype=object),
        }
    )
