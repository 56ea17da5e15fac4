"""read_helios on a small log worked by hand, the real Venus/Earth VC files, and the report."""

from __future__ import annotations

import pandas as pd
import pytest
from trace_samples import HELIOS_HEADER, HELIOS_ROWS, helios_folder

import analysim as asim
from analysim.traces import read_helios, read_helios_cluster, read_vc_sizes


def test_the_sample_log_keeps_the_gpu_jobs_of_known_vcs_with_times_from_the_first_submit(
    tmp_path,
):
    t = read_helios(helios_folder(tmp_path))
    jobs = t.workload.jobs
    # 101 (vcA) and 106 (vcB) are kept, 104 is kept although larger than vcB (8 GPUs)
    assert jobs["job_id"].tolist() == ["101", "104", "106"]
    assert jobs["submit_time"].tolist() == [0.0, 110.0, 122_390.0]
    assert jobs["duration"].tolist() == [3600.0, 600.0, 7200.0]
    assert jobs["num_gpus"].tolist() == [1, 16, 4]
    assert jobs["state"].tolist() == ["COMPLETED", "CANCELLED", "COMPLETED"]
    # the VC sizes of 2020-09-01, the day of the first submission: vcC owns nothing yet
    assert t.cluster.vc_capacity() == {"vcA": 16, "vcB": 8}
    assert t.cluster.nodes["node"].tolist() == ["vcA-000", "vcA-001", "vcB-000"]


def test_the_report_counts_every_row_once_under_its_reason_with_examples(tmp_path):
    report = read_helios(helios_folder(tmp_path)).report
    assert report.read["jobs"] == 7 and report.kept["jobs"] == 3
    assert report.dropped() == 4
    assert {
        r: report.count(r, outcome="dropped")
        for r in ("cpu_only", "nonpositive_duration", "empty_vc", "unknown_vc")
    } == {
        "cpu_only": 1,
        "nonpositive_duration": 1,
        "empty_vc": 1,
        "unknown_vc": 1,
    }
    assert report.count("oversized", outcome="kept") == 1
    assert report.examples("cpu_only") == ["line 3 (job_id='102'): gpu_num=0"]
    assert report.examples("oversized") == ["line 5 (job_id='104'): num_gpus=16"]
    assert report.examples("unknown_vc") == ["line 8 (job_id='107'): vc='vcZ'"]
    assert report.examples("empty_vc", table="vcs") == ["column 'vcC': gpus=0"]
    frame = report.frame
    jobs = frame[frame["table"] == "jobs"]
    assert jobs["outcome"].tolist() == [
        "read",
        "dropped",
        "dropped",
        "dropped",
        "dropped",
        "kept",
        "kept",
    ]
    read = jobs.loc[jobs["outcome"] == "read", "rows"].sum()
    dropped = jobs.loc[jobs["outcome"] == "dropped", "rows"].sum()
    kept = jobs.loc[(jobs["outcome"] == "kept") & (jobs["reason"] == ""), "rows"].sum()
    assert read == dropped + kept
    text = report.summary()
    assert text.splitlines()[0] == "jobs (cluster_log.csv): 7 read, 3 kept, 4 dropped"
    assert "e.g. line 8 (job_id='107'): vc='vcZ'" in text


def test_drop_oversized_drops_the_job_larger_than_its_vc(tmp_path):
    t = read_helios(helios_folder(tmp_path), drop_oversized=True)
    assert t.workload.jobs["job_id"].tolist() == ["101", "106"]
    assert t.report.count("oversized", outcome="dropped") == 1
    assert t.report.count("oversized", outcome="kept") == 0


def test_a_window_and_a_vc_date_choose_the_jobs_and_the_vc_sizes(tmp_path):
    t = read_helios(
        helios_folder(tmp_path),
        start="2020-09-01 00:01:00",
        end="2020-09-02 10:30",
        vc_date="2020-09-02",
    )
    jobs = t.workload.jobs
    # 101 (00:00:10) and 107 (11:00) fall outside; 105 (vcC) is kept now that vcC owns 8 GPUs
    assert jobs["job_id"].tolist() == ["104", "105", "106"]
    assert jobs["submit_time"].tolist() == [60.0, 120.0, 122_340.0]
    assert t.cluster.vc_capacity() == {"vcA": 16, "vcB": 8, "vcC": 8}
    assert t.report.count("outside_window") == 2


def test_vc_map_renames_job_vcs_before_they_are_checked(tmp_path):
    t = read_helios(helios_folder(tmp_path), vc_map={"vcZ": "vcA"})
    assert t.workload.jobs.set_index("job_id").loc["107", "vc"] == "vcA"
    assert t.report.count("unknown_vc") == 0


def test_rows_with_bad_values_are_dropped_and_counted_not_raised(tmp_path):
    rows = [
        HELIOS_ROWS[0],
        HELIOS_ROWS[0].replace("101,uA", "201,uA").replace(",1,4,1,", ",two,4,1,"),
        HELIOS_ROWS[0]
        .replace("101,uA", "202,uA")
        .replace("2020-09-01 00:00:10,2020", "2020-09-31 00:00:10,2020"),
        HELIOS_ROWS[0].replace("101,uA", "203,"),
        HELIOS_ROWS[0],
        HELIOS_ROWS[0].replace("101,uA", "204,uA").replace(",3600,0", ",-5,0"),
    ]
    log = HELIOS_HEADER + "\n" + "\n".join(rows) + "\n"
    report = read_helios(helios_folder(tmp_path, log=log)).report
    assert report.frame.query("table == 'jobs' and outcome == 'dropped'")[
        ["reason", "rows", "examples"]
    ].to_dict("records") == [
        {"reason": "missing_value", "rows": 1, "examples": "line 5 (job_id='203'): user=None"},
        {"reason": "bad_value", "rows": 1, "examples": "line 3 (job_id='201'): gpu_num='two'"},
        {
            "reason": "unparseable_time",
            "rows": 1,
            "examples": "line 4 (job_id='202'): submit_time='2020-09-31 00:00:10'",
        },
        {"reason": "duplicate_id", "rows": 1, "examples": "line 6 (job_id='101'): job_id='101'"},
        {
            "reason": "nonpositive_duration",
            "rows": 1,
            "examples": "line 7 (job_id='204'): duration=-5",
        },
    ]
    assert report.kept["jobs"] == 1


def test_the_trace_simulates_end_to_end(tmp_path):
    t = read_helios(helios_folder(tmp_path))
    res = asim.simulate(t.workload, t.cluster, scheduler="fifo")
    jobs = res.jobs.set_index("job_id")
    assert jobs.loc["104", "status"] == "unschedulable"
    assert jobs.loc["101", "end_time"] == 3600.0
    assert jobs.loc["106", "end_time"] == 122_390.0 + 7200.0


# -- the real VC files -------------------------------------------------------------------------
@pytest.mark.parametrize("cluster", ["venus", "earth"])
def test_the_real_vc_files_build_clusters_matching_every_daily_total(shared_data, cluster):
    path = shared_data / "helios" / f"{cluster}_cluster_gpu_number.csv"
    sizes = read_vc_sizes(path)
    assert len(sizes) == 181
    assert sizes.index.min() == pd.Timestamp("2020-04-01")
    for day, row in sizes.iterrows():
        built = read_helios_cluster(path, day)
        assert built.total_gpus == row["total"], day
        owned = {vc: int(n) for vc, n in row.drop("total").items() if n > 0}
        assert built.vc_capacity() == owned, day
        assert (built.nodes["gpus"] == 8).all()


def test_venus_on_its_last_day_is_the_venus_preset_cluster(shared_data):
    built = read_helios_cluster(
        shared_data / "helios" / "venus_cluster_gpu_number.csv", "2020-09-28"
    )
    assert built.vc_capacity() == asim.presets.VENUS_VC_GPUS
    assert built.total_gpus == 1080
