"""Backfill rounds record a stretch of jobs seen full at a glance at once
(``Shortcuts.glance_runs``, ``analysim/engine/below.py``): the runs, and every decision
record that ``explain`` reads, are those of the rounds that walk the queue job by job, and
of the reference mode."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobs_table import make_jobs
from strategies import cases

from analysim import Cluster, SimConfig, Workload
from analysim.engine import Simulation, rounds, simulation
from analysim.engine.below import EvictableBelow, WaitingBySize
from analysim.engine.las_ranking import KeyedOrder
from analysim.engine.shortcuts import Shortcuts
from analysim.policies.scheduling import LAS

RUNS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class _WithoutGlanceRuns(Shortcuts):
    """Every shortcut but the one that records a stretch of glanced jobs at once."""

    glance_runs: bool = False


def _index(jobs: list[tuple[int, int]]) -> WaitingBySize:
    index = WaitingBySize()
    for gpus, pos in jobs:
        index.add(gpus, pos)
    return index


def test_the_next_unglanced_job_is_the_first_asking_no_more_than_is_free():
    # positions 3, 5, 9 ask 4, 8, 1 GPUs; 11 asks 2; sizes are kept in increasing order
    index = _index([(4, 3), (8, 5), (1, 9), (2, 11)])
    assert list(index.lists) == [1, 2, 4, 8]
    assert index.next_unglanced(after=3, free=0, below=None) == np.inf
    assert index.next_unglanced(after=3, free=1, below=None) == 9
    assert index.next_unglanced(after=3, free=8, below=None) == 5
    assert index.next_unglanced(after=9, free=2, below=None) == 11
    index.remove(1, 9)
    assert index.next_unglanced(after=3, free=1, below=None) == np.inf


def test_evictable_jobs_below_raise_the_bound_only_above_them():
    # waiting keys 1 (4 GPUs), 4 (4 GPUs), 8 (2 GPUs); running keys 2 (3 GPUs, evictable),
    # 6 (2 GPUs, evictable) and 7 (5 GPUs, protected): below key 1 they hold 5, below key 4
    # 2, below key 8 none
    order = KeyedOrder(100)
    order.running = [2, 6, 7]
    gpus = [0] * 100
    gpus[2], gpus[6], gpus[7] = 3, 2, 5
    evictable_from = np.zeros(100)
    evictable_from[7] = 50.0
    below = EvictableBelow(order, gpus, evictable_from, now=10.0)
    assert below.held_from == [5, 2, 0, 0] and below.lowest_protected == 7
    index = _index([(4, 1), (4, 4), (2, 8)])
    assert index.next_unglanced(after=0, free=0, below=below) == 1  # 4 <= 0 + 5
    assert index.next_unglanced(after=1, free=0, below=below) == np.inf  # 4 > 2, 2 > 0
    assert index.next_unglanced(after=1, free=2, below=below) == 4  # 4 <= 2 + 2
    assert index.next_unglanced(after=4, free=2, below=below) == 8  # 2 <= 2


def _busy_jobs(n: int, seed: int) -> Workload:
    """``n`` jobs of 1-8 GPUs arriving faster than two VCs of 16 GPUs each can run them."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 30, n))
    rows = [
        (f"j{i}", "ab"[i % 2], int(submit[i]), int(rng.integers(30, 900)), int(g))
        for i, g in enumerate(rng.choice([1, 1, 2, 4, 8, 8], n))
    ]
    return make_jobs(rows)


def _run(workload, cluster, config, reference: bool = False):
    sim = Simulation(workload, cluster, config, reference=reference)
    return sim, sim.run().result()


def _same(a, b, decisions: bool) -> None:
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    if decisions:
        for name in ("rounds", "tries"):
            pd.testing.assert_frame_equal(getattr(a.decisions, name), getattr(b.decisions, name))


@pytest.mark.parametrize(
    ("scheduler", "preemption", "backfill"),
    [("fifo", False, "easy"), ("sjf", False, True), ("las", True, "easy"), ("las", True, True)],
)
def test_glanced_stretches_are_recorded_as_the_queue_walked_job_by_job(
    scheduler, preemption, backfill, monkeypatch
):
    """A long queue on a full cluster: stretches of glanced jobs are recorded at once, and
    the run and its decision records are those of the run without that shortcut, and the
    run that of the reference mode."""
    workload = _busy_jobs(200, seed=11)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, preemption=preemption, backfill=backfill, quantum=60)
    recorded: list[int] = []
    plain = rounds.Rounds._glance_run

    def counted(self, *args):
        recorded.append(plain(self, *args))
        return recorded[-1]

    monkeypatch.setattr(rounds.Rounds, "_glance_run", counted)
    _, fast = _run(workload, cluster, config)
    assert sum(recorded) > 200  # the shortcut recorded many jobs at once
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutGlanceRuns)
    recorded.clear()
    _, walked = _run(workload, cluster, config)
    assert not recorded
    _same(fast, walked, decisions=True)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same(fast, plain_result, decisions=False)


@RUNS
@given(
    cases(max_jobs=16, max_duration=400),
    st.sampled_from(["easy", True]),
    st.sampled_from([None, LAS((60.0, 300.0))]),
    st.booleans(),
)
def test_glance_runs_give_the_runs_and_records_of_walking_the_queue(
    drawn, backfill, las, preemption
):
    """Any drawn cluster, placer and option, with backfill, a static scheduler or LAS (kept
    job by job), with or without preemption: the same run and decision records with the
    shortcut as without it, and the reference mode's run."""
    case, workload, config = drawn
    config = config.replace(backfill=backfill, preemption=preemption)
    if las is not None:
        config = config.replace(scheduler=las)
    fast = Simulation(workload, case.cluster, config)
    walked = Simulation(workload, case.cluster, config)
    # the same engine with the shortcut off (its index of waiting jobs is kept but not read)
    walked.decider._glance_runs = False
    _same(fast.run().result(), walked.run().result(), decisions=True)
    _, plain_result = _run(workload, case.cluster, config, reference=True)
    _same(fast.result(), plain_result, decisions=False)
