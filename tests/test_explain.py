"""``analysim.results.explain``: why a job waits, worked by hand on the toy cluster.

The toy workload under FIFO (docs/semantics.md): j1 (4 GPUs) on n0 from 0 to 600, j2 (8) on
n2, n3 from 60 to 960, j3 (2) on n1 from 120 to 420; j4 (8) arrives at 180 and waits for two
whole free nodes until 600; j5 (1) arrives at 300 and waits behind j4; from 600 the cluster is
full until j2 ends at 960.
"""

from __future__ import annotations

import pandas as pd
import pytest

import analysim as asim
from analysim.results.explain import explain, waiting_jobs, why_waiting
from analysim.results.spells import allocations, gpu_snapshot

COLUMNS = ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"]


def _run(partition: str | None = None, **config) -> tuple[asim.Result, asim.Cluster]:
    cluster = asim.presets.cluster("toy", partition=partition)
    return asim.simulate(asim.presets.workload("toy"), cluster, **config), cluster


def _custom(rows: list[tuple], **config) -> tuple[asim.Result, asim.Cluster]:
    cluster = asim.presets.cluster("toy")
    workload = asim.Workload.from_frame(pd.DataFrame(rows, columns=COLUMNS))
    return asim.simulate(workload, cluster, **config), cluster


def test_cluster_full_under_fifo():
    result, cluster = _run()
    assert why_waiting(result, "j4", 200, cluster) == (
        "j4 at t=200 s: it waits because the cluster is full: 14 of its 16 GPUs are in use, "
        "2 free, and it needs 8."
    )
    # j3 ended at 420: n1 is whole again, still only 4 free
    assert why_waiting(result, "j4", 500, cluster) == (
        "j4 at t=500 s: it waits because the cluster is full: 12 of its 16 GPUs are in use, "
        "4 free, and it needs 8."
    )
    # j4 took n0, n1 at 600; j2 holds n2, n3
    assert why_waiting(result, "j5", 700, cluster) == (
        "j5 at t=700 s: it waits because the cluster is full: 16 of its 16 GPUs are in use, "
        "0 free, and it needs 1."
    )


def test_head_of_line_blocking_names_the_jobs_ahead():
    result, cluster = _run()
    # j5 (1 GPU) would fit on n1 (2 free) but j4 is first in the one queue: the round at
    # 300 tried j4 (too few GPUs free) and nothing behind it
    assert why_waiting(result, "j5", 300, cluster) == (
        "j5 at t=300 s: it waits because it is ranked behind j4 in its queue; j4, first in "
        "line, does not fit (too few free GPUs), and without backfill no job ranked below it "
        "starts."
    )
    # j6 arrived at 480: the round at 480 (the last before 500) tried j4 only
    reason = explain(result, "j6", 500, cluster)
    assert (reason.kind, reason.ahead, reason.blocker, reason.free, reason.detail["round"]) == (
        "ranked_behind",
        ("j4",),
        "j4",
        4,
        480.0,
    )


def test_ranking_follows_the_runs_scheduler():
    # under SJF, j5 (600 s) ranks ahead of j4 (1200 s) and starts at once at 300 on n1
    result, cluster = _run(scheduler="sjf")
    assert explain(result, "j5", 300, cluster).kind == "running"
    # at 720 j7 (360 s) starts on n1; j4 waits with 4 GPUs free (n0), not behind anyone
    reason = explain(result, "j4", 720, cluster)
    assert (reason.kind, reason.free, reason.ahead) == ("full", 4, ())


def test_vc_full_when_vcs_own_nodes():
    result, cluster = _run(partition="nodes")
    assert why_waiting(result, "j4", 200, cluster) == (
        "j4 at t=200 s: it waits because its VC a is full: 6 of its 8 GPUs are in use, "
        "2 free, and it needs 8."
    )
    assert why_waiting(result, "j5", 300, cluster) == (
        "j5 at t=300 s: it waits because its VC b is full: 8 of its 8 GPUs are in use, "
        "0 free, and it needs 1."
    )


def test_quota_or_pool_full_under_quotas():
    result, cluster = _run(partition="quota")
    # VC b holds j2's 8 GPUs: its 8-GPU quota is used up although n1 has 2 free
    assert why_waiting(result, "j5", 300, cluster) == (
        "j5 at t=300 s: it waits because its VC b is at its quota: 8 of its 8 GPUs are in "
        "use, 0 free, and it needs 1."
    )
    # j4 (a, 8 GPUs): a holds 6 of its 8-GPU quota, so it cannot start whatever the pool has
    assert why_waiting(result, "j4", 200, cluster) == (
        "j4 at t=200 s: it waits because its VC a is at its quota: 6 of its 8 GPUs are in "
        "use, 2 free, and it needs 8."
    )
    # a's j7 (1 GPU) at 1000 finds a's quota used up by j4
    reason = explain(result, "j7", 1000, cluster)
    assert (reason.kind, reason.scope, reason.free) == ("full", "quota of VC a", 0)


def test_reclaimed_at_once_under_quotas():
    # quotas a = b = 8: b's y borrows 4 GPUs beyond b's quota (n3); w (a, 2 GPUs) arrives at
    # 10 with room in a's quota and reclaims them at once
    rows = [
        ("x", "b", "u", 0.0, 1000.0, 8),
        ("y", "b", "u", 0.0, 1000.0, 4),
        ("z", "a", "u", 0.0, 1000.0, 4),
        ("w", "a", "u", 10.0, 100.0, 2),
    ]
    cluster = asim.presets.cluster("toy", partition="quota")
    workload = asim.Workload.from_frame(pd.DataFrame(rows, columns=COLUMNS))
    result = asim.simulate(workload, cluster, borrowing=True)
    assert explain(result, "w", 10, cluster).kind == "running"
    assert why_waiting(result, "y", 50, cluster) == (
        "y at t=50 s: its borrowed GPUs were reclaimed by w at t=10 s. It waits because its "
        "VC b is at its quota: 8 of its 8 GPUs are in use, 0 free, and it needs 4. Borrowing "
        "cannot help: only 2 GPUs of other VCs are idle."
    )


def test_fragmented_when_free_gpus_are_spread():
    # spread puts the four 2-GPU jobs on four nodes: 8 GPUs free, at most 2 per node
    rows = [(f"s{i}", "a", "u", 0.0, 1000.0, 2) for i in range(1, 5)]
    result, cluster = _custom([*rows, ("big", "a", "u", 10.0, 100.0, 4)], placement="spread")
    assert why_waiting(result, "big", 100, cluster) == (
        "big at t=100 s: it waits because enough GPUs are free but fragmented: 8 GPUs are "
        "free to it over 4 nodes, at most 2 on one node, and placement spread finds no place "
        "for 4."
    )


def test_preempted_job_names_who_preempted_it():
    # SJF with preemption: "short" arrives at 10 and evicts "long" at the quantum (t=60)
    rows = [("long", "a", "u", 0.0, 1000.0, 16), ("short", "a", "u", 10.0, 100.0, 4)]
    result, cluster = _custom(rows, scheduler="sjf", preemption=True, checkpoint_cost=30)
    assert why_waiting(result, "long", 100, cluster) == (
        "long at t=100 s: it was preempted by short at t=60 s. It waits because the cluster "
        "is full: 4 of its 16 GPUs are in use, 12 free, and it needs 16. Preemption found "
        "no lower-ranked job it may evict that makes room for it."
    )
    # before the round at 60, "short" waits: the event round at its arrival (10) does not
    # evict; the full round at 60 evicts "long" (protected until it has run one quantum)
    assert why_waiting(result, "short", 30, cluster) == (
        "short at t=30 s: it waits because the cluster is full: 16 of its 16 GPUs are in use, "
        "0 free, and it needs 4. Preemption is tried at full rounds only. At the next full "
        "round, t=60 s, it evicts long."
    )
    reason = explain(result, "long", 100, cluster)
    assert (reason.preempted_by, reason.preempted_at) == (("short",), 60.0)
    assert explain(result, "long", 200, cluster).kind == "running"  # resumed at 160


def test_a_job_that_may_preempt_at_the_next_full_round():
    # "short" arrives at 70, after "long" became evictable (60): it waits for the round at 120
    rows = [("long", "a", "u", 0.0, 1000.0, 16), ("short", "a", "u", 70.0, 100.0, 4)]
    result, cluster = _custom(rows, scheduler="sjf", preemption=True)
    assert why_waiting(result, "short", 100, cluster) == (
        "short at t=100 s: it waits because the cluster is full: 16 of its 16 GPUs are in use, "
        "0 free, and it needs 4. Preemption is tried at full rounds only. At the next full "
        "round, t=120 s, it evicts long."
    )
    assert explain(result, "short", 120, cluster).kind == "running"
    # without preemption nothing is said about it
    plain, _ = _custom(rows, scheduler="sjf")
    assert why_waiting(plain, "short", 100, cluster).endswith("and it needs 4.")


def test_preemption_refused_because_the_lower_ranked_job_is_protected():
    # "long" resumes at 160 after "short" (it preempted it at 60): protected until 160 + one
    # quantum (60) + its restore cost (30) = 250. "short2" arrives at 170; the full round at
    # 180 finds no job it may evict (long is protected); the round at 300 evicts long.
    rows = [
        ("long", "a", "u", 0.0, 1000.0, 16),
        ("short", "a", "u", 10.0, 100.0, 4),
        ("short2", "a", "u", 170.0, 100.0, 4),
    ]
    result, cluster = _custom(rows, scheduler="sjf", preemption=True, checkpoint_cost=30)
    assert why_waiting(result, "short2", 200, cluster) == (
        "short2 at t=200 s: it waits because the cluster is full: 16 of its 16 GPUs are in use, "
        "0 free, and it needs 4. Preemption: no lower-ranked job it may evict makes room for "
        "it, and lower-ranked jobs are protected (a (re)started job first runs one quantum); "
        "the next protection ends at t=250 s. At the next full round, t=300 s, it evicts long."
    )
    # at 175 the last round (170, its arrival) was an event round: no eviction is tried
    reason = explain(result, "short2", 175, cluster)
    assert (reason.detail["round"], reason.detail["outlook"], reason.detail["next_round"]) == (
        170.0,
        "not_full",
        180.0,
    )


@pytest.mark.parametrize(
    ("job", "time", "kind", "sentence"),
    [
        ("j1", 100, "running", "j1 at t=100 s: not waiting: it is running on n0."),
        ("j8", 100, "not_submitted", "j8 at t=100 s: not waiting: it has not been submitted yet."),
        ("j8", 2000, "done", "j8 at t=2000 s: not waiting: it has finished."),
        ("j4", 600, "running", "j4 at t=600 s: not waiting: it is running on n0,n1."),
    ],
)
def test_jobs_that_are_not_waiting(job, time, kind, sentence):
    result, cluster = _run()
    reason = explain(result, job, time, cluster)
    assert (reason.kind, reason.waiting, reason.text) == (kind, False, sentence)


def test_unknown_job_is_a_clear_error():
    result, cluster = _run()
    with pytest.raises(ValueError, match="no job 'j99'"):
        why_waiting(result, "j99", 0, cluster)


def test_waiting_jobs_at_a_time():
    result, _ = _run()
    assert waiting_jobs(result, 500)["job_id"].tolist() == ["j4", "j5", "j6"]
    assert waiting_jobs(result, 600)["job_id"].tolist() == ["j5", "j6"]  # j4 started at 600
    assert waiting_jobs(result, 960).empty


def test_allocations_and_snapshot_rebuild_the_toy_run():
    result, cluster = _run()
    spells = allocations(result, cluster)
    j4 = spells[spells["job_id"] == "j4"]
    assert sorted(zip(j4["node"], j4["gpu"], strict=True)) == [
        (n, g) for n in ("n0", "n1") for g in range(4)
    ]
    assert set(j4["start"]) == {600.0} and set(j4["end"]) == {1800.0}
    # busy GPU-seconds of the spells = the run's
    busy = (spells["end"] - spells["start"]).sum()
    assert busy == pytest.approx(sum(result.meta["busy_gpu_seconds"]))
    snap = gpu_snapshot(result, 300, cluster)
    assert len(snap) == 16
    assert snap.groupby("node")["job_id"].count().to_dict() == {
        "n0": 4,
        "n1": 2,
        "n2": 4,
        "n3": 4,
    }
    assert snap.loc[snap["node"] == "n1", "job_id"].tolist() == ["j3", "j3", None, None]
    assert not snap["borrowed"].any()


def test_borrowed_gpus_and_reclaims_under_borrowing():
    # VC b borrows n1 (VC a's) for j5 at 300 and j6 at 480; j4 reclaims them at 600
    result, _ = _run(partition="nodes", borrowing=True)
    # the result knows its nodes (Result.snapshot): no cluster= needed
    assert why_waiting(result, "j4", 500) == (
        "j4 at t=500 s: it waits because its VC a is full: 7 of its 8 GPUs are in use (3 by "
        "jobs of other VCs that borrowed them), 1 free, and it needs 8. Reclaiming the GPUs "
        "its VC lent to other VCs would not make room for it. Borrowing cannot help: no GPU "
        "of another VC is idle."
    )
    # the round at 600 reclaimed j5 and j6 for j4, then tried j5 (first in b's queue) on
    # b's GPUs and on borrowed ones, in vain, and j6 not at all (asked before 660: after a
    # reclaim the group is looked at again at the next quantum boundary, a round that, with
    # no GPU free and none lent, ends at once)
    assert why_waiting(result, "j5", 650) == (
        "j5 at t=650 s: its borrowed GPUs were reclaimed by j4 at t=600 s. It waits because "
        "its VC b is full: 8 of its 8 GPUs are in use, 0 free, and it needs 1. Borrowing "
        "cannot help: no GPU of another VC is idle."
    )
    assert result.decisions.rounds.time.tolist()[9:11] == [600, 660]
    assert why_waiting(result, "j6", 650) == (
        "j6 at t=650 s: its borrowed GPUs were reclaimed by j4 at t=600 s. It waits because "
        "it is ranked behind j5 in its queue; j5, first in line, does not fit (too few free "
        "GPUs), and without backfill no job ranked below it starts."
    )
    reason = explain(result, "j5", 700)
    assert (reason.preempted_by, reason.preempted_at, reason.reclaimed) == (("j4",), 600.0, True)


class _WithoutSnapshot:
    """A result's frames without ``snapshot``: what gpu_snapshot rebuilds by itself."""

    def __init__(self, result: asim.Result) -> None:
        self.jobs, self.events, self.meta = result.jobs, result.events, result.meta
        self.config, self.timeline = result.config, result.timeline


def test_rebuilt_snapshot_matches_the_engines():
    cluster = asim.presets.cluster("venus_overloaded")
    workload = asim.presets.workload("venus_overloaded", days=2)
    result = asim.simulate(workload, cluster, scheduler="las", preemption=True, borrowing=True)
    plain = _WithoutSnapshot(result)
    spells = allocations(plain, cluster)
    for time in (3_600.0, 40_000.0, 86_400.0, 120_000.0, 170_000.0):
        mine = gpu_snapshot(plain, time, cluster, spells)
        theirs = result.snapshot(time)
        pd.testing.assert_frame_equal(mine, theirs, check_dtype=False)
    assert result.snapshot(86_400.0)["borrowed"].any()  # the case is not trivial


def test_snapshot_rebuilt_from_node_names_alone():
    # records without the GPU column: one-node jobs take their node's lowest free GPUs and
    # the toy's two-node jobs whole nodes, so the rebuild is still exact here
    result, cluster = _run()
    plain = _WithoutSnapshot(result)
    plain.events = result.events.drop(columns=["gpus"], errors="ignore")
    for time in (0.0, 300.0, 700.0, 1000.0, 1500.0):
        mine = gpu_snapshot(plain, time, cluster)
        pd.testing.assert_frame_equal(mine, result.snapshot(time), check_dtype=False)


# -- the occupancy plots drawn from these snapshots ----------------------------------------------
def test_occupancy_heatmap_colours_each_gpu_by_its_jobs_vc():
    from matplotlib.colors import to_rgb
    from matplotlib.figure import Figure

    from analysim.plotting.occupancy import FREE, occupancy_heatmap, vc_palette

    result, _ = _run(partition="nodes", borrowing=True)
    snap = result.snapshot(500.0)  # j1 on n0, j5 + j6 (VC b) borrowing n1, j2 on n2, n3
    palette = vc_palette(["a", "b"])
    ax = occupancy_heatmap(snap, ax=Figure().add_subplot(), palette=palette)
    image = ax.images[0].get_array()  # rows: GPU 0..3 then the owner strip; columns: nodes
    assert image.shape[:2] == (5, 4)
    assert tuple(image[0, 0]) == to_rgb(palette["a"])  # n0:0 holds j1 (a)
    assert tuple(image[0, 1]) == to_rgb(palette["b"])  # n1:0 holds j6 (b), borrowed
    assert tuple(image[3, 1]) == to_rgb(FREE)  # n1:3 is free
    assert [tuple(image[4, n]) for n in range(4)] == [to_rgb(palette[v]) for v in "aabb"]
    crosses = ax.collections[0].get_offsets()  # the borrowed GPUs: n1:0, n1:1, n1:2
    assert sorted(map(tuple, crosses.tolist())) == [(1.0, 0.0), (1.0, 1.0), (1.0, 2.0)]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a", "b", "free", "borrowed"]


def test_occupancy_heatmap_names_missing_columns():
    from analysim.plotting.occupancy import occupancy_heatmap

    with pytest.raises(ValueError, match=r"lacks column\(s\) \['job_vc'\]"):
        occupancy_heatmap(pd.DataFrame({"node": ["n0"], "gpu": [0], "job_id": [None]}))


def test_gantt_draws_one_bar_per_gpu_spell():
    from matplotlib.figure import Figure

    from analysim.plotting.occupancy import gantt

    result, cluster = _run()
    ax = gantt(result, ax=Figure().add_subplot(), cluster=cluster)
    bars = [b for c in ax.collections for b in c.get_paths()]
    assert len(bars) == len(allocations(result, cluster)) == 30  # the toy asks for 30 GPUs
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["n0:0", "n0:1"]


def test_the_blocker_is_the_job_the_borrowing_round_stopped_at():
    # VC b's own nodes (n2, n3) are full with bx. At 10 the round tries b1 on b's GPUs (too
    # few free: b's queue blocks), then the borrowing round starts b1 on VC a's n0 and stops
    # at b2 (b may borrow 0.5 x 8 = 4 GPUs): b3 waits behind b2, not behind b1 (running)
    rows = [
        ("bx", "b", "u", 0.0, 1000.0, 8),
        ("b1", "b", "u", 10.0, 100.0, 4),
        ("b2", "b", "u", 10.0, 100.0, 4),
        ("b3", "b", "u", 10.0, 100.0, 1),
    ]
    cluster = asim.presets.cluster("toy", partition="nodes")
    workload = asim.Workload.from_frame(pd.DataFrame(rows, columns=COLUMNS))
    result = asim.simulate(workload, cluster, borrowing=True, borrow_limit=0.5)
    assert explain(result, "b1", 20, cluster).kind == "running"
    assert why_waiting(result, "b3", 20, cluster) == (
        "b3 at t=20 s: it waits because it is ranked behind b2 in its queue; b2, first in "
        "line, does not fit (too few free GPUs), and without backfill no job ranked below it "
        "starts."
    )
