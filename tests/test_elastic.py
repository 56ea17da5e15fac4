"""Elastic jobs in the engine (docs/elastic.md): hand-checked runs, bad input, invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from elastic_checks import run_checking_elastic_invariants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim import SimConfig, Simulation, Workload
from analysim.policies import SCHEDULERS
from analysim.policies.elastic import ElasticGain, ElasticGoodput
from analysim.results.goodput import goodput_spells

TOY_GPUS = 16  # the toy cluster: 4 nodes of 4 GPUs


def frame(rows: list[tuple], columns=("job_id", "submit_time", "duration", "num_gpus")):
    return pd.DataFrame(rows, columns=list(columns)).assign(vc="a", user="u")


def two_jobs(**extra) -> pd.DataFrame:
    """Elastic ``a`` (4 GPUs asked, 2-16, 1200 s of work) beside rigid ``b`` (8 GPUs, 600 s)."""
    return frame(
        [("a", 0, 1200, 4, 2, 16), ("b", 0, 600, 8, 8, 8)],
        ("job_id", "submit_time", "duration", "num_gpus", "min_gpus", "max_gpus"),
    )


def test_hand_checked_grow_twice_with_rescale_cost():
    """At 60 s the pool is 4 free + 2 above a's minimum: a grows from 4 to 8 GPUs (rate 2),
    having done 60 s of work; 1140 + 30 (rescale) left take 585 s at rate 2... but at 600 s b
    ends: a has 1170 - 540 * 2 = 90 left, + 30, grows to 16 (rate 4): ends at 630."""
    for scheduler in ("elastic_goodput", "elastic_gain"):
        result = asim.simulate(
            Workload.from_frame(two_jobs()), "toy", scheduler=scheduler, rescale_cost=30
        )
        jobs = result.jobs.set_index("job_id")
        assert jobs.loc["a", "end_time"] == 630.0
        assert jobs.loc["b", "end_time"] == 600.0
        assert jobs.loc["a", "resizes"] == 2
        assert jobs.loc["a", "gpu_seconds"] == 60 * 4 + 540 * 8 + 30 * 16
        assert jobs.loc["a", "goodput"] == pytest.approx(1200 / 630)
        resizes = result.events[result.events["event"] == "resize"]
        assert resizes[["time", "num_gpus", "rate"]].values.tolist() == [
            [60.0, 8, 2.0],
            [600.0, 16, 4.0],
        ]
        summary = result.summary()
        assert summary["gpu_seconds_per_progress"] == pytest.approx((5040 + 4800) / 1800)
        assert summary["gpu_hours"] == pytest.approx((5040 + 4800) / 3600)


def test_shrinks_for_a_waiting_job_then_grows_back():
    """a (asked 16, 4-16) holds the cluster; b (8 GPUs, 300 s) arrives at 30: at 60 a shrinks
    to 8 (rate 0.5) so b starts (60-360); at 360 a grows back to 16. a: 60 s at rate 1,
    300 s at 0.5 = 150, so 1000 - 210 + 2 * 20 = 830 left at 360: ends at 1190."""
    wl = frame(
        [("a", 0, 1000, 16, 4, 16), ("b", 30, 300, 8, 8, 8)],
        ("job_id", "submit_time", "duration", "num_gpus", "min_gpus", "max_gpus"),
    )
    result = asim.simulate(
        Workload.from_frame(wl), "toy", scheduler="elastic_goodput", rescale_cost=20
    )
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["b", ["start_time", "end_time"]].tolist() == [60.0, 360.0]
    assert jobs.loc["a", "end_time"] == 1190.0
    events = result.events
    resizes = events[events["event"] == "resize"]
    assert resizes[["time", "num_gpus"]].values.tolist() == [[60.0, 8], [360.0, 16]]


def test_a_rigid_scheduler_never_resizes_and_runs_as_without_the_columns():
    with_columns = asim.simulate(Workload.from_frame(two_jobs()), "toy", scheduler="fifo")
    without = asim.simulate(
        Workload.from_frame(two_jobs().drop(columns=["min_gpus", "max_gpus"])), "toy"
    )
    columns = ["job_id", "start_time", "end_time", "jct", "num_gpus"]
    pd.testing.assert_frame_equal(with_columns.jobs[columns], without.jobs[columns])
    assert with_columns.jobs["resizes"].sum() == 0


def test_limits_equal_to_num_gpus_are_today_run_exactly():
    rigid = two_jobs().assign(min_gpus=[4, 8], max_gpus=[4, 8])
    ran = asim.simulate(Workload.from_frame(rigid), "toy", scheduler="elastic_goodput")
    plain = asim.simulate(Workload.from_frame(rigid.drop(columns=["min_gpus", "max_gpus"])), "toy")
    pd.testing.assert_frame_equal(ran.jobs, plain.jobs)
    pd.testing.assert_frame_equal(ran.events, plain.events)


def test_an_application_gives_its_counts_and_its_throughput():
    """``mine`` lists 2, 4 and 8 GPUs (throughput 0.6, 1.0, 1.5 packed): at 60 s a (asked 4,
    2-16) has a budget of 6 GPUs over its minimum 2 and takes 2 -> 4 -> 8 (two nodes, rate
    1.5 / 1.0); 1140 + 30 work left take 780 s: it ends at 840 and, listing no count above
    8, does not grow when b ends."""
    mine = pd.DataFrame(
        {"gpus": [2, 4, 8, 8], "nodes": [1, 1, 2, 3], "throughput": [0.6, 1.0, 1.5, 0.75]}
    )
    wl = Workload.from_frame(two_jobs().assign(application=["mine", None]))
    for scheduler in ("elastic_goodput", "elastic_gain"):
        result = asim.simulate(
            wl, "toy", scheduler=scheduler, rescale_cost=30, applications={"mine": mine}
        )
        jobs = result.jobs.set_index("job_id")
        assert jobs.loc["a", "end_time"] == 840.0
        resizes = result.events[result.events["event"] == "resize"]
        assert resizes[["time", "num_gpus", "rate", "nodes"]].values.tolist() == [
            [60.0, 8, 1.5, "n0,n1"]
        ]


@pytest.mark.parametrize(
    ("change", "column", "words"),
    [
        ({"min_gpus": [9, 8], "max_gpus": [4, 8]}, "min_gpus", "at most the row's max_gpus"),
        ({"min_gpus": [6, 8]}, "min_gpus", "at most the row's num_gpus"),
        ({"max_gpus": [2, 8]}, "max_gpus", "at least the row's num_gpus"),
        ({"min_gpus": [1.5, 8]}, "min_gpus", "a whole number"),
        ({"max_gpus": ["many", 8]}, "max_gpus", "a whole number"),
        ({"min_gpus": [0, 8]}, "min_gpus", "a whole number"),
        # an empty min_gpus is num_gpus: the error is max_gpus's, not "min above max"
        ({"min_gpus": [None, 8], "max_gpus": [2, 8]}, "max_gpus", "at least the row's num_gpus"),
        ({"max_gpus": [np.inf, 8]}, "max_gpus", "a whole number"),
        ({"max_gpus": ["inf", 8]}, "max_gpus", "a whole number"),
        ({"min_gpus": [np.inf, 8]}, "min_gpus", "a whole number"),
        ({"max_gpus": [1e30, 8]}, "max_gpus", "a whole number of GPUs from 1 to 1,000,000"),
        ({"max_gpus": [2_000_000, 8]}, "max_gpus", "a whole number of GPUs from 1 to 1,000,000"),
    ],
)
def test_bad_limits_name_column_row_and_value(change, column, words):
    bad = two_jobs().assign(**change)
    with pytest.raises(ValueError) as error:
        Workload.from_frame(bad)
    text = str(error.value)
    assert text.startswith(f"Workload: column {column!r} must be {words}")
    assert "1 bad row(s): row 0 (job_id='a'" in text
    assert f": {change[column][0]!r}" in text


def test_a_limit_against_num_gpus_names_num_gpus_beside_the_value():
    bad = two_jobs().assign(min_gpus=[None, 8], max_gpus=[2, 8])
    with pytest.raises(ValueError) as error:
        Workload.from_frame(bad)
    assert str(error.value) == (
        "Workload: column 'max_gpus' must be at least the row's num_gpus (a job starts on "
        "num_gpus); 1 bad row(s): row 0 (job_id='a', num_gpus=4): 2"
    )


def test_missing_limits_are_the_jobs_num_gpus():
    wl = two_jobs().assign(min_gpus=[2, None], max_gpus=[None, None])
    jobs = Workload.from_frame(wl).jobs.set_index("job_id")
    assert jobs.loc["a", ["min_gpus", "max_gpus"]].tolist() == [2, 4]
    assert jobs.loc["b", ["min_gpus", "max_gpus"]].tolist() == [8, 8]


def test_bad_rescale_cost_and_unsupported_modes_are_refused():
    with pytest.raises(ValueError, match="rescale_cost"):
        SimConfig(rescale_cost=-1)
    wl = Workload.from_frame(two_jobs())
    with pytest.raises(ValueError, match="EASY backfill"):
        Simulation(
            wl, asim.presets.cluster("toy"), SimConfig(scheduler="elastic_goodput", backfill="easy")
        )


def test_names_do_not_clash_with_the_replay_policies():
    from analysim.compat import SCHEDULERS as COMPAT

    assert {"elastic_goodput", "elastic_gain"} <= set(SCHEDULERS.names)
    assert not {"elastic_goodput", "elastic_gain"} & set(COMPAT)
    assert not {"pollux", "optimus", "tiresias"} & set(SCHEDULERS.names)


# -- invariants ---------------------------------------------------------------------------------
@st.composite
def elastic_cases(draw):
    n = draw(st.integers(1, 8))
    rows = []
    for i in range(n):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        low = draw(st.integers(1, gpus))
        high = draw(st.integers(gpus + (i == 0), TOY_GPUS))  # j0 is elastic
        rows.append(
            (
                f"j{i}",
                draw(st.integers(0, 600)),
                draw(st.integers(1, 900)),
                gpus,
                low,
                high,
            )
        )
    wl = frame(rows, ("job_id", "submit_time", "duration", "num_gpus", "min_gpus", "max_gpus"))
    config = SimConfig(
        scheduler=draw(
            st.sampled_from(
                [
                    "elastic_goodput",
                    "elastic_gain",
                    "fifo",
                    {"name": "elastic_goodput", "restart_penalty": 30},
                ]
            )
        ),
        preemption=draw(st.booleans()),
        checkpoint_cost=0,
        rescale_cost=draw(st.sampled_from([0, 7, 30])),
        placement=draw(st.sampled_from(["consolidate", "spread"])),
    )
    return Workload.from_frame(wl), config


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elastic_cases())
def test_elastic_invariants(case):
    wl, config = case
    run_checking_elastic_invariants(wl, asim.presets.cluster("toy"), config, TOY_GPUS)


def test_with_elastic_jobs_draws_a_nested_seeded_share():
    wl = asim.presets.workload("toy")
    half = asim.inputs.elastic.with_elastic_jobs(wl, 0.5, seed=3).jobs
    full = asim.inputs.elastic.with_elastic_jobs(wl, 1.0, seed=3).jobs
    gpu_jobs = (wl.jobs["num_gpus"] > 0).sum()
    elastic = half["min_gpus"] < half["max_gpus"]
    assert elastic.sum() == round(0.5 * gpu_jobs)
    chosen = half["max_gpus"] != half["num_gpus"]
    assert (half.loc[chosen, "max_gpus"] == 2 * half.loc[chosen, "num_gpus"]).all()
    assert (full.loc[chosen, "max_gpus"] == half.loc[chosen, "max_gpus"]).all()  # nested
    again = asim.inputs.elastic.with_elastic_jobs(wl, 0.5, seed=3).jobs
    pd.testing.assert_frame_equal(half, again)
    with pytest.raises(ValueError, match="share must be a number from 0 to 1"):
        asim.inputs.elastic.with_elastic_jobs(wl, 1.5)


def test_goodput_spells_needs_an_elastic_run():
    plain = asim.simulate(
        Workload.from_frame(two_jobs().drop(columns=["min_gpus", "max_gpus"])), "toy"
    )
    with pytest.raises(ValueError, match="no goodput records"):
        goodput_spells(plain)


def test_the_study_rows_of_a_rigid_and_an_elastic_run():
    """The hand-checked case through the notebook's study: rigid FIFO, then a, b elastic."""
    from analysim.experiments.elastic_study import run_row

    rigid = run_row(asim.simulate(Workload.from_frame(two_jobs()), "toy"))
    elastic = run_row(
        asim.simulate(
            Workload.from_frame(two_jobs()), "toy", scheduler="elastic_goodput", rescale_cost=30
        )
    )
    assert rigid["avg_jct"] == 900 and elastic["avg_jct"] == 615
    assert rigid["gpu_seconds_per_progress"] == pytest.approx(9600 / 1800)
    assert elastic["gpu_seconds_per_progress"] == pytest.approx(9840 / 1800)
    assert elastic["resizes"] == 2 and rigid["resizes"] == 0
    speeds = np.array([1200 / 630, 600 / 600])
    assert elastic["slowdown_fairness"] == pytest.approx(
        speeds.sum() ** 2 / (2 * (speeds**2).sum())
    )


def test_the_command_line_reads_the_limits(tmp_path, capsys):
    from analysim.faces.cli import main

    path = tmp_path / "jobs.csv"
    two_jobs().to_csv(path, index=False)
    argv = ["run", "--jobs", str(path), "--cluster", "toy", "--scheduler", "elastic_goodput"]
    assert main([*argv, "--rescale-cost", "30"]) == 0
    out = capsys.readouterr().out
    assert "615 s" in out and "mean_goodput" in out


def test_what_is_read_from_the_events_follows_the_resizes(tmp_path):
    """At 100 s, a (resized at 60 onto n0, n1) holds 8 GPUs: the snapshot, the node usage
    and a saved and loaded result say so."""
    result = asim.simulate(Workload.from_frame(two_jobs()), "toy", scheduler="elastic_goodput")
    snapshot = result.snapshot(100)
    held = snapshot[snapshot["job_id"] == "a"]
    assert held["node"].tolist() == ["n0"] * 4 + ["n1"] * 4
    assert (snapshot["job_id"].notna()).sum() == 16
    back = asim.Result.load(result.save(tmp_path / "r"))
    pd.testing.assert_frame_equal(back.events, result.events)
    assert back.summary()["mean_goodput"] == result.summary()["mean_goodput"]


def test_the_replays_refuse_elastic_jobs():
    venus = asim.inputs.elastic.with_elastic_jobs(asim.presets.workload("venus", days=0.2), 0.5)
    with pytest.raises(ValueError, match="compat='helios': the Helios simulator has no elastic"):
        asim.simulate(venus, "venus", compat="helios", scheduler="fifo")
    from analysim.experiments.elastic_study import _pollux_path

    trace = asim.traces.read_pollux(_pollux_path(1))  # the bundled workload 1
    mixed = asim.inputs.elastic.with_elastic_jobs(trace.workload, 0.5)
    with pytest.raises(ValueError, match="compat='pollux': the artifact's policies size every"):
        asim.simulate(mixed, trace.cluster, compat="pollux", scheduler="tiresias")


def test_a_sweep_varies_the_elastic_share_with_the_runs_seed():
    """``workload.elastic_share`` is ``with_elastic_jobs`` of the run's workload, drawn with
    the run's seed; 0 leaves the workload untouched; it works on a given workload too."""
    from analysim.inputs.elastic import with_elastic_jobs

    config = {"scheduler": "elastic_goodput", "backfill": True, "rescale_cost": 30}
    grid = {key: [value] for key, value in config.items()} | {"workload.elastic_share": [0, 0.5]}
    frame = asim.sweep(grid, workload="toy", seeds=[0, 1])
    assert (frame["status"] == "ok").all()
    for seed in (0, 1):
        toy = asim.presets.workload("toy", seed=seed)
        for share in (0, 0.5):
            workload = with_elastic_jobs(toy, share, seed=seed) if share else toy
            expected = asim.simulate(workload, "toy", seed=seed, **config).summary()
            row = frame[(frame["seed"] == seed) & (frame["workload.elastic_share"] == share)]
            assert row["avg_jct"].item() == expected["avg_jct"]
    half = frame[frame["workload.elastic_share"] == 0.5]
    assert (half["mean_goodput"] > 1).all()  # elastic jobs grew
    assert frame.loc[frame["workload.elastic_share"] == 0, "mean_goodput"].isna().all()
    given = asim.sweep(
        {"scheduler": ["elastic_goodput"], "workload.elastic_share": [0.5]},
        workload=Workload.from_frame(two_jobs().drop(columns=["min_gpus", "max_gpus"])),
        cluster="toy",
        seeds=[0],
    )
    assert given["status"].tolist() == ["ok"] and given["mean_goodput"].item() > 1


def test_a_restart_penalty_keeps_a_young_job_at_its_count():
    """With Pollux's restart weight (penalty 30 s): at 60 s job a (age 60, no resizes) has
    weight 60 / 90, so 5 GPUs give it a speed-up (over 2 GPUs) of 2.5 x 2/3 = 1.67, below the
    2 on the 4 it holds, and it stays; at 600 (b ends) its weight is 600 / 630,
    5 GPUs give 2.38 > 2, and it walks up to 16: 600 s at rate 1, then 600 + 30 at rate 4."""
    scheduler = {"name": "elastic_goodput", "restart_penalty": 30}
    result = asim.simulate(
        Workload.from_frame(two_jobs()), "toy", scheduler=scheduler, rescale_cost=30
    )
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["a", "end_time"] == 757.5 and jobs.loc["a", "resizes"] == 1
    resizes = result.events[result.events["event"] == "resize"]
    assert resizes[["time", "num_gpus"]].values.tolist() == [[600.0, 16]]
    from analysim.policies.goodput import restart_weight

    assert restart_weight(60, 0, 30) == pytest.approx(2 / 3)
    assert restart_weight(50, 2, 30) == 0.0 and restart_weight(50, 2, 0) == 1.0
    with pytest.raises(ValueError, match="restart_penalty"):
        asim.simulate(
            Workload.from_frame(two_jobs()),
            "toy",
            scheduler={"name": "elastic_goodput", "restart_penalty": -1},
        )


def one_step_at_a_time(scheduler, jobs, budget):
    """The greedy of ``ElasticScheduler.sizes`` as its rule says: one step per pop."""
    import heapq

    values = [scheduler.values(job) for job in jobs]
    at = [0] * len(jobs)
    heap = [(-v[0], i) for i, v in enumerate(values) if v and v[0] > 0]
    heapq.heapify(heap)
    while heap and budget > 0:
        _, i = heapq.heappop(heap)
        step = jobs[i].sizes[at[i] + 1] - jobs[i].sizes[at[i]]
        if step > budget:
            continue
        budget -= step
        at[i] += 1
        if at[i] < len(values[i]) and values[i][at[i]] > 0:
            heapq.heappush(heap, (-values[i][at[i]], i))
    return [job.sizes[k] for job, k in zip(jobs, at, strict=True)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(1, 4), min_size=1, max_size=6),  # gaps between counts
            st.lists(st.floats(0.1, 4.0), min_size=7, max_size=7),  # speeds
            st.integers(-1, 6),
            st.sampled_from([1.0, 0.0, 0.5, 0.9]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 40),
    st.booleans(),
)
def test_the_greedy_takes_a_jobs_steps_in_bulk_as_one_at_a_time(shapes, budget, gain):
    from analysim.policies.elastic import ElasticJob

    jobs = []
    for gaps, speeds, current, weight in shapes:
        sizes = tuple(int(v) for v in np.cumsum([1, *gaps]))
        speed = tuple(sorted(speeds[: len(sizes)]) if gain else speeds[: len(sizes)])
        jobs.append(ElasticJob(sizes, speed, 100.0, min(current, len(sizes) - 1), weight))
    scheduler = ElasticGain() if gain else ElasticGoodput(restart_penalty=30)
    assert scheduler.sizes(jobs, budget) == one_step_at_a_time(scheduler, jobs, budget)


def test_the_state_shows_the_gpus_a_resized_job_holds_now():
    """The hand-checked run (a: asked 4, grows to 8 at 60 s and to 16 at 600 s): ``sim.state``
    gives a running job's count now, the same as its GPUs in ``state.gpus``; a job not
    running, its asked ``num_gpus``."""
    sim = Simulation(
        Workload.from_frame(two_jobs()),
        asim.presets.cluster("toy"),
        SimConfig(scheduler="elastic_goodput", rescale_cost=30),
    )
    for until, held_a in ((30, 4), (100, 8), (610, 16)):
        sim.run(until=until)
        jobs = sim.state.jobs.set_index("job_id")
        assert jobs.loc["a", ["status", "num_gpus"]].tolist() == ["running", held_a]
        on_gpus = sim.state.gpus["job_id"].value_counts()
        assert on_gpus["a"] == held_a
    assert jobs.loc["b", ["status", "num_gpus"]].tolist() == ["done", 8]
    sim.run()
    assert sim.state.jobs.set_index("job_id").loc["a", ["status", "num_gpus"]].tolist() == [
        "done",
        4,
    ]


def test_a_failure_kills_a_grown_job_and_a_repair_lets_it_grow_back():
    """a alone on toy (asked 4, 4-16, 1200 s of work): on n0 from 0, grows to 16 at 60 (rate
    4); n0 fails at 100: the 40 s run at 16 GPUs is lost (160 work, 640 GPU-s); a resumes on
    n1 at 100 (4 GPUs), grows to 12 at 120 (rate 3, 1120 left); n0 is back at 200, and the
    pass at 240 grows a to 16 (760 left at rate 4): it ends at 430. GPU-seconds held: 240 +
    640 + 80 + 1440 + 3040 = 5440, of which 4800 kept."""
    jobs = frame(
        [("a", 0, 1200, 4, 4, 16)],
        ("job_id", "submit_time", "duration", "num_gpus", "min_gpus", "max_gpus"),
    )
    result = asim.simulate(
        Workload.from_frame(jobs), "toy", scheduler="elastic_goodput", failures=[("n0", 100, 200)]
    )
    resizes = result.events[result.events["event"] == "resize"]
    assert resizes[["time", "num_gpus"]].values.tolist() == [[60.0, 16], [120.0, 12], [240.0, 16]]
    a = result.jobs.set_index("job_id").loc["a"]
    assert a["end_time"] == 430.0
    assert a["gpu_seconds"] == 240 + 640 + 80 + 1440 + 3040
    assert a["lost_seconds"] == 40.0 and a["lost_gpu_seconds"] == 640.0
    assert a["useful_gpu_seconds"] == 4800.0
    summary = result.summary()
    assert summary["lost_gpu_seconds"] == 640.0
    assert summary["goodput_ratio"] == pytest.approx(4800 / 5440)


def test_counts_beyond_the_domain_are_not_handed_to_the_scheduler(monkeypatch):
    """max_gpus up to 1,000,000 is read, but a job is never offered more GPUs than its
    domain has (toy: 16): the scheduler sees the counts 2-16, and the run is the one with
    max_gpus 16 (the counts above could never be given)."""
    from spies import spy_calls

    for scheduler, cls in (("elastic_goodput", ElasticGoodput), ("elastic_gain", ElasticGain)):
        asked = spy_calls(monkeypatch, cls, "sizes")
        huge = asim.simulate(
            Workload.from_frame(two_jobs().assign(max_gpus=[1_000_000, 8])),
            "toy",
            scheduler=scheduler,
        )
        assert asked and all(job.sizes == tuple(range(2, 17)) for jobs in asked for job in jobs)
        plain = asim.simulate(Workload.from_frame(two_jobs()), "toy", scheduler=scheduler)
        pd.testing.assert_frame_equal(huge.events, plain.events)
        assert huge.jobs["max_gpus"].tolist() == [1_000_000, 8]
        columns = [c for c in plain.jobs.columns if c != "max_gpus"]
        pd.testing.assert_frame_equal(huge.jobs[columns], plain.jobs[columns])
