"""The job performance model (``docs/performance.md``): hand-checked runs with exact times,
bad input, the bundled Pollux tables, and whole runs at rate 1 identical to runs without it.

The toy application ``spread_half`` runs an 8-GPU job at rate 1 on two nodes (its packed
placement on 4-GPU nodes: throughput 2.0) and at half speed on three or four (1.0). The
cluster is the ``toy`` preset: four nodes of 4 GPUs (``n0``-``n3``). A job no larger than
a node always runs on one node (the placers' rule), so only larger jobs can be spread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import cases, resource_cases

import analysim as asim
from analysim.engine import Simulation
from analysim.inputs.applications import Application, pollux_applications
from analysim.policies.scheduling import RUNNING, WAITING, JobView

TOY = pd.DataFrame(
    {"gpus": [1, 2, 4, 8, 8, 8], "nodes": [1, 1, 1, 2, 3, 4], "throughput": [1, 1, 1, 2, 1, 1]}
)
APPS = {"spread_half": TOY}
TOY_CLUSTER = asim.presets.cluster("toy")
#: three jobs of 2 GPUs until t=30: under ``spread`` on n0, n1, n2, so that an 8-GPU job
#: starting at 0 takes n3 and 2 GPUs of n0 and of n1: three nodes, rate 0.5
BLOCKERS = [("b1", 0, 30, 2, None), ("b2", 0, 30, 2, None), ("b3", 0, 30, 2, None)]


def workload(rows: list[tuple], **columns) -> asim.Workload:
    """Rows of (job_id, submit_time, duration, num_gpus, application or None)."""
    frame = pd.DataFrame(
        rows, columns=["job_id", "submit_time", "duration", "num_gpus", "application"]
    )
    frame = frame.assign(vc="a", user="u", **columns)
    return asim.Workload.from_frame(frame)


def run(rows: list[tuple], **config) -> asim.Result:
    config.setdefault("placement", "spread")
    return asim.simulate(workload(rows), TOY_CLUSTER, applications=APPS, **config)


def spans(result: asim.Result) -> dict[str, tuple]:
    jobs = result.jobs.set_index("job_id")
    return {j: (jobs.at[j, "start_time"], jobs.at[j, "end_time"]) for j in jobs.index}


# -- hand-checked runs ----------------------------------------------------------------------
def test_a_job_spread_over_three_nodes_takes_twice_as_long():
    # alone, x takes two whole nodes (n0, n1) and runs at rate 1: 0-100
    alone = run([("x", 0, 100, 8, "spread_half")])
    assert spans(alone)["x"] == (0, 100)
    assert alone.jobs["rate"].tolist() == [1.0]
    # behind the blockers x gets 4 + 2 + 2 GPUs: rate 0.5, 100 work in 200 s
    got = run([*BLOCKERS, ("x", 0, 100, 8, "spread_half")])
    assert spans(got)["x"] == (0, 200)
    jobs = got.jobs.set_index("job_id")
    assert jobs.at["x", "nodes"] == "n0,n1,n3"
    assert jobs.at["x", "jct"] == 200 and jobs.at["x", "run_time"] == 200
    assert jobs.at["x", "rate"] == 0.5 and jobs.at["b1", "rate"] == 1.0
    assert jobs.at["x", "application"] == "spread_half" and pd.isna(jobs.at["b1", "application"])


def test_a_preempted_job_keeps_the_work_done_at_its_rate():
    # x runs 0-120 on three nodes at rate 0.5: 60 of its 100 done; y (priority 1 < 5)
    # evicts it at the full round at 120 and runs until 170; x resumes on two whole nodes
    # at rate 1 with 40 left plus its 10 s checkpoint cost: it ends at 220
    rows = [
        *(row + (0,) for row in BLOCKERS),
        ("x", 0, 100, 8, "spread_half", 5),
        ("y", 120, 50, 16, None, 1),
    ]
    frame = pd.DataFrame(
        rows, columns=["job_id", "submit_time", "duration", "num_gpus", "application", "priority"]
    ).assign(vc="a", user="u")
    got = asim.simulate(
        asim.Workload.from_frame(frame),
        TOY_CLUSTER,
        scheduler="priority",
        preemption=True,
        checkpoint_cost=10,
        placement="spread",
        applications=APPS,
    )
    jobs = got.jobs.set_index("job_id")
    assert spans(got)["y"] == (120, 170)
    assert jobs.at["x", "end_time"] == 220 and jobs.at["x", "preemptions"] == 1
    assert jobs.at["x", "run_time"] == 120 + 50
    assert jobs.at["x", "rate"] == 1.0  # its last run, on two nodes


def test_the_state_now_reads_remaining_work_at_the_rate():
    sim = Simulation(
        workload([*BLOCKERS, ("x", 0, 100, 8, "spread_half")]),
        TOY_CLUSTER,
        asim.SimConfig(placement="spread"),
        applications=APPS,
    )
    sim.run(until=50)
    jobs = sim.state.jobs.set_index("job_id")
    assert jobs.at["x", "executed"] == 50 and jobs.at["x", "remaining"] == 75


EASY = [
    *BLOCKERS,
    ("x", 0, 100, 8, "spread_half"),  # on three nodes at rate 0.5: ends at 200, not 100
    ("h", 1, 10, 16, None),  # the head: all 16 GPUs, promised t=200
]


def test_an_easy_reservation_counts_a_running_job_at_its_rate():
    # s at t=40 (4 GPUs, 150 s, rate 1: on n2) ends at 190 <= 200: it passes the
    # reservation; were x's end read as 100, s would run past it on GPUs h needs and wait
    got = spans(run([*EASY, ("s", 40, 150, 4, None)], backfill="easy"))
    assert got["s"] == (40, 190)
    assert got["h"] == (200, 210)


def test_easy_backfill_takes_a_waiting_job_at_its_slowest_rate():
    # s2 (8 GPUs, 90 work) at its slowest rate, 0.5, would end at 220 > 200 (and on the
    # GPUs free at t=40, n2 and 2 of n0 and of n1, it would run at 0.5): it waits for h,
    # then runs on n0, n1 at rate 1: 210-300
    got = run([*EASY, ("s2", 40, 90, 8, "spread_half")], backfill="easy")
    assert spans(got)["s2"] == (210, 300)
    assert spans(got)["h"] == (200, 210)
    tries = got.decisions.tries
    assert "reserved" in set(tries.loc[tries["job_id"] == "s2", "reason"])


# -- the bundled tables ---------------------------------------------------------------------
def test_the_pollux_applications_are_bundled():
    apps = pollux_applications()
    assert sorted(apps) == ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
    for app in apps.values():
        assert app.gpu_counts[:16] == list(range(1, 17))
        assert app.rate(1, 1) == 1.0 and app.rate(16, 4) == 1.0  # packed
        assert all(app.slowest(g) > 0 for g in app.gpu_counts)
    # bert on 4 GPUs: 29.998317 samples/s on one node, 8.317572 on two
    assert apps["bert"].rate(4, 2) == 8.317572 / 29.998317


def test_a_pollux_application_in_a_workload():
    got = asim.simulate(
        workload([*BLOCKERS, ("x", 0, 100, 8, "bert")]), TOY_CLUSTER, placement="spread"
    )
    # bert on 8 GPUs: 12.872688 samples/s on two nodes, 21.940535 on three (measured)
    rate = 21.940535 / 12.872688
    jobs = got.jobs.set_index("job_id")
    assert jobs.at["x", "rate"] == rate
    assert jobs.at["x", "end_time"] == 100 / rate


def test_node_counts_between_and_beyond_the_listed_ones():
    app = Application.from_table(
        "t", pd.DataFrame({"gpus": [4, 4], "nodes": [1, 3], "throughput": [4.0, 2.0]})
    )
    assert (app.rate(4, 1), app.rate(4, 2), app.rate(4, 3), app.rate(4, 4)) == (1, 0.75, 0.5, 0.5)
    assert app.slowest(4) == 0.5


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"gpus": [1, 2], "nodes": [1, 1], "throughput": [1.0, 0.0]}, "'throughput'.*row 1.*0.0"),
        ({"gpus": [1], "nodes": [1], "throughput": [-2.0]}, "'throughput'.*row 0.*-2.0"),
        ({"gpus": [1], "nodes": [1], "throughput": [np.nan]}, "'throughput'.*row 0.*nan"),
        ({"gpus": [1, 1], "nodes": [1, 1], "throughput": [1, 2]}, "duplicate.*row 0.*row 1"),
        ({"gpus": [1], "throughput": [1.0]}, r"missing column\(s\) \['nodes'\]"),
        ({"gpus": [2], "nodes": [3], "throughput": [1.0]}, "'nodes'.*at most.*row 0: 3"),
        ({"gpus": [1.5], "nodes": [1], "throughput": [1.0]}, "'gpus'.*whole.*row 0: 1.5"),
    ],
)
def test_a_bad_throughput_table_is_named(table, message):
    with pytest.raises(ValueError, match=f"application 'mine'.*{message}"):
        Application.from_table("mine", pd.DataFrame(table))


def test_an_unknown_application_names_its_row_and_value():
    wl = workload([("j1", 0, 10, 1, "bert"), ("j2", 0, 10, 1, "resnet")])
    with pytest.raises(ValueError, match=r"'application'.*row 1 \(job_id='j2'\): 'resnet'"):
        asim.simulate(wl, TOY_CLUSTER)


def test_a_gpu_count_the_application_does_not_list_is_named():
    wl = workload([("j1", 0, 10, 3, "spread_half")])
    with pytest.raises(ValueError, match=r"'num_gpus'.*\[1, 2, 4, 8\].*row 0 \(job_id='j1'\): 3"):
        asim.simulate(wl, TOY_CLUSTER, applications=APPS)


def test_an_application_that_is_not_text_is_named():
    with pytest.raises(ValueError, match=r"'application'.*text.*row 0 \(job_id='j1'\): 7"):
        workload([("j1", 0, 10, 1, 7)])


def test_a_compat_replay_refuses_a_performance_model():
    wl = workload([("j1", 0, 10, 1, "bert")])
    with pytest.raises(ValueError, match="no job performance model"):
        asim.simulate(wl, TOY_CLUSTER, compat="helios")


# -- rate 1 everywhere is the run without the model --------------------------------------------
def _flat_application(wl: asim.Workload) -> asim.Workload:
    """Every job on an application of rate 1 whatever its placement (throughputs that differ
    between GPU counts, equal over node counts)."""
    return asim.Workload.from_frame(wl.jobs.assign(application="flat"))


def _flat_table(wl: asim.Workload) -> pd.DataFrame:
    rows = [(g, n, 3.7 * g) for g in sorted(set(wl.jobs["num_gpus"])) for n in (1, max(1, g))]
    return pd.DataFrame(rows, columns=["gpus", "nodes", "throughput"]).drop_duplicates(
        ["gpus", "nodes"]
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_jobs=12, max_duration=400))
def test_rate_one_everywhere_gives_the_run_without_the_model(drawn):
    case, wl, config = drawn
    if (wl.jobs["num_gpus"] == 0).any():
        wl = asim.Workload.from_frame(wl.jobs[wl.jobs["num_gpus"] > 0])
        if len(wl) == 0:
            return
    plain = Simulation(wl, case.cluster, config).run().result()
    rated = (
        Simulation(
            _flat_application(wl), case.cluster, config, applications={"flat": _flat_table(wl)}
        )
        .run()
        .result()
    )
    jobs = rated.jobs
    assert (jobs["rate"].dropna() == 1.0).all()
    pd.testing.assert_frame_equal(jobs.drop(columns=["application", "rate"]), plain.jobs)
    pd.testing.assert_frame_equal(rated.events, plain.events)
    pd.testing.assert_frame_equal(rated.timeline, plain.timeline)


def test_a_workload_without_applications_has_no_rate_column():
    got = asim.simulate(workload([("j1", 0, 10, 1, None)]), TOY_CLUSTER)
    assert "rate" not in got.jobs.columns and "application" not in got.jobs.columns


# -- rates that differ: the shortcuts and the leap stay exact ---------------------------------
@st.composite
def rated_cases(draw, resources: bool = False):
    """A case (in resource mode: GPU shares, CPU, memory) whose jobs with GPUs may name one
    application, with throughputs drawn per GPU count and node count (rates 1/8 to 8)."""
    drawn = resource_cases() if resources else cases(max_jobs=12, max_duration=400)
    case, wl, config = draw(drawn)
    assume((wl.jobs["num_gpus"] > 0).any())
    rows = []
    for g in sorted(set(wl.jobs["num_gpus"]) - {0}):
        for n in draw(st.sets(st.integers(1, g), min_size=1, max_size=3)):
            rows.append((g, n, draw(st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0]))))
    table = pd.DataFrame(rows, columns=["gpus", "nodes", "throughput"])
    some = draw(st.lists(st.booleans(), min_size=len(wl), max_size=len(wl)))
    gpus = wl.jobs["num_gpus"].tolist()
    jobs = wl.jobs.assign(
        application=["drawn" if s and g else None for s, g in zip(some, gpus, strict=True)]
    )
    return case, asim.Workload.from_frame(jobs), config, {"drawn": table}


def _same(a: asim.Result, b: asim.Result) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.timeline, b.timeline)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans().flatmap(rated_cases))
def test_runs_with_rates_are_those_of_the_reference_mode_and_without_leaps(drawn):
    case, wl, config, apps = drawn
    fast = Simulation(wl, case.cluster, config, applications=apps).run().result()
    plain = Simulation(wl, case.cluster, config, reference=True, applications=apps)
    _same(fast, plain.run().result())
    stepped = Simulation(wl, case.cluster, config.replace(leap=False), applications=apps)
    _same(fast, stepped.run().result())
    _check_work(fast, plain, Application.from_table("drawn", apps["drawn"]))


def _check_work(result: asim.Result, sim: Simulation, app: Application) -> None:
    """Every finished job did its work: the seconds of each of its runs times the rate of
    that run's placement add up to its duration plus the costs it paid."""
    jobs = result.jobs.set_index("job_id")
    work: dict = {}
    open_runs: dict = {}
    for row in result.events.itertuples():
        j = row.job_id
        if row.event in ("migrate", "preempt", "reclaim", "finish") and j in open_runs:
            began, rate = open_runs.pop(j)
            work[j] = work.get(j, 0.0) + (row.time - began) * rate
        if row.event in ("start", "resume", "migrate"):
            spanned = len(str(row.nodes).split(","))
            named = "application" in jobs and jobs.at[j, "application"] == "drawn"
            rate = app.rate(int(jobs.at[j, "num_gpus"]), spanned) if named else 1.0
            open_runs[j] = (row.time, rate)
    index = {job: k for k, job in enumerate(sim.job_ids.tolist())}
    for j, row in jobs[jobs["status"] == "done"].iterrows():
        k = index[j]
        paid = (row.preemptions + row.reclaims) * sim.cost[k] + row.migrations * sim.migration_cost[
            k
        ]
        assert work[j] == pytest.approx(row.duration + paid, rel=1e-9, abs=1e-6)


def test_a_result_with_rates_saves_and_loads(tmp_path):
    got = run([*BLOCKERS, ("x", 0, 100, 8, "spread_half")])
    got.save(tmp_path / "r")
    back = asim.Result.load(tmp_path / "r")
    assert back.jobs["rate"].tolist() == got.jobs["rate"].tolist()
    assert back.jobs["application"].tolist()[3] == "spread_half"


def test_a_scheduler_sees_the_rates_and_the_remaining_work_at_them():
    view = JobView.from_arrays(
        100.0,
        num_gpus=[8, 8],
        remaining=[100.0, 100.0],
        since=[40.0, 40.0],
        status=[RUNNING, WAITING],
        rate=[0.5, 1.0],
        vc=[0, 0],
    )
    assert view.rate.tolist() == [0.5, 1.0]
    assert view.remaining.tolist() == [70.0, 100.0]  # 60 s at 0.5 took 30 off the first
    plain = JobView.from_arrays(0.0, remaining=[5.0], since=[0.0], vc=[0])
    assert plain.rate.tolist() == [1.0]
