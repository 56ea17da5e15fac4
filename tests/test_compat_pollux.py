"""compat="pollux": read_pollux's errors, a hand-checked Tiresias case, artifact fidelity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analysim as asim
from analysim.traces import TraceError

DATA = Path(asim.__file__).resolve().parent / "data" / "pollux"
TINY = Path(__file__).parent / "data" / "pollux_tiny.csv"
HEADER = "name,time,application,num_replicas,batch_size\n"


def write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "w.csv"
    path.write_text(header + body)
    return path


@pytest.mark.parametrize(
    ("body", "header", "words"),
    [
        ("a,0,bert,1,12\n", "name,time,application,num_replicas\n", ["missing", "batch_size"]),
        ("a,0,bert,1,12\nb,5,gpt,1,12\n", HEADER, ["line 3", "'application'", "gpt"]),
        ("a,-5,bert,1,12\n", HEADER, ["line 2", "'time'", "-5"]),
        ("a,0,bert,1.5,12\n", HEADER, ["line 2", "'num_replicas'", "1.5"]),
        ("a,0,bert,65,12\n", HEADER, ["'num_replicas'", "65", "64"]),
        ("a,0,bert,1,5000\n", HEADER, ["'batch_size'", "5000", "12 to 384"]),
        ("a,0,bert,1,12\na,1,bert,1,12\n", HEADER, ["line 3", "'name'"]),
    ],
)
def test_reader_errors_name_file_row_column_value(tmp_path, body, header, words):
    with pytest.raises(TraceError) as error:
        asim.traces.read_pollux(write(tmp_path, body, header))
    message = str(error.value)
    assert "w.csv" in message
    for word in words:
        assert word in message


def test_reader_builds_the_artifact_cluster_and_jobs():
    trace = asim.traces.read_pollux(TINY)
    assert trace.cluster.total_gpus == 64 and len(trace.cluster.nodes) == 16
    jobs = trace.workload.jobs
    assert jobs["job_id"].tolist() == ["a", "b", "c", "d"]
    assert jobs["num_gpus"].tolist() == [48, 32, 1, 4]
    assert jobs["batch_size"].tolist() == [6400, 3200, 256, 48]
    assert (jobs["duration"] > 0).all()


def test_tiresias_hand_checked():
    """a (48 GPUs) and c start at the first round (60); d at 120; at 1260 a has run 1200 s x
    48 = 57,600 GPU-s and is demoted: b (32) takes its place, a waits (48 > 64-32-1-4); at
    3060 b has 1800 s x 32 and is demoted behind a, which resumes. JCTs: the artifact's."""
    trace = asim.traces.read_pollux(TINY)
    result = asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="tiresias")
    jobs = result.jobs.set_index("job_id")
    assert jobs["start_time"].tolist() == [60.0, 1260.0, 60.0, 120.0]
    assert jobs["preemptions"].tolist() == [1, 1, 0, 0]
    assert jobs["jct"].tolist() == [21609.0, 49669.0, 1510.0, 3637.0]
    events = result.events
    at = events[events["event"].isin(["preempt", "resume"])][["time", "event", "job_id"]]
    assert at.values.tolist() == [
        [1260.0, "preempt", "a"],
        [3060.0, "resume", "a"],
        [3060.0, "preempt", "b"],
        [21660.0, "resume", "b"],
    ]


@pytest.mark.parametrize("number", [1, 6])
def test_fidelity_with_the_artifact_summary(number):
    peer = json.loads((DATA / "results" / "tiresias-1.0.json").read_text())["jcts"]
    trace = asim.traces.read_pollux(DATA / "workloads" / f"workload-{number}.csv")
    result = asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="tiresias")
    jct = result.jobs.set_index("job_id")["jct"]
    expected = peer[f"workload-{number}"]
    assert len(jct) == len(expected) == 160
    assert {k: int(v) for k, v in jct.items()} == expected


def test_unsupported_scheduler_and_cluster():
    trace = asim.traces.read_pollux(TINY)
    with pytest.raises(ValueError, match="compat='pollux' supports the schedulers"):
        asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="fifo")
    with pytest.raises(ValueError, match="16 nodes of 4"):
        asim.simulate(trace.workload, "toy", compat="pollux", scheduler="tiresias")
