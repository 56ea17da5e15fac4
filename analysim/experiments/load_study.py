"""The paper's study (preemption off/on x migration off/on) across load, on a calibrated
preset under the scheduling its cluster ran (issue 14).

>>> from analysim.experiments.load_study import study_over_load, jct_gains
>>> frame = study_over_load("venus", load_scales=[0.8, 1.0, 1.5, 2.0])   # doctest: +SKIP
>>> jct_gains(frame)                                                      # doctest: +SKIP

Each load point generates the preset's month with ``load_scale`` times its arrival rate
(same seed) and runs the four arms of :data:`analysim.experiments.study.ARMS` with ``scheduler`` on
top of ``presets.config(name)`` (its placement, backfill, ...): only the two switches differ.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from analysim import presets
from analysim.experiments.study import run_arms, study_table

LOAD_SCALES = (0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
"""The default load points: 0.8 to 2 times the real arrival rate."""
_SET_BY_STUDY = ("scheduler", "preemption", "migration")


def study_over_load(
    name: str,
    load_scales: Iterable[float] = LOAD_SCALES,
    *,
    scheduler: Any = "las",
    seed: int = 0,
    days: float | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per load point and arm: ``preset, load_scale, arm``, the switches and
    :data:`analysim.experiments.study.METRICS`."""
    base = presets.config(name).to_dict()
    options = {k: v for k, v in base.items() if k not in _SET_BY_STUDY}
    options["seed"] = seed
    cluster = presets.cluster(name)
    frames = []
    for load_scale in load_scales:
        workload = presets.workload(name, seed=seed, load_scale=load_scale, days=days)
        results = run_arms(workload, cluster, scheduler=scheduler, progress=progress, **options)
        table = study_table(results).reset_index()
        table.insert(0, "load_scale", float(load_scale))
        table.insert(0, "preset", name)
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def jct_gains(frame: pd.DataFrame, metric: str = "avg_jct") -> pd.DataFrame:
    """``metric`` of the baseline over each arm's, per preset and load point (2.0: the arm
    halves it; 1.0: no effect)."""
    wide = frame.pivot_table(index=["preset", "load_scale"], columns="arm", values=metric)
    return wide.rdiv(wide["baseline"], axis=0).drop(columns="baseline")


def gains_over_load(
    name: str,
    load_scales: Iterable[float] = LOAD_SCALES,
    *,
    seeds: Iterable[int] = (0,),
    scheduler: Any = "las",
    days: float | None = None,
    metric: str = "avg_jct",
    progress: bool = False,
) -> pd.DataFrame:
    """:func:`study_over_load` for each of ``seeds`` (each draws its own month), as a tidy
    table for :func:`analysim.plotting.metric_curve`: one row per seed, load point and arm
    other than the baseline, columns ``preset, load_scale, seed, arm, jct_gain`` (the
    baseline's ``metric`` over the arm's) and the baseline's and the arm's ``metric``."""
    rows = []
    for seed in seeds:
        frame = study_over_load(
            name, load_scales, scheduler=scheduler, seed=seed, days=days, progress=progress
        )
        wide = frame.pivot_table(index="load_scale", columns="arm", values=metric)
        for arm in wide.columns.drop("baseline"):
            part = pd.DataFrame(
                {
                    "preset": name,
                    "load_scale": wide.index,
                    "seed": seed,
                    "arm": arm,
                    "jct_gain": wide["baseline"] / wide[arm],
                    f"baseline_{metric}": wide["baseline"],
                    metric: wide[arm],
                }
            )
            rows.append(part)
    return pd.concat(rows, ignore_index=True)
