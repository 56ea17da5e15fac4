"""read_philly on a small job log worked by hand."""

from __future__ import annotations

import pytest
from trace_samples import PHILLY_JOBS, philly_folder, philly_job

import analysim as asim
from analysim.traces import read_philly


def test_run_time_sums_the_attempts_and_gpus_come_from_the_first(tmp_path):
    t = read_philly(philly_folder(tmp_path))
    jobs = t.workload.jobs.set_index("job_id")
    assert jobs.index.tolist() == ["application_1", "application_3", "application_4"]
    # application_1: 74 s + 3,600 s; application_3 runs from 01:30:10 to the last time in
    # the log (03:30:00); application_4's first attempt has no start and is left out
    assert jobs["duration"].tolist() == [3674.0, 7190.0, 600.0]
    assert jobs["num_gpus"].tolist() == [8, 4, 1]
    assert jobs["submit_time"].tolist() == [0.0, 1101.0, 6501.0]
    assert jobs["vc"].tolist() == ["vc1", "vc2", "vc1"]
    # Philly's words mapped to Slurm's (docs/traces.md), the trace's own kept beside them
    assert jobs["state"].tolist() == ["COMPLETED", "COMPLETED", "FAILED"]
    assert jobs["trace_state"].tolist() == ["Pass", "Pass", "Failed"]
    assert jobs["censored"].tolist() == [False, True, False]
    report = t.report
    assert report.examples("never_started") == ["job 1 (jobid='application_2'): attempts=0"]
    assert report.examples("skipped_attempt") == ["job 3 (jobid='application_4'): attempts=2"]
    assert report.examples("censored") == ["job 2 (jobid='application_3'): attempts=1"]
    assert report.examples("cpu_only", table="machines") == [
        "line 4 (machineId='m3'): number of GPUs=0"
    ]


def test_quotas_split_the_gpus_in_proportion_to_gpu_seconds(tmp_path):
    t = read_philly(philly_folder(tmp_path))
    # vc1: 8 x 3,674 + 1 x 600 = 29,992; vc2: 4 x 7,190 = 28,760 GPU-seconds; 16 GPUs:
    # 8.17 and 7.83, the remainders round vc2 up
    assert t.cluster.quotas == {"vc1": 8, "vc2": 8}
    assert t.cluster.nodes["gpu_type"].tolist() == ["24GB", "12GB"]
    assert t.report.count("oversized", outcome="kept") == 0


def test_given_quotas_drop_the_jobs_of_other_vcs_and_flag_the_oversized(tmp_path):
    t = read_philly(philly_folder(tmp_path), vc_quotas={"vc1": 4})
    assert t.workload.jobs["job_id"].tolist() == ["application_1", "application_4"]
    assert t.report.examples("unknown_vc") == ["job 2 (jobid='application_3'): vc='vc2'"]
    assert t.report.examples("oversized") == ["job 0 (jobid='application_1'): num_gpus=8"]


def test_a_trace_end_sets_where_running_jobs_are_cut(tmp_path):
    t = read_philly(philly_folder(tmp_path), trace_end="2017-10-07 02:30:10")
    assert t.workload.jobs.set_index("job_id").loc["application_3", "duration"] == 3600.0


def test_missing_and_unparseable_times_are_counted(tmp_path):
    jobs = [
        *PHILLY_JOBS,
        philly_job(
            "application_5", "vc1", None, [("2017-10-07 04:00:00", "2017-10-07 04:10:00", 1)]
        ),
        philly_job(
            "application_6", "vc1", "None", [("2017-10-07 04:00:00", "2017-10-07 04:10:00", 1)]
        ),
        philly_job(
            "application_7",
            "vc1",
            "7 Oct 2017",
            [("2017-10-07 04:00:00", "2017-10-07 04:10:00", 1)],
        ),
        philly_job(
            "application_1",
            "vc1",
            "2017-10-07 05:00:00",
            [("2017-10-07 05:00:00", "2017-10-07 05:10:00", 1)],
        ),
    ]
    report = read_philly(philly_folder(tmp_path, jobs)).report
    assert report.count("missing_value") == 2
    assert (
        report.examples("missing_value")[1]
        == "job 5 (jobid='application_6'): submitted_time='None'"
    )
    assert report.examples("unparseable_time") == [
        "job 6 (jobid='application_7'): submitted_time='7 Oct 2017'"
    ]
    assert report.examples("duplicate_id") == [
        "job 7 (jobid='application_1'): jobid='application_1'"
    ]
    assert report.read["jobs"] == report.kept["jobs"] + report.dropped() == 8


def test_the_trace_simulates_end_to_end(tmp_path):
    t = read_philly(philly_folder(tmp_path))
    res = asim.simulate(t.workload, t.cluster, scheduler="fifo")
    assert (res.jobs["status"] == "done").all()
    assert res.jobs["run_time"].sum() == pytest.approx(3674 + 7190 + 600)
