"""``Result``: the tidy outcome of a run (jobs, events, timeline, config), saved as parquet."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim import metrics

if TYPE_CHECKING:
    from analysim.engine import Simulation

ALL = "(all)"  # the ``vc`` value of cluster-wide timeline rows
FRAMES = ("jobs", "events", "timeline")


Frame = pd.DataFrame | Callable[[], pd.DataFrame]


class Result:
    """What a simulation produced.

    ``jobs``: one row per job (submit, first start, end, JCT, queueing delay, preemptions,
    status, the nodes it last ran on). ``events``: one row per state change. ``timeline``:
    sampled state, cluster-wide (``vc == "(all)"``) and per VC, in long format. ``config``:
    the run's :class:`~analysim.config.SimConfig` as a dict. ``meta``: capacities and the
    exact time integrals the summary needs.

    ``events`` and ``timeline`` may be given as functions that build them: they are then built
    the first time they are read (a sweep that only wants ``summary()`` never pays for them).
    """

    def __init__(
        self,
        jobs: pd.DataFrame,
        events: Frame,
        timeline: Frame,
        config: dict[str, Any],
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.jobs = jobs
        self._frames: dict[str, Frame] = {"events": events, "timeline": timeline}
        self.config = config
        self.meta = meta or {}

    @property
    def events(self) -> pd.DataFrame:
        return self._frame("events")

    @property
    def timeline(self) -> pd.DataFrame:
        return self._frame("timeline")

    def _frame(self, name: str) -> pd.DataFrame:
        frame = self._frames[name]
        if callable(frame):
            frame = self._frames[name] = frame()
        return frame

    def __repr__(self) -> str:
        done = int((self.jobs["status"] == "done").sum())
        scheduler = self.config.get("scheduler")
        return f"Result({len(self.jobs)} jobs, {done} done, scheduler={scheduler!r})"

    @property
    def unschedulable(self) -> pd.DataFrame:
        """The jobs that asked for more GPUs than their VC could ever get."""
        return self.jobs[self.jobs["status"] == "unschedulable"]

    def summary(self, by: str | None = None) -> pd.Series | pd.DataFrame:
        """Cluster-wide metrics as a Series, or per VC (``by="vc"``) as a DataFrame."""
        if by is None:
            return metrics.summarize(self.jobs, self.meta, vc=None)
        if by != "vc":
            raise ValueError(f"summary: by must be None or 'vc', got {by!r}")
        rows = {vc: metrics.summarize(self.jobs, self.meta, vc=vc) for vc in self.meta["vcs"]}
        return pd.DataFrame(rows).T.rename_axis("vc")

    # -- persistence --------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write ``jobs``/``events``/``timeline`` as parquet and config + meta as JSON."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in FRAMES:
            getattr(self, name).to_parquet(folder / f"{name}.parquet", index=False)
        payload = {"config": self.config, "meta": self.meta}
        (folder / "result.json").write_text(json.dumps(payload, indent=2, sort_keys=True))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> Result:
        """Read a result written by :meth:`save`."""
        folder = Path(folder)
        missing = [
            f
            for f in (*(f"{n}.parquet" for n in FRAMES), "result.json")
            if not (folder / f).exists()
        ]
        if missing:
            raise FileNotFoundError(f"Result.load: {folder} is missing {missing}")
        frames = {name: pd.read_parquet(folder / f"{name}.parquet") for name in FRAMES}
        payload = json.loads((folder / "result.json").read_text())
        return cls(**frames, config=payload["config"], meta=payload["meta"])


def _node_lists(names: np.ndarray, allocations: list[Any]) -> pd.Categorical:
    """Comma-joined node names of each allocation (an array of node indices, or None), as a
    categorical: events of one placement share its array, so each is joined once (the arrays
    are all alive here, so their ids are unique)."""
    names = names.tolist()
    code_of_array: dict[int, int] = {}
    code_of_text: dict[str, int] = {}
    codes = []
    for nodes in allocations:
        if nodes is None:
            codes.append(-1)
            continue
        code = code_of_array.get(id(nodes))
        if code is None:
            text = ",".join([names[i] for i in nodes.tolist()])
            code = code_of_text.setdefault(text, len(code_of_text))
            code_of_array[id(nodes)] = code
        codes.append(code)
    return pd.Categorical.from_codes(np.array(codes, dtype=np.int64), categories=list(code_of_text))


def build_result(sim: Simulation) -> Result:
    """Collect a simulation's state and records into a :class:`Result`."""
    from analysim.engine import EVENT_NAMES, STATUS_NAMES

    jobs_in = sim.workload.jobs
    status = STATUS_NAMES[sim.status]
    running = sim.status == 2
    ran = sim.executed + np.where(running, sim.now - sim.since, 0.0)
    end = sim.end
    jct = end - sim.submit
    jobs = pd.DataFrame(
        {
            "job_id": sim.job_ids,
            "vc": jobs_in["vc"].to_numpy(),
            "user": jobs_in["user"].to_numpy(),
            "num_gpus": sim.gpus,
            "submit_time": sim.submit,
            "duration": sim.duration,
            "start_time": sim.first_start,
            "end_time": end,
            "jct": jct,
            "queue_delay": jct - ran,
            "run_time": ran,
            "preemptions": sim.preemptions,
            "migrations": np.zeros(sim.n_jobs, dtype=np.int64),
            "status": status,
            "nodes": _node_lists(
                sim.node_names, [sim.last_nodes.get(j) for j in range(sim.n_jobs)]
            ),
        }
    )
    if "gpu_type" in jobs_in.columns:
        jobs.insert(4, "gpu_type", jobs_in["gpu_type"].to_numpy())
    # built when first read, from what was recorded up to now (the records only grow)
    events = partial(_events_frame, sim, EVENT_NAMES, len(sim.event_time))
    timeline = partial(_timeline_frame, sim, _samples_until_now(sim))
    meta = {
        "workload": sim.workload.name,
        "cluster": sim.cluster.name,
        "now": float(sim.now),
        "total_gpus": int(sim.capacity.sum()),
        "vcs": list(sim.partition.vc_names),
        "vc_capacity": [int(c) for c in sim.partition.vc_capacity],
        "busy_gpu_seconds": [float(b) for b in sim.busy_gpu_seconds],
    }
    return Result(jobs, events, timeline, sim.config.to_dict(), meta)


def _events_frame(sim: Simulation, names: np.ndarray, count: int) -> pd.DataFrame:
    """The first ``count`` recorded events, in time order."""
    time = np.array(sim.event_time[:count], dtype=float)
    # records are in processing order; sort by time, keeping that order within a time
    order = np.argsort(time, kind="stable")
    job = np.array(sim.event_job[:count], dtype=np.int64)[order]
    kind = np.array(sim.event_kind[:count], dtype=np.int64)[order]
    return pd.DataFrame(
        {
            "time": time[order],
            "event": pd.Categorical.from_codes(kind, categories=list(names)),
            "job_id": sim.job_ids[job],
            "vc": pd.Categorical.from_codes(sim.job_vc[job], categories=sim.partition.vc_names),
            "num_gpus": sim.gpus[job],
            "nodes": _node_lists(sim.node_names, [sim.event_nodes[i] for i in order.tolist()]),
        }
    )


def _samples_until_now(sim: Simulation) -> list[tuple[float, int, tuple[list[int], ...]]]:
    """The timeline samples so far, including those due at the present moment."""
    samples = list(sim.samples)
    every = sim.config.sample_every
    if sim.next_sample <= sim.now + 1e-9:
        count = int(np.floor((sim.now - sim.next_sample) / every + 1e-9)) + 1
        counters = (sim.vc_used, sim.vc_running_jobs, sim.vc_waiting_jobs, sim.vc_waiting_gpus)
        samples.append((sim.next_sample, count, tuple(list(c) for c in counters)))
    return samples


def _timeline_frame(sim: Simulation, samples: list) -> pd.DataFrame:
    every = sim.config.sample_every
    vcs = list(sim.partition.vc_names)
    n_vc = len(vcs)
    if not samples:
        times = np.zeros(0)
        parts = [np.zeros((0, n_vc), dtype=np.int64) for _ in range(4)]
    else:
        starts, counts, snaps = zip(*samples, strict=True)
        counts = np.array(counts)
        offsets = np.concatenate([np.arange(c) for c in counts])
        times = np.repeat(np.array(starts), counts) + offsets * every
        parts = [
            np.repeat(np.array([s[i] for s in snaps], dtype=np.int64), counts, axis=0)
            for i in range(4)
        ]
    used, running, waiting, pending = parts
    capacity = sim.partition.vc_capacity.astype(float)
    total = float(sim.capacity.sum())
    # a VC's free GPUs: of its own nodes or quota; on an unpartitioned cluster, the pool's
    vc_free = capacity[None, :] - used if sim._partitioned else total - used.sum(axis=1)[:, None]
    vc_free = np.broadcast_to(vc_free, used.shape)
    cluster = pd.DataFrame(
        {
            "time": times,
            "vc": ALL,
            "used_gpus": used.sum(axis=1),
            "free_gpus": total - used.sum(axis=1),
            "pending_gpus": pending.sum(axis=1),
            "running_jobs": running.sum(axis=1),
            "waiting_jobs": waiting.sum(axis=1),
            "utilization": used.sum(axis=1) / total,
        }
    )
    per_vc = pd.DataFrame(
        {
            "time": np.repeat(times, n_vc),
            "vc": np.tile(np.array(vcs, dtype=object), len(times)),
            "used_gpus": used.ravel(),
            "free_gpus": vc_free.ravel(),
            "pending_gpus": pending.ravel(),
            "running_jobs": running.ravel(),
            "waiting_jobs": waiting.ravel(),
            "utilization": np.divide(
                used, capacity[None, :], out=np.full(used.shape, np.nan), where=capacity > 0
            ).ravel(),
        }
    )
    frame = pd.concat([cluster, per_vc], ignore_index=True)
    frame["free_gpus"] = frame["free_gpus"].astype(np.int64)
    return frame.sort_values(["time"], kind="stable", ignore_index=True)
