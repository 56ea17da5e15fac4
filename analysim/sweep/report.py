"""Condensing a sweep frame: one row per configuration, metrics averaged over seeds."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

METRICS = ("avg_jct", "p95_jct", "avg_queue_delay", "gpu_utilization")


def parameter_columns(frame: pd.DataFrame) -> list[str]:
    """The configuration's columns of a sweep frame: those before ``seed``."""
    columns = list(frame.columns)
    if "seed" not in columns:
        raise ValueError(f"not a sweep frame (no 'seed' column): {columns}")
    return columns[: columns.index("seed")]


def overview(frame: pd.DataFrame, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """Per configuration: ``runs``, ``failed``, and the mean of ``metrics`` over the seeds
    that finished (metrics the frame lacks are left out)."""
    params = parameter_columns(frame)
    shown = [m for m in metrics if m in frame.columns]
    failed = frame["status"] != "ok"
    table = (
        frame.assign(runs=1, failed=failed.astype(int))
        .groupby(params, sort=False, dropna=False)[["runs", "failed"]]
        .sum()
    )
    if shown:
        means = frame[~failed].groupby(params, sort=False, dropna=False)[shown].mean()
        table = table.join(means)
    return table
