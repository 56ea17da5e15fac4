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

from analysim.cluster import Cluster
from analysim.traces._common import drop_duplicates, finish, keep_counts, keep_labels
from analysim.traces._io import existing_file, labels, parse_numbers, read_csv
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError

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
    name: str = "openb",
) -> Trace:
    """Read an openb pod list and node list into a Workload and a heterogeneous Cluster.

    Every pod that asks for a GPU and was scheduled becomes a job submitted at its
    ``creation_time`` that runs from ``scheduled_time`` to ``deletion_time``. A share of one
    GPU (``gpu_milli`` < 1000) is rounded up to one whole GPU (``rounded_up_gpu``); a pod
    still ``Running`` at ``trace_end`` (default: the last deletion time in the file) runs
    until then and has ``censored=True`` (``censored``). ``gpu_spec`` becomes the job's
    ``gpu_type`` constraint. The trace has no tenants: every job is in VC ``"default"`` on a
    cluster without VCs; the pod's QoS class is kept in a ``qos`` column.
    """
    report = LoadReport(main="pods")
    cluster = _cluster(Path(nodes), name, report)
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
    created = keep_counts(filt, raw["creation_time"], "creation_time", whole=False)
    scheduled, _, bad = parse_numbers(raw["scheduled_time"])
    filt.drop(bad | (scheduled < 0), "bad_value", "scheduled_time", raw["scheduled_time"])
    deleted, deleted_missing, bad = parse_numbers(raw["deletion_time"])
    filt.drop(bad | (deleted < 0), "bad_value", "deletion_time", raw["deletion_time"])
    drop_duplicates(filt, pod, "name")
    filt.drop(gpus == 0, "cpu_only", "num_gpu", raw["num_gpu"])
    filt.drop(np.isnan(scheduled), "never_started", "pod_phase", raw["pod_phase"])

    end_of_trace = float(np.nanmax(deleted)) if trace_end is None else float(trace_end)
    running = (phase == RUNNING).to_numpy(dtype=bool, na_value=False)
    with np.errstate(invalid="ignore"):
        censored = running & (deleted_missing | (deleted >= end_of_trace))
    filt.drop(deleted_missing & ~censored, "missing_value", "deletion_time", raw["deletion_time"])
    end = np.where(censored, end_of_trace, deleted)
    duration = end - scheduled
    filt.drop(duration <= 0, "nonpositive_duration", "deletion_time", raw["deletion_time"])
    fraction = (gpus == 1) & (milli > 0) & (milli < 1000)
    filt.flag(fraction, "rounded_up_gpu", "gpu_milli", raw["gpu_milli"])
    filt.flag(censored, "censored", "deletion_time", raw["deletion_time"])

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
            "state": phase,
            "gpu_milli": milli,
            "censored": censored,
        }
    )
    if "qos" in raw.columns:
        jobs["qos"] = raw["qos"]
    return finish(filt, jobs, cluster, path=path, name=name, drop_oversized=drop_oversized)


def _constraint(spec: pd.Series | None, n: int) -> pd.Series:
    if spec is None:
        return pd.Series([None] * n, dtype=object)
    out = spec.astype(object)
    return out.where(spec.notna() & (spec != ""), None)


def _cluster(path: Path, name: str, report: LoadReport) -> Cluster:
    """The node list as a Cluster: one node per GPU machine, racks by GPU model."""
    path = existing_file(path, "an openb node list")
    raw, first = read_csv(path, required=NODE_COLUMNS, strings=("sn", "model"))
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
    gpus = keep_counts(filt, raw["gpu"], "gpu")
    filt.drop(gpus == 0, "cpu_only", "gpu", raw["gpu"])
    model, missing = labels(raw["model"])
    filt.drop(missing, "missing_value", "model", raw["model"])
    drop_duplicates(filt, node, "sn")
    keep = filt.alive
    if not keep.any():
        raise TraceError(path, "no GPU node in the node list:\n" + report.summary())
    nodes = pd.DataFrame(
        {
            "node": node[keep].to_numpy(dtype=object),
            "rack": model[keep].to_numpy(dtype=object),
            "gpus": gpus[keep].astype(np.int64),
            "gpu_type": model[keep].to_numpy(dtype=object),
        }
    )
    return Cluster.from_frame(nodes, name=name)
