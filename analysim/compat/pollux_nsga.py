"""NSGA-II as the Pollux artifact's policy runs it (pymoo 0.4's ``NSGA2``), on our generator.

A state is a (jobs x nodes) array of GPUs. The algorithm keeps a population of states with
two objectives to minimise, here (-fitness, -utility): non-dominated sorting into fronts,
crowding distance within a front, binary tournaments (the dominating state wins, else the
more crowded-apart one, else a coin), offspring that are not copies of a state seen this
generation, and survival of the best fronts, the last one cut by crowding distance. The
problem-specific operators (crossover, mutation, repair, evaluation) are
:class:`analysim.compat.pollux_scheduler.Problem`'s. Every draw comes from one
``numpy.random.Generator``.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np


class Operators(Protocol):
    """What the search asks of the problem."""

    def evaluate(self, states: np.ndarray) -> np.ndarray: ...

    def crossover(
        self, first: np.ndarray, second: np.ndarray, crossed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def mutate(self, states: np.ndarray) -> np.ndarray: ...

    def repair(self, states: np.ndarray) -> np.ndarray: ...


def dominates(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[i, k]``: objective row ``a[i]`` dominates ``b[k]`` (no worse in all, better in one)."""
    no_worse = np.ones((len(a), len(b)), dtype=bool)
    better = np.zeros((len(a), len(b)), dtype=bool)
    for m in range(a.shape[1]):
        x, y = a[:, m][:, None], b[:, m][None, :]
        no_worse &= x <= y
        better |= x < y
    return no_worse & better


def fronts_of(values: np.ndarray, enough: int | None = None) -> list[np.ndarray]:
    """Indices of each non-dominated front, best first (stop once ``enough`` are ranked)."""
    beaten = dominates(values, values)
    count = beaten.sum(axis=0)
    left = np.ones(len(values), dtype=bool)
    fronts, ranked = [], 0
    while left.any():
        front = np.flatnonzero(left & (count == 0))
        fronts.append(front)
        ranked += len(front)
        if enough is not None and ranked >= enough:
            break
        left[front] = False
        count = count - beaten[front].sum(axis=0)
        count[~left] = -1
    return fronts


def crowding(values: np.ndarray) -> np.ndarray:
    """Crowding distance of each point of one front (``inf`` at the ends, 0 for a repeat of
    an earlier point), as pymoo computes it."""
    n, m = values.shape
    if n <= 2:
        return np.full(n, np.inf)
    unique = _first_occurrences(values)
    points = values[unique]
    order = np.argsort(points, axis=0, kind="mergesort")
    ordered = points[order, np.arange(m)]
    gaps = np.empty((len(points) + 1, m))
    gaps[0], gaps[-1] = np.inf, np.inf
    np.subtract(ordered[1:], ordered[:-1], out=gaps[1:-1])
    span = ordered[-1] - ordered[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        gaps = np.where(span > 0, gaps / span, 0.0)
    back = np.argsort(order, axis=0)
    columns = np.arange(m)
    out = np.zeros(n)
    out[unique] = np.sum(gaps[back, columns] + gaps[back + 1, columns], axis=1) / m
    return out


def _first_occurrences(values: np.ndarray) -> np.ndarray:
    """Indices of the rows that repeat no earlier row, ascending."""
    order = np.lexsort(values.T[::-1])  # stable: equal rows keep their order
    ordered = values[order]
    repeat = np.zeros(len(values), dtype=bool)
    repeat[1:] = np.all(ordered[1:] == ordered[:-1], axis=1)
    return np.sort(order[~repeat])


def survive(values: np.ndarray, keep: int, rng: np.random.Generator):
    """(kept indices, their rank, their crowding distance): whole fronts while they fit, the
    next one cut to the most crowded-apart (ties in random order)."""
    kept, ranks, crowds = [], [], []
    for rank, front in enumerate(fronts_of(values, keep)):
        distance = crowding(values[front])
        if len(kept) + len(front) > keep:
            shuffle = rng.permutation(len(front))
            pick = shuffle[np.argsort(distance[shuffle], kind="quicksort")][::-1]
            pick = pick[: keep - len(kept)]
        else:
            pick = np.arange(len(front))
        kept.extend(front[pick].tolist())
        ranks.extend([rank] * len(pick))
        crowds.extend(distance[pick].tolist())
    return np.array(kept, dtype=int), np.array(ranks), np.array(crowds)


def _tournaments(values, crowds, pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Winners of ``pairs`` binary tournaments among random permutations of the population."""
    n = len(values)
    draws = 2 * pairs
    picks = np.concatenate([rng.permutation(n) for _ in range(math.ceil(draws / n))])[:draws]
    a, b = picks[0::2], picks[1::2]
    fa, fb = values[a], values[b]
    a_wins = np.all(fa <= fb, axis=1) & np.any(fa < fb, axis=1)
    b_wins = np.all(fb <= fa, axis=1) & np.any(fb < fa, axis=1)
    coin = rng.random(pairs) < 0.5
    by_crowding = np.where(
        crowds[a] > crowds[b], True, np.where(crowds[a] < crowds[b], False, coin)
    )
    winner_is_a = np.where(a_wins, True, np.where(b_wins, False, by_crowding))
    return np.where(winner_is_a, a, b)


def _keys(rows: np.ndarray) -> list[bytes]:
    """Each row of a 2-D array as bytes (one call: the rows as one opaque value each)."""
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel().tolist()


def _new_rows(candidates: np.ndarray, seen: set[bytes] | None = None) -> np.ndarray:
    """The candidates that repeat neither an earlier candidate nor a row in ``seen`` (the
    kept ones are added to ``seen``)."""
    seen = set() if seen is None else seen
    keep = []
    for i, key in enumerate(_keys(candidates)):
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return candidates[keep]


def _offspring(problem: Operators, states, values, crowds, count: int, rng, spare: float):
    """``count`` new states (fewer if 100 tries cannot find them): tournaments, crossover
    of 90 % of the pairs, mutation, repair, copies dropped; and the share of new children
    among the last batch. Each batch makes ``spare`` times the children still missing (the
    first new ones are kept): as the artifact's tries, each child drawn alike, in fewer
    batches when most children are copies."""
    flat = states.reshape(len(states), -1)
    seen = set(_keys(flat))
    out = np.zeros((0, flat.shape[1]), dtype=states.dtype)
    share = 1.0
    for _ in range(101):
        if len(out) >= count:
            break
        matings = math.ceil(min((count - len(out)) * spare, 4 * count) / 2)
        winners = _tournaments(values, crowds, 2 * matings, rng).reshape(matings, 2)
        crossed = rng.random(matings) < 0.9
        first, second = problem.crossover(states[winners[:, 0]], states[winners[:, 1]], crossed)
        children = problem.repair(problem.mutate(np.concatenate([first, second])))
        fresh = _new_rows(children.reshape(len(children), -1).astype(flat.dtype), seen)
        share = len(fresh) / len(children)
        out = np.concatenate([out, fresh[: count - len(out)]])
    return out.reshape(-1, *states.shape[1:]), share


def nsga2(
    problem: Operators,
    start: np.ndarray,
    rng: np.random.Generator,
    size: int = 100,
    generations: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """The first front of the last population (states, objectives), from ``start`` states."""
    states = problem.repair(start)
    states = _new_rows(states.reshape(len(states), -1)).reshape(-1, *states.shape[1:])
    values = problem.evaluate(states)
    kept, ranks, crowds = survive(values, len(states), rng)
    states, values = states[kept], values[kept]
    spare = 1.0
    for _ in range(generations - 1):
        children, share = _offspring(problem, states, values, crowds, size, rng, spare)
        spare = min(1.2 / max(share, 0.01), 4.0)
        if not len(children):
            break
        states = np.concatenate([states, children])
        values = np.concatenate([values, problem.evaluate(children)])
        kept, ranks, crowds = survive(values, size, rng)
        states, values = states[kept], values[kept]
    best = ranks == 0
    return states[best], values[best]
