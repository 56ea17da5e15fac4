"""NSGA-II of the Pollux policy as one compiled loop (numba), state by state.

The same search as :func:`analysim.compat.pollux_nsga.nsga2` with the operators of
:class:`analysim.compat.pollux_scheduler.Problem` (pymoo 0.4's NSGA-II: 100 states, 100
generations, binary tournaments, the artifact's crossover, mutation and repair, offspring
that repeat a state dropped and drawn again), written as plain loops over one state at a
time so that numba compiles it: the numpy version makes about 100 calls on small arrays per
generation. Each child is drawn by the same rules; the draws are grouped otherwise (one child
after another, each tie of a tournament with its own coin, no draw for a child that is not
needed), and a mutation's raises are drawn as two independent events, the raise of chance
``1/jobs`` by geometric skips over the cells with room and the one of chance ``1/(jobs on the
node)`` per cell present there (together ``p1 + p2 - p1 p2``, the artifact's chance), so
about one draw per raised cell instead of one per cell. Every draw is a ``random()`` of the
generator passed in, so the compiled loop and the plain one
(``search(..., compiled=False)``, the same code run by Python) draw alike and give the same
states.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
from numba import njit

NODE_GPUS = 4
GUARD = 1e-3  # analysim.policies.goodput.SPEEDUP_GUARD
TRIES = 101  # batches of offspring pymoo draws at most per generation
HASH_MASK = (1 << 40) - 1  # a state's hash: base-131 digits of its cells, kept under 2^40
SLOTS = 4096  # open-addressing table of the states seen in one generation


def search(
    start: np.ndarray,
    base: np.ndarray,
    caps: np.ndarray,
    factor: np.ndarray,
    table: np.ndarray,
    rng: np.random.Generator,
    size: int = 100,
    generations: int = 100,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """The first front of the last population (states, objectives): ``start`` (states of
    GPUs per job and node) repaired and cut to its distinct states, then ``generations - 1``
    generations of ``size`` offspring. ``base``: the current allocation; ``caps``: each
    job's replica cap; ``factor``: its speed-up's weight when its row changes; ``table``:
    its speed-up by (nodes, replicas)."""
    args = (
        np.ascontiguousarray(start, dtype=np.int8),
        np.ascontiguousarray(base, dtype=np.int8),
        np.ascontiguousarray(caps, dtype=np.int64),
        np.ascontiguousarray(factor, dtype=np.float64),
        np.ascontiguousarray(table, dtype=np.float64),
        rng,
        size,
        generations,
    )
    if compiled:
        states, values = _search(*args)
    else:
        plain = _search.py_func
        with _plain():
            states, values = plain(*args)
    return states.astype(np.int64), values


@contextmanager
def _plain():
    """While open, the module's compiled functions are their Python originals (a plain
    function calls the others by their global names), so the whole search runs as Python."""
    names = [name for name, value in globals().items() if hasattr(value, "py_func")]
    compiled = {name: globals()[name] for name in names}
    try:
        for name in names:
            globals()[name] = compiled[name].py_func
        yield
    finally:
        globals().update(compiled)


@njit(cache=True)
def _search(start, base, caps, factor, table, rng, size, generations):
    jobs, nodes = base.shape
    capacity = max(len(start), size) + size
    pool = np.zeros((capacity, jobs, nodes), dtype=np.int8)
    values = np.zeros((capacity, 2))
    hashes = np.zeros(capacity, dtype=np.int64)
    slots = np.full(SLOTS, -1, dtype=np.int64)
    counts = np.zeros((3, jobs), dtype=np.int64)  # nodes, replicas, moved: _repair
    scratch = _scratch(nodes)
    count = 0
    for s in range(len(start)):
        pool[count] = start[s]
        _repair(pool[count], base, caps, counts, rng, scratch)
        key = _hash(pool[count])
        if _find(pool, hashes, slots, key, pool[count]) < 0:
            hashes[count] = key
            _add(slots, hashes, key, count)
            _evaluate(base, factor, table, counts, scratch[3], values[count])
            count += 1
    kept, ranks, crowds = _survive(values[:count], count, rng)
    count = _compact(pool, values, hashes, kept)
    for _ in range(generations - 1):
        slots[:] = -1
        for s in range(count):
            _add(slots, hashes, hashes[s], s)
        made = _offspring(
            pool, values, hashes, slots, count, ranks, crowds, base, caps, factor, table,
            counts, scratch, size, rng,
        )  # fmt: skip
        if made == 0:
            break
        kept, ranks, crowds = _survive(values[: count + made], size, rng)
        count = _compact(pool, values, hashes, kept)
    front = ranks == 0
    return pool[:count][front].copy(), values[:count][front].copy()


@njit(cache=True)
def _compact(pool, values, hashes, kept):
    """Moves the states ``kept`` to the front of the pool, in that order; their count."""
    states, vals, keys = pool[kept].copy(), values[kept].copy(), hashes[kept].copy()
    n = len(kept)
    pool[:n], values[:n], hashes[:n] = states, vals, keys
    return n


@njit(cache=True)
def _offspring(
    pool, values, hashes, slots, count, ranks, crowds, base, caps, factor, table, counts,
    scratch, size, rng,
):  # fmt: skip
    """Up to ``size`` new states after the ``count`` parents: pymoo's batches (each as many
    matings as half the children missing, at most ``TRIES``), one child after another."""
    jobs, nodes = base.shape
    made = 0
    order = np.arange(count)
    winners = np.zeros(2, dtype=np.int64)
    picks = np.zeros(2, dtype=np.int64)
    for _ in range(TRIES):
        if made >= size:
            break
        matings = (size - made + 1) // 2
        used = count  # tournaments draw from random permutations of the parents
        for _ in range(matings):
            if made >= size:
                break
            for w in range(2):
                for p in range(2):
                    if used == count:
                        _permute(order, rng)
                        used = 0
                    picks[p] = order[used]
                    used += 1
                winners[w] = _tournament(picks[0], picks[1], values, crowds, rng)
            point = int(rng.random() * jobs) if rng.random() < 0.9 else 0
            a, b = pool[winners[0]], pool[winners[1]]
            for c in range(2):
                if made >= size:
                    break
                at = count + made  # the child is built in its slot, kept if new
                state = pool[at]
                for j in range(jobs):
                    source = b if (j < point) == (c == 0) else a
                    for n in range(nodes):
                        state[j, n] = source[j, n]
                _mutate(state, base, rng, scratch)
                _repair(state, base, caps, counts, rng, scratch)
                key = _hash(state)
                if _find(pool, hashes, slots, key, state) >= 0:
                    continue
                hashes[at] = key
                _add(slots, hashes, key, at)
                _evaluate(base, factor, table, counts, scratch[3], values[at])
                made += 1
    return made


@njit(cache=True)
def _scratch(nodes):
    """Work space of the operators, one value per node each: the nodes with room, the jobs
    on each node, an order of the nodes, GPUs on each node."""
    per_node = np.zeros((4, nodes), dtype=np.int64)
    return per_node[0], per_node[1], per_node[2], per_node[3]


@njit(cache=True)
def _permute(order, rng):
    """Shuffles ``order`` in place (Fisher-Yates, one draw per position)."""
    for i in range(len(order) - 1, 0, -1):
        k = int(rng.random() * (i + 1))
        order[i], order[k] = order[k], order[i]


@njit(cache=True)
def _tournament(a, b, values, crowds, rng):
    """The winner of ``a`` against ``b``: the dominating one, else the more crowded-apart,
    else a coin."""
    a0, a1, b0, b1 = values[a, 0], values[a, 1], values[b, 0], values[b, 1]
    if a0 <= b0 and a1 <= b1 and (a0 < b0 or a1 < b1):
        return a
    if b0 <= a0 and b1 <= a1 and (b0 < a0 or b1 < a1):
        return b
    if crowds[a] > crowds[b]:
        return a
    if crowds[a] < crowds[b]:
        return b
    return a if rng.random() < 0.5 else b


@njit(cache=True)
def _mutate(state, base, rng, scratch):
    """The artifact's mutation of one state, in place: a job's row back to the current
    allocation (10 %); a row's GPUs dropped (10 % of rows, each 10 %); GPUs raised on nodes
    with room, each job with chance ``1/jobs``, a job already on the node also with chance
    ``1/(jobs on it)``, to a number drawn from its own up to 4 (``scratch``:
    :func:`_scratch`)."""
    jobs, nodes = state.shape
    room, present = scratch[0], scratch[1]
    for j in range(jobs):
        if rng.random() < 0.1:
            state[j] = base[j]
    for j in range(jobs):
        if rng.random() < 0.1:
            for n in range(nodes):
                if rng.random() < 0.1:
                    state[j, n] = 0
    used = scratch[3]  # GPUs on each node; present: jobs on each node
    used[:] = 0
    present[:] = 0
    for j in range(jobs):
        for n in range(nodes):
            cell = int(state[j, n])
            used[n] += cell
            present[n] += cell > 0
    rooms = 0  # room[:rooms]: the nodes with room, in order
    for n in range(nodes):
        if used[n] < NODE_GPUS:
            room[rooms] = n
            rooms += 1
    # Raises, in one pass over the cells with room (job by job, node by node): chance 1/jobs
    # on each (the next such cell found by a geometric skip), else 1/(jobs on the node) for
    # a job there; both drawn from the state before any raise.
    p1 = 1.0 / jobs
    skip = math.log1p(-p1) if p1 < 1.0 else 0.0
    next_a = _next_raise(-1, skip, rng)
    at = 0
    for j in range(jobs):
        for r in range(rooms):
            n = room[r]
            cell = int(state[j, n])
            hit = at == next_a
            if hit:
                next_a = _next_raise(at, skip, rng)
            elif cell > 0:
                hit = rng.random() < 1.0 / present[n]
            if hit:
                state[j, n] = cell + int(rng.random() * (NODE_GPUS + 1 - cell))
            at += 1


@njit(cache=True)
def _next_raise(at, skip, rng):
    """The next cell after ``at`` raised with chance ``p`` each (``skip``: log(1 - p); 0
    when p is 1): a geometric number of cells skipped."""
    if skip == 0.0:
        return at + 1
    return at + 1 + int(math.floor(math.log(1.0 - rng.random()) / skip))


@njit(cache=True)
def _row_counts(state, counts):
    """Nodes used and replicas of each job into ``counts``."""
    jobs, nodes = state.shape
    for j in range(jobs):
        used = 0
        total = 0
        for n in range(nodes):  # (no branch: whether a cell is 0 is hard to predict)
            cell = int(state[j, n])
            used += cell > 0
            total += cell
        counts[0, j] = used
        counts[1, j] = total


@njit(cache=True)
def _repair(state, base, caps, counts, rng, scratch):
    """The artifact's repair of one state, in place: at most one job over several nodes per
    node (later jobs lose it), at most the job's cap (kept over its nodes in random order),
    at most 4 GPUs per node (later jobs trimmed). Leaves in ``counts`` each job's nodes,
    GPUs and whether its row differs from ``base``, in ``scratch[3]`` the GPUs asked of each
    node before the last trim (more than 0 exactly on the nodes in use) (``scratch``:
    :func:`_scratch`)."""
    jobs, nodes = state.shape
    order, total = scratch[2], scratch[3]  # total: per node, of the jobs so far
    _row_counts(state, counts)
    changed = False
    total[:] = 0  # here: whether a job over several nodes holds the node
    for j in range(jobs):
        if counts[0, j] > 1:
            for n in range(nodes):
                if state[j, n] > 0:
                    if total[n]:
                        state[j, n] = 0
                        changed = True
                    total[n] = 1
    if changed:
        _row_counts(state, counts)
    for j in range(jobs):
        if counts[1, j] > caps[j]:
            for n in range(nodes):
                order[n] = n
            _permute(order, rng)
            kept = 0
            for n in order:
                cell = int(state[j, n])
                state[j, n] = min(kept + cell, caps[j]) - min(kept, caps[j])
                kept += cell
    total[:] = 0
    for j in range(jobs):  # the trim, counting each row as it ends up
        used = 0
        replicas = 0
        moved = 0
        for n in range(nodes):
            cell = int(state[j, n])
            final = cell
            if total[n] + cell > NODE_GPUS:
                final = max(NODE_GPUS - total[n], 0)
                state[j, n] = final
            total[n] += cell
            used += final > 0
            replicas += final
            moved |= final != base[j, n]
        counts[0, j] = used
        counts[1, j] = replicas
        counts[2, j] = moved


@njit(cache=True)
def _evaluate(base, factor, table, counts, total, out):
    """(-fitness, -utility) into ``out``, of a state whose counts and GPUs asked per node
    are in ``counts`` and ``total`` (as :func:`_repair` leaves them)."""
    jobs, nodes = base.shape
    inverse = 0.0
    utility = 0.0
    for j in range(jobs):
        speedup = table[j, counts[0, j], counts[1, j]]
        scaled = speedup * 0.25
        if counts[2, j]:
            scaled *= factor[j]
        inverse += 1.0 / (scaled + GUARD)
    active = 0
    for n in range(nodes):
        if total[n] > 0:
            active += 1
    gpus = active * NODE_GPUS
    for j in range(jobs):
        replicas = counts[1, j]
        if replicas > 0:
            utility += table[j, counts[0, j], replicas] / replicas * (replicas / gpus)
    out[0] = -1.0 / (inverse / jobs)
    out[1] = -utility


@njit(cache=True)
def _hash(state):
    """A state's hash: four interleaved base-131 sums of its cells (independent chains, so
    they run side by side), each kept under 2^40, combined."""
    k0 = k1 = k2 = k3 = 0
    jobs, nodes = state.shape
    for j in range(jobs):
        for n in range(0, nodes - 3, 4):
            k0 = (k0 * 131 + int(state[j, n])) & HASH_MASK
            k1 = (k1 * 131 + int(state[j, n + 1])) & HASH_MASK
            k2 = (k2 * 131 + int(state[j, n + 2])) & HASH_MASK
            k3 = (k3 * 131 + int(state[j, n + 3])) & HASH_MASK
        for n in range(nodes - nodes % 4, nodes):
            k0 = (k0 * 131 + int(state[j, n])) & HASH_MASK
    return (((k0 * 31 + k1) & HASH_MASK) * 31 + ((k2 * 31 + k3) & HASH_MASK)) & HASH_MASK


@njit(cache=True)
def _find(pool, hashes, slots, key, state):
    """Index of a state in the table equal to ``state``, or -1."""
    slot = key & (SLOTS - 1)
    while slots[slot] >= 0:
        at = slots[slot]
        if hashes[at] == key and _same(pool[at], state):
            return at
        slot = (slot + 1) & (SLOTS - 1)
    return -1


@njit(cache=True)
def _same(a, b):
    for j in range(a.shape[0]):
        for n in range(a.shape[1]):
            if a[j, n] != b[j, n]:
                return False
    return True


@njit(cache=True)
def _add(slots, hashes, key, at):
    slot = key & (SLOTS - 1)
    while slots[slot] >= 0:
        slot = (slot + 1) & (SLOTS - 1)
    slots[slot] = at


@njit(cache=True)
def _lex_order(values):
    """Indices of the points by the first objective, then the second (stable)."""
    order = np.argsort(values[:, 1], kind="mergesort")
    return order[np.argsort(values[order, 0], kind="mergesort")]


@njit(cache=True)
def _fronts(values, order):
    """Non-dominated front of each point (0 first), from the points' lexical ``order``: a
    point joins the first front whose latest point (the one of the least second objective
    so far) does not dominate it, i.e. has a larger second objective or is the same point."""
    n = len(values)
    rank = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)  # latest point of each front
    fronts = 0
    for i in order:
        f = 0
        while f < fronts:
            q = last[f]
            if values[q, 1] > values[i, 1] or (
                values[q, 0] == values[i, 0] and values[q, 1] == values[i, 1]
            ):
                break
            f += 1
        rank[i] = f
        last[f] = i
        if f == fronts:
            fronts += 1
    return rank


@njit(cache=True)
def _crowding(values, members):
    """Crowding distance of each point of one front (``members`` in lexical order), as pymoo
    computes it: ``inf`` at the ends, 0 for a repeat of an earlier point. In a front the
    distinct points ordered by the first objective are ordered by the second one reversed."""
    n = len(members)
    if n <= 2:
        return np.full(n, np.inf)
    unique = np.zeros(n, dtype=np.int64)  # positions in members of the distinct points
    u = 0
    for k in range(n):
        a = members[k]
        if u > 0:
            b = members[unique[u - 1]]
            if values[a, 0] == values[b, 0] and values[a, 1] == values[b, 1]:
                continue
        unique[u] = k
        u += 1
    out = np.zeros(n)
    first, final = members[unique[0]], members[unique[u - 1]]
    span0 = values[final, 0] - values[first, 0]
    span1 = values[first, 1] - values[final, 1]
    for r in range(u):
        point = values[members[unique[r]]]
        lower = values[members[unique[r - 1]]] if r > 0 else point
        upper = values[members[unique[r + 1]]] if r < u - 1 else point
        below = np.inf if r == 0 else point[0] - lower[0]
        above = np.inf if r == u - 1 else upper[0] - point[0]
        gap0 = (below / span0 + above / span0) if span0 > 0 else 0.0
        below = np.inf if r == u - 1 else point[1] - upper[1]
        above = np.inf if r == 0 else lower[1] - point[1]
        gap1 = (below / span1 + above / span1) if span1 > 0 else 0.0
        out[unique[r]] = (0.0 + gap0 + gap1) / 2
    return out


@njit(cache=True)
def _survive(values, keep, rng):
    """(kept indices, their rank, their crowding distance): whole fronts while they fit, the
    next one cut to the most crowded-apart (ties in random order)."""
    order = _lex_order(values)
    rank = _fronts(values, order)
    sizes = np.bincount(rank)
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    starts[1:] = np.cumsum(sizes)
    grouped = np.zeros(len(values), dtype=np.int64)  # by front, lexical order within
    filled = starts[:-1].copy()
    for i in order:
        grouped[filled[rank[i]]] = i
        filled[rank[i]] += 1
    kept = np.zeros(keep, dtype=np.int64)
    ranks = np.zeros(keep, dtype=np.int64)
    crowds = np.zeros(keep)
    count = 0
    front = 0
    while count < keep and front < len(sizes):
        members = grouped[starts[front] : starts[front + 1]]
        distance = _crowding(values, members)
        pick = np.arange(len(members))
        if count + len(members) > keep:
            _permute(pick, rng)
            pick = pick[np.argsort(-distance[pick], kind="mergesort")][: keep - count]
        for p in pick:
            kept[count], ranks[count], crowds[count] = members[p], front, distance[p]
            count += 1
        front += 1
    return kept[:count], ranks[:count], crowds[:count]
