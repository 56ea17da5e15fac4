"""``Simulation``: where to leap next (the clock, ``self.clock``, holds the present), the
per-job state and its changes, and the wiring of the engine's parts: the ledger
(``self.ledger``), the decision rounds (``self.decider``), tenancy (``self.tenancy``) and the
records (``self.records``), each an object with its own state.

The clock moves in whole steps of ``config.step`` seconds and leaps straight to the next step
at which anything can happen (an arrival, a completion, a scheduling round that can change
something). Decisions are made in *rounds*:

* an **event round** whenever jobs arrive or finish: waiting jobs, in the scheduler's order,
  start on free GPUs (no eviction);
* a **full round** at every multiple of ``config.quantum`` while jobs wait: the same, and with
  preemption on a waiting job that does not fit may evict lower-ranked running jobs.

A full round is skipped only when it provably cannot change anything (nothing happened in
its group since a round that would stop where this one would, and the scheduler says its
ranking has not changed; ``docs/semantics.md`` gives the rules). ``config.leap=False``
visits every step and runs every full round; ``reference=True`` turns off every shortcut
(``shortcuts.py``); the results are identical (tests check both).
"""

from __future__ import annotations

import heapq
import logging
import math
from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.book import SPREADER, cluster_book, fgd_meter, job_asks
from analysim.engine.clock import EPS, Clock, on_multiple
from analysim.engine.failures import Failures
from analysim.engine.flags import Flags
from analysim.engine.jobs import JobFacts
from analysim.engine.las_ranking import LASRanking, keeps_las_rules
from analysim.engine.ledger import Ledger
from analysim.engine.records import (
    FAIL,
    FAILED,
    FINISH,
    MIGRATE,
    NODE_DOWN,
    NODE_UP,
    PREEMPT,
    RECLAIM,
    REJECT,
    RESUME,
    START,
    SUBMIT,
    Capture,
    Records,
)
from analysim.engine.resource_placement import ResourcePlacement
from analysim.engine.rounds import Rounds
from analysim.engine.shortcuts import Shortcuts
from analysim.engine.snapshot import RunRecord
from analysim.engine.speed import JobSpeed
from analysim.engine.tenancy import Tenancy
from analysim.errors import PolicyError
from analysim.inputs.arguments import simulation_arguments
from analysim.inputs.config import SimConfig
from analysim.inputs.domains import Domain, build_partition
from analysim.inputs.failures import failures_configured
from analysim.inputs.validation import check_samples, seconds
from analysim.inputs.workload import uses_resources
from analysim.policies import PLACERS
from analysim.policies.placement import Placer, Topology
from analysim.policies.scheduling import DONE, PENDING, RUNNING, UNSCHEDULABLE, WAITING
from analysim.policies.scheduling import FAILED as FAILED_STATUS
from analysim.sharing.placers import share_placer_of
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result
    from analysim.results.state import State

logger = logging.getLogger(__name__)


class Simulation:
    """A simulation of ``workload`` on ``cluster`` under ``config``.

    Step through it with :meth:`step`, run it with :meth:`run`, look at the present with
    :attr:`state`, and collect the outcome with :meth:`result`.
    """

    def __init__(
        self,
        workload: Workload,
        cluster: Cluster,
        config: SimConfig | None = None,
        *,
        progress: bool = False,
        reference: bool = False,
        applications: Mapping[str, Any] | None = None,
    ) -> None:
        workload, cluster, config = simulation_arguments(workload, cluster, config)
        self._applications = applications
        self.workload = workload
        self.cluster = cluster
        self.config = config or SimConfig()
        self.progress = progress
        #: whether jobs may share GPUs and ask for CPU and memory (``engine/book.py``): a
        #: workload that asks for GPU shares, CPU or memory, or a placer of the FGD study
        self.resource_mode = bool(
            uses_resources(workload.jobs) or share_placer_of(self.config.placement) is not None
        )
        # reference=True: the plain rules, every shortcut off (tests compare whole runs)
        self.shortcuts = Shortcuts.none() if reference else Shortcuts()
        self.scheduler = self.config.make_scheduler()
        self.placer = self._make_placer()
        #: the choices of this set-up the parts act on (``engine/flags.py``)
        self.flags = flags = self._make_flags()
        self._picks_one_node, self._static = flags.picks_one_node, flags.static  # (hot loop)
        self.rng = np.random.default_rng(self.config.seed)
        self.clock = Clock(self.config.step, self.config.quantum, self.config.sample_every)
        self._projected_end: float | None = None
        jobs = workload.jobs
        self.partition = build_partition(jobs, cluster)
        # borrowing lets every VC use every other's GPUs: they all interact, as one group
        if flags.borrowing:
            self.partition = self.partition.as_one_group()
        self.scheduler.bind(self.partition.vc_names, self.partition.vc_capacity)
        self._init_jobs(jobs)
        #: the fixed per-job values the parts read (``engine/jobs.py``)
        self.facts = self._job_facts()
        self._init_cluster()
        self._init_records()
        #: node failures, jobs' own failures and checkpoints (``engine/failures.py``); None
        #: when the config asks for none (the engine then never calls it)
        self.failures = Failures(self) if failures_configured(self.config) else None
        self.decider = Rounds(self)
        self.tenancy = Tenancy(self)

    # -- set-up -------------------------------------------------------------------------------
    def _make_placer(self) -> Placer:
        """The whole-GPU placer; under a placer of the FGD study (``share_placer``, which
        places the jobs that fit on one node) the one that spreads larger jobs."""
        self.share_placer = share_placer_of(self.config.placement)
        if self.share_placer is not None:
            return PLACERS.make(SPREADER)
        return self.config.make_placer()

    def _make_flags(self) -> Flags:
        shortcuts, scheduler, placer = self.shortcuts, self.scheduler, self.placer
        # a placer that keeps Placer.place puts a job that fits in one node on one node:
        # the engine then asks its pick_node directly
        picks_one_node = shortcuts.placer and type(placer).place is Placer.place
        static = shortcuts.kept_ranking and scheduler.static
        return Flags(
            skip_rounds=shortcuts.skip_rounds,
            picks_one_node=picks_one_node,
            picks_any_fitting_node=picks_one_node and placer.picks_any_fitting_node,
            borrowing=self.config.borrowing and self.cluster.partitioned,
            partitioned=self.cluster.partitioned,
            static=static,
            ranking_kept=shortcuts.kept_ranking and scheduler.ranking_kept and not static,
        )

    def ask_placer(
        self,
        need: int,
        free: np.ndarray,
        topology: Topology,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray | int | None:
        """The placer's answer: GPUs per node, or (for a job that fits on one node, when the
        placer keeps the base class's rule that such jobs take one node) that node's index.
        Callers have checked that ``free`` holds ``need`` GPUs in all. A placer that draws
        draws from ``rng`` (the run's generator unless given)."""
        rng = self.rng if rng is None else rng
        if self._picks_one_node:  # Placer.place's rule, less its check of the total
            if need <= topology.largest:
                return self.placer.pick_node(need, free, topology, rng)
            return self.placer.spread_over_nodes(need, free, topology, rng)
        return self.placer.place(need, free, topology, rng)

    def _new_ledger(self) -> Ledger:
        """The ledger; in resource mode with the book of the cluster, and FGD's meter."""
        quotas = [d.quota for d in self._domain]
        book = kinds = None
        self.meter = None
        if self.resource_mode:
            self.book = book = cluster_book(self.cluster, self.node_names, self.capacity)
            self.meter = fgd_meter(self.workload.jobs, self.job_ids, self.asks, book)
            kinds, quotas = self.facts.kind, [None if q is None else q * MILLI for q in quotas]
        return Ledger(
            self.capacity,
            self.node_names,
            self.job_ids,
            list(self.partition.vc_names),
            self._usage,
            self._vc,
            quotas,
            book,
            kinds,
            self.meter,
        )

    def _init_jobs(self, jobs) -> None:
        n = len(jobs)
        self.n_jobs = n
        self.job_ids = jobs["job_id"].to_numpy()
        self.gpus = jobs["num_gpus"].to_numpy(dtype=np.int64)
        self.submit = jobs["submit_time"].to_numpy(dtype=float)
        self.arrival = self.clock.arrival_steps(self.submit)
        self.duration = jobs["duration"].to_numpy(dtype=float)
        prio = jobs["priority"] if "priority" in jobs.columns else None
        self.job_priority = np.zeros(n) if prio is None else prio.fillna(0).to_numpy(dtype=float)
        self.cost = self._costs(self.config.make_cost_model(), jobs, "checkpoint_cost")
        self.migration_cost = self._costs(
            self.config.make_migration_cost_model(), jobs, "migration_cost"
        )
        self.remaining = self.duration.copy()
        #: each job's performance model (``engine/speed.py``) and its rate where it runs (or
        #: last ran): 1.0 for a job without an application, and before a job first starts
        self.speed = JobSpeed(
            jobs,
            self.gpus.tolist(),
            self._applications,
            self.cluster.nodes,
            self.partition,
            self.flags.borrowing,
        )
        self.rate = np.ones(n)
        self._rated = self.speed.in_use
        self.attained = np.zeros(n)
        self.executed = np.zeros(n)
        self.since = self.submit.copy()
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.first_start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.migrations = np.zeros(n, dtype=np.int64)
        self.reclaims = np.zeros(n, dtype=np.int64)
        # a job that (re)starts may not be evicted before it has run one quantum past its
        # restore cost: every run then makes progress, so preemption cannot livelock
        self.evictable_from = np.zeros(n)
        #: per job, bumped at each start and preemption: stale heap entries differ (the LAS
        #: ranking reads it too)
        self.versions = [0] * n
        self.job_vc = self.partition.job_vc
        self.job_domain = self.partition.job_domain
        most = np.array([d.max_gpus for d in self.partition.domains], dtype=np.int64)
        self.unschedulable = self.gpus > most[self.job_domain] if n else np.zeros(0, bool)
        # read-only per-job values as Python lists: the hot loop reads them one at a time
        self._gpus = self.gpus.tolist()
        self._vc = self.job_vc.tolist()
        # head-of-line blocking is per queue: one per VC, or one on an unpartitioned cluster
        self._queue = self._vc if self.flags.partitioned else [0] * n
        self._arrival = self.arrival.tolist()
        self._submit = self.submit.tolist()
        self._unschedulable = self.unschedulable.tolist()
        domains = self.partition.domains
        self._domain_index = self.job_domain.tolist()
        self._domain = [domains[d] for d in self._domain_index]
        self.job_group = self.partition.domain_group[self.job_domain] if n else self.job_domain
        self._group = self.job_group.tolist()
        self._usage = self._gpus  # what a job counts against its VC's usage and quota
        self._node_position = [  # per domain: node -> its index among the domain's nodes
            {node: i for i, node in enumerate(d.nodes.tolist())} for d in domains
        ]
        self._columns = {
            "num_gpus": self.gpus,
            "submit_time": self.submit,
            "duration": self.duration,
            "remaining": self.remaining,
            "attained": self.attained,
            "executed": self.executed,
            "since": self.since,
            "status": self.status,
            "vc": self.job_vc,
            "priority": self.job_priority,
            "rate": self.rate,
        }
        #: what each job asks for: whole GPUs, or (resource mode) GPU milli, CPU and memory
        self.asks = asks = job_asks(jobs, self.gpus, self.cluster)
        self.gpu_milli, self.cpu, self.memory = asks.gpu_milli, asks.cpu, asks.memory
        self.milli_total = asks.milli_total
        if self.resource_mode:  # usage, quotas and borrowing count GPU milli
            self._usage = self.milli_total.tolist()

    def _job_facts(self) -> JobFacts:
        asks = self.asks
        return JobFacts(
            gpus=self._gpus,
            usage=self._usage,
            vc=self._vc,
            queue=self._queue,
            group=self._group,
            domain=self._domain,
            domain_index=self._domain_index,
            node_position=self._node_position,
            columns=self._columns,
            milli=asks.gpu_milli.tolist(),
            cpu=asks.cpu.tolist(),
            mem=asks.memory.tolist(),
            kind=asks.kinds(),
        )

    @staticmethod
    def _costs(model, jobs, field: str) -> np.ndarray:
        costs = np.asarray(model.costs(jobs), dtype=float)
        if costs.shape != (len(jobs),):
            raise PolicyError(
                f"{field} model {model.name!r} gave {costs.shape} costs for {len(jobs)} jobs"
            )
        return costs

    def _init_cluster(self) -> None:
        nodes = self.cluster.nodes
        self.node_names = nodes["node"].to_numpy(dtype=object)
        self.capacity = nodes["gpus"].to_numpy(dtype=np.int64)
        #: who holds what (the only writer of cluster state): asked, not aliased
        self.ledger = self._new_ledger()
        n_vc = len(self.partition.vc_names)
        # per VC counters of the waiting jobs, as Python lists: the hot loop updates them
        self.vc_waiting_jobs = [0] * n_vc
        self.vc_waiting_gpus = [0] * n_vc
        if self.resource_mode:
            #: where a job fits (``engine/resource_placement.py``): the rounds and tenancy ask it
            self.placement = ResourcePlacement(
                self.facts,
                self.job_ids,
                self.capacity,
                self.book,
                self.placer,
                self.ask_placer,
                self.share_placer,
                self.meter,
                self.rng,
            )
            self._mark_unschedulable()

    def _mark_unschedulable(self) -> None:
        """Resource mode: a job that no node of its domain could hold on an empty cluster (or
        asks for more GPU milli than its VC's quota) is unschedulable."""
        empty = self.book.clone()
        rng = np.random.default_rng(0)
        known: dict[tuple, bool] = {}
        facts = self.facts
        for j in range(self.n_jobs):
            if self.unschedulable[j]:
                continue
            quota = self._domain[j].quota
            if quota is not None and self._usage[j] > quota * MILLI:
                self.unschedulable[j] = True
                continue
            key = (self._domain_index[j], self._gpus[j], facts.milli[j], facts.cpu[j], facts.mem[j])
            fits = known.get(key)
            if fits is None:
                fits = known[key] = (
                    self.placement.place_on(empty, j, self._domain[j], rng) is not None
                )
            if not fits:
                self.unschedulable[j] = True
        self._unschedulable = self.unschedulable.tolist()

    def _init_records(self) -> None:
        self.next_arrival = 0  # index of the next job to arrive (jobs are in submit order)
        groups = self.partition.n_groups
        self.n_waiting = 0
        #: LAS's own rules: its ranking kept job by job instead of asked for over arrays (a
        #: LASRanking the engine tells of every start, stop and end; the rounds ask it), or None
        self.las: LASRanking | None = (
            LASRanking(self, self.scheduler, groups)
            if self.flags.ranking_kept and keeps_las_rules(self.scheduler)
            else None
        )
        self._init_groups(groups)
        # per group, insertion-ordered sets of waiting and running jobs
        self.waiting: list[dict[int, None]] = [{} for _ in range(groups)]
        self.running: list[dict[int, None]] = [{} for _ in range(groups)]
        self.group_waiting = [0] * groups
        self.active = 0
        self.completions: list[tuple[float, float, int, int]] = []  # (step, end, job, version)
        self.records = Records(memo=self.shortcuts.memos, failures=failures_configured(self.config))
        # waiting jobs per domain and GPU count (a bucket per distinct count): fragmentation
        self.size_buckets = sorted(set(self._gpus))
        bucket_of = {size: k for k, size in enumerate(self.size_buckets)}
        self._bucket = [bucket_of[size] for size in self._gpus]
        # a flat array (domain-major; not tracked by the garbage collector, and cheap to copy)
        self.waiting_counts = array("q", bytes(8 * len(self.partition.domains) * len(bucket_of)))
        self._count_slot = [
            d * len(bucket_of) + k for d, k in zip(self._domain_index, self._bucket, strict=True)
        ]
        self.finished = 0
        self.started = False
        self.changes = 0  # bumped by every start, stop and arrival (what fragmentation reads)
        self._fgd_at, self._fgd_value = -1, 0.0  # FGD's fragmentation, at that many changes
        self._defrag_every = self.config.defrag_every

    def _init_groups(self, groups: int) -> None:
        """Per group: its VCs and nodes; per domain: whether it spans its group's nodes."""
        domains, of_group = self.partition.domains, self.partition.domain_group.tolist()
        members = [
            [d for d, g in zip(domains, of_group, strict=True) if g == k] for k in range(groups)
        ]
        self.group_vcs = [sorted({d.vc for d in m}) for m in members]
        self.group_nodes = [
            np.flatnonzero(np.logical_or.reduce([d.mask for d in m])) for m in members
        ]
        if self.flags.borrowing:  # one group, and its jobs may borrow any node
            self.group_nodes = [np.flatnonzero(self.capacity > 0)]
        self.ledger.set_groups(self._group, self.group_nodes)

    # -- public API ---------------------------------------------------------------------------
    @property
    def now(self) -> float:
        """The present time (seconds; the clock's)."""
        return self.clock.now

    @property
    def rounds(self) -> int:
        """How many times the simulation has advanced (steps visited)."""
        return self.clock.advances

    @property
    def next_sample(self) -> float:
        """The time of the next timeline sample (those before it are in ``records``)."""
        return self.clock.next_sample

    @property
    def done(self) -> bool:
        """True when every schedulable job has finished."""
        return self.next_arrival >= self.n_jobs and self.active == 0

    @property
    def picks_any_fitting_node(self) -> bool:
        """Whether the placer puts a job that fits on one node on any node with room (then
        such a job fits iff some node of its domain has room)."""
        return self.flags.picks_any_fitting_node

    def placer_fits(
        self, need: int, room: np.ndarray, domain: Domain, total: int | None = None
    ) -> bool:
        """Would the placer find ``need`` GPUs given ``room``, the free GPUs of the domain's
        nodes (``total`` of them, if the caller has counted)? (Draws nothing from the rng.)"""
        return self.decider.placer_fits(need, room, domain, total)

    def projected_end(self) -> float:
        """The time this simulation ends when run to completion: computed once, on a fresh
        copy (this one is not advanced), and remembered."""
        if self._projected_end is None:
            copy = Simulation(
                self.workload, self.cluster, self.config, applications=self._applications
            )
            self._projected_end = float(copy.run().now)
        return self._projected_end

    def step(self) -> float:
        """Advance to the next time at which anything happens (one step without leaping)."""
        if not self.started:
            self._start()
        t = self._next_time()
        if t is None:
            return self.clock.now
        self._advance(t)
        return self.clock.now

    def run(self, until: float | None = None) -> Simulation:
        """Run until every job has finished, or up to time ``until`` (seconds)."""
        if until is not None:
            until = seconds(until, "Simulation.run: until", positive=False)
        if not self.started:
            check_samples(self.workload.jobs, self.config.sample_every, until)
            self._start()
        bar = self._progress_bar()
        reported = self.finished
        while True:
            t = self._next_time()
            if t is None or (until is not None and t > until + EPS):
                break
            self._advance(t)
            if bar is not None and self.finished - reported >= 200:
                bar.update(self.finished - reported)
                reported = self.finished
        if until is not None and until > self.clock.now:
            self._account(until)
            self.clock.stop_at(float(until))
        if bar is not None:
            bar.update(self.finished - reported)
            bar.close()
        return self

    @property
    def state(self) -> State:
        """DataFrames of the present moment: ``.jobs``, ``.nodes``, ``.gpus``."""
        from analysim.results.state import State

        return State(self.record())

    def result(self) -> Result:
        """The outcome so far as a :class:`~analysim.results.result.Result`."""
        from analysim.results.build import build_result

        return build_result(self.record())

    def record(self) -> RunRecord:
        """This run's record now (frozen: copies of the changing state; the records up to
        now, the timeline sample due now included), which ``Result`` and ``State`` read."""
        records, ledger = self.records, self.ledger
        return RunRecord(
            workload=self.workload,
            cluster=self.cluster,
            config=self.config,
            partition=self.partition,
            resource_mode=self.resource_mode,
            job_ids=self.job_ids,
            gpus=self.gpus,
            submit=self.submit,
            duration=self.duration,
            job_vc=self.job_vc,
            job_group=self.job_group,
            gpu_milli=self.gpu_milli,
            cpu=self.cpu,
            memory=self.memory,
            milli_total=self.milli_total,
            node_names=self.node_names,
            capacity=self.capacity,
            gpu_offset=ledger.gpu_offset,
            size_buckets=list(self.size_buckets),
            picks_any_fitting_node=self.picks_any_fitting_node,
            placer_fits=self.decider.placer_fits,
            now=float(self.clock.now),
            status=self.status.copy(),
            since=self.since.copy(),
            remaining=self.remaining.copy(),
            rate=self.rate.copy() if self._rated else None,
            executed=self.executed.copy(),
            first_start=self.first_start.copy(),
            end=self.end.copy(),
            preemptions=self.preemptions.copy(),
            migrations=self.migrations.copy(),
            reclaims=self.reclaims.copy(),
            borrowed=ledger.borrowed.copy(),
            borrowed_gpu_seconds=ledger.borrowed_gpu_seconds.copy(),
            last_nodes=dict(ledger.last_nodes),
            busy_gpu_seconds=self.busy_gpu_seconds,
            vc_running_jobs=tuple(ledger.vc_running_jobs),
            vc_waiting_jobs=tuple(self.vc_waiting_jobs),
            finished=self.finished,
            free=ledger.free.copy(),
            gpu_owner=ledger.gpu_owner(),
            gpu_holders=ledger.gpu_holders() if self.resource_mode else [],
            fgd_per_node=list(ledger.node_frag),
            book=self.book.clone() if self.resource_mode else None,
            records=records,
            n_events=len(records),
            n_rounds=len(records.rounds),
            n_tries=len(records.try_job),
            samples=self._samples_until_now(),
            failures=None if self.failures is None else self.failures.record(),
            type_rates=self.speed.type_table(),
        )

    def _samples_until_now(self) -> list[tuple]:
        """The timeline samples so far, including those due at the present moment."""
        samples = list(self.records.samples)
        every, now, due = self.config.sample_every, self.clock.now, self.clock.next_sample
        if due <= now + 1e-9:
            count = int(np.floor((now - due) / every + 1e-9)) + 1
            samples.append((due, count, self.sample_counters(), self.capture()))
        return samples

    # -- the clock ----------------------------------------------------------------------------
    def _start(self) -> None:
        self.started = True
        for j in np.flatnonzero(self.unschedulable):
            self.status[j] = UNSCHEDULABLE
            self.records.record(self.submit[j], REJECT, int(j), None)
        self._skip_unschedulable()
        if self.unschedulable.any():
            logger.warning(
                "%d job(s) can never run (more than their VC's nodes or quota hold, or a GPU "
                "type none of them has); they are reported as unschedulable and why_waiting "
                "says why",
                int(self.unschedulable.sum()),
            )

    def _next_time(self) -> float | None:
        if self.next_arrival >= self.n_jobs and self.active == 0:  # done (inline: every step)
            return None
        clock = self.clock
        if not self.config.leap:
            return clock.now + clock.step if clock.advances else self._first_time()
        soonest = math.inf
        if self.next_arrival < self.n_jobs:
            soonest = self._arrival[self.next_arrival]
        completions, version = self.completions, self.versions
        while completions and completions[0][3] != version[completions[0][2]]:
            heapq.heappop(completions)  # the end of a run that was cut short: nothing happens
        if completions and completions[0][0] < soonest:
            soonest = self.completions[0][0]
        if self.failures is not None:
            soonest = min(soonest, self.failures.next_time())
        if self.n_waiting or self.decider.allocator is not None:
            round_time = self.decider.next_full_round(soonest)
            if round_time is not None:
                soonest = round_time
        if self._defrag_every is not None and self.active:
            defrag = clock.boundary_after(clock.now, self._defrag_every)
            if defrag < soonest:
                soonest = defrag
        if math.isinf(soonest):
            return None
        return max(soonest, clock.now + clock.step) if clock.advances else soonest

    def _first_time(self) -> float:
        first = float(self.arrival[self.next_arrival]) if self.next_arrival < self.n_jobs else 0.0
        if self.failures is not None:  # a node may fail before the first job arrives
            first = min(first, self.failures.next_time())
        return first

    def _advance(self, t: float) -> None:
        clock = self.clock
        if clock.next_sample < t:  # (most steps take no sample: the cheap test first)
            self._account(t)
        clock.advance_to(t)
        failures = self.failures
        if failures is None:
            touched = self._finish_due(t) | self._arrive_due(t)
        else:  # own failures before the runs that end then, nodes after (engine/failures.py)
            touched = failures.own_failures_due(t) | self._finish_due(t)
            touched |= failures.nodes_due(t) | self._arrive_due(t)
        if self._defrag_every is not None:
            if on_multiple(t, self._defrag_every):
                touched |= self.tenancy.defragment()
        self.decider.step(t, touched)

    def _account(self, t: float) -> None:
        """Integrate busy GPUs over [now, t) and record timeline samples in that span."""
        due = self.clock.samples_before(t)
        if due is not None:
            first, count = due
            self.records.samples.append((first, count, self.sample_counters(), self.capture()))

    # -- arrivals and completions -------------------------------------------------------------
    def _arrive_due(self, t: float) -> set[int]:
        touched: set[int] = set()
        arrival, n = self._arrival, self.n_jobs
        while self.next_arrival < n and arrival[self.next_arrival] <= t + EPS:
            j = self.next_arrival
            self.next_arrival += 1
            if self._unschedulable[j]:
                continue
            self.status[j] = WAITING
            self.active += 1
            self.changes += 1
            self._enqueue(j)
            if self.las is not None:
                self.las.arrived(j)
            self.records.record(self._submit[j], SUBMIT, j, None)
            group = self._group[j]
            touched.add(group)
            self.decider.arrived(group)
        if self.next_arrival < n and self._unschedulable[self.next_arrival]:
            self._skip_unschedulable()
        return touched

    def _skip_unschedulable(self) -> None:
        """Move the arrival pointer past jobs that never arrive (they are unschedulable)."""
        while self.next_arrival < self.n_jobs and self._unschedulable[self.next_arrival]:
            self.next_arrival += 1

    def _finish_due(self, t: float) -> set[int]:
        touched: set[int] = set()
        while self.completions and self.completions[0][0] <= t + EPS:
            _, end, j, version = heapq.heappop(self.completions)
            if version != self.versions[j]:
                continue
            self._stop_running(j, end)
            self.remaining[j] = 0.0
            self.end[j] = end
            self.status[j] = DONE
            if self.las is not None:
                self.las.finished(j)
            self.finished += 1
            self.active -= 1
            self.records.record(end, FINISH, j, self.ledger.last_nodes[j])
            touched.add(self._group[j])
        return touched

    # -- state changes (the only code that mutates state) ---------------------------------------
    # The public three, start_running, preempt and migrate, are what the rounds and the tenancy
    # call to change a job's state; the ledger checks every change of the cluster they make.
    def start_running(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        claims: list | None = None,
        borrowed: bool = False,
    ) -> None:
        """Start (or resume) waiting job ``j`` on ``counts[i]`` GPUs of node ``nodes[i]``
        (resource mode: with its ``claims`` of GPU milli, CPU and memory on them; GPUs of
        other VCs when ``borrowed``): the ledger checks they are free and within quota;
        ``j`` leaves the queue, runs from now, and may not be evicted for a quantum past its
        restore cost."""
        if self._rated:
            self.rate[j] = self.speed.rate(j, nodes, counts)
        self._take(j, nodes, counts, borrowed, claims)
        self._dequeue(j)
        now = self.clock.now
        resumed = self.versions[j] > 0
        if not resumed:
            self.first_start[j] = now
        self.status[j] = RUNNING
        self.since[j] = now
        restore = float(self.cost[j]) if resumed else 0.0
        self.evictable_from[j] = now + self.config.quantum + restore
        self._run_until_done(j)
        gpus = tuple(self.ledger.alloc_gpus[j])
        self.records.record(now, RESUME if resumed else START, j, nodes, gpus, borrowed)

    def _run_until_done(self, j: int) -> None:
        """Schedule the completion of running job ``j`` (a new version of its run): its
        remaining work at its rate (exact with rate 1.0: x / 1.0 is x)."""
        version = self.versions[j] + 1
        self.versions[j] = version
        if self.failures is not None:
            self.failures.started(j)
        end = self.clock.now + float(self.remaining[j]) / float(self.rate[j])
        due = self.clock.due(end)
        heapq.heappush(self.completions, (due, end, j, version))
        if self.las is not None:
            self.las.ran(j)

    def _take(
        self, j: int, nodes: np.ndarray, counts: np.ndarray, borrowed: bool, claims: list | None
    ) -> None:
        """Give job ``j`` GPUs: ``counts[i]`` on node ``nodes[i]`` (and, in resource mode, its
        ``claims``); the ledger checks."""
        self.changes += 1
        self.ledger.take(j, nodes, counts, borrowed, self.clock.now, claims)
        self.running[self._group[j]][j] = None
        self.decider.took(j, nodes, counts)

    def _stop_running(self, j: int, at: float) -> None:
        self.changes += 1
        elapsed = at - float(self.since[j])
        self.executed[j] += elapsed
        self.attained[j] += elapsed * self._gpus[j]
        self.remaining[j] -= elapsed * float(self.rate[j])  # (x * 1.0 is x)
        self.since[j] = at
        if self.failures is not None:
            self.failures.stopped(j, at)
        self.ledger.release(j, at, elapsed)
        del self.running[self._group[j]][j]
        self.decider.released(j)

    def preempt(self, j: int, cause: int | None = None, kind: int = PREEMPT) -> None:
        """Evict running job ``j`` (for job ``cause``): it waits again and will pay its
        checkpoint/restore cost. ``kind`` is PREEMPT, or RECLAIM when the owner of the
        borrowed GPUs it held wants them back."""
        nodes, now = self.ledger.last_nodes[j], self.clock.now
        self._stop_running(j, now)
        self.remaining[j] += self.cost[j]
        if kind == RECLAIM:
            self.reclaims[j] += 1
        else:
            self.preemptions[j] += 1
        self.versions[j] += 1
        self.status[j] = WAITING
        self._enqueue(j)
        if self.las is not None:
            self.las.stopped(j)
        self.records.record(now, kind, j, nodes, cause=cause)

    def kill(self, j: int, at: float, restart: bool, node: int | None = None) -> None:
        """Running job ``j`` is killed at ``at`` by a failure (of ``node``, or its own): it
        loses the work since its last checkpoint and waits to run again (``restart``, paying
        the restart overhead), or ends ``failed``."""
        nodes = self.ledger.last_nodes[j]
        self._stop_running(j, at)
        self.failures.lose(j, restart)
        self.versions[j] += 1
        if restart:
            self.status[j] = WAITING
            self._enqueue(j)
            if self.las is not None:
                self.las.stopped(j)
            # it may wait where no job waited (a ranking is then not kept up to date): its
            # group is ranked afresh, as when a job arrives
            self.decider.arrived(self._group[j])
        else:
            self.status[j] = FAILED_STATUS
            self.end[j] = at
            if self.las is not None:
                self.las.finished(j)
            self.finished += 1
            self.active -= 1
        left = None if node is None else np.array([node])
        self.records.record(at, FAIL if restart else FAILED, j, nodes, left=left)

    def node_down(self, node: int) -> None:
        """``node`` fails (its jobs killed first): no job is placed on it until it is up."""
        self.changes += 1
        self.ledger.node_down(node)
        self._nodes_changed(node, NODE_DOWN)

    def node_up(self, node: int) -> None:
        """``node`` is repaired: its GPUs are free again."""
        self.changes += 1
        self.ledger.node_up(node)
        self._nodes_changed(node, NODE_UP)

    def _nodes_changed(self, node: int, kind: int) -> None:
        groups = [g for g, nodes in enumerate(self.group_nodes) if node in nodes]
        self.decider.nodes_changed(groups)
        self.records.record(self.clock.now, kind, -1, np.array([node]))

    def migrate(
        self,
        j: int,
        nodes: np.ndarray,
        counts: np.ndarray,
        cause: int | None = None,
        claims: list | None = None,
    ) -> None:
        """Move running job ``j`` to ``counts`` GPUs on ``nodes`` (resource mode: with its
        ``claims`` there): it keeps its work and pays its migration cost."""
        left = self.ledger.last_nodes[j]
        borrowed = bool(self.ledger.borrowed[j])
        now = self.clock.now
        self._stop_running(j, now)
        self.remaining[j] += self.migration_cost[j]
        self.migrations[j] += 1
        if self._rated:
            self.rate[j] = self.speed.rate(j, nodes, counts)
        self._take(j, nodes, counts, borrowed, claims)
        self._run_until_done(j)
        gpus = tuple(self.ledger.alloc_gpus[j])
        self.records.record(now, MIGRATE, j, nodes, gpus, borrowed, cause=cause, left=left)

    # -- the ledger's state, read-only (the ledger owns it) -------------------------------------
    @property
    def free(self) -> np.ndarray:
        """Fully free GPUs per node."""
        return self.ledger.free

    @property
    def gpu_offset(self) -> np.ndarray:
        """The global index of each node's first GPU."""
        return self.ledger.gpu_offset

    @property
    def last_nodes(self) -> dict[int, np.ndarray]:
        """Where each job that has run ran last (its nodes)."""
        return self.ledger.last_nodes

    @property
    def borrowed(self) -> np.ndarray:
        """Per job: whether it runs on GPUs borrowed from other VCs."""
        return self.ledger.borrowed

    @property
    def borrowed_gpu_seconds(self) -> np.ndarray:
        """Per job: the GPU-seconds it held on borrowed GPUs, up to its last stop."""
        return self.ledger.borrowed_gpu_seconds

    @property
    def vc_used(self) -> list[int]:
        """Per VC: GPUs its jobs hold on its own nodes or quota (GPU milli in resource mode)."""
        return self.ledger.vc_used

    @property
    def vc_running_jobs(self) -> list[int]:
        """Per VC: its running jobs."""
        return self.ledger.vc_running_jobs

    @property
    def gpu_owner(self) -> np.ndarray:
        """The job holding each GPU (-1 for free; resource mode: the first to take it),
        checked: no GPU may be held twice (over 1000 milli)."""
        return self.ledger.gpu_owner()

    @property
    def gpu_holders(self) -> list[list[int]]:
        """The jobs holding each GPU (global index), checked."""
        return self.ledger.gpu_holders()

    def fgd_frag_milli(self) -> float:
        """FGD's fragmentation of the whole cluster now (GPU milli the workload's task
        shapes cannot use; 0 outside resource mode)."""
        return math.fsum(self.ledger.node_frag)

    def node_fgd_frag(self) -> list[float]:
        """FGD's fragmentation of each node now (0 outside resource mode)."""
        return list(self.ledger.node_frag)

    @property
    def busy_gpu_seconds(self) -> np.ndarray:
        """GPU-seconds each VC's jobs have held GPUs for (borrowed ones too), from 0 to now."""
        return self.ledger.busy_gpu_seconds(self.clock.now)

    def sample_counters(self) -> tuple:
        """The per-VC counters of a timeline sample: GPUs used, running jobs, waiting jobs,
        GPUs the waiting jobs ask for, GPUs borrowed; in resource mode GPUs used and borrowed
        in GPU milli / 1000, and FGD's fragmentation; with failures, the nodes and GPUs down
        last."""
        if self.failures is not None:
            down = self.ledger.down
            return (
                *self._counters(),
                int(down.sum()),
                int(self.capacity[down].sum()),
            )
        return self._counters()

    def _counters(self) -> tuple:
        if self.resource_mode:
            return (
                tuple(u / MILLI for u in self.ledger.vc_used),
                tuple(self.ledger.vc_running_jobs),
                tuple(self.vc_waiting_jobs),
                tuple(self.vc_waiting_gpus),
                tuple(b / MILLI for b in self.ledger.vc_borrowed),
                self._fgd_now(),
            )
        return (
            tuple(self.ledger.vc_used),
            tuple(self.ledger.vc_running_jobs),
            tuple(self.vc_waiting_jobs),
            tuple(self.vc_waiting_gpus),
            tuple(self.ledger.vc_borrowed),
        )  # tuples of ints: the garbage collector soon stops tracking them

    def _fgd_now(self) -> float:
        if self._fgd_at != self.changes:
            self._fgd_at, self._fgd_value = self.changes, self.fgd_frag_milli()
        return self._fgd_value

    def capture(self) -> Capture:
        """The state fragmentation is measured from, now (a copy, shared by the samples
        taken while nothing changes); quota usage in whole GPUs (resource mode: rounded up)."""
        used = self.ledger.vc_used
        if self.resource_mode:
            used = [math.ceil(u / MILLI) for u in used]
        return self.records.capture(self.changes, self.ledger.free, self.waiting_counts, used)

    def _enqueue(self, j: int) -> None:
        vc, group = self._vc[j], self._group[j]
        self.waiting[group][j] = None
        if self._static:
            self.decider.queued(j)
        self.n_waiting += 1
        self.group_waiting[group] += 1
        self.vc_waiting_jobs[vc] += 1
        self.vc_waiting_gpus[vc] += self._gpus[j]
        self.waiting_counts[self._count_slot[j]] += 1

    def _dequeue(self, j: int) -> None:
        vc, group = self._vc[j], self._group[j]
        del self.waiting[group][j]
        if self._static:
            self.decider.unqueued(j)
        self.n_waiting -= 1
        self.group_waiting[group] -= 1
        self.vc_waiting_jobs[vc] -= 1
        self.vc_waiting_gpus[vc] -= self._gpus[j]
        self.waiting_counts[self._count_slot[j]] -= 1

    def _progress_bar(self):
        if not self.progress:
            return None
        from analysim.engine.progress import progress_bar

        total = int((~self.unschedulable).sum())
        return progress_bar(total=total, initial=self.finished, unit="job", desc="simulating")
