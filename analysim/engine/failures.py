"""Failures: nodes that fail and are repaired, jobs that fail by themselves, and the periodic
checkpoints that bound what a killed job loses (``docs/failures.md`` gives the rules).

:class:`Failures` is a collaborator of :class:`~analysim.engine.Simulation`, made only when
the config asks for failures or checkpoints (``inputs/failures.failures_configured``); with
none, the engine never calls it and runs exactly as before. It decides *when* things fail and
*what a run has done*; the state changes are the simulation's (``kill``, ``node_down``,
``node_up``), the cluster's the ledger's.

The model, per job, in the job's work units (seconds at rate 1, as its ``remaining``):

* a *run* (from a start or resume to the next stop) first pays its overhead ``r`` (a
  preemption's checkpoint cost, a migration's cost, or the restart overhead after a kill),
  then works in chunks of ``checkpoint_every`` seconds, each followed by a checkpoint of the
  job's ``checkpoint_cost`` seconds, except after the last chunk (the job ends instead);
* the engine's ``remaining`` is always the time the job still needs if nothing fails: work
  left since the last checkpoint, overhead, and the checkpoints still to write;
* a preemption or migration keeps all work (it checkpoints, as before); a kill keeps only the
  work up to the run's last completed checkpoint (or the run's start): the rest is *lost*.

Every draw comes from generators seeded by the config's seed, in a fixed order: node
failures from ``default_rng([seed, 1])`` (the first failure of every node in node order, then
one draw per repair, in the order repairs happen), jobs' own failures from
``default_rng([seed, 2])`` (two draws per job, in job order, at the start; none with
``fates="recorded"``, where the jobs recorded as failed fail as their work ends).
"""

from __future__ import annotations

import heapq
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.clock import EPS
from analysim.engine.spares import Spares
from analysim.inputs.failures import check_schedule_nodes, mtbf_per_node
from analysim.inputs.workload import FAILED_STATES

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation
    from analysim.inputs.workload import Workload

#: mean work (seconds) after which a job that fails by itself fails (exponential, capped at
#: its duration): most failed jobs of the Acme traces fail within minutes
JOB_FAILURE_MEAN = 300.0

#: restarts of one job at which (and at each tenfold count after) a run logs a warning that
#: the job may never finish, if it has lost more run time than it kept work
RESTARTS_WARNED = 100

logger = logging.getLogger(__name__)
#: the generator streams of the failure draws: ``default_rng([seed, stream])``
NODE_STREAM, JOB_STREAM = 1, 2
# node events at one step: repairs first (a node may fail again as it comes back)
_UP, _DOWN = 0, 1


@dataclass(frozen=True)
class FailureRecord:
    """What the failures did by one moment (copies): per job its restarts, the run time it
    lost to failures, the run time of work it kept (useful) and the time it waited to run
    again after kills; which nodes are down."""

    restarts: np.ndarray
    lost: np.ndarray
    useful: np.ndarray
    #: the same two in GPU-seconds, at the GPUs each run held (an elastic job's vary)
    lost_gpu: np.ndarray
    useful_gpu: np.ndarray
    #: per job: seconds from each kill it restarted after to its next start, summed
    recovery: np.ndarray
    down: np.ndarray
    #: which nodes are spares now (held out of placement), or None without spares
    spare: np.ndarray | None = None


def _progress(u: float, r: float, whole: float, count: int, every: float, cost: float):
    """What a run did after ``u`` work units: (useful work, work saved by its completed
    checkpoints, overhead still unpaid), for a run that pays overhead ``r``, then does
    ``whole`` work with ``count`` checkpoints of ``cost`` after each ``every`` of it."""
    if u <= r:
        return 0.0, 0.0, r - u
    v = u - r
    if not count:
        return min(v, whole), 0.0, 0.0
    period = every + cost
    k = min(int(v / period + EPS), count)
    rest = v - k * period
    useful = k * every + (rest if k == count else min(rest, every))
    return min(useful, whole), k * every, 0.0


def recorded_failures(workload: Workload) -> np.ndarray:
    """Per job of ``workload``, whether its recorded ``state`` is a failure (FAILED,
    NODE_FAIL, TIMEOUT): with ``fates="recorded"`` it fails for good as its work ends."""
    if "state" not in workload.jobs.columns:
        raise ValueError(
            f"SimConfig: fates='recorded' ends each job in its recorded state, but workload "
            f"{workload.name!r} has no 'state' column (use fates='model')"
        )
    return np.isin(workload.jobs["state"].to_numpy(dtype=object), FAILED_STATES)


class Failures:
    """Node failures and repairs, jobs' own failures, checkpoints and what each run keeps,
    for the simulation ``sim``."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        config = sim.config
        self.clock, self.ledger = sim.clock, sim.ledger
        n = sim.n_jobs
        self.every = math.inf if config.checkpoint_every is None else config.checkpoint_every
        self.cost = sim.cost.tolist()  # one checkpoint's seconds: the job's checkpoint_cost
        self.restart_overhead = config.restart_overhead or 0.0
        self.retry = config.retry_failed
        self.duration = sim.duration.tolist()
        #: per job: work left from its last checkpoint; restarts; run time lost; kept
        self.useful_left = list(self.duration)
        self.restarts = [0] * n
        self.lost = [0.0] * n
        self.useful = [0.0] * n
        self.lost_gpu = [0.0] * n  # (the same in GPU-seconds, at the GPUs each run held)
        self.useful_gpu = [0.0] * n
        self.recovery = [0.0] * n
        self._killed_at: dict[int, float] = {}  # killed jobs waiting to restart: since when
        self._warn_at: dict[int, int] = {}  # the restarts at which a job is next warned of
        # per running job its run: (start, overhead, work, checkpoints, rate, GPUs held)
        self._run: dict[int, tuple[float, float, float, int, float, int]] = {}
        self._runs = [0] * n  # per job, its runs so far (stale own-failure events differ)
        self._last: tuple[float, float, float, int] = (0.0, 0.0, 1.0, 0)  # the last stop: lose
        remaining = sim.remaining
        for j in range(n):  # the checkpoints each job will write, if nothing fails
            remaining[j] += self._checkpoints(self.duration[j]) * self.cost[j]
        self._init_own_failures(n, config)
        self._init_nodes(config)

    # -- set-up -------------------------------------------------------------------------------
    def _init_own_failures(self, n: int, config) -> None:
        """Which jobs fail by themselves, and after how much work: drawn (two draws per
        job), or, with recorded fates, the jobs recorded as failed, at the end of their
        work (:func:`recorded_failures`)."""
        self.recorded = config.fates == "recorded"
        if self.recorded:
            failed = recorded_failures(self.sim.workload)
            after, faulty = self.sim.duration, failed
        else:
            rng = np.random.default_rng([config.seed, JOB_STREAM])
            faulty = rng.random(n) < config.job_failure_prob
            after = np.minimum(rng.exponential(JOB_FAILURE_MEAN, n), self.sim.duration)
        #: per job, the work after which it fails by itself (NaN: it does not)
        self.fail_point = np.where(faulty, after, np.nan).tolist()
        self._own: list[tuple[float, float, int, int]] = []  # (step, time, job, run)

    def _init_nodes(self, config) -> None:
        """The first node event of each node: its scheduled or drawn first failure."""
        sim = self.sim
        names = sim.node_names.tolist()
        self._node_groups: list[list[int]] = [[] for _ in names]
        for g, nodes in enumerate(sim.group_nodes):
            for node in nodes.tolist():
                self._node_groups[node].append(g)
        # (step, repairs first, node, the scheduled time it is up again or NaN)
        self._nodes: list[tuple[float, int, int, float]] = []
        self._rng = None
        due = self.clock.due
        if config.failures is not None:
            check_schedule_nodes(config.failures, names, sim.cluster.name)
            index = {name: i for i, name in enumerate(names)}
            for node, down, up in config.failures:
                self._nodes.append((due(down), _DOWN, index[node], up))
        elif config.node_mtbf is not None:
            self._rng = np.random.default_rng([config.seed, NODE_STREAM])
            self._shape = float(config.failure_shape)
            types = sim.cluster.nodes["gpu_type"].astype(str).tolist()
            mtbf = mtbf_per_node(config.node_mtbf, types, names, sim.cluster.name)
            mean_draw = math.gamma(1.0 + 1.0 / self._shape)  # of a Weibull of scale 1
            self._scale = [m / mean_draw for m in mtbf]
            self._repair = float(config.repair_time)
            first = np.array(self._scale) * self._rng.weibull(self._shape, len(names))
            self._nodes = [(due(t), _DOWN, k, math.nan) for k, t in enumerate(first.tolist())]
        heapq.heapify(self._nodes)
        #: the spare pool (``engine/spares.py``), or None without spares
        self.spares = Spares(sim, self._node_groups) if config.spare_nodes else None

    def _checkpoints(self, work: float) -> int:
        """How many checkpoints a run of ``work`` writes (none after its last chunk)."""
        if work <= 0 or math.isinf(self.every):
            return 0
        return max(0, math.ceil(work / self.every - EPS) - 1)

    # -- the clock ----------------------------------------------------------------------------
    def next_time(self) -> float:
        """The next step at which a failure or repair happens (inf: none)."""
        own, runs = self._own, self._runs
        while own and own[0][3] != runs[own[0][2]]:
            heapq.heappop(own)  # the run it would have cut short ended first
        soonest = own[0][0] if own else math.inf
        if self._nodes and self._nodes[0][0] < soonest:
            soonest = self._nodes[0][0]
        return soonest

    def own_failures_due(self, t: float) -> set[int]:
        """Jobs that fail by themselves by step ``t`` (before the runs that end then: a job
        whose failure point is its last moment fails). Returns the groups touched."""
        touched: set[int] = set()
        own, runs = self._own, self._runs
        while own and own[0][0] <= t + EPS:
            _, at, j, run = heapq.heappop(own)
            if run != runs[j]:
                continue
            self.fail_point[j] = math.nan  # it fails once
            self.sim.kill(j, at, restart=self.retry)
            touched.add(self.sim.facts.group[j])
        return touched

    def nodes_due(self, t: float) -> set[int]:
        """Nodes that fail or are repaired by step ``t`` (after the runs that end by then).
        Returns the groups touched."""
        touched: set[int] = set()
        nodes, sim = self._nodes, self.sim
        while nodes and nodes[0][0] <= t + EPS:
            _, kind, node, up = heapq.heappop(nodes)
            if kind == _UP:
                sim.node_up(node)
                if self.spares is not None:
                    self.spares.repaired(node)
                if self._rng is not None:
                    after = self._scale[node] * float(self._rng.weibull(self._shape))
                    heapq.heappush(nodes, (self.clock.due(t + after), _DOWN, node, math.nan))
            else:
                spares = self.spares
                victims = self._jobs_on(node)
                held = {} if spares is None else {j: spares.held(j) for j in victims}
                for j in victims:
                    sim.kill(j, t, restart=True, node=node)
                if spares is not None:
                    spares.going_down(node)
                sim.node_down(node)
                if held:
                    spares.stand_in(node, held)
                back = t + self._repair if math.isnan(up) else up
                heapq.heappush(nodes, (self.clock.due(back), _UP, node, math.nan))
            touched.update(self._node_groups[node])
        return touched

    def _jobs_on(self, node: int) -> list[int]:
        """The running jobs holding anything on ``node``, in job order."""
        pairs = self.ledger.alloc_pairs
        return sorted(j for j, held in pairs.items() if any(n == node for n, _ in held))

    # -- runs ---------------------------------------------------------------------------------
    def started(self, j: int) -> None:
        """Job ``j`` starts a run now (its ``remaining`` and rate are set): plan its
        checkpoints and, if it fails by itself within this run, when."""
        sim = self.sim
        now, rate = self.clock.now, float(sim.rate[j])
        killed = self._killed_at.pop(j, None)
        if killed is not None:
            self.recovery[j] += now - killed
        work, cost = self.useful_left[j], self.cost[j]
        count = self._checkpoints(work)
        overhead = max(0.0, float(sim.remaining[j]) - work - count * cost)
        self._runs[j] += 1
        self._run[j] = (now, overhead, work, count, rate, sim.facts.gpus[j])
        point = self.fail_point[j]
        if point == point:  # not NaN: it fails by itself once its work reaches the point
            into = max(0.0, point - (self.duration[j] - work))
            if into <= work + EPS:
                if self.recorded:  # at the end of its work: the moment the run ends
                    at = now + float(sim.remaining[j]) / rate
                else:
                    written = self._checkpoints(into) if into > 0 else 0
                    at = now + (overhead + into + written * cost) / rate
                heapq.heappush(self._own, (self.clock.due(at), at, j, self._runs[j]))

    def stopped(self, j: int, at: float) -> None:
        """Job ``j``'s run stops at ``at`` (it ended, was evicted or moved, or is killed):
        the work it did counts; its ``remaining`` becomes what it needs from here."""
        start, overhead, work, count, rate, gpus = self._run.pop(j)
        self._runs[j] += 1
        cost = self.cost[j]
        done, saved, unpaid = _progress(
            (at - start) * rate, overhead, work, count, self.every, cost
        )
        left = work - done
        self.useful_left[j] = left
        self.useful[j] += done / rate
        self.useful_gpu[j] += done / rate * gpus
        self._last = (done, saved, rate, gpus)
        self.sim.remaining[j] = left + unpaid + self._checkpoints(left) * cost

    def lose(self, j: int, restart: bool) -> float:
        """Job ``j``, just stopped, was killed: it keeps only the work its run's completed
        checkpoints saved, and pays the restart overhead when it runs again (``restart``).
        Returns the work lost."""
        done, saved, rate, gpus = self._last
        lost = done - saved
        left = self.useful_left[j] + lost
        self.useful_left[j] = left
        self.useful[j] -= lost / rate
        self.lost[j] += lost / rate
        self.useful_gpu[j] -= lost / rate * gpus
        self.lost_gpu[j] += lost / rate * gpus
        if restart:
            self.restarts[j] += 1
            self._warn_if_endless(j)
            self._killed_at[j] = self.clock.now
            extra = self.restart_overhead + self._checkpoints(left) * self.cost[j]
            self.sim.remaining[j] = left + extra
        else:
            self.sim.remaining[j] = 0.0
        return lost

    def _warn_if_endless(self, j: int) -> None:
        """Log, at 100 restarts of job ``j`` and each tenfold count after, that it may never
        finish, when it has lost more run time than it kept work (failures come faster than
        its checkpoints)."""
        restarts = self.restarts[j]
        if restarts != self._warn_at.get(j, RESTARTS_WARNED):
            return
        self._warn_at[j] = restarts * 10
        kept = self.duration[j] - self.useful_left[j]
        if self.lost[j] <= kept:
            return
        config = self.sim.config
        logger.warning(
            "job %s has restarted %d times after failures by t=%.0f s and lost %.0f s of run "
            "time (%.0f s of its %.0f s of work kept): with node_mtbf=%s and "
            "checkpoint_every=%s it may never finish; set checkpoint_every, or bound the "
            "run with run(until=...)",
            self.sim.table.ids[j],
            restarts,
            self.clock.now,
            self.lost[j],
            kept,
            self.duration[j],
            config.node_mtbf,
            config.checkpoint_every,
        )

    # -- reading ------------------------------------------------------------------------------
    def record(self) -> FailureRecord:
        """What the failures did by now (the runs under way counted up to now)."""
        useful, recovery = np.array(self.useful), np.array(self.recovery)
        useful_gpu = np.array(self.useful_gpu)
        now = self.clock.now
        for j, killed in self._killed_at.items():  # still waiting to run again: so far
            recovery[j] += now - killed
        for j, (start, overhead, work, count, rate, gpus) in self._run.items():
            done, _, _ = _progress(
                (now - start) * rate, overhead, work, count, self.every, self.cost[j]
            )
            useful[j] += done / rate
            useful_gpu[j] += done / rate * gpus
        return FailureRecord(
            restarts=np.array(self.restarts, dtype=np.int64),
            lost=np.array(self.lost),
            useful=useful,
            lost_gpu=np.array(self.lost_gpu),
            useful_gpu=useful_gpu,
            recovery=recovery,
            down=self.ledger.down.copy(),
            spare=None if self.spares is None else self.ledger.spare.copy(),
        )


__all__ = ["JOB_FAILURE_MEAN", "FailureRecord", "Failures", "recorded_failures"]
