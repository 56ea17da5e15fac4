"""Result: save/load, summary metrics checked by hand, the timeline's long format."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysim import Cluster, Result, ResultFormatError, Workload, presets, simulate
from analysim.results.metrics import SUMMARY_FIELDS

# One 4-GPU node, FIFO, strict head-of-line blocking:
#   j1 (a, 2 GPUs, 100 s) submitted at 0 runs 0-100;
#   j2 (b, 4 GPUs,  50 s) submitted at 10 waits for the whole node: runs 100-150;
#   j3 (a, 2 GPUs,  30 s) submitted at 20 waits behind j2 (no backfill): runs 150-180.
THREE = pd.DataFrame(
    {
        "job_id": ["j1", "j2", "j3"],
        "vc": ["a", "b", "a"],
        "user": ["alice", "bob", "alice"],
        "submit_time": [0.0, 10.0, 20.0],
        "duration": [100.0, 50.0, 30.0],
        "num_gpus": [2, 4, 2],
    }
)


@pytest.fixture(scope="module")
def three():
    return simulate(
        Workload.from_frame(THREE), Cluster.uniform(1, 1, 4), scheduler="fifo", sample_every=50
    )


@pytest.fixture(scope="module")
def busy():
    """A run with preemptions, VCs with quotas and several nodes (the toy preset)."""
    return simulate(
        presets.workload("toy"),
        presets.cluster("toy", partition="quota"),
        scheduler="srtf",
        preemption=True,
        checkpoint_cost=20,
        sample_every=60,
        quantum=60,
    )


def test_jobs_table_by_hand(three):
    jobs = three.jobs.set_index("job_id")
    assert jobs["start_time"].tolist() == [0.0, 100.0, 150.0]
    assert jobs["end_time"].tolist() == [100.0, 150.0, 180.0]
    assert jobs["jct"].tolist() == [100.0, 140.0, 160.0]
    assert jobs["queue_delay"].tolist() == [0.0, 90.0, 130.0]
    assert jobs["run_time"].tolist() == [100.0, 50.0, 30.0]
    assert jobs["preemptions"].tolist() == [0, 0, 0]
    assert jobs["status"].tolist() == ["done"] * 3
    assert jobs["nodes"].tolist() == ["n0"] * 3
    assert jobs["vc"].tolist() == ["a", "b", "a"]
    assert jobs["user"].tolist() == ["alice", "bob", "alice"]


def test_summary_by_hand(three):
    s = three.summary()
    assert isinstance(s, pd.Series)
    assert set(SUMMARY_FIELDS) <= set(s.index)
    jct = [100.0, 140.0, 160.0]
    queue = [0.0, 90.0, 130.0]
    expected = {
        "jobs": 3,
        "finished": 3,
        "unschedulable": 0,
        "avg_jct": 400 / 3,
        "median_jct": 140.0,
        "p95_jct": 140 + 0.9 * 20,  # linear interpolation at rank 0.95 * 2 = 1.9
        "p99_jct": 140 + 0.98 * 20,
        "avg_queue_delay": 220 / 3,
        "median_queue_delay": 90.0,
        "p95_queue_delay": 90 + 0.9 * 40,
        "avg_slowdown": (100 / 100 + 140 / 50 + 160 / 30) / 3,
        "makespan": 180.0,
        # 2x100 + 4x50 + 2x30 = 460 busy GPU-seconds on 4 GPUs over 180 s
        "gpu_utilization": 460 / (4 * 180),
        "preemptions": 0,
        "preempted_jobs": 0,
    }
    for name, value in expected.items():
        assert s[name] == pytest.approx(value), name
    assert s["p95_jct"] == pytest.approx(np.percentile(jct, 95))
    assert s["p95_queue_delay"] == pytest.approx(np.percentile(queue, 95))


def test_summary_by_vc(three):
    table = three.summary(by="vc")
    assert isinstance(table, pd.DataFrame)
    assert table.index.tolist() == ["a", "b"]
    assert table.loc["a", "jobs"] == 2 and table.loc["b", "jobs"] == 1
    assert table.loc["a", "avg_jct"] == pytest.approx(130.0)
    assert table.loc["b", "avg_jct"] == pytest.approx(140.0)
    assert table.loc["a", "avg_queue_delay"] == pytest.approx(65.0)
    assert table.loc["b", "avg_queue_delay"] == pytest.approx(90.0)
    # a held 2x100 + 2x30 GPU-seconds, b 4x50, of the 4 GPUs each may use, over the run
    assert table.loc["a", "gpu_utilization"] == pytest.approx(260 / (4 * 180))
    assert table.loc["b", "gpu_utilization"] == pytest.approx(200 / (4 * 180))
    assert table["jobs"].sum() == three.summary()["jobs"]
    with pytest.raises(ValueError, match="by"):
        three.summary(by="rack")


def test_summary_by_vc_has_one_row_per_vc(busy):
    table = busy.summary(by="vc")
    assert table.index.tolist() == ["a", "b"]
    assert set(SUMMARY_FIELDS) <= set(table.columns)
    assert table["jobs"].sum() == len(busy.jobs)
    assert table["preemptions"].sum() == busy.summary()["preemptions"] == 2


def test_timeline_by_hand(three):
    tl = three.timeline
    assert list(tl.columns[:2]) == ["time", "vc"]
    for column in ("used_gpus", "free_gpus", "pending_gpus", "running_jobs", "waiting_jobs"):
        assert column in tl.columns
    assert "utilization" in tl.columns
    # sampled every 50 s from 0 to the end (180 s); one cluster row and one row per VC
    assert sorted(tl["time"].unique()) == [0.0, 50.0, 100.0, 150.0]
    assert len(tl) == 4 * 3
    cluster = tl[tl["vc"] == "(all)"].set_index("time")
    assert cluster["used_gpus"].tolist() == [2, 2, 4, 2]
    assert cluster["free_gpus"].tolist() == [2, 2, 0, 2]
    assert cluster["running_jobs"].tolist() == [1, 1, 1, 1]
    assert cluster["waiting_jobs"].tolist() == [0, 2, 1, 0]
    assert cluster["pending_gpus"].tolist() == [0, 6, 2, 0]
    assert cluster["utilization"].tolist() == pytest.approx([0.5, 0.5, 1.0, 0.5])
    a = tl[tl["vc"] == "a"].set_index("time")
    b = tl[tl["vc"] == "b"].set_index("time")
    assert a["used_gpus"].tolist() == [2, 2, 0, 2]
    assert b["used_gpus"].tolist() == [0, 0, 4, 0]
    assert a["waiting_jobs"].tolist() == [0, 1, 1, 0]
    assert b["waiting_jobs"].tolist() == [0, 1, 0, 0]


def _intervals(events: pd.DataFrame) -> pd.DataFrame:
    """(job, gpus, from, to): the spans each job held GPUs, worked out from the events."""
    spans = []
    for job_id, seq in events.groupby("job_id"):
        opened = None
        for row in seq.itertuples():
            if row.event in ("start", "resume"):
                opened = row.time
            elif row.event in ("preempt", "finish"):
                spans.append((job_id, row.vc, row.num_gpus, opened, row.time))
                opened = None
    return pd.DataFrame(spans, columns=["job_id", "vc", "gpus", "start", "end"])


@pytest.mark.parametrize("name", ["three", "busy"])
def test_timeline_used_gpus_match_the_job_intervals(name, request):
    res = request.getfixturevalue(name)
    spans = _intervals(res.events)
    every = res.config["sample_every"]
    tl = res.timeline
    times = np.sort(tl["time"].unique())
    assert times[0] == 0.0
    assert np.allclose(np.diff(times), every)
    assert times[-1] <= res.jobs["end_time"].max() < times[-1] + every
    for vc in ["(all)", *res.meta["vcs"]]:
        rows = tl[tl["vc"] == vc].sort_values("time")
        assert rows["time"].tolist() == times.tolist()
        mine = spans if vc == "(all)" else spans[spans["vc"] == vc]
        expected = [
            int(mine.loc[(mine["start"] <= t) & (t < mine["end"]), "gpus"].sum()) for t in times
        ]
        assert rows["used_gpus"].tolist() == expected, vc


def test_gpu_utilization_from_the_jobs_table(busy):
    jobs = busy.jobs
    busy_seconds = float((jobs["num_gpus"] * jobs["run_time"]).sum())
    spans = _intervals(busy.events)
    assert busy_seconds == pytest.approx(
        float((spans["gpus"] * (spans["end"] - spans["start"])).sum())
    )
    makespan = jobs["end_time"].max() - jobs["submit_time"].min()
    expected = busy_seconds / (16 * makespan)
    s = busy.summary()
    assert s["makespan"] == makespan
    assert s["gpu_utilization"] == pytest.approx(expected)
    # per VC, over each VC's 8-GPU quota
    per_vc = busy.summary(by="vc")
    for vc in ("a", "b"):
        mine = jobs[jobs["vc"] == vc]
        held = float((mine["num_gpus"] * mine["run_time"]).sum())
        assert per_vc.loc[vc, "gpu_utilization"] == pytest.approx(held / (8 * makespan))


def test_save_load_round_trip(tmp_path, busy):
    folder = busy.save(tmp_path / "run")
    assert {p.name for p in folder.iterdir()} >= {
        "jobs.parquet",
        "events.parquet",
        "timeline.parquet",
        "result.json",
    }
    again = Result.load(folder)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(busy, name))
    assert again.config == busy.config
    assert again.meta == busy.meta
    pd.testing.assert_series_equal(again.summary(), busy.summary())
    pd.testing.assert_frame_equal(again.summary(by="vc"), busy.summary(by="vc"))
    json.loads((folder / "result.json").read_text())  # plain JSON


def test_save_load_round_trip_with_unschedulable_and_typed_jobs(tmp_path):
    frame = THREE.assign(gpu_type=["V100", None, "A100"], num_gpus=[2, 4, 64])
    res = simulate(Workload.from_frame(frame), Cluster.uniform(1, 2, 4, gpu_type="V100"))
    assert res.jobs["status"].tolist() == ["done", "done", "unschedulable"]
    again = Result.load(res.save(tmp_path))
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(res, name))


@pytest.mark.parametrize(
    "missing", ["jobs.parquet", "events.parquet", "timeline.parquet", "result.json"]
)
def test_load_names_a_missing_file(tmp_path, three, missing):
    folder = three.save(tmp_path)
    (folder / missing).unlink()
    with pytest.raises(ResultFormatError, match=missing.replace(".", r"\.") + ": missing"):
        Result.load(folder)


def test_gpu_utilization_with_a_coarse_step_stays_exact():
    # regression: busy GPU-seconds once ran on to the step at which the end was processed,
    # giving a utilization of 2.0 here
    # one 2-GPU job of 1 s on a 2-GPU node, clock step 2 s: it ends at t=1 (processed at t=2)
    frame = THREE.iloc[:1].assign(num_gpus=2, duration=1.0)
    res = simulate(Workload.from_frame(frame), Cluster.uniform(1, 1, 2), step=2, quantum=2)
    assert res.jobs["end_time"].tolist() == [1.0]
    assert res.summary()["makespan"] == 1.0
    assert res.meta["busy_gpu_seconds"] == [2.0]  # 2 GPUs x 1 s, as the jobs table says
    assert res.summary()["gpu_utilization"] == pytest.approx(1.0)


def test_gpu_utilization_spans_from_the_first_submit_not_from_zero():
    # one 4-GPU job submitted at t=1000 runs 100 s on the 16-GPU toy cluster: the span is
    # 1000-1100, so 400 GPU-seconds of 1,600 are used (from 0 it would be 400 / 17,600)
    frame = THREE.iloc[:1].assign(num_gpus=4, submit_time=1000.0, duration=100.0)
    res = simulate(Workload.from_frame(frame), presets.cluster("toy"))
    summary = res.summary()
    assert res.jobs[["start_time", "end_time"]].values.tolist() == [[1000.0, 1100.0]]
    assert summary["makespan"] == 100.0
    assert res.meta["busy_gpu_seconds"] == [400.0]
    assert summary["gpu_utilization"] == pytest.approx(0.25)
