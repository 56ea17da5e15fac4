"""Gavel's round-based allocation policies (``docs/heterogeneity.md``): the allocations on
hand cases with exact answers, whole runs with exact end times, bad input, invariants.

The runs use ``PAIR``: node ``v0`` (1 V100) and node ``k0`` (1 K80). Application ``m`` runs
at rate 1 on the V100 and 0.5 on the K80; ``e`` at rate 1 on both.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.engine import Simulation
from analysim.inputs.applications import Application
from analysim.policies import SCHEDULERS
from analysim.policies.allocation import (
    AllocationScheduler,
    fifo_allocation,
    finish_time_allocation,
    isolated_rates,
    max_min_allocation,
    proportional_share,
)

GAVEL = ["fifo_perf", "max_min_fairness", "max_min_fairness_perf"]
GAVEL += ["finish_time_fairness", "finish_time_fairness_perf"]
PAIR = asim.Cluster.from_frame(
    pd.DataFrame({"node": ["v0", "k0"], "rack": "r0", "gpus": [1, 1], "gpu_type": ["v100", "k80"]}),
    name="pair",
)


def _app(name: str, k80: float) -> Application:
    table = pd.DataFrame(
        {"gpu_type": ["v100", "k80"], "gpus": 1, "nodes": 1, "throughput": [1.0, k80]}
    )
    return Application.from_table(name, table, reference="v100")


APPS = {"m": _app("m", 0.5), "e": _app("e", 1.0)}


def run(rows, scheduler, cluster=PAIR, **config) -> asim.Result:
    """Rows of (job_id, submit_time, duration, application, gpu_type or None); 1 GPU each."""
    frame = pd.DataFrame(
        rows, columns=["job_id", "submit_time", "duration", "application", "gpu_type"]
    )
    frame = frame.assign(vc="a", user="u", num_gpus=1)
    free = {"name": "constant"}
    config = {"quantum": 100.0, "checkpoint_cost": free, "migration_cost": free, **config}
    return asim.simulate(
        asim.Workload.from_frame(frame), cluster, applications=APPS, scheduler=scheduler, **config
    )


def ends(result: asim.Result) -> dict[str, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["end_time"], strict=True))


# -- the allocations, by hand ---------------------------------------------------------------
def test_names_are_gavels_and_registered():
    assert set(GAVEL) <= set(SCHEDULERS.names)


def test_proportional_share_and_isolated_rates_as_the_fairness_page_counts_them():
    np.testing.assert_allclose(proportional_share(np.array([36.0, 36.0, 36.0]), 2), [1 / 3] * 3)
    np.testing.assert_allclose(proportional_share(np.array([2.0, 2.0]), 8), [0.25, 0.25])
    # the worked example of docs/heterogeneity.md: a (2 GPUs) 0.5, b and c (1 GPU) 0.625
    rates = np.array([[1.0, 0.5], [1.0, 0.25], [1.0, 0.25]])
    got = isolated_rates(rates, np.array([2.0, 1.0, 1.0]), np.array([2.0, 2.0]))
    np.testing.assert_allclose(got, [0.5, 0.625, 0.625])


def test_max_min_gives_the_fast_type_to_the_job_that_needs_it():
    # a: 1 and 0.5, normalised by 0.75; b: 1 and 1, normalised by 1. b can reach 1 at most,
    # so the level is 1; then the most total: a on the fast type, b on the slow one
    x = max_min_allocation(np.array([[1.0, 0.5], [1.0, 1.0]]), np.ones(2), np.ones(2))
    np.testing.assert_allclose(x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-9)


def test_max_min_agnostic_rates_give_every_job_its_whole_time_within_capacity():
    x = max_min_allocation(np.ones((3, 2)), np.ones(3), np.array([2.0, 2.0]))
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-9)
    assert (x.sum(axis=0) <= 2 + 1e-9).all()


def test_max_min_counts_a_jobs_gpus():
    # one type of 3 GPUs; jobs of 3 GPUs and 1 (proportional share 1): max min(3 x_a, x_b)
    # with 3 x_a + x_b <= 3 and x_b <= 1 is 1; then the most total: x_a = 2/3, x_b = 1
    x = max_min_allocation(np.ones((2, 1)), np.array([3.0, 1.0]), np.array([3.0]))
    np.testing.assert_allclose(x, [[2 / 3], [1.0]], atol=1e-9)


def test_fifo_perf_takes_the_fastest_type_left_in_arrival_order_and_stops_at_a_full_one():
    rates = np.array([[1.0, 0.5], [1.0, 0.5], [0.2, 1.0]])
    x = fifo_allocation(rates, np.ones(3), np.ones(2))
    np.testing.assert_array_equal(x, [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])


def test_finish_time_fairness_splits_at_the_golden_ratio():
    # one GPU, two jobs of 100 s of work, isolated rate 0.5 (denominators 200); a arrived
    # 100 s ago: (100 + 100 / x) / 200 = (100 / (1 - x)) / 200 gives x^2 + x - 1 = 0
    x = finish_time_allocation(
        np.ones((2, 1)),
        np.ones(2),
        np.array([1.0]),
        since_arrival=np.array([100.0, 0.0]),
        remaining=np.array([100.0, 100.0]),
        isolated_so_far=np.zeros(2),
        isolated=np.array([0.5, 0.5]),
    )
    golden = (5**0.5 - 1) / 2
    np.testing.assert_allclose(x[:, 0], [golden, 1 - golden], atol=2e-4)


# -- whole runs, by hand --------------------------------------------------------------------
def test_fifo_perf_puts_the_second_job_on_the_k80_and_moves_it_at_the_next_reset():
    rows = [("a", 0, 300, "m", None), ("b", 0, 300, "m", None)]
    # a on the V100 ends at 300; b on the K80 has done 150 by then. With resets at most
    # every 1920 s, b stays on the K80 (150 / 0.5 more: 600) ...
    assert ends(run(rows, "fifo_perf")) == {"a": 300.0, "b": 600.0}
    # ... with resets at every change it migrates to the V100 at 300 (150 more: 450)
    got = run(rows, {"name": "fifo_perf", "min_reset_interval": 0})
    assert ends(got) == {"a": 300.0, "b": 450.0}
    assert tuple(got.jobs.set_index("job_id").loc["b", ["migrations", "preemptions"]]) == (1, 0)
    # a migration costs its migration cost: 30 s more work at rate 1
    slow = run(rows, {"name": "fifo_perf", "min_reset_interval": 0},
               migration_cost={"name": "constant", "seconds": 30})  # fmt: skip
    assert ends(slow) == {"a": 300.0, "b": 480.0}


def test_max_min_fairness_time_shares_one_gpu_round_by_round():
    # one GPU (a K80-only constraint): X = 0.5 each. Round 0: tie, a first. At 100 a has had
    # 150 of 200 worker seconds (priority 0.67), b 50 (2): b. At 200 both 150 of 300: tie, a
    # ends at 250 (rate 1 for e); its GPU idles until the round at 300; b ends at 350.
    rows = [("a", 0, 150, "e", "k80"), ("b", 0, 150, "e", "k80")]
    for name in ("max_min_fairness", "max_min_fairness_perf"):
        assert ends(run(rows, name)) == {"a": 250.0, "b": 350.0}


def test_a_job_waits_for_the_next_round_and_aware_policies_prefer_the_fast_type():
    got = run([("a", 30, 100, "m", None)], "max_min_fairness_perf")
    assert table_of(got) == {"a": ("v0", 100.0, 200.0)}  # starts at the round at 100


def table_of(result: asim.Result) -> dict:
    jobs = result.jobs.set_index("job_id")
    return {j: tuple(jobs.loc[j, ["nodes", "start_time", "end_time"]]) for j in jobs.index}


# -- bad input ------------------------------------------------------------------------------
def test_vc_owned_nodes_are_refused_with_a_reason():
    owned = asim.Cluster.from_frame(
        pd.DataFrame({"node": ["v0", "k0"], "rack": "r0", "gpus": 1, "vc": ["a", "b"]})
    )
    frame = pd.DataFrame(
        {
            "job_id": ["x"],
            "vc": "a",
            "user": "u",
            "submit_time": 0.0,
            "duration": 1.0,
            "num_gpus": 1,
        }
    )
    with pytest.raises(ValueError, match="max_min_fairness.*VC-owned nodes"):
        asim.simulate(asim.Workload.from_frame(frame), owned, scheduler="max_min_fairness")


def test_an_allocation_of_the_wrong_shape_is_refused_naming_the_policy():
    class Broken(AllocationScheduler):
        name = "broken"

        def allocation(self, inputs):
            return np.ones((len(inputs.rates), 1))  # one column for two GPU types

    with pytest.raises(ValueError, match=r"'broken' returned an allocation of shape \(2, 1\)"):
        run([("a", 0, 100, "m", None), ("b", 0, 100, "m", None)], Broken())


@pytest.mark.parametrize("bad", [-1, float("nan"), "soon"])
def test_a_bad_reset_interval_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="min_reset_interval"):
        SCHEDULERS.make({"name": "fifo_perf", "min_reset_interval": bad})


# -- invariants -----------------------------------------------------------------------------
@st.composite
def small_runs(draw):
    n = draw(st.integers(1, 8))
    rows = [
        (
            f"j{i}",
            draw(st.sampled_from([0.0, 50.0, 130.0, 400.0])),
            draw(st.sampled_from([40.0, 100.0, 250.0, 700.0])),
            draw(st.sampled_from(["m", "e"])),
            draw(st.sampled_from([None, None, "v100", "k80"])),
        )
        for i in range(n)
    ]
    return sorted(rows, key=lambda r: r[1]), draw(st.sampled_from(GAVEL)), draw(st.integers(0, 3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_every_job_runs_only_on_types_it_may_use_at_its_rate_and_finishes(case):
    rows, scheduler, seed = case
    frame = pd.DataFrame(
        rows, columns=["job_id", "submit_time", "duration", "application", "gpu_type"]
    )
    frame = frame.assign(vc="a", user="u", num_gpus=1)
    sim = Simulation(
        asim.Workload.from_frame(frame),
        PAIR,
        asim.SimConfig(scheduler=scheduler, quantum=100.0, seed=seed),
        applications=APPS,
    )
    starts: list[tuple[int, int]] = []  # (job, node) of every start and migration
    for name in ("start_running", "migrate"):
        act = getattr(sim, name)

        def spy(j, nodes, counts, *args, act=act, **kwargs):
            starts.append((j, int(nodes[0])))
            act(j, nodes, counts, *args, **kwargs)

        setattr(sim, name, spy)
    result = sim.run().result()
    node_type = ["v100", "k80"]
    for j, node in starts:
        allowed = rows[j][4]
        assert allowed is None or node_type[node] == allowed
    jobs = result.jobs
    assert jobs["end_time"].notna().all()
    expected_rate = {("m", "v0"): 1.0, ("m", "k0"): 0.5, ("e", "v0"): 1.0, ("e", "k0"): 1.0}
    for app, nodes, rate in zip(jobs["application"], jobs["nodes"], jobs["rate"], strict=True):
        assert rate == expected_rate[(app, nodes)]
    # never faster than the job's best rate; rho is never negative
    assert (jobs["end_time"] - jobs["start_time"] >= jobs["duration"] - 1e-6).all()
    assert (jobs["ftf_rho"] >= 0).all()
    # the same seed, the same run
    scaled = {"name": "size_scaled"}  # (the defaults)
    again = run(rows, scheduler, seed=seed, checkpoint_cost=scaled, migration_cost=scaled)
    pd.testing.assert_frame_equal(again.jobs, jobs)
