"""Cluster: construction, round trips, invalid specs, VC capacity, and jobs that cannot fit."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from analysim import Cluster, Workload, simulate


def nodes_frame(**changes) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "node": ["n0", "n1", "n2", "n3"],
            "rack": ["r0", "r0", "r1", "r1"],
            "gpus": [8, 4, 2, 8],
            "gpu_type": ["V100", "A100", "V100", "A100"],
            "vc": ["a", "a", "b", None],
        }
    )
    for column, values in changes.items():
        frame[column] = values
    return frame


def workload(rows) -> Workload:
    """Jobs from (job_id, vc, submit, duration, gpus[, gpu_type]) tuples."""
    columns = ["job_id", "vc", "submit_time", "duration", "num_gpus", "gpu_type"]
    rows = [tuple(r) + (None,) * (6 - len(r)) for r in rows]
    frame = pd.DataFrame(rows, columns=columns).assign(user="u")
    return Workload.from_frame(frame)


# -- construction ----------------------------------------------------------------------------
def test_from_frame_keeps_heterogeneous_nodes():
    cluster = Cluster.from_frame(nodes_frame(), quotas={"c": 4})
    nodes = cluster.nodes
    assert nodes["node"].tolist() == ["n0", "n1", "n2", "n3"]
    assert nodes["gpus"].tolist() == [8, 4, 2, 8]
    assert nodes["gpu_type"].tolist() == ["V100", "A100", "V100", "A100"]
    assert nodes["vc"].fillna("-").tolist() == ["a", "a", "b", "-"]
    assert cluster.total_gpus == 22
    assert cluster.pool_gpus == 8
    assert cluster.vcs == ["a", "b", "c"]
    assert cluster.partitioned
    assert cluster.vc_capacity() == {"a": 12, "b": 2, "c": 4}


def test_gpu_type_and_vc_are_optional():
    cluster = Cluster.from_frame(nodes_frame().drop(columns=["gpu_type", "vc"]))
    assert cluster.nodes["gpu_type"].tolist() == ["gpu"] * 4
    assert cluster.nodes["vc"].isna().all()
    assert not cluster.partitioned
    assert cluster.vcs == []
    assert cluster.vc_capacity() == {}
    assert cluster.pool_gpus == cluster.total_gpus == 22


def test_uniform():
    cluster = Cluster.uniform(2, 3, 4, gpu_type="A100", vc_nodes={"a": 2, "b": 1}, quotas={"c": 8})
    nodes = cluster.nodes
    assert len(nodes) == 6
    assert nodes["rack"].tolist() == ["r0", "r0", "r0", "r1", "r1", "r1"]
    assert (nodes["gpus"] == 4).all() and (nodes["gpu_type"] == "A100").all()
    assert nodes["vc"].fillna("-").tolist() == ["a", "a", "b", "-", "-", "-"]
    assert nodes["node"].is_unique
    assert cluster.vc_capacity() == {"a": 8, "b": 4, "c": 8}
    assert cluster.pool_gpus == 12


def test_uniform_with_more_vc_nodes_than_nodes_fails():
    with pytest.raises(ValueError, match="5 nodes but there are 4"):
        Cluster.uniform(2, 2, 4, vc_nodes={"a": 3, "b": 2})


@pytest.mark.parametrize(
    "cluster",
    [
        Cluster.from_frame(nodes_frame(), quotas={"c": 4}, name="mixed"),
        Cluster.uniform(2, 2, 4, vc_nodes={"a": 1}, quotas={"b": 4, "c": 8}),
        Cluster.uniform(1, 3, 8),
    ],
)
def test_to_dict_from_dict_round_trip(cluster):
    spec = cluster.to_dict()
    again = Cluster.from_dict(json.loads(json.dumps(spec)))  # JSON-serialisable
    pd.testing.assert_frame_equal(again.nodes, cluster.nodes)
    assert again.quotas == cluster.quotas
    assert again.name == cluster.name
    assert again.to_dict() == spec


def test_from_dict_with_uniform_arguments():
    spec = {"racks": 2, "nodes_per_rack": 2, "gpus_per_node": 4, "vc_nodes": {"a": 2}}
    cluster = Cluster.from_dict(spec)
    assert cluster.total_gpus == 16
    assert cluster.vc_capacity() == {"a": 8}


def test_from_dict_without_nodes_or_sizes_fails():
    with pytest.raises(ValueError, match="'nodes' or racks"):
        Cluster.from_dict({"racks": 2})


# -- invalid specs ---------------------------------------------------------------------------
def test_a_node_in_two_vcs_is_named():
    frame = nodes_frame(node=["n0", "n1", "n0", "n3"])  # n0 listed for VC a and VC b
    with pytest.raises(ValueError) as info:
        Cluster.from_frame(frame)
    message = str(info.value)
    assert "'node'" in message
    assert "row 0" in message and "row 2" in message and "'n0'" in message


def test_quotas_above_the_shared_pool_fail():
    with pytest.raises(ValueError) as info:
        Cluster.from_frame(nodes_frame(), quotas={"c": 5, "d": 4})  # pool is n3's 8 GPUs
    message = str(info.value)
    assert "9" in message and "8" in message
    # exactly the pool is fine
    assert Cluster.from_frame(nodes_frame(), quotas={"c": 4, "d": 4}).vc_capacity()["d"] == 4


def test_a_vc_owning_nodes_and_holding_a_quota_fails():
    with pytest.raises(ValueError, match="'a' both owns nodes and holds a quota"):
        Cluster.from_frame(nodes_frame(), quotas={"a": 2})


@pytest.mark.parametrize("quota", [-1, 2.5])
def test_a_bad_quota_fails(quota):
    nodes = nodes_frame(vc=None)
    with pytest.raises(ValueError, match="quota"):
        Cluster(Cluster.from_frame(nodes).nodes, {"c": quota})


@pytest.mark.parametrize("value", [0, -4, 2.5, "x", None])
def test_a_bad_gpus_value_is_named(value):
    frame = nodes_frame()
    frame["gpus"] = frame["gpus"].astype(object)
    frame.loc[1, "gpus"] = value
    with pytest.raises(ValueError) as info:
        Cluster.from_frame(frame)
    message = str(info.value)
    assert "'gpus'" in message
    assert "row 1" in message and "'n1'" in message


def test_a_missing_column_is_named():
    with pytest.raises(ValueError, match="'rack'"):
        Cluster.from_frame(nodes_frame().drop(columns=["rack"]))


def test_an_empty_nodes_table_fails():
    with pytest.raises(ValueError, match="empty"):
        Cluster.from_frame(nodes_frame().iloc[:0])


# -- jobs and VCs -------------------------------------------------------------------------------
def test_a_job_of_an_unknown_vc_names_the_row_and_vc():
    cluster = Cluster.uniform(1, 2, 4, vc_nodes={"a": 1, "b": 1})
    wl = workload([("j1", "a", 0, 10, 1), ("j2", "zz", 5, 10, 1)])
    with pytest.raises(ValueError) as info:
        simulate(wl, cluster)
    message = str(info.value)
    assert "'vc'" in message and "'zz'" in message
    assert "row 1" in message and "'j2'" in message
    assert "['a', 'b']" in message


def test_any_vc_label_runs_on_an_unpartitioned_cluster():
    res = simulate(
        workload([("j1", "x", 0, 10, 1), ("j2", "y", 0, 10, 4)]), Cluster.uniform(1, 1, 4)
    )
    assert (res.jobs["status"] == "done").all()


def _check_unschedulable(res, rejected: set[str]):
    jobs = res.jobs.set_index("job_id")
    assert set(jobs.index[jobs["status"] == "unschedulable"]) == rejected
    assert set(res.unschedulable["job_id"]) == rejected
    assert (jobs.drop(index=list(rejected))["status"] == "done").all()
    assert res.summary()["unschedulable"] == len(rejected)
    assert res.summary()["finished"] == len(jobs) - len(rejected)
    for job_id in rejected:
        assert jobs.loc[job_id, ["start_time", "end_time", "jct"]].isna().all()
        seen = res.events[res.events["job_id"] == job_id]
        assert seen["event"].tolist() == ["unschedulable"]
        assert seen["time"].tolist() == [jobs.loc[job_id, "submit_time"]]


def test_a_job_larger_than_its_vc_is_unschedulable_while_the_rest_run(caplog):
    # a owns 4 GPUs, b owns 12: an 8-GPU job of a can never run, although the cluster has 16
    cluster = Cluster.uniform(2, 2, 4, vc_nodes={"a": 1, "b": 3})
    wl = workload([("j1", "a", 0, 100, 4), ("j2", "a", 10, 100, 8), ("j3", "b", 20, 100, 8)])
    with caplog.at_level(logging.WARNING, logger="analysim"):
        res = simulate(wl, cluster)
    _check_unschedulable(res, {"j2"})
    assert "unschedulable" in caplog.text
    jobs = res.jobs.set_index("job_id")
    assert jobs.loc["j1", "end_time"] == 100.0
    assert jobs.loc["j3", "end_time"] == 120.0
    per_vc = res.summary(by="vc")
    assert per_vc.loc["a", "unschedulable"] == 1
    assert per_vc.loc["b", "unschedulable"] == 0


def test_a_job_larger_than_its_quota_is_unschedulable():
    cluster = Cluster.uniform(1, 2, 4, quotas={"a": 2, "b": 6})
    wl = workload([("j1", "a", 0, 100, 4), ("j2", "b", 0, 100, 4), ("j3", "a", 0, 50, 2)])
    res = simulate(wl, cluster)
    _check_unschedulable(res, {"j1"})


def test_a_job_asking_for_a_missing_gpu_type_is_unschedulable():
    cluster = Cluster.uniform(1, 2, 4, gpu_type="V100")
    wl = workload(
        [("j1", "a", 0, 100, 1, "A100"), ("j2", "a", 0, 100, 1, "V100"), ("j3", "a", 0, 100, 1)]
    )
    res = simulate(wl, cluster)
    _check_unschedulable(res, {"j1"})


def test_a_job_asking_for_more_of_a_type_than_exists_is_unschedulable():
    # 12 A100s in two nodes and 10 V100s: a 13-GPU A100 job can never run, a 13-GPU job of
    # either type can (spread over the 22 GPUs)
    cluster = Cluster.from_frame(nodes_frame(vc=None))
    wl = workload([("big_a100", "x", 0, 10, 13, "A100"), ("big_any", "x", 0, 10, 13, "V100|A100")])
    res = simulate(wl, cluster)
    _check_unschedulable(res, {"big_a100"})


def test_a_typed_job_runs_only_on_its_type():
    nodes = nodes_frame(vc=None)
    cluster = Cluster.from_frame(nodes)
    kinds = dict(zip(nodes["node"], nodes["gpu_type"], strict=True))
    rows = [(f"j{i}", "x", i, 50, 2, t) for i, t in enumerate(["A100", "V100"] * 4)]
    for placement in ("first_fit", "consolidate", "spread", "topology", "random"):
        res = simulate(workload(rows), cluster, placement=placement)
        for job in res.jobs.itertuples():
            assert {kinds[n] for n in job.nodes.split(",")} == {job.gpu_type}, placement


def test_either_type_may_use_both():
    # one 4-GPU V100 node and one 4-GPU A100 node; two 4-GPU jobs that accept either run side
    # by side, and an 8-GPU one spans both types
    nodes = pd.DataFrame(
        {"node": ["v", "a"], "rack": ["r0", "r0"], "gpus": [4, 4], "gpu_type": ["V100", "A100"]}
    )
    cluster = Cluster.from_frame(nodes)
    wl = workload(
        [
            ("j1", "x", 0, 100, 4, "V100|A100"),
            ("j2", "x", 0, 100, 4, "V100|A100"),
            ("j3", "x", 0, 100, 8, "A100|V100"),
            ("j4", "x", 0, 100, 4, "A100"),
        ]
    )
    res = simulate(wl, cluster)
    jobs = res.jobs.set_index("job_id")
    assert (jobs["status"] == "done").all()
    assert jobs.loc["j1", "start_time"] == jobs.loc["j2", "start_time"] == 0.0
    assert {jobs.loc["j1", "nodes"], jobs.loc["j2", "nodes"]} == {"v", "a"}
    assert set(jobs.loc["j3", "nodes"].split(",")) == {"v", "a"}
    assert jobs.loc["j4", "nodes"] == "a"


@pytest.mark.parametrize("quota", [3.9, 2.5, "x"])
def test_a_bad_quota_given_to_from_frame_names_the_vc(quota):
    # regression: from_frame once truncated quotas with int() (3.9 -> 3)
    nodes = nodes_frame(vc=None)
    with pytest.raises(ValueError, match="quota of VC 'c'"):
        Cluster.from_frame(nodes, quotas={"c": quota})
