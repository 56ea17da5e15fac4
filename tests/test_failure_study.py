"""Notebook 11's studies (``analysim.experiments.failure_study``): exact numbers on the
one-node case of ``docs/failures.md``."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import analysim as asim
from analysim.experiments.failure_study import (
    checkpoint_sweep,
    mtbf_label,
    preemption_gains,
    preemption_under_failures,
    young_daly_marks,
)

ONE_NODE = asim.Cluster.uniform(1, 1, 4, name="one-node")  # node "n0": 4 GPUs
JOB = asim.Workload.from_frame(
    pd.DataFrame(
        {
            "job_id": ["j"],
            "vc": ["a"],
            "user": ["u"],
            "submit_time": [0],
            "duration": [1000],
            "num_gpus": [4],
        }
    )
)


def test_checkpoint_sweep_counts_the_checkpoints_when_no_node_fails():
    # an MTBF of 3 x 10^9 s (95 years): no failure within the run (seed 0), so each
    # interval only adds its checkpoints: 1,000 s of work every 300 s -> 3 checkpoints of
    # 20 s; every 600 s -> 1
    frame = checkpoint_sweep(JOB, ONE_NODE, [300, 600], [3e9], repair_time=100, checkpoint_cost=20)
    assert list(frame.columns) == [
        "checkpoint_every",
        "node_mtbf",
        "mtbf",
        "seed",
        "avg_jct",
        "lost_gpu_hours",
        "goodput_ratio",
        "restarts",
    ]
    assert frame["avg_jct"].tolist() == [1060.0, 1020.0]
    assert frame["lost_gpu_hours"].tolist() == [0.0, 0.0]
    assert frame["restarts"].tolist() == [0, 0]
    assert frame["goodput_ratio"].tolist() == pytest.approx([1000 / 1060, 1000 / 1020])


TOY = asim.presets.cluster("toy")  # nodes n0-n3 of 4 GPUs


@pytest.mark.parametrize("cluster, end", [(ONE_NODE, 1370.0), (TOY, 1170.0)], ids=["one", "toy"])
def test_preemption_under_failures_on_the_worked_example(cluster, end):
    # docs/failures.md: the job runs on n0, down 700-900; checkpoints of 20 s every 300 s, 50 s
    # to restart: at 700 it has 600 s saved, loses 60 s on 4 GPUs; alone on n0 it restarts
    # at 900 and ends at 900 + 50 + 400 + 20 = 1,370; on toy it restarts at once on another
    # node and ends at 700 + 470 = 1,170; either way 1,170 s on its GPUs. Without failures
    # (and so without checkpoints) it ends at 1,000; alone, preemption changes nothing
    failures = {
        "failures": [{"node": "n0", "down": 700, "up": 900}],
        "checkpoint_every": 300,
        "restart_overhead": 50,
    }
    frame = preemption_under_failures(JOB, cluster, failures, checkpoint_cost=20, scheduler="las")
    by_arm = frame.set_index("arm")
    assert by_arm["avg_jct"].to_dict() == {
        "no preemption, no failures": 1000.0,
        "preemption, no failures": 1000.0,
        "no preemption, failures": end,
        "preemption, failures": end,
    }
    on = by_arm.loc["preemption, failures"]
    assert on["lost_gpu_hours"] == pytest.approx(4 * 60 / 3600)
    assert on["restarts"] == 1 and on["goodput_ratio"] == pytest.approx(1000 / 1170)
    off = by_arm.loc["preemption, no failures"]
    assert off["lost_gpu_hours"] == 0 and off["restarts"] == 0 and math.isnan(off["goodput_ratio"])
    assert preemption_gains(frame).tolist() == [1.0, 1.0]


def test_young_daly_marks_and_labels():
    assert young_daly_marks([604800, 2592000], 40) == pytest.approx(
        {"7 days": math.sqrt(2 * 40 * 604800), "30 days": 14400.0}
    )
    assert young_daly_marks([2592000], 40, nodes=4) == {"30 days": 7200.0}
    assert mtbf_label(43200) == "12 h"
