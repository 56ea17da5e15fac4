"""The three forms of a ranking answer the rounds' three questions alike."""

from __future__ import annotations

import numpy as np
import pytest

from analysim.engine.las_ranking import KeyedOrder
from analysim.engine.ranking import ArrayRanking, WaitingStream
from analysim.policies.scheduling import DONE, RUNNING, WAITING

# six jobs ranked 4, 1, 5, 0, 3, 2 (best first): 4, 5, 3 wait; 1, 0 run; 2 is done
ORDER = [4, 1, 5, 0, 3, 2]
STATUS = np.array([RUNNING, RUNNING, DONE, WAITING, WAITING, WAITING])


def _array() -> ArrayRanking:
    return ArrayRanking(np.array(ORDER, dtype=np.int64), STATUS)


def _keyed() -> KeyedOrder:
    keyed = KeyedOrder(n=len(ORDER))  # key = position * n + job, as LAS's queue * n + job
    for pos, j in enumerate(ORDER):
        key = pos * keyed.n + j
        if STATUS[j] == WAITING:
            keyed.waiting.append(key)
        elif STATUS[j] == RUNNING:
            keyed.running.append(key)
    return keyed


def test_waiting_in_order_from_a_position():
    assert [j for _, j in _array().waiting_from(0)] == [4, 5, 3]
    assert list(_array().waiting_from(2)) == [(2, 5), (4, 3)]
    keyed = _keyed()
    assert [j for _, j in keyed.waiting_from(0)] == [4, 5, 3]
    second = [key for key, _ in keyed.waiting_from(0)][1]
    assert [j for _, j in keyed.waiting_from(second)] == [5, 3]
    assert list(WaitingStream([4, 5, 3]).waiting_from(0)) == [(0, 4), (1, 5), (2, 3)]
    ranked = WaitingStream([20, 30, 10], {10: 3, 20: 4, 30: 5}.__getitem__)  # ranks -> jobs
    assert list(ranked.waiting_from(0)) == [(0, 4), (1, 5), (2, 3)]
    assert list(ranked.waiting_from(2)) == [(2, 3)]  # read on from a later position


def test_running_below_lowest_ranked_first():
    array, keyed = _array(), _keyed()
    assert array.running_below(0) == [0, 1]
    assert array.running_below(2) == [0]  # below job 5 (position 2): job 0
    keys = [key for key, _ in keyed.waiting_from(0)]
    assert keyed.running_below(keys[0]) == [0, 1]
    assert keyed.running_below(keys[1]) == [0]
    assert keyed.running_below(keys[2]) == []
    assert WaitingStream([4]).running_below(0) == []


def test_first_waiting():
    assert _array().first_waiting() == 0
    assert _keyed().first_waiting() == 4  # job 4's key: position 0
    nobody = ArrayRanking(np.array([0, 1], dtype=np.int64), STATUS)
    assert nobody.first_waiting() is None
    assert ArrayRanking(np.zeros(0, dtype=np.int64), STATUS).first_waiting() is None
    assert KeyedOrder(n=3).first_waiting() is None
    with pytest.raises(TypeError, match="read once"):
        WaitingStream([4]).first_waiting()


def test_a_long_array_ranking_reads_the_same_as_a_short_one():
    # above SMALL jobs the array form switches to numpy: the answers must not change
    n = 300
    rng = np.random.default_rng(0)
    status = rng.choice([WAITING, RUNNING, DONE], size=n)
    order = rng.permutation(n).astype(np.int64)
    long = ArrayRanking(order, status)
    expected = [(p, int(j)) for p, j in enumerate(order.tolist()) if status[j] == WAITING]
    assert list(long.waiting_from(0)) == expected
    assert list(long.waiting_from(250)) == [(p, j) for p, j in expected if p >= 250]
