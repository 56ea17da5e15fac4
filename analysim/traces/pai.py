"""Alibaba PAI 2020 (``cluster-trace-gpu-v2020``): header-less job, task and machine tables.

``pai_job_table``: ``job_name, inst_id, user, status, start_time, end_time`` (``start_time``
is the submission); ``pai_task_table``: ``job_name, task_name, inst_num, status, start_time,
end_time, plan_cpu, plan_mem, plan_gpu, gpu_type`` (``plan_gpu`` in percent of one GPU);
``pai_machine_spec``: ``machine, gpu_type, cap_cpu, cap_mem, cap_gpu``. Times are seconds
(shifted by a constant); a time of 0 means "not recorded".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_SECONDS, seconds
from analysim.traces._common import (
    drop_duplicates,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
    machine_rows,
)
from analysim.traces._io import find_file, labels, parse_numbers, read_csv
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import PAI_NOT_FINAL, PAI_STATES

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
RUNNING = "Running"
WAITING = "Waiting"
VC = "default"


def _table(folder: Path, stem: str) -> Path:
    return find_file(folder, [f"{stem}.csv", stem], f"the PAI table {stem}")


def read_pai(
    folder: str | Path,
    *,
    trace_end: float | None = None,
    gpu_type_constraint: bool = True,
    drop_oversized: bool = False,
    name: str = "pai",
) -> Trace:
    """Read a PAI 2020 folder into a Workload and a heterogeneous Cluster.

    A job asks for the whole GPUs of its instances: each instance's ``plan_gpu`` rounded up
    to whole GPUs (``rounded_up_gpu`` when that rounds a fraction), times ``inst_num``,
    summed over the job's tasks. It is submitted at the job's ``start_time`` (seconds from
    the first submission) and runs from its first task's start to its last task's end; a
    ``Running`` job without an end runs until ``trace_end`` (default: the last time in the
    tables) and has ``censored=True``. Its ``gpu_type`` is the GPU type(s) its GPU tasks ran
    on (``"T4|V100"``), a constraint the placers honour; ``gpu_type_constraint=False``
    stores them as ``trace_gpu_type`` instead. The trace has no tenants: every job is in VC
    ``"default"`` on a cluster without VCs.
    """
    folder = Path(folder)
    report = LoadReport(main="jobs")
    nodes = _machines(_table(folder, "pai_machine_spec"), report)
    job_path = _table(folder, "pai_job_table")
    task_path = _table(folder, "pai_task_table")
    raw, first = read_csv(
        job_path,
        required=JOB_COLUMNS,
        strings=("job_name", "inst_id", "user", "status"),
        header=False,
    )
    tasks_raw, task_first = read_csv(
        task_path,
        required=TASK_COLUMNS,
        strings=("job_name", "task_name", "status", "gpu_type"),
        header=False,
    )
    filt = RowFilter(
        report,
        "jobs",
        job_path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw["job_name"],
        id_name="job_name",
    )
    job = keep_labels(filt, raw["job_name"], "job_name")
    user = keep_labels(filt, raw["user"], "user")
    status, _ = labels(raw["status"])
    submit, missing, bad = parse_numbers(raw["start_time"])
    filt.drop(missing | (submit == 0), "missing_value", "start_time", raw["start_time"])
    filt.drop(bad | (submit < 0), "bad_value", "start_time", raw["start_time"])
    filt.drop(submit > MAX_SECONDS, "out_of_range", "start_time", raw["start_time"])
    job_end, _, bad_end = parse_numbers(raw["end_time"])
    filt.drop(bad_end | (job_end < 0), "bad_value", "end_time", raw["end_time"])
    filt.drop(job_end > MAX_SECONDS, "out_of_range", "end_time", raw["end_time"])
    drop_duplicates(filt, job, "job_name")

    per_job = _task_totals(task_path, tasks_raw, task_first, job, report)
    aligned = per_job.reindex(job.where(filt.alive).to_numpy())
    filt.drop(aligned["tasks"].isna().to_numpy(), "no_tasks", "job_name", raw["job_name"])
    gpus = aligned["gpus"].fillna(0).to_numpy()
    filt.drop(gpus == 0, "cpu_only", "plan_gpu*inst_num/100", aligned["gpus_exact"].to_numpy())
    task_start = aligned["start"].to_numpy(dtype=float)
    task_end = aligned["end"].to_numpy(dtype=float)
    waiting = (status == WAITING).to_numpy(dtype=bool, na_value=False)
    filt.drop(np.isnan(task_start) | waiting, "never_started", "status", status)

    times = np.concatenate([job_end[filt.alive], submit[filt.alive], task_end, task_start])
    times = times[np.isfinite(times) & (np.abs(times) <= MAX_SECONDS)]
    if trace_end is None:
        end_of_trace = float(times.max()) if len(times) else 0.0
    else:
        end_of_trace = seconds(trace_end, "read_pai: trace_end", positive=False)
    end = np.where(np.isnan(task_end) | (task_end == 0), job_end, task_end)
    running = (status == RUNNING).to_numpy(dtype=bool, na_value=False)
    censored = running & (np.isnan(end) | (end == 0))
    end = np.where(censored, end_of_trace, end)
    filt.drop(np.isnan(end) | (end == 0), "missing_value", "end_time", raw["end_time"])
    duration = end - task_start
    filt.drop(duration <= 0, "nonpositive_duration", "end_time", raw["end_time"])
    fraction = aligned["gpus_exact"].to_numpy() < gpus - 1e-9
    exact = aligned["gpus_exact"].to_numpy()
    filt.flag(fraction, "rounded_up_gpu", "plan_gpu*inst_num/100", exact)
    filt.flag(censored, "censored", "end_time", raw["end_time"])

    trace_state, state = keep_states(filt, raw["status"], "status", PAI_STATES, PAI_NOT_FINAL)
    known = submit[filt.alive]
    origin = float(known.min()) if len(known) else 0.0
    jobs = pd.DataFrame(
        {
            "job_id": job,
            "vc": VC,
            "user": user,
            "submit_time": submit - origin,
            "duration": duration,
            "num_gpus": gpus,
            "gpu_type" if gpu_type_constraint else "trace_gpu_type": aligned["types"].to_numpy(),
            "trace_state": trace_state,
            "state": state,
            "censored": censored,
        }
    )
    cluster = Cluster.from_frame(nodes, name=name)
    return finish(filt, jobs, cluster, path=job_path, name=name, drop_oversized=drop_oversized)


def _task_totals(
    path: Path, raw: pd.DataFrame, first: int, jobs: pd.Series, report: LoadReport
) -> pd.DataFrame:
    """Per job name: tasks, exact and whole GPUs, GPU types, first start and last end."""
    filt = RowFilter(
        report,
        "tasks",
        path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw["job_name"],
        id_name="job_name",
    )
    job = keep_labels(filt, raw["job_name"], "job_name")
    filt.drop(~job.isin(jobs.dropna().unique()).to_numpy(), "orphan_task", "job_name", job)
    instances = keep_counts(filt, raw["inst_num"], "inst_num")
    plan, _, bad = parse_numbers(raw["plan_gpu"])
    filt.drop(bad | (plan < 0), "bad_value", "plan_gpu", raw["plan_gpu"])
    plan = np.nan_to_num(plan)
    start, _, bad_start = parse_numbers(raw["start_time"])
    end, _, bad_end = parse_numbers(raw["end_time"])
    filt.drop(bad_start, "bad_value", "start_time", raw["start_time"])
    filt.drop(bad_end, "bad_value", "end_time", raw["end_time"])
    for column, values in (("start_time", start), ("end_time", end), ("plan_gpu", plan)):
        limit = MAX_SECONDS if column != "plan_gpu" else 100.0 * MAX_JOB_GPUS
        filt.drop(np.abs(values) > limit, "out_of_range", column, raw[column])
    gpu_type, _ = labels(raw["gpu_type"])
    keep = filt.alive
    uses_gpu = plan > 0
    frame = pd.DataFrame(
        {
            "job": job[keep].to_numpy(dtype=object),
            "tasks": 1,
            "gpus_exact": (plan / 100.0 * instances)[keep],
            "gpus": (np.ceil(plan / 100.0 - 1e-9) * instances)[keep],
            "start": np.where(start > 0, start, np.nan)[keep],
            "end": np.where(end > 0, end, np.nan)[keep],
            "type": gpu_type.where(uses_gpu & gpu_type.notna(), None)[keep].to_numpy(dtype=object),
        }
    )
    grouped = frame.groupby("job", sort=False)
    totals = grouped.agg(
        tasks=("tasks", "sum"),
        gpus_exact=("gpus_exact", "sum"),
        gpus=("gpus", "sum"),
        start=("start", "min"),
        end=("end", "max"),
    )
    typed = frame.dropna(subset=["type"])
    types = typed.groupby("job", sort=False)["type"].agg(lambda t: "|".join(sorted(set(t))))
    totals["types"] = types.reindex(totals.index).astype(object)
    totals["types"] = totals["types"].where(totals["types"].notna(), None)
    return totals


def _machines(path: Path, report: LoadReport) -> pd.DataFrame:
    """The machine table as a nodes table: GPU machines only, racks by GPU type."""
    raw, first = read_csv(
        path, required=MACHINE_COLUMNS, strings=("machine", "gpu_type"), header=False
    )
    filt, machine, gpus = machine_rows(report, path, raw, first, "machine", "cap_gpu")
    gpu_type = keep_labels(filt, raw["gpu_type"], "gpu_type")
    drop_duplicates(filt, machine, "machine")
    keep = filt.alive
    if not keep.any():
        raise TraceError(path, "no machine with GPUs:\n" + report.summary())
    return pd.DataFrame(
        {
            "node": machine[keep].to_numpy(dtype=object),
            "rack": gpu_type[keep].to_numpy(dtype=object),
            "gpus": gpus[keep].astype(np.int64),
            "gpu_type": gpu_type[keep].to_numpy(dtype=object),
        }
    )
