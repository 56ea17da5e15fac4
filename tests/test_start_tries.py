"""The rounds' tries to start a job (``engine/starts.py``): each try returns a ``StartTry``
(started; else why, the GPUs free it saw and the reservation that stopped it), hand-checked
on the toy cluster (nodes n0, n1 on rack r0 and n2, n3 on rack r1, 4 GPUs each, one VC
``a``) and on a pool shared by quotas."""

from __future__ import annotations

import pytest
from jobs_table import make_jobs
from test_easy_backfill import STARVING

import analysim as asim
from analysim.engine import Simulation
from analysim.engine.records import FRAGMENTED, FULL, QUOTA, RESERVED
from analysim.engine.starts import STARTED, StartTry


def _sim(rows: list[tuple], cluster: asim.Cluster | None = None, **config) -> Simulation:
    cluster = cluster if cluster is not None else asim.presets.cluster("toy")
    return Simulation(make_jobs(rows), cluster, asim.SimConfig(scheduler="fifo", **config))


def test_a_job_too_big_for_the_free_gpus_is_full_and_stays_so_from_the_memo():
    # j1 holds n0, n1 and j2 holds n2 until 50: at t=10 j3 (16 GPUs) sees the 4 GPUs of n3
    sim = _sim([("j1", "a", 0, 100, 8), ("j2", "a", 0, 50, 4), ("j3", "a", 10, 30, 16)])
    sim.run(until=10)
    starts, j3 = sim.decider.starts, 2
    assert starts.try_start(j3) == StartTry(False, FULL, 4, None)
    assert starts._failed_at[j3] == 0  # no GPU of its group released since: the memo answers
    assert starts.try_start(j3) == StartTry(False, FULL, 4, None)


def test_a_job_that_fits_in_all_but_on_no_node_is_fragmented():
    # four 3-GPU jobs leave one GPU free on each node: a 2-GPU job must fit on one node
    rows = [(f"j{i}", "a", 0, 100, 3) for i in range(4)] + [("small", "a", 5, 10, 2)]
    sim = _sim(rows, placement="consolidate")
    sim.run(until=5)
    assert sim.free.tolist() == [1, 1, 1, 1]
    tried = sim.decider.starts.try_start(4)
    assert tried == StartTry(False, FRAGMENTED, 4, None) and not tried.started
    assert sim.decider.starts.try_start(4) == tried  # from the memo: still 4 GPUs free


def test_a_job_over_its_vcs_quota_sees_what_is_left_of_the_quota():
    pool = asim.Cluster.uniform(1, 2, 4, quotas={"a": 4, "b": 4})
    sim = _sim([("j1", "a", 0, 100, 3), ("j2", "a", 5, 10, 2), ("j3", "b", 5, 10, 4)], pool)
    sim.run(until=5)
    starts = sim.decider.starts
    assert starts.try_start(1) == StartTry(False, QUOTA, 1, None)  # 4 - 3 left to VC a
    assert starts.try_start(1) == StartTry(False, QUOTA, 1, None)  # from the memo


@pytest.mark.parametrize("alike", [False, True])
def test_a_job_that_would_delay_a_reservation_names_it_and_starts_without_it(alike):
    # EASY (the worked example of test_easy_backfill): at t=60 j3 (16 GPUs) is promised
    # t=100; j5 (4 GPUs for 200 s) fits on n3 but would hold it past 100: RESERVED by j3's
    # reservation. Without it, j5 starts.
    sim = _sim(STARVING, backfill="easy")
    sim.run(until=60)
    starts, j3, j5 = sim.decider.starts, 2, 4
    assert sim.free.tolist() == [0, 0, 0, 4]
    active = list(sim.decider.easy.reservations[0].values())
    assert [(r.head, r.at) for r in active] == [(j3, 100.0)]
    try_start = starts.try_start_alike if alike else starts.try_start
    reserved = StartTry(False, RESERVED, 4, (j3, 100.0))
    assert try_start(j5, active) == reserved
    assert try_start(j5, active) == reserved  # asked again: the same answer
    assert starts.try_start(j5) is STARTED
    assert sim.free.tolist() == [0, 0, 0, 0]
