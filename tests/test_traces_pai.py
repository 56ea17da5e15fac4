"""read_pai on small header-less tables worked by hand."""

from __future__ import annotations

from trace_samples import PAI_JOBS, PAI_MACHINES, PAI_TASKS, pai_folder

import analysim as asim
from analysim.traces import read_pai


def test_gpus_are_whole_per_instance_and_times_come_from_the_tasks(tmp_path):
    t = read_pai(pai_folder(tmp_path))
    jobs = t.workload.jobs.set_index("job_id")
    assert jobs.index.tolist() == ["j1", "j3", "j5"]
    # j1: two workers of 50% each hold a GPU each; from its first task start (1,005) to its
    # last task end (4,100). j3 runs from 2,100 to the last time in the tables (5,000).
    assert jobs["num_gpus"].tolist() == [2, 2, 16]
    assert jobs["duration"].tolist() == [3095.0, 2900.0, 90.0]
    assert jobs["submit_time"].tolist() == [0.0, 1000.0, 2000.0]
    assert jobs["gpu_type"].tolist() == ["T4", "V100", "V100"]
    assert jobs["user"].tolist() == ["u1", "u1", "u2"]
    assert jobs["censored"].tolist() == [False, True, False]
    assert t.cluster.nodes[["node", "gpus", "gpu_type"]].values.tolist() == [
        ["m1", 2, "T4"],
        ["m2", 8, "V100"],
    ]


def test_the_report_names_each_table_and_reason(tmp_path):
    report = read_pai(pai_folder(tmp_path)).report
    assert report.tables == ["jobs", "machines", "tasks"]
    assert report.examples("cpu_only") == ["line 2 (job_name='j2'): plan_gpu*inst_num/100=0.0"]
    assert report.examples("never_started") == ["line 4 (job_name='j4'): status='Waiting'"]
    assert report.examples("rounded_up_gpu") == [
        "line 1 (job_name='j1'): plan_gpu*inst_num/100=1.0"
    ]
    assert report.examples("oversized") == ["line 5 (job_name='j5'): num_gpus=16"]
    assert report.examples("orphan_task", table="tasks") == [
        "line 7 (job_name='j9'): job_name='j9'"
    ]
    assert report.examples("cpu_only", table="machines") == ["line 3 (machine='m3'): cap_gpu=0"]
    assert report.read == {"machines": 3, "jobs": 5, "tasks": 7}
    assert report.kept == {"machines": 2, "jobs": 3, "tasks": 6}


def test_without_the_constraint_the_gpu_type_is_kept_aside(tmp_path):
    t = read_pai(pai_folder(tmp_path), gpu_type_constraint=False)
    assert "gpu_type" not in t.workload.jobs.columns
    assert t.workload.jobs["trace_gpu_type"].tolist() == ["T4", "V100", "V100"]
    # no constraint: 16 GPUs still exceed the 10 of the whole cluster
    assert t.report.count("oversized") == 1


def test_a_job_whose_tasks_ran_on_two_types_accepts_either(tmp_path):
    tasks = PAI_TASKS + "j1,evaluator,1.0,Terminated,1010.0,2000.0,100.0,1.0,100.0,V100\n"
    t = read_pai(pai_folder(tmp_path, tasks=tasks))
    j1 = t.workload.jobs.set_index("job_id").loc["j1"]
    assert (j1["gpu_type"], j1["num_gpus"]) == ("T4|V100", 3)


def test_a_header_line_equal_to_the_column_names_is_skipped(tmp_path):
    header = "machine,gpu_type,cap_cpu,cap_mem,cap_gpu\n"
    t = read_pai(pai_folder(tmp_path, machines=header + PAI_MACHINES, jobs=PAI_JOBS))
    assert t.cluster.total_gpus == 10
    assert t.report.examples("cpu_only", table="machines") == ["line 4 (machine='m3'): cap_gpu=0"]


def test_the_trace_simulates_end_to_end(tmp_path):
    t = read_pai(pai_folder(tmp_path))
    res = asim.simulate(t.workload, t.cluster, scheduler="fifo")
    jobs = res.jobs.set_index("job_id")
    assert jobs.loc["j5", "status"] == "unschedulable"
    assert jobs.loc["j1", "nodes"] == "m1"
    assert jobs.loc["j3", "nodes"] == "m2"
