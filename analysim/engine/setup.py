"""Setting a simulation up: the free functions ``Simulation.__init__`` calls, in order, to
build its placer and flags, the jobs' fixed values (``JobTable``, ``JobFacts``) and state
(``JobState``), the ledger, the groups' VCs and nodes, and (resource mode) which jobs no node
could ever hold. Each returns what it builds and keeps nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from analysim.engine.book import SPREADER, cluster_book, fgd_meter, job_asks
from analysim.engine.flags import Flags
from analysim.engine.job_state import JobState
from analysim.engine.jobs import JobFacts, JobTable
from analysim.engine.ledger import Ledger
from analysim.engine.speed import JobSpeed
from analysim.errors import PolicyError
from analysim.policies import PLACERS
from analysim.policies.placement import Placer
from analysim.sharing.placers import share_placer_of
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    import pandas as pd

    from analysim.engine.book import Asks
    from analysim.engine.clock import Clock
    from analysim.engine.resource_placement import ResourcePlacement
    from analysim.engine.shortcuts import Shortcuts
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.domains import Partition
    from analysim.policies.scheduling import Scheduler


def make_placer(config: SimConfig) -> tuple[Placer, Any]:
    """The whole-GPU placer, and the placer of the FGD study the config names (or None);
    under such a ``share_placer`` (which places the jobs that fit on one node) the whole-GPU
    placer is the one that spreads larger jobs."""
    share_placer = share_placer_of(config.placement)
    if share_placer is not None:
        return PLACERS.make(SPREADER), share_placer
    return config.make_placer(), None


def make_flags(
    config: SimConfig,
    cluster: Cluster,
    shortcuts: Shortcuts,
    scheduler: Scheduler,
    placer: Placer,
) -> Flags:
    """The choices of this set-up the parts act on."""
    # a placer that keeps Placer.place puts a job that fits in one node on one node:
    # the engine then asks its pick_node directly
    picks_one_node = shortcuts.placer and type(placer).place is Placer.place
    static = shortcuts.kept_ranking and scheduler.static
    return Flags(
        skip_rounds=shortcuts.skip_rounds,
        picks_one_node=picks_one_node,
        picks_any_fitting_node=picks_one_node and placer.picks_any_fitting_node,
        borrowing=config.borrowing and cluster.partitioned,
        partitioned=cluster.partitioned,
        static=static,
        ranking_kept=shortcuts.kept_ranking and scheduler.ranking_kept and not static,
    )


def job_table(
    jobs: pd.DataFrame, cluster: Cluster, partition: Partition, clock: Clock
) -> tuple[JobTable, Asks]:
    """The jobs' fixed arrays (none unschedulable yet but those larger than their domain),
    and what each asks for: whole GPUs, or (resource mode) GPU milli, CPU and memory."""
    n = len(jobs)
    gpus = jobs["num_gpus"].to_numpy(dtype=np.int64)
    submit = jobs["submit_time"].to_numpy(dtype=float)
    prio = jobs["priority"] if "priority" in jobs.columns else None
    job_domain = partition.job_domain
    most = np.array([d.max_gpus for d in partition.domains], dtype=np.int64)
    asks = job_asks(jobs, gpus, cluster)
    table = JobTable(
        ids=jobs["job_id"].to_numpy(),
        gpus=gpus,
        submit=submit,
        arrival=clock.arrival_steps(submit),
        duration=jobs["duration"].to_numpy(dtype=float),
        priority=np.zeros(n) if prio is None else prio.fillna(0).to_numpy(dtype=float),
        vc=partition.job_vc,
        domain=job_domain,
        group=partition.domain_group[job_domain] if n else job_domain,
        unschedulable=gpus > most[job_domain] if n else np.zeros(0, bool),
        gpu_milli=asks.gpu_milli,
        cpu=asks.cpu,
        memory=asks.memory,
        milli_total=asks.milli_total,
    )
    return table, asks


def job_state(
    jobs: pd.DataFrame,
    table: JobTable,
    config: SimConfig,
    cluster: Cluster,
    partition: Partition,
    borrowing: bool,
    applications: Mapping[str, Any] | None,
) -> JobState:
    """The jobs' state before the run: their restore and migration costs, their performance
    models, nothing run."""
    speed = JobSpeed(jobs, table.gpus.tolist(), applications, cluster.nodes, partition, borrowing)
    return JobState(
        table.duration,
        table.submit,
        job_costs(config.make_cost_model(), jobs, "checkpoint_cost"),
        job_costs(config.make_migration_cost_model(), jobs, "migration_cost"),
        speed,
    )


def job_costs(model, jobs: pd.DataFrame, field: str) -> np.ndarray:
    """The cost ``model`` gives each job, checked: one per job."""
    costs = np.asarray(model.costs(jobs), dtype=float)
    if costs.shape != (len(jobs),):
        raise PolicyError(
            f"{field} model {model.name!r} gave {costs.shape} costs for {len(jobs)} jobs"
        )
    return costs


def job_facts(
    table: JobTable,
    asks: Asks,
    partition: Partition,
    flags: Flags,
    resource_mode: bool,
    state: JobState,
) -> JobFacts:
    """The fixed per-job lists the hot loops read (and the job views' columns)."""
    gpus, vc = table.gpus.tolist(), table.vc.tolist()
    domains = partition.domains
    domain_index = table.domain.tolist()
    columns = {
        "num_gpus": table.gpus,
        "submit_time": table.submit,
        "duration": table.duration,
        "remaining": state.remaining,
        "attained": state.attained,
        "executed": state.executed,
        "since": state.since,
        "status": state.status,
        "vc": table.vc,
        "priority": table.priority,
        "rate": state.rate,
    }
    return JobFacts(
        gpus=gpus,
        # what a job counts against its VC's usage and quota (resource mode: GPU milli)
        usage=table.milli_total.tolist() if resource_mode else gpus,
        vc=vc,
        # head-of-line blocking is per queue: one per VC, or one on an unpartitioned cluster
        queue=vc if flags.partitioned else [0] * table.n,
        group=table.group.tolist(),
        domain=[domains[d] for d in domain_index],
        domain_index=domain_index,
        node_position=[  # per domain: node -> its index among the domain's nodes
            {node: i for i, node in enumerate(d.nodes.tolist())} for d in domains
        ],
        columns=columns,
        milli=asks.gpu_milli.tolist(),
        cpu=asks.cpu.tolist(),
        mem=asks.memory.tolist(),
        kind=asks.kinds(),
    )


def new_ledger(
    cluster: Cluster,
    jobs: pd.DataFrame,
    table: JobTable,
    asks: Asks,
    facts: JobFacts,
    partition: Partition,
    resource_mode: bool,
) -> Ledger:
    """The ledger; in resource mode with the book of the cluster, and FGD's meter."""
    nodes = cluster.nodes
    node_names = nodes["node"].to_numpy(dtype=object)
    capacity = nodes["gpus"].to_numpy(dtype=np.int64)
    quotas = [d.quota for d in facts.domain]
    book = kinds = meter = None
    if resource_mode:
        book = cluster_book(cluster, node_names, capacity)
        meter = fgd_meter(jobs, table.ids, asks, book)
        kinds, quotas = facts.kind, [None if q is None else q * MILLI for q in quotas]
    return Ledger(
        capacity,
        node_names,
        table.ids,
        list(partition.vc_names),
        facts.usage,
        facts.vc,
        quotas,
        book,
        kinds,
        meter,
    )


def group_layout(
    partition: Partition, capacity: np.ndarray, borrowing: bool
) -> tuple[list[list[int]], list[np.ndarray]]:
    """Per group: its VCs and its nodes (with borrowing, one group that may use every
    node with GPUs)."""
    groups = partition.n_groups
    domains, of_group = partition.domains, partition.domain_group.tolist()
    members = [[d for d, g in zip(domains, of_group, strict=True) if g == k] for k in range(groups)]
    group_vcs = [sorted({d.vc for d in m}) for m in members]
    group_nodes = [np.flatnonzero(np.logical_or.reduce([d.mask for d in m])) for m in members]
    if borrowing:  # one group, and its jobs may borrow any node
        group_nodes = [np.flatnonzero(capacity > 0)]
    return group_vcs, group_nodes


def mark_unschedulable(
    unschedulable: np.ndarray, facts: JobFacts, placement: ResourcePlacement
) -> None:
    """Resource mode: a job that no node of its domain could hold on an empty cluster (or
    asks for more GPU milli than its VC's quota) is unschedulable (marked in place, at
    set-up)."""
    empty = placement.book.clone()
    rng = np.random.default_rng(0)
    known: dict[tuple, bool] = {}
    for j in range(len(unschedulable)):
        if unschedulable[j]:
            continue
        quota = facts.domain[j].quota
        if quota is not None and facts.usage[j] > quota * MILLI:
            unschedulable[j] = True
            continue
        key = (facts.domain_index[j], facts.gpus[j], facts.milli[j], facts.cpu[j], facts.mem[j])
        fits = known.get(key)
        if fits is None:
            fits = known[key] = placement.place_on(empty, j, facts.domain[j], rng) is not None
        if not fits:
            unschedulable[j] = True


__all__ = [
    "group_layout",
    "job_costs",
    "job_facts",
    "job_state",
    "job_table",
    "make_flags",
    "make_placer",
    "mark_unschedulable",
]
