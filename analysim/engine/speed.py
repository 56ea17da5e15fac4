"""``JobSpeed``: each job's performance model, asked for its rate where it is placed.

A job whose workload row names an ``application`` progresses at that application's rate
for its GPU count and the nodes its GPUs span (``analysim/inputs/applications.py``); any
other job at rate 1. The simulation asks :meth:`JobSpeed.rate` when a job starts, resumes
or migrates, and keeps it in ``Simulation.rate``; a job's run then ends at ``now +
remaining / rate`` and a stop takes ``elapsed * rate`` off its remaining work. EASY
backfill asks :attr:`JobSpeed.slowest` to tell whether a job that has not been placed yet
ends by a reservation's time whatever its placement. With no application in the workload
(``in_use`` False) every rate is 1.0, and dividing or multiplying by 1.0 is exact: the run
is the one it was before rates existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysim.errors import describe_rows
from analysim.inputs.applications import Application, resolve_applications

COLUMN = "application"


class JobSpeed:
    """The performance model of each job of ``jobs`` (a validated jobs table)."""

    def __init__(
        self, jobs: pd.DataFrame, gpus: list[int], given: Mapping[str, Any] | None = None
    ) -> None:
        self._gpus = gpus
        names = jobs[COLUMN] if COLUMN in jobs.columns else None
        #: whether any job has an application (else every rate is 1)
        self.in_use = names is not None and bool(names.notna().any())
        self.model: list[Application | None] = [None] * len(jobs)
        #: per job: the lowest rate it can have (1.0 without an application)
        self.slowest: list[float] = [1.0] * len(jobs)
        if self.in_use:
            self._bind(jobs, names, resolve_applications(given))

    def _bind(self, jobs: pd.DataFrame, names: pd.Series, known: dict[str, Application]) -> None:
        present = names.notna().to_numpy()
        unknown = present & ~names.isin(list(known)).to_numpy()
        if unknown.any():
            raise ValueError(
                f"Workload: column {COLUMN!r} must name a known application "
                f"{sorted(known)} (or add it: Simulation(..., applications={{name: table}})); "
                + describe_rows(jobs, unknown, COLUMN, "job_id")
            )
        model = [known[n] if p else None for n, p in zip(names.tolist(), present, strict=True)]
        unlisted = [
            m is not None and g not in m.gpu_counts for m, g in zip(model, self._gpus, strict=True)
        ]
        if any(unlisted):
            raise ValueError(
                f"Workload: column 'num_gpus' must be a GPU count the job's application "
                f"lists a throughput for ({_listed(model, unlisted)}); "
                + describe_rows(jobs, unlisted, "num_gpus", "job_id")
            )
        self.model = model
        self.slowest = [
            1.0 if m is None else m.slowest(g) for m, g in zip(model, self._gpus, strict=True)
        ]

    def rate(self, j: int, counts: np.ndarray) -> float:
        """Job ``j``'s rate on ``counts[i]`` GPUs of each of its nodes."""
        model = self.model[j]
        if model is None:
            return 1.0
        return model.rate(self._gpus[j], int(np.count_nonzero(counts)))


def _listed(model: list[Application | None], unlisted: list[bool]) -> str:
    first = next(m for m, bad in zip(model, unlisted, strict=True) if bad)
    return f"{first.name!r} lists {first.gpu_counts}"


__all__ = ["JobSpeed"]
