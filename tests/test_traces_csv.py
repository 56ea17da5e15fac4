"""read_csv_trace: any CSV or parquet jobs table with a column mapping."""

from __future__ import annotations

import pandas as pd
import pytest
from trace_samples import write

from analysim import Cluster
from analysim.traces import read_csv_trace

CSV = (
    "id,submitted,runtime,gpus,team\n"
    "a,0,100,1,x\n"
    "b,30,50,0.5,y\n"
    "c,60,0,2,x\n"
    "d,90,10,0,y\n"
    "e,120,40,8,x\n"
)
MAPPING = {
    "job_id": "id",
    "submit_time": "submitted",
    "duration": "runtime",
    "num_gpus": "gpus",
    "vc": "team",
}


def test_a_mapped_csv_becomes_a_workload_with_fractions_rounded_up(tmp_path):
    t = read_csv_trace(write(tmp_path / "jobs.csv", CSV), MAPPING)
    jobs = t.workload.jobs
    assert jobs["job_id"].tolist() == ["a", "b", "e"]
    assert jobs["num_gpus"].tolist() == [1, 1, 8]
    assert jobs["vc"].tolist() == ["x", "y", "x"]
    assert jobs["user"].tolist() == ["unknown"] * 3
    assert t.cluster is None
    report = t.report
    assert report.examples("rounded_up_gpu") == ["line 3 (id='b'): gpus=0.5"]
    assert report.examples("nonpositive_duration") == ["line 4 (id='c'): duration=0.0"]
    assert report.examples("cpu_only") == ["line 5 (id='d'): gpus=0.0"]


def test_a_cluster_checks_vcs_and_sizes(tmp_path):
    cluster = Cluster.uniform(1, 1, 4, vc_nodes={"x": 1})
    t = read_csv_trace(write(tmp_path / "jobs.csv", CSV), MAPPING, cluster=cluster)
    assert t.workload.jobs["job_id"].tolist() == ["a", "e"]
    assert t.report.examples("unknown_vc") == ["line 3 (id='b'): vc='y'"]
    assert t.report.examples("oversized") == ["line 6 (id='e'): num_gpus=8"]
    dropped = read_csv_trace(
        write(tmp_path / "jobs.csv", CSV), MAPPING, cluster=cluster, drop_oversized=True
    )
    assert dropped.workload.jobs["job_id"].tolist() == ["a"]


def test_date_times_become_seconds_from_the_first_submission(tmp_path):
    text = (
        "job,at,begin,finish,n\n"
        "j1,2024-01-01 10:00:00,2024-01-01 10:00:05,2024-01-01 11:00:05,1\n"
        "j2,2024-01-01 10:01:00,2024-01-01 10:02:00,2024-01-01 10:12:00,2\n"
        "j3,2024-01-01 10:02:00,2024-01-01 10:03:00,,2\n"
    )
    t = read_csv_trace(
        write(tmp_path / "jobs.csv", text),
        {
            "job_id": "job",
            "submit_time": "at",
            "start_time": "begin",
            "end_time": "finish",
            "num_gpus": "n",
        },
        time_format="%Y-%m-%d %H:%M:%S",
    )
    jobs = t.workload.jobs
    assert jobs["submit_time"].tolist() == [0.0, 60.0]
    assert jobs["duration"].tolist() == [3600.0, 600.0]
    assert t.report.examples("missing_value") == ["line 4 (job='j3'): finish=None"]


def test_a_parquet_file_reads_the_same_as_its_csv(tmp_path):
    csv = write(tmp_path / "jobs.csv", CSV)
    parquet = tmp_path / "jobs.parquet"
    pd.read_csv(csv).to_parquet(parquet)
    from_csv = read_csv_trace(csv, MAPPING).workload.jobs
    from_parquet = read_csv_trace(parquet, MAPPING).workload.jobs
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)
    assert read_csv_trace(parquet, MAPPING).report.examples("cpu_only") == [
        "row 3 (id='d'): gpus=0.0"
    ]


def test_needed_columns_missing_from_a_parquet_file_are_named(tmp_path):
    parquet = tmp_path / "jobs.parquet"
    pd.DataFrame({"id": ["a"], "submitted": [0], "gpus": [1]}).to_parquet(parquet)
    with pytest.raises(
        ValueError, match=r"missing column\(s\) 'runtime \(or start_time and end_time\)'"
    ):
        read_csv_trace(parquet, {k: v for k, v in MAPPING.items() if k != "vc"})
