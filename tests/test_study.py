"""The paper's study: four arms, and the direction of its two findings across seeds."""

from __future__ import annotations

import pytest

import analysim as asim
from analysim.experiments.study import ARMS, METRICS, paper_study


def test_the_study_runs_four_arms_that_differ_only_in_the_two_switches():
    workload, cluster = asim.presets.workload("toy"), asim.presets.cluster("toy")
    table = paper_study(workload, cluster, scheduler="srtf", quantum=30)
    assert table.index.tolist() == list(ARMS)
    assert table[["preemption", "migration"]].values.tolist() == [
        [False, False],
        [False, True],
        [True, False],
        [True, True],
    ]
    assert set(METRICS) <= set(table.columns)
    # the baseline arm is exactly a plain run of the same scheduler
    plain = asim.simulate(workload, cluster, scheduler="srtf", quantum=30).summary()
    assert table.loc["baseline", "avg_jct"] == plain["avg_jct"]
    assert table.loc["baseline", "preemptions"] == 0 == table.loc["migration", "preemptions"]


def test_the_arms_own_the_switches():
    with pytest.raises(ValueError, match="set by the arms"):
        paper_study(asim.presets.workload("toy"), asim.presets.cluster("toy"), preemption=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_preemption_and_migration_move_jct_and_fragmentation_the_way_the_paper_reports(seed):
    # one overloaded day of the venus preset (load x2) on its 1,080 GPUs and 16 VCs
    workload = asim.presets.workload("venus_overloaded", seed=seed, days=1, load_scale=2)
    table = paper_study(workload, asim.presets.cluster("venus_overloaded"), seed=seed)
    base, mig = table.loc["baseline"], table.loc["migration"]
    pre, both = table.loc["preemption"], table.loc["preemption+migration"]
    # preemption lowers average JCT (the paper's first finding)
    assert pre["avg_jct"] < 0.8 * base["avg_jct"]
    assert both["avg_jct"] < 0.8 * mig["avg_jct"]
    # migration lowers fragmented GPUs and does not raise average JCT (the second)
    assert mig["avg_fragmented_gpus"] < base["avg_fragmented_gpus"]
    assert both["avg_fragmented_gpus"] < pre["avg_fragmented_gpus"]
    assert mig["avg_jct"] <= base["avg_jct"]
    assert both["avg_jct"] <= pre["avg_jct"]
    assert mig["migrations"] > 0 and both["migrations"] > 0
    assert base["migrations"] == 0 == pre["migrations"]
