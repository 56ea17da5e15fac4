"""read_acme on small files in the AcmeTrace README's format, worked by hand; the final
states every reader keeps and how the workload checks them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from trace_samples import (
    ACME_HEADER,
    ACME_KALOS,
    ACME_ROWS,
    acme_file,
    openb_files,
    pai_folder,
    write,
)

import analysim as asim
from analysim.inputs.workload import JOB_TYPES, STATES, Workload
from analysim.traces import (
    TraceError,
    detect_format,
    read_acme,
    read_csv_trace,
    read_folder,
    read_openb,
    read_pai,
)


def test_the_seren_sample_keeps_the_gpu_jobs_that_ran_with_times_in_utc(tmp_path):
    t = read_acme(acme_file(tmp_path))
    jobs = t.workload.jobs
    assert jobs["job_id"].tolist() == ["5778432", "5778469", "5778501", "5778504", "5778505"]
    # +08:00 times: the first submission (2023-02-28 16:18:22 UTC) is time 0
    assert jobs["submit_time"].tolist() == [0.0, 336.0, 2498.0, 9698.0, 11498.0]
    assert jobs["duration"].tolist() == [117.0, 2693.0, 86400.0, 600.0, 40.0]
    assert jobs["num_gpus"].tolist() == [8, 8, 1024, 4, 1]
    assert jobs["state"].tolist() == ["FAILED", "COMPLETED", "NODE_FAIL", "COMPLETED", None]
    assert jobs["trace_state"].tolist()[-1] == "PREEMPTED"
    assert jobs["job_type"].tolist() == ["Other", "Other", "Pretrain", None, "Debug"]
    assert jobs["trace_queue"].tolist() == [32.0, 13.0, 600.0, 1.0, 0.0]
    assert set(jobs["vc"]) == {"default"}
    # the cluster the file is named after: Seren, 286 nodes of 8 GPUs, no VCs
    assert t.cluster.name == "seren" and t.cluster.total_gpus == 2288
    assert len(t.cluster.nodes) == 286 and not t.cluster.partitioned


def test_the_report_counts_every_row_once_under_its_reason(tmp_path):
    report = read_acme(acme_file(tmp_path)).report
    assert report.read["jobs"] == 8 and report.kept["jobs"] == 5
    dropped = {
        r: report.count(r, outcome="dropped")
        for r in ("cpu_only", "never_started", "nonpositive_duration")
    }
    assert dropped == {"cpu_only": 1, "never_started": 1, "nonpositive_duration": 1}
    assert report.dropped() == 3
    assert report.examples("never_started") == ["line 6 (job_id='5778502'): start_time=None"]
    assert report.examples("unknown_state") == ["line 9 (job_id='5778505'): state='PREEMPTED'"]
    assert report.examples("unknown_type") == ["line 8 (job_id='5778504'): type='Probe'"]


def test_the_kalos_example_rows_read_with_their_extra_columns(tmp_path):
    t = read_acme(acme_file(tmp_path, ACME_KALOS, "trace_kalos.csv"))
    jobs = t.workload.jobs
    assert jobs["job_id"].tolist() == ["dlctk696s0jbvitv", "dlc1t2ypl09b8qtp"]
    # 11:28:42 - 11:00:58 = 1,664 s
    assert jobs["submit_time"].tolist() == [0.0, 1664.0]
    assert jobs["duration"].tolist() == [18.0, 82.0]
    assert jobs["state"].tolist() == ["FAILED", "CANCELLED"]
    assert t.cluster.name == "kalos" and t.cluster.total_gpus == 2416


def test_offsets_are_honoured_and_a_time_without_one_is_utc(tmp_path):
    rows = [
        "a,u1,1,8,8,SFT,COMPLETED,2023-03-01 08:00:00+08:00,2023-03-01 08:00:00+08:00,,60,0,",
        "b,u1,1,8,8,SFT,COMPLETED,2023-03-01 00:30:00,2023-03-01 00:30:00,,60,0,",
        "c,u1,1,8,8,SFT,COMPLETED,2023-03-01 01:00:00+00:00,2023-03-01 01:00:00+00:00,,60,0,",
    ]
    path = acme_file(tmp_path, ACME_HEADER + "\n" + "\n".join(rows) + "\n")
    jobs = read_acme(path).workload.jobs
    # 00:00 UTC, 00:30 UTC (no offset), 01:00 UTC
    assert jobs["submit_time"].tolist() == [0.0, 1800.0, 3600.0]


def test_a_window_keeps_the_jobs_submitted_in_it_with_times_from_its_start(tmp_path):
    t = read_acme(acme_file(tmp_path), start="2023-02-28 17:00:00", end="2023-02-28 19:15:00+00:00")
    jobs = t.workload.jobs
    # 01:00+08:00 is 17:00 UTC (time 0); 03:00+08:00 is 19:00; 03:30+08:00 is past the end
    assert jobs["job_id"].tolist() == ["5778501", "5778504"]
    assert jobs["submit_time"].tolist() == [0.0, 7200.0]
    assert t.report.count("outside_window") == 3


def test_another_file_name_needs_the_node_count(tmp_path):
    text = ACME_HEADER + "\n" + "\n".join(ACME_ROWS) + "\n"
    path = write(tmp_path / "mine.csv", text)
    with pytest.raises(ValueError, match="give nodes="):
        read_acme(path)
    t = read_acme(path, nodes=200)
    assert t.cluster.total_gpus == 1600 and t.cluster.name == "mine"


def test_a_folder_with_one_acme_trace_is_told_and_read(tmp_path):
    acme_file(tmp_path)
    folder = tmp_path / "acme"
    assert detect_format(folder) == "acme"
    assert len(read_folder(folder).workload) == 5
    acme_file(tmp_path, ACME_KALOS, "trace_kalos.csv")
    with pytest.raises(TraceError, match="holds both Acme traces"):
        read_folder(folder)


MALFORMED = {
    "no duration column": (
        ACME_HEADER.replace(",duration", "") + "\n" + ACME_ROWS[0].replace(",117,", ",") + "\n",
        "trace_seren.csv, line 1: missing column(s) 'duration'; expected a header with "
        "job_id, user, gpu_num, submit_time, duration, found job_id, user, node_num, "
        "gpu_num, cpu_num, type, state, submit_time, start_time, end_time, queue, gpu_time "
        "(file: TMP/acme/trace_seren.csv)",
    ),
    "times in another format": (
        ACME_HEADER
        + "\n"
        + ",".join(
            "01/03/2023" if "2023-03-01" in field else field for field in ACME_ROWS[0].split(",")
        )
        + "\n",
        "trace_seren.csv, line 2, column 'submit_time': no value of this time column "
        "parses; expected times like 2023-03-01 00:18:22+08:00 (or without the offset, "
        "UTC), found 01/03/2023 (file: TMP/acme/trace_seren.csv)",
    ),
    "a short line": (
        ACME_HEADER + "\n" + ACME_ROWS[0] + "\n" + "5778999,u1,1,8\n",
        "trace_seren.csv, line 3: 4 field(s) instead of 13; expected 13 comma-separated "
        "fields: job_id, user, node_num, gpu_num, cpu_num, type, state, submit_time, "
        "start_time, end_time, duration, queue, gpu_time, found 5778999,u1,1,8 "
        "(file: TMP/acme/trace_seren.csv)",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_acme_file_names_file_line_column_and_value(case, tmp_path):
    text, expected = MALFORMED[case]
    with pytest.raises(TraceError) as info:
        read_acme(acme_file(tmp_path, text))
    assert str(info.value).replace(str(tmp_path), "TMP") == expected


def test_bad_values_are_dropped_and_counted_under_their_reason(tmp_path):
    row = ACME_ROWS[0].split(",")
    bad_gpus = ",".join([row[0], row[1], row[2], "eight", *row[4:]])
    bad_time = ",".join([*row[:7], "2023-02-30 00:00:00+08:00", *row[8:]])
    good = ACME_ROWS[1]
    text = ACME_HEADER + "\n" + "\n".join([bad_gpus, bad_time, good]) + "\n"
    t = read_acme(acme_file(tmp_path, text))
    assert t.workload.jobs["job_id"].tolist() == ["5778469"]
    assert t.report.examples("bad_value") == ["line 2 (job_id='5778432'): gpu_num='eight'"]
    assert t.report.examples("unparseable_time") == [
        "line 3 (job_id='5778432'): submit_time='2023-02-30 00:00:00+08:00'"
    ]


# -- the state and job_type columns of a workload -------------------------------------------
def _jobs(**extra) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3"],
            "vc": "a",
            "user": "u",
            "submit_time": [0.0, 1.0, 2.0],
            "duration": [10.0, 10.0, 10.0],
            "num_gpus": [1, 2, 4],
        }
    )
    return frame.assign(**extra)


def test_a_workload_keeps_known_states_and_types_and_missing_ones_as_none():
    wl = Workload.from_frame(
        _jobs(state=["FAILED", None, "TIMEOUT"], job_type=["Pretrain", np.nan, ""])
    )
    assert wl.jobs["state"].tolist() == ["FAILED", None, "TIMEOUT"]
    assert wl.jobs["job_type"].tolist() == ["Pretrain", None, None]
    assert STATES == ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT")
    assert set(JOB_TYPES) == {"Pretrain", "SFT", "Eval", "MLLM", "Debug", "Other"}


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        (
            "state",
            ["COMPLETED", "Pass", "failed"],
            "Workload: column 'state' must be one of ['COMPLETED', 'FAILED', 'CANCELLED', "
            "'NODE_FAIL', 'TIMEOUT'], or missing; 2 bad row(s): row 1 (job_id='j2'): 'Pass', "
            "row 2 (job_id='j3'): 'failed'",
        ),
        (
            "job_type",
            ["SFT", 3, "Eval"],
            "Workload: column 'job_type' must be one of ['Pretrain', 'SFT', 'Eval', 'MLLM', "
            "'Debug', 'Other'], or missing; 1 bad row(s): row 1 (job_id='j2'): 3",
        ),
    ],
)
def test_an_unknown_state_or_type_names_row_column_and_value(column, values, message):
    with pytest.raises(ValueError) as info:
        Workload.from_frame(_jobs(**{column: values}))
    assert str(info.value) == message


def test_states_change_no_result():
    plain = asim.presets.workload("toy")
    jobs = plain.jobs.assign(state="FAILED", job_type="Eval")
    with_states = Workload.from_frame(jobs, name="toy")
    cluster = asim.presets.cluster("toy")
    a = asim.simulate(plain, cluster, scheduler="sjf").jobs
    b = asim.simulate(with_states, cluster, scheduler="sjf").jobs
    pd.testing.assert_frame_equal(a, b)


# -- each reader's words for a final state ------------------------------------------------------
def test_pai_and_openb_map_their_words_and_keep_them(tmp_path):
    pai = read_pai(pai_folder(tmp_path)).workload.jobs
    # Terminated ends finished and stopped jobs alike: no final state (docs/traces.md)
    assert pai["trace_state"].tolist() == ["Terminated", "Running", "Terminated"]
    assert pai["state"].tolist() == [None, None, None]
    openb = read_openb(*openb_files(tmp_path)).workload.jobs
    assert openb["trace_state"].tolist() == [
        "Running",
        "Succeeded",
        "Running",
        "Failed",
        "Running",
        "Succeeded",
    ]
    assert openb["state"].tolist() == [None, "COMPLETED", None, "FAILED", None, "COMPLETED"]


def test_a_csv_state_is_read_as_slurm_words_and_others_are_counted(tmp_path):
    text = (
        "job_id,submit_time,num_gpus,duration,state\n"
        "a,0,1,10,completed\nb,1,1,10,CANCELLED by 42\nc,2,1,10,Pass\nd,3,1,10,\n"
    )
    t = read_csv_trace(write(tmp_path / "jobs.csv", text))
    jobs = t.workload.jobs
    assert jobs["state"].tolist() == ["COMPLETED", "CANCELLED", None, None]
    assert jobs["trace_state"].tolist()[:3] == ["completed", "CANCELLED by 42", "Pass"]
    assert t.report.count("unknown_state") == 1
    assert t.report.examples("unknown_state") == ["line 4 (job_id='c'): state='Pass'"]
