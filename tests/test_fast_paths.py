"""The engine's shortcuts give exactly the runs of the plain rules they stand in for.

Each shortcut is switched off through a policy subclass (or compared with the numpy rule it
replaces), and the runs must agree frame for frame:

* a LAS ranking kept between rounds (``Scheduler.ranking_kept``) vs ranking afresh each round;
* eviction and reclaim trials counted in plain Python for jobs that fit on one node
  (``Placer.picks_any_fitting_node``) vs asking the placer about every trial;
* ``consolidate``'s plain-Python placement on a few nodes vs its numpy rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobs_table import make_jobs
from strategies import cases, workloads

from analysim import Cluster, simulate
from analysim.policies.placement import Consolidate, Topology, best_fit
from analysim.policies.scheduling import LAS

RUNS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class RerankingLAS(LAS):
    """LAS without the kept ranking: the engine ranks afresh every round."""

    ranking_kept = False


class AskingConsolidate(Consolidate):
    """Consolidate without the one-node shortcut: the engine asks it about every trial."""

    picks_any_fitting_node = False


def _same_runs(a, b) -> None:
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


@RUNS
@given(
    cases(max_jobs=10, max_duration=400),
    st.data(),
    st.sampled_from([(60.0,), (100.0, 1000.0), (30.0, 90.0, 300.0)]),
    st.sampled_from([None, 1.0, 4.0]),
)
def test_a_kept_las_ranking_gives_the_runs_of_ranking_every_round(drawn, data, limits, factor):
    case, _, config = drawn
    workload = data.draw(workloads(case.vcs, max_jobs=10, max_duration=400, gpus=(1, 2, 3, 4)))
    config = config.replace(preemption=data.draw(st.booleans()))
    kept, afresh = LAS(limits, factor), RerankingLAS(limits, factor)
    _same_runs(
        simulate(workload, case.cluster, config.replace(scheduler=kept)),
        simulate(workload, case.cluster, config.replace(scheduler=afresh)),
    )


@RUNS
@given(cases(max_jobs=10, max_duration=400), st.data())
def test_one_node_eviction_trials_choose_the_victims_the_placer_would(drawn, data):
    """With preemption (evictions) and borrowing (reclaims), jobs of 1-4 GPUs competing."""
    case, _, config = drawn
    workload = data.draw(workloads(case.vcs, max_jobs=10, max_duration=400, gpus=(1, 2, 3, 4)))
    config = config.replace(preemption=True, borrowing=data.draw(st.booleans()))
    counted = simulate(workload, case.cluster, config.replace(placement=Consolidate()))
    asked = simulate(workload, case.cluster, config.replace(placement=AskingConsolidate()))
    _same_runs(counted, asked)


def _outcome(rows, cluster, placer) -> dict[str, tuple]:
    jobs = simulate(
        make_jobs(rows),
        cluster,
        scheduler="sjf",
        preemption=True,
        checkpoint_cost=30,
        placement=placer,
    ).jobs
    return {
        row.job_id: (row.start_time, row.end_time, row.preemptions, row.nodes)
        for row in jobs.itertuples()
    }


@pytest.mark.parametrize("placer", [Consolidate(), AskingConsolidate()], ids=["counted", "asked"])
def test_evictions_keep_a_victim_the_later_ones_made_unneeded(placer):
    # Nodes n0, n1 of 4 GPUs. At 0: x1 (3 GPUs) -> n0, x2 (3) -> n1, x3 (1) -> n0 (best fit,
    # lowest), x4 (1) -> n1. h (4 GPUs, the shortest) arrives at 120; the lowest-ranked go
    # first: x4 (n1 has 1 free), x3 (n0 has 1), x2 (n1 has 4: fits). Evicting x3 turns out
    # not to be needed (n1 alone holds h), so x3 keeps running. h runs 120-720 on n1; x2 and
    # x4 resume there at 720 with 10,000 - 120 + 30 s left: they end at 10,630.
    rows = [
        ("x1", "a", 0, 10_000, 3),
        ("x2", "a", 0, 10_000, 3),
        ("x3", "a", 0, 10_000, 1),
        ("x4", "a", 0, 10_000, 1),
        ("h", "a", 120, 600, 4),
    ]
    assert _outcome(rows, Cluster.uniform(1, 2, 4), placer) == {
        "x1": (0, 10_000, 0, "n0"),
        "x2": (0, 10_630, 1, "n1"),
        "x3": (0, 10_000, 0, "n0"),
        "x4": (0, 10_630, 1, "n1"),
        "h": (120, 720, 0, "n1"),
    }


@pytest.mark.parametrize("placer", [Consolidate(), AskingConsolidate()], ids=["counted", "asked"])
def test_evictions_free_quota_not_just_gpus(placer):
    # VCs a and b hold 4-GPU quotas over n0, n1. At 0: a1 -> n0, a2 -> n0, b1 -> n1 (2 GPUs
    # each). h (a, 2 GPUs) arrives at 120: n1 has room, but a's quota is spent. Evicting b1
    # (the lowest-ranked) frees GPUs, not quota; evicting a2 too does, and then b1's eviction
    # is not needed. h takes a2's GPUs on n0 (best fit, lowest) until 720; a2 resumes there
    # with 10,000 - 120 + 30 s left.
    rows = [("a1", "a", 0, 10_000, 2), ("a2", "a", 0, 10_000, 2), ("b1", "b", 0, 10_000, 2)]
    rows.append(("h", "a", 120, 600, 2))
    quotas = Cluster.uniform(1, 2, 4, quotas={"a": 4, "b": 4})
    assert _outcome(rows, quotas, placer) == {
        "a1": (0, 10_000, 0, "n0"),
        "a2": (0, 10_630, 1, "n0"),
        "b1": (0, 10_000, 0, "n1"),
        "h": (120, 720, 0, "n0"),
    }


@st.composite
def free_maps(draw):
    """(num_gpus, free GPUs per node, topology) for up to 64 nodes on up to 4 racks."""
    n = draw(st.integers(1, 64))
    n_racks = draw(st.integers(1, 4))
    capacity = np.array(draw(st.lists(st.sampled_from([0, 2, 4, 8]), min_size=n, max_size=n)))
    whole = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    partial = np.array([draw(st.integers(0, c)) for c in capacity.tolist()])
    free = np.where(whole, capacity, partial).astype(np.int64)
    racks = np.sort(np.array(draw(st.lists(st.integers(0, n_racks - 1), min_size=n, max_size=n))))
    topology = Topology(capacity.astype(np.int64), racks.astype(np.int64), n_racks)
    num_gpus = draw(st.integers(1, int(free.sum()) + 4))
    return num_gpus, free, topology


@settings(max_examples=400, deadline=None)
@given(free_maps())
def test_consolidate_places_few_nodes_in_python_as_numpy_would(drawn):
    num_gpus, free, topology = drawn
    few = Consolidate._spread_few(num_gpus, free, topology)
    many = Consolidate._spread_many(num_gpus, free, topology)
    if many is None:
        assert few is None
    else:
        assert few is not None and few.dtype == many.dtype
        np.testing.assert_array_equal(few, many)


@settings(max_examples=300, deadline=None)
@given(free_maps())
def test_best_fit_on_few_nodes_is_the_tightest_lowest_node(drawn):
    num_gpus, free, _ = drawn
    room = np.where(free >= num_gpus, free, np.iinfo(np.int64).max)
    expected = int(room.argmin()) if (free >= num_gpus).any() else None
    assert best_fit(num_gpus, free) == expected


def test_best_fit_examples():
    free = np.array([3, 8, 2, 3, 0])
    assert best_fit(3, free) == 0  # two nodes with 3 free: the lower one
    assert best_fit(2, free) == 2
    assert best_fit(4, free) == 1
    assert best_fit(9, free) is None
