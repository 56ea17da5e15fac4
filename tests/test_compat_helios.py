"""``simulate(..., compat="helios")``: the Helios simulator's rules, worked by hand, and
per-job equality with a literal per-second reference (``tests/helios_reference``).

Every VC below owns nodes of 8 GPUs. Each hand-worked expectation says why, step by step,
following the rules in ``docs/compat.md``.
"""

from __future__ import annotations

import pandas as pd
import pytest
from helios_reference import simulator as reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.compat.helios_placer import place

# -- helpers --------------------------------------------------------------------------------


def cluster(**vc_nodes: int) -> asim.Cluster:
    """VCs owning ``n`` nodes of 8 GPUs each, in the order given (nodes n0, n1, ...)."""
    total = sum(vc_nodes.values())
    return asim.Cluster.uniform(1, total, 8, vc_nodes=vc_nodes)


def workload(rows: list[tuple]) -> asim.Workload:
    """Rows of (job_id, vc, submit_time, duration, num_gpus)."""
    frame = pd.DataFrame(rows, columns=["job_id", "vc", "submit_time", "duration", "num_gpus"])
    frame["user"] = "u"
    return asim.Workload.from_frame(frame)


def replay(rows: list[tuple], scheduler: str, **vc_nodes: int) -> pd.DataFrame:
    result = asim.simulate(
        workload(rows), cluster(**(vc_nodes or {"a": 1})), compat="helios", scheduler=scheduler
    )
    return result.jobs.set_index("job_id")


def spans(jobs: pd.DataFrame) -> dict[str, tuple[float, float]]:
    return {j: (row.start_time, row.end_time) for j, row in jobs.iterrows()}


# -- the consolidate placer -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("free", "n", "expected"),
    [
        # <= 8 GPUs: the node with the fewest free GPUs that still fits, ties lowest index
        ([8, 3, 5, 3], 3, [(1, 3)]),
        ([8, 3, 5, 3], 4, [(2, 4)]),
        ([6, 8, 8], 8, [(1, 8)]),
        ([2, 2], 4, None),  # 4 free GPUs in all, but on no single node
        # k x 8 GPUs: k completely free nodes, the lowest-numbered
        ([8, 2, 8, 8], 16, [(0, 8), (2, 8)]),
        ([8, 7, 7], 16, None),  # 22 free GPUs, one free node
        ([8, 8, 8], 24, [(0, 8), (1, 8), (2, 8)]),
        # other sizes: n // 8 free nodes, then n % 8 on the next node by most free GPUs
        ([8, 8, 2], 10, [(0, 8), (1, 2)]),  # another free node, not the exact fit n2
        ([8, 3, 5], 10, [(0, 8), (2, 2)]),  # the most free partly used node, not best fit
        ([8, 3, 3], 12, None),  # that node (n1, 3 free, ties lowest) has fewer than 4
        ([8, 8, 8], 20, [(0, 8), (1, 8), (2, 4)]),
        ([8, 0, 4], 12, [(0, 8), (2, 4)]),
        ([8, 2, 4], 17, None),  # 14 free GPUs in all: too few
    ],
)
def test_consolidate_placer_by_hand(free, n, expected):
    assert place(list(free), n, sum(free)) == expected


@settings(max_examples=300, deadline=None)
@given(
    free=st.lists(st.integers(0, 8), min_size=1, max_size=6),
    n=st.sampled_from([1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 20, 24, 30, 32, 40]),
)
def test_consolidate_placer_matches_the_reference(free, n):
    vc = reference.VirtualCluster(len(free))
    vc.free = list(free)
    job = {"gpu_num": n, "nodes": []}
    placed = vc.place(job)
    ours = place(list(free), n, sum(free))
    assert (ours is not None) == placed
    if placed:
        assert ours == job["nodes"]


# -- fifo and sjf ---------------------------------------------------------------------------

HOL = [
    ("j1", "a", 0, 100, 8),
    ("j2", "a", 0, 50, 4),
    ("j3", "a", 10, 30, 16),
    ("j4", "a", 20, 10, 2),
]


def test_fifo_blocks_the_head_of_line_and_reuses_freed_gpus_in_the_same_second():
    # t=0: j1 takes n0 (all nodes free: lowest index); j2 goes to n1, the only node left.
    # t=10: j3 needs both nodes whole and waits; j4 (t=20) waits behind it (strict FIFO).
    # t=100: j1 ends and in the same second j3 starts on n0, n1 (j2 freed n1 at t=50).
    jobs = replay(HOL, "fifo", a=2)
    assert spans(jobs) == {"j1": (0, 100), "j2": (0, 50), "j3": (100, 130), "j4": (130, 140)}
    assert jobs["queue_delay"].to_dict() == {"j1": 0, "j2": 0, "j3": 90, "j4": 110}
    assert jobs["jct"].to_dict() == {"j1": 100, "j2": 50, "j3": 120, "j4": 120}
    assert jobs["nodes"].astype(str).to_dict() == {
        "j1": "n0",
        "j2": "n1",
        "j3": "n0,n1",
        "j4": "n0",
    }


def test_sjf_orders_by_true_duration():
    # t=0: j2 (50 s) before j1 (100 s): j2 -> n0 (tie: lowest index); j1 -> n1, the only
    # node with 8 free. t=20: j4 (10 s) ranks above j3 (30 s) and fits on n0 (4 free).
    # t=100: j1 ends; j3 starts at once on n0, n1.
    jobs = replay(HOL, "sjf", a=2)
    assert spans(jobs) == {"j1": (0, 100), "j2": (0, 50), "j3": (100, 130), "j4": (20, 30)}
    assert jobs["nodes"].astype(str).to_dict() == {
        "j1": "n1",
        "j2": "n0",
        "j3": "n0,n1",
        "j4": "n0",
    }


def test_sjf_breaks_ties_by_submit_order():
    # One node. jA holds it until 100; then jD (20 s) first, then jB before jC (both 50 s,
    # jB submitted first), each starting the second the previous one ends.
    rows = [
        ("jA", "a", 0, 100, 8),
        ("jB", "a", 1, 50, 8),
        ("jC", "a", 2, 50, 8),
        ("jD", "a", 3, 20, 8),
    ]
    jobs = replay(rows, "sjf")
    assert spans(jobs) == {"jA": (0, 100), "jB": (120, 170), "jC": (170, 220), "jD": (100, 120)}


def test_vcs_are_simulated_independently():
    # The same jobs in two VCs of one node each: identical times, no interaction.
    rows = [("a1", "a", 0, 100, 8), ("a2", "a", 5, 10, 8), ("b1", "b", 0, 100, 8)]
    rows += [("b2", "b", 5, 10, 8)]
    jobs = replay(rows, "fifo", a=1, b=1)
    assert spans(jobs) == {"a1": (0, 100), "a2": (100, 110), "b1": (0, 100), "b2": (100, 110)}
    assert jobs.loc["b2", "nodes"] == "n1"


# -- srtf -------------------------------------------------------------------------------------


def test_srtf_preempts_at_once_and_charges_30_s_for_2_to_8_gpus():
    # One node. t=0: j1 (100 s) starts; its count runs from t=1. t=10: j2 arrives (20 s);
    # j1 has 90 s left: j2 ranks first, takes 4 of the 8 GPUs, so j1 (8) no longer fits the
    # VC's count and is preempted (90 + 30 = 120 s left). j2 ends at 10 + 20 + 1 = 31 (a
    # preemptive policy ends a job the second after its count reaches 0); j1 resumes at 31
    # and ends at 31 + 120 + 1 = 152.
    rows = [("j1", "a", 0, 100, 8), ("j2", "a", 10, 20, 4)]
    jobs = replay(rows, "srtf")
    assert spans(jobs) == {"j1": (0, 152), "j2": (10, 31)}
    assert jobs["preemptions"].to_dict() == {"j1": 1, "j2": 0}
    assert jobs["queue_delay"].to_dict() == {"j1": 21, "j2": 0}  # 31 - 10: Helios' `queue`
    assert jobs["run_time"].to_dict() == {"j1": 131, "j2": 21}


def test_srtf_charges_7_s_for_one_gpu_and_30_s_up_to_8():
    # One node. t=0: jA (1 GPU, 100 s) and jB (7 GPUs, 200 s) both start on n0.
    # t=10: jC (8 GPUs, 5 s) ranks first (5 < 90 < 190) and takes the VC's whole count:
    # jA is preempted with 90 + 7 = 97 s left, jB with 190 + 30 = 220 s. jC ends at 16;
    # jA and jB resume at 16 and end at 16 + 97 + 1 = 114 and 16 + 220 + 1 = 237.
    rows = [("jA", "a", 0, 100, 1), ("jB", "a", 0, 200, 7), ("jC", "a", 10, 5, 8)]
    jobs = replay(rows, "srtf")
    assert spans(jobs) == {"jA": (0, 114), "jB": (0, 237), "jC": (10, 16)}
    assert jobs["queue_delay"].to_dict() == {"jA": 6, "jB": 6, "jC": 0}


def test_srtf_charges_60_s_above_8_gpus():
    # Two nodes. j1 (16 GPUs, 100 s) runs from 0; at t=5 j2 (1 GPU, 10 s) ranks first and
    # leaves 15 GPUs of count: j1 is preempted with 95 + 60 = 155 s left. j2 ends at 16;
    # j1 resumes at 16 and ends at 16 + 155 + 1 = 172.
    rows = [("j1", "a", 0, 100, 16), ("j2", "a", 5, 10, 1)]
    jobs = replay(rows, "srtf", a=2)
    assert spans(jobs) == {"j1": (0, 172), "j2": (5, 16)}
    assert jobs.loc["j2", "nodes"] == "n0"


# -- tiresias (Lucid) -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "nodes", "demoted_at", "overhead"),
    [
        # 8 GPUs: passes 18,000 GPU-seconds at t=2251 (8 x 2251); next multiple of 60: 2280
        (8, 1, 2280, 40),
        # 16 GPUs: passes it at t=1126 (16 x 1126 = 18,016); next multiple of 60: 1140
        (16, 2, 1140, 60),
    ],
)
def test_tiresias_demotes_at_18000_gpu_seconds_and_decides_every_60_s(
    gpus, nodes, demoted_at, overhead
):
    # j1 (30,000 s) starts at t=0. j2 arrives at t=100 and waits in the high queue behind
    # j1 (same queue, earlier submit). At the first multiple of 60 after j1 passes 18,000
    # GPU-seconds, j1 drops to the low queue: j2 starts and j1 is preempted, paying the
    # overhead. j2 ends at demoted_at + 600 + 1; its GPUs idle until the next multiple of
    # 60, when j1 resumes and runs its 30,000 - demoted_at + overhead seconds, plus 1.
    rows = [("j1", "a", 0, 30_000, gpus), ("j2", "a", 100, 600, gpus)]
    jobs = replay(rows, "tiresias", a=nodes)
    j2_end = demoted_at + 601
    resume = -(-j2_end // 60) * 60
    j1_end = resume + (30_000 - demoted_at + overhead) + 1
    assert spans(jobs) == {"j1": (0, j1_end), "j2": (demoted_at, j2_end)}
    assert jobs["preemptions"].to_dict() == {"j1": 1, "j2": 0}
    assert jobs.loc["j1", "queue_delay"] == resume - demoted_at


def test_tiresias_starts_jobs_only_at_multiples_of_60_s():
    # j1 arrives at t=61 on an idle VC and starts at 120; j2 arrives at 0 and starts at 0.
    jobs = replay([("j2", "a", 0, 10, 1), ("j1", "a", 61, 10, 1)], "tiresias")
    assert spans(jobs) == {"j2": (0, 11), "j1": (120, 131)}


# -- per-job equality with the literal reference --------------------------------------------

GPU_CHOICES = [1, 1, 1, 2, 4, 8, 8, 12, 16, 24]


@st.composite
def helios_vcs(draw, long_jobs: bool = False):
    """Two VCs (1-3 nodes each) and up to 16 jobs per VC, in the Helios format."""
    rows, nodes = [], {}
    for vc in ("a", "b"):
        count = draw(st.integers(1, 3))
        nodes[vc] = count
        for k in range(draw(st.integers(1, 16))):
            gpus = draw(st.sampled_from([g for g in GPU_CHOICES if g <= 8 * count]))
            submit = draw(st.integers(0, 3000 if long_jobs else 400))
            duration = draw(st.integers(1, 4000 if long_jobs else 300))
            rows.append((f"{vc}{k}", vc, submit, duration, gpus))
    return rows, nodes


def assert_matches_reference(rows, nodes, scheduler):
    jobs = replay(rows, scheduler, **nodes)
    node_names = cluster(**nodes).nodes["node"].tolist()
    first_node = {"a": 0, "b": nodes["a"]}
    for vc, count in nodes.items():
        mine = [(r[0], r[2], r[3], r[4]) for r in rows if r[1] == vc]
        expected = reference.run(mine, count, scheduler)
        for job_id, ref in expected.items():
            got = jobs.loc[job_id]
            assert got["start_time"] == ref["start_time"], job_id
            assert got["end_time"] == ref["end_time"], job_id
            assert got["queue_delay"] == ref["queue"], job_id
            assert got["jct"] == ref["end_time"] - ref["submit_time"], job_id
            assert got["preemptions"] == ref["ckpt_times"], job_id
            where = ",".join(node_names[first_node[vc] + i] for i in ref["last_nodes"])
            assert got["nodes"] == where, job_id


@pytest.mark.parametrize("scheduler", ["fifo", "sjf", "srtf"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=helios_vcs())
def test_replay_matches_the_reference_job_by_job(scheduler, case):
    assert_matches_reference(*case, scheduler)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=helios_vcs(long_jobs=True))
def test_tiresias_matches_the_reference_job_by_job(case):
    assert_matches_reference(*case, "tiresias")


@pytest.mark.parametrize("scheduler", ["srtf", "tiresias"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_preemptive_replay_matches_the_reference_on_busy_vcs(scheduler, seed):
    """Seeded random VCs loaded well past capacity (many preemptions and fragmentation)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for k in range(40):
        gpus = int(rng.choice([1, 1, 2, 4, 8, 12, 16]))
        rows.append((f"a{k}", "a", int(rng.integers(0, 2400)), int(rng.integers(1, 3000)), gpus))
    for k in range(10):
        rows.append((f"b{k}", "b", int(rng.integers(0, 600)), int(rng.integers(1, 900)), 1))
    jobs = replay(rows, scheduler, a=2, b=1)
    assert jobs["preemptions"].sum() > 0
    assert_matches_reference(rows, {"a": 2, "b": 1}, scheduler)


# -- the Result -------------------------------------------------------------------------------


def test_result_has_the_engines_columns_and_a_consistent_summary():
    rows = [*HOL, ("big", "a", 5, 10, 24)]  # 24 GPUs: more than VC a's 16
    wl, cl = workload(rows), cluster(a=2)
    ours = asim.simulate(wl, cl, compat="helios", scheduler="srtf")
    engine = asim.simulate(wl, cl, scheduler="srtf")
    assert list(ours.jobs.columns) == list(engine.jobs.columns)
    assert list(ours.events.columns) == list(engine.events.columns)
    # the timeline: the engine's first columns, in its order (not its fragmentation columns)
    core = ["time", "vc", "used_gpus", "free_gpus", "pending_gpus", "running_jobs"]
    core += ["waiting_jobs", "utilization"]
    assert list(ours.timeline.columns) == core
    assert list(engine.timeline.columns)[: len(core)] == core
    for name in ("jobs", "events", "timeline"):
        mine, theirs = getattr(ours, name), getattr(engine, name)
        assert mine.dtypes.astype(str).to_dict() == {c: str(theirs[c].dtype) for c in mine.columns}
    assert ours.config["compat"] == "helios"
    summary = ours.summary()
    assert summary["finished"] == 4 and summary["unschedulable"] == 1
    assert ours.jobs.set_index("job_id").loc["big", "status"] == "unschedulable"
    done = ours.jobs[ours.jobs["status"] == "done"]
    assert summary["avg_jct"] == pytest.approx(done["jct"].mean())
    # busy GPU-seconds are the GPUs x time on GPUs of every job
    assert ours.meta["busy_gpu_seconds"] == [float((done["num_gpus"] * done["run_time"]).sum())]
    events = ours.events
    assert (events["event"] == "finish").sum() == 4
    assert (events["event"] == "unschedulable").sum() == 1
    assert events["time"].is_monotonic_increasing
    assert ours.summary(by="vc").loc["a", "finished"] == 4


def test_timeline_counts_running_and_waiting_jobs():
    # sample_every=50 on the FIFO case above: j1 runs 0-100, j2 0-50, j3 100-130 (waiting
    # from 10), j4 130-140 (waiting from 20); a sample shows the state after its second.
    res = asim.simulate(
        workload(HOL), cluster(a=2), compat="helios", scheduler="fifo", sample_every=50
    )
    rows = res.timeline[res.timeline["vc"] == "a"].set_index("time")
    assert rows.loc[0.0, ["used_gpus", "running_jobs", "waiting_jobs"]].tolist() == [12, 2, 0]
    assert rows.loc[50.0, ["used_gpus", "running_jobs", "waiting_jobs"]].tolist() == [8, 1, 2]
    assert rows.loc[50.0, "pending_gpus"] == 18
    assert rows.loc[100.0, ["used_gpus", "running_jobs", "waiting_jobs"]].tolist() == [16, 1, 1]
    assert rows.index.max() == 100.0  # samples up to the last event (t=140)


# -- errors -----------------------------------------------------------------------------------


def test_unknown_compat_mode():
    with pytest.raises(ValueError, match=r"unknown compat mode 'philly'.*\['helios', 'pollux'\]"):
        asim.simulate(workload(HOL), cluster(a=2), compat="philly")


@pytest.mark.parametrize("scheduler", ["las", "fair", {"name": "srtf", "x": 1}])
def test_unsupported_scheduler(scheduler):
    with pytest.raises(ValueError, match="compat='helios'"):
        asim.simulate(workload(HOL), cluster(a=2), compat="helios", scheduler=scheduler)


def test_scheduler_as_a_dict_and_from_a_config():
    wl, cl = workload(HOL), cluster(a=2)
    by_dict = asim.simulate(wl, cl, compat="helios", scheduler={"name": "sjf"})
    by_config = asim.simulate(wl, cl, asim.SimConfig(scheduler="sjf"), compat="helios")
    pd.testing.assert_frame_equal(by_dict.jobs, by_config.jobs)
    assert by_dict.jobs.set_index("job_id").loc["j4", "start_time"] == 20  # sjf, not fifo


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"preemption": True}, "['preemption']"),
        ({"placement": "spread", "backfill": True}, "['backfill', 'placement']"),
        ({"config": asim.SimConfig(quantum=10)}, "['quantum']"),
        ({"config": {"seed": 3}}, "['seed']"),
        ({"until": 50}, "['until']"),
    ],
)
def test_options_the_mode_ignores_are_refused_by_name(kwargs, named):
    with pytest.raises(ValueError, match="ignores option") as error:
        asim.simulate(workload(HOL), cluster(a=2), compat="helios", **kwargs)
    assert named in str(error.value)


def test_nodes_must_have_8_gpus():
    cl = asim.Cluster.uniform(1, 2, 4, vc_nodes={"a": 2})
    with pytest.raises(ValueError, match=r"8 GPUs.*node='n0'.*4"):
        asim.simulate(workload(HOL), cl, compat="helios")


def test_vcs_must_own_nodes_not_quotas():
    cl = asim.Cluster.uniform(1, 2, 8, quotas={"a": 16})
    with pytest.raises(ValueError, match=r"quotas.*\['a'\]"):
        asim.simulate(workload(HOL), cl, compat="helios")


def test_every_node_must_belong_to_a_vc():
    cl = asim.Cluster.uniform(1, 3, 8, vc_nodes={"a": 2})
    with pytest.raises(ValueError, match=r"belong to a VC.*node='n2'"):
        asim.simulate(workload(HOL), cl, compat="helios")


def test_times_must_be_whole_seconds():
    rows = [("j1", "a", 0.5, 10, 1)]
    with pytest.raises(ValueError, match=r"submit_time must be whole seconds.*job_id='j1'.*0\.5"):
        asim.simulate(workload(rows), cluster(a=1), compat="helios")


def test_jobs_of_unknown_vcs_are_named():
    rows = [("j1", "a", 0, 10, 1), ("j2", "zz", 0, 10, 1)]
    with pytest.raises(ValueError, match=r"job_id='j2'.*'zz'"):
        asim.simulate(workload(rows), cluster(a=1), compat="helios")


# -- with the Helios trace reader -----------------------------------------------------------

HELIOS_HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time"
HELIOS_LOG = f"""{HELIOS_HEADER},duration,queue
1,u1,vcA,8,4,1,COMPLETED,2020-09-01 00:00:00,2020-09-01 00:00:00,2020-09-01 00:01:40,100,0
2,u1,vcA,4,4,1,COMPLETED,2020-09-01 00:00:00,2020-09-01 00:00:00,2020-09-01 00:00:50,50,0
3,u2,vcA,16,4,2,COMPLETED,2020-09-01 00:00:10,2020-09-01 00:00:10,2020-09-01 00:00:40,30,0
4,u2,vcA,2,4,1,FAILED,2020-09-01 00:00:20,2020-09-01 00:00:20,2020-09-01 00:00:30,10,0
5,u3,vcB,1,4,1,COMPLETED,2020-09-01 00:00:30,2020-09-01 00:00:30,2020-09-01 00:00:40,10,0
"""


def test_a_helios_folder_read_and_replayed(tmp_path):
    # The FIFO case above as a Helios log (vcA owns 16 GPUs = 2 nodes, vcB 8 = 1 node).
    (tmp_path / "cluster_log.csv").write_text(HELIOS_LOG)
    (tmp_path / "cluster_gpu_number.csv").write_text("date,vcA,vcB,total\n2020-09-01,16,8,24\n")
    trace = asim.traces.read_helios(tmp_path, start="2020-09-01")
    res = asim.simulate(trace.workload, trace.cluster, compat="helios", scheduler="fifo")
    jobs = res.jobs.set_index("job_id")
    assert spans(jobs) == {
        "1": (0, 100),
        "2": (0, 50),
        "3": (100, 130),
        "4": (130, 140),
        "5": (30, 40),
    }


def test_the_venus_vc_file_gives_a_cluster_the_mode_accepts(shared_data):
    # Venus on 2020-09-01, from the real VC file: every VC owns GPUs / 8 nodes of 8 GPUs.
    path = shared_data / "helios" / "venus_cluster_gpu_number.csv"
    cl = asim.traces.read_helios_cluster(path, "2020-09-01")
    sizes = pd.read_csv(path).set_index("date").loc["2020-09-01"]
    owned = {vc: int(gpus) for vc, gpus in sizes.drop("total").items() if gpus > 0}
    rows = [(f"j-{vc}", vc, 0, 60, min(gpus, 16)) for vc, gpus in owned.items()]
    res = asim.simulate(workload(rows), cl, compat="helios", scheduler="sjf")
    assert dict(zip(res.meta["vcs"], res.meta["vc_capacity"], strict=True)) == owned
    assert res.summary()["finished"] == len(owned)
    assert (res.jobs["end_time"] == 60).all()


def test_gpu_types_every_node_has_are_accepted_others_named():
    rows = pd.DataFrame(
        {
            "job_id": ["j1", "j2"],
            "vc": "a",
            "user": "u",
            "submit_time": [0, 0],
            "duration": [10, 10],
            "num_gpus": [1, 1],
            "gpu_type": ["gpu|V100", None],
        }
    )
    res = asim.simulate(asim.Workload.from_frame(rows), cluster(a=1), compat="helios")
    assert res.summary()["finished"] == 2
    rows.loc[1, "gpu_type"] = "V100"
    with pytest.raises(ValueError, match=r"ignores GPU types.*job_id='j2'.*'V100'"):
        asim.simulate(asim.Workload.from_frame(rows), cluster(a=1), compat="helios")


def test_a_replay_saves_and_loads(tmp_path):
    res = asim.simulate(workload(HOL), cluster(a=2), compat="helios", scheduler="tiresias")
    back = asim.Result.load(res.save(tmp_path / "run"))
    assert back.config == {
        "compat": "helios",
        "scheduler": "tiresias",
        "placement": "helios-consolidate",
        "step": 1.0,
        "sample_every": 300.0,
    }
    pd.testing.assert_series_equal(back.summary(), res.summary())
    assert back.jobs["end_time"].tolist() == res.jobs["end_time"].tolist()


def test_node_usage_and_gpu_snapshot_follow_the_placements():
    # The FIFO case: j1 (8) on n0 and j2 (4) on n1 from 0; j3 (16) on n0, n1 from 100;
    # j4 (2) on n0 from 130 (the lowest-numbered free GPUs of a node are taken).
    res = asim.simulate(workload(HOL), cluster(a=2), compat="helios", scheduler="fifo")
    usage = res.node_usage(every=10)
    assert usage.loc[0.0].tolist() == [8, 4]
    assert usage.loc[50.0].tolist() == [8, 0]
    assert usage.loc[100.0].tolist() == [8, 8]
    assert usage.loc[130.0].tolist() == [2, 0]
    snap = res.snapshot(20)
    held = snap.dropna(subset=["job_id"]).groupby("job_id")["gpu"].apply(list).to_dict()
    assert held == {"j1": list(range(8)), "j2": [0, 1, 2, 3]}
    starts = res.events[res.events["event"] == "start"].set_index("job_id")["gpus"]
    assert starts["j4"] == "n0:0,n0:1"


def test_explain_refuses_a_compat_replay():
    from analysim.results.explain import why_waiting

    workload = asim.presets.workload("venus_overloaded", days=1)
    result = asim.simulate(workload, asim.presets.cluster("venus_overloaded"), compat="helios")
    with pytest.raises(ValueError, match="compat replay"):
        why_waiting(result, result.jobs["job_id"].iloc[0], 0.0)
