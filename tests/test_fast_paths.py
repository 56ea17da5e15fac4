"""The engine's shortcuts give exactly the runs of the plain rules they stand in for.

Each shortcut is switched off through a policy subclass (or compared with the numpy rule it
replaces), and the runs must agree frame for frame:

* a LAS ranking kept between rounds (``Scheduler.ranking_kept``) vs ranking afresh each round;
* LAS's ranking, promotions and next change kept job by job (``analysim.las_ranking``) vs
  asked of the scheduler over ``JobView`` arrays, as for a custom scheduler;
* eviction and reclaim trials counted in plain Python for jobs that fit on one node
  (``Placer.picks_any_fitting_node``) vs asking the placer about every trial;
* trial evictions on a few nodes kept in a Python list vs on a copy of the numpy free map;
* ``consolidate``'s plain-Python placement on a few nodes vs its numpy rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from jobs_table import make_jobs
from strategies import cases, workloads

from analysim import Cluster, SimConfig, Workload, simulate
from analysim.engine import Simulation, easy, evictions, rounds, simulation, starts, tenancy
from analysim.engine.las_ranking import _SLACK, LASRanking, _near_top, keeps_las_rules
from analysim.engine.shortcuts import Shortcuts
from analysim.engine.tails import replay
from analysim.policies.placement import PLACERS, Consolidate, Topology, best_fit
from analysim.policies.scheduling import LAS

RUNS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class RerankingLAS(LAS):
    """LAS without the kept ranking: the engine ranks afresh every round."""

    ranking_kept = False


class ArrayLAS(LAS):
    """LAS with its rules asked over ``JobView`` arrays (its ranking is still kept)."""

    def next_change(self, jobs):
        return super().next_change(jobs)


class AskingConsolidate(Consolidate):
    """Consolidate without the one-node shortcut: the engine asks it about every trial."""

    picks_any_fitting_node = False


def _same_runs(a, b) -> None:
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def same_decisions(a, b) -> None:
    """The decision records ``explain`` reads (rounds and tries) of two results are equal."""
    for name in ("rounds", "tries"):
        pd.testing.assert_frame_equal(getattr(a.decisions, name), getattr(b.decisions, name))


@RUNS
@given(
    cases(max_jobs=10, max_duration=400),
    st.data(),
    st.sampled_from([(60.0,), (100.0, 1000.0), (30.0, 90.0, 300.0)]),
    st.sampled_from([None, 1.0, 4.0]),
)
def test_a_kept_las_ranking_gives_the_runs_of_ranking_every_round(drawn, data, limits, factor):
    case, _, config = drawn
    workload = data.draw(workloads(case.vcs, max_jobs=10, max_duration=400, gpus=(1, 2, 3, 4)))
    config = config.replace(preemption=data.draw(st.booleans()))
    kept, afresh = LAS(limits, factor), RerankingLAS(limits, factor)
    _same_runs(
        simulate(workload, case.cluster, config.replace(scheduler=kept)),
        simulate(workload, case.cluster, config.replace(scheduler=afresh)),
    )


@st.composite
def las_cases(draw, max_jobs: int):
    """(cluster, workload, config, LAS thresholds, starvation factor): any cluster and
    options, 1-4 GPU jobs with fractional times too (float noise must not tell LAS's two
    paths apart), preemption on or off."""
    case, _, config = draw(cases(max_jobs=max_jobs, max_duration=400))
    workload = draw(workloads(case.vcs, max_jobs=max_jobs, max_duration=400, gpus=(1, 2, 3, 4)))
    scale = draw(st.sampled_from([1.0, 0.7, 1 / 3]))
    jobs = workload.jobs
    workload = Workload.from_frame(
        jobs.assign(submit_time=jobs.submit_time * scale, duration=jobs.duration * scale)
    )
    config = config.replace(
        preemption=draw(st.booleans()), quantum=draw(st.sampled_from([1, 7, 60]))
    )
    limits = draw(st.sampled_from([(60.0,), (100.0, 1000.0), (30.0, 90.0, 300.0), (70.0, 71.0)]))
    return case.cluster, workload, config, limits, draw(st.sampled_from([None, 1.0, 2.5]))


@RUNS
@given(las_cases(max_jobs=10))
def test_las_kept_job_by_job_gives_the_runs_of_its_array_rules(drawn):
    cluster, workload, config, limits, factor = drawn
    fast, arrays = LAS(limits, factor), ArrayLAS(limits, factor)
    assert keeps_las_rules(fast) and not keeps_las_rules(arrays)
    _same_runs(
        simulate(workload, cluster, config.replace(scheduler=fast)),
        simulate(workload, cluster, config.replace(scheduler=arrays)),
    )


class CheckedLASRanking(LASRanking):
    """Every answer checked, as it is given, against LAS's array rules on the same state."""

    promoted = 0

    def order(self, group):
        got = super().order(group)
        wanted = self.sim.decider.ranker.rank(group, include_running=True)
        np.testing.assert_array_equal(got.jobs(), wanted)
        return got

    def next_change(self, group):
        got = super().next_change(group)
        view = self.sim.decider.ranker.view(group, include_running=True)
        assert got == self.sim.scheduler.next_change(view)  # the very same float
        return got

    def promotions(self, group):
        view = self.sim.decider.ranker.view(group, include_running=False)
        resets = self.sim.scheduler.service_resets(view)
        wanted = set() if resets is None else set(view.index[resets].tolist())
        got = super().promotions(group)
        assert sorted(got) == sorted(wanted) and len(got) == len(set(got))
        self.promoted += len(got)
        return got


def _checked_run(workload, cluster, config):
    sim = Simulation(workload, cluster, config)
    assert isinstance(sim.las, LASRanking)
    sim.las = CheckedLASRanking(sim, sim.scheduler, sim.partition.n_groups)
    sim.run()
    return sim


@RUNS
@given(las_cases(max_jobs=12))
def test_las_kept_job_by_job_answers_as_its_array_rules_at_every_round(drawn):
    cluster, workload, config, limits, factor = drawn
    _checked_run(workload, cluster, config.replace(scheduler=LAS(limits, factor)))


@RUNS
@given(cases(max_jobs=12, max_duration=400), st.data())
def test_las_kept_job_by_job_answers_as_its_array_rules_under_defragmentation(drawn, data):
    """Migrations (here by periodic defragmentation) move running jobs between their
    reaching a queue's limit and the next ranking."""
    case, workload, config = drawn
    config = config.replace(
        scheduler=LAS((20.0, 50.0, 120.0, 400.0), data.draw(st.sampled_from([None, 1.0]))),
        preemption=data.draw(st.booleans()),
        migration=True,
        defrag_every=data.draw(st.sampled_from([1, 7, 30])),
        quantum=data.draw(st.sampled_from([1, 7, 60])),
    )
    _checked_run(workload, case.cluster, config)


def test_las_kept_job_by_job_answers_as_its_array_rules_on_a_busy_day():
    from analysim import presets

    workload = presets.workload("venus_overloaded", seed=5, days=1, load_scale=1.5)
    config = SimConfig(scheduler=LAS((3_600.0, 36_000.0), 1.5), preemption=True, migration=True)
    sim = _checked_run(workload, presets.cluster("venus_overloaded"), config)
    assert sim.preemptions.sum() > 100 and sim.las.promoted > 10
    assert max(sim.las.queue_of) == 2  # jobs were demoted twice


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=40))
def test_the_heap_entries_near_the_top_are_all_found(times):
    import heapq

    heap = [(t, j, 0) for j, t in enumerate(times)]
    heapq.heapify(heap)
    wanted = sorted(e for e in heap if e[0] <= heap[0][0] + _SLACK)
    assert sorted(_near_top(heap)) == wanted


def test_las_kept_job_by_job_on_a_busy_week_gives_the_runs_of_its_array_rules():
    """A realistic run (thousands of promotions, demotions and evictions) both ways."""
    from analysim import presets

    workload = presets.workload("venus_overloaded", seed=3, days=3, load_scale=1.3)
    cluster = presets.cluster("venus_overloaded")
    config = SimConfig(preemption=True, quantum=60)
    for limits, factor in [((18_000.0,), 4.0), ((3_600.0, 36_000.0), 1.5)]:
        _same_runs(
            simulate(workload, cluster, config.replace(scheduler=LAS(limits, factor))),
            simulate(workload, cluster, config.replace(scheduler=ArrayLAS(limits, factor))),
        )


@RUNS
@given(cases(max_jobs=10, max_duration=400), st.data())
def test_trials_on_few_nodes_in_a_list_choose_the_victims_of_the_numpy_free_map(drawn, data):
    case, workload, config = drawn
    config = config.replace(
        preemption=True,
        placement=data.draw(st.sampled_from(["consolidate", "topology", "random", "spread"])),
    )
    placer = config.make_placer()

    class Asking(type(placer)):  # every trial asks the placer, none is counted
        picks_any_fitting_node = False

    config = config.replace(placement=Asking())
    listed = simulate(workload, case.cluster, config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evictions, "SMALL", 0)
        _same_runs(listed, simulate(workload, case.cluster, config))


@RUNS
@given(cases(max_jobs=10, max_duration=400), st.data())
def test_one_node_eviction_trials_choose_the_victims_the_placer_would(drawn, data):
    """With preemption (evictions) and borrowing (reclaims), jobs of 1-4 GPUs competing."""
    case, _, config = drawn
    workload = data.draw(workloads(case.vcs, max_jobs=10, max_duration=400, gpus=(1, 2, 3, 4)))
    config = config.replace(preemption=True, borrowing=data.draw(st.booleans()))
    counted = simulate(workload, case.cluster, config.replace(placement=Consolidate()))
    asked = simulate(workload, case.cluster, config.replace(placement=AskingConsolidate()))
    _same_runs(counted, asked)


def _outcome(rows, cluster, placer) -> dict[str, tuple]:
    jobs = simulate(
        make_jobs(rows),
        cluster,
        scheduler="sjf",
        preemption=True,
        checkpoint_cost=30,
        placement=placer,
    ).jobs
    return {
        row.job_id: (row.start_time, row.end_time, row.preemptions, row.nodes)
        for row in jobs.itertuples()
    }


@pytest.mark.parametrize("placer", [Consolidate(), AskingConsolidate()], ids=["counted", "asked"])
def test_evictions_keep_a_victim_the_later_ones_made_unneeded(placer):
    # Nodes n0, n1 of 4 GPUs. At 0: x1 (3 GPUs) -> n0, x2 (3) -> n1, x3 (1) -> n0 (best fit,
    # lowest), x4 (1) -> n1. h (4 GPUs, the shortest) arrives at 120; the lowest-ranked go
    # first: x4 (n1 has 1 free), x3 (n0 has 1), x2 (n1 has 4: fits). Evicting x3 turns out
    # not to be needed (n1 alone holds h), so x3 keeps running. h runs 120-720 on n1; x2 and
    # x4 resume there at 720 with 10,000 - 120 + 30 s left: they end at 10,630.
    rows = [
        ("x1", "a", 0, 10_000, 3),
        ("x2", "a", 0, 10_000, 3),
        ("x3", "a", 0, 10_000, 1),
        ("x4", "a", 0, 10_000, 1),
        ("h", "a", 120, 600, 4),
    ]
    assert _outcome(rows, Cluster.uniform(1, 2, 4), placer) == {
        "x1": (0, 10_000, 0, "n0"),
        "x2": (0, 10_630, 1, "n1"),
        "x3": (0, 10_000, 0, "n0"),
        "x4": (0, 10_630, 1, "n1"),
        "h": (120, 720, 0, "n1"),
    }


@pytest.mark.parametrize("placer", [Consolidate(), AskingConsolidate()], ids=["counted", "asked"])
def test_evictions_free_quota_not_just_gpus(placer):
    # VCs a and b hold 4-GPU quotas over n0, n1. At 0: a1 -> n0, a2 -> n0, b1 -> n1 (2 GPUs
    # each). h (a, 2 GPUs) arrives at 120: n1 has room, but a's quota is spent. Evicting b1
    # (the lowest-ranked) frees GPUs, not quota; evicting a2 too does, and then b1's eviction
    # is not needed. h takes a2's GPUs on n0 (best fit, lowest) until 720; a2 resumes there
    # with 10,000 - 120 + 30 s left.
    rows = [("a1", "a", 0, 10_000, 2), ("a2", "a", 0, 10_000, 2), ("b1", "b", 0, 10_000, 2)]
    rows.append(("h", "a", 120, 600, 2))
    quotas = Cluster.uniform(1, 2, 4, quotas={"a": 4, "b": 4})
    assert _outcome(rows, quotas, placer) == {
        "a1": (0, 10_000, 0, "n0"),
        "a2": (0, 10_630, 1, "n0"),
        "b1": (0, 10_000, 0, "n1"),
        "h": (120, 720, 0, "n0"),
    }


@st.composite
def free_maps(draw):
    """(num_gpus, free GPUs per node, topology) for up to 64 nodes on up to 4 racks."""
    n = draw(st.integers(1, 64))
    n_racks = draw(st.integers(1, 4))
    capacity = np.array(draw(st.lists(st.sampled_from([0, 2, 4, 8]), min_size=n, max_size=n)))
    whole = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    partial = np.array([draw(st.integers(0, c)) for c in capacity.tolist()])
    free = np.where(whole, capacity, partial).astype(np.int64)
    racks = np.sort(np.array(draw(st.lists(st.integers(0, n_racks - 1), min_size=n, max_size=n))))
    topology = Topology(capacity.astype(np.int64), racks.astype(np.int64), n_racks)
    num_gpus = draw(st.integers(1, int(free.sum()) + 4))
    return num_gpus, free, topology


@settings(max_examples=400, deadline=None)
@given(free_maps())
def test_consolidate_places_few_nodes_in_python_as_numpy_would(drawn):
    num_gpus, free, topology = drawn
    few = Consolidate._spread_few(num_gpus, free, topology)
    many = Consolidate._spread_many(num_gpus, free, topology)
    if many is None:
        assert few is None
    else:
        assert few is not None and few.dtype == many.dtype
        np.testing.assert_array_equal(few, many)


@settings(max_examples=600, deadline=None)
@given(free_maps(), st.sampled_from(["consolidate", "first_fit", "spread", "random", "topology"]))
def test_can_spread_says_whether_the_placer_would_spread(drawn, name):
    num_gpus, free, topology = drawn
    placer = PLACERS.make(name)
    assume(topology.largest < num_gpus <= free.sum())  # spread_over_nodes is asked only then
    taken = placer.spread_over_nodes(num_gpus, free, topology, np.random.default_rng(0))
    assert placer.can_spread(num_gpus, free, topology) is (taken is not None)
    if name == "consolidate":  # its rule for many nodes (numpy): pad with 65 empty nodes
        pad = np.zeros(65, dtype=np.int64)
        many = (
            np.r_[free, pad],
            Topology(np.r_[topology.capacity, pad], np.r_[topology.rack, pad], topology.n_racks),
        )
        taken = placer.spread_over_nodes(num_gpus, *many, np.random.default_rng(0))
        assert placer.can_spread(num_gpus, *many) is (taken is not None)


def test_consolidate_can_spread_examples():
    topology = Topology(np.array([8, 8, 8, 4]), np.array([0, 0, 1, 1]), 2)

    def can(num_gpus, free, topology):
        """The answer on these nodes, checked to be the same with 65 empty nodes added
        (consolidate's numpy rule for many nodes)."""
        pad = np.zeros(65, dtype=np.int64)
        padded = Topology(np.r_[topology.capacity, pad], np.r_[topology.rack, pad], 2)
        answer = Consolidate().can_spread(num_gpus, np.array(free), topology)
        assert Consolidate().can_spread(num_gpus, np.r_[free, pad], padded) is answer
        return answer

    assert can(16, [8, 8, 0, 0], topology)  # two whole nodes
    assert can(12, [8, 3, 0, 4], topology)  # a whole node, then the rest on n1 or n3
    assert not can(12, [8, 3, 1, 0], topology)  # 4 left over, and no node has 4
    assert not can(20, [8, 8, 3, 1], topology)  # 4 left over: only the whole nodes have 4
    assert can(10, [8, 8, 0, 0], topology)  # the second whole node takes the 2 left over
    assert can(28, [8, 8, 8, 4], topology)  # every node wholly free and needed, exactly


@settings(max_examples=300, deadline=None)
@given(free_maps())
def test_best_fit_on_few_nodes_is_the_tightest_lowest_node(drawn):
    num_gpus, free, _ = drawn
    room = np.where(free >= num_gpus, free, np.iinfo(np.int64).max)
    expected = int(room.argmin()) if (free >= num_gpus).any() else None
    assert best_fit(num_gpus, free) == expected


def test_best_fit_examples():
    free = np.array([3, 8, 2, 3, 0])
    assert best_fit(3, free) == 0  # two nodes with 3 free: the lower one
    assert best_fit(2, free) == 2
    assert best_fit(4, free) == 1
    assert best_fit(9, free) is None


# -- the reference mode: every shortcut off at once -------------------------------------------
def _run(workload, cluster, config, reference: bool) -> tuple[Simulation, object]:
    sim = Simulation(workload, cluster, config, reference=reference)
    return sim, sim.run().result()


@RUNS
@given(cases(max_jobs=12, max_duration=400), st.sampled_from([LAS((60.0, 300.0), 2.0), None]))
def test_whole_runs_are_those_of_the_reference_mode(drawn, las):
    """Any cluster, scheduler, placer and option, with every memo, kept ranking, skipped
    round and placer shortcut on, gives the run of the plain rules, frame for frame."""
    case, workload, config = drawn
    if las is not None:  # LAS with its starvation guard (promotions), kept job by job
        config = config.replace(scheduler=las)
    fast, fast_result = _run(workload, case.cluster, config, reference=False)
    plain, plain_result = _run(workload, case.cluster, config, reference=True)
    _same_runs(fast_result, plain_result)
    assert plain.rounds >= fast.rounds
    memos = plain.decider.starts._failed_at, plain.decider.evictions._preempt_failed_at
    assert not any(memos)  # the memos stay empty
    assert plain.las is None and not plain.flags.static and not plain.picks_any_fitting_node


def test_the_reference_mode_runs_a_full_round_at_every_quantum_while_jobs_wait():
    # fifo without preemption: a full round cannot change anything, so the fast engine only
    # visits the times of arrivals and ends (0, 10, 100, 130); the reference mode also
    # every 60 s quantum boundary while j2 waits (60)
    workload = make_jobs([("j1", "a", 0, 100, 16), ("j2", "a", 10, 30, 16)])
    cluster = Cluster.uniform(1, 4, 4)
    config = SimConfig(scheduler="fifo", quantum=60)
    fast, fast_result = _run(workload, cluster, config, reference=False)
    plain, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)
    assert (fast.rounds, plain.rounds) == (4, 5)


@RUNS
@given(cases(max_jobs=14, max_duration=400), st.sampled_from([LAS((60.0, 300.0), 2.0), None]))
def test_easy_backfill_with_preemption_runs_as_the_reference_mode(drawn, las):
    """EASY backfill with preemption (the reservation memo and the trial evictions skipped
    for jobs with the needs of one that failed them) gives the run of the plain rules."""
    case, workload, config = drawn
    config = config.replace(backfill="easy", preemption=True)
    if las is not None:
        config = config.replace(scheduler=las)
    _, fast_result = _run(workload, case.cluster, config, reference=False)
    _, plain_result = _run(workload, case.cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@dataclass(frozen=True)
class _WithoutEasyShortcuts(Shortcuts):
    """Every shortcut but the three that EASY backfill with preemption takes most."""

    alike_evictions: bool = False
    reserved_memo: bool = False
    kept_reservations: bool = False


def _busy_jobs(n: int, seed: int) -> Workload:
    """``n`` jobs of 1-8 GPUs arriving faster than two VCs of 16 GPUs each can run them."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 40, n))
    rows = [
        (f"j{i}", "ab"[i % 2], int(submit[i]), int(rng.integers(30, 900)), int(g))
        for i, g in enumerate(rng.choice([1, 1, 2, 2, 4, 8], n))
    ]
    return make_jobs(rows)


@pytest.mark.parametrize("scheduler", ["las", "fifo", "srtf"])
def test_easy_backfill_with_preemption_on_a_busy_cluster_runs_as_the_reference_mode(
    scheduler, monkeypatch
):
    """A long queue on a full cluster: the shortcuts are taken (a job stopped by the same
    reservations again, jobs of alike needs that fail their trial evictions, reservations
    kept past the releases they foresaw) and change
    nothing: the run is the reference mode's, and the decision records (which explain
    reads) are those of the same run without these two shortcuts."""
    workload = _busy_jobs(120, seed=7)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, preemption=True, backfill="easy", quantum=60)
    fast, fast_result = _run(workload, cluster, config, reference=False)
    plain, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)
    assert fast.decider.starts._reserved_seen  # the memo was used
    assert not plain.decider.starts._reserved_seen
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutEasyShortcuts)
    slow, slow_result = _run(workload, cluster, config, reference=False)
    assert not slow.decider.starts._reserved_seen
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)


@pytest.mark.parametrize("preemption", [False, True])
def test_easy_backfill_with_a_random_placer_runs_as_the_reference_mode(preemption):
    """A reservation made again later may be placed elsewhere by a placer that draws: it is
    not kept past the releases it foresaw (kept, it gave other runs than the plain rules)."""
    workload = _busy_jobs(200, seed=3)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(placement="random", preemption=preemption, backfill="easy", quantum=60)
    fast, fast_result = _run(workload, cluster, config, reference=False)
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)
    assert not fast.decider.easy.keep_reservations


@dataclass(frozen=True)
class _WithoutBackfillShortcuts(Shortcuts):
    """Every shortcut but the two that backfill rounds without preemption take most."""

    replayed_tails: bool = False
    full_at_a_glance: bool = False


@pytest.mark.parametrize(
    ("scheduler", "backfill"), [("fifo", "easy"), ("sjf", "easy"), ("fifo", True)]
)
def test_backfill_rounds_replay_their_tail_and_see_full_at_a_glance(
    scheduler, backfill, monkeypatch
):
    """A long queue on a full cluster without preemption: rounds copy the tries of the
    round before (nothing started or stopped since) and record jobs asking more GPUs than
    are free as full without placing them; the run, and every decision record that explain
    reads, are those of the same run without these shortcuts, and of the reference mode."""
    workload = _busy_jobs(160, seed=3)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, backfill=backfill, quantum=60)
    replays: list[int] = []

    def counted(tail, *args):
        replays.append(len(tail.ranks))
        return replay(tail, *args)

    monkeypatch.setattr(rounds, "replay", counted)
    fast, fast_result = _run(workload, cluster, config, reference=False)
    assert replays  # tails were replayed
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutBackfillShortcuts)
    replays.clear()
    slow, slow_result = _run(workload, cluster, config, reference=False)
    assert not replays
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@dataclass(frozen=True)
class _WithoutAlikeTries(Shortcuts):
    """Every shortcut but the one that answers a try from an alike job's failed try."""

    alike_tries: bool = False


@pytest.mark.parametrize(
    ("scheduler", "preemption", "backfill"),
    [("fifo", False, "easy"), ("las", True, "easy"), ("sjf", False, True), ("srtf", True, True)],
)
def test_a_job_with_the_needs_of_one_that_failed_fails_alike(
    scheduler, preemption, backfill, monkeypatch
):
    """A long queue on a full cluster: jobs of the same domain, GPUs, VC and reservations
    to keep as one that failed to start, with nothing started or stopped since, are not
    placed again; the run, and every decision record explain reads, are those of the same
    run without the shortcut (fewer placements asked), and of the reference mode."""
    workload = _busy_jobs(160, seed=5)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, preemption=preemption, backfill=backfill)
    placed: list[int] = []
    plain_place = starts.StartTries.place

    def counted(self, *args, **kwargs):
        placed.append(1)
        return plain_place(self, *args, **kwargs)

    monkeypatch.setattr(starts.StartTries, "place", counted)
    fast, fast_result = _run(workload, cluster, config, reference=False)
    fast_placed = len(placed)
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutAlikeTries)
    placed.clear()
    slow, slow_result = _run(workload, cluster, config, reference=False)
    assert fast.decider.starts.alike and not slow.decider.starts.alike
    assert fast_placed < len(placed)  # the shortcut was taken
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@pytest.mark.parametrize(("scheduler", "preemption"), [("fifo", False), ("las", True)])
def test_the_running_ends_kept_for_reservations_are_those_sorted_afresh(
    scheduler, preemption, monkeypatch
):
    """EASY's reservations read the group's running jobs by the step they end from a list
    kept as jobs start, stop and are evicted (``Shortcuts.kept_ends``): at every
    reservation made it is the list sorted afresh from the jobs' state."""
    checked: list[int] = []
    kept = easy.EasyBackfill._running_ends

    def compared(self, group):
        got = kept(self, group)
        due, since, remaining, rate = self.clock.due, self.since, self.remaining, self.rate
        afresh = sorted(
            (due(float(since[r]) + float(remaining[r]) / float(rate[r])), r)
            for r in self.running[group]
        )
        assert got == afresh
        checked.append(len(got))
        return got

    monkeypatch.setattr(easy.EasyBackfill, "_running_ends", compared)
    workload = _busy_jobs(160, seed=11)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, preemption=preemption, backfill="easy")
    sim, _ = _run(workload, cluster, config, reference=False)
    assert sim.decider.easy.ends is not None and max(checked) > 1
    plain, _ = _run(workload, cluster, config, reference=True)
    assert plain.decider.easy.ends is None


@pytest.mark.parametrize("scheduler", ["fifo", "sjf"])
def test_a_reservation_is_kept_past_starts_that_end_by_its_time(scheduler, monkeypatch):
    """A job that starts and ends by a reservation's time is counted among its ends: the
    reservation is kept past the releases it then foresees (made again, it would be the
    same). The run and its decision records are those of the same run without kept
    reservations, and the run that of the reference mode."""
    counted: set[int] = set()
    kept_past: list[int] = []
    claim, foresaw = easy.EasyBackfill._claim_reservations, easy.EasyBackfill._foresaw_releases

    def claiming(self, j, group, reservations, due):
        before = {id(r): r.takes for r in self.reservations[group].values()}
        claim(self, j, group, reservations, due)
        for r in self.reservations[group].values():
            if id(r) in before and r.takes > before[id(r)]:
                counted.add(id(r))

    def foreseeing(self, kept, group):
        answer = foresaw(self, kept, group)
        if answer and id(kept) in counted:
            kept_past.append(kept.head)
        return answer

    monkeypatch.setattr(easy.EasyBackfill, "_claim_reservations", claiming)
    monkeypatch.setattr(easy.EasyBackfill, "_foresaw_releases", foreseeing)
    workload = _busy_jobs(160, seed=3)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, backfill="easy")
    _, fast_result = _run(workload, cluster, config, reference=False)
    assert kept_past  # kept past a start it counted
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutEasyShortcuts)
    _, slow_result = _run(workload, cluster, config, reference=False)
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@dataclass(frozen=True)
class _WithoutEvictionsAtAGlance(Shortcuts):
    """Every shortcut but the one that sees a job's trial evictions fail at a glance."""

    evictions_at_a_glance: bool = False


def _glanced_and_decisions(workload, cluster, config, monkeypatch) -> tuple[int, object]:
    """How many rounds counted the GPUs below at a glance, and the run's result."""
    counted: list[int] = []
    plain_init = rounds.EvictableBelow.__init__

    def counting(self, *args):
        counted.append(1)
        plain_init(self, *args)

    monkeypatch.setattr(rounds.EvictableBelow, "__init__", counting)
    _, result = _run(workload, cluster, config, reference=False)
    monkeypatch.setattr(rounds.EvictableBelow, "__init__", plain_init)
    return len(counted), result


@pytest.mark.parametrize("backfill", ["easy", True])
def test_jobs_that_could_not_evict_enough_fail_at_a_glance(backfill, monkeypatch):
    """LAS with preemption on a full cluster: jobs asking for more GPUs than are free plus
    those of the evictable running jobs below them are recorded full, their evictions failed,
    without a try; the run and every decision record are those of the same run without the
    shortcut, and the run that of the reference mode."""
    workload = _busy_jobs(160, seed=5)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler="las", preemption=True, backfill=backfill, quantum=60)
    glanced, fast_result = _glanced_and_decisions(workload, cluster, config, monkeypatch)
    assert glanced > 100  # the shortcut was taken
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutEvictionsAtAGlance)
    not_glanced, slow_result = _glanced_and_decisions(workload, cluster, config, monkeypatch)
    assert not_glanced == 0
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@RUNS
@given(
    cases(max_jobs=14, max_duration=400),
    st.sampled_from(["easy", True]),
    st.sampled_from([(60.0, 300.0), (30.0, 90.0, 300.0)]),
)
def test_las_preemption_with_evictions_at_a_glance_runs_as_the_reference_mode(
    drawn, backfill, limits
):
    """LAS (kept job by job) with preemption and backfill on any drawn cluster, placer and
    option: the run with every shortcut is the reference mode's, frame for frame."""
    case, workload, config = drawn
    config = config.replace(scheduler=LAS(limits), preemption=True, backfill=backfill)
    _, fast_result = _run(workload, case.cluster, config, reference=False)
    _, plain_result = _run(workload, case.cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


@dataclass(frozen=True)
class _WithoutGlances(Shortcuts):
    """Every shortcut but the two that record a job full (and its evictions failed) at a
    glance."""

    full_at_a_glance: bool = False
    evictions_at_a_glance: bool = False


def _own_room_tries_and_result(workload, cluster, config, monkeypatch) -> tuple[int, object]:
    """How many times the rounds asked for room by migration, and the run's result."""
    asked: list[int] = []
    plain = tenancy.Tenancy.try_own_room

    def counting(self, j):
        asked.append(j)
        return plain(self, j)

    monkeypatch.setattr(tenancy.Tenancy, "try_own_room", counting)
    sim, result = _run(workload, cluster, config, reference=False)
    monkeypatch.setattr(tenancy.Tenancy, "try_own_room", plain)
    assert sim.tenancy.migration
    return len(asked), result


@pytest.mark.parametrize(("scheduler", "preemption"), [("fifo", False), ("las", True)])
def test_jobs_full_at_a_glance_are_not_offered_migration(scheduler, preemption, monkeypatch):
    """Migration on, a long queue on a full cluster: a job asking for more GPUs than its
    group has free is full at a glance, as without migration (no move can free GPUs that
    are not there); the run and every decision record are those of the same run without the
    glances (which asks migration for room for each of those jobs), and the reference mode's."""
    workload = _busy_jobs(160, seed=5)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(
        scheduler=scheduler, preemption=preemption, migration=True, backfill="easy", quantum=60
    )
    asked, fast_result = _own_room_tries_and_result(workload, cluster, config, monkeypatch)
    monkeypatch.setattr(simulation, "Shortcuts", _WithoutGlances)
    asked_without, slow_result = _own_room_tries_and_result(workload, cluster, config, monkeypatch)
    assert asked_without > 2 * asked  # the glances were taken
    assert fast_result.summary()["migrations"] > 0
    _same_runs(fast_result, slow_result)
    same_decisions(fast_result, slow_result)
    monkeypatch.undo()
    _, plain_result = _run(workload, cluster, config, reference=True)
    _same_runs(fast_result, plain_result)


# -- a group looked at again: the next full round is not skipped ------------------------------
def _times_in_every_mode(rows, cluster, config) -> dict[str, tuple]:
    """Each job's (start, end) in the default mode, checked to be those of the reference
    mode and of ``leap=False``."""
    workload = make_jobs(rows)
    runs = [
        Simulation(workload, cluster, c, reference=r).run().result().jobs
        for c, r in ((config, False), (config, True), (config.replace(leap=False), False))
    ]
    for other in runs[1:]:
        pd.testing.assert_frame_equal(runs[0], other)
    return {row.job_id: (row.start_time, row.end_time) for row in runs[0].itertuples()}


def test_a_start_by_borrowing_has_its_group_looked_at_again():
    # VCs a (n0) and b (n1), 4 GPUs each; fifo, EASY, borrowing. a0 holds 2 GPUs of n0 until
    # 110. At 10 a1 (4 GPUs) does not fit on n0 and is promised n0 at 110; a2 (2 GPUs, 300 s)
    # fits on n0 but would run past 110: it waits for a1's reservation. Then a1 borrows n1.
    # The next full round (60) no longer has a1's reservation to keep: a2 starts then (the
    # fast path skipped it and started a2 at a0's end, 110)
    rows = [("a0", "a", 0, 110, 2), ("a1", "a", 10, 500, 4), ("a2", "a", 10, 300, 2)]
    cluster = Cluster.uniform(1, 2, 4, vc_nodes={"a": 1, "b": 1})
    config = SimConfig(scheduler="fifo", backfill="easy", borrowing=True, quantum=60)
    assert _times_in_every_mode(rows, cluster, config) == {
        "a0": (0, 110),
        "a1": (10, 510),
        "a2": (60, 360),
    }


def test_a_reclaim_has_its_group_looked_at_again():
    # VCs a (n0), b (n1), c (n2), 2 GPUs each; fifo, borrowing, no checkpoint cost. c0 holds
    # n2, a0 n0 until 100; a1 borrows n1 at 10; c1 (1 GPU) borrows n0 at 110. At 130 b1
    # reclaims n1 from a1: a1 waits, ranked before b1, and the round does not try it again.
    # The next full round (180) does: a1 reclaims its own n0 from c1 and resumes there (the
    # fast path skipped that round: a1 resumed when c1 ended, 310). c1 resumes on n1 when b1
    # ends (230)
    rows = [
        ("c0", "c", 0, 1000, 2),
        ("a0", "a", 0, 100, 2),
        ("a1", "a", 10, 300, 2),
        ("c1", "c", 110, 200, 1),
        ("b1", "b", 130, 100, 2),
    ]
    cluster = Cluster.uniform(1, 3, 2, vc_nodes={"a": 1, "b": 1, "c": 1})
    config = SimConfig(scheduler="fifo", borrowing=True, quantum=60, checkpoint_cost=0)
    assert _times_in_every_mode(rows, cluster, config) == {
        "c0": (0, 1000),
        "a0": (0, 100),
        "a1": (10, 360),  # 120 s run before 130, 180 s from 180
        "c1": (110, 360),  # 70 s run on n0 before 180, 130 s from 230
        "b1": (130, 230),
    }


def test_a_start_after_a_job_a_reservation_stopped_has_its_group_looked_at_again():
    # Nodes n0-n2 of 4 GPUs; fifo, EASY, migration (free), first fit. a holds n0 and c 3
    # GPUs of n2 until 1000, b 2 GPUs of n1 until 300. At 10 h (4 GPUs) is promised n1 at
    # 300; x (2 GPUs, 1000 s) fits on n1 but would run past 300: it waits for h; y (1 GPU,
    # ends at 110, by 300) starts on n1. Now x no longer fits on any node (1 GPU free on n1,
    # 1 on n2), so the next round (60) makes room for it by migration, which no reservation
    # checks: y moves to n2, x starts on n1 (and h waits for a, 1000). The fast path skipped
    # that round: x stayed stopped by h's reservation until h started (300) and ended
    # (400), and x ended at 1400
    rows = [
        ("a", "a", 0, 1000, 4),
        ("b", "a", 0, 300, 2),
        ("c", "a", 0, 1000, 3),
        ("h", "a", 10, 100, 4),
        ("x", "a", 10, 1000, 2),
        ("y", "a", 10, 100, 1),
    ]
    config = SimConfig(
        scheduler="fifo",
        backfill="easy",
        migration=True,
        migration_cost=0,
        placement="first_fit",
        quantum=60,
    )
    assert _times_in_every_mode(rows, Cluster.uniform(1, 3, 4), config) == {
        "a": (0, 1000),
        "b": (0, 300),
        "c": (0, 1000),
        "h": (1000, 1100),
        "x": (60, 1060),
        "y": (10, 110),
    }


@st.composite
def busy_tenancy_cases(draw):
    """(cluster, workload, config): 3 nodes of 4 GPUs, shared by one queue or owned by 2-3
    VCs; 5-12 jobs of 1-4 GPUs arriving within a few minutes; EASY or greedy backfill,
    borrowing, migration and preemption each on or off."""
    vcs = draw(st.sampled_from(["a", "ab", "abc"]))
    owned = None if len(vcs) == 1 else {"a": 3 - len(vcs) + 1, **{vc: 1 for vc in vcs[1:]}}
    cluster = Cluster.uniform(1, 3, 4, vc_nodes=owned)
    n = draw(st.integers(5, 12))
    gaps = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    rows = [
        (
            f"j{i}",
            draw(st.sampled_from(vcs)),
            sum(gaps[: i + 1]),
            draw(st.sampled_from([20, 100, 300, 1000])),
            draw(st.sampled_from([1, 1, 2, 3, 4])),
        )
        for i in range(n)
    ]
    config = SimConfig(
        scheduler=draw(st.sampled_from(["fifo", "las", "sjf"])),
        backfill=draw(st.sampled_from(["easy", "easy", True])),
        borrowing=draw(st.booleans()),
        migration=draw(st.booleans()),
        preemption=draw(st.booleans()),
        placement=draw(st.sampled_from(["first_fit", "consolidate"])),
        quantum=60,
        checkpoint_cost=draw(st.sampled_from([0, 30])),
        migration_cost=0,
    )
    return cluster, make_jobs(rows), config


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_tenancy_cases())
def test_busy_tenancy_runs_are_those_of_the_reference_mode_and_of_every_step(drawn):
    """A few VCs competing for their nodes, with borrowing, reclaims, migration, preemption
    and EASY reservations: the run with every shortcut and leap is that of the reference
    mode and that of ``leap=False``, frame for frame (rounds skipped only when the same
    round again could change nothing: the looked-at-again rules above)."""
    cluster, workload, config = drawn
    _, fast = _run(workload, cluster, config, reference=False)
    _same_runs(fast, _run(workload, cluster, config, reference=True)[1])
    _same_runs(fast, _run(workload, cluster, config.replace(leap=False), reference=False)[1])
