"""``saturate`` refuses, before placing anything, what it cannot honour: an ``inflate`` that
is not a finite number in (0, 100], a run larger than memory, tasks that never add GPU
demand, a cluster without GPUs, amounts that would wrap around, duplicate node names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fuzz_corpus_30 import NODES, TASKS

from analysim.experiments.saturation import saturate
from analysim.experiments.saturation.sweep import saturate_sweep
from analysim.faces.cli import main


def test_a_small_run_gives_the_curve_up_to_inflate():
    curve = saturate(TASKS, NODES, inflate=1.3, placement="best_fit")
    assert curve["arrived_pct"].tolist() == list(range(131))
    assert curve["allocated_pct"].max() <= 100


@pytest.mark.parametrize(
    "inflate", [float("inf"), float("nan"), 1e300, 101, 0, -1, "1.3", None, True, np.bool_(True)]
)
def test_inflate_must_be_a_finite_number_in_range_and_is_named(inflate):
    with pytest.raises(ValueError, match="inflate"):
        saturate(TASKS, NODES, inflate=inflate)


@pytest.mark.parametrize("seed", [True, -1, 1.5, "0", None, float("inf")])
def test_seed_must_be_a_whole_number_and_is_named(seed):
    with pytest.raises(ValueError, match="seed"):
        saturate(TASKS, NODES, seed=seed)


def test_a_run_beyond_memory_is_refused_with_the_estimate_the_limit_and_a_lower_inflate():
    big = pd.DataFrame(
        {"node": ["a", "b"], "cpu_milli": [8000] * 2, "memory_mib": [1000] * 2,
         "gpus": [10_000_000] * 2, "gpu_type": ["V"] * 2}
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"GiB.*limit is 2 GiB: lower inflate to at most"):
        saturate(TASKS, big)


def test_tasks_that_never_add_gpu_demand_are_refused():
    with pytest.raises(ValueError, match="no task asks for GPUs"):
        saturate(TASKS.assign(num_gpus=0), NODES)


def test_a_cluster_without_gpus_is_refused_not_an_all_nan_curve():
    with pytest.raises(ValueError, match=r"no node has GPUs.*'gpus'"):
        saturate(TASKS, NODES.assign(gpus=0))


@pytest.mark.parametrize("value", [np.inf, 1e30, 2.0**63, -1, np.nan, True])
@pytest.mark.parametrize("table", ["tasks", "nodes"])
def test_cpu_beyond_the_bounds_is_refused_not_wrapped_around(table, value):
    tasks, nodes = TASKS.copy(), NODES.copy()
    frame = tasks if table == "tasks" else nodes
    frame["cpu_milli"] = frame["cpu_milli"].astype(object)
    frame.loc[0, "cpu_milli"] = value
    with pytest.raises(ValueError, match=rf"{table}: column 'cpu_milli'"):
        saturate(tasks, nodes)


def test_duplicate_node_names_are_refused():
    with pytest.raises(ValueError, match=r"nodes: column 'node' must be unique.*'n0'"):
        saturate(TASKS, NODES.assign(node=["n0", "n0"]))


def test_the_sweep_checks_inflate_and_seeds_before_running():
    with pytest.raises(ValueError, match="inflate"):
        saturate_sweep(TASKS, NODES, placements=["best_fit"], seeds=[0], inflate=float("inf"))
    with pytest.raises(ValueError, match="seed"):
        saturate_sweep(TASKS, NODES, placements=["best_fit"], seeds=[True])


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "0"])
def test_the_cli_refuses_inflate_in_one_line(capsys, value):
    assert main(["saturate", "--quiet", "--inflate", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("analysim: error:") and "inflate" in err[0]
