"""Metrics over a result's tables: JCT, queueing delay, slowdown, utilisation, preemptions.

Definitions (all times in seconds):

* ``jct`` = end - submit, over finished jobs; ``queue_delay`` = JCT - time on GPUs (all the
  time a job was not running, including after preemptions); ``slowdown`` = JCT / duration.
* ``makespan`` = last end - first submit over finished jobs.
* ``gpu_utilization`` = busy GPU-seconds / (GPUs x makespan), integrated exactly over the run
  (not from timeline samples); per VC, over the GPUs the VC may use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SUMMARY_FIELDS = (
    "jobs",
    "finished",
    "unschedulable",
    "avg_jct",
    "median_jct",
    "p95_jct",
    "p99_jct",
    "avg_queue_delay",
    "median_queue_delay",
    "p95_queue_delay",
    "avg_slowdown",
    "makespan",
    "gpu_utilization",
    "preemptions",
    "preempted_jobs",
)


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else float("nan")


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def summarize(jobs: pd.DataFrame, meta: dict[str, Any], vc: str | None = None) -> pd.Series:
    """Summary metrics of all jobs (``vc=None``) or of one VC's jobs."""
    subset = jobs if vc is None else jobs[jobs["vc"] == vc]
    done = subset[subset["status"] == "done"]
    jct = done["jct"].to_numpy(dtype=float)
    queue = done["queue_delay"].to_numpy(dtype=float)
    slowdown = jct / done["duration"].to_numpy(dtype=float)
    makespan = _makespan(jobs if vc is None else done)
    busy = np.asarray(meta.get("busy_gpu_seconds", []), dtype=float)
    if vc is None:
        capacity, busy_total = meta.get("total_gpus", 0), busy.sum()
    else:
        k = meta["vcs"].index(vc)
        capacity, busy_total = meta["vc_capacity"][k], busy[k]
    cluster_makespan = _makespan(jobs)
    utilization = (
        busy_total / (capacity * cluster_makespan) if capacity and cluster_makespan > 0 else np.nan
    )
    values = {
        "jobs": len(subset),
        "finished": len(done),
        "unschedulable": int((subset["status"] == "unschedulable").sum()),
        "avg_jct": _mean(jct),
        "median_jct": _quantile(jct, 0.5),
        "p95_jct": _quantile(jct, 0.95),
        "p99_jct": _quantile(jct, 0.99),
        "avg_queue_delay": _mean(queue),
        "median_queue_delay": _quantile(queue, 0.5),
        "p95_queue_delay": _quantile(queue, 0.95),
        "avg_slowdown": _mean(slowdown),
        "makespan": makespan,
        "gpu_utilization": float(utilization),
        "preemptions": int(subset["preemptions"].sum()),
        "preempted_jobs": int((subset["preemptions"] > 0).sum()),
    }
    return pd.Series(values, name=vc or "cluster", dtype=float)


def _makespan(jobs: pd.DataFrame) -> float:
    done = jobs[jobs["status"] == "done"]
    if done.empty:
        return float("nan")
    return float(done["end_time"].max() - done["submit_time"].min())
