"""Per job, the values fixed at set-up: ``JobFacts`` (lists the engine's hot loops read) and
``JobTable`` (NumPy arrays the records and results read).

The simulation builds one (``Simulation.facts``) before its parts and hands it to them: the
rounds, the tenancy, the LAS ranking and, in resource mode, the ledger and the placement.
Each field is a Python list indexed by job (the hot loops read one item at a time, which is
faster on a list than on a NumPy array); nothing changes them after set-up. The changing
per-job state (status, remaining work, ...) is the simulation's
:class:`~analysim.engine.job_state.JobState`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from analysim.inputs.domains import Domain


@dataclass(frozen=True, slots=True)
class JobFacts:
    """The fixed per-job values of a simulation (lists indexed by job)."""

    #: GPUs each job asks for (``num_gpus``)
    gpus: list[int]
    #: what each job counts against its VC's usage, quota and borrowing limit: its GPUs (GPU
    #: milli in resource mode)
    usage: list[int]
    #: each job's VC (index into the partition's ``vc_names``)
    vc: list[int]
    #: each job's queue for head-of-line blocking: its VC, or 0 on an unpartitioned cluster
    queue: list[int]
    #: each job's group (of domains whose jobs interact)
    group: list[int]
    #: each job's domain (the nodes it may use and its quota), and that domain's index
    domain: list[Domain]
    domain_index: list[int]
    #: per domain (by index): node -> its position among the domain's nodes
    node_position: list[dict[int, int]]
    #: the columns the schedulers' job views read, by name (arrays the engine keeps current)
    columns: dict[str, np.ndarray]
    #: GPU milli per GPU (1000 for a whole GPU; 0 for a CPU-only job)
    milli: list[int]
    #: CPU (milli) and memory (MiB) in all
    cpu: list[int]
    mem: list[int]
    #: the task kind FGD's fragmentation counts (``sharing.resources.task_kind``)
    kind: list[str | None]


@dataclass(frozen=True, slots=True)
class JobTable:
    """The fixed per-job values of a simulation as NumPy arrays (indexed by job), built by
    ``engine/setup.py``; what the records hand to ``Result`` and ``State``."""

    ids: np.ndarray
    #: GPUs asked for (``num_gpus``)
    gpus: np.ndarray
    #: submit time, and the step at which the job arrives (the first step not before it)
    submit: np.ndarray
    arrival: np.ndarray
    #: work in seconds at rate 1
    duration: np.ndarray
    priority: np.ndarray
    #: VC (index into the partition's ``vc_names``), domain and group (by index)
    vc: np.ndarray
    domain: np.ndarray
    group: np.ndarray
    #: whether the job can never run (more than its domain or quota holds)
    unschedulable: np.ndarray
    #: GPU milli per GPU, CPU (milli), memory (MiB), and GPU milli in all
    gpu_milli: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    milli_total: np.ndarray

    @property
    def n(self) -> int:
        """How many jobs."""
        return len(self.ids)


__all__ = ["JobFacts", "JobTable"]
