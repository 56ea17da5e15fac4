"""Property tests: invariants of every run over random small workloads and clusters.

Every scheduler x placement x preemption switch, quantum 1/5/60 s and a constant checkpoint
cost of 0-50 s, on clusters that are one shared pool, VCs owning nodes, or VCs holding quotas
over the pool (see ``strategies.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import cases, workloads

from analysim import Cluster, Simulation, Workload, presets, simulate
from analysim.inputs.domains import allowed_types

FAST = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_STEPS = 50_000


def _costs(config) -> float:
    return float(config.checkpoint_cost["seconds"])


def _migration_costs(config) -> float:
    return float(config.migration_cost["seconds"])


# -- checks on the state of one moment ------------------------------------------------------
def check_state(sim: Simulation, case, started: bool = True) -> None:
    """No GPU double-booked, free counts consistent, VC and GPU-type limits held."""
    cluster = case.cluster
    gpus = sim.state.gpus
    nodes = sim.state.nodes
    jobs = sim.state.jobs
    total = cluster.total_gpus
    # one row per physical GPU, each (node, gpu) once
    assert len(gpus) == total
    assert not gpus.duplicated(["node", "gpu"]).any()
    per_node = gpus.groupby("node", sort=False).size()
    assert per_node.reindex(cluster.nodes["node"]).tolist() == cluster.nodes["gpus"].tolist()

    held = gpus.dropna(subset=["job_id"])
    count = held.groupby("job_id").size()
    running = jobs[jobs["status"] == "running"]
    # a running job holds exactly its GPUs; nobody else holds any
    assert set(count.index) == set(running["job_id"]), (count, running)
    assert count.reindex(running["job_id"]).tolist() == running["num_gpus"].tolist()
    assert int(count.sum()) == int(running["num_gpus"].sum())
    # the jobs frame says where each running job is, and it agrees with the GPUs frame
    where = held.groupby("job_id")["node"].agg(lambda s: set(s))
    for job_id, listed in zip(running["job_id"], running["nodes"], strict=True):
        assert set(listed.split(",")) == where[job_id]
    # free counts per node agree with the GPUs frame
    used = held.groupby("node").size().reindex(nodes["node"], fill_value=0).to_numpy()
    assert (nodes["free"].to_numpy() == nodes["gpus"].to_numpy() - used).all()
    assert (nodes["used"].to_numpy() == used).all()
    assert (nodes["free"] >= 0).all()
    # jobs' accounting is sane
    assert (jobs["remaining"] > -1e-6).all()
    assert (jobs["executed"] >= -1e-9).all()
    # before the first step, jobs due at t=0 are still "pending"; after it, none is
    known = {"waiting", "running", "done", "unschedulable"} | (set() if started else {"pending"})
    assert set(jobs["status"]) <= known

    if held.empty:
        return
    vc_of_job = dict(zip(sim.workload.jobs["job_id"], sim.workload.jobs["vc"], strict=True))
    assert (held["job_vc"] == held["job_id"].map(vc_of_job)).all()
    owner = held["node"].map(case.owner())
    lent = held["borrowed"].astype(bool)
    if not sim.config.borrowing or case.mode == "pool":
        assert not lent.any()
    if case.mode == "nodes":
        # a job runs only on nodes its VC owns, unless it borrowed them
        assert ((owner == held["job_vc"]) | lent).all(), held.assign(owner=owner)
        assert not (lent & (owner == held["job_vc"])).any()  # nobody borrows its own
    elif case.mode == "quota":
        # quota VCs run on the shared pool only, and never above their quota (borrowed
        # GPUs, anywhere, do not count against it)
        assert owner[~lent].isna().all()
        by_vc = held[~lent].groupby("job_vc").size()
        for vc, n in by_vc.items():
            assert n <= case.quotas[vc], (vc, n, case.quotas)
    if lent.any():
        check_borrowing(sim, case, held[lent])
    if case.typed and "gpu_type" in sim.workload.jobs.columns:
        type_of_node = dict(zip(cluster.nodes["node"], cluster.nodes["gpu_type"], strict=True))
        wanted = dict(zip(sim.workload.jobs["job_id"], sim.workload.jobs["gpu_type"], strict=True))
        for job_id, node in zip(held["job_id"], held["node"], strict=True):
            accepted = allowed_types(wanted[job_id])
            assert accepted is None or type_of_node[node] in accepted


def check_borrowing(sim: Simulation, case, lent: pd.DataFrame) -> None:
    """Borrowers stay within their limit, and no VC is kept from GPUs it needs: its
    first-ranked waiting job would not fit even if every borrower on its GPUs left."""
    limit = sim.config.borrow_limit
    share = case.quotas if case.mode == "quota" else sim.cluster.vc_capacity()
    for vc, n in lent.groupby("job_vc").size().items():
        assert n <= int(limit * share[vc] + 1e-9), (vc, n, limit, share[vc])
    if not sim.n_waiting:
        return
    for group in range(len(sim.waiting)):
        heads: dict[int, int] = {}
        for _, j in sim.decider.ranker.ranked(group, False).waiting_from(0):
            heads.setdefault(sim.facts.vc[j], j)
        for vc, j in heads.items():
            free = sim.free.copy()
            domain = sim.facts.domain[j]
            for r in sim.ledger.borrowers:
                if sim.facts.vc[r] != vc and domain.mask[sim.ledger.alloc_nodes[r]].any():
                    free[sim.ledger.alloc_nodes[r]] += sim.ledger.alloc_counts[r]
            if sim.decider.evictions.fits_hypothetically(j, free, sim.vc_used):
                raise AssertionError(
                    f"t={sim.now}: job {sim.job_ids[j]}, first in VC "
                    f"{sim.partition.vc_names[vc]}'s queue, waits although it fits once "
                    "other VCs' borrowers leave its GPUs"
                )


# -- checks on a finished result --------------------------------------------------------------
def expected_unschedulable(case, workload) -> set[str]:
    jobs = workload.jobs
    types = jobs["gpu_type"] if "gpu_type" in jobs.columns else [None] * len(jobs)
    return {
        job_id
        for job_id, vc, gpus, gtype in zip(
            jobs["job_id"], jobs["vc"], jobs["num_gpus"], types, strict=True
        )
        if gpus > case.most_gpus(vc, gtype)
    }


def check_result(res, case, workload, config) -> None:
    jobs = res.jobs
    wl = workload.jobs
    cost = _costs(config)
    # no job lost: one row per job, each done or reported unschedulable
    assert sorted(jobs["job_id"]) == sorted(wl["job_id"])
    assert set(jobs["status"]) <= {"done", "unschedulable"}
    rejected = set(jobs.loc[jobs["status"] == "unschedulable", "job_id"])
    assert rejected == expected_unschedulable(case, workload)
    summary = res.summary()
    assert summary["jobs"] == len(wl)
    assert summary["unschedulable"] == len(rejected)
    assert summary["finished"] == len(wl) - len(rejected)

    done = jobs[jobs["status"] == "done"]
    ran = (
        done["duration"]
        + (done["preemptions"] + done["reclaims"]) * cost
        + done["migrations"] * _migration_costs(config)
    )
    np.testing.assert_allclose(done["run_time"], ran, rtol=0, atol=1e-6)
    assert (done["jct"] >= done["duration"] - 1e-9).all()
    assert (done["queue_delay"] >= -1e-9).all()
    np.testing.assert_allclose(
        done["end_time"], done["submit_time"] + done["jct"], rtol=0, atol=1e-6
    )
    np.testing.assert_allclose(
        done["jct"], done["queue_delay"] + done["run_time"], rtol=0, atol=1e-6
    )
    # a job starts at the first step at or after its submission, or later
    assert (done["start_time"] >= done["submit_time"]).all()
    assert np.allclose(done["start_time"] % config.step, 0)
    # the busy GPU-seconds the engine integrated are the jobs' GPU-seconds on GPUs
    busy = float((done["num_gpus"] * done["run_time"]).sum())
    assert sum(res.meta["busy_gpu_seconds"]) == pytest.approx(busy, abs=1e-6)
    if not config.preemption:
        assert (jobs["preemptions"] == 0).all()
    if not config.migration:
        assert (jobs["migrations"] == 0).all()
    if not config.borrowing or case.mode == "pool":
        assert (jobs["reclaims"] == 0).all()
        assert (jobs["borrowed_gpu_seconds"] == 0).all()
    if not (config.preemption or config.migration or config.borrowing):
        np.testing.assert_allclose(done["run_time"], done["duration"], rtol=0, atol=1e-9)
    assert summary["migrations"] == jobs["migrations"].sum()
    assert summary["reclaims"] == jobs["reclaims"].sum()
    check_events(res, config)


def check_events(res, config) -> None:
    events = res.events
    jobs = res.jobs.set_index("job_id")
    times = events["time"].to_numpy()
    assert (np.diff(times) >= 0).all(), "events out of time order"
    if not config.preemption:
        assert not (events["event"] == "preempt").any()
    if not (config.preemption or config.borrowing):
        assert not (events["event"] == "resume").any()
    if not config.borrowing:
        assert not (events["event"] == "reclaim").any()
        assert not events["borrowed"].any()
    if not config.migration:
        assert not (events["event"] == "migrate").any()
    # a reclaim names the owner's job it made room for; a migration its source nodes
    reclaims = events[events["event"] == "reclaim"]
    assert reclaims["cause"].notna().all()
    assert events.loc[events["event"] == "preempt", "cause"].notna().all()
    assert (reclaims["cause"].map(jobs["vc"]) != reclaims["vc"]).all()
    migrations = events[events["event"] == "migrate"]
    assert migrations["from_nodes"].notna().all() and migrations["gpus"].notna().all()
    # preemptions happen only at scheduling rounds (multiples of the quantum)
    preempt_times = events.loc[events["event"] == "preempt", "time"].to_numpy()
    assert np.allclose(preempt_times / config.quantum, np.round(preempt_times / config.quantum))
    for job_id, seq in events.groupby("job_id", sort=False):
        row = jobs.loc[job_id]
        kinds = seq["event"].tolist()
        t = seq["time"].to_numpy()
        assert (np.diff(t) >= 0).all()
        if row["status"] == "unschedulable":
            assert kinds == ["unschedulable"]
            assert math.isnan(row["start_time"]) and math.isnan(row["end_time"])
            continue
        assert kinds.count("migrate") == row["migrations"]
        assert kinds.count("reclaim") == row["reclaims"]
        assert kinds.count("preempt") == row["preemptions"]
        runs = [k for k in kinds if k != "migrate"]
        middle = []
        for k in runs[2:-1:2]:
            middle += [k, "resume"]
        assert runs == ["submit", "start", *middle, "finish"], (job_id, kinds)
        assert set(middle[::2]) <= {"preempt", "reclaim"}
        assert t[0] == row["submit_time"]
        assert t[1] == row["start_time"]
        assert t[-1] == row["end_time"]
    assert set(events["job_id"]) == set(jobs.index)


def _run_by_steps(sim: Simulation, case) -> None:
    last = -math.inf
    stuck = 0
    for _ in range(MAX_STEPS):
        if sim.done:
            return
        now = sim.step()
        assert now >= last
        assert now % sim.config.step == 0
        stuck = stuck + 1 if now == last else 0
        assert stuck < 3, f"the clock stopped at t={now} with jobs left"
        last = now
        check_state(sim, case)
    pytest.fail(f"no end after {MAX_STEPS} steps")


# -- the properties -------------------------------------------------------------------------
@FAST
@given(cases())
def test_state_invariants_hold_at_every_step(drawn):
    case, workload, config = drawn
    sim = Simulation(workload, case.cluster, config)
    check_state(sim, case, started=False)
    _run_by_steps(sim, case)
    assert sim.done
    res = sim.result()
    check_result(res, case, workload, config)
    # stepping by hand and run() give the same result
    other = simulate(workload, case.cluster, config)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(res, name), getattr(other, name))


@FAST
@given(cases())
def test_every_job_finishes_once_or_is_unschedulable(drawn):
    case, workload, config = drawn
    res = simulate(workload, case.cluster, config)
    check_result(res, case, workload, config)
    finishes = res.events[res.events["event"] == "finish"].groupby("job_id").size()
    done = res.jobs.loc[res.jobs["status"] == "done", "job_id"]
    assert finishes.reindex(done).tolist() == [1] * len(done)
    assert len(finishes) == len(done)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_same_config_and_seed_give_identical_frames(drawn):
    case, workload, config = drawn
    a = simulate(workload, case.cluster, config)
    b = simulate(workload, case.cluster, config)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert a.config == b.config


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_jobs=8, max_duration=400))
def test_leaping_changes_nothing(drawn):
    case, workload, config = drawn
    leaped = simulate(workload, case.cluster, config)
    stepped = simulate(workload, case.cluster, config.replace(leap=False))
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))
    pd.testing.assert_series_equal(leaped.summary(), stepped.summary())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_jobs=8, max_duration=400), st.data())
def test_leaping_changes_nothing_under_contention(drawn, data):
    """The same, with preemption on and jobs of 1-4 GPUs, so that jobs queue and are evicted."""
    case, _, config = drawn
    workload = data.draw(workloads(case.vcs, max_jobs=8, max_duration=400, gpus=(1, 2, 3, 4)))
    config = config.replace(preemption=True)
    leaped = simulate(workload, case.cluster, config)
    stepped = simulate(workload, case.cluster, config.replace(leap=False))
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_jobs=8, max_duration=400), st.sampled_from([2, 5]))
def test_leaping_changes_nothing_with_coarser_steps(drawn, step):
    """A clock step of 2 or 5 s: jobs arrive and end between steps and wait for the next."""
    case, workload, config = drawn
    quantum = step * (1 if config.quantum < 60 else 12)
    config = config.replace(step=step, quantum=quantum, sample_every=3 * step)
    leaped = simulate(workload, case.cluster, config)
    check_result(leaped, case, workload, config)
    stepped = simulate(workload, case.cluster, config.replace(leap=False))
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))


def _late_unschedulable_job():
    cluster = Cluster.uniform(1, 2, 2)  # 4 GPUs, one shared pool
    jobs = pd.DataFrame(
        {
            "job_id": ["j0", "j1"],
            "vc": "a",
            "user": "u",
            "submit_time": [0, 5],
            "duration": [1, 1],
            "num_gpus": [1, 16],  # j1 can never fit: unschedulable, submitted after j0 ends
        }
    )
    return Workload.from_frame(jobs), cluster


def test_leap_off_stops_when_the_last_schedulable_job_ends():
    # regression: with leap=False the clock once ran on to a trailing unschedulable job
    workload, cluster = _late_unschedulable_job()
    leaped = simulate(workload, cluster, sample_every=1)
    stepped = simulate(workload, cluster, sample_every=1, leap=False)
    assert leaped.timeline["time"].max() == 1.0  # j0 ends at t=1
    assert stepped.meta["now"] == leaped.meta["now"] == 1.0
    pd.testing.assert_frame_equal(leaped.timeline, stepped.timeline)


def test_random_placement_is_reproducible_and_depends_on_the_seed():
    workload, cluster = presets.workload("toy"), presets.cluster("toy")
    runs = {
        seed: simulate(workload, cluster, placement="random", seed=seed, preemption=True)
        for seed in range(6)
    }
    again = simulate(workload, cluster, placement="random", seed=3, preemption=True)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(runs[3], name))
    placements = {tuple(res.jobs["nodes"]) for res in runs.values()}
    assert len(placements) > 1  # the seed does steer the random placer
