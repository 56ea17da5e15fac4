"""The rounds' tries to start a job (``engine/starts.py``): each try returns a ``StartTry``
(started; else why, the GPUs free it saw and the reservation that stopped it), hand-checked
on the toy cluster (nodes n0, n1 on rack r0 and n2, n3 on rack r1, 4 GPUs each, one VC
``a``) and on a pool shared by quotas."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from jobs_table import make_jobs
from spies import spy_calls
from test_easy_backfill import STARVING
from test_fast_paths import _busy_jobs, _same_runs, same_decisions

import analysim as asim
from analysim.engine import Simulation, simulation
from analysim.engine.records import FRAGMENTED, FULL, QUOTA, RESERVED
from analysim.engine.shortcuts import Shortcuts
from analysim.engine.starts import STARTED, StartTries, StartTry


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


# four 3-GPU jobs leave one GPU free on each node until t=100; at t=5 ``big`` (16 GPUs) is
# promised t=100; ``short`` (2 GPUs, ends by then: keeps no reservation) and ``long`` (2
# GPUs, runs past it: keeps big's) fit in all but on no node
FRAGMENTED_BEHIND_A_HEAD = [(f"j{i}", "a", 0, 100, 3) for i in range(4)] + [
    ("big", "a", 5, 30, 16),
    ("short", "a", 5, 10, 2),
    ("long", "a", 5, 500, 2),
]


@dataclass(frozen=True)
class _WithoutRefusedAlike(Shortcuts):
    """Every shortcut but the one that answers a try from an alike job's failure for want of
    room, whatever reservations it keeps."""

    refused_alike: bool = False


@pytest.mark.parametrize("shortcut", [True, False])
def test_a_failure_for_want_of_room_answers_alike_jobs_whatever_they_keep(shortcut, monkeypatch):
    # the round at t=5: big is full at a glance (4 GPUs free: not placed) and reserves t=100;
    # short is fragmented;
    # long, of short's needs, is fragmented too though it keeps big's reservation: with the
    # shortcut the round reads short's failure (``StartTries.refused``) and places long
    # nowhere (without it, long is placed on what big's reservation leaves); at t=100 big
    # starts. Long's records are those of the plain try.
    if not shortcut:
        monkeypatch.setattr(simulation, "Shortcuts", _WithoutRefusedAlike)
    placed = spy_calls(monkeypatch, StartTries, "place")
    sim = _sim(FRAGMENTED_BEHIND_A_HEAD, backfill="easy", placement="consolidate")
    decisions = sim.run().result().decisions
    big, short, long = 4, 5, 6
    assert decisions.rounds["time"].tolist() == [0, 5, 100, 130]
    tries = decisions.tries
    assert tries[tries["round"] == 1][["job", "reason", "free"]].values.tolist() == [
        [big, "full", 4],
        [short, "fragmented", 4],
        [long, "fragmented", 4],
    ]
    assert tries["reserved_at"].iloc[0] == 100
    assert placed[4:6] == ([short, big] if shortcut else [short, long])


@pytest.mark.parametrize(
    ("scheduler", "preemption", "backfill"),
    [("fifo", False, "easy"), ("las", True, "easy"), ("sjf", False, True)],
)
def test_whole_runs_with_failures_read_for_alike_jobs_are_those_without(
    scheduler, preemption, backfill, monkeypatch
):
    """A long queue on a full cluster: the run, and every decision record explain reads,
    with ``refused_alike`` are those without it (which tries more jobs) and those of the
    reference mode."""
    workload = _busy_jobs(160, seed=5)
    cluster = asim.Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = asim.SimConfig(scheduler=scheduler, preemption=preemption, backfill=backfill)
    tried = spy_calls(monkeypatch, StartTries, "try_start_alike")
    fast = Simulation(workload, cluster, config).run().result()
    fast_tries = len(tried)
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutRefusedAlike)
    tried.clear()
    slow = Simulation(workload, cluster, config).run().result()
    assert fast_tries < len(tried)  # the shortcut was taken
    monkeypatch.undo()
    plain = Simulation(workload, cluster, config, reference=True).run().result()
    _same_runs(fast, slow)
    _same_runs(fast, plain)
    same_decisions(fast, slow)


def test_the_rounds_alone_read_the_refused_tries_and_an_alike_try_fails_alike(monkeypatch):
    # FRAGMENTED_BEHIND_A_HEAD at t=5: short (2 GPUs) failed fragmented, for want of room:
    # its needs are refused at the group's epoch, and the round read long's failure there
    # (placed once: short). Asked directly, try_start_alike does not look the refused tries
    # up again (the rounds do): it places long (on what big's reservation leaves) and fails
    # alike.
    placed = spy_calls(monkeypatch, StartTries, "place")
    sim = _sim(FRAGMENTED_BEHIND_A_HEAD, backfill="easy", placement="consolidate")
    sim.run(until=5)
    starts, big, short, long = sim.decider.starts, 4, 5, 6
    assert placed[4:] == [short]  # (big: full at a glance)
    failed = StartTry(False, FRAGMENTED, 4, None)
    assert starts.refused(0) == {starts.needs_of[short]: failed}
    assert starts.needs_of[long] == starts.needs_of[short]
    active = list(sim.decider.easy.reservations[0].values())
    assert [(r.head, r.at) for r in active] == [(big, 100.0)]
    assert starts.try_start_alike(long, active) == failed
    assert placed[5:] == [long, long]  # on what big's reservation leaves, then on all free
