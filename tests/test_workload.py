"""Workload.from_frame: validation messages that name column, rows and values; describe()."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysim import Cluster, Workload


def jobs_frame(**changes) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3", "j4"],
            "vc": ["a", "b", "a", "b"],
            "user": ["alice", "bob", "alice", "carol"],
            "submit_time": [0.0, 10.0, 20.0, 30.0],
            "duration": [100.0, 200.0, 300.0, 400.0],
            "num_gpus": [1, 2, 4, 8],
        }
    )
    for column, values in changes.items():
        frame[column] = values
    return frame


def error_of(frame: pd.DataFrame, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        Workload.from_frame(frame, **kwargs)
    return str(info.value)


def test_a_valid_frame_keeps_every_row_with_canonical_dtypes():
    wl = Workload.from_frame(jobs_frame())
    assert len(wl) == 4
    assert wl.jobs["job_id"].tolist() == ["j1", "j2", "j3", "j4"]
    assert wl.jobs["num_gpus"].dtype == np.int64
    assert wl.jobs["submit_time"].dtype == np.float64
    assert wl.jobs["duration"].dtype == np.float64


@pytest.mark.parametrize("column", ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"])
def test_a_missing_column_is_named(column):
    message = error_of(jobs_frame().drop(columns=[column]))
    assert repr(column) in message
    assert "missing" in message


def test_a_duplicate_id_names_both_rows():
    message = error_of(jobs_frame(job_id=["j1", "j2", "j1", "j4"]))
    assert "'job_id'" in message
    assert "row 0" in message and "row 2" in message
    assert "'j1'" in message
    assert "row 1" not in message and "row 3" not in message


def test_a_negative_submit_time_is_named():
    message = error_of(jobs_frame(submit_time=[0.0, -5.0, 20.0, 30.0]))
    assert "'submit_time'" in message
    assert "row 1" in message and "'j2'" in message
    assert "-5" in message
    assert "row 0" not in message


@pytest.mark.parametrize("column", ["submit_time", "duration"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_time_is_named(column, value):
    values = jobs_frame()[column].tolist()
    values[2] = value
    message = error_of(jobs_frame(**{column: values}))
    assert repr(column) in message
    assert "row 2" in message and "'j3'" in message
    assert ("nan" if math.isnan(value) else "inf") in message


@pytest.mark.parametrize("value", [0.0, -10.0])
def test_a_duration_that_is_not_positive_is_named(value):
    message = error_of(jobs_frame(duration=[100.0, 200.0, value, 400.0]))
    assert "'duration'" in message
    assert "row 2" in message and "'j3'" in message
    assert str(value).rstrip("0").rstrip(".") in message


@pytest.mark.parametrize("value", [0, -1, 2.5])
def test_a_bad_gpu_count_is_named(value):
    message = error_of(jobs_frame(num_gpus=[1, value, 4, 8]))
    assert "'num_gpus'" in message
    assert "row 1" in message and "'j2'" in message
    assert str(value) in message
    assert "whole number" in message


def test_a_non_numeric_value_is_named():
    message = error_of(jobs_frame(duration=[100, 200, "abc", 400]))
    assert "'duration'" in message
    assert "numeric" in message
    assert "row 2" in message and "'abc'" in message


def test_several_bad_rows_are_all_named():
    message = error_of(jobs_frame(submit_time=[-1.0, 10.0, -3.0, 30.0]))
    assert "2 bad row(s)" in message
    assert "row 0" in message and "row 2" in message


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_vc_is_named(value):
    message = error_of(jobs_frame(vc=["a", "b", value, "b"]))
    assert "'vc'" in message
    assert "row 2" in message and "'j3'" in message


def test_an_unknown_vc_is_named_when_vcs_are_given():
    message = error_of(jobs_frame(vc=["a", "b", "zz", "b"]), vcs=["a", "b"])
    assert "'vc'" in message
    assert "row 2" in message and "'zz'" in message
    assert "['a', 'b']" in message  # the VCs it could have been
    # without vcs= any label is fine
    assert len(Workload.from_frame(jobs_frame(vc=["a", "b", "zz", "b"]))) == 4


def test_not_a_frame_is_a_type_error():
    with pytest.raises(TypeError, match="DataFrame"):
        Workload.from_frame({"job_id": ["j1"]})


def test_rows_are_sorted_by_submit_time_stably_and_nothing_is_dropped():
    frame = jobs_frame(submit_time=[5.0, 0.0, 5.0, 0.0])
    wl = Workload.from_frame(frame)
    assert wl.jobs["job_id"].tolist() == ["j2", "j4", "j1", "j3"]
    assert wl.jobs["submit_time"].tolist() == [0.0, 0.0, 5.0, 5.0]
    assert list(wl.jobs.index) == [0, 1, 2, 3]
    # the caller's frame is left alone
    assert frame["job_id"].tolist() == ["j1", "j2", "j3", "j4"]


def test_extra_columns_are_kept():
    frame = jobs_frame()
    frame["model"] = ["resnet", "bert", "gpt", "vit"]
    frame["checkpoint_cost"] = [1.0, 2.0, 3.0, 4.0]
    jobs = Workload.from_frame(frame).jobs
    assert jobs["model"].tolist() == ["resnet", "bert", "gpt", "vit"]
    assert jobs["checkpoint_cost"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_optional_columns_are_kept_and_typed():
    frame = jobs_frame()
    frame["gpu_type"] = ["V100", None, "A100|V100", "A100"]
    frame["priority"] = [1, 2, 3, 4]
    jobs = Workload.from_frame(frame).jobs
    assert jobs["gpu_type"].tolist() == ["V100", None, "A100|V100", "A100"]
    assert jobs["priority"].dtype == np.float64


def test_whole_float_gpu_counts_become_integers():
    jobs = Workload.from_frame(jobs_frame(num_gpus=[1.0, 2.0, 4.0, 8.0])).jobs
    assert jobs["num_gpus"].dtype == np.int64
    assert jobs["num_gpus"].tolist() == [1, 2, 4, 8]


# -- describe ------------------------------------------------------------------------------------
THREE = pd.DataFrame(
    {
        "job_id": ["j1", "j2", "j3"],
        "vc": ["a", "b", "a"],
        "user": ["alice", "bob", "carol"],
        "submit_time": [0.0, 100.0, 1000.0],  # span 1000 s
        "duration": [3600.0, 1800.0, 360.0],
        "num_gpus": [2, 4, 1],  # 7200 + 7200 + 360 GPU-seconds
    }
)


def test_describe_by_hand():
    wl = Workload.from_frame(THREE)
    assert wl.gpu_hours == pytest.approx(14760 / 3600)
    assert wl.span == 1000.0
    table = wl.describe()
    assert table.index.tolist() == ["all", "a", "b"]
    assert table["jobs"].tolist() == [3, 2, 1]
    assert table["users"].tolist() == [3, 2, 1]
    assert table["gpu_hours"].tolist() == pytest.approx([4.1, 2.1, 2.0])
    assert table["offered_gpus"].tolist() == pytest.approx([14.76, 7.56, 7.2])
    assert table["mean_duration"].tolist() == pytest.approx([1920.0, 1980.0, 1800.0])
    assert table["max_gpus"].tolist() == [4, 2, 4]
    assert "offered_load" not in table.columns


def test_describe_with_a_cluster_gives_offered_load():
    # a owns one 8-GPU node; b holds a 4-GPU quota over the other, unowned, 8-GPU node
    nodes = pd.DataFrame(
        {"node": ["n0", "n1"], "rack": ["r0", "r0"], "gpus": [8, 8], "vc": ["a", None]}
    )
    cluster = Cluster.from_frame(nodes, quotas={"b": 4})
    table = Workload.from_frame(THREE).describe(cluster)
    assert table["capacity_gpus"].tolist() == [16, 8, 4]
    assert table["offered_load"].tolist() == pytest.approx([14.76 / 16, 7.56 / 8, 7.2 / 4])
