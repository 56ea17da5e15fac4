"""Elastic jobs' limits: the optional workload columns ``min_gpus`` and ``max_gpus``.

A job with ``min_gpus < max_gpus`` is **elastic**: an elastic scheduler
(``analysim/policies/elastic.py``) may run it on any GPU count from ``min_gpus`` to
``max_gpus`` (for a job with an application, the counts its table lists in that range). It
asks for ``num_gpus`` GPUs to start, which must lie within its limits. A missing column or
value is the job's ``num_gpus`` (a rigid job); the workload checks them as it is read
(``analysim/inputs/workload.py``). ``docs/elastic.md`` gives the rules.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysim.errors import describe_rows
from analysim.inputs.workload import Workload

#: the workload columns of elastic jobs
COLUMNS = ("min_gpus", "max_gpus")


def elastic_limits(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Per job of a checked jobs table, its (lowest, highest) GPU counts; None when no job
    is elastic (every job keeps its ``num_gpus``)."""
    if not any(c in jobs.columns for c in COLUMNS):
        return None
    gpus = jobs["num_gpus"].to_numpy(dtype=np.int64)
    low = jobs["min_gpus"].to_numpy(dtype=np.int64) if "min_gpus" in jobs.columns else gpus
    high = jobs["max_gpus"].to_numpy(dtype=np.int64) if "max_gpus" in jobs.columns else gpus
    if not (low < high).any():
        return None
    return low.copy(), high.copy()


def refuse_elastic(jobs: pd.DataFrame, why: str) -> None:
    """Raise ``ValueError`` (``why``, and the rows) if any job of ``jobs`` is elastic: for
    the replays, whose rules have no elastic jobs."""
    limits = elastic_limits(jobs)
    if limits is not None:
        elastic = limits[0] < limits[1]
        raise ValueError(
            f"{why}; elastic jobs (min_gpus < max_gpus) are run by the engine "
            "(docs/elastic.md): " + describe_rows(jobs, elastic, "max_gpus", "job_id")
        )


def with_elastic_jobs(
    workload: Workload, share: float, seed: int = 0, shrink: int = 2, grow: int = 2
) -> Workload:
    """``workload`` with a ``share`` (0 to 1) of its GPU jobs made elastic: drawn with a
    generator seeded by ``seed``, each gets ``min_gpus = ceil(num_gpus / shrink)`` and
    ``max_gpus = num_gpus * grow`` (a job of one GPU with ``grow`` 1 stays rigid). The jobs
    drawn for a share are among those drawn for any larger share (one permutation)."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ValueError(f"with_elastic_jobs: share must be a number from 0 to 1, got {share!r}")
    for name, value in (("shrink", shrink), ("grow", grow)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"with_elastic_jobs: {name} must be a whole number >= 1, got {value!r}"
            )
    jobs = workload.jobs
    gpus = jobs["num_gpus"].to_numpy(dtype=np.int64)
    candidates = np.flatnonzero(gpus > 0)
    order = np.random.default_rng(seed).permutation(len(candidates))
    chosen = candidates[order[: int(round(share * len(candidates)))]]
    low, high = gpus.copy(), gpus.copy()
    low[chosen] = -(-gpus[chosen] // shrink)
    high[chosen] = gpus[chosen] * grow
    frame = jobs.assign(min_gpus=low, max_gpus=high)
    return Workload.from_frame(frame, name=f"{workload.name}, {share:.0%} elastic")


__all__ = ["COLUMNS", "elastic_limits", "refuse_elastic", "with_elastic_jobs"]
