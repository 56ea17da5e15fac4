"""Metrics over a result's tables: JCT, queueing delay, slowdown, utilisation, preemptions.

Definitions (all times in seconds):

* ``jct`` = end - submit, over finished jobs; ``queue_delay`` = JCT - time on GPUs (all the
  time a job was not running, including after preemptions); ``slowdown`` = JCT / duration.
* ``makespan`` = last end - first submit over finished jobs.
* ``gpu_utilization`` = busy GPU-seconds / (GPUs x makespan), integrated exactly over the run
  (not from timeline samples); per VC, over the GPUs the VC may use (it can exceed 1 when the
  VC borrows).
* ``gpu_hours``: GPU-hours the jobs held (own and borrowed GPUs); ``share_gpu_hours``: a VC's
  share of all GPU-hours held, in proportion to its GPUs (owned or quota).
* ``avg_fragmented_gpus``, ``avg_blocked_jobs``, ``avg_frag_index``, ``idle_while_waiting``
  (share of the time with free GPUs while jobs wait) and ``jain_fairness`` are time averages
  over the timeline samples (see :mod:`analysim.results.fragmentation` and ``docs/semantics.md``).
* with typed applications, finish-time fairness over the finished jobs' ``ftf_rho``:
  ``max_ftf_rho``, ``ftf_unfair_share`` (share with rho > 1), ``ftf_jain`` (Jain's index
  over rho; :mod:`analysim.results.fairness`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysim.results import fairness, goodput

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
    "migrations",
    "migrated_jobs",
    "reclaims",
    "borrowed_gpu_hours",
    "gpu_hours",
    "share_gpu_hours",
    "avg_fragmented_gpus",
    "avg_blocked_jobs",
    "avg_frag_index",
    "idle_while_waiting",
    "jain_fairness",
)
#: in resource mode only (``docs/semantics.md``): FGD's fragmentation, time-averaged
RESOURCE_FIELDS = ("avg_fgd_frag_milli",)
#: with failures configured (``docs/failures.md``): restarts, jobs failed for good, the
#: GPU-seconds of work lost to failures and the useful share of the GPU-seconds held
FAILURE_FIELDS = (
    "restarts",
    "failed_jobs",
    "lost_gpu_seconds",
    "goodput_ratio",
    "avg_time_to_recover",
)
SAMPLED = ("avg_fragmented_gpus", "avg_blocked_jobs", "avg_frag_index", "idle_while_waiting")
ALL = "(all)"


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else float("nan")


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def summarize(
    jobs: pd.DataFrame, meta: dict[str, Any], vc: str | None = None, user: str | None = None
) -> pd.Series:
    """Summary metrics of all jobs (``vc=None``), of one VC's jobs, or of one user's jobs
    (``user``: then only the job-based metrics; the capacity-based ones are NaN)."""
    if user is not None:
        subset = jobs[jobs["user"] == user]
    else:
        subset = jobs if vc is None else jobs[jobs["vc"] == vc]
    done = subset[subset["status"] == "done"]
    jct = done["jct"].to_numpy(dtype=float)
    queue = done["queue_delay"].to_numpy(dtype=float)
    slowdown = jct / done["duration"].to_numpy(dtype=float)
    makespan = _makespan(jobs if vc is None and user is None else done)
    held = _held_gpu_seconds(subset)
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
        "gpu_utilization": float("nan"),
        "preemptions": int(subset["preemptions"].sum()),
        "preempted_jobs": int((subset["preemptions"] > 0).sum()),
        "migrations": int(_column(subset, "migrations").sum()),
        "migrated_jobs": int((_column(subset, "migrations") > 0).sum()),
        "reclaims": int(_column(subset, "reclaims").sum()),
        "borrowed_gpu_hours": float(_column(subset, "borrowed_gpu_seconds").sum()) / 3600,
        "gpu_hours": held / 3600,
        "share_gpu_hours": float("nan"),
        "jain_fairness": float("nan"),
    }
    values.update(dict.fromkeys(SAMPLED, float("nan")))
    if user is None:
        values.update(_capacity_metrics(jobs, meta, vc))
    if "lost_seconds" in subset.columns:
        values.update(_failure_metrics(subset))
    if fairness.COLUMN in subset.columns:  # typed applications (results/fairness.py)
        values.update(fairness.summarize_rho(done[fairness.COLUMN]))
    if "goodput" in subset.columns:  # elastic jobs (results/goodput.py)
        values.update(goodput.summarize_goodput(done))
    extra = (*RESOURCE_FIELDS, *FAILURE_FIELDS, *fairness.SUMMARY_FIELDS, *goodput.SUMMARY_FIELDS)
    fields = list(SUMMARY_FIELDS) + [f for f in extra if f in values]
    return pd.Series(values, name=user or vc or "cluster", dtype=float)[fields]


def _capacity_metrics(jobs: pd.DataFrame, meta: dict[str, Any], vc: str | None) -> dict:
    """The metrics that need the VCs' capacities and the sampled timeline."""
    busy = np.asarray(meta.get("busy_gpu_seconds", []), dtype=float)
    capacities = np.asarray(meta.get("vc_capacity", []), dtype=float)
    if vc is None:
        capacity, busy_total = meta.get("total_gpus", 0), busy.sum()
    else:
        k = meta["vcs"].index(vc)
        capacity, busy_total = meta["vc_capacity"][k], busy[k]
    makespan = _makespan(jobs)
    values: dict[str, float] = {
        "gpu_utilization": float(
            busy_total / (capacity * makespan) if capacity and makespan > 0 else np.nan
        ),
        "gpu_hours": float(busy_total) / 3600,
    }
    if vc is not None and capacities.sum() > 0:
        values["share_gpu_hours"] = float(busy.sum() * capacities[k] / capacities.sum()) / 3600
    means = meta.get("sample_means", {}).get(ALL if vc is None else vc, {})
    for name in (*SAMPLED, "jain_fairness", *RESOURCE_FIELDS):
        if name in means:
            values[name] = float(means[name])
    return values


def _failure_metrics(jobs: pd.DataFrame) -> dict[str, float]:
    """Restarts, jobs failed for good, GPU-seconds lost to failures, and the goodput ratio:
    GPU-seconds of work kept over GPU-seconds held (NaN when none were held); with elastic
    jobs at the GPUs each run held (their counts vary), else at each job's GPUs."""
    if "useful_gpu_seconds" in jobs.columns:  # elastic jobs (results/goodput.py)
        held = float(jobs["gpu_seconds"].sum())
        useful = float(jobs["useful_gpu_seconds"].sum())
        lost = float(jobs["lost_gpu_seconds"].sum())
    else:
        gpus = _gpu_weights(jobs)
        held = float((jobs["run_time"].fillna(0) * gpus).sum())
        useful = float((jobs["useful_seconds"] * gpus).sum())
        lost = float((jobs["lost_seconds"] * gpus).sum())
    return {
        "restarts": int(jobs["restarts"].sum()),
        "failed_jobs": int((jobs["status"] == "failed").sum()),
        "lost_gpu_seconds": lost,
        "goodput_ratio": useful / held if held > 0 else float("nan"),
        "avg_time_to_recover": _time_to_recover(jobs),
    }


def _time_to_recover(jobs: pd.DataFrame) -> float:
    """Mean seconds from a kill to the killed job's next start, over the restarts (a job
    still waiting after a kill counts its wait so far; NaN: no restart)."""
    total = int(jobs["restarts"].sum())
    return float(jobs["recovery_seconds"].sum()) / total if total else float("nan")


def _gpu_weights(jobs: pd.DataFrame) -> pd.Series:
    """GPUs each job holds; a share (``gpu_milli``) counts as that fraction of a GPU."""
    gpus = jobs["num_gpus"].astype(float)
    if "gpu_milli" in jobs.columns:
        gpus = gpus * jobs["gpu_milli"].astype(float) / 1000
    return gpus


def _column(jobs: pd.DataFrame, name: str) -> pd.Series:
    """A count column of the jobs table (0 for tables saved before it existed)."""
    return jobs[name] if name in jobs.columns else pd.Series(0, index=jobs.index)


def _held_gpu_seconds(jobs: pd.DataFrame) -> float:
    """GPU-seconds the jobs held; a share of a GPU (resource mode's ``gpu_milli``) counts
    as that fraction of the GPU, as the ledger counts it; elastic jobs count the GPUs they
    held (``gpu_seconds``)."""
    if "gpu_seconds" in jobs.columns:
        return float(jobs["gpu_seconds"].sum())
    gpus = jobs["num_gpus"].astype(float)
    if "gpu_milli" in jobs.columns:
        gpus = gpus * jobs["gpu_milli"].astype(float) / 1000
    return float((jobs["run_time"].fillna(0) * gpus).sum())


def _makespan(jobs: pd.DataFrame) -> float:
    done = jobs[jobs["status"] == "done"]
    if done.empty:
        return float("nan")
    return float(done["end_time"].max() - done["submit_time"].min())
