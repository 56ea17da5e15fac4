"""A ``Workload`` or ``Cluster`` cannot be changed after validation: what ``jobs``/``nodes``
give is a copy (sharing the data until edited), so an edit never reaches the engine; and
``describe`` counts a share of one GPU as its share."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

import analysim as asim
from analysim import Cluster, Workload, presets, simulate


@pytest.fixture
def toy() -> tuple[Workload, Cluster]:
    return presets.workload("toy"), presets.cluster("toy")


def test_editing_the_jobs_frame_does_not_change_the_workload(toy):
    workload, cluster = toy
    before = simulate(workload, cluster).summary()
    jobs = workload.jobs
    jobs.loc[0, "duration"] = -1.0  # would be refused by from_frame
    jobs.loc[1, "num_gpus"] = 10**9
    jobs["submit_time"] = np.nan
    assert workload.jobs["duration"].iloc[0] == 600.0
    assert workload.jobs["submit_time"].notna().all()
    pd.testing.assert_series_equal(simulate(workload, cluster).summary(), before)


def test_the_arrays_of_a_workload_are_read_only(toy):
    workload, _ = toy
    with pytest.raises(ValueError, match="read-only"):
        workload.jobs["duration"].to_numpy()[0] = -1.0
    assert workload.jobs["duration"].iloc[0] == 600.0


def test_a_workload_and_a_cluster_refuse_new_attributes(toy):
    workload, cluster = toy
    with pytest.raises(FrozenInstanceError, match="from_frame"):
        workload.jobs = pd.DataFrame()
    with pytest.raises(FrozenInstanceError):
        workload.name = "other"
    with pytest.raises(FrozenInstanceError, match="from_frame"):
        cluster.nodes = pd.DataFrame()


def test_editing_the_nodes_frame_or_quotas_does_not_change_the_cluster():
    cluster = presets.cluster("toy", partition="quota")
    nodes = cluster.nodes
    nodes.loc[0, "gpus"] = 10**6
    cluster.quotas["a"] = 10**6
    assert cluster.total_gpus == 16
    assert cluster.quotas == {"a": 8, "b": 8}


def test_an_edited_frame_is_validated_when_a_new_workload_is_built(toy):
    jobs = toy[0].jobs
    jobs.loc[0, "duration"] = -1.0
    with pytest.raises(ValueError, match="duration"):
        Workload.from_frame(jobs)


def test_workloads_and_clusters_pickle_as_they_were(toy):
    workload, cluster = toy
    again = pickle.loads(pickle.dumps(workload))
    pd.testing.assert_frame_equal(again.jobs, workload.jobs)
    assert again.name == workload.name
    back = pickle.loads(pickle.dumps(cluster))
    pd.testing.assert_frame_equal(back.nodes, cluster.nodes)
    assert back.quotas == cluster.quotas and back.vcs == cluster.vcs


def test_describe_counts_a_share_of_one_gpu_as_its_share():
    jobs = pd.DataFrame(
        {
            "job_id": ["half", "whole"],
            "vc": ["v", "v"],
            "user": ["u", "u"],
            "submit_time": [0.0, 0.0],
            "duration": [3600.0, 3600.0],
            "num_gpus": [1, 2],
            "gpu_milli": [500, 1000],
        }
    )
    workload = Workload.from_frame(jobs)
    assert workload.describe().loc["all", "gpu_hours"] == pytest.approx(2.5)
    assert workload.gpu_hours == pytest.approx(2.5)


def test_durations_given_as_timedeltas_are_seconds():
    jobs = presets.TOY_JOBS.assign(duration=pd.to_timedelta(presets.TOY_JOBS["duration"], "s"))
    workload = Workload.from_frame(jobs)
    assert workload.jobs["duration"].tolist() == presets.TOY_JOBS["duration"].tolist()
    submit = pd.to_timedelta(presets.TOY_JOBS["submit_time"], "s")
    again = Workload.from_frame(presets.TOY_JOBS.assign(submit_time=submit))
    assert again.jobs["submit_time"].tolist() == presets.TOY_JOBS["submit_time"].tolist()


def test_date_times_as_submit_times_are_refused_naming_the_column():
    stamps = pd.Timestamp("2020-01-01") + pd.to_timedelta(presets.TOY_JOBS["submit_time"], "s")
    with pytest.raises(ValueError, match="submit_time.*not date-times"):
        Workload.from_frame(presets.TOY_JOBS.assign(submit_time=stamps))


def test_the_package_still_exports_the_classes():
    assert asim.Workload is Workload and asim.Cluster is Cluster


@pytest.mark.parametrize("time", [float("nan"), float("inf"), -1.0, "10", None, True])
def test_explain_refuses_a_time_that_is_not_a_moment_naming_it(toy, time):
    from analysim.results.explain import explain, waiting_jobs, why_waiting

    result = simulate(*toy)
    for ask in (
        lambda: explain(result, "j4", time),
        lambda: why_waiting(result, "j4", time),
        lambda: waiting_jobs(result, time),
    ):
        with pytest.raises(ValueError, match="time"):
            ask()
