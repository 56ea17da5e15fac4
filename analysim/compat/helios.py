"""``simulate(..., compat="helios")``: replay a trace with the Helios simulator's semantics.

Checks that the workload and cluster are ones the Helios simulator could run (8-GPU nodes,
every node owned by a VC, whole-second times), runs each VC on its own
(:mod:`analysim.compat.helios_engine`), and returns an ordinary
:class:`~analysim.results.result.Result`. The rules and how they differ from AnalySIM's own defaults
are in ``docs/compat.md``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.compat.frames import jobs_frame, replay_result
from analysim.compat.helios_engine import NonPreemptiveRun, PreemptiveRun, Record
from analysim.compat.helios_placer import NODE_GPUS
from analysim.engine import REJECT
from analysim.errors import describe_rows
from analysim.inputs.elastic import refuse_elastic
from analysim.results.result import Result

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload

logger = logging.getLogger(__name__)

SCHEDULERS = ("fifo", "sjf", "srtf", "tiresias")
PLACEMENT = "helios-consolidate"


def check_cluster(cluster: Cluster) -> None:
    """Raise ``ValueError`` unless every node has 8 GPUs and is owned by a VC."""
    nodes = cluster.nodes
    wrong = nodes["gpus"] != NODE_GPUS
    if wrong.any():
        raise ValueError(
            f"compat='helios': every node must have {NODE_GPUS} GPUs, as in the Helios "
            "simulator; " + describe_rows(nodes, list(wrong), "gpus", "node")
        )
    if cluster.quotas:
        raise ValueError(
            "compat='helios': VCs must own nodes (the nodes table's 'vc' column), not hold "
            f"quotas over a shared pool; VCs with quotas: {sorted(cluster.quotas)}"
        )
    unowned = nodes["vc"].isna()
    if unowned.any():
        raise ValueError(
            "compat='helios': every node must belong to a VC (the Helios simulator has no "
            "shared pool); " + describe_rows(nodes, list(unowned), "vc", "node")
        )


def check_workload(workload: Workload, cluster: Cluster) -> None:
    """Raise ``ValueError`` for jobs the Helios simulator could not replay as they are."""
    jobs = workload.jobs
    refuse_elastic(jobs, "compat='helios': the Helios simulator has no elastic jobs")
    unknown = ~jobs["vc"].isin(cluster.vcs)
    if unknown.any():
        raise ValueError(
            f"compat='helios': jobs of VCs the cluster does not have (VCs: {cluster.vcs}); "
            + describe_rows(jobs, list(unknown), "vc", "job_id")
        )
    for column in ("submit_time", "duration"):
        values = jobs[column].to_numpy(dtype=float)
        fractional = values != np.round(values)
        if fractional.any():
            raise ValueError(
                f"compat='helios': {column} must be whole seconds (the Helios simulator "
                "steps 1 s at a time); " + describe_rows(jobs, list(fractional), column, "job_id")
            )
    if "gpu_type" in jobs.columns:
        types = set(cluster.nodes["gpu_type"])
        asked = jobs["gpu_type"]
        too_narrow = {
            t for t in asked.dropna().unique().tolist() if not types <= set(str(t).split("|"))
        }
        narrower = asked.isin(too_narrow).to_numpy()
        if narrower.any():
            raise ValueError(
                "compat='helios': the Helios simulator ignores GPU types, so a job may not ask "
                f"for a type that not every node has (node types: {sorted(types)}); "
                + describe_rows(jobs, narrower, "gpu_type", "job_id")
            )


def simulate_helios(
    workload: Workload,
    cluster: Cluster,
    scheduler: str,
    sample_every: float = 300.0,
    progress: bool = False,
) -> Result:
    """Replay ``workload`` on ``cluster`` as the Helios simulator would (``docs/compat.md``)."""
    if scheduler not in SCHEDULERS:
        raise ValueError(
            f"compat='helios' supports the schedulers {list(SCHEDULERS)}, got {scheduler!r}"
        )
    check_cluster(cluster)
    check_workload(workload, cluster)
    jobs = workload.jobs
    submit = jobs["submit_time"].to_numpy(dtype=float).astype(np.int64).tolist()
    duration = jobs["duration"].to_numpy(dtype=float).astype(np.int64).tolist()
    gpus = jobs["num_gpus"].to_numpy(dtype=np.int64).tolist()
    vc_of_job = jobs["vc"].to_numpy()
    vc_of_node = cluster.nodes["vc"].to_numpy()
    record = Record(len(jobs))
    rejected = np.zeros(len(jobs), dtype=bool)
    vcs = cluster.vcs
    if progress:
        from analysim.engine.progress import progress_bar

        vcs = progress_bar(vcs, desc=f"helios {scheduler}", unit="VC")
    for vc in vcs:
        node_ids = np.flatnonzero(vc_of_node == vc).tolist()
        members = np.flatnonzero(vc_of_job == vc).tolist()
        capacity = NODE_GPUS * len(node_ids)
        too_big = [j for j in members if gpus[j] > capacity]
        for j in too_big:
            rejected[j] = True
            record.events.append((submit[j], REJECT, j, None, None))
        members = [j for j in members if gpus[j] <= capacity]
        if not members:
            continue
        args = (node_ids, members, submit, duration, gpus, record)
        if scheduler in ("fifo", "sjf"):
            NonPreemptiveRun(*args).run(by_duration=scheduler == "sjf")
        else:
            PreemptiveRun(*args, tiresias=scheduler == "tiresias").run()
    if rejected.any():
        logger.warning(
            "%d job(s) ask for more GPUs than their VC owns; they are reported as "
            "unschedulable (the Helios simulator would wait for them forever)",
            int(rejected.sum()),
        )
    return _result(workload, cluster, record, rejected, scheduler, sample_every)


def _result(
    workload: Workload,
    cluster: Cluster,
    record: Record,
    rejected: np.ndarray,
    scheduler: str,
    sample_every: float,
) -> Result:
    jobs = jobs_frame(workload.jobs, cluster, record, rejected)
    busy = (
        pd.Series(np.asarray(record.held, dtype=float) * jobs["num_gpus"].to_numpy())
        .groupby(workload.jobs["vc"].to_numpy())
        .sum()
    )
    config = {
        "compat": "helios",
        "scheduler": scheduler,
        "placement": PLACEMENT,
        "step": 1.0,
        "sample_every": float(sample_every),
    }
    busy_per_vc = [float(busy.get(vc, 0.0)) for vc in cluster.vcs]
    return replay_result(workload, cluster, record, jobs, busy_per_vc, config)
