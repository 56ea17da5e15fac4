"""Notebook 10's study: agnostic against aware Gavel policies on the ``gavel`` preset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysim import presets
from analysim.experiments.heterogeneity_study import (
    COLUMNS,
    aware_gains,
    paired,
    policy_load_study,
    rho_quantiles,
)
from analysim.simulate import simulate


def test_paired_gives_each_family_then_its_aware_version():
    assert paired(["fifo", "max_min_fairness"]) == [
        "fifo",
        "fifo_perf",
        "max_min_fairness",
        "max_min_fairness_perf",
    ]
    with pytest.raises(ValueError, match=r"unknown policy families \['las'\]"):
        paired(["las"])


@pytest.fixture(scope="module")
def small():
    return policy_load_study(["fifo", "fifo_perf"], [2.0, 8.0], seeds=[0], jobs=40)


def test_rows_match_a_direct_run_under_the_preset_config(small):
    runs, rho = small
    assert list(runs.columns) == ["policy", "family", "aware", "jobs_per_hour", "seed", *COLUMNS]
    assert len(runs) == 4 and set(runs["family"]) == {"fifo"}
    assert runs.set_index("policy")["aware"].to_dict() == {"fifo": False, "fifo_perf": True}
    # the row at 8 jobs/h under fifo_perf is the summary of that run, made by hand
    workload = presets.workload("gavel", seed=0, jobs=40, jobs_per_hour=8.0)
    config = presets.config("gavel").replace(scheduler="fifo_perf")
    direct = simulate(workload, presets.cluster("gavel"), config)
    row = runs[(runs["policy"] == "fifo_perf") & (runs["jobs_per_hour"] == 8.0)].iloc[0]
    summary = direct.summary()
    for field in ("avg_jct", "makespan", "max_ftf_rho", "ftf_unfair_share", "ftf_jain"):
        assert row[field] == pytest.approx(float(summary[field]), rel=1e-12)
    done = direct.jobs[direct.jobs["status"] == "done"]
    assert row["p90_ftf_rho"] == pytest.approx(np.quantile(done["ftf_rho"], 0.9))
    mine = rho[(rho["policy"] == "fifo_perf") & (rho["jobs_per_hour"] == 8.0)]
    assert list(mine["job_id"]) == list(done["job_id"])
    assert len(rho) == 4 * 40  # every job finishes


def test_rho_quantiles_and_gains(small):
    runs, rho = small
    q = rho_quantiles(rho, 8.0, levels=5)
    assert list(q["fraction"].unique()) == [0.0, 0.25, 0.5, 0.75, 1.0]
    part = rho[(rho["policy"] == "fifo") & (rho["jobs_per_hour"] == 8.0)]["ftf_rho"]
    top = q[(q["policy"] == "fifo") & (q["fraction"] == 1.0)]["ftf_rho"].iloc[0]
    assert top == part.max()
    with pytest.raises(ValueError, match="no runs at 3.0 jobs an hour"):
        rho_quantiles(rho, 3.0)
    gains = aware_gains(runs)
    means = runs.set_index(["policy", "jobs_per_hour"])["avg_jct"]
    expected = means[("fifo_perf", 2.0)] / means[("fifo", 2.0)]
    assert gains.iloc[0]["avg_jct_aware_over_agnostic"] == pytest.approx(expected)


def test_hand_table_of_aware_over_agnostic():
    runs = pd.DataFrame(
        {
            "family": ["fifo"] * 4,
            "jobs_per_hour": [1.0] * 4,
            "aware": [False, False, True, True],
            "avg_jct": [100.0, 300.0, 50.0, 150.0],
        }
    )
    assert aware_gains(runs)["avg_jct_aware_over_agnostic"].tolist() == [0.5]
