"""Resource mode of the time engine: GPU shares, CPU and memory (``engine/resources.py``).

Hand-checked runs with exact times, bad input, and hypothesis invariants with shares and
CPU/memory (no GPU over 1000 milli, no node over its CPU or memory, leaping changes nothing,
every job finishes or is reported unschedulable, the same seed gives the same run)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import resource_cases

from analysim import Cluster, SimConfig, Simulation, Workload, simulate
from analysim.engine.book_moves import BookMoves
from analysim.errors import PolicyError
from analysim.inputs.domains import allowed_types

CONFIG = SimConfig(quantum=60, sample_every=10)
FGD_PLACERS = ("fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering")


def _jobs(rows: list[dict]) -> Workload:
    frame = pd.DataFrame(rows)
    for column, default in (("vc", "v"), ("user", "u")):
        if column not in frame.columns:
            frame[column] = default
    return Workload.from_frame(frame)


def _job(job_id: str, submit: float, duration: float, gpus: int = 1, **more) -> dict:
    return {
        "job_id": job_id,
        "submit_time": submit,
        "duration": duration,
        "num_gpus": gpus,
        **more,
    }


def _cluster(gpus: list[int], **capacities) -> Cluster:
    nodes = pd.DataFrame(
        {"node": [f"n{i}" for i in range(len(gpus))], "rack": "r", "gpus": gpus, **capacities}
    )
    return Cluster.from_frame(nodes)


def _jct(result) -> dict[str, float]:
    jobs = result.jobs
    return dict(zip(jobs["job_id"], jobs["end_time"] - jobs["submit_time"], strict=True))


# -- hand-checked runs ------------------------------------------------------------------------
@pytest.mark.parametrize("placement", ["consolidate", "spread", "random", *FGD_PLACERS])
def test_two_half_gpu_jobs_share_one_gpu(placement):
    work = _jobs([_job("a", 0, 100, gpu_milli=500), _job("b", 0, 100, gpu_milli=500)])
    sim = Simulation(work, _cluster([1]), CONFIG.replace(placement=placement))
    assert sim.resource_mode and type(sim) is Simulation  # one engine, in resource mode
    sim.run(until=50)
    gpus = sim.state.gpus
    assert gpus["milli_used"].tolist() == [1000]
    assert gpus["job_ids"].tolist() == ["a,b"]
    res = sim.run().result()
    assert _jct(res) == {"a": 100.0, "b": 100.0}


def test_a_600_and_a_500_cannot_share():
    work = _jobs([_job("a", 0, 100, gpu_milli=600), _job("b", 0, 100, gpu_milli=500)])
    res = simulate(work, _cluster([1]), CONFIG)
    assert _jct(res) == {"a": 100.0, "b": 200.0}
    # the timeline counts GPU milli / 1000 as GPUs used
    cluster = res.timeline[res.timeline["vc"] == "(all)"].set_index("time")
    assert cluster.loc[50.0, "used_gpus"] == pytest.approx(0.6)
    assert cluster.loc[150.0, "used_gpus"] == pytest.approx(0.5)


def test_gpu_hours_count_a_share_as_its_fraction_of_a_gpu():
    # two 500-milli shares for 100 s on one GPU, then a whole GPU for 100 s: 200 GPU-seconds
    work = _jobs(
        [
            _job("a", 0, 100, gpu_milli=500, user="x"),
            _job("b", 0, 100, gpu_milli=500, user="y"),
            _job("c", 0, 100, user="y"),
        ]
    )
    res = simulate(work, _cluster([1]), CONFIG)
    assert _jct(res) == {"a": 100.0, "b": 100.0, "c": 200.0}
    users = res.summary(by="user")
    assert users.loc["x", "gpu_hours"] * 3600 == pytest.approx(50.0)
    assert users.loc["y", "gpu_hours"] * 3600 == pytest.approx(150.0)
    assert res.summary()["gpu_hours"] * 3600 == pytest.approx(200.0)


def test_exhausted_cpu_blocks_a_job_although_gpus_are_free():
    work = _jobs(
        [_job("a", 0, 100, cpu_milli=3000), _job("b", 0, 50, cpu_milli=2000)],
    )
    sim = Simulation(work, _cluster([2], cpu_milli=[4000]), CONFIG)
    sim.run(until=10)
    assert sim.state.nodes[["free", "cpu_used"]].values.tolist() == [[1, 3000]]
    res = sim.run().result()
    assert _jct(res) == {"a": 100.0, "b": 150.0}
    # 1000 CPU milli left in all: fewer than b's 2000, so 'full' (not fragmented)
    assert res.decisions.tries["reason"].iloc[0] == "full"


def test_exhausted_memory_blocks_and_cpu_only_jobs_take_no_gpu():
    work = _jobs(
        [
            _job("cpu", 0, 100, gpus=0, gpu_milli=0, cpu_milli=1000, memory_mib=3000),
            _job("g", 0, 40, memory_mib=2000),
            _job("small", 0, 40, gpus=0, gpu_milli=0, cpu_milli=500, memory_mib=1000),
        ]
    )
    sim = Simulation(work, _cluster([1], memory_mib=[4000], cpu_milli=[8000]), CONFIG)
    sim.run(until=10)
    assert sim.state.gpus["milli_used"].tolist() == [0]
    assert sim.state.nodes["memory_used"].tolist() == [3000]
    res = sim.run().result()
    # g waits for the CPU-only job's memory; small starts at once behind it (FIFO stops at g:
    # no backfill, so small waits too)
    assert _jct(res) == {"cpu": 100.0, "g": 140.0, "small": 140.0}


def test_preemption_evicts_a_shared_job():
    work = _jobs(
        [
            _job("low", 0, 1000, gpu_milli=600, priority=5),
            _job("mate", 0, 1000, gpu_milli=400, priority=5),
            _job("high", 10, 100, gpu_milli=500, priority=0),
        ]
    )
    config = CONFIG.replace(scheduler="priority", preemption=True, checkpoint_cost=0)
    res = simulate(work, _cluster([1]), config)
    # priority: lower first. At the first full round after 'low' and 'mate' may be evicted
    # (t=60) 'high' needs 500 milli: the lowest-ranked 'mate' frees only 400, 'mate' and 'low'
    # together enough; then 'mate' turns out not to be needed (600 from 'low' will do)
    events = res.events
    preempted = events.loc[events["event"] == "preempt", "job_id"].tolist()
    assert len(preempted) == 1
    jct = _jct(res)
    assert jct["high"] == 150.0  # starts at 60, runs 100 s
    victim = preempted[0]
    assert victim == "low"  # 600 frees enough; 'mate' (400) would not
    assert jct["low"] == 60 + 100 + 940  # ran 60 s, waits 100 s, runs the other 940 s
    assert jct["mate"] == 1000.0


def test_quota_counts_gpu_milli():
    nodes = pd.DataFrame({"node": ["n0"], "rack": ["r"], "gpus": [2]})
    cluster = Cluster.from_frame(nodes, {"v": 1})
    work = _jobs([_job(k, 0, 100, gpu_milli=400) for k in ("a", "b", "c")])
    res = simulate(work, cluster, CONFIG)
    # a and b hold 800 of the VC's 1000 milli; c would make 1200 and waits although a GPU
    # is free
    assert _jct(res) == {"a": 100.0, "b": 100.0, "c": 200.0}
    assert res.decisions.tries["reason"].iloc[0] == "quota"
    # the record's free GPUs: whole GPUs left in the quota (200 milli: none), as the other
    # reasons count them, not the quota less the milli in use
    assert (res.decisions.tries.loc[res.decisions.tries["reason"] == "quota", "free"] == 0).all()


def test_a_job_no_node_can_hold_is_unschedulable_and_counted():
    # two GPUs per node, 4000 CPU per node: at 3000 CPU per GPU a node can hold one GPU of
    # such a job, so two GPUs (6000 CPU) spread over both nodes, and four cannot run at all
    work = _jobs(
        [
            _job("wide", 0, 100, gpus=2, cpu_milli=6000),
            _job("big", 0, 100, gpus=4, cpu_milli=12000),
            _job("ok", 100, 100),
        ]
    )
    res = simulate(work, _cluster([2, 2], cpu_milli=[4000, 4000]), CONFIG)
    jobs = res.jobs.set_index("job_id")
    assert jobs["status"].to_dict() == {"wide": "done", "big": "unschedulable", "ok": "done"}
    assert jobs.loc["wide", "nodes"] == "n0,n1"
    assert res.summary()["unschedulable"] == 1


def test_a_whole_gpu_job_spread_over_nodes_takes_cpu_per_gpu():
    work = _jobs([_job("wide", 0, 100, gpus=4, cpu_milli=4000)])
    sim = Simulation(work, _cluster([2, 2], cpu_milli=[2000, 2000]), CONFIG)
    sim.run(until=10)
    assert sim.state.nodes["cpu_used"].tolist() == [2000, 2000]
    assert sim.run().done


def test_migration_moves_a_share_to_make_room_for_a_whole_gpu():
    work = _jobs(
        [
            _job("a", 0, 1000, gpu_milli=300),
            _job("b", 0, 1000, gpu_milli=300),
            _job("c", 5, 100),
        ]
    )
    config = CONFIG.replace(placement="spread", migration=True, migration_cost=0)
    sim = Simulation(work, _cluster([1, 1]), config)
    sim.run(until=1)
    assert sim.state.gpus["job_ids"].tolist() == ["a", "b"]  # spread: one share per node
    res = sim.run().result()
    assert res.jobs["migrations"].sum() == 1
    assert _jct(res) == {"a": 1000.0, "b": 1000.0, "c": 100.0}


def test_fgd_fragmentation_in_the_timeline_and_summary():
    # one shape only (a 500-milli share): a GPU with 500 left is not fragmented for it;
    # an idle GPU is not either. With a 600 running, the 400 left is fragmented.
    work = _jobs([_job("a", 0, 100, gpu_milli=600), _job("b", 0, 100, gpu_milli=600)])
    res = simulate(work, _cluster([1]), CONFIG)
    cluster = res.timeline[res.timeline["vc"] == "(all)"].set_index("time")
    assert cluster.loc[50.0, "fgd_frag_milli"] == pytest.approx(400.0)
    assert cluster.loc[150.0, "fgd_frag_milli"] == pytest.approx(400.0)
    assert res.summary()["avg_fgd_frag_milli"] == pytest.approx(400.0 * 20 / 21)
    sim = Simulation(work, _cluster([1]), CONFIG).run(until=10)
    assert sim.state.nodes["fgd_frag_milli"].tolist() == [400.0]


def test_whole_gpu_workloads_run_in_whole_gpu_mode_unless_an_fgd_placer_is_named():
    work = _jobs([_job("a", 0, 100)])
    assert not Simulation(work, _cluster([1]), CONFIG).resource_mode
    shares = Simulation(work, _cluster([1]), CONFIG.replace(placement="fgd"))
    assert shares.resource_mode and type(shares) is Simulation
    # the same whole-GPU jobs give the same times in both modes
    plain = simulate(work, _cluster([1]), CONFIG)
    shared = simulate(work, _cluster([1]), CONFIG.replace(placement="best_fit"))
    assert _jct(plain) == _jct(shared) == {"a": 100.0}


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "column", "words"),
    [
        ({"gpu_milli": 0}, "gpu_milli", "from 1 to 1000"),
        ({"gpu_milli": 1500}, "gpu_milli", "from 0 to 1,000"),
        ({"gpu_milli": 500, "num_gpus": 2}, "gpu_milli", "needs num_gpus 1"),
        ({"gpu_milli": 0, "num_gpus": 0}, "num_gpus", "0 only for a job that asks"),
        ({"cpu_milli": -5}, "cpu_milli", "from 0 to"),
        ({"memory_mib": 1.5}, "memory_mib", "whole number"),
    ],
)
def test_bad_resource_columns_are_named(row, column, words):
    frame = pd.DataFrame([_job("ok", 0, 10, gpu_milli=1000), {**_job("bad", 0, 10), **row}])
    frame["vc"], frame["user"] = "v", "u"
    if "gpu_milli" not in row:
        frame["gpu_milli"] = 1000
    with pytest.raises(ValueError, match=column) as err:
        Workload.from_frame(frame)
    assert words in str(err.value)
    assert "row 1" in str(err.value) and "'bad'" in str(err.value)


@pytest.mark.parametrize("column", ["cpu_milli", "memory_mib"])
def test_more_cpu_or_memory_than_any_node_is_an_error(column):
    work = _jobs([_job("ok", 0, 10, **{column: 10}), _job("huge", 0, 10, **{column: 9000})])
    with pytest.raises(ValueError, match=column) as err:
        Simulation(work, _cluster([1, 1], **{column: [4000, 8000]}), CONFIG)
    assert "huge" in str(err.value) and "9000" in str(err.value) and "8,000" in str(err.value)


@pytest.mark.parametrize("column", ["cpu_milli", "memory_mib"])
def test_negative_node_capacity_is_an_error(column):
    with pytest.raises(ValueError, match=column) as err:
        _cluster([1, 1], **{column: [4000, -1]})
    assert "row 1" in str(err.value) and "-1" in str(err.value)


def test_the_ledger_refuses_a_gpu_over_1000_milli():
    work = _jobs([_job("a", 0, 100, gpu_milli=600), _job("b", 0, 100, gpu_milli=600)])
    sim = Simulation(work, _cluster([1]), CONFIG).run(until=1)
    b = 1
    with pytest.raises(PolicyError, match="over 1000 milli"):
        sim.ledger.take(b, np.array([0]), np.array([1]), False, sim.now, [(0, (0,), 0, 0, 600)])


# -- invariants -------------------------------------------------------------------------------
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _check_resources(sim: Simulation) -> None:
    """No GPU over 1000 milli, no node over its CPU or memory, whole GPUs alone."""
    book = sim.book
    holders = sim.gpu_holders  # checks milli per GPU against the book
    for h in holders:
        whole = [j for j in h if sim.gpu_milli[j] == 1000]
        assert not whole or len(h) == 1
    assert (book.cpu_left >= 0).all() and (book.mem_left >= 0).all()
    assert (book.gpu_left >= 0).all()
    assert (sim.free == (book.gpu_left == 1000).sum(axis=1)).all()
    # GPU model constraints and quotas (in GPU milli) hold, counted independently here
    node_type = sim.cluster.nodes["gpu_type"].tolist()
    types = sim.workload.jobs.get("gpu_type")
    used_by_vc: dict[int, int] = {}
    for j, claims in sim.ledger.claims.items():
        allowed = allowed_types(None if types is None else types.iloc[j])
        if allowed is not None and sim.gpus[j] > 0:
            assert all(node_type[c[0]] in allowed for c in claims)
        if not sim.borrowed[j]:
            vc = int(sim.job_vc[j])
            used_by_vc[vc] = used_by_vc.get(vc, 0) + int(sim.gpus[j] * sim.gpu_milli[j])
    quotas = sim.cluster.quotas
    for vc, used in used_by_vc.items():
        quota = quotas.get(sim.partition.vc_names[vc])
        assert quota is None or used <= quota * 1000


@FAST
@given(resource_cases())
def test_resources_hold_at_every_step_and_every_job_ends(drawn):
    case, workload, config = drawn
    sim = Simulation(workload, case.cluster, config)
    stuck = 0
    for _ in range(20_000):
        if sim.done:
            break
        before = sim.now
        sim.step()
        _check_resources(sim)
        stuck = stuck + 1 if sim.now == before else 0
        if stuck >= 3:  # the clock stopped: the jobs left can never start
            break
    res = sim.result()
    status = res.jobs["status"]
    assert status.isin(["done", "unschedulable"]).all(), res.jobs
    assert res.summary()["unschedulable"] == (status == "unschedulable").sum()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resource_cases(max_jobs=8))
def test_resource_mode_leaping_and_the_plain_rules_change_nothing(drawn):
    case, workload, config = drawn
    leaped = simulate(workload, case.cluster, config)
    stepped = simulate(workload, case.cluster, config.replace(leap=False))
    plain = Simulation(workload, case.cluster, config, reference=True).run().result()
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(plain, name))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resource_cases(max_jobs=8), st.data())
def test_resource_mode_same_seed_same_run(drawn, data):
    case, workload, config = drawn
    a = simulate(workload, case.cluster, config)
    b = simulate(workload, case.cluster, config)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_a_borrowed_share_is_reclaimed_by_the_owner():
    nodes = pd.DataFrame({"node": ["n0", "n1"], "rack": "r", "gpus": [1, 1], "vc": ["a", "b"]})
    cluster = Cluster.from_frame(nodes)
    work = _jobs(
        [
            _job("b1", 0, 1000, vc="b"),
            _job("b2", 0, 1000, gpu_milli=600, vc="b"),
            _job("a1", 10, 100, gpu_milli=500, vc="a"),
        ]
    )
    config = CONFIG.replace(borrowing=True, checkpoint_cost=0)
    res = simulate(work, cluster, config)
    jobs = res.jobs.set_index("job_id")
    # b2 borrows a's idle GPU at 0; a1 needs 500 milli of it at 10: b2 (600) is reclaimed,
    # a1 runs 10-110, and b2 borrows the GPU again when a1 is done (990 s left)
    assert jobs["reclaims"].tolist() == [0, 1, 0]
    assert _jct(res) == {"b1": 1000.0, "b2": 1100.0, "a1": 100.0}
    assert jobs.loc["b2", "borrowed_gpu_seconds"] == pytest.approx(0.6 * (10 + 990))


def test_defragmentation_gathers_shares_to_free_a_whole_gpu():
    work = _jobs(
        [
            _job("a", 0, 1000, gpu_milli=300),
            _job("b", 0, 1000, gpu_milli=300),
        ]
    )
    config = CONFIG.replace(placement="spread", migration=True, migration_cost=0, defrag_every=120)
    sim = Simulation(work, _cluster([1, 1]), config)
    sim.run(until=119)
    assert sim.state.nodes["milli_used"].tolist() == [300, 300]
    sim.run(until=120)  # the pass empties the least used node (n0 on a tie) onto n1
    assert sim.state.nodes["milli_used"].tolist() == [0, 600]
    assert sim.run().result().jobs["migrations"].sum() == 1


def test_a_share_keeps_to_its_gpu_models():
    nodes = pd.DataFrame(
        {"node": ["v", "a"], "rack": "r", "gpus": [1, 1], "gpu_type": ["V100", "A100"]}
    )
    work = _jobs(
        [
            _job("any", 0, 100, gpu_milli=500),
            _job("only_a100", 0, 100, gpu_milli=600, gpu_type="A100"),
            _job("nowhere", 0, 100, gpu_milli=100, gpu_type="H100"),
        ]
    )
    sim = Simulation(work, Cluster.from_frame(nodes), CONFIG.replace(placement="best_fit"))
    sim.run(until=1)
    gpus = sim.state.gpus.set_index("node")
    assert gpus.loc["a", "job_ids"] == "only_a100" and gpus.loc["v", "job_ids"] == "any"
    res = sim.run().result()
    assert res.jobs.set_index("job_id").loc["nowhere", "status"] == "unschedulable"


def test_a_busy_run_with_everything_on_is_the_same_leaping_stepping_and_plain():
    rng = np.random.default_rng(1)
    n = 120
    kind = rng.choice(["share", "whole", "cpu"], n, p=[0.6, 0.3, 0.1])
    gpus = np.where(kind == "share", 1, np.where(kind == "cpu", 0, rng.choice([1, 2, 4, 8], n)))
    milli = np.where(kind == "share", rng.choice([100, 250, 500, 700], n), 1000)
    work = _jobs(
        [
            _job(
                f"j{i}",
                int(t),
                int(d),
                int(g),
                gpu_milli=int(m) if g else 0,
                cpu_milli=int(c) + (g == 0),
                memory_mib=int(mem),
                vc=str(vc),
            )
            for i, (t, d, g, m, c, mem, vc) in enumerate(
                zip(
                    np.sort(rng.integers(0, 10_000, n)),
                    rng.integers(50, 3000, n),
                    gpus,
                    milli,
                    rng.integers(0, 16_000, n),
                    rng.integers(0, 30_000, n),
                    rng.choice(["a", "b"], n),
                    strict=True,
                )
            )
        ]
    )
    nodes = pd.DataFrame(
        {
            "node": [f"n{i}" for i in range(8)],
            "rack": [f"r{i // 4}" for i in range(8)],
            "gpus": [4, 4, 8, 8, 4, 4, 8, 8],
            "cpu_milli": 32_000,
            "memory_mib": 64_000,
            "vc": ["a"] * 4 + ["b"] * 4,
        }
    )
    cluster = Cluster.from_frame(nodes)
    config = SimConfig(
        scheduler="las",
        preemption=True,
        migration=True,
        defrag_every=600,
        borrowing=True,
        checkpoint_cost=10,
        migration_cost=5,
    )
    leaped = simulate(work, cluster, config)
    stepped = simulate(work, cluster, config.replace(leap=False))
    plain = Simulation(work, cluster, config, reference=True).run().result()
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(stepped, name))
        pd.testing.assert_frame_equal(getattr(leaped, name), getattr(plain, name))
    summary = leaped.summary()
    assert (leaped.jobs["status"] == "done").all()
    assert summary["preemptions"] > 0 and summary["migrations"] > 0 and summary["reclaims"] > 0


def test_snapshots_usage_and_explanations_see_shared_gpus_and_cpu_only_jobs(tmp_path):
    from analysim.results.explain import why_waiting
    from analysim.results.result import Result
    from analysim.results.spells import allocations

    work = _jobs(
        [
            _job("a", 0, 100, gpu_milli=500),
            _job("b", 0, 100, gpu_milli=500),
            _job("cpu", 0, 30, gpus=0, gpu_milli=0, cpu_milli=100),
            _job("c", 5, 50),
            _job("d", 6, 10),
        ]
    )
    res = simulate(work, _cluster([2]), CONFIG.replace(placement="best_fit"))
    # a and b share GPU 0 until 100; c takes GPU 1 from 5 to 55; d waits for a whole GPU
    assert res.snapshot(50)[["gpu", "job_id"]].values.tolist() == [[0, "a"], [1, "c"]]
    assert res.snapshot(60)[["gpu", "job_id"]].values.tolist() == [[0, "a"], [1, "d"]]
    usage = res.node_usage(every=50)["n0"].tolist()
    assert usage == [1, 2, 0]  # at 0, 50 and 100 s: a GPU shared by two counts once
    spells = allocations(res)
    assert spells[["job_id", "gpu", "start", "end"]].values.tolist() == [
        ["a", 0, 0.0, 100.0],
        ["b", 0, 0.0, 100.0],
        ["c", 1, 5.0, 55.0],
        ["d", 1, 55.0, 65.0],
    ]
    assert "d at t=10 s: it waits" in why_waiting(res, "d", 10)
    res.save(tmp_path / "run")
    again = Result.load(tmp_path / "run")
    assert again.snapshot(50)[["gpu", "job_id"]].values.tolist() == [[0, "a"], [1, "c"]]


def test_why_waiting_names_the_resource_that_is_short(tmp_path):
    from analysim.results.explain import why_waiting
    from analysim.results.result import Result

    # n0: a (500 milli, 1,000 CPU) and the CPU-only c (2,000 CPU); n1: b (2 GPUs, 4,000 CPU).
    # d asks for 300 milli and 3,000 CPU: 1,500 GPU milli are free but only 1,000 CPU
    work = _jobs(
        [
            _job("a", 0, 100, gpu_milli=500, cpu_milli=1000, memory_mib=10),
            _job("b", 0, 100, 2, cpu_milli=4000, memory_mib=10),
            _job("c", 0, 100, 0, gpu_milli=0, cpu_milli=2000, memory_mib=10),
            _job("d", 5, 50, gpu_milli=300, cpu_milli=3000, memory_mib=10),
        ]
    )
    cluster = _cluster([2, 2], cpu_milli=[4000, 4000], memory_mib=[100, 100])
    res = simulate(work, cluster, CONFIG)
    assert _jct(res)["d"] == 145.0  # starts when a, b and c end at 100
    expected = (
        "d at t=10 s: it waits because the cluster has too little CPU left in all: 7,000 of "
        "8,000 CPU milli in use, 1,000 free, it asks for 3,000 (2,500 of 4,000 GPU milli in "
        "use, 1,500 free, it asks for 300; 30 of 200 memory MiB in use, 170 free, it asks for "
        "10)."
    )
    assert why_waiting(res, "d", 10) == expected
    res.save(tmp_path / "run")
    assert why_waiting(Result.load(tmp_path / "run"), "d", 10) == expected


def test_why_waiting_words_fragmented_shares_and_quotas_in_gpu_milli():
    from analysim.results.explain import why_waiting

    # two 600-milli shares on two one-GPU nodes leave 800 milli in all, 400 on each GPU
    work = _jobs(
        [_job("a", 0, 100, gpu_milli=600), _job("b", 0, 100, gpu_milli=600)]
        + [_job("c", 5, 50, gpu_milli=800)]
    )
    res = simulate(work, _cluster([1, 1]), CONFIG)
    assert why_waiting(res, "c", 10) == (
        "c at t=10 s: it waits because its nodes have enough GPU free in all, but no node has "
        "room for all it asks at once (placement consolidate): 1,200 of 2,000 GPU milli in "
        "use, 800 free, it asks for 800."
    )
    # a quota of one GPU holds one 600-milli share; the second waits for the quota
    work = _jobs(
        [_job("a", 0, 100, gpu_milli=600, vc="v"), _job("b", 0, 100, gpu_milli=600, vc="v")]
        + [_job("c", 5, 50, gpu_milli=800, vc="w")]
    )
    res = simulate(work, Cluster.from_frame(_cluster([1, 1]).nodes, quotas={"v": 1, "w": 1}))
    assert why_waiting(res, "b", 10) == (
        "b at t=10 s: it waits because its VC v's quota has too little GPU left in all: 600 "
        "of 1,000 GPU milli in use, 400 free, it asks for 600."
    )


def _busy_shares(seed: int, n: int) -> tuple[Workload, Cluster]:
    """Many shares and some whole-GPU jobs arriving together on 6 small nodes of one VC."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(["share", "whole"], n, p=[0.7, 0.3])
    gpus = np.where(kind == "share", 1, rng.choice([1, 2, 4], n))
    milli = np.where(kind == "share", rng.choice([200, 300, 500, 700], n), 1000)
    work = _jobs(
        [
            _job(
                f"j{i}",
                int(t),
                int(d),
                int(g),
                gpu_milli=int(m),
                cpu_milli=int(c),
                memory_mib=1000,
            )
            for i, (t, d, g, m, c) in enumerate(
                zip(
                    np.sort(rng.integers(0, 3000, n)),
                    rng.integers(100, 3000, n),
                    gpus,
                    milli,
                    rng.integers(1000, 8000, n),
                    strict=True,
                )
            )
        ]
    )
    nodes = pd.DataFrame(
        {
            "node": [f"n{i}" for i in range(6)],
            "rack": ["r0"] * 3 + ["r1"] * 3,
            "gpus": [4, 4, 4, 4, 8, 8],
            "cpu_milli": 32_000,
            "memory_mib": 64_000,
        }
    )
    return work, Cluster.from_frame(nodes)


@pytest.mark.parametrize(
    "options",
    [
        {"scheduler": "fifo", "placement": "fgd", "migration": True},
        {"scheduler": "srtf", "placement": "fgd", "preemption": True, "migration": True},
        {"scheduler": "las", "placement": "best_fit", "preemption": True, "migration": True},
        {"scheduler": "fifo", "placement": "fgd", "migration": True, "defrag_every": 600},
    ],
)
def test_migration_trial_bounds_skip_trials_and_change_nothing(options, monkeypatch):
    """Shortcuts.trial_bounds (and the memo of a defragmentation pass that moved nothing):
    fewer migration trials built than under the plain rules, the very same run."""
    work, cluster = _busy_shares(3, 80)
    config = SimConfig(**options)
    trials = []
    relocate = BookMoves._relocate_on

    def counted(self, book, jobs, avoid):
        trials.append(self.sim.shortcuts.trial_bounds)
        return relocate(self, book, jobs, avoid)

    monkeypatch.setattr(BookMoves, "_relocate_on", counted)
    fast = Simulation(work, cluster, config).run().result()
    plain = Simulation(work, cluster, config, reference=True).run().result()
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(plain, name))
    assert fast.summary()["migrations"] > 0
    assert trials.count(True) < trials.count(False)
