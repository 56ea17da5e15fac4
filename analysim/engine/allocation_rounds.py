"""Allocation rounds: how the engine runs a scheduler that computes an allocation
``X[job, type]`` (Gavel's round-based mechanism; the policies are in
``analysim/policies/allocation.py``, the rules in ``docs/heterogeneity.md``).

At every quantum boundary while jobs are active (and only then: a job that arrives between
boundaries waits for the next one, GPUs a job frees stay idle until then):

1. each job that ran in the last round is credited the round's seconds on its GPU type;
2. if jobs arrived or finished since the allocation was last reset, and at least the
   policy's ``min_reset_interval`` has passed since then, the allocation is **reset**: each
   active job's deficit grows by ``X * elapsed - received``, its seconds received per type
   restart at ``quantum / 2`` (as Gavel's), and a new ``X`` is computed over the active jobs
   (only when a round needs it: a round where every candidate fits does not read it);
3. GPU types are taken in order (for aware policies fastest first, by the median rate of
   the workload's jobs that can use each; for agnostic ones in a fresh random order from
   the run's generator each round); for each, the jobs not yet placed that can run there
   (with ``X > 0`` there for FIFO-like policies) are taken by priority
   ``X / (seconds received on T / seconds all jobs received on T)`` (``X * 1e9`` before
   any), then deficit, then ``X``, then arrival, while its GPUs last;
4. a running job not chosen is preempted; one chosen for another type migrates there if
   GPUs of that type are free by then (else it is preempted); chosen jobs not running start
   on GPUs of their type, through the placer, larger jobs first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.clock import on_multiple
from analysim.policies.allocation import AllocationInputs, AllocationScheduler
from analysim.policies.placement import Topology
from analysim.policies.scheduling import RUNNING

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation

#: Gavel's priority of a job that has not run on a type since the last reset: X * this
UNSERVED = 1e9


class AllocationRounds:
    """The allocation rounds of the simulation ``sim`` (its scheduler allocates)."""

    def __init__(self, sim: Simulation) -> None:
        policy = sim.scheduler
        assert isinstance(policy, AllocationScheduler)
        if sim.cluster.partitioned or sim.resource_mode:
            raise ValueError(
                f"scheduler {policy.name!r} allocates GPU types over the whole cluster: it "
                "needs whole GPUs and a cluster without VC-owned nodes (one shared pool)"
            )
        self.sim, self.policy = sim, policy
        self.quantum = sim.config.quantum
        node_types = sim.cluster.nodes["gpu_type"].astype(str).to_numpy()
        self.types = sorted(set(node_types.tolist()))
        self._type_of_node = np.searchsorted(self.types, node_types)
        k = len(self.types)
        self.capacity = np.bincount(self._type_of_node, weights=sim.capacity, minlength=k)
        #: per job and type: the packed rate (0 where the job may not run)
        self.rates = np.asarray(sim.speed.type_rates(self.types), dtype=float)
        usable = np.where(self.rates > 0, self.rates, np.nan)
        typical = [
            float(np.nanmedian(usable[:, t])) if np.isfinite(usable[:, t]).any() else 0.0
            for t in range(k)
        ]
        self._order = sorted(range(k), key=lambda t: (-typical[t], self.types[t]))
        self._shuffle = not policy.aware
        n = sim.n_jobs
        self.on_type = np.full(n, -1, dtype=np.int64)  # where each job runs this round
        self.received = np.zeros((n, k))  # seconds on each type since the last reset
        self.worker_time = np.zeros(k)
        self.deficit = np.zeros((n, k))
        self._known: set[int] = set()
        self._changed = False
        self._last_round: float | None = None
        self._last_reset: float | None = None
        self._inputs: AllocationInputs | None = None
        self._x: np.ndarray | None = None
        self._row: dict[int, int] = {}
        self._topologies: dict[tuple[int, int], tuple[np.ndarray, Topology]] = {}

    # -- when ---------------------------------------------------------------------------------
    def next_round(self, before: float) -> float | None:
        """The next quantum boundary before ``before``, while any job is active."""
        if not self.sim.active:
            return None
        after = self.sim.clock.boundary_after(self.sim.clock.now, self.quantum)
        return after if after < before else None

    def step(self, t: float) -> None:
        """A round at ``t`` if it is a quantum boundary."""
        if on_multiple(t, self.quantum):
            self.round(t)

    # -- a round ------------------------------------------------------------------------------
    def _active(self) -> list[int]:
        sim = self.sim
        jobs: list[int] = []
        for waiting, running in zip(sim.waiting, sim.running, strict=True):
            jobs.extend(waiting)
            jobs.extend(running)
        jobs.sort()
        return jobs

    def round(self, t: float) -> None:
        active = self._active()
        if self._last_round is not None:
            ran = [j for j in active if self.on_type[j] >= 0]
            if ran:
                types = self.on_type[ran]
                self.received[ran, types] += t - self._last_round
                self.worker_time += np.bincount(types, minlength=len(self.types)) * (
                    t - self._last_round
                )
        self._last_round = t
        now = set(active)
        if now != self._known:
            new = sorted(now - self._known)
            self.received[new] = self.quantum / 2
            self._known = now
            self._changed = True
        if not active:
            return
        if self._changed and (
            self._last_reset is None or t - self._last_reset >= self.policy.min_reset_interval
        ):
            self._reset(t, active)
        self._enact(self._plan(active))

    def _reset(self, t: float, active: list[int]) -> None:
        sim, half = self.sim, self.quantum / 2
        if self._last_reset is not None and self._x is not None:
            elapsed = t - self._last_reset
            rows = [self._row.get(j, -1) for j in active]
            x = np.where(np.array(rows)[:, None] >= 0, self._x[rows], 0.0)
            self.deficit[active] += x * elapsed - (self.received[active] - half)
        elif self._last_reset is not None:
            self.deficit[active] -= self.received[active] - half
        self.received[active] = half
        self.worker_time[:] = len(active) * half
        jobs = np.array(active, dtype=np.int64)
        running = sim.status[jobs] == RUNNING
        left = sim.remaining[jobs] - np.where(running, t - sim.since[jobs], 0.0) * sim.rate[jobs]
        self._inputs = AllocationInputs(
            rates=self.rates[jobs],
            gpus=sim.gpus[jobs],
            capacity=self.capacity,
            since_arrival=t - sim.table.submit[jobs],
            remaining=np.maximum(left, 0.0),
            jobs=jobs,
        )
        self._row = {j: i for i, j in enumerate(active)}
        self._x = None
        self._last_reset, self._changed = t, False

    def _allocation(self) -> np.ndarray | None:
        if self._x is None and self._inputs is not None:
            x = np.asarray(self.policy.allocation(self._inputs), dtype=float)
            if x.shape != self._inputs.rates.shape or not np.isfinite(x).all():
                raise ValueError(
                    f"scheduler {self.policy.name!r} returned an allocation of shape {x.shape} "
                    f"for {self._inputs.rates.shape} (jobs, GPU types), or not finite"
                )
            self._x = np.where(self._inputs.rates > 0, x, 0.0)  # never a type it cannot use
        return self._x

    def _x_of(self, j: int, t: int) -> float:
        row = self._row.get(j)
        return 0.0 if row is None or self._x is None else float(self._x[row, t])

    def _priority(self, j: int, t: int) -> float:
        x = self._x_of(j, t)
        if x <= 0:
            return 0.0
        work = self.worker_time[t]
        fraction = self.received[j, t] / work if work > 0 else 0.0
        return x / fraction if fraction > 0 else x * UNSERVED

    def _plan(self, active: list[int]) -> dict[int, int]:
        only_allocated = self.policy.allocated_types_only
        if only_allocated:
            self._allocation()
        order = self.sim.rng.permutation(len(self.types)) if self._shuffle else self._order
        gpus, rates = self.sim.gpus, self.rates
        left = self.capacity.copy()
        plan: dict[int, int] = {}
        for t in order:
            t = int(t)
            candidates = [j for j in active if j not in plan and rates[j, t] > 0]
            if only_allocated:
                candidates = [j for j in candidates if self._priority(j, t) > 0]
            if not candidates:
                continue
            if sum(int(gpus[j]) for j in candidates) > left[t]:
                self._allocation()
                candidates.sort(
                    key=lambda j: (-self._priority(j, t), -self.deficit[j, t], -self._x_of(j, t))
                )
            for j in candidates:
                if gpus[j] <= left[t]:
                    plan[j] = t
                    left[t] -= gpus[j]
        return plan

    def _enact(self, plan: dict[int, int]) -> None:
        """Preempt the running jobs not chosen; move those chosen for another type there
        (a migration) if its GPUs are free by then, else preempt them too; then start the
        chosen jobs that wait, larger jobs first."""
        sim, on_type = self.sim, self.on_type
        moves = []
        for running in sim.running:
            for j in list(running):
                target = plan.get(j, -1)
                if target < 0:
                    sim.preempt(j)
                    on_type[j] = -1
                elif target != on_type[j]:
                    moves.append(j)
        for j in moves:
            if self._place_on(j, plan[j], sim.migrate):
                on_type[j] = plan[j]
            else:
                sim.preempt(j)
                on_type[j] = -1
        starts = [j for j in plan if sim.status[j] != RUNNING]
        starts.sort(key=lambda j: -int(sim.gpus[j]))
        for j in starts:
            if self._place_on(j, plan[j], sim.start_running):
                on_type[j] = plan[j]

    def _place_on(self, j: int, t: int, act) -> bool:
        """Give job ``j`` GPUs of type ``t`` among the nodes it may use (the placer chooses
        them) by ``act(j, nodes, counts)`` (start or migrate); False if they do not fit."""
        sim = self.sim
        domain_index = int(sim.partition.job_domain[j])
        key = (domain_index, t)
        if key not in self._topologies:
            domain = sim.partition.domains[domain_index]
            chosen = np.flatnonzero(self._type_of_node[domain.nodes] == t)
            topo = domain.topology
            self._topologies[key] = (
                domain.nodes[chosen],
                Topology(topo.capacity[chosen], topo.rack[chosen], topo.n_racks),
            )
        nodes, topology = self._topologies[key]
        need = int(sim.gpus[j])
        free = sim.free[nodes]
        if free.sum() < need:
            return False
        take = sim.ask_placer(need, free, topology)
        if take is None:
            return False
        if isinstance(take, (int, np.integer)):
            act(j, nodes[int(take) : int(take) + 1], np.array([need]))
        else:
            chosen = np.flatnonzero(take)
            act(j, nodes[chosen], take[chosen])
        return True


def allocation_rounds(sim: Simulation) -> AllocationRounds | None:
    """The allocation rounds of ``sim`` if its scheduler allocates, else None."""
    return AllocationRounds(sim) if getattr(sim.scheduler, "allocates", False) else None


__all__ = ["AllocationRounds", "allocation_rounds"]
