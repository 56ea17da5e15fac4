"""``Simulation``: where to leap next (the clock, ``self.clock``, holds the present), the
state changes, and the wiring of the engine's parts, each an object with its own state: the
jobs' state (``self.job_state``), their lines (``self.arrivals``, ``self.queues``), the
ledger (``self.ledger``), the decision rounds (``self.decider``), tenancy
(``self.tenancy``), the records (``self.records``) and what is handed out
(``self.readout``). Its set-up is ``setup.py``'s; the state the parts own it shows through
read-only views (``sim.remaining`` is ``sim.job_state.remaining``), never copies.

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

import logging
import math
from collections.abc import Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.clock import EPS, Clock, on_multiple
from analysim.engine.elastic import elastic_of
from analysim.engine.failures import Failures
from analysim.engine.las_ranking import LASRanking, keeps_las_rules
from analysim.engine.queues import Arrivals, Queues
from analysim.engine.readout import Readout
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
    RESIZE,
    RESUME,
    START,
    SUBMIT,
    Records,
)
from analysim.engine.resource_placement import ResourcePlacement
from analysim.engine.rounds import Rounds
from analysim.engine.setup import (
    group_layout,
    job_facts,
    job_state,
    job_table,
    make_flags,
    make_placer,
    mark_unschedulable,
    new_ledger,
)
from analysim.engine.shortcuts import Shortcuts
from analysim.engine.tenancy import Tenancy
from analysim.inputs.arguments import simulation_arguments
from analysim.inputs.config import SimConfig
from analysim.inputs.domains import Domain, build_partition
from analysim.inputs.failures import failures_configured
from analysim.inputs.validation import check_samples, seconds
from analysim.inputs.workload import uses_resources
from analysim.policies.placement import Topology
from analysim.policies.scheduling import UNSCHEDULABLE, WAITING
from analysim.sharing.placers import share_placer_of

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result
    from analysim.results.state import State

logger = logging.getLogger(__name__)


def _view(path: str, doc: str) -> property:
    """A read-only property of the simulation: the object at ``path`` (``"ledger.free"``),
    owned by that part."""
    return property(attrgetter(path), doc=doc)


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
        self.config = config = config or SimConfig()
        self.progress = progress
        #: whether jobs may share GPUs and ask for CPU and memory (``engine/book.py``): a
        #: workload that asks for GPU shares, CPU or memory, or a placer of the FGD study
        self.resource_mode = bool(
            uses_resources(workload.jobs) or share_placer_of(config.placement) is not None
        )
        # reference=True: the plain rules, every shortcut off (tests compare whole runs)
        self.shortcuts = Shortcuts.none() if reference else Shortcuts()
        self.scheduler = config.make_scheduler()
        self.placer, share_placer = make_placer(config)
        #: the choices of this set-up the parts act on (``engine/flags.py``)
        self.flags = flags = make_flags(
            config, cluster, self.shortcuts, self.scheduler, self.placer
        )
        self._picks_one_node, self._static = flags.picks_one_node, flags.static  # (hot loop)
        self.rng = np.random.default_rng(config.seed)
        self.clock = Clock(config.step, config.quantum, config.sample_every)
        self._projected_end: float | None = None
        jobs = workload.jobs
        self.partition = partition = build_partition(jobs, cluster)
        # borrowing lets every VC use every other's GPUs: they all interact, as one group
        if flags.borrowing:
            self.partition = partition = partition.as_one_group()
        self.scheduler.bind(partition.vc_names, partition.vc_capacity)
        #: the jobs' fixed arrays, and their changing state (``engine/jobs.py``,
        #: ``engine/job_state.py``)
        self.table, asks = job_table(jobs, cluster, partition, self.clock)
        self.job_state = job_state(
            jobs, self.table, config, cluster, partition, flags.borrowing, applications
        )
        #: the fixed per-job values the parts read (``engine/jobs.py``)
        self.facts = facts = job_facts(
            self.table, asks, partition, flags, self.resource_mode, self.job_state
        )
        #: elastic jobs (``engine/elastic.py``): None when no job is elastic
        self.elastic = elastic_of(self)
        if self.elastic is not None:  # rates at the GPUs each job holds now
            self.job_state.speed, self.job_state.rated = self.elastic.speed, True
        #: who holds what (the only writer of cluster state): asked, not aliased
        self.ledger = ledger = new_ledger(
            cluster, jobs, self.table, asks, facts, partition, self.resource_mode
        )
        #: where a job fits (``engine/resource_placement.py``; resource mode, else None):
        #: the rounds and tenancy ask it
        self.placement: ResourcePlacement | None = None
        if self.resource_mode:
            self.placement = ResourcePlacement(
                facts,
                self.table.ids,
                ledger.capacity,
                ledger.book,
                self.placer,
                self.ask_placer,
                share_placer,
                ledger.meter,
                self.rng,
            )
            mark_unschedulable(self.table.unschedulable, facts, self.placement)
        self.arrivals = Arrivals(self.table)
        groups = partition.n_groups
        #: per group, the waiting and running jobs, and the waiting's counters
        self.queues = Queues(groups, len(partition.vc_names), len(partition.domains), facts)
        #: LAS's own rules: its ranking kept job by job instead of asked for over arrays (a
        #: LASRanking the engine tells of every start, stop and end; the rounds ask it), or None
        self.las: LASRanking | None = (
            LASRanking(self, self.scheduler, groups)
            if flags.ranking_kept and keeps_las_rules(self.scheduler)
            else None
        )
        #: per group, its VCs and its nodes
        self.group_vcs, self.group_nodes = group_layout(partition, ledger.capacity, flags.borrowing)
        ledger.set_groups(facts.group, self.group_nodes)
        self.records = Records(
            memo=self.shortcuts.memos,
            failures=failures_configured(config),
            rates=None if self.elastic is None else self.job_state.rate,
            batches=None if self.elastic is None else self.elastic.batches,
        )
        self.active = 0  # jobs arrived and not ended
        self.finished = 0
        self.started = False
        self.changes = 0  # bumped by every start, stop and arrival (what fragmentation reads)
        #: the timeline samples and the run's record, handed out (``engine/readout.py``)
        self.readout = Readout(self)
        #: node failures, jobs' own failures and checkpoints (``engine/failures.py``); None
        #: when the config asks for none (the engine then never calls it)
        self.failures = Failures(self) if failures_configured(config) else None
        self.decider = Rounds(self)
        self.tenancy = Tenancy(self)

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
        return self.arrivals.over and self.active == 0

    picks_any_fitting_node = _view(
        "flags.picks_any_fitting_node", "Whether a job that fits on one node fits on any with room."
    )

    def placer_fits(
        self, need: int, room: np.ndarray, domain: Domain, total: int | None = None
    ) -> bool:
        """Would the placer find ``need`` GPUs given ``room``, the free GPUs of the domain's
        nodes (``total`` of them, if the caller has counted)? (Draws nothing from the rng.)"""
        return self.decider.evictions.placer_fits(need, room, domain, total)

    def projected_end(self) -> float:
        """The time this simulation ends when run to completion: computed once, on a fresh
        copy (this one is not advanced) taking the same shortcuts, and remembered."""
        if self._projected_end is None:
            copy = Simulation(
                self.workload,
                self.cluster,
                self.config,
                reference=self.shortcuts == Shortcuts.none(),
                applications=self._applications,
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
            self.readout.account(until)
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
        return self.readout.record()

    # -- the clock ----------------------------------------------------------------------------
    def _start(self) -> None:
        self.started = True
        for j in np.flatnonzero(self.table.unschedulable):
            self.job_state.status[j] = UNSCHEDULABLE
            self.records.record(self.table.submit[j], REJECT, int(j), None)
        self.arrivals.skip_unschedulable()
        if self.table.unschedulable.any():
            logger.warning(
                "%d job(s) can never run (more than their VC's nodes or quota hold, or a GPU "
                "type none of them has); they are reported as unschedulable and why_waiting "
                "says why",
                int(self.table.unschedulable.sum()),
            )

    def _next_time(self) -> float | None:
        arrivals = self.arrivals
        pending = arrivals.next < arrivals.n  # (inline, as the next end below: every step)
        if not pending and self.active == 0:  # done
            return None
        clock = self.clock
        if not self.config.leap:
            return clock.now + clock.step if clock.advances else self._first_time()
        soonest = arrivals.times[arrivals.next] if pending else math.inf
        completions = self.job_state.completions
        if completions:
            top = completions[0]
            end = top[0] if top[3] == self.job_state.versions[top[2]] else None
            if end is None:  # stale: the end of a run that was cut short
                end = self.job_state.next_end()
            if end is not None and end < soonest:
                soonest = end
        if self.failures is not None:
            soonest = min(soonest, self.failures.next_time())
        if self.queues.n_waiting or self.decider.allocator is not None:
            round_time = self.decider.next_full_round(soonest)
            if round_time is not None:
                soonest = round_time
        defrag_every = self.config.defrag_every
        if defrag_every is not None and self.active:
            defrag = clock.boundary_after(clock.now, defrag_every)
            if defrag < soonest:
                soonest = defrag
        if self.elastic is not None:
            soonest = self.elastic.next_round(soonest)
        if math.isinf(soonest):
            return None
        return max(soonest, clock.now + clock.step) if clock.advances else soonest

    def _first_time(self) -> float:
        first = float(self.arrivals.next_time() or 0.0)  # (None: every job has arrived)
        if self.failures is not None:  # a node may fail before the first job arrives
            first = min(first, self.failures.next_time())
        return first

    def _advance(self, t: float) -> None:
        clock = self.clock
        if clock.next_sample < t:  # (most steps take no sample: the cheap test first)
            self.readout.account(t)
        clock.advance_to(t)
        failures = self.failures
        if failures is None:
            touched = self._finish_due(t) | self._arrive_due(t)
        else:  # own failures before the runs that end then, nodes after (engine/failures.py)
            touched = failures.own_failures_due(t) | self._finish_due(t)
            touched |= failures.nodes_due(t) | self._arrive_due(t)
        defrag_every = self.config.defrag_every
        if defrag_every is not None:
            if on_multiple(t, defrag_every):
                touched |= self.tenancy.defragment()
        if self.elastic is not None:
            touched |= self.elastic.round(t)
        self.decider.step(t, touched)

    # -- arrivals and completions -------------------------------------------------------------
    def _arrive_due(self, t: float) -> set[int]:
        touched: set[int] = set()
        arrivals = self.arrivals
        if arrivals.next >= arrivals.n or arrivals.times[arrivals.next] > t + EPS:
            return touched  # (inline: most steps see no arrival)
        submit = self.table.submit
        for j in self.arrivals.due(t):
            self.job_state.status[j] = WAITING
            self.active += 1
            self.changes += 1
            self._enqueue(j)
            if self.las is not None:
                self.las.arrived(j)
            self.records.record(submit[j], SUBMIT, j, None)
            group = self.facts.group[j]
            touched.add(group)
            self.decider.arrived(group)
        return touched

    def _finish_due(self, t: float) -> set[int]:
        touched: set[int] = set()
        completions = self.job_state.completions
        if not completions or completions[0][0] > t + EPS:
            return touched  # (inline: most steps see no run end)
        job_state, las, records = self.job_state, self.las, self.records
        last_nodes, group = self.ledger.last_nodes, self.facts.group
        for end, j in job_state.ends_due(t):
            self._stop_running(j, end)
            job_state.finished(j, end)
            if las is not None:
                las.finished(j)
            self.finished += 1
            self.active -= 1
            records.record(end, FINISH, j, last_nodes[j])
            touched.add(group[j])
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
        left: np.ndarray | None = None,
    ) -> None:
        """Start (or resume) waiting job ``j`` on ``counts[i]`` GPUs of node ``nodes[i]``
        (resource mode: with its ``claims`` of GPU milli, CPU and memory on them; GPUs of
        other VCs when ``borrowed``): the ledger checks they are free and within quota;
        ``j`` leaves the queue, runs from now, and may not be evicted for a quantum past its
        restore cost. ``left``: the failed node a job restarting on a spare left."""
        job_state = self.job_state
        if job_state.rated:
            job_state.set_rate(j, nodes, counts)
        gpus = self._take(j, nodes, counts, borrowed, claims)
        self.queues.remove(j)  # it leaves the queue
        if self._static:
            self.decider.unqueued(j)
        now = self.clock.now
        resumed = job_state.start(j, now, self.config.quantum)
        self._run_until_done(j)
        self.records.record(now, RESUME if resumed else START, j, nodes, gpus, borrowed, None, left)

    def _run_until_done(self, j: int) -> None:
        """Schedule the completion of running job ``j`` (a new version of its run): its
        remaining work at its rate (exact with rate 1.0: x / 1.0 is x)."""
        if self.failures is not None:
            self.failures.started(j)
        clock = self.clock
        self.job_state.new_run(j, clock.now, clock.due)
        if self.las is not None:
            self.las.ran(j)
        if self.elastic is not None:
            self.elastic.ran(j)

    def _take(
        self, j: int, nodes: np.ndarray, counts: np.ndarray, borrowed: bool, claims: list | None
    ) -> tuple[tuple[int, ...], ...]:
        """Give job ``j`` GPUs: ``counts[i]`` on node ``nodes[i]`` (and, in resource mode, its
        ``claims``); the ledger checks. Returns the global indices of the GPUs taken, per
        node."""
        self.changes += 1
        gpus = self.ledger.take(j, nodes, counts, borrowed, self.clock.now, claims)
        self.queues.running[self.facts.group[j]][j] = None
        self.decider.took(j, nodes, counts)
        return gpus

    def _stop_running(self, j: int, at: float) -> None:
        self.changes += 1
        facts = self.facts
        elapsed = self.job_state.stop(j, at, facts.gpus[j])
        if self.failures is not None:
            self.failures.stopped(j, at)
        self.ledger.release(j, at, elapsed)
        del self.queues.running[facts.group[j]][j]
        self.decider.released(j)
        if self.elastic is not None:
            self.elastic.stopped(j, elapsed)

    def preempt(self, j: int, cause: int | None = None, kind: int = PREEMPT) -> None:
        """Evict running job ``j`` (for job ``cause``): it waits again and will pay its
        checkpoint/restore cost. ``kind`` is PREEMPT, or RECLAIM when the owner of the
        borrowed GPUs it held wants them back."""
        nodes, now = self.ledger.last_nodes[j], self.clock.now
        self._stop_running(j, now)
        self.job_state.evicted(j, kind == RECLAIM)
        self._enqueue(j)
        if self.las is not None:
            self.las.stopped(j)
        self.records.record(now, kind, j, nodes, None, False, cause)

    def kill(self, j: int, at: float, restart: bool, node: int | None = None) -> None:
        """Running job ``j`` is killed at ``at`` by a failure (of ``node``, or its own): it
        loses the work since its last checkpoint and waits to run again (``restart``, paying
        the restart overhead), or ends ``failed``."""
        nodes = self.ledger.last_nodes[j]
        self._stop_running(j, at)
        self.failures.lose(j, restart)
        self.job_state.killed(j, at, restart)
        if restart:
            self._enqueue(j)
            if self.las is not None:
                self.las.stopped(j)
            # it may wait where no job waited (a ranking is then not kept up to date): its
            # group is ranked afresh, as when a job arrives, and its next change asked
            self.decider.requeued(self.facts.group[j])
        else:
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
        if self.elastic is not None:  # its GPUs came or went: elastic jobs are sized anew
            self.elastic.nodes_changed(groups)
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
        self.job_state.moved(j)
        if self.job_state.rated:
            self.job_state.set_rate(j, nodes, counts)
        gpus = self._take(j, nodes, counts, borrowed, claims)
        self._run_until_done(j)
        self.records.record(now, MIGRATE, j, nodes, gpus, borrowed, cause=cause, left=left)

    def resize(
        self, j: int, gpus: int, nodes: np.ndarray, counts: np.ndarray, rescale: bool = True
    ) -> None:
        """Run elastic job ``j`` on ``gpus`` GPUs instead, ``counts[i]`` on ``nodes[i]``
        (``engine/elastic.py``): it keeps its work and pays ``config.rescale_cost``; with
        ``rescale`` False (its GPUs stay, its batch size changes) it pays nothing."""
        left, now = self.ledger.last_nodes[j], self.clock.now
        self._stop_running(j, now)
        self.job_state.resized(j, self.config.rescale_cost if rescale else 0.0)
        self.elastic.resized(j, gpus, rescale)  # type: ignore[union-attr]
        self.job_state.set_rate(j, nodes, counts)
        gpus_taken = self._take(j, nodes, counts, False, None)
        self._run_until_done(j)
        self.records.record(now, RESIZE, j, nodes, gpus_taken, left=left)

    # -- read-only views of state the parts own (the ledger, the job state, the queues) ----
    # (what the other parts and outside readers read by these names; each has one owner)
    free = _view("ledger.free", "Fully free GPUs per node.")
    borrowed = _view("ledger.borrowed", "Per job: whether it runs on borrowed GPUs.")
    vc_used = _view("ledger.vc_used", "Per VC: GPUs (resource mode: milli) held of its own.")
    node_names = _view("ledger.node_names", "Each node's name.")
    capacity = _view("ledger.capacity", "Each node's GPUs.")
    book = _view("ledger.book", "The resource book (resource mode; None with whole GPUs).")
    n_jobs = _view("table.n", "How many jobs the workload has.")
    job_ids = _view("table.ids", "Each job's id.")
    gpus = _view("table.gpus", "GPUs each job asks for.")
    duration = _view("table.duration", "Each job's work (seconds at rate 1).")
    job_vc = _view("table.vc", "Each job's VC (index into the partition's ``vc_names``).")
    job_domain = _view("table.domain", "Each job's domain (by index).")
    job_group = _view("table.group", "Each job's group (by index).")
    gpu_milli = _view("table.gpu_milli", "GPU milli per GPU each job asks for.")
    status = _view("job_state.status", "Each job's status code.")
    remaining = _view("job_state.remaining", "Each job's work left (seconds at rate 1).")
    rate = _view("job_state.rate", "Each job's rate where it runs or last ran.")
    attained = _view("job_state.attained", "Each job's GPU-seconds of service so far.")
    executed = _view("job_state.executed", "Each job's seconds run so far.")
    since = _view("job_state.since", "Since when each job waits or runs.")
    evictable_from = _view("job_state.evictable_from", "When each job may be evicted.")
    versions = _view("job_state.versions", "Each job's run version (bumped per start/stop).")
    preemptions = _view("job_state.preemptions", "How often each job was preempted.")
    cost = _view("job_state.cost", "Each job's checkpoint/restore cost.")
    migration_cost = _view("job_state.migration_cost", "Each job's migration cost.")
    speed = _view("job_state.speed", "The jobs' performance models (``engine/speed.py``).")
    waiting = _view("queues.waiting", "Per group, its waiting jobs (insertion-ordered).")
    running = _view("queues.running", "Per group, its running jobs (insertion-ordered).")
    group_waiting = _view("queues.group_waiting", "Per group, how many jobs wait.")
    n_waiting = _view("queues.n_waiting", "How many jobs wait.")
    vc_waiting_jobs = _view("queues.vc_waiting_jobs", "Per VC, how many jobs wait.")

    @property
    def gpu_holders(self) -> list[list[int]]:
        """The jobs holding each GPU (global index), checked."""
        return self.ledger.gpu_holders()

    def _enqueue(self, j: int) -> None:
        if self.elastic is not None:  # an elastic job waits (and restarts) on its asked GPUs
            self.elastic.waits(j)
        self.queues.add(j)
        if self._static:
            self.decider.queued(j)

    def _progress_bar(self):
        if not self.progress:
            return None
        from analysim.engine.progress import progress_bar

        total = int((~self.table.unschedulable).sum())
        return progress_bar(total=total, initial=self.finished, unit="job", desc="simulating")
