"""Goodput of elastic runs: what a run with elastic jobs adds to ``Result``.

Goodput is useful progress per second (Pollux: throughput times statistical efficiency,
``analysim/policies/goodput.py``). In the engine a job's useful progress is its work
(``duration``: seconds on its asked GPUs packed); it progresses at its **rate**, which a
resize, a placement or a batch size changes (for a job with a batch size, its goodput,
throughput x statistical efficiency, over that at its asked GPUs and batch size,
``inputs/batch.py``; else its batch size is fixed, efficiency 1), so a job's goodput while
it runs is its rate; time lost to checkpoint, migration and rescale
costs is run time without progress. With elastic jobs (``docs/elastic.md``):

* ``Result.jobs`` has ``min_gpus``, ``max_gpus``, ``resizes``, ``gpu_seconds`` (GPU-seconds
  held, at the counts held) and ``goodput`` (a finished job's work over its run time);
* ``Result.events`` has ``rate``: the job's goodput from each ``start``, ``resume``,
  ``migrate`` and ``resize`` on (NaN for other events); the ``num_gpus`` of those events
  is the count taken, of a ``finish``, ``preempt``, ``reclaim`` or ``fail`` the count the
  job held then (of a ``submit``, its ``num_gpus``); :func:`goodput_spells` turns them into
  each job's goodput over time;
* with batch sizes, ``Result.events`` and :func:`goodput_spells` have ``batch_size`` (each
  run's), ``Result.jobs`` ``last_batch_size``;
* the summary has ``mean_goodput`` (mean over finished jobs) and
  ``gpu_seconds_per_progress`` (GPU-seconds held per second of work done, finished jobs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord
    from analysim.results.result import Result

#: the summary fields of runs with elastic jobs
SUMMARY_FIELDS = ("mean_goodput", "gpu_seconds_per_progress")
RUN_EVENTS = ("start", "resume", "migrate", "resize")
STOP_EVENTS = ("finish", "preempt", "reclaim", "fail", "failed")


def add_elastic_columns(jobs: pd.DataFrame, run: RunRecord) -> None:
    """The elastic columns of the jobs frame (see the module), after ``num_gpus``."""
    record = run.elastic
    at = jobs.columns.get_loc("num_gpus") + 1
    jobs.insert(at, "min_gpus", record.min_gpus)
    jobs.insert(at + 1, "max_gpus", record.max_gpus)
    jobs["resizes"] = record.resizes
    jobs["gpu_seconds"] = record.gpu_seconds
    done = (jobs["status"] == "done").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = jobs["duration"].to_numpy(float) / jobs["run_time"].to_numpy(float)
    jobs["goodput"] = np.where(done, ratio, np.nan)
    if record.last_batch_size is not None:  # batch sizes (inputs/batch.py)
        jobs["last_batch_size"] = record.last_batch_size


def add_elastic_events(events: pd.DataFrame, run: RunRecord, order: list[int]) -> None:
    """Run events (``order``: the record index of each row): ``num_gpus`` taken, ``rate``."""
    records = run.records
    rates = records.event_rate
    events["rate"] = np.array([rates.get(i, np.nan) for i in order], dtype=float)
    if run.elastic.last_batch_size is not None:  # batch sizes: each run event's
        batches = records.event_batch
        events["batch_size"] = np.array([batches.get(i, np.nan) for i in order], dtype=float)
    counts = events["num_gpus"].to_numpy().copy()
    held: dict[object, int] = {}  # per job, the GPUs of its last run event
    kinds = events["event"].astype(str).tolist()
    for row, (i, job, kind) in enumerate(zip(order, events["job_id"].tolist(), kinds, strict=True)):
        if i in rates:
            held[job] = counts[row] = sum(len(slots) for slots in records.event_gpus[i])
        elif kind in STOP_EVENTS and job in held:
            counts[row] = held[job]
    events["num_gpus"] = counts


def goodput_spells(result: Result) -> pd.DataFrame:
    """Each job's goodput over time: one row per stretch it ran, ``job_id, start, end,
    num_gpus, goodput`` (``end`` NaN while it still runs), from a run with elastic jobs."""
    events = result.events
    if "rate" not in events.columns:
        raise ValueError(
            "goodput_spells: the result has no goodput records (a run without elastic jobs)"
        )
    jobs = events[events["job_id"].notna() & (events["event"] != "submit")]
    batched = "batch_size" in jobs.columns
    rows = []
    for job_id, group in jobs.groupby("job_id", sort=False):
        times = group["time"].to_numpy(float)
        kinds = group["event"].astype(str).to_numpy()
        for k in np.flatnonzero(np.isin(kinds, RUN_EVENTS)):
            end = times[k + 1] if k + 1 < len(times) else np.nan
            row = (job_id, times[k], end, int(group["num_gpus"].iloc[k]), group["rate"].iloc[k])
            rows.append((*row, group["batch_size"].iloc[k]) if batched else row)
    columns = ["job_id", "start", "end", "num_gpus", "goodput"]
    frame = pd.DataFrame(rows, columns=[*columns, "batch_size"] if batched else columns)
    return frame.sort_values(["start", "job_id"], kind="stable").reset_index(drop=True)


def summarize_goodput(done: pd.DataFrame) -> dict[str, float]:
    """The summary fields over finished jobs ``done`` (NaN without any)."""
    work = float(done["duration"].sum())
    return {
        "mean_goodput": float(done["goodput"].mean()) if len(done) else float("nan"),
        "gpu_seconds_per_progress": float(done["gpu_seconds"].sum()) / work
        if work > 0
        else float("nan"),
    }


__all__ = [
    "SUMMARY_FIELDS",
    "add_elastic_columns",
    "add_elastic_events",
    "goodput_spells",
    "summarize_goodput",
]
