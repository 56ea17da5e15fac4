"""Heterogeneous GPUs (``docs/heterogeneity.md``): GPU-type-aware speed with exact times,
finish-time fairness, the bundled Gavel job types and preset, bad input, and invariants.

The hand cases run on ``TWO``: node ``v0`` (2 V100) and node ``k0`` (2 K80), one rack. The
application ``m`` runs 1 GPU at 4 steps/s on a V100 and 1 on a K80 (rate 0.25), 2 GPUs at 6
and 3 (0.5), and 4 GPUs, which must span both nodes, at 8 on V100s and 4 on K80s (0.5).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import GPU_TYPES, clusters, configs, workloads

import analysim as asim
from analysim.engine import Simulation
from analysim.inputs.applications import GAVEL_TABLE, Application, gavel_applications
from analysim.results.fairness import active_at_arrival, finish_time_fairness

TWO = asim.Cluster.from_frame(
    pd.DataFrame({"node": ["v0", "k0"], "rack": "r0", "gpus": [2, 2], "gpu_type": ["v100", "k80"]}),
    name="two",
)
M_TABLE = pd.DataFrame(
    {
        "gpu_type": ["v100", "k80", "v100", "k80", "v100", "k80"],
        "gpus": [1, 1, 2, 2, 4, 4],
        "nodes": [1, 1, 1, 1, 2, 2],
        "throughput": [4.0, 1.0, 6.0, 3.0, 8.0, 4.0],
    }
)
M = Application.from_table("m", M_TABLE, reference="v100")


def run(rows: list[tuple], cluster: asim.Cluster = TWO, **config) -> asim.Result:
    """Rows of (job_id, submit_time, duration, num_gpus, gpu_type constraint or None)."""
    frame = pd.DataFrame(
        rows, columns=["job_id", "submit_time", "duration", "num_gpus", "gpu_type"]
    )
    frame = frame.assign(vc="a", user="u", application="m")
    return asim.simulate(asim.Workload.from_frame(frame), cluster, applications={"m": M}, **config)


def table(result: asim.Result, *columns: str) -> dict:
    jobs = result.jobs.set_index("job_id")
    return {j: tuple(jobs.loc[j, list(columns)]) for j in jobs.index}


# -- hand-checked runs ----------------------------------------------------------------------
def test_a_job_on_a_k80_takes_the_tables_ratio_longer():
    got = run([("v", 0, 100, 1, "v100"), ("k", 0, 100, 1, "k80")])
    assert table(got, "nodes", "end_time", "rate") == {
        "v": ("v0", 100.0, 1.0),
        "k": ("k0", 400.0, 0.25),  # 4.0 / 1.0 steps per second: four times as long
    }


def test_a_job_on_mixed_types_runs_at_the_slowest_rate():
    # 4 GPUs span v0 and k0: min(8/8 on the V100s, 4/8 on the K80s) = 0.5: ends at 200
    got = run([("x", 0, 100, 4, None)])
    assert table(got, "nodes", "end_time", "rate") == {"x": ("v0,k0", 200.0, 0.5)}


def test_a_resumed_job_takes_the_rate_of_its_new_type():
    # x (V100 or K80) starts on v0 at rate 1; y (V100 only, priority 0 before x's 5) arrives
    # at 40 and evicts x at the next full round, t=60: x did 60 of its 100. It resumes at
    # once on k0 (2 K80s: rate 0.5) with 40 left plus its 10 s checkpoint cost: 50 work in
    # 100 s, ending at 160; y runs on v0 60-110
    frame = pd.DataFrame(
        [("x", 0, 100, 2, "v100|k80", 5), ("y", 40, 50, 2, "v100", 0)],
        columns=["job_id", "submit_time", "duration", "num_gpus", "gpu_type", "priority"],
    ).assign(vc="a", user="u", application="m")
    got = asim.simulate(
        asim.Workload.from_frame(frame),
        TWO,
        applications={"m": M},
        scheduler="priority",
        preemption=True,
        checkpoint_cost={"name": "constant", "seconds": 10},
    )
    assert table(got, "nodes", "end_time", "rate", "preemptions") == {
        "x": ("k0", 160.0, 0.5, 1),
        "y": ("v0", 110.0, 1.0, 0),
    }


def test_easy_backfill_takes_a_waiting_job_at_its_slowest_type():
    # b holds v0 until 100; h (4 GPUs: both nodes) waits, promised t=100. At t=2 the free
    # GPUs are k0's K80s. s (50 work) at its slowest rate, 0.25 on a K80, would end at 202 >
    # 100: it waits (at rate 1 it would have passed, and held a K80 h needs). s2 (20 work)
    # ends by 2 + 20 / 0.25 = 82 <= 100: it passes, on k0
    got = run(
        [
            ("b", 0, 100, 2, "v100"),
            ("h", 1, 10, 4, None),
            ("s", 2, 50, 1, None),
            ("s2", 2, 20, 1, None),
        ],
        backfill="easy",
    )
    spans = table(got, "start_time", "end_time")
    assert spans["s2"] == (2.0, 82.0)
    assert spans["h"] == (100.0, 100.0 + 10 / 0.5)  # on both types: rate 0.5
    assert spans["s"][0] >= 120.0


def test_finish_time_fairness_by_hand():
    # a (2 GPUs) on v0 ends at 100; b, c (1 GPU) on k0 end at 400. N = 3 at t=0 for each.
    # a's share: 2/(3*2) = 1/3 of the time on each type: 1/3 * 1 + 1/3 * 0.5 = 0.5, so
    # alone 200 s: rho = 100/200 = 0.5. b's: 2/3 each, scaled to 1/2 each: 0.5 * 1 + 0.5 *
    # 0.25 = 0.625, alone 160 s: rho = 400/160 = 2.5
    got = run([("a", 0, 100, 2, None), ("b", 0, 100, 1, None), ("c", 0, 100, 1, None)])
    assert table(got, "nodes", "end_time", "ftf_rho") == {
        "a": ("v0", 100.0, 0.5),
        "b": ("k0", 400.0, 2.5),
        "c": ("k0", 400.0, 2.5),
    }
    summary = got.summary()
    assert summary["max_ftf_rho"] == 2.5
    assert summary["ftf_unfair_share"] == 2 / 3
    assert summary["ftf_jain"] == pytest.approx(5.5**2 / (3 * (0.25 + 2 * 6.25)), rel=1e-15)
    assert got.summary(by="vc").loc["a", "max_ftf_rho"] == 2.5


def test_jobs_active_at_arrival():
    submit = np.array([0.0, 10.0, 20.0, 20.0, 5.0])
    end = np.array([15.0, 30.0, np.nan, 25.0, np.nan])
    counted = np.array([True, True, True, True, False])  # the last can never run
    # j0: itself; j1: j0, j1; j2 and j3 at 20: j1, j2, j3 (j0 ended at 15); j4 not counted
    # but sees j0 (and itself is not counted)
    assert active_at_arrival(submit, end, counted).tolist() == [1, 2, 3, 3, 1]


def test_finish_time_fairness_of_any_run_by_hand():
    # the toy preset (16 GPUs of one type, fifo): j4 (8 GPUs, 1200 s) arrives at 180 with
    # j1, j2, j3 active: N = 4, its share 16 / (4 x 8) = 1/2 of the time: alone 2400 s; it
    # waits until 600 and ends at 1800: rho = 1620 / 2400. j5 (1 GPU, 600 s) at 300: N = 5
    # (j3 runs until 420), a whole GPU: alone 600 s, JCT 1260: rho 2.1. j8 (4 GPUs, 600 s)
    # at 900: N = 6 (j1 and j3 have ended), share 16 / 24: alone 900 s, JCT 660
    got = finish_time_fairness(asim.simulate(asim.presets.workload("toy"), "toy"))
    rows = got.set_index("job_id").loc[["j1", "j4", "j5", "j8"]]
    assert rows["n_active"].tolist() == [1, 4, 5, 6]
    assert rows["isolated_jct"].tolist() == [600.0, 2400.0, 600.0, 900.0]
    assert rows["ftf_rho"].tolist() == [1.0, 1620 / 2400, 1260 / 600, 660 / 900]
    # with typed applications it is the jobs table's column
    typed = run([("a", 0, 100, 2, None), ("b", 0, 100, 1, None)])
    assert finish_time_fairness(typed)["ftf_rho"].tolist() == typed.jobs["ftf_rho"].tolist()


def test_rho_is_absent_without_typed_applications():
    plain = asim.simulate(asim.presets.workload("toy"), "toy")
    assert "ftf_rho" not in plain.jobs.columns and "max_ftf_rho" not in plain.summary()
    untyped = asim.simulate(
        asim.Workload.from_frame(
            pd.DataFrame(
                {"job_id": ["x"], "submit_time": [0], "duration": [10], "num_gpus": [1]}
            ).assign(vc="a", user="u", application="bert")
        ),
        "toy",
    )
    assert "rate" in untyped.jobs.columns and "ftf_rho" not in untyped.jobs.columns


def test_a_type_the_cluster_lacks_may_be_in_the_table():
    extra = pd.concat(
        [
            M_TABLE,
            pd.DataFrame({"gpu_type": ["h100"], "gpus": [1], "nodes": [1], "throughput": [9.0]}),
        ]
    )
    app = Application.from_table("m", extra, reference="v100")
    frame = pd.DataFrame(
        {"job_id": ["k"], "submit_time": [0], "duration": [100], "num_gpus": [1]}
    ).assign(vc="a", user="u", application="m", gpu_type="k80")
    got = asim.simulate(asim.Workload.from_frame(frame), TWO, applications={"m": app})
    assert got.jobs["end_time"].tolist() == [400.0]


def test_a_saved_result_keeps_rho(tmp_path):
    got = run([("a", 0, 100, 2, None), ("b", 0, 100, 1, None)])
    got.save(tmp_path / "r")
    back = asim.Result.load(tmp_path / "r")
    assert back.jobs["ftf_rho"].tolist() == got.jobs["ftf_rho"].tolist()
    assert back.summary()["max_ftf_rho"] == got.summary()["max_ftf_rho"]


# -- the bundled Gavel job types and the preset ---------------------------------------------
def test_the_gavel_job_types_are_bundled():
    apps = gavel_applications()
    assert len(apps) == 26
    resnet = apps["ResNet-50 (batch size 64)"]
    assert resnet.gpu_types == ["k80", "p100", "v100"] and resnet.gpu_counts == [1, 2, 4, 8]
    assert resnet.reference == "v100" and resnet.rate(1, 1, "v100") == 1.0
    csv = pd.read_csv(GAVEL_TABLE)
    one = csv[(csv["job_type"] == "ResNet-50 (batch size 64)") & (csv["gpus"] == 1)]
    by_type = one[one["consolidated"]].set_index("gpu_type")["throughput"]
    assert resnet.rate(1, 1, "k80") == by_type["k80"] / by_type["v100"]
    assert apps["A3C"].gpu_counts == [1]
    assert not apps["ResNet-50 (batch size 128)"].lists(2, "k80")  # Gavel lists 0.0 there


def test_the_gavel_preset():
    cluster = asim.presets.cluster("gavel")
    assert cluster.nodes.groupby("gpu_type")["gpus"].sum().to_dict() == {
        "k80": 36,
        "p100": 36,
        "v100": 36,
    }
    assert (cluster.nodes["gpus"] == 1).all()
    assert (asim.presets.cluster("gavel", gpus_per_node=4).nodes["gpus"] == 4).all()
    jobs = asim.presets.workload("gavel", jobs=400, multi_gpu=True, seed=3).jobs
    assert set(jobs["num_gpus"]) == {1, 2, 4, 8}
    multi = jobs[jobs["num_gpus"] > 1]
    assert not multi["application"].str.startswith(("A3C", "CycleGAN", "Recommendation")).any()
    pinned = jobs["gpu_type"].notna()
    assert (jobs.loc[pinned, "application"] == "ResNet-50 (batch size 128)").all()
    assert (jobs.loc[pinned, "gpu_type"] == "v100|p100").all()
    with pytest.raises(ValueError, match="gpus_per_node must divide 36"):
        asim.presets.cluster("gavel", gpus_per_node=5)


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"throughput": [4.0, 0.0, 6.0, 3.0, 8.0, 4.0]}, "'throughput'.*row 1: 0.0"),
        ({"throughput": [4.0, 1.0, -6.0, 3.0, 8.0, 4.0]}, "'throughput'.*row 2: -6.0"),
        ({"throughput": [4.0, 1.0, 6.0, np.nan, 8.0, 4.0]}, "'throughput'.*row 3: nan"),
        ({"gpu_type": ["v100", "k80", "v100", "", "v100", "k80"]}, "'gpu_type'.*row 3: ''"),
        ({"gpu_type": ["v100", "k80", "v100", 7, "v100", "k80"]}, "'gpu_type'.*row 3: 7"),
        ({"gpu_type": ["v100", "v100", "v100", "k80", "v100", "k80"]}, "duplicate.*row 0.*row 1"),
    ],
)
def test_a_bad_typed_table_is_named(change, message):
    with pytest.raises(ValueError, match=f"application 'm'.*{message}"):
        Application.from_table("m", M_TABLE.assign(**change), reference="v100")


def test_a_typed_table_needs_a_reference_that_lists_every_gpu_count():
    with pytest.raises(ValueError, match=r"several GPU types \['k80', 'v100'\].*reference"):
        Application.from_table("m", M_TABLE)
    with pytest.raises(ValueError, match=r"one of them.*got 'h100'"):
        Application.from_table("m", M_TABLE, reference="h100")
    k80_only = pd.DataFrame({"gpu_type": ["k80"], "gpus": [8], "nodes": [2], "throughput": [1.0]})
    with pytest.raises(ValueError, match=r"'gpus' must be a GPU count the reference.*row 6: 8"):
        Application.from_table("m", pd.concat([M_TABLE, k80_only]), reference="v100")
    with pytest.raises(ValueError, match="needs a table with a 'gpu_type' column"):
        Application.from_table("m", M_TABLE.drop(columns="gpu_type").head(1), reference="v100")


def test_a_missing_application_and_type_pair_is_named_at_set_up():
    v100_only = Application.from_table("m", M_TABLE[M_TABLE["gpu_type"] == "v100"])
    frame = pd.DataFrame(
        {"job_id": ["ok", "bad"], "submit_time": 0, "duration": 10, "num_gpus": 1}
    ).assign(vc="a", user="u", application="m", gpu_type=["v100", None])
    with pytest.raises(
        ValueError,
        match=r"application 'm' lists no throughput on GPU type 'k80' for 1 GPU.*"
        r"'gpu_type'.*: v100\).*row 1 \(job_id='bad'\)",
    ):
        asim.simulate(asim.Workload.from_frame(frame), TWO, applications={"m": v100_only})
    # on a cluster without GPU types every node is of type 'gpu'
    with pytest.raises(ValueError, match="lists no throughput on GPU type 'gpu'"):
        asim.simulate(asim.Workload.from_frame(frame.iloc[[1]]), "toy", applications={"m": M})


def test_the_types_a_job_may_use_follow_its_vc_and_borrowing():
    # VC a owns the V100 node, VC b the K80 node; m_v100 lists V100s only. A job of VC a
    # can only land on V100s, unless it may borrow b's K80s: then the pair is missing
    owned = asim.Cluster.from_frame(TWO.nodes.assign(vc=["a", "b"]), name="owned")
    v100_only = Application.from_table("m", M_TABLE[M_TABLE["gpu_type"] == "v100"])
    frame = pd.DataFrame(
        {"job_id": ["x"], "submit_time": [0], "duration": [10], "num_gpus": [1]}
    ).assign(vc="a", user="u", application="m")
    wl = asim.Workload.from_frame(frame)
    got = asim.simulate(wl, owned, applications={"m": v100_only})
    assert got.jobs["end_time"].tolist() == [10.0]
    with pytest.raises(ValueError, match="lists no throughput on GPU type 'k80'"):
        asim.simulate(wl, owned, applications={"m": v100_only}, borrowing=True)


# -- invariants -------------------------------------------------------------------------------
@st.composite
def typed_cases(draw, flat: bool = False):
    """A cluster of V100 and A100 nodes, jobs that may name application ``drawn``, typed
    with throughputs per (type, GPU count, nodes) (``flat``: rate 1 everywhere)."""
    case = draw(clusters(typed=True))
    wl = draw(workloads(case.vcs, typed=True, max_jobs=10, max_duration=400))
    config = draw(configs())
    jobs = wl.jobs[wl.jobs["num_gpus"] > 0]
    assume(len(jobs) > 0)
    rows = []
    for g in sorted(set(jobs["num_gpus"])):
        for t in GPU_TYPES:
            nodes = {1, g} if flat else draw(st.sets(st.integers(1, g), min_size=1, max_size=3))
            for n in sorted(nodes):
                speed = 3.7 * g if flat else draw(st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0]))
                rows.append((t, g, n, speed))
    drawn = pd.DataFrame(rows, columns=["gpu_type", "gpus", "nodes", "throughput"])
    some = (
        [True] * len(jobs)
        if flat
        else draw(st.lists(st.booleans(), min_size=len(jobs), max_size=len(jobs)))
    )
    assume(any(some))
    jobs = jobs.assign(application=["drawn" if s else None for s in some])
    app = Application.from_table("drawn", drawn, reference="V100")
    return case, asim.Workload.from_frame(jobs), config, app


def _expected_rate(app: Application, gpus: int, nodes: str, node_type: dict) -> float:
    names = str(nodes).split(",")
    return min(app.rate(gpus, len(names), node_type[n]) for n in names)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_cases())
def test_progress_per_second_is_the_tables_rate_for_the_placement(drawn):
    case, wl, config, app = drawn
    sim = Simulation(wl, case.cluster, config, applications={"drawn": app})
    result = sim.run().result()
    assert result.jobs.equals(
        Simulation(wl, case.cluster, config, reference=True, applications={"drawn": app})
        .run()
        .result()
        .jobs
    )
    node_type = dict(zip(case.cluster.nodes["node"], case.cluster.nodes["gpu_type"], strict=True))
    jobs = result.jobs.set_index("job_id")
    named = jobs["application"] == "drawn"
    work: dict = {}
    open_runs: dict = {}
    last_rate: dict = {}
    for row in result.events.itertuples():
        j = row.job_id
        if row.event in ("migrate", "preempt", "reclaim", "finish") and j in open_runs:
            began, rate = open_runs.pop(j)
            work[j] = work.get(j, 0.0) + (row.time - began) * rate
        if row.event in ("start", "resume", "migrate"):
            gpus = int(jobs.at[j, "num_gpus"])
            rate = _expected_rate(app, gpus, row.nodes, node_type) if named[j] else 1.0
            open_runs[j] = (row.time, rate)
            last_rate[j] = rate
    index = {job: k for k, job in enumerate(sim.job_ids.tolist())}
    for j, row in jobs[jobs["status"] == "done"].iterrows():
        k = index[j]
        paid = (row.preemptions + row.reclaims) * sim.cost[k] + row.migrations * sim.migration_cost[
            k
        ]
        assert work[j] == pytest.approx(row.duration + paid, rel=1e-9, abs=1e-6)
        assert row.rate == last_rate[j]
    rho = jobs["ftf_rho"]
    done = jobs["status"] == "done"
    assert (rho[done] >= 0).all() and rho[~done].isna().all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(typed_cases(flat=True))
def test_rate_one_on_every_type_gives_the_run_without_the_model(drawn):
    case, wl, config, app = drawn
    plain = Simulation(
        asim.Workload.from_frame(wl.jobs.drop(columns="application")), case.cluster, config
    )
    rated = Simulation(wl, case.cluster, config, applications={"drawn": app}).run().result()
    base = plain.run().result()
    assert (rated.jobs["rate"].dropna() == 1.0).all()
    pd.testing.assert_frame_equal(
        rated.jobs.drop(columns=["application", "rate", "ftf_rho"]), base.jobs
    )
    pd.testing.assert_frame_equal(rated.events, base.events)
    pd.testing.assert_frame_equal(rated.timeline, base.timeline)


@settings(max_examples=40, deadline=None)
@given(
    gpus=st.sampled_from([1, 2, 4]),
    extra=st.integers(0, 4),
    speed=st.sampled_from([0.3, 1.0, 2.5, 7.0]),
    duration=st.integers(1, 10_000),
)
def test_rho_is_one_for_a_job_alone_on_a_cluster_of_its_share(gpus, extra, speed, duration):
    # one node of K80s with at least the job's GPUs: N = 1, its share is the whole cluster
    cluster = asim.Cluster.from_frame(
        pd.DataFrame({"node": ["k0"], "rack": "r", "gpus": [gpus + extra], "gpu_type": ["k80"]})
    )
    rows = [("v100", gpus, 1, 10.0), ("k80", gpus, 1, speed)]
    app = Application.from_table(
        "m", pd.DataFrame(rows, columns=["gpu_type", "gpus", "nodes", "throughput"]), "v100"
    )
    frame = pd.DataFrame(
        {"job_id": ["x"], "submit_time": [0], "duration": [duration], "num_gpus": [gpus]}
    ).assign(vc="a", user="u", application="m")
    got = asim.simulate(asim.Workload.from_frame(frame), cluster, applications={"m": app})
    assert got.jobs["end_time"].tolist() == [duration / (speed / 10.0)]
    assert got.jobs["ftf_rho"].tolist() == [1.0]


def test_the_gavel_tool_keeps_the_single_job_throughputs():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "gavel_applications.py"
    spec = importlib.util.spec_from_file_location("gavel_applications", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    def worker(alone: float) -> dict:
        # "null": the worker type's own entry; per job type, the co-located jobs and alone
        return {
            "null": 9.9,
            "('A3C', 1)": {"null": alone, "('A3C', 1)": [0.1, 0.1]},
        }

    throughputs = {
        f"{t}{suffix}": worker(speed)
        for t, speed in (("v100", 4.0), ("p100", 2.0), ("k80", 1.0))
        for suffix in ("", "_unconsolidated")
    }
    got = tool.rows(throughputs)
    assert got.columns.tolist() == ["job_type", "gpu_type", "gpus", "consolidated", "throughput"]
    assert got[["gpu_type", "consolidated", "throughput"]].values.tolist() == [
        ["k80", True, 1.0],
        ["k80", False, 1.0],
        ["p100", True, 2.0],
        ["p100", False, 2.0],
        ["v100", True, 4.0],
        ["v100", False, 4.0],
    ]
