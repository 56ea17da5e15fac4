"""Elastic jobs in the engine: their GPU counts, their rates, and the resize pass.

A simulation whose workload has an elastic job (``min_gpus < max_gpus``,
``analysim/inputs/elastic.py``) makes one :class:`Elastic` (``Simulation.elastic``; None
otherwise, and nothing here runs). It keeps each job's asked count (``num_gpus``: what it
starts and waits with) and, while it runs, the count it holds, in the engine's per-job
GPU list (``facts.gpus``: the ledger, the evictions and the migrations read it); it gives
the rates (:class:`ElasticSpeed`); and at each scheduling round of an elastic scheduler
(``analysim/policies/elastic.py``) it resizes running elastic jobs
(:meth:`Elastic.round`). The rules are in ``docs/elastic.md``:

* **Rate at g GPUs.** Work is ``duration``, the seconds on ``num_gpus`` GPUs packed. On
  ``g`` GPUs a job without an application runs at ``g / num_gpus`` (linear scaling,
  wherever placed); with an (untyped) application at ``throughput(g, nodes) /
  throughput(num_gpus, fewest nodes listed)``; its allowed counts are those the table lists
  from ``min_gpus`` to ``max_gpus``. With a batch size (``inputs/batch.py``): ``goodput(g,
  nodes, batch now) / goodput(num_gpus, fewest nodes, batch_size)``; a scheduler that
  chooses the batch size (``elastic_goodput``) sizes the job by its best goodput per count
  and sets the batch size chosen for the count it gives (a job whose count stays changes
  its batch size at no cost: ``Simulation.resize(..., rescale=False)``).
* **The pass, per domain (VC or pool) in order.** Running elastic jobs of the domain that
  are not on borrowed GPUs take part. The pool is the domain's free GPUs (within its quota)
  plus what they hold beyond their smallest counts. Waiting jobs of the domain, first in
  first out, are set aside their asked GPUs while they fit the pool (the first that does
  not stops this). The rest is the budget the scheduler hands out
  (:meth:`~analysim.policies.ElasticScheduler.sizes`). Jobs to shrink are resized
  first (within the nodes they hold), then jobs to grow (anywhere in the domain, by the
  placer; a grow the placer cannot place is left for a later round). A resize costs
  ``config.rescale_cost`` seconds of work.
* **Stops.** A job that waits again (preempted, killed) goes back to its asked count: it
  waits and restarts on ``num_gpus``. A migrated job keeps its count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.clock import on_multiple
from analysim.inputs.applications import Application
from analysim.inputs.elastic import elastic_limits
from analysim.policies.elastic import ElasticJob, ElasticScheduler
from analysim.policies.goodput import restart_weight

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation
    from analysim.engine.speed import JobSpeed
    from analysim.inputs.domains import Domain


@dataclass(frozen=True)
class ElasticRecord:
    """Per job: its smallest and largest GPU counts, its resizes, the GPU-seconds it held and
    the GPUs it holds now."""

    min_gpus: np.ndarray
    max_gpus: np.ndarray
    resizes: np.ndarray
    gpu_seconds: np.ndarray
    #: the GPUs each job holds now (running) or last held (its asked count once it waits)
    held: np.ndarray
    #: with batch sizes: the batch size of each job's last run (or asked), else None
    last_batch_size: np.ndarray | None = None


class ElasticSpeed:
    """The rate of each job at the GPUs it holds now (``JobSpeed`` for its asked count)."""

    def __init__(self, speed: JobSpeed, asked: list[int], held: list[int]) -> None:
        self.base = speed
        self._asked = asked
        self._held = held
        self._packed: dict[tuple[str, int], float] = {}

    def __getattr__(self, name: str) -> Any:  # the rest is JobSpeed's (slowest, in_use, ...)
        return getattr(self.base, name)

    def rate(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> float:
        """Job ``j``'s rate on ``counts[i]`` GPUs of ``nodes[i]`` (it holds ``sum(counts)``)."""
        held, asked = self._held[j], self._asked[j]
        if held == asked:
            return self.base.rate(j, nodes, counts)
        model = self.base.model[j]
        if model is None:
            return held / asked
        spanned = int(np.count_nonzero(counts))
        if self.base.batch_app is not None and self.base.batch_app[j] is not None:
            return self.base.batch_rate(j, held, spanned)
        return model.rate(held, spanned) * self.packed(model, held) / self.packed(model, asked)

    def packed(self, model: Application, gpus: int) -> float:
        """The application's throughput on ``gpus`` GPUs on the fewest nodes it lists."""
        key = (model.name, gpus)
        value = self._packed.get(key)
        if value is None:
            rows = model.table[model.table["gpus"] == gpus]
            value = float(rows.sort_values("nodes")["throughput"].iloc[0])
            self._packed[key] = value
        return value


class Elastic:
    """The elastic jobs of ``sim`` with limits ``low``/``high`` (see the module)."""

    def __init__(self, sim: Simulation, low: np.ndarray, high: np.ndarray) -> None:
        self.sim = sim
        self.asked: list[int] = list(sim.facts.gpus)
        self.held = sim.facts.gpus  # the engine's list: what every part reads as a job's GPUs
        self.low, self.high = low, high
        self.elastic = (low < high).tolist()
        self.resizes = np.zeros(len(low), dtype=np.int64)
        self.gpu_seconds = np.zeros(len(low))
        self.speed = ElasticSpeed(sim.speed, self.asked, self.held)
        scheduler = sim.scheduler
        self.policy = scheduler if isinstance(scheduler, ElasticScheduler) else None
        base = sim.speed
        #: with batch sizes (``inputs/batch.py``): each job's batch size now (the engine's
        #: array, which the rates read), and per job the batch size of each count it may take
        self.batches = base.batch if base.batch_app is not None else None
        self._batch_of: dict[int, dict[int, int]] = {}
        self._sizes: dict[tuple, tuple[tuple[int, ...], tuple[float, ...], dict[int, int]]] = {}
        self._shape_of_job: dict[int, tuple[tuple[int, ...], tuple[float, ...], dict]] = {}
        self._domain_size: dict[int, int] = {}  # per domain, its nodes' GPUs
        #: per job, its view for a scheduler that reads neither its work nor its count now
        self._plain_views: dict[int, ElasticJob] = {}
        #: the groups where a job arrived, started or stopped since their last pass: a
        #: time-independent scheduler would give the same sizes again in the others
        self._dirty: set[int] = set()
        #: per group, its running elastic jobs (a pass skips the groups without)
        self._running = [0] * sim.partition.n_groups
        self._group = sim.facts.group
        self._check(sim)

    def _check(self, sim: Simulation) -> None:
        """Refuse what elastic jobs do not support yet, naming it."""
        if sim.resource_mode:
            raise ValueError(
                "Simulation: elastic jobs (min_gpus < max_gpus) need whole GPUs; this run is "
                "in resource mode (GPU shares, CPU or memory asked, or an FGD placer)"
            )
        if any(m is not None and m.typed for m in sim.speed.model):
            raise ValueError(
                "Simulation: elastic jobs cannot yet have typed applications (a gpu_type "
                "column in the application's table)"
            )
        if self.policy is not None and sim.config.backfill == "easy":
            raise ValueError(
                f"Simulation: scheduler {self.policy.name!r} resizes jobs, which EASY "
                f"backfill's reservations do not foresee; use backfill=False or True"
            )

    # -- hooks the simulation calls -------------------------------------------------------------
    def ran(self, j: int) -> None:
        """Job ``j`` runs (started, resumed, migrated or resized)."""
        group = self._group[j]
        self._dirty.add(group)
        if self.elastic[j]:
            self._running[group] += 1

    def stopped(self, j: int, elapsed: float) -> None:
        """Running job ``j`` stopped after ``elapsed`` seconds on the GPUs it holds."""
        self.gpu_seconds[j] += elapsed * self.held[j]
        group = self._group[j]
        self._dirty.add(group)
        if self.elastic[j]:
            self._running[group] -= 1

    def waits(self, j: int) -> None:
        """Job ``j`` waits (arrived, preempted, killed): it asks for its ``num_gpus`` (and
        its ``batch_size``)."""
        self.held[j] = self.asked[j]
        if self.batches is not None:
            self.batches[j] = self.sim.speed.batch_asked[j]
        self._dirty.add(self._group[j])

    def nodes_changed(self, groups: list[int]) -> None:
        """A node of ``groups`` failed, was repaired or set aside (failures, spares): their
        pools changed, so their next pass sizes the jobs anew."""
        self._dirty.update(groups)

    def resized(self, j: int, gpus: int, rescale: bool = True) -> None:
        """Job ``j`` (stopped for it) is to run on ``gpus`` GPUs (at the batch size the
        scheduler gives for them); ``rescale`` False: only its batch size changes."""
        self.held[j] = gpus
        self.resizes[j] += rescale
        chosen = self._batch_of.get(j)
        if chosen is not None:
            self.batches[j] = chosen[gpus]  # type: ignore[index]

    def next_round(self, before: float) -> float:
        """The time of the next pass if it is before ``before`` (else ``before``): the next
        quantum boundary, if a pass there could change anything."""
        sim = self.sim
        if self.policy is None:
            return before
        groups = range(len(self._running)) if self.policy.time_dependent else self._dirty
        if not any(self._running[g] for g in groups):
            return before
        return min(before, sim.clock.boundary_after(sim.clock.now, sim.config.quantum))

    def record(self) -> ElasticRecord:
        """The per-job figures now (a running job's GPU-seconds counted up to now)."""
        sim = self.sim
        held = self.gpu_seconds.copy()
        for running in sim.running:
            for j in running:
                held[j] += (sim.clock.now - float(sim.since[j])) * self.held[j]
        batches = None if self.batches is None else self.batches.copy()
        now = np.array(self.held, dtype=np.int64)
        return ElasticRecord(self.low, self.high, self.resizes.copy(), held, now, batches)

    # -- the pass -------------------------------------------------------------------------------
    def round(self, t: float) -> set[int]:
        """At a quantum boundary ``t``, under an elastic scheduler (before the rounds of
        ``t``): resize running elastic jobs to the counts it gives, in the groups that
        run elastic jobs and changed since their last pass (all of them, for a scheduler
        that depends on time); the groups where a job was resized."""
        sim = self.sim
        if self.policy is None or not on_multiple(t, sim.config.quantum):
            return set()
        touched: set[int] = set()
        due = range(len(self._running)) if self.policy.time_dependent else sorted(self._dirty)
        for group in due:
            if not self._running[group]:
                continue
            running = sim.running[group]
            by_domain: dict[int, list[int]] = {}
            for j in running:
                if self.elastic[j] and not sim.ledger.borrowed[j]:
                    by_domain.setdefault(sim.facts.domain_index[j], []).append(j)
            for d in sorted(by_domain):
                if self._resize_domain(d, sorted(by_domain[d]), group):
                    touched.add(group)
        self._dirty.clear()  # (the passes' own resizes change nothing a pass reads)
        return touched

    def _resize_domain(self, d: int, jobs: list[int], group: int) -> bool:
        sim = self.sim
        domain = sim.partition.domains[d]
        views = [self._view(j) for j in jobs]
        pool = self._free(domain) + sum(
            self.held[j] - v.sizes[0] for j, v in zip(jobs, views, strict=True)
        )
        waiting = sorted(
            (j for j in sim.waiting[group] if sim.facts.domain_index[j] == d),
            key=lambda j: (sim.table.submit[j], j),
        )
        for j in waiting:
            if self.held[j] > pool:
                break
            pool -= self.held[j]
        sizes = self.policy.sizes(views, pool)  # type: ignore[union-attr]
        changed = False
        targets = list(zip(jobs, sizes, strict=True))
        for j, gpus in targets:  # shrinks first: they free GPUs for the grows
            if gpus < self.held[j]:
                changed |= self._resize(j, gpus, domain, d, grow=False)
        for j, gpus in targets:
            if gpus > self.held[j]:
                changed |= self._resize(j, gpus, domain, d, grow=True)
        if self._batch_of:  # a job whose count stays takes the batch size chosen for it
            for j, _ in targets:
                chosen = self._batch_of.get(j)
                if chosen is not None and chosen.get(self.held[j], -1) != self.batches[j]:
                    if self.held[j] in chosen:
                        changed |= self._resize(j, self.held[j], domain, d, grow=False)
        return changed

    def _free(self, domain: Domain) -> int:
        """GPUs free to the domain now: on its nodes, and within its VC's quota."""
        sim = self.sim
        free = int(sim.ledger.free[domain.nodes].sum())
        if domain.quota is not None:
            free = min(free, int(domain.quota) - sim.ledger.vc_used[domain.vc])
        return max(free, 0)

    def _view(self, j: int) -> ElasticJob:
        """What the scheduler knows of job ``j``: its counts, goodput at each, work left (and,
        under a scheduler with a restart penalty, its count now and restart weight)."""
        sim = self.sim
        known = self._shape_of_job.get(j)
        if known is None:
            known = self._shape_of_job[j] = self._shape(j)
        sizes, speed, index = known
        policy = self.policy
        penalty = policy.restart_penalty  # type: ignore[union-attr]
        if penalty <= 0 and not policy.scores_read_work:  # type: ignore[union-attr]
            view = self._plain_views.get(j)  # (what it reads does not change while it runs)
            if view is None:
                view = self._plain_views[j] = ElasticJob(sizes, speed, math.nan)
            return view
        now = sim.clock.now
        remaining = float(sim.remaining[j]) - (now - float(sim.since[j])) * float(sim.rate[j])
        if penalty > 0:
            age = now - float(sim.table.submit[j])
            weight = restart_weight(age, int(self.resizes[j]), penalty)
            return ElasticJob(
                sizes, speed, max(remaining, 0.0), index.get(self.held[j], -1), weight
            )
        return ElasticJob(sizes, speed, max(remaining, 0.0))

    def _shape(self, j: int) -> tuple[tuple[int, ...], tuple[float, ...], dict[int, int]]:
        """Job ``j``'s allowed counts, its speed at each, and the index of each count
        (shared by the jobs of one application, limits and asked count)."""
        model = self.speed.base.model[j]
        base = self.speed.base
        if base.batch_app is not None and base.batch_app[j] is not None:
            return self._batch_shape(j)
        high = min(int(self.high[j]), self._domain_gpus(j))  # (more could never be given)
        key = (None if model is None else model.name, self.low[j], high, self.asked[j])
        known = self._sizes.get(key)
        if known is None:
            low, asked = int(self.low[j]), self.asked[j]
            if model is None:
                sizes = tuple(range(low, high + 1))
                speed = tuple(g / asked for g in sizes)
            else:
                sizes = tuple(g for g in model.gpu_counts if low <= g <= high)
                base = self.speed.packed(model, asked)
                speed = tuple(self.speed.packed(model, g) / base for g in sizes)
            index = {g: i for i, g in enumerate(sizes)}
            known = self._sizes[key] = (sizes, speed, index)
        return known

    def _domain_gpus(self, j: int) -> int:
        """The GPUs of job ``j``'s domain's nodes: no pass gives a job more (a pool is its
        domain's free GPUs and what its jobs hold beyond their smallest counts)."""
        d = self.sim.facts.domain_index[j]
        gpus = self._domain_size.get(d)
        if gpus is None:
            nodes = self.sim.partition.domains[d].nodes
            gpus = self._domain_size[d] = int(self.sim.ledger.capacity[nodes].sum())
        return gpus

    def _batch_shape(self, j: int) -> tuple[tuple[int, ...], tuple[float, ...], dict[int, int]]:
        """As :meth:`_shape`, for a job with batch data: the counts it may take (listed, with
        a usable batch size) and its goodput at each over its reference, at the best batch
        size within its limits (a scheduler that chooses it) or at its own; the batch size
        of each count is kept in ``_batch_of`` (shared by jobs of one shape)."""
        base = self.speed.base
        app, model = base.batch_app[j], base.model[j]  # type: ignore[index]
        chooses = self.policy is not None and self.policy.chooses_batch
        asked_batch = int(base.batch_asked[j])
        low, high = int(base.batch_low[j]), int(base.batch_high[j])
        key = ("batch", app.name, self.low[j], self.high[j], self.asked[j], asked_batch, low, high)
        known = self._sizes.get(key)
        if known is None:
            listed = set(model.gpu_counts) & set(app.gpu_counts)  # type: ignore[union-attr]
            counts = [g for g in sorted(listed) if self.low[j] <= g <= self.high[j]]
            reference = base.goodput(
                app, self.asked[j], app.packed_nodes(self.asked[j]), asked_batch
            )
            sizes, speed, batch_of = [], [], {}
            for g in counts:
                if chooses:
                    found = app.best(g, low, high)
                elif app.fits(g, asked_batch):
                    found = (base.goodput(app, g, app.packed_nodes(g), asked_batch), asked_batch)
                else:
                    found = None
                if found is None and g == self.asked[j]:  # it may always keep its own
                    found = (reference, asked_batch)
                if found is not None:
                    sizes.append(g)
                    speed.append(found[0] / reference)
                    batch_of[g] = found[1]
            index = {g: i for i, g in enumerate(sizes)}
            known = self._sizes[key] = (tuple(sizes), tuple(speed), index, batch_of)
        self._batch_of[j] = known[3]
        return known[0], known[1], known[2]

    def _resize(self, j: int, gpus: int, domain: Domain, d: int, grow: bool) -> bool:
        """Resize ``j`` to ``gpus`` GPUs: shrinking, it keeps its fullest nodes; growing, the
        placer picks among the domain's free GPUs and its own (False if none fit)."""
        sim = self.sim
        ledger = sim.ledger
        held = zip(ledger.alloc_nodes[j].tolist(), ledger.alloc_counts[j].tolist(), strict=True)
        if not grow:  # keep its fullest nodes (the lowest-numbered among equals)
            kept, left = [], gpus
            for node, count in sorted(held, key=lambda pair: (-pair[1], pair[0])):
                if left:
                    kept.append((node, min(count, left)))
                    left -= kept[-1][1]
            kept.sort()
            nodes = np.array([n for n, _ in kept], dtype=np.int64)
            counts = np.array([c for _, c in kept], dtype=np.int64)
            sim.resize(j, gpus, nodes, counts, rescale=gpus != self.held[j])
            return True
        position = sim.facts.node_position[d]
        free = ledger.free[domain.nodes].copy()
        for node, count in held:
            free[position[node]] += count
        if int(free.sum()) < gpus:
            return False
        take = sim.ask_placer(gpus, free, domain.topology)
        if take is None:
            return False
        if isinstance(take, (int, np.integer)):
            nodes, counts = domain.nodes[int(take) : int(take) + 1], np.array([gpus])
        else:
            chosen = np.flatnonzero(take)
            nodes, counts = domain.nodes[chosen], np.asarray(take)[chosen]
        sim.resize(j, gpus, nodes, counts)
        return True


def elastic_of(sim: Simulation) -> Elastic | None:
    """The simulation's elastic jobs, or None when none is elastic."""
    limits = elastic_limits(sim.workload.jobs)
    return None if limits is None else Elastic(sim, *limits)


__all__ = ["Elastic", "ElasticRecord", "ElasticSpeed", "elastic_of"]
