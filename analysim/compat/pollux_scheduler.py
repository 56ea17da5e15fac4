"""The Pollux artifact's own scheduler (policy ``pollux``): NSGA-II over GPU allocations.

Each round the jobs (by attained GPU-seconds, then submission) are given a state of GPUs per
node. Its fitness is the power mean (p = -1) of each job's speed-up (predicted by the job's
goodput model, relative to its fair share of ``ceil(64 / jobs)`` GPUs on one node, times
1/4), a job whose allocation changes weighted by ``max(age - 30 restarts, 0) / (age + 30)``;
its second objective the cluster's utility (speed-up per GPU, weighted by each job's share of
the GPUs of the nodes in use). The search (:func:`~analysim.compat.pollux_nsga.nsga2`, 100
states, 100 generations) starts from the first front of the last round (the current
allocation in the first), and the state of the best fitness on its final front is applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from analysim.compat.pollux_engine import NODE_GPUS, NODES, RESTART, PolluxJob
from analysim.compat.pollux_nsga import nsga2
from analysim.policies.goodput import fitness, restart_weight

MOST = NODES * NODE_GPUS  # GPUs of the cluster, the most replicas a speed-up is asked for
CELL = np.int8  # a state's cell: GPUs of one job on one node (0 to 4), one byte

# Sums over a job's row of 16 one-byte cells, 8 cells per 64-bit word (cells under 128 and
# their sum under 256, as every state's are): multiplying a word by _ONES sums its bytes in
# its top byte; adding _LOW7 to a byte sets its top bit exactly when the byte is not 0.
_ONES = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_TOP = np.uint64(0x8080808080808080)
_WORDS = NODES // 8


class Problem:
    """One round's allocation problem: the operators NSGA-II applies to its states."""

    def __init__(
        self,
        jobs: list[PolluxJob],
        base: np.ndarray,
        now: int,
        rng: np.random.Generator,
        tables: dict,
    ) -> None:
        self.jobs, self.base, self.rng = jobs, cells(base), rng
        fair = math.ceil(MOST / len(jobs))
        self.speedups = np.stack([_table(job, fair, tables) for job in jobs])
        self.max_replicas = np.array([[job.agent.max_replicas()] for job in jobs])
        self.factor = np.array(
            [
                restart_weight(float(now - job.submit), job.agent.restarts or 0, float(RESTART))
                for job in jobs
            ]
        )

    def _speedups(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nodes, replicas = row_counts(states)
        jobs = np.arange(states.shape[1])[None, :]
        return self.speedups[jobs, nodes, replicas], replicas

    def evaluate(self, states: np.ndarray) -> np.ndarray:
        """(-fitness, -utility) of each state."""
        states = cells(states)
        speedups, replicas = self._speedups(states)
        scaled = speedups * (1 / MOST) * NODES
        restart = np.any(states != self.base, axis=2)
        scaled = scaled * np.where(restart, self.factor, 1)
        mean = fitness(scaled, axis=1)
        active = np.sum(states, axis=1) > 0
        total = active.sum(axis=1) * NODE_GPUS
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = np.where(replicas, replicas / total[:, None], 0.0)
            utilities = np.where(replicas, speedups / replicas, 0.0)
        return np.column_stack([-mean, -np.sum(utilities * shares, axis=1)])

    def crossover(
        self, first: np.ndarray, second: np.ndarray, crossed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Swap the rows of the jobs before a random point, in the pairs ``crossed``."""
        points = self.rng.integers(first.shape[1], size=len(first)) * crossed
        swap = (np.arange(first.shape[1]) < points[:, None])[:, :, None]
        return np.where(swap, second, first), np.where(swap, first, second)

    def mutate(self, states: np.ndarray) -> np.ndarray:
        """A job's row back to the current allocation (10 %); a row's GPUs dropped (10 % of
        rows, each 10 %); GPUs raised at random on nodes with room: each job with chance
        1/jobs, a job already on the node also with chance 1/(jobs on it), to a number
        drawn from its own up to 4."""
        rng = self.rng
        states = np.array(states, dtype=CELL, order="C")  # a copy: edited in place below
        rows = states.shape[:2]
        reset_state, reset_job = np.nonzero(rng.random(rows) < 0.1)
        states[reset_state, reset_job] = self.base[reset_job]
        dropping = rng.random(rows) < 0.1
        if dropping.any():
            picked = states[dropping]
            picked[rng.random(picked.shape) < 0.1] = 0
            states[dropping] = picked
        # The chance of a raise, p1 + p2 - p1 p2 with p1 = 1/jobs on a node with room and
        # p2 = 1/(jobs on it) for a job present there, from a table of its few values.
        used = np.einsum("sjn->sn", states, dtype=np.int16)  # GPUs per node
        room = used < NODE_GPUS
        present = (states > 0) & room[:, None, :]
        count = np.einsum("sjn->sn", present.view(np.int8), dtype=np.int16)
        p1 = 1.0 / rows[1]
        p2 = 1.0 / np.arange(1, rows[1] + 1)
        joint = np.concatenate([[p1], p1 + p2 - p1 * p2])  # by jobs present (0: absent)
        alone = np.where(room, p1, 0.0)
        chance = np.where(present, joint[count][:, None, :], alone[:, None, :])
        raised = rng.random(states.shape) < chance
        states[raised] = rng.integers(states[raised], NODE_GPUS + 1)
        return states

    def repair(self, states: np.ndarray) -> np.ndarray:
        """At most one job over several nodes per node (later jobs lose that node); at most
        the job's replica cap (trimmed over its nodes in random order); at most 4 GPUs per
        node (later jobs trimmed)."""
        states = np.array(states, dtype=CELL, order="C")  # a copy: edited in place below
        nodes, replicas = row_counts(states)
        spread = nodes > 1
        if spread.any():
            shared = np.cumsum((states > 0) & spread[:, :, None], axis=1) > 1
            if shared.any():
                states = np.where(shared, 0, states)
                replicas = row_counts(states)[1]
        caps = np.broadcast_to(self.max_replicas[:, 0], states.shape[:2])
        over = replicas > caps
        if over.any():
            rows = states[over]
            shuffle = np.argsort(self.rng.random(rows.shape), axis=1)
            rows = np.take_along_axis(rows, shuffle, axis=1)
            capped = np.minimum(np.cumsum(rows, axis=1), caps[over][:, None])
            rows = np.diff(capped, axis=1, prepend=0)
            back = np.empty_like(rows)
            np.put_along_axis(back, shuffle, rows, axis=1)
            states[over] = back
        crowded = (states.sum(axis=1) > NODE_GPUS).any(axis=1)  # states with a full node
        if crowded.any():
            # Within a state whose nodes all hold at most 4 GPUs this is the identity.
            states[crowded] = np.diff(
                np.minimum(np.cumsum(states[crowded], axis=1), NODE_GPUS), axis=1, prepend=0
            )
        return states


def cells(states: np.ndarray) -> np.ndarray:
    """``states`` as contiguous one-byte cells (a copy if they were not)."""
    return np.ascontiguousarray(states, dtype=CELL)


def row_counts(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(nodes used, GPUs) of each job in each state of one-byte cells (:func:`cells`)."""
    words = states.view(np.uint64)  # (..., _WORDS): 8 nodes per word
    nonzero = (((words & _LOW7) + _LOW7) | words) & _TOP
    nodes = ((nonzero >> np.uint64(7)) * _ONES) >> np.uint64(56)
    gpus = (words * _ONES) >> np.uint64(56)
    out_nodes, out_gpus = nodes[..., 0], gpus[..., 0]
    for word in range(1, _WORDS):
        out_nodes = out_nodes + nodes[..., word]
        out_gpus = out_gpus + gpus[..., word]
    return out_nodes.view(np.int64), out_gpus.view(np.int64)


def _table(job: PolluxJob, fair: int, tables: dict) -> np.ndarray:
    """Speed-up of ``job`` on (nodes, replicas), 0 to 16 by 0 to 64 (unreachable pairs 0):
    its best goodput there over the best on ``fair`` GPUs of one node (the goodputs kept
    for every fair share while the job's model stays the same)."""
    model = job.agent.model()
    if model is None:
        return np.broadcast_to(np.arange(MOST + 1) / fair, (NODES + 1, MOST + 1))
    key = (id(job), job.agent.perf, job.agent.grad)
    if (*key, fair) not in tables:
        if key not in tables:
            tables[key] = _goodputs(model, job.app)
        goodputs, one_node = tables[key]
        tables[(*key, fair)] = goodputs / one_node[fair - 1]
    return tables[(*key, fair)]


def _goodputs(model, app) -> tuple[np.ndarray, np.ndarray]:
    """Best goodput ``model`` predicts on (nodes, replicas), 0 to 16 by 0 to 64 (unreachable
    pairs 0), and on 1 to 64 replicas of one node (reachable or not). The model tells only
    one node from several: the best goodput of each replica count on 1 node and on 2 (more
    nodes), spread over the reachable pairs."""
    limits = (app.max_batch_size, (app.min_local_bsz, app.max_local_bsz))
    replicas = np.arange(1, MOST + 1)
    classes = model.best(np.repeat([1, 2], MOST), np.tile(replicas, 2), *limits)[0]
    table = np.zeros((NODES + 1, MOST + 1))
    for n in range(1, NODES + 1):
        reach = (replicas >= n) & (replicas <= NODE_GPUS * n)
        table[n, replicas[reach]] = classes[MOST * (n > 1) :][:MOST][reach]
    return table, classes[:MOST]


@dataclass
class Pollux:
    """The artifact's Pollux policy, its random draws from ``rng``: NSGA-II compiled
    (:func:`~analysim.compat.pollux_search.search`), or with ``reference`` the numpy one
    (:func:`~analysim.compat.pollux_nsga.nsga2` with :class:`Problem`'s operators; the same
    rules, other draws, about 8 times slower)."""

    jobs: list[PolluxJob]
    rng: np.random.Generator
    reference: bool = False
    _front: tuple[np.ndarray, list[int]] | None = None
    _tables: dict = field(default_factory=dict)

    def decide(
        self, now: int, active: list[int], allocations: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        """The allocation of the best fitness NSGA-II finds this round."""
        order = sorted(active, key=lambda j: (self.jobs[j].agent.attained, self.jobs[j].submit))
        base = np.zeros((len(order), NODES), dtype=np.int64)
        for row, j in enumerate(order):
            for node in allocations.get(j, ()):
                base[row, node] += 1
        if len(self._tables) > 20000:
            self._tables.clear()
        problem = Problem([self.jobs[j] for j in order], base, now, self.rng, self._tables)
        start = self._start(order, base)
        if self.reference:
            states, values = nsga2(problem, start, self.rng)
        else:  # (numba is imported only when a compiled search runs)
            from analysim.compat.pollux_search import search

            caps, factor = problem.max_replicas[:, 0], problem.factor
            states, values = search(start, base, caps, factor, problem.speedups, self.rng)
        self._front = (states, order)
        best = states[int(np.argmin(values[:, 0]))]
        out = {}
        for row, j in enumerate(order):
            alloc = [node for node in range(NODES) for _ in range(int(best[row, node]))]
            if alloc:
                out[j] = alloc
        return out

    def _start(self, order: list[int], base: np.ndarray) -> np.ndarray:
        """The last round's front on this round's jobs (new jobs empty). As in the artifact,
        the rows of the jobs still there are copied in their old order onto those jobs in
        their new order: a job that moved in the ranking gets another job's row."""
        if self._front is None:
            return base[None].copy()
        states, previous = self._front
        still, before = set(order), set(previous)
        source = [row for row, j in enumerate(previous) if j in still]
        target = [row for row, j in enumerate(order) if j in before]
        start = np.zeros((len(states), len(order), NODES), dtype=np.int64)
        start[:, target] = states[:, source]
        return start
