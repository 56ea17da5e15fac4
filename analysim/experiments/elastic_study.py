"""Notebook 09's studies of elastic jobs (``docs/elastic.md``): rigid against elastic on the
Pollux artifact's workloads, and a share of elastic jobs swept on a preset month.

>>> from analysim.experiments.elastic_study import share_study   # doctest: +SKIP
>>> share_study(workload, cluster, [0.0, 0.5, 1.0], base=real_scheduling("venus"))  # doctest: +SKIP

Each keeps a tidy table, one row per run, with :data:`COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.inputs.batch import batch_applications
from analysim.inputs.config import SimConfig
from analysim.inputs.elastic import with_elastic_jobs
from analysim.inputs.workload import Workload
from analysim.simulate import simulate

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result

COLUMNS = (
    "avg_jct",
    "makespan",
    "mean_goodput",
    "gpu_seconds_per_progress",
    "slowdown_fairness",
    "resizes",
)
"""What each row keeps: the summary's JCT, makespan and goodput fields, Jain's index of the
finished jobs' speeds (duration / JCT: 1 when every job is slowed down alike), and the
resizes of the run."""

POLLUX_WORKLOADS = tuple(range(1, 9))
"""The Pollux artifact's workloads bundled (load 1.0): ``workload-1.csv`` to ``-8``."""


def run_row(result: Result) -> dict[str, float]:
    """The :data:`COLUMNS` of one run (a run without elastic jobs: its goodput is 1 per job,
    its GPU-seconds per unit of progress its GPU-hours over its work, no resizes)."""
    jobs = result.jobs
    summary = result.summary()
    done = jobs[jobs["status"] == "done"]
    work = float(done["duration"].sum())
    held = done["gpu_seconds"] if "gpu_seconds" in done else done["num_gpus"] * done["run_time"]
    speed = (done["duration"] / done["jct"]).to_numpy(dtype=float)
    return {
        "avg_jct": float(summary["avg_jct"]),
        "makespan": float(summary["makespan"]),
        "mean_goodput": float((done["duration"] / done["run_time"]).mean()),
        "gpu_seconds_per_progress": float(held.sum()) / work if work > 0 else float("nan"),
        "slowdown_fairness": _jain(speed),
        "resizes": int(jobs["resizes"].sum()) if "resizes" in jobs else 0,
    }


def _jain(values: np.ndarray) -> float:
    if len(values) == 0 or not np.any(values):
        return float("nan")
    return float(values.sum() ** 2 / (len(values) * np.square(values).sum()))


def elastic_config(
    base: SimConfig | Mapping[str, Any], scheduler: str, rescale_cost: float
) -> SimConfig:
    """``base`` under the elastic ``scheduler`` with ``rescale_cost``; EASY backfill (which
    elastic schedulers refuse) becomes plain backfill."""
    config = base if isinstance(base, SimConfig) else SimConfig.from_dict(dict(base))
    backfill = True if config.backfill == "easy" else config.backfill
    return config.replace(scheduler=scheduler, rescale_cost=rescale_cost, backfill=backfill)


def share_study(
    workload: Workload,
    cluster: Cluster,
    shares: Sequence[float],
    *,
    base: SimConfig | Mapping[str, Any],
    scheduler: str = "elastic_goodput",
    rescale_cost: float = 30.0,
    seed: int = 0,
    applications: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The rigid run of ``workload`` under ``base`` (row ``run = "rigid"``, share 0), then
    per share of elastic jobs (:func:`~analysim.inputs.elastic.with_elastic_jobs`, drawn
    with ``seed``) the run under :func:`elastic_config`: columns ``run, elastic_share``
    and :data:`COLUMNS`."""
    config = base if isinstance(base, SimConfig) else SimConfig.from_dict(dict(base))
    rows = [{"run": "rigid", "elastic_share": 0.0, **_run(workload, cluster, config, applications)}]
    elastic = elastic_config(config, scheduler, rescale_cost)
    for share in shares:
        mixed = with_elastic_jobs(workload, share, seed=seed)
        rows.append(
            {
                "run": scheduler,
                "elastic_share": float(share),
                **_run(mixed, cluster, elastic, applications),
            }
        )
    return pd.DataFrame(rows)


def pollux_study(
    numbers: Sequence[int] = POLLUX_WORKLOADS,
    *,
    base: SimConfig | Mapping[str, Any] | None = None,
    scheduler: str = "elastic_goodput",
    rescale_cost: float = 30.0,
    share: float = 1.0,
    seed: int = 0,
    batch_sizes: bool = False,
) -> pd.DataFrame:
    """Each bundled Pollux workload (``numbers``) in the engine, with its applications'
    throughput: rigid under ``base`` (default FIFO, backfill), then with ``share`` of its
    jobs elastic under :func:`elastic_config`: columns ``workload, run`` and :data:`COLUMNS`.
    ``batch_sizes`` False (notebook 09's figures): the workloads' ``batch_size`` column is
    left out, so jobs run at their applications' table rates; True: jobs keep their batch
    sizes (``inputs/batch.py``) and elastic ones may take any batch size their application
    validated (``min_batch_size``/``max_batch_size``: its smallest and largest)."""
    from analysim.traces import read_pollux

    config = SimConfig.from_dict(dict(base or {"scheduler": "fifo", "backfill": True}))
    elastic = elastic_config(config, scheduler, rescale_cost)
    rows = []
    for number in numbers:
        trace = read_pollux(_pollux_path(number))
        rigid = _with_batch_limits(trace.workload, batch_sizes)
        mixed = with_elastic_jobs(rigid, share, seed=seed)
        for run, workload, run_config in (
            ("rigid", rigid, config),
            (scheduler, mixed, elastic),
        ):
            row = _run(workload, trace.cluster, run_config, None)
            rows.append({"workload": f"workload-{number}", "run": run, **row})
    return pd.DataFrame(rows)


def _with_batch_limits(workload: Workload, keep: bool) -> Workload:
    """``workload`` without its ``batch_size`` column, or (``keep``) with batch limits: each
    job's application's smallest and largest validated batch sizes."""
    jobs = workload.jobs
    if not keep:
        return Workload.from_frame(jobs.drop(columns=["batch_size"]), name=workload.name)
    known = batch_applications()
    apps = [known[name] for name in jobs["application"]]
    frame = jobs.assign(
        min_batch_size=[app.init_batch_size for app in apps],
        max_batch_size=[app.max_batch_size for app in apps],
    )
    return Workload.from_frame(frame, name=workload.name)


def _pollux_path(number: int):
    if number not in POLLUX_WORKLOADS:
        raise ValueError(
            f"pollux_study: workload {number!r} is not bundled; choose among {POLLUX_WORKLOADS}"
        )
    return resources.files("analysim") / "data" / "pollux" / "workloads" / f"workload-{number}.csv"


def _run(workload, cluster, config, applications) -> dict[str, float]:
    return run_row(simulate(workload, cluster, config, applications=applications))


__all__ = [
    "COLUMNS",
    "POLLUX_WORKLOADS",
    "elastic_config",
    "pollux_study",
    "run_row",
    "share_study",
]
