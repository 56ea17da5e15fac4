"""The jobs' state and lines, each with one owner: ``JobState`` (engine/job_state.py),
``Arrivals`` and ``Queues`` (engine/queues.py), hand-checked, and the simulation's read-only
views of them."""

from __future__ import annotations

import numpy as np
import pytest

import analysim as asim
from analysim.engine.job_state import JobState
from analysim.engine.jobs import JobFacts, JobTable
from analysim.engine.queues import Arrivals, Queues
from analysim.engine.simulation import Simulation
from analysim.policies.scheduling import DONE, FAILED, PENDING, RUNNING, WAITING


class _Speed:
    """Job 1 runs at half speed wherever it is placed; job 0 has no application."""

    in_use = True

    def rate(self, j, nodes, counts):
        return 0.5 if j == 1 else 1.0


def _state() -> JobState:
    # two jobs: 100 and 60 s of work, submitted at 0 and 5; restore costs 10 and 4 s,
    # migration costs 3 and 2 s
    return JobState(
        np.array([100.0, 60.0]),
        np.array([0.0, 5.0]),
        np.array([10.0, 4.0]),
        np.array([3.0, 2.0]),
        _Speed(),  # type: ignore[arg-type]
    )


def _step_of(end: float) -> float:
    return float(np.ceil(end / 10.0) * 10.0)  # a clock of 10-second steps


def test_a_run_stopped_evicted_and_resumed_counts_its_work_and_its_restore_cost():
    jobs = _state()
    assert jobs.status.tolist() == [PENDING, PENDING] and jobs.since.tolist() == [0.0, 5.0]
    jobs.set_rate(1, np.array([0]), np.array([2]))
    assert jobs.rate.tolist() == [1.0, 0.5]
    assert jobs.start(1, now=10.0, quantum=60.0) is False  # a first start
    jobs.new_run(1, 10.0, _step_of)
    # 60 s of work at half speed from t=10: ends at 130, seen at the step of 130
    assert jobs.completions == [(130.0, 130.0, 1, 1)]
    assert (jobs.first_start[1], jobs.status[1], jobs.evictable_from[1]) == (10.0, RUNNING, 70.0)
    # on 2 GPUs from 10 to 50: 40 s run, 80 GPU-seconds, 20 s of work done
    assert jobs.stop(1, at=50.0, gpus=2) == 40.0
    assert (jobs.executed[1], jobs.attained[1], jobs.remaining[1]) == (40.0, 80.0, 40.0)
    jobs.evicted(1, reclaimed=False)
    assert (jobs.remaining[1], jobs.preemptions[1], jobs.reclaims[1]) == (44.0, 1, 0)
    assert (jobs.status[1], jobs.versions[1]) == (WAITING, 2)
    assert list(jobs.ends_due(1000.0)) == []  # the first run's end is stale now
    assert jobs.start(1, now=60.0, quantum=60.0) is True  # a resume pays its restore cost
    assert (jobs.first_start[1], jobs.evictable_from[1]) == (10.0, 124.0)


def test_runs_end_in_order_and_a_killed_job_fails_or_waits_again():
    jobs = _state()
    jobs.rate[1] = 0.5
    for j in (0, 1):  # 100 s at rate 1; 60 s at rate 0.5: 120
        jobs.start(j, now=0.0, quantum=60.0)
        jobs.new_run(j, 0.0, _step_of)
    assert jobs.next_end() == 100.0
    assert list(jobs.ends_due(99.0)) == []
    ended = []
    for end, j in jobs.ends_due(120.0):
        jobs.stop(j, end, gpus=1)
        jobs.finished(j, end)
        ended.append((end, j))
    assert ended == [(100.0, 0), (120.0, 1)] and jobs.next_end() is None
    assert jobs.status.tolist() == [DONE, DONE] and jobs.remaining.tolist() == [0.0, 0.0]
    assert jobs.end.tolist() == [100.0, 120.0]
    killed = _state()
    killed.start(0, now=0.0, quantum=60.0)
    killed.killed(0, at=30.0, restart=True)
    assert (killed.status[0], killed.versions[0]) == (WAITING, 1) and np.isnan(killed.end[0])
    killed.killed(1, at=40.0, restart=False)
    assert (killed.status[1], killed.end[1]) == (FAILED, 40.0)


def test_a_migration_pays_its_cost():
    jobs = _state()
    jobs.moved(0)
    assert (jobs.remaining[0], jobs.migrations[0]) == (103.0, 1)


def _table(arrival: list[float], unschedulable: list[bool]) -> JobTable:
    n = len(arrival)
    zeros = np.zeros(n)
    return JobTable(
        ids=np.arange(n),
        gpus=np.ones(n, dtype=np.int64),
        submit=np.array(arrival),
        arrival=np.array(arrival),
        duration=zeros,
        priority=zeros,
        vc=np.zeros(n, dtype=np.int64),
        domain=np.zeros(n, dtype=np.int64),
        group=np.zeros(n, dtype=np.int64),
        unschedulable=np.array(unschedulable),
        gpu_milli=zeros,
        cpu=zeros,
        memory=zeros,
        milli_total=zeros,
    )


def test_arrivals_skip_the_jobs_that_never_arrive():
    arrivals = Arrivals(_table([0.0, 10.0, 10.0, 20.0, 30.0], [True, False, True, False, True]))
    assert arrivals.next_time() == 0.0  # (the engine skips job 0 at its start)
    arrivals.skip_unschedulable()
    assert (arrivals.next, arrivals.next_time()) == (1, 10.0)
    assert arrivals.due(5.0) == []
    assert arrivals.due(10.0) == [1] and arrivals.next_time() == 20.0
    assert arrivals.due(25.0) == [3]
    assert arrivals.over and arrivals.next_time() is None  # job 4 never arrives


def test_the_queues_count_the_waiting_per_group_vc_and_size():
    facts = JobFacts(
        gpus=[1, 4, 4],
        usage=[1, 4, 4],
        vc=[0, 1, 1],
        queue=[0, 1, 1],
        group=[0, 0, 1],
        domain=[],
        domain_index=[0, 1, 1],
        node_position=[],
        columns={},
        milli=[],
        cpu=[],
        mem=[],
        kind=[],
    )
    queues = Queues(groups=2, vcs=2, domains=2, facts=facts)
    assert queues.size_buckets == [1, 4]
    for j in (0, 1, 2):
        queues.add(j)
    queues.remove(1)
    assert [list(w) for w in queues.waiting] == [[0], [2]] and queues.n_waiting == 2
    assert queues.group_waiting == [1, 1]
    assert (queues.vc_waiting_jobs, queues.vc_waiting_gpus) == ([1, 1], [1, 4])
    # per domain (rows) and size bucket (columns): job 0 in domain 0 / size 1, job 2 in 1 / 4
    assert list(queues.waiting_counts) == [1, 0, 0, 1]


def test_the_simulation_shows_the_parts_state_through_read_only_views():
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    sim.run(until=600)
    owned = {
        "job_state": ("status", "remaining", "rate", "attained", "since", "versions", "cost"),
        "queues": ("waiting", "running", "group_waiting", "vc_waiting_jobs"),
        "table": ("job_ids", "gpus", "job_vc", "job_group", "job_domain", "duration"),
        "ledger": ("free", "borrowed", "vc_used", "capacity", "node_names", "book"),
    }
    renamed = {"job_ids": "ids", "job_vc": "vc", "job_group": "group", "job_domain": "domain"}
    for part, names in owned.items():
        for name in names:
            view = Simulation.__dict__[name]
            assert isinstance(view, property) and view.fset is None, name
            assert name not in vars(sim), name  # one owner: never a second reference
            assert getattr(sim, name) is getattr(getattr(sim, part), renamed.get(name, name))
    assert sim.n_waiting == sim.queues.n_waiting and sim.n_jobs == sim.table.n
    with pytest.raises(AttributeError):
        sim.remaining = np.zeros(sim.n_jobs)  # type: ignore[misc]
    # the state the simulation holds itself is its wiring and its progress counters
    assert len(vars(sim)) <= 36, sorted(vars(sim))


def test_the_stale_ends_of_evicted_runs_are_dropped_and_the_others_end_in_order(monkeypatch):
    from analysim.engine import job_state as job_state_module

    monkeypatch.setattr(job_state_module, "_COMPACT_AT", 8)
    n = 6
    jobs = JobState(
        np.full(n, 1000.0), np.zeros(n), np.zeros(n), np.zeros(n), _Speed()  # type: ignore[arg-type]
    )
    for j in range(n):
        jobs.start(j, now=0.0, quantum=60.0)
        jobs.new_run(j, 0.0, _step_of)
    # job 0 is evicted and resumed every 10 s: a stale entry each time; past 8 entries the
    # stale ones are dropped (6 live left), and the next time past 2 * 6 + 8
    sizes = []
    for t in range(10, 110, 10):
        jobs.stop(0, at=float(t), gpus=1)
        jobs.evicted(0, reclaimed=False)
        jobs.start(0, now=float(t), quantum=60.0)
        jobs.new_run(0, float(t), _step_of)
        sizes.append(len(jobs.completions))
    assert sizes == [7, 8, 6, 7, 8, 9, 10, 11, 12, 13]
    assert jobs._compact_at == 20
    # every run ends once, in order (job 0 too: 100 s run, 900 s left from t=100)
    assert list(jobs.ends_due(2000.0)) == [(1000.0, j) for j in range(n)]
    assert jobs.completions == []
