"""``RunRecord``: what a simulation hands to ``Result`` and ``State`` at one moment.

A record is frozen: the jobs' fixed facts and, as copies, their fates so far (status, times,
counts, where each ran last), the cluster's state then (free GPUs, who holds each GPU, the
resource book), the timeline samples up to then (the one due at that moment included) and
the engine's records (events, decision rounds, tries) with the counts that belong to it (the
records only grow, so a later step does not change what the record holds). ``Result`` and
``State`` read records, never the live simulation (``tests/test_engine_layout.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from analysim.engine.book import ResourceBook
    from analysim.engine.records import Records
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.domains import Domain, Partition
    from analysim.inputs.workload import Workload


@dataclass(frozen=True)
class RunRecord:
    """A simulation's record at time ``now`` (see the module's description)."""

    # -- the set-up (fixed) ---------------------------------------------------------------------
    workload: Workload
    cluster: Cluster
    config: SimConfig
    partition: Partition
    #: whether GPUs may be shared and jobs ask for CPU and memory
    resource_mode: bool
    job_ids: np.ndarray
    gpus: np.ndarray
    submit: np.ndarray
    duration: np.ndarray
    job_vc: np.ndarray
    job_group: np.ndarray
    #: GPU milli per GPU, CPU (milli), memory (MiB) and GPU milli in all, per job
    gpu_milli: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    milli_total: np.ndarray
    node_names: np.ndarray
    capacity: np.ndarray
    gpu_offset: np.ndarray
    #: the distinct GPU counts of the jobs (fragmentation's buckets)
    size_buckets: list[int]
    #: whether the placer puts a job that fits on one node on any node with room
    picks_any_fitting_node: bool
    #: would the placer find ``need`` GPUs in ``room`` on ``domain``'s nodes (draws nothing)
    placer_fits: Callable[[int, np.ndarray, Domain, int | None], bool]
    # -- the moment -----------------------------------------------------------------------------
    now: float
    status: np.ndarray
    since: np.ndarray
    remaining: np.ndarray
    #: each job's rate where it runs or last ran (None: no job has an application)
    rate: np.ndarray | None
    executed: np.ndarray
    first_start: np.ndarray
    end: np.ndarray
    preemptions: np.ndarray
    migrations: np.ndarray
    reclaims: np.ndarray
    borrowed: np.ndarray
    borrowed_gpu_seconds: np.ndarray
    #: where each job that has run ran last (its nodes)
    last_nodes: dict[int, np.ndarray]
    #: per VC: GPU-seconds held up to now; running and waiting jobs now
    busy_gpu_seconds: np.ndarray
    vc_running_jobs: tuple[int, ...]
    vc_waiting_jobs: tuple[int, ...]
    finished: int
    #: fully free GPUs per node; a job holding each GPU (-1: free); every job holding each
    #: GPU; FGD's fragmentation per node; the resource book (a copy; None with whole GPUs)
    free: np.ndarray
    gpu_owner: np.ndarray
    gpu_holders: list[list[int]]
    fgd_per_node: list[float]
    book: ResourceBook | None
    # -- the records ----------------------------------------------------------------------------
    records: Records
    #: how many events, decision rounds and tries belong to this record
    n_events: int
    n_rounds: int
    n_tries: int
    #: the timeline samples up to now: (first time, how many, counters, capture) runs
    samples: list[tuple[Any, ...]]
    #: with failures configured: per job its restarts, lost and useful run time, and the
    #: nodes down (``engine/failures.FailureRecord``); None otherwise
    failures: Any = None
    #: with typed applications (finish-time fairness, ``results/fairness.py``): the GPU
    #: types, their GPUs, and per job and type its packed rate (0.0: may not run there)
    type_rates: tuple[list[str], np.ndarray, np.ndarray] | None = None
    #: with elastic jobs: per job its GPU limits, resizes and GPU-seconds held
    #: (``engine/elastic.ElasticRecord``); None otherwise
    elastic: Any = None

    @property
    def n_jobs(self) -> int:
        """How many jobs the workload has."""
        return len(self.job_ids)

    def node_fgd_frag(self) -> list[float]:
        """FGD's fragmentation of each node (0 outside resource mode)."""
        return list(self.fgd_per_node)


__all__ = ["RunRecord"]
