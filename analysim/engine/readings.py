"""What a :class:`~analysim.engine.simulation.Simulation` reads off its ledger (which owns the
state; these are read-only views) and the per-VC counters of a timeline sample. A base class of
``Simulation`` (one object), kept apart to keep each file short."""

from __future__ import annotations

import math

import numpy as np

from analysim.engine.records import Capture
from analysim.sharing.resources import MILLI


class Readings:
    """Read-only views of the ledger's state and the timeline's counters."""

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
