"""Microsoft Philly traces: ``cluster_job_log`` (JSON) and ``cluster_machine_list`` (CSV).

``cluster_job_log`` is a JSON list of jobs ``{status, vc, jobid, user, submitted_time,
attempts: [{start_time, end_time, detail: [{ip, gpus: [...]}]}]}`` (times
``YYYY-MM-DD HH:MM:SS``; a time may be ``null`` or ``"None"``; a job still running at the
snapshot has no ``end_time`` on its last attempt). ``cluster_machine_list`` lists
``machineId, number of GPUs, single GPU mem``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.traces._common import (
    blank_far_dates,
    drop_duplicates,
    drop_far_dates,
    epoch_seconds,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
    machine_rows,
    moment,
)
from analysim.traces._io import _first_line, find_file, labels, load_json, parse_times, read_csv
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import PHILLY_NOT_FINAL, PHILLY_STATES

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
JOB_KEYS = ("jobid", "vc", "user", "status", "submitted_time", "attempts")
ATTEMPT_KEYS = ("start_time", "end_time", "detail")
MACHINE_COLUMNS = ("machineId", "number of GPUs", "single GPU mem")
MISSING_WORDS = ("None", "null", "NA")


def read_philly(
    folder: str | Path,
    *,
    vc_quotas: Mapping[str, int] | None = None,
    start: str | pd.Timestamp | None = None,
    end: str | pd.Timestamp | None = None,
    trace_end: str | pd.Timestamp | None = None,
    drop_oversized: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a Philly ``trace-data`` folder into a Workload and a Cluster.

    A job's ``duration`` is its total run time over its attempts (attempts without a start
    or end time are left out and counted as ``skipped_attempt``); a job whose last attempt
    has no end ran until ``trace_end`` (default: the last time in the log) and has
    ``censored=True``. Its GPUs are those of its first attempt's detail. Times are seconds
    from ``start`` (default: the first submission). The Cluster has the listed machines
    (GPU type: the single-GPU memory, e.g. ``"24GB"``) and the VCs as GPU quotas over them:
    ``vc_quotas`` if given (jobs of other VCs are dropped as ``unknown_vc``), otherwise
    shares of all GPUs in proportion to each VC's demand in GPU-seconds.
    """
    folder = Path(folder)
    log = find_file(folder, ["cluster_job_log", "cluster_job_log.json"], "the Philly job log")
    machines = find_file(
        folder, ["cluster_machine_list", "cluster_machine_list.csv"], "the Philly machine list"
    )
    start_at, end_at = moment(start, "start"), moment(end, "end")
    report = LoadReport(main="jobs")
    nodes = _machines(machines, report)
    table, attempts = _flatten(log, load_json(log))
    filt = RowFilter(
        report,
        "jobs",
        log.name,
        len(table),
        lambda i: f"job {i}",
        ids=table["jobid"],
        id_name="jobid",
    )
    job_id = keep_labels(filt, table["jobid"], "jobid")
    vc = keep_labels(filt, table["vc"], "vc")
    user = keep_labels(filt, table["user"], "user")
    submit, missing, bad = parse_times(
        table["submitted_time"],
        TIME_FORMAT,
        path=log,
        column="submitted_time",
        missing=MISSING_WORDS,
        locate=lambda i: f"job {i}",
    )
    filt.drop(missing, "missing_value", "submitted_time", table["submitted_time"])
    filt.drop(bad, "unparseable_time", "submitted_time", table["submitted_time"])
    drop_far_dates(filt, submit, "submitted_time", table["submitted_time"])
    drop_duplicates(filt, job_id, "jobid")

    run = _run_times(log, attempts, len(table), trace_end, submit)
    filt.drop(run["started"] == 0, "never_started", "attempts", table["attempts_count"])
    gpus = keep_counts(filt, table["gpus"], "gpus")
    filt.drop(gpus == 0, "cpu_only", "gpus", table["gpus"])
    known = submit[filt.alive & ~np.isnan(submit)]
    origin = (
        epoch_seconds(start_at)
        if start_at is not None
        else (float(known.min()) if len(known) else 0.0)
    )
    outside = submit < origin
    if end_at is not None:
        outside |= submit > epoch_seconds(end_at)
    filt.drop(outside, "outside_window", "submitted_time", table["submitted_time"])
    duration = run["duration"]
    filt.drop(duration <= 0, "nonpositive_duration", "duration", duration)
    filt.flag(run["skipped"] > 0, "skipped_attempt", "attempts", table["attempts_count"])
    filt.flag(run["censored"], "censored", "attempts", table["attempts_count"])

    trace_state, state = keep_states(
        filt, table["status"], "status", PHILLY_STATES, PHILLY_NOT_FINAL
    )
    jobs = pd.DataFrame(
        {
            "job_id": job_id,
            "vc": vc,
            "user": user,
            "submit_time": submit - origin,
            "duration": duration,
            "num_gpus": gpus,
            "trace_state": trace_state,
            "state": state,
            "censored": run["censored"],
        }
    )
    quotas = dict(vc_quotas) if vc_quotas is not None else _shares(jobs, filt.alive, nodes)
    cluster = Cluster.from_frame(nodes, quotas=quotas, name=name or "philly")
    return finish(
        filt, jobs, cluster, path=log, name=name or "philly", drop_oversized=drop_oversized
    )


def _flatten(path: Path, data: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per job and one per attempt, checking the JSON's structure as it goes."""
    if not isinstance(data, list):
        raise TraceError(
            path, "the top level is not a list", expected="a JSON list of jobs", found=_kind(data)
        )
    if not data:
        raise TraceError(path, "the list of jobs is empty", expected="at least one job")
    rows, attempt_rows = [], []
    for k, job in enumerate(data):
        where = f"job {k}"
        if not isinstance(job, dict):
            raise TraceError(
                path, "not a job object", where=where, expected="a JSON object", found=_kind(job)
            )
        for key in JOB_KEYS:
            if key not in job:
                raise TraceError(
                    path,
                    "missing key",
                    where=where,
                    column=key,
                    expected="keys " + ", ".join(JOB_KEYS),
                    found=", ".join(map(str, job)),
                )
        attempts = job["attempts"]
        if not isinstance(attempts, list):
            raise TraceError(
                path,
                "attempts is not a list",
                where=where,
                column="attempts",
                expected="a list of attempts",
                found=_kind(attempts),
            )
        gpus = 0
        for a, attempt in enumerate(attempts):
            gpu_count = _attempt_gpus(path, f"{where} attempt {a}", attempt)
            if a == 0:
                gpus = gpu_count
            attempt_rows.append((k, a, _text(attempt["start_time"]), _text(attempt["end_time"])))
        rows.append(
            {
                "jobid": _text(job["jobid"]),
                "vc": _text(job["vc"]),
                "user": _text(job["user"]),
                "status": _text(job["status"]),
                "submitted_time": _text(job["submitted_time"]),
                "attempts_count": len(attempts),
                "gpus": gpus,
            }
        )
    table = pd.DataFrame(rows)
    attempts_frame = pd.DataFrame(
        attempt_rows, columns=["job", "attempt", "start_time", "end_time"]
    )
    return table, attempts_frame


def _attempt_gpus(path: Path, where: str, attempt: Any) -> int:
    if not isinstance(attempt, dict) or any(key not in attempt for key in ATTEMPT_KEYS):
        raise TraceError(
            path,
            "not an attempt object",
            where=where,
            expected="an object with keys " + ", ".join(ATTEMPT_KEYS),
            found=_kind(attempt) if not isinstance(attempt, dict) else ", ".join(attempt),
        )
    detail = attempt["detail"] if attempt["detail"] is not None else []
    if not isinstance(detail, list):
        raise TraceError(
            path, "detail is not a list", where=where, column="detail", found=_kind(detail)
        )
    count = 0
    for d, machine in enumerate(detail):
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            raise TraceError(
                path,
                "no list of GPUs",
                where=f"{where} detail {d}",
                column="gpus",
                expected='{"ip": ..., "gpus": [...]}',
                found=_kind(machine),
            )
        count += len(gpus)
    return count


def _run_times(
    path: Path,
    attempts: pd.DataFrame,
    n_jobs: int,
    trace_end: str | pd.Timestamp | None,
    submit: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per job: total run time over its attempts, attempts started, skipped, censored."""
    zeros = np.zeros(n_jobs)
    if attempts.empty:
        return {
            "duration": zeros,
            "started": zeros,
            "skipped": zeros,
            "censored": np.zeros(n_jobs, dtype=bool),
        }
    job = attempts["job"].to_numpy()
    number = attempts["attempt"].to_numpy()

    def locate(i: int) -> str:
        return f"job {job[i]} attempt {number[i]}"

    kw = {"path": path, "missing": MISSING_WORDS, "locate": locate}
    start, _, _ = parse_times(attempts["start_time"], TIME_FORMAT, column="start_time", **kw)
    end, end_missing, _ = parse_times(attempts["end_time"], TIME_FORMAT, column="end_time", **kw)
    start, end = blank_far_dates(start), blank_far_dates(end)  # skipped, like unparseable ones
    submit = blank_far_dates(submit)
    last = (
        attempts.groupby("job")["attempt"].transform("max").to_numpy()
        == attempts["attempt"].to_numpy()
    )
    if trace_end is not None:
        end_of_trace = epoch_seconds(moment(trace_end, "trace_end"))
    else:
        end_of_trace = float(np.nanmax(np.concatenate([end, start, submit, [-np.inf]])))
    open_end = last & end_missing & ~np.isnan(start)
    end = np.where(open_end, end_of_trace, end)
    length = end - start
    valid = ~np.isnan(length) & (length >= 0)
    duration = np.bincount(job[valid], weights=length[valid], minlength=n_jobs)
    started = np.bincount(job[~np.isnan(start)], minlength=n_jobs)
    skipped = np.bincount(job[~valid], minlength=n_jobs)
    censored = np.zeros(n_jobs, dtype=bool)
    censored[job[open_end]] = True
    return {"duration": duration, "started": started, "skipped": skipped, "censored": censored}


def _machines(path: Path, report: LoadReport) -> pd.DataFrame:
    """The machine list (with or without its header line) as a nodes table."""
    header = _first_line(path).split(",")[0].strip() == MACHINE_COLUMNS[0]
    raw, first = read_csv(
        path,
        required=MACHINE_COLUMNS,
        strings=("machineId", "single GPU mem"),
        header=header,
    )
    filt, machine, gpus = machine_rows(report, path, raw, first, "machineId", "number of GPUs")
    drop_duplicates(filt, machine, "machineId")
    memory = labels(raw["single GPU mem"])[0].fillna("gpu").str.replace(" ", "")
    keep = filt.alive
    if not keep.any():
        raise TraceError(path, "no machine with GPUs:\n" + report.summary())
    return pd.DataFrame(
        {
            "node": machine[keep].to_numpy(dtype=object),
            "rack": memory[keep].to_numpy(dtype=object),
            "gpus": gpus[keep].astype(np.int64),
            "gpu_type": memory[keep].to_numpy(dtype=object),
        }
    )


def _shares(jobs: pd.DataFrame, alive: np.ndarray, nodes: pd.DataFrame) -> dict[str, int]:
    """All GPUs split among the VCs in proportion to their GPU-seconds (largest remainder)."""
    kept = jobs.loc[alive]
    demand = (kept["num_gpus"] * kept["duration"]).groupby(kept["vc"]).sum().sort_index()
    total = int(nodes["gpus"].sum())
    if demand.empty or demand.sum() <= 0:
        return {}
    exact = demand / demand.sum() * total
    quota = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - quota).to_numpy(), kind="stable")
    for i in order[: total - int(quota.sum())]:
        quota.iloc[i] += 1
    return {str(vc): int(q) for vc, q in quota.items()}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")
