"""Placement policies: hand-built free maps per placer, a contract every placer keeps, and the
engine refusing a placer that cheats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysim import Cluster, PolicyError, Workload, simulate
from analysim.policies import PLACERS, Placer, Topology


def topo(capacity, rack=None) -> Topology:
    capacity = np.asarray(capacity, dtype=np.int64)
    rack = np.zeros(len(capacity), dtype=np.int64) if rack is None else np.asarray(rack)
    return Topology(capacity, rack.astype(np.int64), int(rack.max()) + 1)


def place(name, num, free, capacity, rack=None, seed=0):
    free = np.asarray(free, dtype=np.int64)
    take = PLACERS.make(name).place(num, free, topo(capacity, rack), np.random.default_rng(seed))
    return None if take is None else take.tolist()


SIX = [4] * 6
TWO_RACKS = [0, 0, 0, 1, 1, 1]


# -- consolidate (best fit) --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("num", "node"),
    [(1, 3), (2, 1), (3, 2), (4, 0)],
)
def test_consolidate_picks_the_fewest_free_that_fits_lowest_index_on_ties(num, node):
    # free [4, 2, 3, 2, 1]: a 2-GPU job goes to node 1 (2 free; node 3 ties, higher index)
    take = place("consolidate", num, [4, 2, 3, 2, 1], [4] * 5)
    expected = [0] * 5
    expected[node if num > 1 else 4] = num
    assert take == expected


def test_consolidate_large_job_takes_whole_free_nodes_of_the_tightest_rack():
    free = [4, 4, 0, 4, 4, 4]  # rack 0 has 8 GPUs on whole free nodes, rack 1 has 12
    assert place("consolidate", 8, free, SIX, TWO_RACKS) == [4, 4, 0, 0, 0, 0]
    assert place("consolidate", 12, free, SIX, TWO_RACKS) == [0, 0, 0, 4, 4, 4]
    # 10 GPUs fit only rack 1: two whole nodes there, the remainder on the same rack
    assert place("consolidate", 10, free, SIX, TWO_RACKS) == [0, 0, 0, 4, 4, 2]


def test_consolidate_large_job_remainder_goes_to_the_best_fitting_node():
    # one whole free node (n0) and partly used nodes with 3 and 2 free: 4 + 2 on n2
    assert place("consolidate", 6, [4, 3, 2], [4, 4, 4]) == [4, 0, 2]


def test_consolidate_large_job_spills_to_another_rack_when_none_holds_it():
    free = [4, 4, 0, 4, 0, 0]  # rack 0: 8 whole free, rack 1: 4
    take = place("consolidate", 12, free, SIX, TWO_RACKS)
    assert take == [4, 4, 0, 4, 0, 0]


def test_consolidate_keeps_its_answers_per_topology_and_hands_out_copies(monkeypatch):
    import analysim.policies.placement as placement

    placer, topology, rng = PLACERS.make("consolidate"), topo(SIX, TWO_RACKS), None
    free = np.array([4, 4, 0, 4, 4, 4], dtype=np.int64)
    first = placer.spread_over_nodes(10, free, topology, rng)
    assert first.tolist() == [0, 0, 0, 4, 4, 2]
    first[:] = 0  # the caller's copy: the kept answer does not change
    assert placer.spread_over_nodes(10, free, topology, rng).tolist() == [0, 0, 0, 4, 4, 2]
    # 14 free in all: 8 on whole free nodes, then no node holds the other 6 (none kept too)
    scattered = np.array([4, 4, 0, 3, 3, 0], dtype=np.int64)
    assert placer.spread_over_nodes(14, scattered, topology, rng) is None
    assert placer.spread_over_nodes(14, scattered, topology, rng) is None
    assert set(topology.spread_answers) == {(10, free.tobytes()), (14, scattered.tobytes())}
    # another state of the same nodes is another answer; a full store starts afresh
    monkeypatch.setattr(placement, "SPREAD_ANSWERS", 2)
    fuller = np.array([4, 4, 4, 4, 4, 4], dtype=np.int64)
    assert placer.spread_over_nodes(10, fuller, topology, rng).tolist() == [4, 4, 2, 0, 0, 0]
    assert list(topology.spread_answers) == [(10, fuller.tobytes())]


# -- first fit --------------------------------------------------------------------------------
def test_first_fit():
    assert place("first_fit", 2, [1, 4, 2, 4], [4] * 4) == [0, 2, 0, 0]
    assert place("first_fit", 4, [1, 3, 2, 4], [4] * 4) == [0, 0, 0, 4]
    # larger than a node: fill nodes in index order
    assert place("first_fit", 6, [2, 4, 3], [4, 4, 4]) == [2, 4, 0]


# -- spread (worst fit) -------------------------------------------------------------------------
def test_spread():
    assert place("spread", 2, [1, 3, 4, 2], [4] * 4) == [0, 0, 2, 0]
    assert place("spread", 1, [3, 1, 3], [4] * 3) == [1, 0, 0]  # ties: lowest index
    # larger than a node: the emptiest nodes first
    assert place("spread", 5, [1, 3, 4, 2], [4] * 4) == [0, 1, 4, 0]


# -- random -------------------------------------------------------------------------------------
def test_random_is_seeded_and_only_uses_nodes_that_fit():
    free = [1, 4, 0, 2, 3, 2]
    fits = {1, 3, 4, 5}  # nodes with at least 2 free
    chosen = []
    for seed in range(200):
        take = place("random", 2, free, [4] * 6, seed=seed)
        assert take == place("random", 2, free, [4] * 6, seed=seed)  # reproducible
        (node,) = np.flatnonzero(take)
        assert take[node] == 2
        chosen.append(int(node))
    assert set(chosen) == fits  # every fitting node is used sometimes, no other ever


def test_random_large_job_is_reproducible_and_within_free():
    free = np.array([1, 4, 0, 2, 3, 2])
    takes = {tuple(place("random", 7, free, [4] * 6, seed=s)) for s in range(50)}
    assert len(takes) > 1
    for take in takes:
        assert sum(take) == 7 and (np.array(take) <= free).all()
    assert place("random", 7, free, [4] * 6, seed=3) == place("random", 7, free, [4] * 6, seed=3)


# -- topology-aware -----------------------------------------------------------------------------
def test_topology_fewest_racks_then_fewest_nodes():
    free = [4, 4, 2, 4, 2, 2]  # rack 0: 10 free, rack 1: 8 free
    # 6 GPUs: two nodes in either rack; tie broken by the rack left with fewer free GPUs
    assert place("topology", 6, free, SIX, TWO_RACKS) == [0, 0, 0, 4, 2, 0]
    # 9 GPUs fit rack 0 only (three nodes) rather than two nodes across racks
    assert place("topology", 9, free, SIX, TWO_RACKS) == [4, 4, 1, 0, 0, 0]
    # 12 GPUs fit no rack: the fullest-free rack first, emptiest nodes first
    assert place("topology", 12, free, SIX, TWO_RACKS) == [4, 4, 2, 2, 0, 0]


def test_topology_prefers_fewer_nodes_over_a_fuller_rack():
    free = [2, 2, 2, 4, 4, 0]  # rack 0 needs 3 nodes for 6 GPUs, rack 1 needs 2
    assert place("topology", 6, free, SIX, TWO_RACKS) == [0, 0, 0, 4, 2, 0]


def test_topology_small_job_is_best_fit():
    assert place("topology", 2, [4, 3, 2, 4], [4] * 4) == [0, 0, 2, 0]


# -- what every placer does ---------------------------------------------------------------------
@pytest.mark.parametrize("name", PLACERS.names)
def test_none_when_it_does_not_fit(name):
    assert place(name, 3, [2, 2, 2], [4, 4, 4]) is None  # small jobs are never split
    assert place(name, 9, [4, 4, 0], [4, 4, 4]) is None  # not enough free in total
    assert place(name, 1, [0, 0, 0], [4, 4, 4]) is None


@pytest.mark.parametrize("name", PLACERS.names)
def test_small_jobs_are_never_split(name):
    take = place(name, 4, [3, 2, 4, 1], [8, 8, 8, 8])
    assert take == [0, 0, 4, 0]  # the only node with 4 free, although 10 are free in total


@st.composite
def free_maps(draw):
    n = draw(st.integers(1, 8))
    capacity = np.array(draw(st.lists(st.sampled_from([0, 1, 2, 4, 8]), min_size=n, max_size=n)))
    free = np.array([draw(st.integers(0, int(c))) for c in capacity], dtype=np.int64)
    racks = draw(st.integers(1, 3))
    rack = np.array(draw(st.lists(st.integers(0, racks - 1), min_size=n, max_size=n)))
    num = draw(st.integers(1, max(1, int(capacity.sum()) + 1)))
    return num, free, Topology(capacity.astype(np.int64), rack.astype(np.int64), racks)


@pytest.mark.parametrize("name", PLACERS.names)
@settings(max_examples=100, deadline=None)
@given(case=free_maps(), seed=st.integers(0, 1000), empty=st.booleans())
def test_placer_contract(name, case, seed, empty):
    num, free, topology = case
    if empty:
        free = topology.capacity.copy()  # nothing running in the domain
    placer = PLACERS.make(name)
    take = placer.place(num, free.copy(), topology, np.random.default_rng(seed))
    fits_one = bool((free >= num).any())
    if num <= topology.largest:
        # a job that fits in one node goes on one node, and is placed whenever a node has room
        assert (take is not None) == fits_one
    if take is None:
        # with the whole domain free, everything that is not bigger than it is placed
        assert not (empty and num <= int(topology.capacity.sum()))
        return
    assert isinstance(take, np.ndarray) and take.dtype.kind in "iu"
    assert take.shape == free.shape
    assert int(take.sum()) == num
    assert (take >= 0).all() and (take <= free).all()
    assert (take[topology.capacity == 0] == 0).all()
    if num <= topology.largest:
        assert np.count_nonzero(take) == 1
    # same seed, same answer
    again = placer.place(num, free.copy(), topology, np.random.default_rng(seed))
    assert again.tolist() == take.tolist()


@pytest.mark.parametrize("name", PLACERS.names)
@settings(max_examples=100, deadline=None)
@given(case=free_maps(), seed=st.integers(0, 1000), data=st.data())
def test_placement_only_gets_easier_as_gpus_free_up(name, case, seed, data):
    """docs/semantics.md: a job that fits must still fit when more GPUs are free (the engine
    does not retry a job until GPUs are released)."""
    num, free, topology = case
    more = np.array(
        [
            data.draw(st.integers(int(f), int(c)))
            for f, c in zip(free, topology.capacity, strict=True)
        ],
        dtype=np.int64,
    )
    placer = PLACERS.make(name)
    if placer.place(num, free.copy(), topology, np.random.default_rng(seed)) is not None:
        assert placer.place(num, more, topology, np.random.default_rng(seed)) is not None


# -- a placer that cheats ---------------------------------------------------------------------
class TooMany(Placer):
    name = "too_many"

    def place(self, num_gpus, free, topo, rng):
        return free.copy()  # every free GPU, not num_gpus of them


class NotFree(Placer):
    name = "not_free"

    def place(self, num_gpus, free, topo, rng):
        take = np.zeros_like(free)
        take[0] = num_gpus  # node 0, whether or not it has room
        return take


class WrongShape(Placer):
    name = "wrong_shape"

    def place(self, num_gpus, free, topo, rng):
        take = np.zeros(len(free) + 1, dtype=np.int64)
        take[-1] = num_gpus  # a node beyond those the job may use
        return take


class Floats(Placer):
    name = "floats"

    def place(self, num_gpus, free, topo, rng):
        take = np.zeros(len(free), dtype=float)
        take[int(free.argmax())] = num_gpus
        return take


def _jobs(rows):
    frame = pd.DataFrame(rows, columns=["job_id", "vc", "submit_time", "duration", "num_gpus"])
    return Workload.from_frame(frame.assign(user="u"))


@pytest.mark.parametrize(
    ("placer", "cluster", "rows", "culprit", "words"),
    [
        (
            TooMany(),
            Cluster.uniform(1, 2, 4),
            [("j1", "a", 0, 10, 1)],
            "j1",
            "8 GPUs for a job that asks for 1",
        ),
        (
            NotFree(),
            Cluster.uniform(1, 2, 4),
            [("j1", "a", 0, 10, 4), ("j2", "a", 1, 10, 2)],
            "j2",
            "not free",
        ),
        (
            WrongShape(),
            Cluster.uniform(1, 2, 4, vc_nodes={"a": 1, "b": 1}),
            [("j1", "a", 0, 10, 2)],
            "j1",
            "whole numbers",
        ),
        (Floats(), Cluster.uniform(1, 2, 4), [("j1", "a", 0, 10, 2)], "j1", "whole numbers"),
    ],
)
def test_a_cheating_placer_is_refused_naming_policy_and_job(placer, cluster, rows, culprit, words):
    with pytest.raises(PolicyError) as info:
        simulate(_jobs(rows), cluster, placement=placer)
    message = str(info.value)
    assert repr(placer.name) in message
    assert repr(culprit) in message
    assert words in message


# -- can_spread_few: can_spread on a list of a few nodes' free GPUs -----------------------------
@pytest.mark.parametrize("name", PLACERS.names)
@settings(max_examples=200, deadline=None)
@given(case=free_maps(), seed=st.integers(0, 1000))
def test_can_spread_few_says_what_can_spread_says_and_the_placer_does(name, case, seed):
    num, free, topology = case
    placer = PLACERS.make(name)
    few = placer.can_spread_few(num, free.tolist(), topology)
    assert few is placer.can_spread(num, free, topology)
    if few is not None and topology.largest < num <= free.sum():  # when the engine asks
        taken = placer.spread_over_nodes(num, free.copy(), topology, np.random.default_rng(seed))
        assert few is (taken is not None)


@settings(max_examples=300, deadline=None)
@given(
    size=st.sampled_from([1, 2, 4, 8]),
    data=st.data(),
)
def test_consolidate_can_spread_few_on_alike_nodes_counts_the_wholly_free(size, data):
    """Nodes alike: the count of wholly free nodes (and a partly free one for the rest)
    says what the one-pass rule for any capacities says, and what the placer does."""
    n = data.draw(st.integers(1, 12))
    free = data.draw(st.lists(st.integers(0, size), min_size=n, max_size=n))
    num = data.draw(st.integers(1, size * n + 2))
    topology = topo([size] * n, data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    assert topology.uniform_capacity == size
    consolidate = PLACERS.make("consolidate")
    answer = consolidate.can_spread_few(num, free, topology)
    assert answer is consolidate._can_spread_on(num, free, [size] * n)
    if size < num <= sum(free):
        taken = consolidate.spread_over_nodes(num, np.array(free), topology, None)
        assert answer is (taken is not None)


def test_consolidate_can_spread_few_examples():
    consolidate, topology = PLACERS.make("consolidate"), topo([8, 8, 8, 4, 0], [0, 0, 1, 1, 1])
    assert consolidate.can_spread_few(16, [8, 8, 0, 0, 0], topology)  # two whole nodes
    assert consolidate.can_spread_few(12, [8, 3, 0, 4, 0], topology)  # 8 whole, 4 on n1 or n3
    assert not consolidate.can_spread_few(12, [8, 3, 1, 0, 0], topology)  # no node has 4
    assert not consolidate.can_spread_few(20, [8, 8, 3, 1, 0], topology)  # 4 left: only whole
    assert consolidate.can_spread_few(10, [8, 8, 0, 0, 0], topology)  # a whole node takes 2
    assert topology.uniform_capacity == 0
    alike = topo([8, 8, 8, 8])
    assert alike.uniform_capacity == 8
    assert consolidate.can_spread_few(16, [8, 8, 0, 7], alike)
    assert consolidate.can_spread_few(15, [8, 0, 7, 3], alike)  # 7 left: on n2
    assert not consolidate.can_spread_few(16, [8, 0, 7, 7], alike)  # 8 left: no node but n0
    assert not consolidate.can_spread_few(12, [8, 3, 3, 3], alike)


def test_the_engine_asks_can_spread_few_only_with_its_own_can_spread():
    from analysim.engine.evictions import _defined_together
    from analysim.policies.placement import Consolidate

    class Stricter(Consolidate):
        def can_spread(self, num_gpus, free, topo):
            return False

    class Both(Consolidate):
        def can_spread(self, num_gpus, free, topo):
            return False

        def can_spread_few(self, num_gpus, free, topo):
            return False

    assert _defined_together(Consolidate)
    assert _defined_together(Placer)  # (both say "ask")
    assert not _defined_together(Stricter)  # its can_spread is asked, not consolidate's list
    assert _defined_together(Both)
