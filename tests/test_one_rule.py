"""One set of rules for whole and shared GPUs: a run whose jobs all ask for whole GPUs gives
the same result whether or not the workload carries a ``gpu_milli`` column (which runs it in
resource mode), and resource mode keeps EASY backfill's promise against shares and CPU.

The toy cluster has nodes n0, n1 (rack r0) and n2, n3 (rack r1) of 4 GPUs each, one VC ``a``.
"""

from __future__ import annotations

import logging

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import cases
from test_easy_backfill import SPARE, STARVING

import analysim as asim
from analysim import Cluster, Simulation, Workload

COMPARED = ["job_id", "status", "start_time", "end_time", "preemptions", "migrations", "nodes"]


def with_milli(workload: Workload, milli: int = 1000) -> Workload:
    jobs = workload.jobs.copy()
    jobs["gpu_milli"] = milli
    return Workload.from_frame(jobs)


def outcome(workload: Workload, cluster: Cluster, config) -> pd.DataFrame:
    return Simulation(workload, cluster, config).run().result().jobs[COMPARED]


@pytest.mark.parametrize("rows", [STARVING, SPARE], ids=["starving", "spare"])
@pytest.mark.parametrize("backfill", [False, True, "easy"])
def test_the_easy_worked_examples_run_alike_with_gpu_milli_1000(rows, backfill):
    # docs/semantics.md's EASY example: j3 is promised t=100 and starts then in both modes
    from jobs_table import make_jobs

    whole = make_jobs(rows)
    config = asim.SimConfig(scheduler="fifo", backfill=backfill)
    cluster = asim.presets.cluster("toy")
    expected = outcome(whole, cluster, config)
    shared = Simulation(with_milli(whole), cluster, config)
    assert shared.resource_mode
    pd.testing.assert_frame_equal(shared.run().result().jobs[COMPARED], expected)
    if backfill == "easy" and rows is STARVING:
        assert expected.set_index("job_id").loc["j3", "start_time"] == 100


def _resource_cluster(cpu: int = 8000) -> Cluster:
    nodes = asim.presets.cluster("toy").nodes.copy()
    nodes["cpu_milli"] = cpu
    return Cluster.from_frame(nodes)


def _jobs(rows: list[tuple], **columns) -> Workload:
    frame = pd.DataFrame(rows, columns=["job_id", "submit_time", "duration", "num_gpus"])
    frame["vc"], frame["user"] = "a", "u"
    for name, values in columns.items():
        frame[name] = values
    return Workload.from_frame(frame)


def test_a_share_does_not_take_a_gpu_reserved_for_the_head():
    # j1 holds rack r0 until 100, j2 node n2 until 50; j3 (16 GPUs) is promised t=100 on
    # every GPU. At t=60 a half-GPU share j5 (to 260) would fit on n2 but hold a GPU j3
    # needs at 100: it waits; j3 starts at 100 as promised, j5 when j3 ends (130)
    rows = [("j1", 0, 100, 8), ("j2", 0, 50, 4), ("j3", 10, 30, 16), ("j5", 60, 200, 1)]
    workload = _jobs(rows, gpu_milli=[1000, 1000, 1000, 500])
    result = asim.simulate(workload, asim.presets.cluster("toy"), scheduler="fifo", backfill="easy")
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["j3", ["start_time", "end_time"]].tolist() == [100, 130]
    assert jobs.loc["j5", ["start_time", "end_time"]].tolist() == [130, 330]
    # a share that ends by the promise passes it
    rows[-1] = ("j5", 60, 40, 1)
    passed = asim.simulate(
        _jobs(rows, gpu_milli=[1000, 1000, 1000, 500]),
        asim.presets.cluster("toy"),
        scheduler="fifo",
        backfill="easy",
    ).jobs.set_index("job_id")
    assert passed.loc["j5", "start_time"] == 60 and passed.loc["j3", "start_time"] == 100


def test_a_cpu_request_does_not_take_cpu_reserved_for_the_head():
    # every node has 8 CPU (8000 milli). j1 holds n0 (4 GPUs, 4 CPU) and j2 n1-n3 until 100;
    # j3 (16 GPUs, 1 CPU each) is promised t=100: 4 GPUs and 4 CPU on every node, 4 CPU
    # spare on each. A CPU-only job j4 (6 CPU, 240 s) arriving at 20 fits n1 now but would
    # hold 6 CPU there past 100: under EASY it waits for j3 (130); with plain backfill it
    # starts and j3 waits for it (260)
    rows = [("j1", 0, 100, 4), ("j2", 0, 100, 12), ("j3", 10, 30, 16), ("j4", 20, 240, 0)]
    cluster = _resource_cluster(cpu=8000)

    def run(cpu_of_j4: int, backfill) -> pd.DataFrame:
        workload = _jobs(rows, cpu_milli=[4000, 0, 16000, cpu_of_j4])
        return asim.simulate(workload, cluster, scheduler="fifo", backfill=backfill).jobs

    easy = run(6000, "easy").set_index("job_id")
    assert easy.loc["j3", ["start_time", "end_time"]].tolist() == [100, 130]
    assert easy.loc["j4", "start_time"] == 130
    plain = run(6000, True).set_index("job_id")
    assert plain.loc["j4", "start_time"] == 20 and plain.loc["j3", "start_time"] == 260
    # 4 CPU fit in what j3 leaves spare at 100: it passes
    spare = run(4000, "easy").set_index("job_id")
    assert spare.loc["j4", "start_time"] == 20 and spare.loc["j3", "start_time"] == 100


def test_a_job_on_nodes_the_head_cannot_use_never_waits_for_its_reservation():
    # n0 has 1 A100, n1 2 V100s; priority scheduler (0 outranks 1), preemption, EASY.
    # a holds n0 until 100, so head h (A100) is promised n0 at 100; l (2 GPUs, any type)
    # takes n1 at 0. At 10, p (rank 0, 1 s) preempts l and takes one GPU of n1; l (2 GPUs)
    # cannot start, w (1 GPU, 300 s, runs past 100) can, on n1's other GPU: h can never use
    # a V100, so w does not delay it and starts at 10 (l preempts it back at 11). Before,
    # resource mode kept w to what its reservation's book left at 100 on every node, where
    # n1 was still l's (the reservation was made before the preemption): w waited until h
    # ended (110), though the whole-GPU run started it at 10
    nodes = pd.DataFrame(
        {
            "node": ["n0", "n1"],
            "rack": ["r0", "r0"],
            "gpus": [1, 2],
            "gpu_type": ["A100", "V100"],
            "vc": [None, None],
        }
    )
    rows = [("a", 0, 100, 1), ("h", 0, 10, 1), ("l", 0, 500, 2), ("w", 5, 300, 1), ("p", 10, 1, 1)]
    whole = _jobs(rows, priority=[0, 0, 1, 1, 0], gpu_type=["A100", "A100", None, None, None])
    config = asim.SimConfig(
        scheduler="priority",
        preemption=True,
        backfill="easy",
        placement="consolidate",
        quantum=1,
        checkpoint_cost=0,
    )
    expected = outcome(whole, Cluster.from_frame(nodes), config)
    got = outcome(with_milli(whole), Cluster.from_frame(nodes), config)
    pd.testing.assert_frame_equal(got, expected)
    jobs = got.set_index("job_id")
    assert jobs["start_time"].to_dict() == {"a": 0, "h": 100, "l": 0, "w": 10, "p": 10}
    assert jobs["end_time"].to_dict() == {"a": 100, "h": 110, "l": 501, "w": 409, "p": 11}
    assert jobs["preemptions"].to_dict() == {"a": 0, "h": 0, "l": 1, "w": 1, "p": 0}


def test_a_start_on_gpus_busy_at_a_reservations_time_claims_by_count_in_both_modes():
    # n0, n1 of 4 GPUs; priority (0 outranks 2), preemption, EASY, quantum 1. a (4 GPUs)
    # holds n0 until 100; c (1 GPU) until 50, b (1) and v (2, the lowest) hold n1. h (4
    # GPUs) arrives at 5: it is promised n0 at 100; n1's GPU that c frees by then is spare.
    # At 10 p (1 GPU) evicts v and takes one of v's GPUs: a start the reservation did not
    # check, on a GPU it counted busy at 100, which uses up n1's one spare GPU. w (1 GPU,
    # runs past 100) fits on v's other GPU but waits for h; v's eviction was a release, so
    # the next round (11) makes h's reservation again, with v's GPUs spare: w starts then.
    # Before, with gpu_milli 1000 p's GPU was taken from the reservation's book by its
    # identity (busy at 100: less than none left), which broke the reservation: w started
    # at 10
    rows = [
        ("v", 0, 1000, 2),
        ("a", 0, 100, 4),
        ("c", 0, 50, 1),
        ("b", 0, 1000, 1),
        ("h", 5, 100, 4),
        ("p", 10, 1000, 1),
        ("w", 10, 1000, 1),
    ]
    whole = _jobs(rows, priority=[2, 0, 0, 0, 1, 1, 1])
    config = asim.SimConfig(
        scheduler="priority",
        preemption=True,
        backfill="easy",
        placement="first_fit",
        quantum=1,
        checkpoint_cost=0,
    )
    cluster = Cluster.uniform(1, 2, 4)
    expected = outcome(whole, cluster, config)
    pd.testing.assert_frame_equal(outcome(with_milli(whole), cluster, config), expected)
    jobs = expected.set_index("job_id")
    assert jobs["start_time"].to_dict() == {
        "v": 0,
        "a": 0,
        "c": 0,
        "b": 0,
        "h": 100,
        "p": 10,
        "w": 11,
    }
    assert jobs["end_time"].to_dict() == {
        "v": 1190,
        "a": 100,
        "c": 50,
        "b": 1000,
        "h": 200,
        "p": 1010,
        "w": 1011,
    }


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(drawn=cases(max_jobs=12))
def test_whole_gpu_runs_equal_the_same_runs_with_gpu_milli_1000(drawn):
    """Every scheduler, placer, backfill mode, preemption, migration and defragmentation,
    borrowing, partition and quantum: the same jobs, starts, ends, preemptions, migrations
    and nodes (before, EASY backfill, migration's plans and a random placer's draws
    differed)."""
    case, workload, config = drawn
    logging.disable(logging.WARNING)
    try:
        expected = outcome(workload, case.cluster, config)
        got = outcome(with_milli(workload), case.cluster, config)
    finally:
        logging.disable(logging.NOTSET)
    pd.testing.assert_frame_equal(got, expected)


@pytest.mark.parametrize(
    "placement",
    ["first_fit", "consolidate", "spread", "topology", "random", "fgd", "best_fit", "dot_product"],
)
def test_a_job_whose_cpu_per_gpu_makes_it_span_nodes_runs_under_every_placer(placement):
    # every node has 4 GPUs but 2 CPU: a job of 8 GPUs with 1 CPU per GPU can take only 2
    # GPUs of a node, so it spans all four nodes (before, consolidate and the FGD placers,
    # which take only wholly free nodes for a job larger than a node, called it
    # unschedulable: no node was ever "whole" for it)
    workload = _jobs([("big", 0, 10, 8), ("small", 0, 10, 2)], cpu_milli=[8000, 2000])
    jobs = asim.simulate(workload, _resource_cluster(cpu=2000), placement=placement).jobs
    jobs = jobs.set_index("job_id")
    assert (jobs["status"] == "done").all()
    assert jobs.loc["big", "start_time"] == 0 and jobs.loc["big", "nodes"] == "n0,n1,n2,n3"
    assert jobs.loc["small", "start_time"] == 10  # no CPU left for it until "big" ends
