"""How a job ends (``SimConfig.fates``, ``docs/failures.md``): recorded fates replay each
job's recorded final state at the end of its recorded duration; the failure model decides
otherwise; ``Result.jobs`` keeps the recorded state beside the simulated one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import cases
from trace_samples import acme_file

import analysim as asim
from analysim import Cluster, SimConfig, Simulation, Workload
from analysim.inputs.workload import FAILED_STATES, STATES
from analysim.traces import read_acme

ONE_NODE = Cluster.uniform(1, 1, 4, name="one-node")  # node "n0": 4 GPUs
COLUMNS = ["job_id", "status", "start_time", "end_time", "run_time", "restarts"]
COLUMNS += ["lost_seconds", "useful_seconds", "state", "recorded_state"]


def _three_jobs(milli: bool = False) -> Workload:
    """a (1,000 s, recorded FAILED), b (500 s, COMPLETED), c (300 s, CANCELLED): 4 GPUs each,
    so they run one after the other on the one node."""
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "vc": "v",
            "user": "u",
            "submit_time": [0, 0, 10],
            "duration": [1000, 500, 300],
            "num_gpus": 4,
            "state": ["FAILED", "COMPLETED", "CANCELLED"],
        }
    )
    if milli:
        frame["gpu_milli"] = 1000
    return Workload.from_frame(frame)


def _run(workload: Workload, cluster: Cluster = ONE_NODE, **options) -> asim.Result:
    return Simulation(workload, cluster, SimConfig(**options)).run().result()


FAILURE = {
    "checkpoint_every": 300,
    "checkpoint_cost": 20,
    "restart_overhead": 50,
    "failures": [("n0", 700, 900)],
}


@pytest.mark.parametrize("milli", [False, True], ids=["whole", "resource"])
def test_recorded_fates_end_each_job_as_recorded_at_the_end_of_its_work(milli):
    # a: the worked example of docs/failures.md (n0 down 700-900, restart at 900, 400 s of
    # work left with one checkpoint after 300) ends at 1370, but FAILED: the 100 s of work
    # since its checkpoint at 1250 are lost too (60 + 100 = 160), 900 kept. b then runs
    # 1370-1890 (500 s + one checkpoint), c 1890-2190 and ends CANCELLED (status done).
    jobs = _run(_three_jobs(milli), fates="recorded", **FAILURE).jobs[COLUMNS]
    assert jobs.to_dict("list") == {
        "job_id": ["a", "b", "c"],
        "status": ["failed", "done", "done"],
        "start_time": [0.0, 1370.0, 1890.0],
        "end_time": [1370.0, 1890.0, 2190.0],
        "run_time": [1170.0, 520.0, 300.0],
        "restarts": [1, 0, 0],
        "lost_seconds": [160.0, 0.0, 0.0],
        "useful_seconds": [900.0, 500.0, 300.0],
        "state": ["FAILED", "COMPLETED", "CANCELLED"],
        "recorded_state": ["FAILED", "COMPLETED", "CANCELLED"],
    }


def test_recorded_fates_give_failed_events_and_the_summary_counts():
    result = _run(_three_jobs(), fates="recorded", **FAILURE)
    events = result.events
    ends = events[events["event"].isin(["finish", "failed"])]
    assert list(zip(ends["time"], ends["event"].astype(str), ends["job_id"], strict=True)) == [
        (1370.0, "failed", "a"),
        (1890.0, "finish", "b"),
        (2190.0, "finish", "c"),
    ]
    s = result.summary()
    assert s["failed_jobs"] == 1 and s["restarts"] == 1
    assert s["lost_gpu_seconds"] == 4 * 160.0
    # useful 1,700 s of 1,990 s held (4 GPUs each)
    assert s["goodput_ratio"] == pytest.approx(1700 / 1990)


def test_the_model_decides_by_default_and_keeps_the_recorded_state_beside():
    jobs = _run(_three_jobs(), **FAILURE).jobs[COLUMNS]
    assert jobs["status"].tolist() == ["done", "done", "done"]
    assert jobs["state"].tolist() == ["COMPLETED"] * 3
    assert jobs["recorded_state"].tolist() == ["FAILED", "COMPLETED", "CANCELLED"]
    assert jobs["end_time"].tolist() == [1370.0, 1890.0, 2190.0]  # the same times
    assert jobs["lost_seconds"].tolist() == [60.0, 0.0, 0.0]


def test_recorded_fates_without_failures_keep_the_times_of_a_plain_run():
    plain = _run(_three_jobs()).jobs
    recorded = _run(_three_jobs(), fates="recorded").jobs
    assert "state" not in plain.columns  # nothing configured: the columns of before
    pd.testing.assert_frame_equal(
        recorded[["start_time", "end_time", "run_time", "queue_delay"]],
        plain[["start_time", "end_time", "run_time", "queue_delay"]],
    )
    assert recorded["state"].tolist() == ["FAILED", "COMPLETED", "CANCELLED"]
    assert recorded["lost_seconds"].tolist() == [1000.0, 0.0, 0.0]  # no checkpoint: all


def test_an_acme_replay_with_recorded_fates_ends_every_job_in_its_trace_state(tmp_path):
    trace = read_acme(acme_file(tmp_path))
    jobs = _run(trace.workload, trace.cluster, fates="recorded").jobs
    # nothing waits on 2,288 empty GPUs: each job runs its recorded duration from its submit
    assert jobs["end_time"].tolist() == [117.0, 3029.0, 88898.0, 10298.0, 11538.0]
    # the trace's states; the last one's (PREEMPTED) is not a final state: it completes
    assert jobs["state"].tolist() == ["FAILED", "COMPLETED", "NODE_FAIL", "COMPLETED", "COMPLETED"]
    recorded = jobs["recorded_state"]
    assert recorded[:4].tolist() == ["FAILED", "COMPLETED", "NODE_FAIL", "COMPLETED"]
    assert pd.isna(recorded[4])
    assert jobs["status"].tolist() == ["failed", "done", "failed", "done", "done"]


def test_fates_round_trip_and_bad_values_are_named():
    config = SimConfig(fates="recorded")
    assert SimConfig.from_dict(config.to_dict()) == config
    assert SimConfig().fates == "model"
    with pytest.raises(ValueError, match=r"fates must be one of \['model', 'recorded'\], got 't'"):
        SimConfig(fates="t")
    with pytest.raises(ValueError, match=r"job_failure_prob \(0.3\) draws jobs' own failures"):
        SimConfig(fates="recorded", job_failure_prob=0.3)
    with pytest.raises(ValueError, match="a job recorded as failed fails for good"):
        SimConfig(fates="recorded", retry_failed=True)
    plain = Workload.from_frame(_three_jobs().jobs.drop(columns="state"), name="plain")
    with pytest.raises(ValueError, match="workload 'plain' has no 'state' column"):
        Simulation(plain, ONE_NODE, SimConfig(fates="recorded"))


# -- invariants -----------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(max_jobs=8, max_duration=600),
    states=st.lists(st.sampled_from([*STATES, None]), min_size=8, max_size=8),
    options=st.fixed_dictionaries(
        {
            "node_mtbf": st.sampled_from([None, 300.0, 3000.0]),
            "checkpoint_every": st.sampled_from([None, 100.0]),
            "restart_overhead": st.sampled_from([None, 30.0]),
        }
    ),
)
def test_recorded_fates_end_every_job_as_recorded_and_change_no_time(case, states, options):
    cluster_case, workload, config = case
    jobs = workload.jobs.assign(state=states[: len(workload.jobs)])
    workload = Workload.from_frame(jobs)
    if options["node_mtbf"] is not None:
        options = {**options, "repair_time": 60.0}
    else:
        del options["node_mtbf"]
    model = Simulation(workload, cluster_case.cluster, config.replace(**options)).run()
    recorded = Simulation(
        workload, cluster_case.cluster, config.replace(fates="recorded", **options)
    ).run()
    a, b = model.result().jobs, recorded.result().jobs
    ended = b["status"] != "unschedulable"
    assert b["status"].isin(["done", "failed", "unschedulable"]).all()
    expected = [s if isinstance(s, str) else "COMPLETED" for s in workload.jobs["state"]]
    assert b.loc[ended, "state"].tolist() == list(np.array(expected, dtype=object)[ended])
    assert ((b["status"] == "failed") == (ended & jobs["state"].isin(FAILED_STATES))).all()
    # a fate is a label at the end of the work: every start, end and kill is the model's
    for column in ("start_time", "end_time", "run_time"):
        pd.testing.assert_series_equal(a[column], b[column])
    if "restarts" in a.columns:  # (failure columns only when the model has failures)
        pd.testing.assert_series_equal(a["restarts"], b["restarts"])
