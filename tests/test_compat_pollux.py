"""compat="pollux": read_pollux's errors, hand-checked Tiresias and Optimus cases, artifact
fidelity. (The replay under ``scheduler="pollux"``, which compiles numba code, is tested in
``test_pollux_policy.py``.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.traces import TraceError

DATA = Path(asim.__file__).resolve().parent / "data" / "pollux"
TINY = Path(__file__).parent / "data" / "pollux_tiny.csv"
OPTIMUS_TINY = Path(__file__).parent / "data" / "pollux_optimus_tiny.csv"
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


def test_optimus_hand_checked():
    """Packed iteration times (s): imagenet at 6400 is 0.7876 on 48 GPUs, 0.7727 on 49, 0.7812
    on 50; cifar10 at 2048 0.2599 on 8, 0.2600 on 9; yolov3 at 64 0.8829 on 4, 1.7946 on 5
    (two nodes); ncf is held at 1. So at 60 a (imagenet) takes 49 GPUs and b (ncf) 1, c
    (cifar10) arrives and takes 8, d (yolov3) 4, on the fullest nodes: n0's 3 and n13's 1.
    At 3000 e (imagenet, 3200) arrives: 64 GPUs are short, a shrinks to 36 (a restart) and e
    takes 24; as their epochs move the iterations left, a and e trade 4 GPUs back and forth.
    JCTs: the artifact's simulator's on this file."""
    trace = asim.traces.read_pollux(OPTIMUS_TINY)
    result = asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="optimus")
    jobs = result.jobs.set_index("job_id")
    assert jobs["jct"].to_dict() == {"a": 25981, "b": 1530, "c": 895, "d": 25186, "e": 29672}
    assert jobs["preemptions"].tolist() == [7, 0, 0, 2, 3]
    events = result.events
    given = events[events["event"].isin(["start", "resume"])]
    first = given[given["time"] <= 3000][["time", "job_id", "num_gpus", "nodes"]]
    assert first.values.tolist() == [
        [60.0, "a", 49, "n1,n2,n3,n4,n5,n6,n7,n8,n9,n10,n11,n12,n13"],
        [60.0, "b", 1, "n0"],
        [600.0, "c", 8, "n14,n15"],
        [660.0, "d", 4, "n0,n13"],
        [3000.0, "a", 36, "n7,n8,n9,n10,n11,n12,n14,n15,n13,n0"],
        [3000.0, "e", 24, "n1,n2,n3,n4,n5,n6"],
    ]
    timeline = result.timeline
    used = timeline[timeline["vc"] == "(all)"].set_index("time")["used_gpus"]
    assert used[600.0] == 58 and used[1500.0] == 54 and used[3000.0] == 64


def test_optimus_resize_is_a_preempt_and_resume_at_one_second():
    """A change of GPU count is recorded as a preemption and a resumption at the same second
    (the artifact restarts the job): the job holds GPUs without a gap, counted with the GPUs
    it holds in each stretch."""
    trace = asim.traces.read_pollux(OPTIMUS_TINY)
    result = asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="optimus")
    events = result.events
    a = events[(events["job_id"] == "a") & (events["time"] == 3000.0)]
    assert a["event"].tolist() == ["preempt", "resume"]
    assert a["num_gpus"].tolist() == [49, 36]
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["a", "run_time"] == jobs.loc["a", "end_time"] - 60
    held = 0.0
    for _, rows in events.groupby("job_id", observed=True):
        times, kinds, gpus = rows["time"].tolist(), rows["event"].tolist(), rows["num_gpus"]
        for k in range(1, len(rows)):
            if kinds[k] in ("preempt", "finish"):
                assert kinds[k - 1] in ("start", "resume") and gpus.iloc[k] == gpus.iloc[k - 1]
                held += (times[k] - times[k - 1]) * gpus.iloc[k]
    assert result.meta["busy_gpu_seconds"] == [held] and held > 64 * 25000


@pytest.mark.parametrize(
    ("scheduler", "number"), [("tiresias", 1), ("tiresias", 6), ("optimus", 2), ("optimus", 6)]
)
def test_fidelity_with_the_artifact_summary(scheduler, number):
    summary = json.loads((DATA / "results" / f"{scheduler}-1.0.json").read_text())
    trace = asim.traces.read_pollux(DATA / "workloads" / f"workload-{number}.csv")
    result = asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler=scheduler)
    jct = result.jobs.set_index("job_id")["jct"]
    expected = summary["jcts"][f"workload-{number}"]
    assert len(jct) == len(expected) == 160
    assert {k: int(v) for k, v in jct.items()} == expected


def test_unsupported_scheduler_and_cluster():
    trace = asim.traces.read_pollux(TINY)
    with pytest.raises(ValueError, match="compat='pollux' supports the schedulers"):
        asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="fifo")
    with pytest.raises(ValueError, match="16 nodes of 4"):
        asim.simulate(trace.workload, "toy", compat="pollux", scheduler="tiresias")


SIZES = {  # application: (batch sizes to draw from, smallest local batch size)
    "bert": ((12, 96, 384), 4),
    "cifar10": ((128, 2048, 4096), 32),
    "deepspeech2": ((20, 320, 640), 10),
    "imagenet": ((200, 3200), 20),
    "ncf": ((256, 32768), 32),
    "yolov3": ((8, 64), 4),
}


@st.composite
def pollux_workloads(draw):
    rows = []
    for k in range(draw(st.integers(1, 7))):
        app = draw(st.sampled_from(sorted(SIZES)))
        batch = draw(st.sampled_from(SIZES[app][0]))
        rows.append(f"j{k},{draw(st.integers(0, 3000))},{app},1,{batch}\n")
    return "".join(rows)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pollux_workloads())
def test_optimus_invariants(tmp_path_factory, body):
    """Every job ends; a job holds from 1 GPU to its cap (batch size over the smallest local
    batch, ncf 1) whenever it runs; the cluster's 64 GPUs are never exceeded; a rerun is
    identical."""
    path = tmp_path_factory.mktemp("optimus") / "w.csv"
    path.write_text(HEADER + body)
    trace = asim.traces.read_pollux(path)
    run = [
        asim.simulate(trace.workload, trace.cluster, compat="pollux", scheduler="optimus")
        for _ in range(2)
    ]
    jobs = run[0].jobs
    assert (jobs["status"] == "done").all() and (jobs["end_time"] > jobs["submit_time"]).all()
    assert run[0].jobs.equals(run[1].jobs)
    caps = {
        j: 1 if a == "ncf" else b // SIZES[a][1]
        for j, a, b in zip(
            jobs["job_id"],
            trace.workload.jobs["application"],
            trace.workload.jobs["batch_size"],
            strict=True,
        )
    }
    held: dict[str, int] = {}
    for _, moment in run[0].events.groupby("time", sort=True):
        for row in moment.itertuples(index=False):
            if row.event in ("preempt", "finish"):
                held.pop(row.job_id)
            elif row.event in ("start", "resume"):
                assert 1 <= row.num_gpus <= caps[row.job_id]
                held[row.job_id] = row.num_gpus
        assert sum(held.values()) <= 64


def test_importing_analysim_or_reading_pollux_does_not_import_numba():
    """numba (and its compile) is paid only by a compiled Pollux search, not by every user."""
    code = (
        "import sys, analysim, analysim.experiments.elastic_study; "
        "from analysim.traces import read_pollux; print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
