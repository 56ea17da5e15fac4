"""DataFrames of a simulation's present moment, built on demand (never in the hot loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.policies.scheduling import PENDING, RUNNING, STATUS_NAMES

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord


class State:
    """``sim.state``: ``.jobs``, ``.nodes`` and ``.gpus`` as they are at ``sim.now`` (read from
    the simulation's record of that moment, :meth:`~analysim.engine.Simulation.record`)."""

    def __init__(self, run: RunRecord) -> None:
        self._run = run
        self.time = run.now

    def __repr__(self) -> str:
        run = self._run
        return (
            f"State(t={self.time:g}s: {sum(run.vc_running_jobs)} running, "
            f"{sum(run.vc_waiting_jobs)} waiting, {run.finished} done, "
            f"{int(run.free.sum())}/{int(run.capacity.sum())} GPUs free)"
        )

    @property
    def jobs(self) -> pd.DataFrame:
        """Every job submitted so far: status, progress and where it runs; ``num_gpus`` is
        the count a running job holds now (an elastic job's may differ from its asked one),
        else the asked count."""
        run = self._run
        seen = np.flatnonzero(run.status != PENDING)
        running = run.status[seen] == RUNNING
        gpus = run.gpus[seen]
        if run.elastic is not None:  # a resized elastic job holds another count (docs/elastic.md)
            gpus = np.where(running, run.elastic.held[seen], gpus)
        elapsed = np.where(running, run.now - run.since[seen], 0.0)
        nodes = [
            ",".join(run.node_names[run.last_nodes[j]]) if run.status[j] == RUNNING else None
            for j in seen.tolist()
        ]
        return pd.DataFrame(
            {
                "job_id": run.job_ids[seen],
                "vc": np.array(run.partition.vc_names, dtype=object)[run.job_vc[seen]],
                "num_gpus": gpus,
                "status": np.array(STATUS_NAMES, dtype=object)[run.status[seen]],
                "submit_time": run.submit[seen],
                "start_time": run.first_start[seen],
                "end_time": run.end[seen],
                "duration": run.duration[seen],
                "executed": run.executed[seen] + elapsed,
                "remaining": run.remaining[seen] - elapsed * _rates(run, seen),
                "preemptions": run.preemptions[seen],
                "nodes": nodes,
            }
        )

    @property
    def nodes(self) -> pd.DataFrame:
        """One row per node: its VC, GPUs, free GPUs and the jobs on it; in resource mode also
        GPU milli used, CPU and memory (capacity and used) and FGD's fragmentation."""
        run = self._run
        frame = run.cluster.nodes[["node", "rack", "gpu_type", "vc", "gpus"]].copy()
        frame["free"] = run.free
        frame["used"] = run.capacity - run.free
        if run.failures is not None:  # a node down has no GPU free and none in use
            frame["down"] = run.failures.down
            frame.loc[frame["down"], "used"] = 0
            if run.failures.spare is not None:  # a spare (held out of placement): the same
                frame["spare"] = run.failures.spare
                frame.loc[frame["spare"], "used"] = 0
        gpus = self.gpus
        on_node = gpus.dropna(subset=["job_id"]).groupby("node", sort=False)["job_id"]
        listed = on_node.agg(lambda ids: ",".join(dict.fromkeys(map(str, ids))))
        frame["jobs"] = frame["node"].map(listed)
        if run.resource_mode:  # see docs/semantics.md, "Resource mode"
            every = gpus.dropna(subset=["job_ids"]).groupby("node", sort=False)["job_ids"]
            joined = every.agg(lambda ids: ",".join(dict.fromkeys(",".join(ids).split(","))))
            frame["jobs"] = frame["node"].map(joined)  # every job with a share on the node
            book = run.book
            frame["milli_used"] = (
                gpus.groupby("node", sort=False)["milli_used"]
                .sum()
                .reindex(frame["node"])
                .to_numpy()
            )
            frame["cpu_milli"] = book.nodes.cpu
            frame["cpu_used"] = book.nodes.cpu - book.cpu_left
            frame["memory_mib"] = book.nodes.memory
            frame["memory_used"] = book.nodes.memory - book.mem_left
            frame["fgd_frag_milli"] = run.node_fgd_frag()
        return frame

    @property
    def gpus(self) -> pd.DataFrame:
        """One row per GPU: its node, index on the node, the job holding it (if any) and
        whether that job borrowed it from another VC; in resource mode also ``job_ids`` (every
        job holding a share of it) and ``milli_used`` (a node down counts no use)."""
        run = self._run
        node_of_gpu = np.repeat(np.arange(len(run.capacity)), run.capacity)
        owner = run.gpu_owner
        busy = owner >= 0
        job_ids = np.full(len(owner), None, dtype=object)
        job_ids[busy] = run.job_ids[owner[busy]]
        vcs = np.full(len(owner), None, dtype=object)
        vcs[busy] = np.array(run.partition.vc_names, dtype=object)[run.job_vc[owner[busy]]]
        frame = pd.DataFrame(
            {
                "node": run.node_names[node_of_gpu],
                "gpu": np.arange(len(owner)) - run.gpu_offset[node_of_gpu],
                "job_id": job_ids,
                "job_vc": vcs,
                "borrowed": busy & run.borrowed[np.maximum(owner, 0)],
            }
        )
        if run.resource_mode:  # a GPU may hold several shares: all of them, and the milli
            holders = run.gpu_holders
            frame["job_ids"] = [
                ",".join(str(run.job_ids[j]) for j in h) if h else None for h in holders
            ]
            frame["milli_used"] = [int(sum(int(run.gpu_milli[j]) for j in h)) for h in holders]
        return frame


def _rates(run: RunRecord, seen: np.ndarray) -> np.ndarray | float:
    """The rates of the jobs ``seen`` (1.0 when no job has an application)."""
    return 1.0 if run.rate is None else run.rate[seen]
