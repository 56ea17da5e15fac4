"""How a :class:`~analysim.engine.simulation.Simulation` is set up: the placer and the flags
its parts act on, the per-job arrays and facts, the cluster's ledger, and the empty records
and queues. A base class of ``Simulation`` (one object), kept apart to keep each file short."""

from __future__ import annotations

from array import array

import numpy as np

from analysim.engine.book import SPREADER, cluster_book, fgd_meter, job_asks
from analysim.engine.flags import Flags
from analysim.engine.jobs import JobFacts
from analysim.engine.las_ranking import LASRanking, keeps_las_rules
from analysim.engine.ledger import Ledger
from analysim.engine.records import (
    Records,
)
from analysim.engine.resource_placement import ResourcePlacement
from analysim.engine.speed import JobSpeed
from analysim.errors import PolicyError
from analysim.inputs.failures import failures_configured
from analysim.policies import PLACERS
from analysim.policies.placement import Placer
from analysim.policies.scheduling import PENDING
from analysim.sharing.placers import share_placer_of
from analysim.sharing.resources import MILLI


class SimulationSetup:
    """The set-up steps of a :class:`~analysim.engine.simulation.Simulation`, in the order its
    ``__init__`` calls them."""

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
