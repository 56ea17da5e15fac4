"""Hand-worked scenarios on the toy cluster: exact start and end times for each policy.

The toy cluster has nodes n0, n1 (rack r0) and n2, n3 (rack r1) of 4 GPUs each. Every
expected time below was worked out by hand from the rules in the docs; the comments give the
reasoning step by step so that a failing test says which rule broke.
"""

from __future__ import annotations

import pandas as pd
import pytest
from jobs_table import make_jobs

import analysim as asim


def run(rows: list[tuple], cluster: asim.Cluster | None = None, **config) -> pd.DataFrame:
    cluster = cluster or asim.presets.cluster("toy")
    result = asim.simulate(make_jobs(rows), cluster, **config)
    return result.jobs.set_index("job_id")


def times(jobs: pd.DataFrame) -> dict[str, tuple[float, float]]:
    return {j: (row.start_time, row.end_time) for j, row in jobs.iterrows()}


HOL = [
    ("j1", "a", 0, 100, 8),
    ("j2", "a", 0, 50, 4),
    ("j3", "a", 10, 30, 16),
    ("j4", "a", 20, 10, 2),
]


def test_fifo_blocks_the_head_of_line():
    # j1 (8 GPUs) takes the whole free rack r0 (n0, n1); j2 the best-fitting node n2.
    # j3 needs all 16 GPUs and waits for j1 (t=100); j4 waits behind j3 (strict FIFO).
    jobs = run(HOL, scheduler="fifo")
    assert times(jobs) == {"j1": (0, 100), "j2": (0, 50), "j3": (100, 130), "j4": (130, 140)}
    assert jobs["jct"].to_dict() == {"j1": 100, "j2": 50, "j3": 120, "j4": 120}
    assert jobs.loc["j1", "nodes"] == "n0,n1"
    assert jobs.loc["j2", "nodes"] == "n2"


def test_fifo_with_backfill_lets_small_jobs_pass():
    # j4 fits on n3 at t=20 although j3 (ahead of it) does not fit.
    jobs = run(HOL, scheduler="fifo", backfill=True)
    assert times(jobs)["j4"] == (20, 30)
    assert times(jobs)["j3"] == (100, 130)


def test_sjf_orders_by_duration():
    # t=0: j2 (50 s) before j1 (100 s): j2 -> n0; j1 takes rack r1's whole nodes (n2, n3).
    # t=20: j4 (10 s) ranks above j3 (30 s) and fits on n1; j3 waits for all 16 GPUs.
    jobs = run(HOL, scheduler="sjf")
    assert times(jobs) == {"j1": (0, 100), "j2": (0, 50), "j3": (100, 130), "j4": (20, 30)}
    assert jobs.loc["j2", "nodes"] == "n0"
    assert jobs.loc["j1", "nodes"] == "n2,n3"


PREEMPT = [("j1", "a", 0, 100, 16), ("j2", "a", 5, 20, 4)]


def test_srtf_without_preemption_waits():
    jobs = run(PREEMPT, scheduler="srtf")
    assert times(jobs) == {"j1": (0, 100), "j2": (100, 120)}
    assert jobs["preemptions"].sum() == 0


def test_srtf_preempts_at_the_next_round_and_charges_the_checkpoint_cost():
    # j2 arrives at t=5 with 20 s left against j1's 95 s; the next round (quantum 10) is at
    # t=10: j1 is evicted (remaining 90 + 5 s cost = 95), j2 runs 10..30, j1 resumes at 30.
    jobs = run(PREEMPT, scheduler="srtf", preemption=True, quantum=10, checkpoint_cost=5)
    assert times(jobs) == {"j1": (0, 125), "j2": (10, 30)}
    assert jobs.loc["j1", "preemptions"] == 1
    assert jobs.loc["j1", "run_time"] == 105  # 100 s of work + 5 s checkpoint/restore
    assert jobs.loc["j1", "queue_delay"] == 20
    assert jobs.loc["j2", "jct"] == 25


def test_size_scaled_cost_is_60_s_above_8_gpus():
    # same as above with the default cost model: 40 s up to 8 GPUs, 60 s above.
    jobs = run(PREEMPT, scheduler="srtf", preemption=True, quantum=10)
    assert times(jobs)["j1"] == (0, 30 + 90 + 60)


def test_preemption_waits_for_a_quantum_boundary():
    # with the default 60 s quantum, j2 (arrived at 5) first evicts j1 at t=60.
    jobs = run(PREEMPT, scheduler="srtf", preemption=True, checkpoint_cost=0)
    assert times(jobs) == {"j1": (0, 120), "j2": (60, 80)}


def test_las_demotes_by_attained_service():
    # thresholds [100] GPU-s: j1 (16 GPUs) leaves queue 0 at t=6.25. j2 arrives at 15 in
    # queue 0 and evicts j1 at the round at t=20. j2 reaches 100 GPU-s at 26.25; at t=30
    # both are in queue 1, where submit order puts j1 first: j1 evicts j2 and runs its
    # remaining 80 s to t=110; j2 then finishes its last 10 s at 120.
    jobs = run(
        [("j1", "a", 0, 100, 16), ("j2", "a", 15, 20, 16)],
        scheduler={"name": "las", "thresholds": [100], "starvation_factor": None},
        preemption=True,
        quantum=10,
        checkpoint_cost=0,
    )
    assert times(jobs) == {"j1": (0, 110), "j2": (20, 120)}
    assert jobs["preemptions"].to_dict() == {"j1": 1, "j2": 1}


STARVING = [("j1", "a", 0, 100, 16), ("j2", "a", 70, 10_000, 4)]
ONE_THRESHOLD = {"name": "las", "thresholds": [1000]}


def test_las_without_starvation_guard():
    # j1 (16 GPUs) passes 1,000 GPU-s at 62.5 and drops to queue 1. j2 arrives at 70 in queue
    # 0 and evicts it. j2 (4 GPUs) reaches queue 1 at 70 + 250 = 320; there j1, submitted
    # first, ranks above it, evicts it and runs its last 30 s to 350. j2 ends at 350 + 9,750.
    jobs = run(
        STARVING,
        scheduler={**ONE_THRESHOLD, "starvation_factor": None},
        preemption=True,
        quantum=10,
        checkpoint_cost=0,
    )
    assert times(jobs) == {"j1": (0, 350), "j2": (70, 10_100)}


def test_las_starvation_guard_promotes_a_waiting_job():
    # factor 1: j1 ran 70 s and has waited since 70, so at 140 its service is reset; it ranks
    # first in queue 0 (submitted before j2), evicts j2 and finishes its 30 s at 170, still in
    # queue 0. j2 resumes at 170 and ends at 170 + 9,930.
    jobs = run(
        STARVING,
        scheduler={**ONE_THRESHOLD, "starvation_factor": 1},
        preemption=True,
        quantum=10,
        checkpoint_cost=0,
    )
    assert times(jobs) == {"j1": (0, 170), "j2": (70, 10_100)}
    assert jobs["preemptions"].to_dict() == {"j1": 1, "j2": 1}


FAIR = [
    ("a1", "a", 0, 100, 4),
    ("a2", "a", 0, 100, 4),
    ("a3", "a", 0, 100, 4),
    ("a4", "a", 0, 100, 4),
    ("b1", "b", 10, 50, 4),
]


def test_fair_share_without_preemption_waits():
    jobs = run(FAIR, scheduler="fair")
    assert times(jobs)["b1"] == (100, 150)


def test_fair_share_evicts_the_vc_furthest_above_its_share():
    # VC a holds all 16 GPUs (a1..a4 on n0..n3). At t=10 b1 ranks with key 4/16 right after
    # a1, ahead of a2..a4: it evicts the lowest-ranked job, a4 (on n3), and runs 10..60;
    # a4 resumes at 60 with 90 s left.
    jobs = run(FAIR, scheduler="fair", preemption=True, quantum=10, checkpoint_cost=0)
    assert times(jobs)["b1"] == (10, 60)
    assert times(jobs)["a4"] == (0, 150)
    assert jobs.loc["b1", "nodes"] == "n3"
    assert jobs["preemptions"].to_dict() == {"a1": 0, "a2": 0, "a3": 0, "a4": 1, "b1": 0}


def test_vcs_owning_nodes_have_their_own_queues():
    # a owns rack r0 (n0, n1) and b rack r1. a1 fills VC a, so a2 waits; b1 is not blocked by
    # a2 and starts at once on b's nodes.
    cluster = asim.presets.cluster("toy", partition="nodes")
    jobs = run([("a1", "a", 0, 100, 8), ("a2", "a", 1, 10, 4), ("b1", "b", 2, 10, 4)], cluster)
    assert times(jobs) == {"a1": (0, 100), "a2": (100, 110), "b1": (2, 12)}
    assert jobs.loc["b1", "nodes"] == "n2"


def test_quota_vcs_cannot_exceed_their_quota():
    # a and b hold 8 GPUs each over the shared pool: a2 waits although 8 GPUs are free.
    cluster = asim.presets.cluster("toy", partition="quota")
    jobs = run([("a1", "a", 0, 100, 8), ("a2", "a", 0, 10, 4)], cluster)
    assert times(jobs) == {"a1": (0, 100), "a2": (100, 110)}


def test_a_larger_step_delays_decisions_but_not_job_lengths():
    # step 10 s: j2 submitted at 5 is seen at 10; j1 ends at 25 exactly but its GPUs are
    # free only at the next step, 30, where j2 starts.
    jobs = run([("j1", "a", 0, 25, 16), ("j2", "a", 5, 10, 16)], step=10, quantum=60)
    assert times(jobs) == {"j1": (0, 25), "j2": (30, 40)}
    assert jobs.loc["j2", "jct"] == 35


def test_toy_preset_golden_fifo():
    # Worked by hand in docs/semantics.md ("The toy workload under FIFO").
    result = asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    jobs = result.jobs.set_index("job_id")
    assert times(jobs) == {
        "j1": (0, 600),
        "j2": (60, 960),
        "j3": (120, 420),
        "j4": (600, 1800),
        "j5": (960, 1560),
        "j6": (960, 1440),
        "j7": (960, 1320),
        "j8": (960, 1560),
    }
    assert jobs["nodes"].to_dict() == {
        "j1": "n0",
        "j2": "n2,n3",
        "j3": "n1",
        "j4": "n0,n1",
        "j5": "n2",
        "j6": "n2",
        "j7": "n2",
        "j8": "n3",
    }
    summary = result.summary()
    assert summary["avg_jct"] == pytest.approx(
        (600 + 900 + 300 + 1620 + 1260 + 960 + 600 + 660) / 8
    )
    assert summary["makespan"] == 1800


def test_stepping_shows_the_state_of_each_moment():
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    assert sim.step() == 0
    assert sim.state.jobs["status"].tolist() == ["running"]
    assert sim.step() == 60
    nodes = sim.state.nodes.set_index("node")
    assert nodes["free"].to_dict() == {"n0": 0, "n1": 4, "n2": 0, "n3": 0}
    assert nodes.loc["n2", "jobs"] == "j2"
    sim.run(until=200)
    assert sim.now == 200
    waiting = sim.state.jobs.set_index("job_id")["status"]
    assert waiting["j4"] == "waiting"
    gpus = sim.state.gpus
    assert gpus["job_id"].notna().sum() == 4 + 8 + 2
    sim.run()
    assert sim.done
    assert sim.result().jobs["status"].eq("done").all()


def test_a_result_taken_mid_run_stays_as_it_was():
    # events and timeline are built when first read: from what was recorded at result() time
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    sim.run(until=700)
    early = sim.result()
    sim.run()
    assert early.events["time"].max() <= 700
    assert early.timeline["time"].max() == 600  # samples every 300 s, up to t=700
    assert set(early.jobs.loc[early.jobs["status"] == "done", "job_id"]) == {"j1", "j3"}
    late = sim.result()
    assert len(late.events) > len(early.events)
    assert late.events["event"].eq("finish").sum() == 8


def test_a_resumed_job_runs_a_quantum_past_its_restore_cost_before_another_eviction():
    # j1 is evicted at 10 (remaining 90 + 5 s cost) and resumes at 30, when j2 ends; it is
    # protected until 30 + 10 (quantum) + 5 (restore). j3 (1 s) arrives at 31 but can only
    # evict it at the round at 50: j1 has then 95 - 20 + 5 = 80 s left and ends at 51 + 80.
    jobs = run(
        [("j1", "a", 0, 100, 16), ("j2", "a", 5, 20, 16), ("j3", "a", 31, 1, 16)],
        scheduler="srtf",
        preemption=True,
        quantum=10,
        checkpoint_cost=5,
    )
    assert times(jobs) == {"j1": (0, 131), "j2": (10, 30), "j3": (50, 51)}
    assert jobs["preemptions"].to_dict() == {"j1": 2, "j2": 0, "j3": 0}


def test_a_waiting_job_evicts_at_the_first_round_after_the_protection_ends():
    # One 4-GPU node, sjf. x starts at 100 when y ends and is protected until 100 + 60. w
    # (shorter) arrives at 110 and fails at the round at 120; nothing else happens, yet the
    # round at 180 must run: x has become evictable, so w runs 180-230 and x resumes with
    # 10,000 - 80 s left (no cost).
    jobs = run(
        [("y", "a", 0, 100, 4), ("x", "a", 0, 10_000, 4), ("w", "a", 110, 50, 4)],
        asim.Cluster.uniform(1, 1, 4),
        scheduler="sjf",
        preemption=True,
        checkpoint_cost=0,
    )
    assert times(jobs) == {"y": (0, 100), "x": (100, 10_150), "w": (180, 230)}


def test_las_waits_out_the_protection_of_a_job_in_a_lower_queue():
    # LAS with one threshold at 400 GPU-seconds, no starvation guard, one 4-GPU node. x runs
    # from 0 and drops to queue 1 at 100; y (queue 0) evicts it at the round at 120 and runs
    # to 220. x resumes at 220, protected until 280. w arrives at 240 (queue 0, above x) and
    # fails at that round; the round at 300 must run although nothing else happens: w runs
    # 300-350, and x, with 10,000 - 200 s left, ends at 10,150.
    jobs = run(
        [("x", "a", 0, 10_000, 4), ("y", "a", 50, 100, 4), ("w", "a", 240, 50, 4)],
        asim.Cluster.uniform(1, 1, 4),
        scheduler={"name": "las", "thresholds": [400], "starvation_factor": None},
        preemption=True,
        checkpoint_cost=0,
    )
    assert times(jobs) == {"x": (0, 10_150), "y": (120, 220), "w": (300, 350)}
    assert jobs["preemptions"].to_dict() == {"x": 2, "y": 0, "w": 0}


def test_preemption_cannot_livelock_when_the_cost_exceeds_the_quantum():
    # two jobs that keep promoting each other (LAS with a tiny threshold and an eager
    # starvation guard), a 1 s quantum and a 50 s cost: every run still makes progress
    sim = asim.Simulation(
        make_jobs([("j1", "a", 0, 100, 16), ("j2", "a", 1, 100, 16)]),
        asim.presets.cluster("toy"),
        asim.SimConfig(
            scheduler={"name": "las", "thresholds": [10], "starvation_factor": 0.1},
            preemption=True,
            quantum=1,
            checkpoint_cost=50,
        ),
    )
    sim.run(until=100_000)
    assert sim.done
    result = sim.result()
    jobs = result.jobs
    assert (jobs["run_time"] == jobs["duration"] + 50 * jobs["preemptions"]).all()
    # a resumed run is protected for its 50 s restore plus one quantum, so it gains 1 s of
    # work over its cost each time: 17 preemptions each, not one per quantum (a protection
    # without the restore cost would give ~1,000 preemptions per job)
    assert jobs["preemptions"].tolist() == [17, 17]
    assert jobs[["end_time"]].values.ravel().tolist() == [1767.0, 1900.0]
    events = result.events
    for job_id in ("j1", "j2"):
        mine = events[events["job_id"] == job_id]
        kinds, at = mine["event"].astype(str).tolist(), mine["time"].tolist()
        for i, kind in enumerate(kinds[:-1]):
            if kind == "resume":
                assert kinds[i + 1] in ("preempt", "finish")
                assert at[i + 1] - at[i] >= 50 + 1  # the restore cost plus one quantum
