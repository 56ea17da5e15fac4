"""Hand-worked scenarios for migration, borrowing and reclaim on the toy cluster.

The toy cluster has nodes n0, n1 (rack r0) and n2, n3 (rack r1) of 4 GPUs each; with
``partition="nodes"`` VC a owns n0, n1 and VC b owns n2, n3. Every expected time was worked
out by hand from the rules in ``docs/semantics.md``; the comments give the reasoning.
"""

from __future__ import annotations

import pandas as pd
import pytest
from jobs_table import make_jobs

import analysim as asim
from analysim.results.result import ALL


def times(result: asim.Result) -> dict[str, tuple[float, float]]:
    jobs = result.jobs.set_index("job_id")
    return {j: (row.start_time, row.end_time) for j, row in jobs.iterrows()}


# -- migration --------------------------------------------------------------------------------
# t=0: best fit puts j1 then j2 on n0, j3 then j4 on n1, j5 on n2 and j6 on n3 (all full).
# t=50: j3 ends (n1: 2 free); t=60: j1 ends (n0: 2 free). Four GPUs are free, two per node.
# t=100: j7 asks for 4 GPUs: enough are free, but no node has 4 -> fragmentation.
FRAGMENTED = [
    ("j1", "a", 0, 60, 2),
    ("j2", "a", 0, 1000, 2),
    ("j3", "a", 0, 50, 2),
    ("j4", "a", 0, 1000, 2),
    ("j5", "a", 0, 1000, 4),
    ("j6", "a", 0, 1000, 4),
    ("j7", "a", 100, 100, 4),
]


def run_fragmented(**config) -> asim.Result:
    cluster = asim.presets.cluster("toy")
    return asim.simulate(make_jobs(FRAGMENTED), cluster, sample_every=100, **config)


def test_without_migration_the_fragmented_job_waits_for_a_whole_node():
    # j7 waits until t=1000, when j2, j4, j5 and j6 end; it then takes n0 (lowest index)
    result = run_fragmented()
    assert times(result)["j7"] == (1000, 1100)
    assert result.jobs["migrations"].sum() == 0
    timeline = result.timeline.set_index(["time", "vc"])
    # at t=300: n0 and n1 have 2 free each, j7 needs 4 on one node: 4 fragmented GPUs,
    # j7 is blocked (4 GPUs fit by count, not by shape), every free GPU is on a used node
    row = timeline.loc[(300.0, ALL)]
    assert (row["fragmented_gpus"], row["blocked_jobs"], row["frag_index"]) == (4, 1, 1.0)


def test_migration_moves_the_fewest_gpus_and_starts_the_job_at_once():
    # t=100: emptying n0 means moving j2 (2 GPUs) to n1 (2 free); emptying n1 means moving
    # j4 (2 GPUs) to n0: a tie in GPUs and jobs, so the lowest node, n0, is freed.
    # j2 had 900 s left and pays 10 s: it ends at 100 + 910 = 1010. j7 runs 100-200 on n0.
    result = run_fragmented(migration=True, migration_cost=10)
    assert times(result)["j7"] == (100, 200)
    assert times(result)["j2"] == (0, 1010)
    jobs = result.jobs.set_index("job_id")
    assert jobs["migrations"].to_dict() == {f"j{i}": int(i == 2) for i in range(1, 8)}
    assert jobs.loc["j2", "nodes"] == "n1" and jobs.loc["j7", "nodes"] == "n0"
    assert jobs.loc["j2", "run_time"] == 1010  # its 1000 s of work plus the migration
    move = result.events[result.events["event"] == "migrate"]
    assert len(move) == 1
    assert move.iloc[0][["time", "job_id", "from_nodes", "nodes", "cause"]].tolist() == [
        100.0,
        "j2",
        "n0",
        "n1",
        "j7",
    ]
    assert move.iloc[0]["gpus"] == "n1:0,n1:1"  # the GPUs j3 left on n1
    summary = result.summary()
    assert (summary["migrations"], summary["migrated_jobs"]) == (1, 1)
    row = result.timeline.set_index(["time", "vc"]).loc[(300.0, ALL)]
    assert (row["fragmented_gpus"], row["blocked_jobs"]) == (0, 0)
    # the snapshot at t=150: j2 on the GPUs j3 left on n1, beside j4; j7 on all of n0
    snap = result.snapshot(150).set_index(["node", "gpu"])["job_id"]
    assert snap.loc["n0"].tolist() == ["j7"] * 4
    assert snap.loc["n1"].tolist() == ["j2", "j2", "j4", "j4"]


def test_migration_leaves_jobs_alone_when_too_few_gpus_are_free():
    # j7 asks for 6 GPUs > the 4 free: no fragmentation, nothing moves; it waits until 1000
    rows = [*FRAGMENTED[:-1], ("j7", "a", 100, 100, 6)]
    result = asim.simulate(make_jobs(rows), asim.presets.cluster("toy"), migration=True)
    assert result.jobs["migrations"].sum() == 0
    assert times(result)["j7"] == (1000, 1100)


def test_periodic_defragmentation_empties_the_least_used_node():
    # spread puts each job on the emptiest node: j1 (3 GPUs) -> n0, j2 (1) -> n1, j3 (2) -> n2
    rows = [("j1", "a", 0, 500, 3), ("j2", "a", 0, 500, 1), ("j3", "a", 0, 500, 2)]
    result = asim.simulate(
        make_jobs(rows),
        asim.presets.cluster("toy"),
        placement="spread",
        migration=True,
        migration_cost=0,
        defrag_every=100,
    )
    # t=100: the least-used node is n1 (j2, 1 GPU): it moves to the used node with the
    # fewest free GPUs that fit, n0 (1 free), and n1 is empty. Next, n2 (j3, 2 GPUs): the
    # only used node, n0, is full, and empty nodes are never destinations: j3 stays. Later
    # passes find nothing to move. A migration that costs 0 s changes no end time.
    moves = result.events[result.events["event"] == "migrate"]
    assert moves[["time", "job_id", "from_nodes", "nodes"]].values.tolist() == [
        [100.0, "j2", "n1", "n0"]
    ]
    assert moves["cause"].isna().all()
    assert times(result) == {"j1": (0, 500), "j2": (0, 500), "j3": (0, 500)}


# -- borrowing and reclaim --------------------------------------------------------------------
# a owns n0, n1; b owns n2, n3. a1 fills a's nodes until t=1000. a2 (4 GPUs) arrives at t=10.
# b1 (8 GPUs) arrives at t=100 and needs all of b's nodes.
LENDING = [
    ("a1", "a", 0, 1000, 8),
    ("a2", "a", 10, 500, 4),
    ("b1", "b", 100, 300, 8),
]


def run_lending(**config) -> asim.Result:
    cluster = asim.presets.cluster("toy", partition="nodes")
    return asim.simulate(make_jobs(LENDING), cluster, checkpoint_cost=20, **config)


def test_without_borrowing_a_busy_vc_waits_for_its_own_gpus():
    assert times(run_lending()) == {"a1": (0, 1000), "a2": (1000, 1500), "b1": (100, 400)}


def test_borrowing_and_reclaim_by_hand():
    # t=10: a's nodes are full; a2 borrows b's idle n2 (best fit tie: lowest node).
    # t=100: b1 needs n2 and n3: a2 is reclaimed (it ran 90 s, 410 s left, plus 20 s cost)
    # and b1 starts at once, 100-400. t=400: b1 ends; a2 borrows n2 again: 400 + 430 = 830.
    result = run_lending(borrowing=True)
    assert times(result) == {"a1": (0, 1000), "a2": (10, 830), "b1": (100, 400)}
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["a2", "reclaims"] == 1 and jobs.loc["a2", "preemptions"] == 0
    assert jobs.loc["a2", "borrowed_gpu_seconds"] == 4 * 90 + 4 * 430
    assert jobs.loc["a2", "nodes"] == "n2"
    events = result.events[result.events["job_id"] == "a2"]
    assert events["event"].tolist() == ["submit", "start", "reclaim", "resume", "finish"]
    assert events["borrowed"].tolist() == [False, True, False, True, False]
    reclaim = events[events["event"] == "reclaim"].iloc[0]
    assert (reclaim["time"], reclaim["cause"], reclaim["nodes"]) == (100.0, "b1", "n2")
    summary = result.summary()
    assert summary["reclaims"] == 1 and summary["preemptions"] == 0
    assert summary["borrowed_gpu_hours"] == pytest.approx((360 + 1720) / 3600)
    by_vc = result.summary(by="vc")
    assert by_vc.loc["a", "borrowed_gpu_hours"] == pytest.approx((360 + 1720) / 3600)
    assert by_vc.loc["b", "borrowed_gpu_hours"] == 0
    # the snapshot marks the borrowed GPUs, on b's node, held by a's job
    snap = result.snapshot(50)
    lent = snap[snap["borrowed"]]
    assert set(lent["node"]) == {"n2"} and set(lent["job_id"]) == {"a2"}
    assert set(lent["node_vc"]) == {"b"} and set(lent["job_vc"]) == {"a"}
    timeline = result.timeline.set_index(["time", "vc"])
    assert timeline.loc[(0.0, "a"), "borrowed_gpus"] == 0
    assert timeline.loc[(600.0, "a"), "borrowed_gpus"] == 4
    assert timeline.loc[(600.0, "a"), "used_gpus"] == 12  # 8 own + 4 borrowed


def test_the_borrow_limit_caps_what_a_vc_may_borrow():
    # a may borrow 0.25 x 8 = 2 GPUs: too few for a2 (4), which waits for its own nodes
    result = run_lending(borrowing=True, borrow_limit=0.25)
    assert times(result)["a2"] == (1000, 1500)
    assert result.summary()["borrowed_gpu_hours"] == 0


def test_borrowing_on_a_cluster_without_vcs_changes_nothing():
    workload, cluster = asim.presets.workload("toy"), asim.presets.cluster("toy")
    plain = asim.simulate(workload, cluster)
    lending = asim.simulate(workload, cluster, borrowing=True)
    pd.testing.assert_frame_equal(plain.jobs, lending.jobs)


def test_quota_vcs_borrow_beyond_their_quota_and_give_it_back():
    # quotas a=8, b=8 over the 16-GPU pool. a1 uses a's 8; a2 (4) borrows beyond the quota
    # at t=10 (pool GPUs b is not using). b1 (8) at t=100 finds only 4 free: a2 is
    # reclaimed, and b1 starts at once; a2 borrows again when b1 ends at t=400.
    cluster = asim.presets.cluster("toy", partition="quota")
    result = asim.simulate(make_jobs(LENDING), cluster, checkpoint_cost=20, borrowing=True)
    assert times(result) == {"a1": (0, 1000), "a2": (10, 830), "b1": (100, 400)}
    assert result.summary()["reclaims"] == 1


def test_the_job_behind_a_borrower_tries_its_own_gpus_in_the_same_round():
    # quota a=8: a1 holds 6 of them. At t=10, a2 (4 GPUs) is over the quota and borrows;
    # a3 (2 GPUs), now first in a's queue, fits in the quota and starts at once. (Found by
    # the borrowing invariant: a3 used to wait for the next event.)
    cluster = asim.presets.cluster("toy", partition="quota")
    rows = [("a1", "a", 0, 500, 6), ("a2", "a", 10, 100, 4), ("a3", "a", 10, 100, 2)]
    result = asim.simulate(make_jobs(rows), cluster, borrowing=True)
    assert times(result) == {"a1": (0, 500), "a2": (10, 110), "a3": (10, 110)}
    started = result.events[result.events["event"] == "start"].set_index("job_id")
    assert started["borrowed"].to_dict() == {"a1": False, "a2": True, "a3": False}


def test_snapshot_and_node_usage_survive_save_and_load(tmp_path):
    result = run_lending(borrowing=True)
    again = asim.Result.load(result.save(tmp_path / "lending"))
    for t in (0, 50, 100, 450, 2000):
        pd.testing.assert_frame_equal(again.snapshot(t), result.snapshot(t))
    pd.testing.assert_frame_equal(again.node_usage(), result.node_usage())
    usage = result.node_usage(every=100)
    # a1 holds all of a's nodes until t=1000; at t=100 b1 takes n2, n3 (a2 reclaimed); from
    # t=400 a2 borrows n2 again, until t=830
    assert usage.loc[100.0].to_dict() == {"n0": 4, "n1": 4, "n2": 4, "n3": 4}
    assert usage.loc[500.0].to_dict() == {"n0": 4, "n1": 4, "n2": 4, "n3": 0}
    assert usage.loc[900.0].to_dict() == {"n0": 4, "n1": 4, "n2": 0, "n3": 0}
    assert usage.index.max() == 1000.0 and usage.loc[1000.0].sum() == 0  # the run ends
    with pytest.raises(ValueError, match="every must be > 0"):
        result.node_usage(every=0)


def test_reclaim_takes_the_newest_borrower_first():
    # a1 fills a's nodes; a2 borrows n2 at t=10 and a3 borrows n3 at t=20 (each a whole
    # node of b's). t=100: b1 wants 4 of b's GPUs. Evicting the newest borrower (a3) alone
    # makes room: a3 is reclaimed (80 s run, 420 s left + 20 s cost) and b1 takes n3,
    # 100-400; a3 borrows n3 again at 400 and ends at 400 + 440 = 840. a2 is left alone.
    rows = [*LENDING[:2], ("a3", "a", 20, 500, 4), ("b1", "b", 100, 300, 4)]
    cluster = asim.presets.cluster("toy", partition="nodes")
    result = asim.simulate(make_jobs(rows), cluster, checkpoint_cost=20, borrowing=True)
    assert times(result) == {
        "a1": (0, 1000),
        "a2": (10, 510),
        "a3": (20, 840),
        "b1": (100, 400),
    }
    reclaims = result.events[result.events["event"] == "reclaim"]
    assert reclaims[["time", "job_id", "nodes", "cause"]].values.tolist() == [
        [100.0, "a3", "n3", "b1"]
    ]
    assert result.jobs.set_index("job_id")["reclaims"].to_dict() == {
        "a1": 0,
        "a2": 0,
        "a3": 1,
        "b1": 0,
    }


def test_a_free_node_smaller_than_the_waiting_job_is_not_fragmented():
    # j1 (12 GPUs) takes n0, n1, n2 until t=100; j2 (8 GPUs) waits. n3's 4 free GPUs are
    # usable by j2 (it spans nodes: on a 4-GPU node it needs min(8, 4) = 4), so none is
    # fragmented; j2 is not blocked either (8 GPUs do not fit in the 4 free by count).
    result = asim.simulate(
        make_jobs([("j1", "a", 0, 100, 12), ("j2", "a", 0, 50, 8)]),
        asim.presets.cluster("toy"),
        sample_every=10,
    )
    assert times(result) == {"j1": (0, 100), "j2": (100, 150)}
    timeline = result.timeline.set_index(["time", "vc"])
    for t in (0.0, 50.0, 90.0):
        row = timeline.loc[(t, ALL)]
        assert (row["free_gpus"], row["waiting_jobs"]) == (4, 1)
        assert (row["fragmented_gpus"], row["blocked_jobs"], row["frag_index"]) == (0, 0, 0.0)
        assert timeline.loc[(t, "a"), "fragmented_gpus"] == 0
