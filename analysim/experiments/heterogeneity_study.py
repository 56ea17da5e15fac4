"""Notebook 10's study of heterogeneity and fairness (``docs/heterogeneity.md``): Gavel's
heterogeneity-agnostic policies against their aware versions on the ``gavel`` preset
(36 V100 + 36 P100 + 36 K80) across input rates, under the preset's config (Gavel's 360 s
rounds, no checkpoint or migration cost).

>>> from analysim.experiments.heterogeneity_study import policy_load_study  # doctest: +SKIP
>>> runs, rho = policy_load_study(["fifo", "fifo_perf"], [2.0, 8.0], jobs=400)  # doctest: +SKIP

``runs`` is a tidy table, one row per (policy, rate, seed) with :data:`COLUMNS`; ``rho``
has one row per finished job with its ``ftf_rho``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysim import presets
from analysim.inputs.config import SimConfig
from analysim.simulate import simulate

FAMILIES = ("fifo", "max_min_fairness", "finish_time_fairness")
"""Gavel's policies that come in an agnostic and an aware (``_perf``) version."""

POLICIES = (
    "fifo",
    "fifo_perf",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
)
"""Gavel's three policies, each agnostic then aware (``_perf``)."""

COLUMNS = (
    "avg_jct",
    "makespan",
    "median_ftf_rho",
    "p90_ftf_rho",
    "max_ftf_rho",
    "ftf_unfair_share",
    "ftf_jain",
)
"""What each row keeps: the summary's mean JCT, makespan and finish-time fairness fields,
and the median and 90th percentile of the finished jobs' rho."""

RHO_LEVELS = 101
"""Quantile levels of each run's rho distribution in :func:`rho_quantiles` (0, 0.01, ... 1)."""


def paired(families: Sequence[str]) -> list[str]:
    """Each of ``families`` (of :data:`FAMILIES`) then its aware version."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown policy families {unknown}; choose among {list(FAMILIES)}")
    return [name for family in families for name in (family, f"{family}_perf")]


def policy_label(policy: str) -> tuple[str, bool]:
    """The policy family (``max_min_fairness``) and whether it is the aware version."""
    aware = policy.endswith("_perf")
    return (policy[: -len("_perf")] if aware else policy), aware


def run_row(summary: pd.Series, rho: np.ndarray) -> dict[str, float]:
    """The :data:`COLUMNS` of one run, from its summary and its finished jobs' rho."""
    quantiles = np.quantile(rho, [0.5, 0.9]) if len(rho) else [np.nan, np.nan]
    return {
        "avg_jct": float(summary["avg_jct"]),
        "makespan": float(summary["makespan"]),
        "median_ftf_rho": float(quantiles[0]),
        "p90_ftf_rho": float(quantiles[1]),
        "max_ftf_rho": float(summary["max_ftf_rho"]),
        "ftf_unfair_share": float(summary["ftf_unfair_share"]),
        "ftf_jain": float(summary["ftf_jain"]),
    }


def policy_load_study(
    policies: Sequence[str],
    rates: Sequence[float],
    seeds: Sequence[int] = (0,),
    jobs: int = 400,
    base: SimConfig | Mapping[str, Any] | None = None,
    multi_gpu: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the ``gavel`` preset's ``jobs`` jobs (drawn with each seed, at each of ``rates``
    jobs an hour) under each policy, on the ``gavel`` cluster, from ``base`` (default: the
    preset's config). Returns the runs (columns ``policy, family, aware, jobs_per_hour,
    seed`` and :data:`COLUMNS`) and the finished jobs' rho (``policy, jobs_per_hour, seed,
    job_id, ftf_rho``)."""
    config = presets.config("gavel") if base is None else base
    config = config if isinstance(config, SimConfig) else SimConfig.from_dict(dict(config))
    cluster = presets.cluster("gavel")
    rows, rhos = [], []
    for rate in rates:
        for seed in seeds:
            workload = presets.workload(
                "gavel", seed=seed, jobs=jobs, jobs_per_hour=float(rate), multi_gpu=multi_gpu
            )
            for policy in policies:
                result = simulate(workload, cluster, config.replace(scheduler=policy, seed=seed))
                done = result.jobs[result.jobs["status"] == "done"]
                rho = done["ftf_rho"].to_numpy(dtype=float)
                family, aware = policy_label(policy)
                keys = {"policy": policy, "jobs_per_hour": float(rate), "seed": int(seed)}
                rows.append(
                    {**keys, "family": family, "aware": aware, **run_row(result.summary(), rho)}
                )
                rhos.append(pd.DataFrame({**keys, "job_id": done["job_id"], "ftf_rho": rho}))
    order = ["policy", "family", "aware", "jobs_per_hour", "seed", *COLUMNS]
    runs = pd.DataFrame(rows, columns=order)
    columns = ["policy", "jobs_per_hour", "seed", "job_id", "ftf_rho"]
    rho = pd.concat(rhos, ignore_index=True) if rhos else pd.DataFrame(columns=columns)
    return runs, rho.reset_index(drop=True)


def rho_quantiles(rho: pd.DataFrame, rate: float, levels: int = RHO_LEVELS) -> pd.DataFrame:
    """The rho distribution of each policy's runs at ``rate`` jobs an hour (its seeds
    pooled): ``policy, ftf_rho, fraction`` at ``levels`` evenly spaced quantile levels."""
    at = rho[np.isclose(rho["jobs_per_hour"], rate)]
    if at.empty:
        rates = sorted(rho["jobs_per_hour"].unique())
        raise ValueError(f"no runs at {rate} jobs an hour; the rates are {rates}")
    fractions = np.linspace(0.0, 1.0, levels)
    frames = [
        pd.DataFrame(
            {
                "policy": policy,
                "ftf_rho": np.quantile(part["ftf_rho"], fractions),
                "fraction": fractions,
            }
        )
        for policy, part in at.groupby("policy", sort=False)
    ]
    return pd.concat(frames, ignore_index=True)


def aware_gains(runs: pd.DataFrame, metric: str = "avg_jct") -> pd.DataFrame:
    """Per family and rate, ``metric`` of the aware policy over the agnostic one (mean over
    the seeds): below 1 when the aware version does better on a time or on rho."""
    means = runs.groupby(["family", "jobs_per_hour", "aware"])[metric].mean().unstack("aware")
    return (means[True] / means[False]).rename(f"{metric}_aware_over_agnostic").reset_index()


__all__ = [
    "COLUMNS",
    "FAMILIES",
    "POLICIES",
    "aware_gains",
    "paired",
    "policy_load_study",
    "rho_quantiles",
]
