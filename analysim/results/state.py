"""DataFrames of a simulation's present moment, built on demand (never in the hot loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.policies.scheduling import PENDING, RUNNING, STATUS_NAMES

if TYPE_CHECKING:
    from analysim.engine.simulation import Simulation


class State:
    """``sim.state``: ``.jobs``, ``.nodes`` and ``.gpus`` as they are at ``sim.now``."""

    def __init__(self, sim: Simulation) -> None:
        self._sim = sim
        self.time = sim.now

    def __repr__(self) -> str:
        sim = self._sim
        return (
            f"State(t={self.time:g}s: {sum(sim.vc_running_jobs)} running, "
            f"{sum(sim.vc_waiting_jobs)} waiting, {sim.finished} done, "
            f"{int(sim.free.sum())}/{int(sim.capacity.sum())} GPUs free)"
        )

    @property
    def jobs(self) -> pd.DataFrame:
        """Every job submitted so far: status, progress and where it runs."""
        sim = self._sim
        seen = np.flatnonzero(sim.status != PENDING)
        running = sim.status[seen] == RUNNING
        elapsed = np.where(running, sim.now - sim.since[seen], 0.0)
        nodes = [
            ",".join(sim.node_names[sim.last_nodes[j]]) if sim.status[j] == RUNNING else None
            for j in seen.tolist()
        ]
        return pd.DataFrame(
            {
                "job_id": sim.job_ids[seen],
                "vc": np.array(sim.partition.vc_names, dtype=object)[sim.job_vc[seen]],
                "num_gpus": sim.gpus[seen],
                "status": np.array(STATUS_NAMES, dtype=object)[sim.status[seen]],
                "submit_time": sim.submit[seen],
                "start_time": sim.first_start[seen],
                "end_time": sim.end[seen],
                "duration": sim.duration[seen],
                "executed": sim.executed[seen] + elapsed,
                "remaining": sim.remaining[seen] - elapsed,
                "preemptions": sim.preemptions[seen],
                "nodes": nodes,
            }
        )

    @property
    def nodes(self) -> pd.DataFrame:
        """One row per node: its VC, GPUs, free GPUs and the jobs on it; in resource mode also
        GPU milli used, CPU and memory (capacity and used) and FGD's fragmentation."""
        sim = self._sim
        frame = sim.cluster.nodes[["node", "rack", "gpu_type", "vc", "gpus"]].copy()
        frame["free"] = sim.free
        frame["used"] = sim.capacity - sim.free
        gpus = self.gpus
        on_node = gpus.dropna(subset=["job_id"]).groupby("node", sort=False)["job_id"]
        listed = on_node.agg(lambda ids: ",".join(dict.fromkeys(map(str, ids))))
        frame["jobs"] = frame["node"].map(listed)
        if sim.resource_mode:  # see docs/semantics.md, "Resource mode"
            every = gpus.dropna(subset=["job_ids"]).groupby("node", sort=False)["job_ids"]
            joined = every.agg(lambda ids: ",".join(dict.fromkeys(",".join(ids).split(","))))
            frame["jobs"] = frame["node"].map(joined)  # every job with a share on the node
            book = sim.book
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
            frame["fgd_frag_milli"] = sim.node_fgd_frag()
        return frame

    @property
    def gpus(self) -> pd.DataFrame:
        """One row per GPU: its node, index on the node, the job holding it (if any) and
        whether that job borrowed it from another VC; in resource mode also ``job_ids`` (every
        job holding a share of it) and ``milli_used``."""
        sim = self._sim
        node_of_gpu = np.repeat(np.arange(len(sim.capacity)), sim.capacity)
        owner = sim.gpu_owner
        busy = owner >= 0
        job_ids = np.full(len(owner), None, dtype=object)
        job_ids[busy] = sim.job_ids[owner[busy]]
        vcs = np.full(len(owner), None, dtype=object)
        vcs[busy] = np.array(sim.partition.vc_names, dtype=object)[sim.job_vc[owner[busy]]]
        frame = pd.DataFrame(
            {
                "node": sim.node_names[node_of_gpu],
                "gpu": np.arange(len(owner)) - sim.gpu_offset[node_of_gpu],
                "job_id": job_ids,
                "job_vc": vcs,
                "borrowed": busy & sim.borrowed[np.maximum(owner, 0)],
            }
        )
        if sim.resource_mode:  # a GPU may hold several shares: all of them, and the milli
            holders = sim.gpu_holders
            frame["job_ids"] = [
                ",".join(str(sim.job_ids[j]) for j in h) if h else None for h in holders
            ]
            frame["milli_used"] = [int(sum(int(sim.gpu_milli[j]) for j in h)) for h in holders]
        return frame
