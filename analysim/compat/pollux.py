"""``simulate(..., compat="pollux", scheduler="tiresias")``: the Pollux artifact's replay.

Checks that the workload and cluster are ones the artifact's simulator runs (its 16 nodes of
4 GPUs; jobs with a bundled ``application`` and a ``batch_size``, whole-second submit
times), runs its loop (:mod:`analysim.compat.pollux_engine`) and returns an ordinary
:class:`~analysim.results.result.Result`. Rules and fidelity: ``docs/pollux.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.compat.frames import jobs_frame, replay_result
from analysim.compat.helios_engine import Record
from analysim.compat.pollux_agent import NCF_BATCH, Agent
from analysim.compat.pollux_engine import NODE_GPUS, NODES, PolluxJob, run
from analysim.compat.pollux_model import APPLICATIONS, application
from analysim.compat.pollux_policies import POLICIES
from analysim.compat.pollux_scheduler import Pollux
from analysim.engine import FINISH, PREEMPT, RESUME, START, SUBMIT
from analysim.errors import describe_rows
from analysim.inputs.elastic import refuse_elastic
from analysim.results.result import Result

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload

SCHEDULERS = (*POLICIES, "pollux")
PLACEMENT = "pollux-fullest-node"


def check_inputs(workload: Workload, cluster: Cluster) -> None:
    """Raise ``ValueError`` unless the artifact's simulator could run them as they are."""
    nodes = cluster.nodes
    if len(nodes) != NODES or (nodes["gpus"] != NODE_GPUS).any():
        raise ValueError(
            f"compat='pollux': the cluster must be the artifact's {NODES} nodes of {NODE_GPUS} "
            f"GPUs (asim.traces.read_pollux gives it), got {len(nodes)} nodes with GPUs "
            f"{sorted(set(nodes['gpus'].tolist()))}"
        )
    jobs = workload.jobs
    refuse_elastic(jobs, "compat='pollux': the artifact's policies size every job themselves")
    for column in ("application", "batch_size"):
        if column not in jobs.columns:
            raise ValueError(
                f"compat='pollux': the workload needs the column {column!r} "
                "(asim.traces.read_pollux reads it)"
            )
    unknown = ~jobs["application"].isin(APPLICATIONS).to_numpy()
    if unknown.any():
        raise ValueError(
            f"compat='pollux': column 'application' must be one of {list(APPLICATIONS)}; "
            + describe_rows(jobs, unknown, "application", "job_id")
        )
    submit = jobs["submit_time"].to_numpy(dtype=float)
    fractional = submit != np.round(submit)
    if fractional.any():
        raise ValueError(
            "compat='pollux': submit_time must be whole seconds; "
            + describe_rows(jobs, fractional, "submit_time", "job_id")
        )


def simulate_pollux(
    workload: Workload,
    cluster: Cluster,
    scheduler: str,
    sample_every: float = 300.0,
    seed: int = 0,
) -> Result:
    """Replay ``workload`` on ``cluster`` as the Pollux artifact's simulator would (``seed``:
    of the ``pollux`` policy's random draws)."""
    if scheduler not in SCHEDULERS:
        raise ValueError(
            f"compat='pollux' supports the schedulers {list(SCHEDULERS)}, got {scheduler!r}"
        )
    check_inputs(workload, cluster)
    frame = workload.jobs
    jobs = [
        PolluxJob(application(a), int(t), int(g), int(b))
        for a, t, g, b in zip(
            frame["application"],
            frame["submit_time"],
            frame["num_gpus"],
            frame["batch_size"],
            strict=True,
        )
    ]
    if scheduler == "pollux":
        for job in jobs:
            job.agent = Agent(job.app, NCF_BATCH if job.app.name == "ncf" else None)
        policy = Pollux(jobs, np.random.default_rng(seed))
    else:
        policy = POLICIES[scheduler](jobs)
    record = Record(len(jobs))
    record.sizes = []
    since: dict[int, tuple[int, int]] = {}  # job -> (when it was given GPUs, how many)
    busy = 0

    def log(now: int, kind: int, j: int, gpus: int) -> None:
        record.events.append((now, kind, j, None if kind == SUBMIT else record.nodes[j], None))
        record.sizes.append(gpus)

    def release(now: int, j: int, kind: int) -> None:
        nonlocal busy
        began, gpus = since.pop(j)
        record.held[j] += now - began
        busy += (now - began) * gpus
        log(now, kind, j, gpus)

    def changed(now: int, j: int, alloc: list[int]) -> None:
        if j in since:
            record.preemptions[j] += 1
            release(now, j, PREEMPT)
        if alloc:
            first = record.start[j] != record.start[j]
            if first:
                record.start[j] = now
            record.nodes[j] = tuple(dict.fromkeys(alloc))
            since[j] = (now, len(alloc))
            log(now, START if first else RESUME, j, len(alloc))

    for j, job in enumerate(jobs):
        log(job.submit, SUBMIT, j, job.replicas)
    run(jobs, policy, changed)
    for j, job in enumerate(jobs):
        end = int(job.completion)
        record.end[j] = end
        release(end, j, FINISH)
    config = {"scheduler": scheduler, "placement": PLACEMENT, "sample_every": float(sample_every)}
    if scheduler == "pollux":
        config.update(placement="pollux-nsga2", seed=seed)
    return _result(workload, cluster, record, float(busy), config)


def _result(
    workload: Workload,
    cluster: Cluster,
    record: Record,
    busy: float,
    settings: dict,
) -> Result:
    jobs = jobs_frame(workload.jobs, cluster, record, np.zeros(len(workload), dtype=bool))
    n_vcs = len(cluster.vcs)
    config = {"compat": "pollux", "step": 60.0, **settings}
    busy_per_vc = [busy] if n_vcs == 1 else [float("nan")] * n_vcs
    return replay_result(workload, cluster, record, jobs, busy_per_vc, config)
