"""read_openb on a small pod/node list worked by hand and on the real openb trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from trace_samples import OPENB_PODS, openb_files

import analysim as asim
from analysim.traces import read_openb

PLACERS = ["consolidate", "first_fit", "spread", "random", "topology"]


def test_the_sample_pods_become_jobs_with_shares_cpu_memory_and_cpu_only_pods(tmp_path):
    t = read_openb(*openb_files(tmp_path))
    jobs = t.workload.jobs.set_index("job_id")
    assert jobs.index.tolist() == [
        "openb-pod-0000",
        "openb-pod-0001",
        "openb-pod-0002",
        "openb-pod-0003",
        "openb-pod-0005",
        "openb-pod-0006",
    ]
    assert jobs["num_gpus"].tolist() == [1, 1, 0, 2, 8, 4]
    assert jobs["gpu_milli"].tolist() == [1000, 460, 0, 1000, 1000, 1000]
    assert jobs["cpu_milli"].tolist() == [12000, 6000, 8000, 8000, 8000, 8000]
    assert jobs["memory_mib"].tolist() == [16384, 12288, 8192, 8192, 8192, 8192]
    assert jobs.loc["openb-pod-0002", "duration"] == 770.0  # CPU-only: 130 to 900
    nodes = t.cluster.nodes
    assert nodes[["node", "cpu_milli", "memory_mib"]].values.tolist() == [
        ["openb-node-0000", 64000, 262144],
        ["openb-node-0001", 96000, 786432],
        ["openb-node-0002", 96000, 393216],
    ]
    report = t.report
    assert (report.read["pods"], report.kept["pods"], report.dropped()) == (7, 6, 1)
    assert report.examples("cpu_task") == ["line 4 (name='openb-pod-0002'): num_gpu=0"]
    assert report.examples("gpu_share") == ["line 3 (name='openb-pod-0001'): gpu_milli=460"]
    assert report.count("rounded_up_gpu") == report.count("cpu_only", table="pods") == 0
    # it runs in resource mode: the share holds 460 milli of one GPU, the CPU-only job none
    sim = asim.Simulation(t.workload, t.cluster, asim.SimConfig(placement="spread"))
    assert sim.resource_mode
    sim.run(until=130)
    gpus = sim.state.gpus
    assert sorted(gpus.loc[gpus["milli_used"] > 0, "milli_used"].tolist()) == [460, 1000]
    assert sim.state.nodes["cpu_used"].tolist() == [6000, 12000, 8000]


def test_pods_asking_for_more_cpu_or_memory_than_any_node_are_dropped(tmp_path):
    pods = OPENB_PODS.replace("openb-pod-0003,8000,8192,", "openb-pod-0003,99000,8192,")
    report = read_openb(*openb_files(tmp_path, pods=pods)).report
    assert report.examples("oversized")[0] == "line 5 (name='openb-pod-0003'): cpu_milli=99000"


def test_round_up_shares_reads_whole_gpus_as_before(tmp_path):
    t = read_openb(*openb_files(tmp_path), round_up_shares=True)
    assert not asim.Simulation(t.workload, t.cluster).resource_mode
    assert "cpu_milli" not in t.cluster.nodes.columns
    assert t.workload.jobs["pod_gpu_milli"].tolist() == [1000, 460, 1000, 1000, 1000]


def test_the_sample_pods_rounded_up_become_whole_gpu_jobs(tmp_path):
    t = read_openb(*openb_files(tmp_path), round_up_shares=True)
    jobs = t.workload.jobs.set_index("job_id")
    assert jobs.index.tolist() == [
        "openb-pod-0000",
        "openb-pod-0001",
        "openb-pod-0003",
        "openb-pod-0005",
        "openb-pod-0006",
    ]
    assert jobs["submit_time"].tolist() == [0.0, 100.0, 200.0, 400.0, 500.0]
    assert jobs["duration"].tolist() == [490.0, 250.0, 60.0, 550.0, 280.0]
    assert jobs["num_gpus"].tolist() == [1, 1, 2, 8, 4]
    assert jobs["gpu_type"].tolist() == [None, None, "V100M16|V100M32", None, "A100"]
    assert jobs["censored"].tolist() == [False, False, False, True, False]
    assert jobs["qos"].tolist() == ["LS", "BE", "LS", "Burstable", "LS"]
    assert t.cluster.nodes[["node", "gpus", "gpu_type", "rack"]].values.tolist() == [
        ["openb-node-0000", 2, "P100", "P100"],
        ["openb-node-0001", 8, "V100M32", "V100M32"],
        ["openb-node-0002", 8, "G2", "G2"],
    ]
    report = t.report
    assert report.tables == ["pods", "nodes"]
    assert (report.read["pods"], report.kept["pods"], report.dropped()) == (7, 5, 2)
    assert report.examples("cpu_only") == ["line 4 (name='openb-pod-0002'): num_gpu=0"]
    assert report.examples("never_started") == [
        "line 6 (name='openb-pod-0004'): pod_phase='Pending'"
    ]
    assert report.examples("rounded_up_gpu") == ["line 3 (name='openb-pod-0001'): gpu_milli=460"]
    assert report.examples("censored") == ["line 7 (name='openb-pod-0005'): deletion_time=1000"]
    assert report.examples("oversized") == ["line 8 (name='openb-pod-0006'): num_gpus=4"]
    assert report.count("cpu_only", table="nodes") == 1


def test_an_earlier_trace_end_cuts_the_pods_still_running_then(tmp_path):
    t = read_openb(*openb_files(tmp_path), trace_end=800)
    jobs = t.workload.jobs.set_index("job_id")
    # 0005 (Running, deleted at 1,000) is cut at 800, and so is the CPU-only 0002 (Running,
    # deleted at 900); 0000 (Running) was deleted at 500 and 0006 (deleted at 800) had
    # Succeeded: neither is censored
    assert jobs.loc["openb-pod-0005", "duration"] == 350.0
    assert jobs.loc["openb-pod-0002", "duration"] == 800.0 - 130
    assert jobs["censored"].tolist() == [False, False, True, False, True, False]


def test_the_gpu_spec_constraint_is_honoured_and_unmet_ones_are_unschedulable(tmp_path):
    t = read_openb(*openb_files(tmp_path))
    res = asim.simulate(t.workload, t.cluster, scheduler="fifo", placement="spread")
    jobs = res.jobs.set_index("job_id")
    assert jobs.loc["openb-pod-0003", "nodes"] == "openb-node-0001"  # the V100M32 node
    assert jobs.loc["openb-pod-0006", "status"] == "unschedulable"
    assert (jobs.drop(index="openb-pod-0006")["status"] == "done").all()


def test_describe_by_gpu_type_gives_the_demand_per_model_constraint(tmp_path):
    t = read_openb(*openb_files(tmp_path))
    table = t.workload.describe(t.cluster, by="gpu_type")
    assert table.index.tolist() == ["all", "A100", "V100M16|V100M32", "any"]
    assert table["jobs"].tolist() == [6, 1, 1, 4]  # the CPU-only pod asks for any model
    assert table["capacity_gpus"].tolist() == [18, 0, 8, 18]
    assert table.loc["V100M16|V100M32", "gpu_hours"] == pytest.approx(2 * 60 / 3600)


# -- the real openb trace ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(shared_data):
    return read_openb(
        shared_data / "openb" / "openb_pod_list_default.csv",
        shared_data / "openb" / "openb_node_list_gpu_node.csv",
    )


def test_the_real_openb_lists_load_with_every_row_accounted_for(real):
    report = real.report
    assert (report.read["pods"], report.kept["pods"]) == (8152, 7255)
    assert report.count("cpu_task") == 1052  # num_gpu 0, kept as CPU-only jobs
    assert report.count("never_started") == 897  # Pending pods (CPU-only ones too)
    assert report.read["pods"] == report.kept["pods"] + report.dropped()
    assert report.count("gpu_share") == 2573
    assert report.count("censored") == 34
    assert real.cluster.total_gpus == 6212 and len(real.cluster.nodes) == 1213
    jobs = real.workload.jobs
    assert jobs["num_gpus"].isin([0, 1, 2, 4, 8]).all()
    assert not ((jobs["gpu_milli"] < 1000) & (jobs["num_gpus"] > 1)).any()
    assert ((jobs["gpu_milli"] == 0) == (jobs["num_gpus"] == 0)).all()


def test_the_real_openb_lists_rounded_up_load_as_before(shared_data):
    folder = shared_data / "openb"
    report = read_openb(
        folder / "openb_pod_list_default.csv",
        folder / "openb_node_list_gpu_node.csv",
        round_up_shares=True,
    ).report
    assert (report.read["pods"], report.kept["pods"]) == (8152, 6203)
    assert report.count("cpu_only") == 1088  # num_gpu 0
    assert report.count("never_started") == 861  # Pending pods that ask for a GPU
    assert report.count("rounded_up_gpu") == 2573
    assert report.count("censored") == 32


@pytest.mark.parametrize("placement", PLACERS)
def test_the_real_openb_trace_simulates_with_each_placement_policy(real, placement):
    res = asim.simulate(real.workload, real.cluster, scheduler="fifo", placement=placement)
    jobs = res.jobs
    assert len(jobs) == 7255
    assert (jobs["status"] == "done").all()
    assert np.allclose(jobs["run_time"], jobs["duration"])
    assert (jobs["end_time"] >= jobs["submit_time"] + jobs["duration"] - 1e-6).all()


def test_describe_on_the_real_openb_trace_reports_demand_per_gpu_model(real, shared_data, tmp_path):
    table = real.workload.describe(real.cluster, by="gpu_type")
    # the default pod list has no gpu_spec: all demand is for any model
    assert table.index.tolist() == ["all", "any"]
    assert table.loc["any", "jobs"] == 7255
    # constrain every third pod to V100s (as the trace's gpuspec variants do) and read again
    pods = pd.read_csv(shared_data / "openb" / "openb_pod_list_default.csv")
    pods["gpu_spec"] = np.where(np.arange(len(pods)) % 3 == 0, "V100M16|V100M32", None)
    path = tmp_path / "pods.csv"
    pods.to_csv(path, index=False)
    nodes_path = shared_data / "openb" / "openb_node_list_gpu_node.csv"
    t = read_openb(path, nodes_path)
    table = t.workload.describe(t.cluster, by="gpu_type")
    assert table.index.tolist() == ["all", "V100M16|V100M32", "any"]
    nodes = pd.read_csv(nodes_path)
    v100 = int(nodes.loc[nodes["model"].isin(["V100M16", "V100M32"]), "gpu"].sum())
    assert table.loc["V100M16|V100M32", "capacity_gpus"] == v100
    kept = t.workload.jobs
    constrained = kept["gpu_type"].notna()
    assert table.loc["V100M16|V100M32", "jobs"] == constrained.sum()
    assert table.loc["any", "jobs"] == (~constrained).sum()
    # a share counts as its share of one GPU (500 milli for an hour: half a GPU-hour)
    held = kept["num_gpus"] * kept["gpu_milli"] / 1000
    gpu_hours = (held * kept["duration"])[constrained].sum() / 3600
    assert table.loc["V100M16|V100M32", "gpu_hours"] == pytest.approx(gpu_hours)


def test_values_that_are_not_finite_numbers_are_dropped_and_counted(tmp_path):
    pods = OPENB_PODS.replace("Running,0,500,10", "Running,0,inf,10").replace(
        "LS,Failed,200,260,200", "LS,Failed,soon,260,200"
    )
    report = read_openb(*openb_files(tmp_path, pods=pods)).report
    assert report.examples("bad_value") == [
        "line 5 (name='openb-pod-0003'): creation_time='soon'",
        "line 2 (name='openb-pod-0000'): deletion_time=inf",
    ]
    assert (report.read["pods"], report.kept["pods"]) == (7, 4)  # 0001, 0002 (CPU), 0005, 0006


def test_the_bundled_trace_keeps_every_gpu_node_and_task_with_resources():
    # two real nodes have 1 TiB of memory (1,048,576 MiB): resources are bounded by
    # MAX_NODE_AMOUNT, not by the GPU-count bound, so no real node is dropped
    shared = asim.traces.read_openb_tasks("bundled:openb")
    assert len(shared.nodes) == 1_213 and len(shared.tasks) == 8_152
    assert shared.nodes["memory_mib"].max() == 1_048_576
    trace = asim.traces.read_folder("bundled:openb")
    assert len(trace.cluster.nodes) == 1_213


def test_a_pod_list_without_deletion_times_ends_at_its_last_known_time(tmp_path):
    # every deletion time blanked: the Running pods run until the last creation or scheduling
    # time (520 s, pod 0006's start) and are censored there; the others have no end: dropped
    rows = OPENB_PODS.splitlines()
    blank = [rows[0]] + [",".join(r.split(",")[:9] + ["", r.split(",")[10]]) for r in rows[1:]]
    pods, nodes = openb_files(tmp_path, pods="\n".join(blank) + "\n")
    trace = read_openb(pods, nodes)
    jobs = trace.workload.jobs.set_index("job_id")
    # the Running pods (0002 is CPU-only)
    assert list(jobs.index) == ["openb-pod-0000", "openb-pod-0002", "openb-pod-0005"]
    assert jobs.loc["openb-pod-0000", "duration"] == 520 - 10
    assert jobs.loc["openb-pod-0002", "duration"] == 520 - 130
    assert jobs.loc["openb-pod-0005", "duration"] == 520 - 450
    assert trace.report.count("missing_value", "pods") == 3  # 0001, 0003, 0006: no end
    with pytest.raises(ValueError, match="trace_end must be a finite number"):
        read_openb(pods, nodes, trace_end=float("nan"))
