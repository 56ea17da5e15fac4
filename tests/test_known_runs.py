"""Runs of waiting jobs whose tries are known at a glance, recorded at once
(``engine/known_runs.py``, ``Shortcuts.known_runs``): hand-checked on the toy cluster (nodes
n0, n1 on rack r0 and n2, n3 on rack r1, 4 GPUs each, one VC ``a``), and whole runs
compared with and without the shortcut and with the reference mode."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from jobs_table import make_jobs
from spies import spy_calls
from test_fast_paths import _busy_jobs, _same_runs, same_decisions

import analysim as asim
from analysim.engine import Simulation, simulation
from analysim.engine.known_runs import KnownRuns
from analysim.engine.shortcuts import Shortcuts

# j0 holds n0, n1 and j1, j2 three GPUs of n2 and of n3 until t=100: 2 GPUs free, one on n2
# and one on n3. At t=5 the queue: head (16 GPUs, promised t=100, when all 16 are free),
# x (2 GPUs: fits in all, on no node), a (8), y (2, like x), b (4), z (1 GPU past t=100: it
# fits, but on GPUs the head needs then), w (8)
BEHIND_A_HEAD = [
    ("j0", "a", 0, 100, 8),
    ("j1", "a", 0, 100, 3),
    ("j2", "a", 0, 100, 3),
    ("head", "a", 5, 30, 16),
    ("x", "a", 5, 10, 2),
    ("a", "a", 5, 10, 8),
    ("y", "a", 5, 500, 2),
    ("b", "a", 5, 10, 4),
    ("z", "a", 5, 500, 1),
    ("w", "a", 5, 10, 8),
]


@dataclass(frozen=True)
class _WithoutKnownRuns(Shortcuts):
    """Every shortcut but the runs of known tries recorded at once."""

    known_runs: bool = False


def _counting_runs(monkeypatch) -> list[int]:
    """How many jobs after the first each run of known tries recorded, run by run."""
    return spy_calls(monkeypatch, KnownRuns, "record", results=True)


@pytest.mark.parametrize("shortcut", [True, False])
def test_a_run_of_full_and_refused_jobs_is_recorded_up_to_the_first_unknown(shortcut, monkeypatch):
    # the round at t=5: head is full (2 GPUs free: the reservation is made); x is tried and
    # fragmented; from a on, a (full: 8 > 2), y (x's needs: fragmented) and b (full) are
    # known: one run of 3; z (1 GPU) is tried (reserved); w (full) is a run of 1
    if not shortcut:
        monkeypatch.setattr(simulation, "Shortcuts", _WithoutKnownRuns)
    counts = _counting_runs(monkeypatch)
    jobs = make_jobs(BEHIND_A_HEAD)
    cluster = asim.presets.cluster("toy")
    config = asim.SimConfig(scheduler="fifo", backfill="easy", placement="consolidate")
    sim = Simulation(jobs, cluster, config)
    decisions = sim.run().result().decisions
    assert decisions.rounds["time"].tolist()[:2] == [0, 5]
    tries = decisions.tries[decisions.tries["round"] == 1]
    names = ["head", "x", "a", "y", "b", "z", "w"]
    assert tries["job_id"].tolist() == names
    reasons = "full fragmented full fragmented full reserved full".split()
    assert tries["reason"].tolist() == reasons
    assert tries["free"].tolist() == [2] * 7
    assert tries["reserved_for"].tolist() == ["head", "", "", "", "", "head", ""]
    assert tries["reserved_at"].iloc[0] == tries["reserved_at"].iloc[5] == 100
    assert counts[:2] == ([2, 0] if shortcut else [])
    assert (sim.decider._known_runs is not None) is shortcut


@pytest.mark.parametrize(
    ("scheduler", "backfill", "vc_nodes"),
    [
        ("fifo", "easy", {"a": 4, "b": 4}),
        ("sjf", "easy", {"a": 4, "b": 4}),
        ("fifo", True, {"a": 4, "b": 4}),
        ("fifo", "easy", None),  # one pool: one queue of jobs of both VCs
    ],
)
def test_whole_runs_with_known_runs_are_those_without(scheduler, backfill, vc_nodes, monkeypatch):
    """A long queue on a full cluster: the run, and every decision record explain reads,
    with runs of known tries recorded at once are those without (every job tried one by
    one), and the run is the reference mode's."""
    workload = _busy_jobs(160, seed=5)
    cluster = asim.Cluster.uniform(4, 2, 4, vc_nodes=vc_nodes)
    config = asim.SimConfig(scheduler=scheduler, backfill=backfill)
    counts = _counting_runs(monkeypatch)
    fast = Simulation(workload, cluster, config).run().result()
    assert sum(counts) > 50  # the shortcut was taken
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutKnownRuns)
    slow = Simulation(workload, cluster, config).run().result()
    monkeypatch.undo()
    plain = Simulation(workload, cluster, config, reference=True).run().result()
    _same_runs(fast, slow)
    _same_runs(fast, plain)
    same_decisions(fast, slow)


def test_a_round_reads_the_waiting_ranks_as_lent_while_jobs_start_and_arrive():
    # FIFO on the toy cluster: ranks are job indices; head, x, a, y (3..6) wait in one group
    config = asim.SimConfig(scheduler="fifo", backfill="easy", placement="consolidate")
    sim = Simulation(make_jobs(BEHIND_A_HEAD), asim.presets.cluster("toy"), config)
    ranker, group = sim.decider.ranker, sim.facts.group[3]
    for j in (3, 4, 5, 6):
        ranker.queued(j)
    lent = ranker.lend_waiting_ranks(group)
    assert lent is ranker.waiting_ranks[group] and lent == [3, 4, 5, 6]  # not copied
    ranker.unqueued(4)  # x starts in the round: the round reads on as it was lent
    ranker.queued(8)
    assert lent == [3, 4, 5, 6] and ranker.waiting_ranks[group] == [3, 5, 6, 8]
    lent = ranker.lend_waiting_ranks(group)
    ranker.take_back_waiting_ranks()  # the round is over: changed in place again
    ranker.unqueued(3)
    assert lent is ranker.waiting_ranks[group] and lent == [5, 6, 8]
    # a stream of the lent ranks reads on from any position, past the end too
    stream = ranker.waiting_stream(lent)
    assert list(stream.waiting_from(1)) == [(1, 6), (2, 8)]
    assert list(stream.waiting_from(3)) == list(stream.waiting_from(5)) == []
