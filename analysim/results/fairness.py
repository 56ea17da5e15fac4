"""Finish-time fairness (Themis, NSDI'20): how much slower a job finished than it would have
alone on its 1/N share of the cluster (``docs/heterogeneity.md``).

For a finished job ``j``, ``rho = JCT / isolated JCT`` where:

* **N** is the number of jobs active when ``j`` arrives, ``j`` included: submitted at or
  before its submit time and not finished by then (a job ending exactly then is not
  counted; jobs that can never run are not counted; jobs unfinished at the run's end are).
* **Its share** is 1/N of the GPUs of each type the job may be placed on (``G_T / N``).
* **Isolated rate**, as Gavel's ``isolated`` policy computes it: the job, asking for ``g``
  GPUs, holds type ``T`` a fraction ``x_T = G_T / (N g)`` of the time; when these add up
  to more than 1 they are scaled down to add up to 1. Its rate there is
  ``sum_T x_T r_T``, with ``r_T`` its packed rate on type ``T`` (``Application.packed``;
  1.0 for a job without an application).
* **Isolated JCT** = ``duration / isolated rate`` (its work at that rate, from its submit).

So a job alone (N = 1) on a cluster of one type with at least its GPUs has the isolated JCT
of its packed run there, and rho = 1 if it started at once, packed. rho is NaN for a job that
did not finish. The summary gives ``max_ftf_rho``, ``ftf_unfair_share`` (the share of
finished jobs with rho > 1) and ``ftf_jain`` (Jain's index over rho, ``(sum rho)^2 / (n sum
rho^2)``: 1 when every job is slowed alike).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.inputs.domains import allowed_types

if TYPE_CHECKING:
    from analysim.results.result import Result

COLUMN = "ftf_rho"
#: summary fields, present when the jobs table has ``ftf_rho``
SUMMARY_FIELDS = ("max_ftf_rho", "ftf_unfair_share", "ftf_jain")


def active_at_arrival(submit: np.ndarray, end: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per job: how many ``counted`` jobs are active when it arrives (submitted at or before
    its submit time, not ended by then; an unfinished job's ``end`` is NaN: never ends)."""
    starts = np.sort(submit[counted])
    ends = np.sort(np.where(np.isnan(end), np.inf, end)[counted])
    arrived = np.searchsorted(starts, submit, side="right")
    gone = np.searchsorted(ends, submit, side="right")
    return arrived - gone


def isolated_rate(
    gpus: np.ndarray, n_active: np.ndarray, type_gpus: np.ndarray, type_rates: np.ndarray
) -> np.ndarray:
    """Per job: its rate on its 1/N share of each GPU type (``type_gpus``: GPUs per type;
    ``type_rates``: per job and type its packed rate, 0.0 where it may not run); NaN for a
    job without GPUs."""
    usable = type_rates > 0
    asks = np.where(gpus > 0, gpus, np.nan)
    share = np.where(usable, type_gpus[None, :], 0.0) / (
        np.maximum(n_active, 1)[:, None] * asks[:, None]
    )
    share /= np.maximum(share.sum(axis=1), 1.0)[:, None]
    return (share * type_rates).sum(axis=1)


def isolated_jct(
    submit: np.ndarray,
    end: np.ndarray,
    duration: np.ndarray,
    gpus: np.ndarray,
    counted: np.ndarray,
    type_gpus: np.ndarray,
    type_rates: np.ndarray,
) -> np.ndarray:
    """Per job: its JCT alone on its 1/N share (NaN where its isolated rate is 0)."""
    n_active = active_at_arrival(submit, end, counted)
    rate = isolated_rate(gpus.astype(float), n_active, type_gpus, type_rates)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rate > 0, duration / rate, np.nan)


def ftf_rho(
    submit: np.ndarray,
    end: np.ndarray,
    duration: np.ndarray,
    gpus: np.ndarray,
    counted: np.ndarray,
    type_gpus: np.ndarray,
    type_rates: np.ndarray,
) -> np.ndarray:
    """Per job its finish-time fairness rho (NaN for a job that did not finish)."""
    alone = isolated_jct(submit, end, duration, gpus, counted, type_gpus, type_rates)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (end - submit) / alone


def finish_time_fairness(result: Result) -> pd.DataFrame:
    """Per job of ``result``: ``job_id``, ``vc``, ``n_active`` (N), ``isolated_jct`` and
    ``ftf_rho``, for any run. With typed applications ``ftf_rho`` is the jobs table's;
    otherwise every job runs at rate 1 on every GPU type it accepts (its ``gpu_type``
    constraint), and the share counts the GPUs of those types (``meta["nodes"]``)."""
    jobs = result.jobs
    status = jobs["status"].to_numpy(dtype=object)
    submit = jobs["submit_time"].to_numpy(dtype=float)
    end = np.where(status == "done", jobs["end_time"].to_numpy(dtype=float), np.nan)
    counted = status != "unschedulable"
    gpus = jobs["num_gpus"].to_numpy(dtype=float)
    if COLUMN in jobs.columns:  # typed applications: rho as the run computed it
        rho = jobs[COLUMN].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            alone = (end - submit) / rho
    else:
        nodes = pd.DataFrame(result.meta["nodes"])
        per_type = nodes.groupby("gpu_type", sort=True)["gpus"].sum()
        names = [str(t) for t in per_type.index]
        specs = jobs["gpu_type"] if "gpu_type" in jobs.columns else pd.Series([None] * len(jobs))
        rates = np.ones((len(jobs), len(names)))
        for row, spec in enumerate(specs.tolist()):
            accepted = allowed_types(spec)
            if accepted is not None:
                rates[row] = [t in accepted for t in names]
        alone = isolated_jct(
            submit,
            end,
            jobs["duration"].to_numpy(dtype=float),
            gpus,
            counted,
            per_type.to_numpy(dtype=float),
            rates,
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (end - submit) / alone
    return pd.DataFrame(
        {
            "job_id": jobs["job_id"].to_numpy(),
            "vc": jobs["vc"].to_numpy(),
            "n_active": active_at_arrival(submit, end, counted),
            "isolated_jct": alone,
            COLUMN: rho,
        }
    )


def summarize_rho(rho: pd.Series) -> dict[str, float]:
    """``max_ftf_rho``, ``ftf_unfair_share`` and ``ftf_jain`` over the finished jobs' rho."""
    values = rho.dropna().to_numpy(dtype=float)
    if not len(values):
        return dict.fromkeys(SUMMARY_FIELDS, float("nan"))
    squares = float((values**2).sum())
    return {
        "max_ftf_rho": float(values.max()),
        "ftf_unfair_share": float((values > 1).mean()),
        "ftf_jain": float(values.sum() ** 2 / (len(values) * squares)) if squares else 1.0,
    }


__all__ = [
    "COLUMN",
    "SUMMARY_FIELDS",
    "active_at_arrival",
    "finish_time_fairness",
    "ftf_rho",
    "isolated_jct",
    "isolated_rate",
    "summarize_rho",
]
