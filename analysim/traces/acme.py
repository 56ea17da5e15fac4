"""Shanghai AI Lab's Acme traces (NSDI'24): ``trace_seren.csv`` and ``trace_kalos.csv``.

One row per job (InternLM/AcmeTrace README): ``job_id, user, node_num, gpu_num, cpu_num,
type, state, submit_time, start_time, end_time, duration, queue, gpu_time``; Kalos adds
``mem_per_pod_GB, shared_mem_per_pod, fail_time, stop_time``. Times are date-times with a
UTC offset (``2023-03-01 00:18:22+08:00``); ``duration`` (end - start) and ``queue``
(start - submit) are seconds. ``type`` is the kind of LLM-development job (``Pretrain``,
``SFT``, ``Eval``, ``MLLM``, ``Debug``, ``Other``), ``state`` the final state in Slurm's
words. The trace has no VCs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysim.inputs.workload import JOB_TYPES
from analysim.presets.acme import NODES, VC, acme_cluster
from analysim.traces._common import (
    drop_duplicates,
    drop_far_dates,
    epoch_seconds,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
    moment,
)
from analysim.traces._io import existing_file, labels, parse_numbers, parse_times, read_csv
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import SLURM_STATES

ZONED_FORMAT = "%Y-%m-%d %H:%M:%S%z"
NAIVE_FORMAT = "%Y-%m-%d %H:%M:%S"
REQUIRED = ("job_id", "user", "gpu_num", "submit_time", "duration")
OPTIONAL = ("type", "state", "start_time", "queue")
FILES = ("trace_seren.csv", "trace_kalos.csv")


def read_acme(
    path: str | Path,
    *,
    nodes: int | None = None,
    start: str | pd.Timestamp | None = None,
    end: str | pd.Timestamp | None = None,
    drop_oversized: bool = False,
    name: str | None = None,
) -> Trace:
    """Read an Acme job trace into a GPU-job Workload and its Cluster.

    Jobs submitted in ``[start, end]`` (both inclusive; default: the whole trace) that ask
    for GPUs and started are kept, with ``submit_time`` in seconds from ``start`` (default:
    the first kept submission) and ``duration`` the trace's. Times are read with their UTC
    offset and compared in UTC (a time without an offset is taken as UTC). Kept beside: the
    final ``state`` (Slurm's words; ``trace_state`` the trace's own), ``job_type`` (the
    trace's ``type``) and ``trace_queue`` (the recorded queueing delay, seconds). The
    Cluster is ``nodes`` nodes of 8 GPUs without VCs (every job in VC ``"default"``);
    default: the paper's size of the cluster the file is named after (``seren``: 286,
    ``kalos``: 302), otherwise ``nodes`` is needed. See ``docs/traces.md``.
    """
    path = existing_file(path, "an Acme job trace (trace_seren.csv or trace_kalos.csv)")
    cluster_name = name or _cluster_name(path)
    if nodes is None:
        if cluster_name not in NODES:
            raise ValueError(
                f"read_acme: {path.name} is not trace_seren.csv or trace_kalos.csv, so the "
                "cluster's size is unknown: give nodes= (nodes of 8 GPUs)"
            )
        nodes = NODES[cluster_name]
    cluster = acme_cluster(nodes, name=cluster_name)
    start_at, end_at = moment(start, "start"), moment(end, "end")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValueError(f"end={end!r} is before start={start!r}")
    raw, first = read_csv(
        path,
        required=REQUIRED,
        optional=OPTIONAL,
        strings=("job_id", "user", "type", "state", "submit_time", "start_time"),
    )
    filt = RowFilter(
        LoadReport(), "jobs", path.name, len(raw), lambda i: f"line {first + i}", ids=raw["job_id"]
    )
    job_id = keep_labels(filt, raw["job_id"], "job_id")
    user = keep_labels(filt, raw["user"], "user")
    gpus = keep_counts(filt, raw["gpu_num"], "gpu_num")
    submit = _times(filt, path, raw, "submit_time", first)
    if "start_time" in raw.columns:
        started = _times(filt, path, raw, "start_time", first, drop_missing=False)
        filt.drop(np.isnan(started), "never_started", "start_time", raw["start_time"])
    duration = keep_counts(filt, raw["duration"], "duration", whole=False, signed=True)
    drop_duplicates(filt, job_id, "job_id")
    filt.drop(gpus == 0, "cpu_only", "gpu_num", raw["gpu_num"])
    known = submit[filt.alive & ~np.isnan(submit)]
    if start_at is not None:
        origin = epoch_seconds(start_at)
    else:
        origin = float(known.min()) if len(known) else 0.0
    outside = submit < origin
    if end_at is not None:
        outside |= submit > epoch_seconds(end_at)
    filt.drop(outside, "outside_window", "submit_time", raw["submit_time"])
    filt.drop(duration <= 0, "nonpositive_duration", "duration", raw["duration"])

    jobs = pd.DataFrame(
        {
            "job_id": job_id,
            "vc": VC,
            "user": user,
            "submit_time": submit - origin,
            "duration": duration,
            "num_gpus": gpus,
        }
    )
    if "state" in raw.columns:
        jobs["trace_state"], jobs["state"] = keep_states(
            filt, raw["state"], "state", SLURM_STATES, slurm=True
        )
    if "type" in raw.columns:
        jobs["job_type"] = _job_types(filt, raw["type"])
    if "queue" in raw.columns:
        queue, _, _ = parse_numbers(raw["queue"])
        jobs["trace_queue"] = queue
    return finish(filt, jobs, cluster, path=path, name=cluster_name, drop_oversized=drop_oversized)


def _cluster_name(path: Path) -> str:
    """``seren`` / ``kalos`` for the Acme files, else the file's stem."""
    stem = path.stem
    return stem.removeprefix("trace_") if path.name in FILES else stem


def _times(
    filt: RowFilter,
    path: Path,
    raw: pd.DataFrame,
    column: str,
    first: int,
    *,
    drop_missing: bool = True,
) -> np.ndarray:
    """Epoch seconds (UTC) of a time column written with a UTC offset, or without one (taken
    as UTC); rows with a time in neither form are dropped as ``unparseable_time``, an empty
    one as ``missing_value`` (if ``drop_missing``), a far date as ``out_of_range``."""
    values = raw[column]
    zoned = np.full(len(values), np.nan)
    try:
        zoned, _, _ = parse_times(values, ZONED_FORMAT, path=path, column=column, first_line=first)
    except TraceError:
        pass  # no value has an offset: all are read without one below
    rest = values.where(np.isnan(zoned), None)
    if np.isnan(zoned).all() or rest.notna().any():
        try:
            naive, _, _ = parse_times(
                rest, NAIVE_FORMAT, path=path, column=column, first_line=first
            )
        except TraceError as error:
            if not np.isnan(zoned).all():
                naive = np.full(len(values), np.nan)
            else:
                raise TraceError(
                    path,
                    "no value of this time column parses",
                    line=error.line,
                    column=column,
                    expected="times like 2023-03-01 00:18:22+08:00 (or without the offset, UTC)",
                    found=error.found,
                ) from None
        zoned = np.where(np.isnan(zoned), naive, zoned)
    _, missing = labels(values)
    bad = np.isnan(zoned) & ~missing
    if drop_missing:
        filt.drop(missing, "missing_value", column, values)
    filt.drop(bad, "unparseable_time", column, values)
    drop_far_dates(filt, zoned, column, values)
    return zoned


def _job_types(filt: RowFilter, values: pd.Series) -> np.ndarray:
    """The ``type`` words that are Acme's (:data:`~analysim.inputs.workload.JOB_TYPES`); an
    empty one is None, another word None too, counted as ``unknown_type``."""
    text, missing = labels(values)
    words = text.to_numpy(dtype=object)
    known = np.array([w in JOB_TYPES for w in words], dtype=bool)
    filt.flag(~known & ~missing, "unknown_type", "type", values)
    return np.where(known & ~missing, words, None).astype(object)
