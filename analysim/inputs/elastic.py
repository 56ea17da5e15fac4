"""Elastic jobs' limits: the optional workload columns ``min_gpus`` and ``max_gpus``.

A job with ``min_gpus < max_gpus`` is **elastic**: an elastic scheduler
(``analysim/policies/elastic.py``) may run it on any GPU count from ``min_gpus`` to
``max_gpus`` (for a job with an application, the counts its table lists in that range). It
asks for ``num_gpus`` GPUs to start, which must lie within its limits. A missing column or
value is the job's ``num_gpus`` (a rigid job). ``docs/elastic.md`` gives the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analysim.inputs.workload import Workload

#: the workload columns of elastic jobs
COLUMNS = ("min_gpus", "max_gpus")

Fail = Callable[[pd.DataFrame, object, str, str], None]


def elastic_columns(frame: pd.DataFrame, gpus: np.ndarray, fail: Fail) -> dict[str, pd.Series]:
    """The checked ``min_gpus`` / ``max_gpus`` columns of ``frame`` (those present), int64,
    a missing value filled with the row's ``num_gpus`` (``gpus``). ``fail(frame, mask,
    column, expected)`` raises the error naming the column, the rows and their values for a
    value that is not a whole number from 1 up, ``min_gpus`` above ``num_gpus``,
    ``max_gpus`` below it (so ``min_gpus > max_gpus`` too)."""
    out: dict[str, pd.Series] = {}
    for column in COLUMNS:
        if column not in frame.columns:
            continue
        values = pd.to_numeric(frame[column], errors="coerce").astype(float)
        text = frame[column].notna() & values.isna()
        flags = np.array([isinstance(v, (bool, np.bool_)) for v in frame[column]], dtype=bool)
        bad = (
            text.to_numpy()
            | flags
            | (values.notna() & ((values < 1) | (values != np.round(values)))).to_numpy()
        )
        if bad.any():
            fail(frame, bad, column, "a whole number of GPUs from 1 up, or missing")
        out[column] = pd.Series(
            np.where(values.isna(), gpus, values).astype("int64"), index=frame.index
        )
    low = out.get("min_gpus")
    high = out.get("max_gpus")
    if low is not None and high is not None:
        bad = (low > high).to_numpy()
        if bad.any():
            fail(frame, bad, "min_gpus", "at most the row's max_gpus")
    if low is not None:
        bad = low.to_numpy() > gpus
        if bad.any():
            fail(frame, bad, "min_gpus", "at most the row's num_gpus (a job starts on num_gpus)")
    if high is not None:
        bad = high.to_numpy() < gpus
        if bad.any():
            fail(frame, bad, "max_gpus", "at least the row's num_gpus (a job starts on num_gpus)")
    return out


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


def with_elastic_jobs(
    workload: Workload, share: float, seed: int = 0, shrink: int = 2, grow: int = 2
) -> Workload:
    """``workload`` with a ``share`` (0 to 1) of its GPU jobs made elastic: drawn with a
    generator seeded by ``seed``, each gets ``min_gpus = ceil(num_gpus / shrink)`` and
    ``max_gpus = num_gpus * grow`` (a job of one GPU with ``grow`` 1 stays rigid). The jobs
    drawn for a share are among those drawn for any larger share (one permutation)."""
    from analysim.inputs.workload import Workload

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


__all__ = ["COLUMNS", "elastic_columns", "elastic_limits", "with_elastic_jobs"]
