"""User-written policies plug in by instance or by registered name, and the engine's leaping
stays exact for them (it relies only on what a policy declares)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.policies import SCHEDULERS, JobView, Scheduler


class Aging(Scheduler):
    """Submit order, but a job that has waited ``patience`` seconds goes first: a ranking
    that changes with time alone, and that every new arrival can make change sooner."""

    dynamic = True

    def __init__(self, patience: float = 30.0) -> None:
        self.patience = patience

    def _impatient(self, jobs: JobView) -> np.ndarray:
        return ~jobs.running & (jobs.now - jobs.since >= self.patience)

    def priority(self, jobs: JobView):
        return (np.where(self._impatient(jobs), 0, 1),)

    def next_change(self, jobs: JobView) -> float:
        due = jobs.since[~jobs.running] + self.patience
        due = due[due > jobs.now]
        return float(due.min()) if due.size else math.inf


def _workload(rows: list[tuple[int, int, int]]) -> asim.Workload:
    frame = pd.DataFrame(rows, columns=["submit_time", "duration", "num_gpus"])
    frame["job_id"] = [f"j{i}" for i in range(len(frame))]
    frame["vc"], frame["user"] = "a", "u"
    return asim.Workload.from_frame(frame)


jobs = st.lists(
    st.tuples(st.integers(0, 200), st.integers(1, 120), st.sampled_from([1, 2, 4, 8, 16])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(jobs, st.booleans(), st.sampled_from([1, 10, 60]), st.booleans())
def test_leaping_is_exact_for_a_custom_dynamic_scheduler(rows, preemption, quantum, backfill):
    workload, cluster = _workload(rows), asim.presets.cluster("toy")
    config = {
        "scheduler": Aging(patience=25),
        "preemption": preemption,
        "quantum": quantum,
        "backfill": backfill,
        "checkpoint_cost": 3,
        "sample_every": 7,
    }
    leaped = asim.simulate(workload, cluster, **config)
    stepped = asim.simulate(workload, cluster, leap=False, **config)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))


def test_a_registered_scheduler_is_chosen_by_name_and_round_trips_as_json():
    SCHEDULERS.register("aging-test")(Aging)
    try:
        config = asim.SimConfig(scheduler={"name": "aging-test", "patience": 5})
        assert config.to_dict()["scheduler"] == {"name": "aging-test", "patience": 5}
        assert asim.SimConfig.from_dict(config.to_dict()).make_scheduler().patience == 5
        result = asim.simulate(
            _workload([(0, 100, 16), (1, 10, 4), (2, 10, 16)]),
            asim.presets.cluster("toy"),
            config,
            backfill=True,
        )
        assert result.jobs["status"].eq("done").all()
    finally:
        SCHEDULERS._classes.pop("aging-test")


def test_an_arrival_can_bring_a_custom_schedulers_next_change_forward():
    # j0 holds all 16 GPUs; j1 arrives at 12 (between rounds) and becomes impatient at 37.
    # The first full round after that (t=40) lets it evict j0 — with and without leaping.
    workload, cluster = _workload([(0, 500, 16), (12, 50, 16)]), asim.presets.cluster("toy")
    config = {"scheduler": Aging(patience=25), "preemption": True, "quantum": 10}
    for leap in (True, False):
        jobs = asim.simulate(workload, cluster, leap=leap, checkpoint_cost=0, **config).jobs
        assert jobs.set_index("job_id")["start_time"].to_dict() == {"j0": 0, "j1": 40}


class LeastServedVC(Scheduler):
    """Jobs of the VC holding the fewest GPUs first: a ranking that a round's own starts and
    evictions reorder (so the engine must not assume a repeated round changes nothing)."""

    def priority(self, jobs: JobView):
        return (jobs.vc_used[jobs.vc],)


def _two_vc_workload(rows: list[tuple[int, int, int, int]]) -> asim.Workload:
    frame = pd.DataFrame(rows, columns=["submit_time", "duration", "num_gpus", "vc"])
    frame["job_id"] = [f"j{i}" for i in range(len(frame))]
    frame["vc"] = frame["vc"].map({0: "a", 1: "b"})
    frame["user"] = "u"
    return asim.Workload.from_frame(frame)


two_vc_jobs = st.lists(
    st.tuples(
        st.integers(0, 120), st.integers(1, 90), st.sampled_from([1, 2, 4, 8]), st.integers(0, 1)
    ),
    min_size=2,
    max_size=9,
)


@settings(max_examples=80, deadline=None)
@given(two_vc_jobs, st.booleans(), st.sampled_from([1, 10, 60]))
# found by hypothesis when the engine wrongly took this ranking as round-stable
@example(rows=[(0, 2, 8, 0), (0, 3, 1, 1), (1, 2, 8, 1), (1, 1, 8, 1)], preemption=True, quantum=1)
def test_leaping_is_exact_for_a_scheduler_whose_order_moves_within_a_round(
    rows, preemption, quantum
):
    workload, cluster = _two_vc_workload(rows), asim.presets.cluster("toy")
    config = {
        "scheduler": LeastServedVC(),
        "preemption": preemption,
        "quantum": quantum,
        "checkpoint_cost": 2,
    }
    leaped = asim.simulate(workload, cluster, **config)
    stepped = asim.simulate(workload, cluster, leap=False, **config)
    for name in ("jobs", "events"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))
