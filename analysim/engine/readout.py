"""``Readout``: what a simulation hands out, read off its parts and returned, never kept on
them: the counters and the fragmentation capture of each timeline sample, and the frozen
:class:`~analysim.engine.snapshot.RunRecord` that ``Result`` and ``State`` read.

The simulation makes one (``Simulation.readout``); it reads the clock, the ledger, the
queues, the job state and the records, and keeps only FGD's fragmentation of the last
moment it measured (a memo, by the simulation's change count).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.snapshot import RunRecord
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.records import Capture
    from analysim.engine.simulation import Simulation


class Readout:
    """The samples and records of the simulation ``sim``."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self._fgd_at, self._fgd_value = -1, 0.0  # FGD's fragmentation, at that many changes

    # -- timeline samples -----------------------------------------------------------------------
    def account(self, t: float) -> None:
        """Record the timeline samples due in [now, t)."""
        sim = self.sim
        due = sim.clock.samples_before(t)
        if due is not None:
            first, count = due
            sim.records.samples.append((first, count, self.sample_counters(), self.capture()))

    def samples_until_now(self) -> list[tuple]:
        """The timeline samples so far, including those due at the present moment."""
        sim = self.sim
        samples = list(sim.records.samples)
        every, now, due = sim.config.sample_every, sim.clock.now, sim.clock.next_sample
        if due <= now + 1e-9:
            count = int(np.floor((now - due) / every + 1e-9)) + 1
            samples.append((due, count, self.sample_counters(), self.capture()))
        return samples

    def sample_counters(self) -> tuple:
        """The per-VC counters of a timeline sample: GPUs used, running jobs, waiting jobs,
        GPUs the waiting jobs ask for, GPUs borrowed; in resource mode GPUs used and borrowed
        in GPU milli / 1000, and FGD's fragmentation; with failures, the nodes and GPUs down
        last."""
        sim = self.sim
        if sim.failures is not None:
            down = sim.ledger.down
            return (
                *self._counters(),
                int(down.sum()),
                int(sim.ledger.capacity[down].sum()),
            )
        return self._counters()

    def _counters(self) -> tuple:
        ledger, queues = self.sim.ledger, self.sim.queues
        if self.sim.resource_mode:
            return (
                tuple(u / MILLI for u in ledger.vc_used),
                tuple(ledger.vc_running_jobs),
                tuple(queues.vc_waiting_jobs),
                tuple(queues.vc_waiting_gpus),
                tuple(b / MILLI for b in ledger.vc_borrowed),
                self._fgd_now(),
            )
        return (
            tuple(ledger.vc_used),
            tuple(ledger.vc_running_jobs),
            tuple(queues.vc_waiting_jobs),
            tuple(queues.vc_waiting_gpus),
            tuple(ledger.vc_borrowed),
        )  # tuples of ints: the garbage collector soon stops tracking them

    def _fgd_now(self) -> float:
        changes = self.sim.changes
        if self._fgd_at != changes:
            self._fgd_at, self._fgd_value = changes, math.fsum(self.sim.ledger.node_frag)
        return self._fgd_value

    def capture(self) -> Capture:
        """The state fragmentation is measured from, now (a copy, shared by the samples
        taken while nothing changes); quota usage in whole GPUs (resource mode: rounded up)."""
        sim = self.sim
        used = sim.ledger.vc_used
        if sim.resource_mode:
            used = [math.ceil(u / MILLI) for u in used]
        counts = sim.queues.waiting_counts
        return sim.records.capture(sim.changes, sim.ledger.free, counts, used)

    # -- the record -------------------------------------------------------------------------------
    def record(self) -> RunRecord:
        """The run's record now (frozen: copies of the changing state; the records up to
        now, the timeline sample due now included)."""
        sim = self.sim
        records, ledger, table, jobs = sim.records, sim.ledger, sim.table, sim.job_state
        return RunRecord(
            workload=sim.workload,
            cluster=sim.cluster,
            config=sim.config,
            partition=sim.partition,
            resource_mode=sim.resource_mode,
            job_ids=table.ids,
            gpus=table.gpus,
            submit=table.submit,
            duration=table.duration,
            job_vc=table.vc,
            job_group=table.group,
            gpu_milli=table.gpu_milli,
            cpu=table.cpu,
            memory=table.memory,
            milli_total=table.milli_total,
            node_names=ledger.node_names,
            capacity=ledger.capacity,
            gpu_offset=ledger.gpu_offset,
            size_buckets=list(sim.queues.size_buckets),
            picks_any_fitting_node=sim.flags.picks_any_fitting_node,
            placer_fits=sim.decider.evictions.placer_fits,
            now=float(sim.clock.now),
            status=jobs.status.copy(),
            since=jobs.since.copy(),
            remaining=jobs.remaining.copy(),
            rate=jobs.rate.copy() if jobs.rated else None,
            executed=jobs.executed.copy(),
            first_start=jobs.first_start.copy(),
            end=jobs.end.copy(),
            preemptions=jobs.preemptions.copy(),
            migrations=jobs.migrations.copy(),
            reclaims=jobs.reclaims.copy(),
            borrowed=ledger.borrowed.copy(),
            borrowed_gpu_seconds=ledger.borrowed_gpu_seconds.copy(),
            last_nodes=dict(ledger.last_nodes),
            busy_gpu_seconds=ledger.busy_gpu_seconds(sim.clock.now),
            vc_running_jobs=tuple(ledger.vc_running_jobs),
            vc_waiting_jobs=tuple(sim.queues.vc_waiting_jobs),
            finished=sim.finished,
            free=ledger.free.copy(),
            gpu_owner=ledger.gpu_owner(),
            gpu_holders=ledger.gpu_holders() if sim.resource_mode else [],
            fgd_per_node=list(ledger.node_frag),
            book=ledger.book.clone() if ledger.book is not None else None,
            records=records,
            n_events=len(records),
            n_rounds=len(records.rounds),
            n_tries=len(records.try_job),
            samples=self.samples_until_now(),
            failures=None if sim.failures is None else sim.failures.record(),
            type_rates=jobs.speed.type_table(),
            elastic=None if sim.elastic is None else sim.elastic.record(),
        )


__all__ = ["Readout"]
