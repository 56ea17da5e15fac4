"""Elastic jobs among VCs that borrow and migrate (docs/elastic.md): a property test.

Random small clusters of several VCs (VCs owning nodes, or quotas over a pool; from
``strategies.py``), jobs of which some are elastic, elastic and rigid schedulers with
borrowing, migration (and sometimes periodic defragmentation) and preemption. Stepped by
hand, at every step no GPU is double-booked and each running job holds the GPUs the state
says; at the end every job is accounted for, its work done, and the run is the same again
with the same seed, without the engine's shortcuts and without leaps. With node failures
and jobs' own failures on as well: the GPU-seconds kept and lost fit in those held, and the
run is the same without shortcuts and without leaps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import clusters, workloads
from test_failures import failure_options
from test_invariants import check_state, expected_unschedulable

from analysim import SimConfig, Simulation, Workload
from analysim.results.goodput import goodput_spells

MAX_STEPS = 20_000
SCHEDULERS = (
    "elastic_goodput",
    "elastic_gain",
    {"name": "elastic_goodput", "restart_penalty": 30},
    "fifo",
)


@st.composite
def elastic_moves(draw):
    """(ClusterCase, Workload with min_gpus / max_gpus, SimConfig with borrowing and
    migration on): several VCs, job j0 elastic, the others elastic or rigid."""
    case = draw(clusters(modes=("nodes", "quota"), typed=False))
    plain = draw(
        workloads(case.vcs, max_jobs=6, max_submit=120, max_duration=400, gpus=(1, 2, 4))
    ).jobs
    low, high = [], []
    for i, gpus in enumerate(plain["num_gpus"].tolist()):
        low.append(draw(st.integers(1, gpus)))
        high.append(draw(st.integers(gpus + (i == 0), 2 * gpus + 2)))  # j0 is elastic
    jobs = plain.assign(min_gpus=low, max_gpus=high)
    config = SimConfig(
        scheduler=draw(st.sampled_from(SCHEDULERS)),
        placement=draw(st.sampled_from(("consolidate", "spread", "random"))),
        preemption=draw(st.booleans()),
        backfill=draw(st.booleans()),
        quantum=draw(st.sampled_from((5, 60))),
        checkpoint_cost={"name": "constant", "seconds": draw(st.sampled_from((0, 10)))},
        migration=True,
        migration_cost={"name": "constant", "seconds": draw(st.sampled_from((0, 5)))},
        defrag_every=draw(st.sampled_from((None, 30))),
        borrowing=True,
        borrow_limit=draw(st.sampled_from((0.5, 1.0, 3.0))),
        rescale_cost=draw(st.sampled_from((0, 7))),
        seed=draw(st.integers(0, 2**16)),
    )
    return case, Workload.from_frame(jobs), config


def _run_checking_each_step(sim: Simulation, case) -> None:
    """Step ``sim`` to its end, checking the state after each step (``check_state``: every
    GPU once, a running job holds exactly the ``num_gpus`` the state gives, VC and borrowing
    limits); a job's count stays within its limits."""
    limits = sim.workload.jobs.set_index("job_id")[["min_gpus", "max_gpus"]]
    for _ in range(MAX_STEPS):
        if sim.done:
            return
        sim.step()
        check_state(sim, case)
        running = sim.state.jobs.set_index("job_id")
        running = running[running["status"] == "running"]
        bounds = limits.loc[running.index]
        assert (bounds["min_gpus"] <= running["num_gpus"]).all()
        assert (running["num_gpus"] <= bounds["max_gpus"]).all()
    raise AssertionError(f"no end after {MAX_STEPS} steps")


def _check_accounted(result, case, workload: Workload, config: SimConfig) -> None:
    """One row per job, each done or (asking more than its VC could ever hold)
    unschedulable; every finished job did its work plus the costs it paid."""
    jobs = result.jobs.set_index("job_id")
    assert sorted(jobs.index) == sorted(workload.jobs["job_id"])
    assert set(jobs["status"]) <= {"done", "unschedulable"}
    rejected = set(jobs.index[jobs["status"] == "unschedulable"])
    assert rejected == expected_unschedulable(case, workload)
    done = jobs[jobs["status"] == "done"]
    spells = goodput_spells(result)
    spells = spells[spells["job_id"].isin(done.index)]
    work = ((spells["end"] - spells["start"]) * spells["goodput"]).groupby(spells["job_id"]).sum()
    checkpoint = config.checkpoint_cost["seconds"]
    paid = (
        done["resizes"] * config.rescale_cost
        + (done["preemptions"] + done["reclaims"]) * checkpoint
        + done["migrations"] * config.migration_cost["seconds"]
    )
    assert set(work.index) == set(done.index)
    expected = (done["duration"] + paid).loc[work.index].to_numpy(dtype=float)
    np.testing.assert_allclose(work.to_numpy(dtype=float), expected, rtol=1e-9, atol=1e-6)
    assert (spells["goodput"] > 0).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elastic_moves())
def test_elastic_jobs_with_borrowing_and_migration_keep_the_invariants(drawn):
    case, workload, config = drawn
    sim = Simulation(workload, case.cluster, config)
    _run_checking_each_step(sim, case)
    result = sim.result()
    _check_accounted(result, case, workload, config)
    runs = {
        "again, the same seed": Simulation(workload, case.cluster, config),
        "reference=True": Simulation(workload, case.cluster, config, reference=True),
        "leap=False": Simulation(workload, case.cluster, config.replace(leap=False)),
    }
    for name, other in runs.items():
        again = other.run().result()
        for frame in ("jobs", "events", "timeline"):
            pd.testing.assert_frame_equal(
                getattr(result, frame), getattr(again, frame), obj=f"{name}: {frame}"
            )


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elastic_moves(), failure_options)
def test_elastic_jobs_with_failures_are_accounted_and_the_same_in_every_mode(drawn, options):
    case, workload, config = drawn
    config = config.replace(**options)
    result = Simulation(workload, case.cluster, config).run().result()
    jobs = result.jobs
    assert jobs["status"].isin(["done", "failed", "unschedulable"]).all()
    assert (jobs["lost_gpu_seconds"] >= 0).all() and (jobs["useful_gpu_seconds"] >= -1e-6).all()
    kept_and_lost = jobs["useful_gpu_seconds"] + jobs["lost_gpu_seconds"]
    assert (kept_and_lost <= jobs["gpu_seconds"] + 1e-6).all()
    summary = result.summary()
    assert summary["lost_gpu_seconds"] == jobs["lost_gpu_seconds"].sum()
    for other in (
        Simulation(workload, case.cluster, config, reference=True),
        Simulation(workload, case.cluster, config.replace(leap=False)),
    ):
        again = other.run().result()
        for frame in ("jobs", "events", "timeline"):
            pd.testing.assert_frame_equal(getattr(result, frame), getattr(again, frame))
