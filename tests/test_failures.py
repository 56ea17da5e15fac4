"""Failures, checkpoints and restarts (``docs/failures.md``): hand cases with exact numbers,
replays, failures off = today, invariants under hypothesis in both modes, bad input."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import cases

import analysim as asim
from analysim import Cluster, SimConfig, Simulation, Workload
from analysim.engine.failures import JOB_FAILURE_MEAN, JOB_STREAM
from analysim.results.spare_pool import spare_nodes_at


def _jobs(rows: list[tuple], milli: bool = False) -> Workload:
    """Rows of (job_id, submit_time, duration, num_gpus), VC ``a``, user ``u``."""
    frame = pd.DataFrame(rows, columns=["job_id", "submit_time", "duration", "num_gpus"])
    frame["vc"], frame["user"] = "a", "u"
    if milli:  # whole GPUs, in resource mode
        frame["gpu_milli"] = 1000
    return Workload.from_frame(frame)


ONE_NODE = Cluster.uniform(1, 1, 4, name="one-node")  # node "n0": 4 GPUs
TOY = asim.presets.cluster("toy")


def _run(workload: Workload, cluster: Cluster, **options) -> asim.Result:
    return Simulation(workload, cluster, SimConfig(**options)).run().result()


def test_a_job_that_may_never_finish_is_warned_of_at_100_restarts(caplog):
    # 10 days of work, no checkpoints, on a node failing about hourly (repaired in a minute):
    # each failure loses all its work, so without a bound the run would not end
    workload = _jobs([("a", 0, 10 * 86400, 4)])
    config = SimConfig(node_mtbf=3600.0, repair_time=60.0)
    with caplog.at_level("WARNING", logger="analysim.engine.failures"):
        sim = Simulation(workload, ONE_NODE, config).run(until=20 * 86400)
    restarts = int(sim.result().jobs["restarts"].iloc[0])
    assert 100 <= restarts < 1000  # warned once, at the 100th
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert warnings[0].startswith("job a has restarted 100 times after failures")
    assert "checkpoint_every=None it may never finish" in warnings[0]
    # with a checkpoint every 10 minutes the same job restarts about 240 times too, but keeps
    # more work than it loses, and ends: no warning
    caplog.clear()
    with caplog.at_level("WARNING", logger="analysim.engine.failures"):
        done = _run(workload, ONE_NODE, node_mtbf=3600.0, repair_time=60.0, checkpoint_every=600)
    assert done.jobs["status"].iloc[0] == "done"
    assert done.jobs["restarts"].iloc[0] >= 100
    assert not caplog.records


# -- hand cases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("milli", [False, True], ids=["whole", "resource"])
def test_a_node_failure_under_a_checkpointed_job(milli):
    # 1,000 s of work, a checkpoint of 20 s after every 300 s of it: work 0-300, checkpoint
    # 300-320, work 320-620, checkpoint 620-640, work from 640. The node fails at 700: the 60 s
    # since the last checkpoint are lost. It is repaired at 900; the job restarts then, pays
    # 50 s, redoes 400 s of work with one checkpoint (20 s) and ends at 900 + 470 = 1370.
    node = ONE_NODE.nodes["node"].iloc[0]
    result = _run(
        _jobs([("j", 0, 1000, 4)], milli),
        ONE_NODE,
        checkpoint_every=300,
        checkpoint_cost=20,
        restart_overhead=50,
        failures=[(node, 700, 900)],
    )
    job = result.jobs.iloc[0]
    assert job["end_time"] == 1370.0
    assert (job["state"], job["status"], job["restarts"]) == ("COMPLETED", "done", 1)
    assert job["lost_seconds"] == 60.0
    assert job["useful_seconds"] == 1000.0
    assert job["run_time"] == 700 + 470  # 1,000 work + 60 lost + 3 checkpoints + 50 restart
    events = result.events
    assert events["event"].astype(str).tolist() == [
        "submit",
        "start",
        "fail",
        "node_down",
        "node_up",
        "resume",
        "finish",
    ]
    assert events["time"].tolist() == [0, 0, 700, 700, 900, 900, 1370]
    fail = events[events["event"] == "fail"].iloc[0]
    assert fail["from_nodes"] == node and fail["job_id"] == "j"
    down = events[events["event"] == "node_down"].iloc[0]
    assert pd.isna(down["job_id"]) and down["num_gpus"] == 4 and down["nodes"] == node
    summary = result.summary()
    assert summary["lost_gpu_seconds"] == 4 * 60.0
    assert summary["goodput_ratio"] == pytest.approx(1000 / 1170)
    assert summary["restarts"] == 1 and summary["failed_jobs"] == 0
    assert job["recovery_seconds"] == 200.0  # killed at 700, ran again at 900
    assert summary["avg_time_to_recover"] == 200.0
    # the timeline counts the node down from 700 to 900 (samples every 100 s)
    timeline = _run(
        _jobs([("j", 0, 1000, 4)], milli),
        ONE_NODE,
        checkpoint_every=300,
        checkpoint_cost=20,
        restart_overhead=50,
        failures=[(node, 700, 900)],
        sample_every=100,
    ).timeline
    cluster = timeline[timeline["vc"] == "(all)"].set_index("time")
    assert cluster.loc[[600, 700, 800, 900], "down_nodes"].tolist() == [0, 1, 1, 0]
    assert cluster.loc[[600, 700, 800, 900], "free_gpus"].tolist() == [0, 0, 0, 0]


def test_without_checkpoints_a_killed_job_loses_its_whole_run_and_others_take_its_place():
    # j1 (4 GPUs, 600 s) starts on n0; n0 fails at 100 and j1 restarts at once on n1 (free):
    # it loses 100 s and ends at 100 + 600 = 700 (no restart overhead given: 0)
    result = _run(_jobs([("j1", 0, 600, 4)]), TOY, failures=[("n0", 100, 300)])
    job = result.jobs.iloc[0]
    assert (job["end_time"], job["lost_seconds"], job["restarts"]) == (700.0, 100.0, 1)
    resume = result.events[result.events["event"] == "resume"].iloc[0]
    assert (resume["time"], resume["nodes"]) == (100.0, "n1")


def test_a_preemption_keeps_the_work_and_resets_the_checkpoint_clock():
    # LAS with a 400 GPU-s threshold: j1 (1 GPU) runs 0-400, is demoted and, at the next
    # round after j2 arrives, evicted; its work is kept (nothing lost)
    one_gpu = Cluster.uniform(1, 1, 1, name="one-gpu")
    result = _run(
        _jobs([("j1", 0, 1000, 1), ("j2", 500, 100, 1)]),
        one_gpu,
        scheduler={"name": "las", "thresholds": [400.0]},
        preemption=True,
        checkpoint_cost=10,
        checkpoint_every=1000,
    )
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["j1", "preemptions"] == 1
    assert jobs.loc["j1", "lost_seconds"] == 0.0 and jobs.loc["j1", "useful_seconds"] == 1000
    # evicted at 540 (the first quantum boundary after j2 arrived): 540 s done; j2 runs
    # 540-640; j1 resumes, pays its checkpoint cost (10 s) and does the 460 s left
    assert jobs.loc["j1", "end_time"] == 640 + 10 + 460


def _own_failure_point(duration: float, seed: int = 0, n: int = 1, j: int = 0) -> float:
    """The documented draw: uniforms for every job, then exponentials of mean 300 s."""
    rng = np.random.default_rng([seed, JOB_STREAM])
    rng.random(n)
    return min(float(rng.exponential(JOB_FAILURE_MEAN, n)[j]), duration)


@pytest.mark.parametrize("milli", [False, True], ids=["whole", "resource"])
def test_a_job_that_fails_by_itself_ends_failed_without_retry(milli):
    point = _own_failure_point(2000.0)
    assert 0 < point < 2000
    result = _run(_jobs([("j", 0, 2000, 2)], milli), TOY, job_failure_prob=1.0)
    job = result.jobs.iloc[0]
    assert (job["status"], job["state"], job["restarts"]) == ("failed", "FAILED", 0)
    assert job["end_time"] == pytest.approx(point)
    assert job["lost_seconds"] == pytest.approx(point)  # no checkpoint: all of it
    assert job["useful_seconds"] == 0.0
    assert result.events["event"].astype(str).tolist() == ["submit", "start", "failed"]
    summary = result.summary()
    assert (summary["finished"], summary["failed_jobs"]) == (0, 1)
    assert math.isnan(summary["avg_jct"])  # JCT is over the jobs that completed


def test_a_job_that_fails_by_itself_restarts_once_with_retry():
    point = _own_failure_point(2000.0)
    result = _run(
        _jobs([("j", 0, 2000, 2)]),
        TOY,
        job_failure_prob=1.0,
        retry_failed=True,
        restart_overhead=30,
    )
    job = result.jobs.iloc[0]
    assert (job["status"], job["state"], job["restarts"]) == ("done", "COMPLETED", 1)
    # killed at the failure point, seen at the next whole second, then 30 + 2,000 s
    assert job["end_time"] == math.ceil(point) + 30 + 2000
    assert job["lost_seconds"] == pytest.approx(point)
    kinds = result.events["event"].astype(str).tolist()
    assert kinds == ["submit", "start", "fail", "resume", "finish"]


def test_a_failure_point_at_the_last_moment_still_fails():
    # a job shorter than any plausible draw fails at its end (the point is capped there)
    assert _own_failure_point(1.0) == 1.0
    result = _run(_jobs([("j", 0, 1, 1)]), TOY, job_failure_prob=1.0)
    assert result.jobs["status"].tolist() == ["failed"]
    assert result.jobs["end_time"].tolist() == [1.0]


# -- replays and failures off --------------------------------------------------------------------
def _frames(result: asim.Result) -> tuple[pd.DataFrame, ...]:
    return result.jobs, result.events, result.timeline


@pytest.mark.parametrize(
    "options",
    [
        {"failures": [("n0", 100, 500), ("n2", 300, 400), ("n0", 500, 700)]},
        {"node_mtbf": 600.0, "repair_time": 120.0, "checkpoint_every": 120, "seed": 3},
        {"node_mtbf": 900.0, "failure_shape": 0.7, "repair_time": 60.0, "job_failure_prob": 0.5},
    ],
    ids=["schedule", "drawn", "weibull+own"],
)
def test_a_failure_run_replays_identically(options):
    workload = asim.presets.workload("toy")
    first = _run(workload, TOY, scheduler="las", preemption=True, **options)
    again = _run(workload, TOY, scheduler="las", preemption=True, **options)
    for a, b in zip(_frames(first), _frames(again), strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert (first.events["event"] == "node_down").any()


def test_drawn_failures_follow_the_seed():
    workload = asim.presets.workload("toy")
    options = {"node_mtbf": 600.0, "repair_time": 120.0}
    one = _run(workload, TOY, seed=1, **options).events
    two = _run(workload, TOY, seed=2, **options).events
    assert not one[one["event"] == "node_down"]["time"].equals(
        two[two["event"] == "node_down"]["time"]
    )


def test_with_failures_off_nothing_changes():
    workload, cluster = asim.presets.workload("toy"), TOY
    today = _run(workload, cluster)
    assert "state" not in today.jobs.columns and "down_nodes" not in today.timeline.columns
    assert "lost_gpu_seconds" not in today.summary().index
    assert today.summary()["avg_jct"] == 862.5  # docs/semantics.md's worked example
    # a failure after the run has ended changes nothing but the added columns
    late = _run(workload, cluster, failures=[("n0", 10**6, 10**6 + 1)])
    pd.testing.assert_frame_equal(late.jobs[today.jobs.columns], today.jobs)
    pd.testing.assert_frame_equal(
        late.events[today.events.columns], today.events, check_categorical=False
    )
    assert late.jobs["state"].eq("COMPLETED").all() and late.jobs["restarts"].eq(0).all()


def test_a_failure_schedule_survives_the_configs_json_round_trip():
    table = pd.DataFrame({"node": ["n0", "n1"], "down": [10, 20], "up": [15.5, 30]})
    config = SimConfig(failures=table, checkpoint_every=60, job_failure_prob=0.25)
    assert config.failures == (("n0", 10.0, 15.5), ("n1", 20.0, 30.0))
    assert SimConfig.from_dict(config.to_dict()) == config
    import json

    assert SimConfig.from_dict(json.loads(config.to_json())) == config
    assert config.to_dict()["failures"][0] == {"node": "n0", "down": 10.0, "up": 15.5}


def test_young_daly_interval():
    assert asim.young_daly_interval(50, 10_000) == 1000.0
    assert asim.young_daly_interval(0, 10_000) == 0.0
    with pytest.raises(ValueError, match="mtbf"):
        asim.young_daly_interval(50, 0)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"node_mtbf": -5, "repair_time": 60}, r"node_mtbf must be in \(0, .*got -5"),
        ({"node_mtbf": 600, "repair_time": -1}, r"repair_time must be in \[0, .*got -1"),
        ({"node_mtbf": 600}, "node_mtbf needs repair_time"),
        ({"checkpoint_every": 0}, r"checkpoint_every must be in \(0, .*got 0"),
        ({"checkpoint_every": -60}, "checkpoint_every"),
        ({"restart_overhead": "1 min"}, "restart_overhead must be a number"),
        ({"job_failure_prob": 1.5}, r"job_failure_prob must be in \[0, 1\], got 1.5"),
        ({"job_failure_prob": -0.1}, "job_failure_prob"),
        ({"failure_shape": 0}, "failure_shape"),
        ({"retry_failed": "yes"}, "retry_failed must be True or False"),
        ({"failures": [("n0", 50, 20)]}, r"failures row 0 \(node 'n0'\): 'down' \(50\) must be"),
        ({"failures": [("n0", -1, 20)]}, r"failures row 0: column 'down' must be in \[0"),
        (
            {"failures": [("n0", 0, 100), ("n1", 0, 5), ("n0", 99, 200)]},
            "failures rows 0 and 2: downtimes of node 'n0' overlap",
        ),
        ({"failures": [{"node": "n0", "down": 1}]}, r"failures row 0 must have the keys"),
        ({"failures": "n0 at 5"}, "failures must be a table of node downtimes"),
        (
            {"failures": pd.DataFrame({"node": ["n0"], "down": [1.0]})},
            r"failures must have the columns .* missing \['up'\]",
        ),
        (
            {"failures": [("n0", 1, 2)], "node_mtbf": 60, "repair_time": 1},
            "either as a schedule",
        ),
    ],
)
def test_bad_failure_settings_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        SimConfig(**options)


def test_a_schedule_naming_an_unknown_node_is_refused():
    config = SimConfig(failures=[("n0", 0, 10), ("n9", 5, 10)])
    with pytest.raises(ValueError, match="failures row 1: column 'node': 'n9' is not a node of"):
        Simulation(asim.presets.workload("toy"), TOY, config)


# -- invariants -----------------------------------------------------------------------------------
failure_options = st.fixed_dictionaries(
    {
        "node_mtbf": st.sampled_from([200.0, 1000.0, 5000.0]),
        "failure_shape": st.sampled_from([0.6, 1.0, 2.0]),
        "repair_time": st.sampled_from([0.0, 30.0, 300.0]),
        "checkpoint_every": st.sampled_from([None, 50.0, 200.0]),
        "restart_overhead": st.sampled_from([None, 0.0, 45.0]),
        "job_failure_prob": st.sampled_from([0.0, 0.3, 1.0]),
        "retry_failed": st.booleans(),
    }
).filter(lambda options: options["node_mtbf"] >= 1000.0 or options["checkpoint_every"] == 50.0)
# (A node failing every 200 s or so kills a job of up to 600 s on several nodes far more often
# than it can run 200 s, let alone to its end: such a run restarts for ever, as the engine
# warns, and the tests would never end. Those nodes come with a checkpoint every 50 s.)


def _check_invariants(sim: Simulation) -> None:
    result = sim.result()
    jobs, events = result.jobs, result.events
    # every job completes, fails for good, or is reported unschedulable
    assert jobs["status"].isin(["done", "failed", "unschedulable"]).all()
    ended = jobs["status"] != "unschedulable"
    assert (jobs.loc[ended, "state"].isin(["COMPLETED", "FAILED"])).all()
    assert (jobs["lost_seconds"] >= 0).all()
    # work done never exceeds the job's work; a completed job did all of it
    assert (jobs["useful_seconds"] <= jobs["duration"] + 1e-6).all()
    done = jobs["status"] == "done"
    np.testing.assert_allclose(jobs.loc[done, "useful_seconds"], jobs.loc[done, "duration"])
    # time on GPUs = useful work + lost work + overheads (never less than the two)
    assert (jobs["run_time"] + 1e-6 >= jobs["useful_seconds"] + jobs["lost_seconds"]).all()
    # no job runs on a down node: replay the events
    down: set[str] = set()
    holding: dict[str, set[str]] = {}
    for kind, job, nodes in zip(
        events["event"].astype(str), events["job_id"], events["nodes"].astype(object), strict=True
    ):
        names = set(str(nodes).split(",")) if isinstance(nodes, str) else set()
        if kind == "node_down":
            assert not any(names & held for held in holding.values()), "jobs on a failing node"
            down |= names
        elif kind == "node_up":
            down -= names
        elif kind in ("start", "resume", "migrate"):
            assert not names & down, f"{job} placed on a down node"
            holding[job] = names
        elif kind in ("preempt", "reclaim", "finish", "fail", "failed"):
            holding.pop(job, None)
    assert sim.ledger.gpu_owner() is not None  # the ledger's own checks hold at the end


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(max_jobs=8, max_duration=600), options=failure_options)
def test_invariants_hold_with_failures_on(case, options):
    cluster_case, workload, config = case
    config = config.replace(**options)
    sim = Simulation(workload, cluster_case.cluster, config).run()
    _check_invariants(sim)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(max_jobs=8, max_duration=600), options=failure_options)
def test_a_failure_run_is_that_of_reference_mode_no_leaps_and_resource_mode(case, options):
    cluster_case, workload, config = case
    config = config.replace(**options)
    fast = Simulation(workload, cluster_case.cluster, config).run().result()
    plain = Simulation(workload, cluster_case.cluster, config, reference=True).run().result()
    stepped = Simulation(workload, cluster_case.cluster, config.replace(leap=False)).run()
    for a, b, c in zip(_frames(fast), _frames(plain), _frames(stepped.result()), strict=True):
        pd.testing.assert_frame_equal(a, b)
        pd.testing.assert_frame_equal(a, c)
    # the same run in resource mode (every job asks for whole GPUs, gpu_milli 1000)
    jobs = workload.jobs.copy()
    jobs["gpu_milli"] = 1000
    shared = Simulation(Workload.from_frame(jobs), cluster_case.cluster, config)
    assert shared.resource_mode
    compared = ["job_id", "status", "state", "start_time", "end_time", "restarts", "nodes"]
    pd.testing.assert_frame_equal(shared.run().result().jobs[compared], fast.jobs[compared])


# -- explain and the other parts ------------------------------------------------------------------
def test_why_waiting_says_the_job_was_killed_by_a_node_failure():
    from analysim.results.explain import why_waiting

    result = _run(
        _jobs([("j", 0, 1000, 4)]),
        ONE_NODE,
        checkpoint_every=300,
        checkpoint_cost=20,
        failures=[("n0", 700, 900)],
    )
    assert why_waiting(result, "j", 800, ONE_NODE) == (
        "j at t=800 s: it was killed by the failure of node n0 at t=700 s and restarts from "
        "its last checkpoint. It waits because the cluster is full: 0 of its 4 GPUs are in "
        "use, 4 on nodes down (failed), 0 free, and it needs 4."
    )
    failed = _run(_jobs([("j", 0, 2000, 2)]), TOY, job_failure_prob=1.0)
    assert why_waiting(failed, "j", 1900, TOY).endswith(
        "it failed for good (its own failure, without retry)."
    )


def test_a_node_down_is_in_the_state_and_defragmentation_leaves_it_alone():
    # resource mode with periodic defragmentation: n0 is down (in use, no job) from 30 to 500
    jobs = [("a", 0, 400, 1), ("b", 0, 400, 1), ("c", 10, 400, 2)]
    config = SimConfig(
        placement="fgd",
        migration=True,
        defrag_every=60,
        failures=[("n0", 30, 500)],
    )
    sim = Simulation(_jobs(jobs, milli=True), TOY, config)
    sim.run(until=100)
    nodes = sim.state.nodes.set_index("node")
    assert nodes.loc["n0", "down"] and nodes.loc["n0", "used"] == 0
    assert not nodes.loc[["n1", "n2", "n3"], "down"].any()
    result = sim.run().result()
    assert result.jobs["status"].eq("done").all()


def test_the_mtbf_may_be_given_per_gpu_type():
    nodes = TOY.nodes.copy()
    nodes["gpu_type"] = ["V100", "V100", "A100", "A100"]
    typed = Cluster.from_frame(nodes)
    workload = asim.presets.workload("toy")
    # A100 nodes fail every ~100 s, V100 nodes practically never in this run
    result = _run(workload, typed, node_mtbf={"V100": 1e9, "A100": 100.0}, repair_time=50)
    downs = result.events[result.events["event"] == "node_down"]
    assert len(downs) > 0 and set(downs["nodes"].astype(str)) == {"n2", "n3"}
    config = SimConfig(node_mtbf={"V100": 1e9, "A100": 100.0}, repair_time=50)
    assert SimConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="node_mtbf gives no MTBF for GPU type 'A100'"):
        Simulation(workload, typed, SimConfig(node_mtbf={"V100": 100.0}, repair_time=5))
    with pytest.raises(ValueError, match=r"node_mtbf\['V100'\] must be in \(0"):
        SimConfig(node_mtbf={"V100": -1}, repair_time=5)


def test_a_failure_run_saves_loads_and_snapshots(tmp_path):
    workload = asim.presets.workload("toy")
    result = _run(
        workload, TOY, failures=[("n0", 100, 300)], job_failure_prob=0.5, checkpoint_every=60
    )
    loaded = asim.Result.load(result.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(loaded.jobs, result.jobs)
    assert (
        loaded.events["event"].astype(str).tolist() == result.events["event"].astype(str).tolist()
    )
    pd.testing.assert_series_equal(loaded.summary(), result.summary())
    # j1 held n0 until the failure at 100: the snapshot frees its GPUs then
    before, after = result.snapshot(99.0), result.snapshot(100.0)
    assert (before.loc[before["node"] == "n0", "job_id"] == "j1").all()
    assert after.loc[after["node"] == "n0", "job_id"].isna().all()
    by_vc = result.summary(by="vc")
    assert by_vc["lost_gpu_seconds"].sum() == pytest.approx(result.summary()["lost_gpu_seconds"])


def test_the_command_line_takes_the_failure_options(tmp_path, capsys):
    from analysim.faces.cli import main

    table = tmp_path / "downtimes.csv"
    table.write_text("node,down,up\nn0,100,300\n")
    args = ["run", "--workload", "toy", "--no-progress", "--checkpoint-every", "100"]
    assert main([*args, "--failures", str(table), "--checkpoint-cost", "40"]) == 0
    out = capsys.readouterr().out
    assert "lost_gpu_seconds                400 GPU-s" in out  # j1: 4 GPUs x 100 s
    assert main([*args, "--node-mtbf", "5000", "--repair-time", "60"]) == 0
    assert "goodput_ratio" in capsys.readouterr().out
    assert main([*args, "--failures", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err


# -- spare nodes ----------------------------------------------------------------------------------
TWO_NODES = Cluster.uniform(1, 2, 4, name="two-nodes")  # n0 and n1, 4 GPUs each


@pytest.mark.parametrize("milli", [False, True], ids=["whole", "resource"])
def test_a_job_killed_by_a_node_failure_restarts_in_place_on_a_spare(milli):
    # the worked example of docs/failures.md, with n1 a spare: n0 fails at 700 under the job
    # (60 s of work since its second checkpoint lost); n1 stands in at once: the job pays
    # 50 s, redoes 400 s of work with one checkpoint (20 s) and ends at 700 + 470 = 1170
    # instead of 1370 (waiting for n0's repair)
    options = dict(checkpoint_every=300, checkpoint_cost=20, restart_overhead=50)
    schedule = [("n0", 700, 900)]
    workload = _jobs([("j", 0, 1000, 4)], milli)
    result = _run(workload, TWO_NODES, failures=schedule, spare_nodes=["n1"], **options)
    job = result.jobs.iloc[0]
    assert job["end_time"] == 1170.0
    assert (job["status"], job["restarts"], job["lost_seconds"]) == ("done", 1, 60.0)
    assert job["recovery_seconds"] == 0.0 and job["run_time"] == 700 + 470
    events = result.events
    assert events["event"].astype(str).tolist() == [
        "submit",
        "start",
        "fail",
        "node_down",
        "resume",
        "node_up",
        "finish",
    ]
    assert events["time"].tolist() == [0, 0, 700, 700, 700, 900, 1170]
    resume = events[events["event"] == "resume"].iloc[0]
    assert (resume["nodes"], resume["from_nodes"]) == ("n1", "n0")  # the spare stood in
    # n0, repaired, is the spare now: a second job waits for n1 rather than run on n0
    later = _jobs([("j", 0, 1000, 4), ("k", 1000, 100, 4)], milli)
    jobs = _run(later, TWO_NODES, failures=schedule, spare_nodes=1, **options).jobs
    assert jobs.set_index("job_id").loc["k", "start_time"] == 1170.0
    # without a spare (one node), it waits for the repair: the worked example's 1370
    alone = _run(workload, ONE_NODE, failures=[("n0", 700, 900)], **options)
    assert alone.jobs.iloc[0]["end_time"] == 1370.0


def test_a_spare_takes_no_job_the_scheduler_places():
    # two jobs of 4 GPUs on n0 and a spare n1: the second waits for the first
    workload = _jobs([("a", 0, 100, 4), ("b", 0, 100, 4)])
    jobs = _run(workload, TWO_NODES, failures=[("n0", 5000, 5100)], spare_nodes=["n1"]).jobs
    assert jobs["start_time"].tolist() == [0.0, 100.0]
    assert set(jobs["nodes"]) == {"n0"}


def test_why_waiting_counts_the_spares_apart():
    from analysim.results.explain import why_waiting

    workload = _jobs([("a", 0, 100, 4), ("b", 0, 100, 4)])
    result = _run(workload, TWO_NODES, failures=[("n0", 5000, 5100)], spare_nodes=["n1"])
    assert why_waiting(result, "b", 50, TWO_NODES) == (
        "b at t=50 s: it waits because the cluster is full: 4 of its 8 GPUs are in use, 4 on "
        "spare nodes (held for failures), 0 free, and it needs 4."
    )


def test_a_spare_too_small_or_failed_does_not_stand_in():
    # n1 (the spare) fails first: when n0 fails under the job, no spare is up; it waits
    workload = _jobs([("j", 0, 1000, 4)])
    schedule = [("n1", 100, 2000), ("n0", 700, 900)]
    jobs = _run(workload, TWO_NODES, failures=schedule, spare_nodes=1, restart_overhead=50).jobs
    assert jobs.iloc[0]["end_time"] == 900 + 50 + 1000
    small = Cluster.from_frame(
        pd.DataFrame({"node": ["n0", "n1"], "rack": ["r0", "r0"], "gpus": [4, 2]})
    )
    jobs = _run(workload, small, failures=[("n0", 700, 900)], spare_nodes=["n1"]).jobs
    assert jobs.iloc[0]["end_time"] == 900 + 1000


@pytest.mark.parametrize(
    ("spares", "message"),
    [
        (-1, "spare_nodes must be 0 or more nodes, got -1"),
        (2, "sets aside 2 node(s), but cluster 'two-nodes' has 2"),
        (["n1", "n1"], "names node 'n1' twice"),
        (["n7"], "'n7' is not a node of cluster 'two-nodes'"),
        ("n1", "a number of nodes or a list of node names"),
        ([3], "must name nodes as text, got 3"),
    ],
)
def test_bad_spares_are_named(spares, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _run(_jobs([("j", 0, 10, 1)]), TWO_NODES, failures=[("n0", 5, 6)], spare_nodes=spares)


def test_spares_survive_the_configs_json_round_trip():
    config = SimConfig(failures=[("n0", 5, 6)], spare_nodes=["n1", "n2"])
    assert config.spare_nodes == ("n1", "n2")
    assert json.loads(config.to_json())["spare_nodes"] == ["n1", "n2"]
    assert SimConfig.from_dict(json.loads(config.to_json())) == config
    assert SimConfig.from_dict(config.replace(spare_nodes=2).to_dict()).spare_nodes == 2


def test_spares_need_failures_and_leave_room_for_every_job():
    with pytest.raises(ValueError, match="spare_nodes stand in for failed nodes"):
        SimConfig(spare_nodes=1)
    with pytest.raises(ValueError, match="leave 4 GPUs in service where job 'j' asks for 8"):
        _run(_jobs([("j", 0, 10, 8)]), TWO_NODES, failures=[("n0", 5, 6)], spare_nodes=1)


def _owned(gpus: list[int], vcs: list, **more) -> Cluster:
    """Nodes n0, n1, ... of ``gpus`` GPUs, owned by ``vcs`` (None: the shared pool)."""
    names = [f"n{i}" for i in range(len(gpus))]
    return Cluster.from_frame(
        pd.DataFrame({"node": names, "rack": "r0", "gpus": gpus, "vc": vcs, **more})
    )


def _rows(rows: list[tuple], **more) -> Workload:
    """Rows of (job_id, vc, submit_time, duration, num_gpus), user ``u``."""
    columns = ["job_id", "vc", "submit_time", "duration", "num_gpus"]
    frame = pd.DataFrame(rows, columns=columns).assign(user="u", **more)
    return Workload.from_frame(frame)


def test_spares_leave_room_on_each_jobs_own_nodes_not_its_group():
    # hypothesis's case, smallest: n1, the only node of VC b, is the spare. With borrowing the
    # whole cluster is one group (n0 in service), but a job of b may only borrow n0, which does
    # not rescue it (a job larger than its own VC's nodes is never run): it could never run,
    # and was left waiting forever, the run never ending
    # (the check is made when the simulation is built: before it, run() never returned)
    config = SimConfig(failures=[("n0", 5, 6)], spare_nodes=["n1"])
    one_each = _owned([2, 2], ["a", "b"])
    with pytest.raises(ValueError, match=re.escape("leave 0 GPUs in service where job 'k' asks")):
        Simulation(_rows([("k", "b", 0, 10, 1)]), one_each, config.replace(borrowing=True))
    # a GPU type narrows the nodes too: an untyped job puts both in one group, but the A100
    # job has only n1, the spare
    typed = _owned([2, 2], [None, None], gpu_type=["V100", "A100"])
    workload = _rows([("any", "a", 0, 10, 1), ("t", "a", 0, 10, 1)], gpu_type=[None, "A100"])
    with pytest.raises(ValueError, match=re.escape("leave 0 GPUs in service where job 't' asks")):
        Simulation(workload, typed, config)
    # resource mode: enough GPUs in service, but only the spare has the CPU the job asks for
    small = _owned([2, 2], [None, None], cpu_milli=[1000, 8000])
    workload = _rows([("c", "a", 0, 10, 1)], gpu_milli=1000, cpu_milli=4000)
    message = "no nodes in service where placement 'consolidate' can put job 'c' (1 GPU, its CPU"
    with pytest.raises(ValueError, match=re.escape(message)):
        Simulation(workload, small, config)
    # (n1 in service: it runs 0-10; n1 fails at 5, n0 too small to stand in: it redoes its
    # 10 s from 6, when n1 is back)
    jobs = _run(workload, small, failures=[("n1", 5, 6)], spare_nodes=["n0"]).jobs
    assert jobs[["end_time", "lost_seconds"]].values.tolist() == [[16.0, 5.0]]
    # whole GPUs, 8 in service on n0 and n1, but a job of 8 fits on one node (n2, the spare),
    # so the placer puts it on one node only: it could never run (it waited forever)
    three = _owned([4, 4, 8], [None, None, None])
    message = "no nodes in service where placement 'consolidate' can put job 'e' (8 GPUs; a job"
    with pytest.raises(ValueError, match=re.escape(message)):
        Simulation(_rows([("e", "a", 0, 10, 8)]), three, config.replace(spare_nodes=["n2"]))
    # n1 the spare instead: it runs on n2, 0-10
    jobs = _run(_rows([("e", "a", 0, 10, 8)]), three, failures=[("n0", 5, 6)], spare_nodes=["n1"])
    assert jobs.jobs[["nodes", "end_time"]].values.tolist() == [["n2", 10.0]]


@pytest.mark.parametrize("borrowing", [False, True])
def test_a_spare_stands_in_only_for_a_node_of_its_own_vc(borrowing):
    # n0 is VC a's, n1 and n2 VC b's, n2 the spare. n0 fails at 100 under ja (2 GPUs, 1,000 s,
    # no checkpoints: its 100 s are lost); n2 is b's, so it does not stand in (with borrowing
    # it did: ja ran on b's node unmarked as borrowed, and n0, repaired, went to the pool,
    # leaving a with no node: jb then waited forever). ja waits for n0's repair at 200 and (it may
    # borrow at most 0.5 x 2 = 1 GPU, so not n1) restarts there: 200 + 50 + 1,000 = 1,250;
    # jb runs 2,000-2,100 on n0
    cluster = _owned([2, 2, 2], ["a", "b", "b"])
    workload = _rows([("ja", "a", 0, 1000, 2), ("jb", "a", 2000, 100, 2), ("jc", "b", 0, 10, 2)])
    config = SimConfig(
        failures=[("n0", 100, 200)],
        spare_nodes=["n2"],
        restart_overhead=50,
        borrowing=borrowing,
        borrow_limit=0.5,
    )
    sim = Simulation(workload, cluster, config).run(until=3000)
    assert sim.done
    jobs = sim.result().jobs.set_index("job_id").loc[["ja", "jb", "jc"]]
    assert jobs["start_time"].tolist() == [0.0, 2000.0, 0.0]
    assert jobs["end_time"].tolist() == [1250.0, 2100.0, 10.0]
    assert jobs["nodes"].tolist() == ["n0", "n0", "n1"]
    assert jobs["lost_seconds"].tolist() == [100.0, 0.0, 0.0]
    events = sim.result().events
    resumes = events[events["event"] == "resume"]  # at n0's repair; no spare stood in
    assert resumes[["time", "job_id", "nodes"]].values.tolist() == [[200.0, "ja", "n0"]]
    assert resumes["from_nodes"].isna().all()
    assert sim.state.nodes["spare"].tolist() == [False, False, True]


def _spare_run(case, options, spares: int, stepped: bool = True, **kwargs) -> Simulation | None:
    """The run of a random case with its last ``spares`` nodes spare, stepped, checking at
    every step that no job holds anything on a spare (or, not ``stepped``, run to its end);
    None if the spares leave too little."""
    cluster_case, workload, config = case
    config = config.replace(**options, spare_nodes=min(spares, len(cluster_case.cluster.nodes) - 1))
    try:
        sim = Simulation(workload, cluster_case.cluster, config, **kwargs)
    except ValueError as exc:
        assert "could never run" in str(exc)
        return None
    if not stepped:  # (the reference mode may take a step per second: far more steps)
        return sim.run()
    ledger = sim.ledger
    for _ in range(100_000):  # (a run that never ends fails the invariants)
        if sim.done:
            break
        sim.step()
        for pairs in ledger.alloc_pairs.values():
            assert not any(ledger.spare[n] or ledger.down[n] for n, _ in pairs)
    return sim


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(max_jobs=8, max_duration=600), options=failure_options, spares=st.integers(1, 2))
def test_invariants_hold_with_spares(case, options, spares):
    sim = _spare_run(case, options, spares)
    if sim is not None:
        _check_invariants(sim)
        events = sim.result().events
        stood_in = (events["event"] == "resume") & events["from_nodes"].notna()
        event("a spare stood in" if stood_in.any() else "no spare used")
        # explain's replay of the pool from the events agrees with the engine's
        replayed = spare_nodes_at(sim.config.spare_nodes, sim.cluster, events)
        np.testing.assert_array_equal(replayed, sim.ledger.spare)
        reference = _spare_run(case, options, spares, stepped=False, reference=True)
        for a, b in zip(_frames(sim.result()), _frames(reference.result()), strict=True):
            pd.testing.assert_frame_equal(a, b)


def test_the_state_shows_the_spares_and_the_command_line_takes_them(capsys):
    from analysim.faces.cli import main

    config = SimConfig(failures=[("n0", 100, 200)], spare_nodes=["n1"])
    sim = Simulation(_jobs([("j", 0, 1000, 4)]), TWO_NODES, config).run(until=150)
    nodes = sim.state.nodes.set_index("node")
    assert nodes["spare"].tolist() == [False, False]  # n1 stood in for n0, down
    assert nodes["down"].tolist() == [True, False] and nodes.loc["n1", "used"] == 4
    sim.run()
    assert sim.state.nodes["spare"].tolist() == [True, False]  # n0, repaired, is the spare
    args = ["run", "--workload", "toy", "--no-progress", "--node-mtbf", "5000"]
    assert main([*args, "--repair-time", "60", "--spare-nodes", "1"]) == 0
    assert "goodput_ratio" in capsys.readouterr().out
    assert main([*args, "--repair-time", "60", "--spare-nodes", "nope"]) == 2
    assert "'nope' is not a node of cluster" in capsys.readouterr().err


def test_a_killed_job_due_a_promotion_is_ranked_by_it_in_every_mode():
    """A failure kills j0 at 108 s (324 GPU-seconds: LAS's second queue, behind j1). When
    n1 is back at 408 s j0 has waited 300 s >= 1.0 x 108 s run: starving, it is promoted and
    resumes first (the lower index in the top queue); j1 waits until j0 ends at 3,088 s. The
    fast path once kept the ranking's old bound after the kill and started j1 at 408 s."""
    workload = _jobs([("j0", 0, 109, 3), ("j1", 0, 1, 3), ("j2", 0, 1, 1), ("j3", 0, 1, 1)])
    cluster = Cluster.uniform(1, 2, 2, name="two-small-nodes")  # n0, n1: 2 GPUs each, a pool
    config = SimConfig(
        scheduler={"name": "las", "thresholds": [60.0], "starvation_factor": 1.0},
        quantum=1,
        checkpoint_cost=0,
        migration=True,
        migration_cost=0,
        sample_every=1,
        node_mtbf=200.0,
        failure_shape=0.6,
        repair_time=300.0,
    )
    plain = Simulation(workload, cluster, config, reference=True).run().result()
    assert plain.jobs["start_time"].tolist() == [0.0, 3088.0, 3088.0, 3089.0]
    assert plain.events.query("job_id == 'j0' and event == 'resume'")["time"].iloc[0] == 408.0
    for leap in (True, False):
        fast = Simulation(workload, cluster, config.replace(leap=leap)).run().result()
        pd.testing.assert_frame_equal(fast.jobs, plain.jobs)
        pd.testing.assert_frame_equal(fast.events, plain.events)
