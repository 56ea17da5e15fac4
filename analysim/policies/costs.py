"""Cost models: seconds a job loses each time it is preempted (checkpoint + restore).

A cost model turns the jobs table into one cost per job, once, when a simulation starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from analysim.inputs.validation import bounded, seconds
from analysim.policies.registry import Policy, Registry


class CostModel(Policy):
    """Base class: ``costs(jobs)`` gives the seconds each job pays per preemption."""

    name: ClassVar[str] = "cost"

    def costs(self, jobs: pd.DataFrame) -> np.ndarray:
        raise NotImplementedError


COSTS: Registry[CostModel] = Registry("cost model", CostModel)


@COSTS.register("constant")
class Constant(CostModel):
    """The same number of seconds for every job."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = _cost(seconds, "constant cost: seconds")

    def costs(self, jobs: pd.DataFrame) -> np.ndarray:
        return np.full(len(jobs), self.seconds)


def _cost(value: object, name: str) -> float:
    """Seconds lost per event: finite, in ``[0, MAX_SECONDS]``."""
    return seconds(value, name, positive=False)


def _number(key: object) -> object:
    """A steps key as a number: JSON and YAML write dict keys as text (``"8"``)."""
    if isinstance(key, str):
        try:
            return float(key)
        except ValueError:
            return key
    return key


@COSTS.register("size_scaled")
class SizeScaled(CostModel):
    """Seconds by GPU count: ``steps={8: 40, 1e9: 60}`` means 40 s up to 8 GPUs, 60 s above
    (the Tiresias/Lucid overheads). Keys are upper bounds on ``num_gpus``."""

    def __init__(self, steps: Mapping[Any, float] | None = None) -> None:
        steps = {8: 40.0, 1_000_000: 60.0} if steps is None else steps
        if not isinstance(steps, Mapping) or not steps:
            raise ValueError(
                f"size_scaled cost: steps must be a non-empty dict {{gpus: seconds}}, got {steps!r}"
            )
        bounds = sorted(
            (
                bounded(
                    _number(k),
                    f"size_scaled cost: steps key {k!r} (GPUs)",
                    low=0.0,
                    high=1e12,
                    low_open=True,
                ),
                _cost(v, f"size_scaled cost: steps[{k!r}] (seconds)"),
            )
            for k, v in steps.items()
        )
        self.steps = {str(int(k)) if k.is_integer() else str(k): v for k, v in bounds}

    def costs(self, jobs: pd.DataFrame) -> np.ndarray:
        bounds = np.array([float(k) for k in self.steps])
        values = np.array(list(self.steps.values()))
        where = np.searchsorted(bounds, jobs["num_gpus"].to_numpy(), side="left")
        return values[np.minimum(where, len(values) - 1)]


@COSTS.register("per_job")
class PerJob(CostModel):
    """Each job's own cost, from a column of the workload (default ``checkpoint_cost``)."""

    def __init__(self, column: str = "checkpoint_cost") -> None:
        self.column = column

    def costs(self, jobs: pd.DataFrame) -> np.ndarray:
        if self.column not in jobs.columns:
            raise ValueError(f"per_job cost: the workload has no column {self.column!r}")
        values = pd.to_numeric(jobs[self.column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            rows = np.flatnonzero(bad)[:5].tolist()
            raise ValueError(
                f"per_job cost: column {self.column!r} must be seconds >= 0; bad rows {rows}"
            )
        return values


def young_daly_interval(checkpoint_cost: float, mtbf: float) -> float:
    """Young's (1974) first-order optimal checkpoint interval, ``sqrt(2 * cost * MTBF)``
    seconds, for a job whose checkpoint costs ``checkpoint_cost`` seconds and whose mean time
    between failures is ``mtbf`` seconds (Daly 2006 refines it; with a cost much smaller than
    the MTBF the two agree). For a job on ``n`` nodes that each fail with MTBF ``m``, pass
    ``m / n``: the job fails when any of its nodes does."""
    cost = seconds(checkpoint_cost, "young_daly_interval: checkpoint_cost", positive=False)
    mean = seconds(mtbf, "young_daly_interval: mtbf")
    return float(np.sqrt(2.0 * cost * mean))
