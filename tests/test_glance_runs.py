"""Glance runs (``Shortcuts.glance_runs``): preemptive LAS rounds record at once the jobs
after one whose trial evictions fail at a glance that the same glance answers, and the
counts of the evictable jobs below (``engine/below.py``) are told of starts and kept across
rounds while they hold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from test_fast_paths import _busy_jobs, _run, _same_runs, same_decisions

from analysim import Cluster, SimConfig, Simulation, presets
from analysim.engine import simulation
from analysim.engine.below import EvictableBelow
from analysim.engine.las_ranking import KeyedOrder
from analysim.engine.shortcuts import Shortcuts

N = 10  # jobs 0-9: a key is queue * N + job
GPUS = [1, 1, 4, 1, 8, 2, 4, 2, 8, 8]
#: per job, its GPUs if a glance may answer it, and its queue (VC)
NEED = [1, 8, 4, 1, 8, 2, 4, 2, 8, 8]
QUEUE = [0, 0, 0, 0, 0, 0, 1, 0, 0, 1]


def _order() -> KeyedOrder:
    """Running: job 2 (4 GPUs, evictable), job 5 (protected until 100), job 7 (2 GPUs,
    evictable); waiting: jobs 3, 4, 1, 6, 8, 9."""
    order = KeyedOrder(N)
    order.running = [2, 15, 27]
    order.waiting = [3, 4, 11, 16, 18, 29]
    return order


def _below(order: KeyedOrder, evictable_from: np.ndarray) -> EvictableBelow:
    return EvictableBelow(order, GPUS, evictable_from, 50.0, (NEED, QUEUE), releases=3)


def _from() -> np.ndarray:
    evictable_from = np.zeros(N)
    evictable_from[[5, 1]] = [100.0, 200.0]  # jobs 5 and 1 (once it runs) are protected
    return evictable_from


def test_counts_of_the_evictable_jobs_below() -> None:
    below = _below(_order(), _from())
    assert below.keys == [2, 15, 27]
    assert below.held_from == [6, 2, 2, 0]  # jobs 2 (4 GPUs) and 7 (2 GPUs) evictable
    assert below.lowest_protected == 15
    assert [below.gpus_below(k) for k in (0, 3, 16, 28)] == [6, 2, 2, 0]


def test_a_run_stops_where_the_glance_answers_otherwise() -> None:
    order, evictable_from = _order(), _from()
    below = _below(order, evictable_from)
    # job 3 (key 3) answered at a glance with 1 GPU free: 1 + 2 below; jobs 4 and 1 ask for
    # 8 > 3; the run ends before job 6, below the protected job 5 (the reason would change)
    assert below.run_after(order.waiting, 3, 1, None) == ([4, 1], 12)
    # job 6 (key 16) answered: job 8 asks for 8 > 1 + 2, job 9 (past job 7) 8 > 1 + 0
    assert below.run_after(order.waiting, 16, 1, None) == ([8, 9], 30)
    # ... but job 9's queue has no reservation yet: it makes one, the run ends before it
    assert below.run_after(order.waiting, 16, 1, {0}) == ([8], 19)
    # 6 GPUs free: job 8 asks for no more than 6 + 2, nothing to record with job 6
    assert below.run_after(order.waiting, 16, 6, None) == ([], 17)


def test_starts_are_counted_as_a_new_count_would() -> None:
    order, evictable_from = _order(), _from()
    below = _below(order, evictable_from)
    for key in (11, 18):  # job 1 starts protected, then job 8 with no protection left
        below.started(key)
        order.waiting.remove(key)
        order.running = sorted([*order.running, key])
        fresh = _below(order, evictable_from)
        assert (below.keys, below.held_from) == (fresh.keys, fresh.held_from)
        assert below.lowest_protected == fresh.lowest_protected
    assert below.held_from == [14, 10, 10, 10, 2, 0]
    assert below.holds(order, 3, 99.0)  # nothing released, no protection ended yet
    assert not below.holds(order, 4, 99.0)  # a job of the group released its GPUs
    assert not below.holds(order, 3, 100.0)  # job 5's protection ended


@dataclass(frozen=True)
class _WithoutGlanceRuns(Shortcuts):
    """Every shortcut but the glance runs."""

    glance_runs: bool = False


@pytest.mark.parametrize("backfill", ["easy", True])
def test_glance_runs_record_what_the_plain_loop_records(backfill, monkeypatch) -> None:
    """LAS with preemption on a busy cluster: the run and every decision record are those
    of the same run without glance runs, and the run that of the reference mode."""
    recorded: list[int] = []
    plain = EvictableBelow.run_after

    def counting(self, *args):
        run, key = plain(self, *args)
        recorded.append(len(run))
        return run, key

    monkeypatch.setattr(EvictableBelow, "run_after", counting)
    workload = _busy_jobs(160, seed=5)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler="las", preemption=True, backfill=backfill, quantum=60)
    _, fast = _run(workload, cluster, config, reference=False)
    assert sum(recorded) > 100  # tries recorded in runs
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutGlanceRuns)
    recorded.clear()
    _, slow = _run(workload, cluster, config, reference=False)
    assert not recorded
    _same_runs(fast, slow)
    same_decisions(fast, slow)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast, plain_result)


def test_glance_runs_on_two_days_of_venus_at_twice_its_load(monkeypatch) -> None:
    """The calibrated preset's run (LAS + preemption + EASY, 2 days at 2x) records the
    same rounds and tries with glance runs as without."""
    jobs = presets.workload("venus", seed=0, load_scale=2.0, days=2)
    config = presets.config("venus").replace(scheduler="las", preemption=True, backfill="easy")
    on = Simulation(jobs, presets.cluster("venus"), config).run()
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutGlanceRuns)
    off = Simulation(jobs, presets.cluster("venus"), config).run()
    for name in ("try_job", "try_code", "try_free", "try_reserved", "rounds"):
        assert getattr(on.records, name) == getattr(off.records, name)
    assert len(on.records.try_job) > 10_000
    _same_runs(on.result(), off.result())
