"""``Result``: the tidy outcome of a run (jobs, events, timeline, config), saved as parquet."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.inputs.validation import writable_output
from analysim.policies.scheduling import DONE, FAILED, STATUS_NAMES
from analysim.results import fairness, metrics
from analysim.results.decisions import build_decisions, decision_frames, decisions_from_frames
from analysim.results.format import MANIFEST, RESULT_JSON, manifest_for, read_result_files
from analysim.results.readable import Summary, SummaryTable
from analysim.version import VERSION

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord
    from analysim.results.decisions import Decisions

ALL = "(all)"  # the ``vc`` value of cluster-wide timeline rows
FRAMES = ("jobs", "events", "timeline")


Frame = pd.DataFrame | Callable[[], pd.DataFrame]


class Result:
    """What a simulation produced.

    ``jobs``: one row per job (submit, first start, end, JCT, queueing delay, preemptions,
    status, the nodes it last ran on). ``events``: one row per state change. ``timeline``:
    sampled state, cluster-wide (``vc == "(all)"``) and per VC, in long format. ``config``:
    the run's :class:`~analysim.inputs.config.SimConfig` as a dict. ``meta``: capacities and the
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
        decisions: Any = None,
    ) -> None:
        self.jobs = jobs
        self._decisions = decisions
        self._frames: dict[str, Frame] = {"events": events, "timeline": timeline}
        self.config = config
        self._meta = meta or {}
        # meta entries given as functions (e.g. the sampled fragmentation averages) are
        # computed the first time ``meta`` is read
        self._lazy_meta = {k: v for k, v in self._meta.items() if callable(v)}

    @property
    def meta(self) -> dict[str, Any]:
        """Capacities, the exact time integrals and sample averages the summary needs."""
        while self._lazy_meta:
            name, build = self._lazy_meta.popitem()
            self._meta[name] = build()
        return self._meta

    @property
    def decisions(self) -> Decisions | None:
        """What each scheduling round tried in vain
        (:class:`~analysim.results.decisions.Decisions`), as the engine recorded it; saved and
        loaded with the result (None for a result saved by a version that did not keep them)."""
        if callable(self._decisions):
            self._decisions = self._decisions()
        return self._decisions

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
        """The jobs that can never run: more GPUs than their VC's nodes (or quota) hold, a
        GPU type none of them has, or (resource mode) more than one node holds;
        :func:`~analysim.results.explain.why_waiting` says which."""
        return self.jobs[self.jobs["status"] == "unschedulable"]

    def summary(self, by: str | None = None) -> pd.Series | pd.DataFrame:
        """Cluster-wide metrics as a Series, or one row per VC (``by="vc"``) or per user
        (``by="user"``) as a DataFrame. Their values are plain numbers (seconds for times);
        they are displayed with units and times also in hours or days
        (:mod:`analysim.results.readable`)."""
        if by is None:
            return Summary(metrics.summarize(self.jobs, self.meta, vc=None))
        if by == "vc":
            rows = {vc: metrics.summarize(self.jobs, self.meta, vc=vc) for vc in self.meta["vcs"]}
        elif by == "user":
            users = sorted(self.jobs["user"].unique().tolist())
            rows = {u: metrics.summarize(self.jobs, self.meta, user=u) for u in users}
        else:
            raise ValueError(f"summary: by must be None, 'vc' or 'user', got {by!r}")
        return SummaryTable(pd.DataFrame(rows).T.rename_axis(by))

    # -- occupancy ----------------------------------------------------------------------------
    @property
    def resource_mode(self) -> bool:
        """Whether the run was in resource mode (GPU shares, CPU, memory; ``meta``
        records it): its ``jobs`` then have ``gpu_milli``, ``cpu_milli`` and ``memory_mib``."""
        return bool(self.meta.get("resource_mode")) or "gpu_milli" in self.jobs.columns

    def snapshot(self, time: float) -> pd.DataFrame:
        """Which job holds each GPU at ``time`` (after that moment's decisions): one row per
        GPU with ``node, rack, gpu`` (index on its node), ``node_vc`` (the VC owning the
        node, or None), ``job_id``, ``job_vc`` and ``borrowed`` — ready for a heatmap.

        In resource mode a GPU may hold several shares: ``job_id``/``job_vc`` are then those
        of the holder with the most milli (the first to take it among equals), ``borrowed``
        says whether any holder borrowed it, and four more columns say who holds what:
        ``job_ids``, ``job_vcs`` and ``job_milli`` (comma-joined, one entry per holder in the
        order they took it; None when free) and ``milli_used`` (their sum, 0 to 1000)."""
        layout = _Layout(self.meta)
        if self.resource_mode:
            return self._share_snapshot(layout, float(time))
        owner, borrowed = _replay(self.events, layout, until=float(time))
        held = owner >= 0
        job_ids = np.full(layout.total, None, dtype=object)
        job_vcs = np.full(layout.total, None, dtype=object)
        if held.any():
            events = self.events
            job_ids[held] = events["job_id"].to_numpy(dtype=object)[owner[held]]
            job_vcs[held] = events["vc"].astype(object).to_numpy()[owner[held]]
        node_of = layout.node_of_gpu
        return pd.DataFrame(
            {
                "node": np.array(layout.names, dtype=object)[node_of],
                "rack": np.array(layout.racks, dtype=object)[node_of],
                "gpu": np.arange(layout.total) - layout.offsets[node_of],
                "node_vc": pd.Series(np.array(layout.owners, dtype=object)[node_of], dtype=object),
                "job_id": pd.Series(job_ids, dtype=object),
                "job_vc": pd.Series(job_vcs, dtype=object),
                "borrowed": borrowed & held,
            }
        )

    def _share_snapshot(self, layout: _Layout, time: float) -> pd.DataFrame:
        """:meth:`snapshot` of a resource-mode run: every holder of each GPU."""
        holders, borrowed = _replay_shares(self.events, layout, until=time)
        milli_of = dict(
            zip(self.jobs["job_id"], self.jobs["gpu_milli"].to_numpy(dtype=np.int64), strict=True)
        )
        job_of = self.events["job_id"].to_numpy(dtype=object)
        vc_of = self.events["vc"].astype(object).to_numpy()
        columns: dict[str, list[Any]] = {
            k: [None] * layout.total
            for k in ("job_id", "job_vc", "job_ids", "job_vcs", "job_milli")
        }
        used = np.zeros(layout.total, dtype=np.int64)
        for gpu, rows in enumerate(holders):
            if not rows:
                continue
            jobs = [job_of[r] for r in rows]
            vcs = [vc_of[r] for r in rows]
            milli = [int(milli_of[j]) for j in jobs]
            top = int(np.argmax(milli))  # the first of the largest
            columns["job_id"][gpu], columns["job_vc"][gpu] = jobs[top], vcs[top]
            columns["job_ids"][gpu] = ",".join(str(j) for j in jobs)
            columns["job_vcs"][gpu] = ",".join(str(v) for v in vcs)
            columns["job_milli"][gpu] = ",".join(str(m) for m in milli)
            used[gpu] = sum(milli)
        node_of = layout.node_of_gpu
        frame = pd.DataFrame(
            {
                "node": np.array(layout.names, dtype=object)[node_of],
                "rack": np.array(layout.racks, dtype=object)[node_of],
                "gpu": np.arange(layout.total) - layout.offsets[node_of],
                "node_vc": pd.Series(np.array(layout.owners, dtype=object)[node_of], dtype=object),
                **{k: pd.Series(v, dtype=object) for k, v in columns.items()},
                "borrowed": borrowed,
                "milli_used": used,
            }
        )
        order = ["node", "rack", "gpu", "node_vc", "job_id", "job_vc", "borrowed"]
        return frame[[*order, "job_ids", "job_vcs", "job_milli", "milli_used"]]

    def node_usage(self, every: float | None = None) -> pd.DataFrame:
        """GPUs in use on each node over time: a wide frame, one row per time (the timeline's
        sample times, or every ``every`` seconds from 0) and one column per node."""
        layout = _Layout(self.meta)
        if every is None:
            times = np.unique(self.timeline["time"].to_numpy(dtype=float))
        else:
            if not every > 0:
                raise ValueError(f"node_usage: every must be > 0 seconds, got {every!r}")
            times = np.arange(0.0, float(self.meta.get("now", 0.0)) + every / 2, every)
        shared = bool(self.meta.get("resource_mode", False))
        rows = _usage_at(self.events, layout, times, shared=shared)
        frame = pd.DataFrame(rows, index=pd.Index(times, name="time"), columns=layout.names)
        frame.columns.name = "node"
        return frame

    # -- persistence --------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write ``jobs``/``events``/``timeline`` and the decisions as parquet, config + meta
        as JSON, and a ``manifest.json`` listing the files and their columns (the format of
        :mod:`analysim.results.format`). A ValueError naming the folder if it cannot be
        written (a file, a read-only folder)."""
        folder = Path(folder).expanduser()
        writable_output(folder, "Result.save", folder=True)
        frames = {f"{name}.parquet": getattr(self, name) for name in FRAMES}
        if self.decisions is not None:
            frames.update(decision_frames(self.decisions))
        payload = {"config": self.config, "meta": self.meta}
        manifest = manifest_for(frames, VERSION)
        try:
            for file, frame in frames.items():
                frame.to_parquet(folder / file, index=False)
            (folder / RESULT_JSON).write_text(json.dumps(payload, indent=2, sort_keys=True))
            # written last: a folder whose save was interrupted has none (or an older one
            # whose rows no longer match) and is refused on load
            (folder / MANIFEST).write_text(json.dumps(manifest, indent=2))
        except OSError as error:
            path = error.filename or folder
            raise ValueError(
                f"Result.save: cannot write {str(path)!r} ({error.strerror or error})"
            ) from None
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> Result:
        """Read a result written by :meth:`save`. Every file is checked first (present,
        readable, with the columns it needs): a damaged folder raises one
        :class:`~analysim.errors.ResultFormatError` naming the file and what is wrong. A
        folder saved before the manifest loads if its files pass the same checks."""
        folder = Path(folder).expanduser()
        files = read_result_files(folder)
        frames = {name: files["frames"][f"{name}.parquet"] for name in FRAMES}
        decisions = None
        if files["decisions"] is not None:
            decisions = decisions_from_frames(files["decisions"], len(frames["jobs"]), folder)
        return cls(**frames, config=files["config"], meta=files["meta"], decisions=decisions)


class _Layout:
    """The cluster's nodes and GPUs as recorded in a result's ``meta``."""

    def __init__(self, meta: dict[str, Any]) -> None:
        nodes = meta.get("nodes")
        if not nodes:
            raise ValueError("this result has no node layout (saved by an older version)")
        self.names: list[str] = nodes["node"]
        self.racks: list[str] = nodes["rack"]
        self.owners: list[str | None] = nodes["vc"]
        gpus = np.asarray(nodes["gpus"], dtype=np.int64)
        self.offsets = np.r_[0, np.cumsum(gpus)[:-1]].astype(np.int64)
        self.total = int(gpus.sum())
        self.node_of_gpu = np.repeat(np.arange(len(gpus)), gpus)
        self.index = {name: i for i, name in enumerate(self.names)}

    def gpus_of(self, text: str) -> np.ndarray:
        """Global GPU indices of a ``node:gpu,node:gpu`` list (none for a CPU-only job)."""
        offsets, index = self.offsets, self.index
        return np.array(
            [offsets[index[node]] + gpu for node, gpu in parse_gpu_list(text)], dtype=np.int64
        )


_TAKES = ("start", "resume", "migrate")
_RELEASES = ("preempt", "reclaim", "finish", "fail", "failed")


def _events_until(
    events: pd.DataFrame, until: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``event``, ``job_id``, ``gpus`` and ``borrowed`` columns of every event up to
    ``until`` (events are in time order), as arrays for the replays."""
    count = int(np.searchsorted(events["time"].to_numpy(dtype=float), until, side="right"))
    kinds = events["event"].astype(object).to_numpy()[:count]
    jobs = events["job_id"].to_numpy(dtype=object)[:count]
    gpus = events["gpus"].astype(object).to_numpy()[:count]
    lent = events["borrowed"].to_numpy(dtype=bool)[:count]
    return kinds, jobs, gpus, lent


def _replay(events: pd.DataFrame, layout: _Layout, until: float) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU, the row of the event that put its job there (-1: free) and whether that run
    is on borrowed GPUs, after every event up to ``until`` (whole GPUs; resource mode:
    :func:`_replay_shares`)."""
    owner = np.full(layout.total, -1, dtype=np.int64)
    borrowed = np.zeros(layout.total, dtype=bool)
    holding: dict[Any, np.ndarray] = {}
    kinds, jobs, gpus, lent = _events_until(events, until)
    parsed: dict[str, np.ndarray] = {}
    for row in np.flatnonzero(np.isin(kinds, _TAKES + _RELEASES)).tolist():
        job = jobs[row]
        before = holding.pop(job, None)
        if before is not None:
            owner[before] = -1
            borrowed[before] = False
        if kinds[row] in _TAKES:
            text = gpus[row]
            where = parsed.get(text)
            if where is None:
                where = parsed[text] = layout.gpus_of(text)
            owner[where] = row
            borrowed[where] = lent[row]
            holding[job] = where
    return owner, borrowed


def _replay_shares(
    events: pd.DataFrame, layout: _Layout, until: float
) -> tuple[list[list[int]], np.ndarray]:
    """Per GPU, the rows of the events that put each of its holders there (in the order they
    took it; empty: free), and whether any of them is on borrowed GPUs, after every event up
    to ``until`` (resource mode: a GPU may hold several shares)."""
    holders: list[dict[Any, int]] = [{} for _ in range(layout.total)]
    holding: dict[Any, np.ndarray] = {}
    kinds, jobs, gpus, lent = _events_until(events, until)
    parsed: dict[str, np.ndarray] = {}
    for row in np.flatnonzero(np.isin(kinds, _TAKES + _RELEASES)).tolist():
        job = jobs[row]
        for g in holding.pop(job, ()):
            holders[g].pop(job, None)
        if kinds[row] in _TAKES:
            text = gpus[row] if isinstance(gpus[row], str) else ""
            where = parsed.get(text)
            if where is None:
                where = parsed[text] = layout.gpus_of(text)
            for g in where.tolist():
                holders[g][job] = row
            holding[job] = where
    rows = [list(h.values()) for h in holders]
    borrowed = np.array([any(lent[r] for r in h) for h in rows], dtype=bool)
    return rows, borrowed


def _usage_at(
    events: pd.DataFrame, layout: _Layout, times: np.ndarray, shared: bool = False
) -> np.ndarray:
    """GPUs in use per node at each of ``times`` (sorted), replaying the events once
    (``shared``: a GPU several jobs hold counts once)."""
    used = np.zeros(len(layout.names), dtype=np.int64)
    out = np.zeros((len(times), len(layout.names)), dtype=np.int64)
    holding: dict[Any, np.ndarray] = {}
    event_times = events["time"].to_numpy(dtype=float)
    kinds = events["event"].astype(object).to_numpy()
    jobs = events["job_id"].to_numpy(dtype=object)
    gpus = events["gpus"].astype(object).to_numpy()
    parsed: dict[str, np.ndarray] = {}
    relevant = np.flatnonzero(np.isin(kinds, _TAKES + _RELEASES))
    holders = [0] * layout.total  # shared: jobs on each GPU
    node_of = layout.node_of_gpu.tolist()
    cut = np.searchsorted(event_times[relevant], times, side="right")
    done = 0
    for k, upto in enumerate(cut.tolist()):
        for row in relevant[done:upto].tolist():
            job = jobs[row]
            before = holding.pop(job, None)
            if shared:
                for g in [] if before is None else before.tolist():
                    holders[g] -= 1
                    if not holders[g]:
                        used[node_of[g]] -= 1
                if kinds[row] in _TAKES:
                    where = layout.gpus_of(gpus[row])
                    for g in where.tolist():
                        holders[g] += 1
                        if holders[g] == 1:
                            used[node_of[g]] += 1
                    holding[job] = where
                continue
            if before is not None:
                np.subtract.at(used, before, 1)
            if kinds[row] in _TAKES:
                text = gpus[row]
                nodes = parsed.get(text)
                if nodes is None:
                    nodes = parsed[text] = layout.node_of_gpu[layout.gpus_of(text)]
                np.add.at(used, nodes, 1)
                holding[job] = nodes
        done = upto
        out[k] = used
    return out


def labelled_categorical(
    items: list[Any], label: Callable[[Any], str], key: Callable[[Any], Any] = lambda x: x
) -> pd.Categorical:
    """``label(item)`` of each item (``None``: missing) as a categorical, categories in
    order of first appearance: items of one ``key`` are labelled once, and equal labels
    share a code."""
    code_of_key: dict[Any, int] = {}
    code_of_label: dict[str, int] = {}
    codes = []
    for item in items:
        if item is None:
            codes.append(-1)
            continue
        k = key(item)
        code = code_of_key.get(k)
        if code is None:
            code = code_of_label.setdefault(label(item), len(code_of_label))
            code_of_key[k] = code
        codes.append(code)
    return pd.Categorical.from_codes(
        np.array(codes, dtype=np.int64), categories=pd.Index(list(code_of_label), dtype="str")
    )


def _node_lists(names: np.ndarray, allocations: list[Any]) -> pd.Categorical:
    """Comma-joined node names of each allocation (an array of node indices, or None), as a
    categorical: events of one placement share its array, so each is joined once (the arrays
    are all alive here, so their ids are unique)."""
    names = names.tolist()
    return labelled_categorical(
        allocations, lambda nodes: ",".join([names[i] for i in nodes.tolist()]), key=id
    )


def build_result(run: RunRecord) -> Result:
    """Collect a simulation's record (:meth:`analysim.engine.Simulation.record`) into a
    :class:`Result`."""
    jobs_in = run.workload.jobs
    status = np.array(STATUS_NAMES, dtype=object)[run.status]
    running = run.status == 2
    ran = run.executed + np.where(running, run.now - run.since, 0.0)
    # GPUs a job holds: in resource mode its GPU milli / 1000 (as its borrowed GPU-seconds)
    held = run.milli_total / 1000 if run.resource_mode else run.gpus
    borrowed_now = np.where(run.borrowed, (run.now - run.since) * held, 0.0)
    end = run.end
    jct = end - run.submit
    jobs = pd.DataFrame(
        {
            "job_id": run.job_ids,
            "vc": jobs_in["vc"].to_numpy(),
            "user": jobs_in["user"].to_numpy(),
            "num_gpus": run.gpus,
            "submit_time": run.submit,
            "duration": run.duration,
            "start_time": run.first_start,
            "end_time": end,
            "jct": jct,
            "queue_delay": jct - ran,
            "run_time": ran,
            "preemptions": run.preemptions,
            "migrations": run.migrations.copy(),
            "reclaims": run.reclaims.copy(),
            "borrowed_gpu_seconds": run.borrowed_gpu_seconds + borrowed_now,
            "status": status,
            "nodes": _node_lists(
                run.node_names, [run.last_nodes.get(j) for j in range(run.n_jobs)]
            ),
        }
    )
    if run.resource_mode:  # what each job asked for besides whole GPUs
        jobs.insert(4, "gpu_milli", run.gpu_milli)
        jobs.insert(5, "cpu_milli", run.cpu)
        jobs.insert(6, "memory_mib", run.memory)
    if "gpu_type" in jobs_in.columns:
        jobs.insert(4, "gpu_type", jobs_in["gpu_type"].to_numpy())
    if run.rate is not None:  # a performance model is in use (docs/performance.md)
        _add_rates(jobs, jobs_in, run)
    if run.failures is not None:  # failures configured (docs/failures.md)
        _add_failures(jobs, run)
    samples = run.samples
    # built when first read, from what was recorded up to now (the records only grow)
    events = partial(_events_frame, run, run.records.EVENT_NAMES, run.n_events)
    timeline = partial(_timeline_frame, run, samples)
    nodes = run.cluster.nodes
    meta = {
        "workload": run.workload.name,
        "cluster": run.cluster.name,
        "now": float(run.now),
        "resource_mode": bool(run.resource_mode),  # GPUs may be shared (docs/semantics.md)
        "total_gpus": int(run.capacity.sum()),
        "vcs": list(run.partition.vc_names),
        "vc_capacity": [int(c) for c in run.partition.vc_capacity],
        "busy_gpu_seconds": [float(b) for b in run.busy_gpu_seconds],
        "sample_means": partial(_sample_means, run, samples),
        "nodes": {
            "node": [str(n) for n in nodes["node"]],
            "rack": [str(r) for r in nodes["rack"]],
            "gpus": [int(g) for g in nodes["gpus"]],
            "vc": [None if pd.isna(v) else str(v) for v in nodes["vc"]],
            "gpu_type": [str(t) for t in nodes["gpu_type"]],  # what typed jobs may use
            # resource mode: CPU and memory per node (what explain words the room in)
            **{
                name: [int(v) for v in nodes[name]]
                for name in ("cpu_milli", "memory_mib")
                if run.resource_mode and name in nodes.columns
            },
        },
    }
    decisions = partial(build_decisions, run, run.n_rounds, run.n_tries)
    return Result(jobs, events, timeline, run.config.to_dict(), meta, decisions)


def _add_failures(jobs: pd.DataFrame, run: RunRecord) -> None:
    """With failures configured: each job's final ``state`` (COMPLETED, FAILED; None while
    it has not ended), its ``restarts`` after failures, the run time it lost to failures
    (``lost_seconds``) and spent on work it kept (``useful_seconds``), and the time it
    waited to run again after kills (``recovery_seconds``)."""
    failed = run.status == FAILED
    state = np.where(run.status == DONE, "COMPLETED", np.where(failed, "FAILED", None))
    jobs["state"] = state.astype(object)
    jobs["restarts"] = run.failures.restarts
    jobs["lost_seconds"] = run.failures.lost
    jobs["useful_seconds"] = run.failures.useful
    jobs["recovery_seconds"] = run.failures.recovery


def _add_rates(jobs: pd.DataFrame, jobs_in: pd.DataFrame, run: RunRecord) -> None:
    """The application of each job and its rate on its last run (NaN: it never ran),
    after ``duration``."""
    at = jobs.columns.get_loc("duration") + 1
    ran = ~np.isnan(run.first_start)
    jobs.insert(at, "application", jobs_in["application"].to_numpy())
    jobs.insert(at + 1, "rate", np.where(ran, run.rate, np.nan))
    if run.type_rates is not None:  # typed applications: finish-time fairness
        _, type_gpus, rates = run.type_rates
        done = run.status == STATUS_NAMES.index("done")
        counted = run.status != STATUS_NAMES.index("unschedulable")
        rho = fairness.ftf_rho(
            run.submit,
            np.where(done, run.end, np.nan),
            run.duration,
            run.gpus,
            counted,
            type_gpus,
            rates,
        )
        jobs.insert(at + 2, fairness.COLUMN, rho)


def _joined_names(names: np.ndarray, allocations: list[Any]) -> np.ndarray:
    """Comma-joined node names (or None) of a few allocations, as a plain object column."""
    return np.array(
        [None if nodes is None else ",".join(names[nodes].tolist()) for nodes in allocations],
        dtype=object,
    )


def parse_gpu_list(text: Any) -> list[tuple[str, int]]:
    """(node name, GPU index on the node) of each item of a ``node:gpu,node:gpu`` list, the
    form of the events' ``gpus`` column (empty for a CPU-only job)."""
    return [
        (node, int(gpu))
        for node, _, gpu in (item.rpartition(":") for item in filter(None, str(text).split(",")))
    ]


def _gpu_lists(run: RunRecord, allocations: list[Any]) -> pd.Categorical:
    """``node:gpu`` lists of each allocation (tuples of global GPU indices per node); read
    back by :func:`parse_gpu_list`."""
    node_of = np.repeat(np.arange(len(run.capacity)), run.capacity)
    names = run.node_names.tolist()
    offsets = run.gpu_offset.tolist()
    return labelled_categorical(
        allocations,
        lambda taken: ",".join(
            f"{names[node_of[g]]}:{g - offsets[node_of[g]]}" for slots in taken for g in slots
        ),
    )


def _events_frame(run: RunRecord, names: np.ndarray, count: int) -> pd.DataFrame:
    """The first ``count`` recorded events, in time order."""
    records = run.records
    time = np.array(records.event_time[:count], dtype=float)
    # records are in processing order; sort by time, keeping that order within a time
    order = np.argsort(time, kind="stable")
    at = order.tolist()
    job = np.array(records.event_job[:count], dtype=np.int64)[order]
    kind = np.array(records.event_kind[:count], dtype=np.int64)[order]
    cause = np.full(count, None, dtype=object)
    for position, i in enumerate(at):
        j = records.event_cause.get(i)
        if j is not None:
            cause[position] = run.job_ids[j]
    job_ids, vc, gpus = run.job_ids[job], run.job_vc[job], run.gpus[job]
    nodeless = job < 0  # a node going down or up (failures): no job; the node's GPUs
    if nodeless.any():
        job_ids = job_ids.astype(object)
        job_ids[nodeless] = None
        vc, gpus = vc.copy(), gpus.copy()
        vc[nodeless] = -1
        nodes = [records.event_nodes[i] for i in order[nodeless].tolist()]
        gpus[nodeless] = [int(run.capacity[n].sum()) for n in nodes]
    return pd.DataFrame(
        {
            "time": time[order],
            "event": pd.Categorical.from_codes(kind, categories=list(names)),
            "job_id": job_ids,
            "vc": pd.Categorical.from_codes(vc, categories=run.partition.vc_names),
            "num_gpus": gpus,
            "nodes": _node_lists(run.node_names, [records.event_nodes[i] for i in at]),
            "gpus": _gpu_lists(run, [records.event_gpus[i] for i in at]),
            "from_nodes": _joined_names(run.node_names, [records.event_from.get(i) for i in at]),
            "cause": cause,
            "borrowed": np.array([i in records.event_borrowed for i in at], dtype=bool),
        }
    )


def _sample_arrays(run: RunRecord, samples: list) -> dict[str, np.ndarray]:
    """The samples as arrays: ``starts`` and ``counts`` (one entry per run of identical
    samples), per-VC matrices (runs x VCs) and cluster-wide vectors."""
    from analysim.results.fragmentation import measure

    n_vc = len(run.partition.vc_names)
    names = ("used", "running", "waiting", "pending", "borrowed")
    if samples:
        starts, counts, snaps, captures = zip(*samples, strict=True)
    else:
        starts, counts, snaps, captures = (), (), (), ()
    # resource mode counts GPUs used in GPU milli / 1000, and adds FGD's fragmentation
    dtype = float if run.resource_mode else np.int64
    out = {
        name: np.array([s[i] for s in snaps], dtype=dtype).reshape(len(snaps), n_vc)
        for i, name in enumerate(names)
    }
    if run.resource_mode:
        out["fgd_frag_milli"] = np.array([s[5] for s in snaps], dtype=float)
    if run.failures is not None:  # the nodes and GPUs down, last in each sample
        out["down_nodes"] = np.array([s[-2] for s in snaps], dtype=np.int64)
        out["down_gpus"] = np.array([s[-1] for s in snaps], dtype=np.int64)
    out.update(measure(run, list(captures)))
    out["starts"] = np.array(starts, dtype=float)
    out["counts"] = np.array(counts, dtype=np.int64)
    return out


def _vc_free(run: RunRecord, used: np.ndarray) -> np.ndarray:
    """A VC's free GPUs: of its own nodes or quota; on an unpartitioned cluster, the pool's."""
    capacity = run.partition.vc_capacity.astype(float)
    total = float(run.capacity.sum())
    if run.cluster.partitioned:
        free = capacity[None, :] - used
    else:
        free = total - used.sum(axis=1)[:, None]
    return np.broadcast_to(free, used.shape)


def _jain_per_sample(run: RunRecord, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Per sample, Jain's index across the VCs that want GPUs of the service each gets,
    normalised by what it is due: held GPUs / min(GPUs its jobs want, its share), capped at
    1. NaN when no VC wants GPUs."""
    held = arrays["used"] + arrays["borrowed"]
    wanted = held + arrays["pending"]
    share = run.partition.vc_capacity.astype(float)
    if not run.cluster.partitioned:
        share = np.full(len(share), float(run.capacity.sum()) / max(len(share), 1))
    due = np.minimum(wanted, share[None, :])
    active = due > 0
    served = np.minimum(np.divide(held, due, out=np.zeros(due.shape), where=active), 1.0)
    total, squares, count = served.sum(axis=1), (served**2).sum(axis=1), active.sum(axis=1)
    out = np.divide(total**2, count * squares, out=np.ones(len(held)), where=squares > 0)
    out[count == 0] = np.nan
    return out


def _sample_means(run: RunRecord, samples: list) -> dict[str, dict[str, float]]:
    """Time averages over the samples, cluster-wide (``ALL``) and per VC."""
    arrays = _sample_arrays(run, samples)
    weights = arrays["counts"].astype(float)
    total = weights.sum()

    def mean(values: np.ndarray) -> float:
        return float((values * weights).sum() / total) if total else float("nan")

    free = _vc_free(run, arrays["used"])
    idle_waiting = (free > 0) & (arrays["waiting"] > 0)
    cluster_free = float(run.capacity.sum()) - arrays["used"].sum(1) - arrays["borrowed"].sum(1)
    if "down_gpus" in arrays:  # failures: GPUs down are not free
        cluster_free = cluster_free - arrays["down_gpus"]
    jain = _jain_per_sample(run, arrays)
    has_jain = ~np.isnan(jain)
    means = {
        ALL: {
            "avg_fragmented_gpus": mean(arrays["cluster_fragmented"]),
            "avg_blocked_jobs": mean(arrays["blocked"].sum(1)),
            "avg_frag_index": mean(arrays["cluster_frag_index"]),
            "idle_while_waiting": mean((cluster_free > 0) & (arrays["waiting"].sum(1) > 0)),
            "jain_fairness": float(
                (jain[has_jain] * weights[has_jain]).sum() / weights[has_jain].sum()
            )
            if has_jain.any()
            else float("nan"),
        }
    }
    if "fgd_frag_milli" in arrays:  # resource mode: FGD's fragmentation, cluster-wide
        means[ALL]["avg_fgd_frag_milli"] = mean(arrays["fgd_frag_milli"])
    for v, name in enumerate(run.partition.vc_names):
        means[name] = {
            "avg_fragmented_gpus": mean(arrays["fragmented"][:, v]),
            "avg_blocked_jobs": mean(arrays["blocked"][:, v]),
            "avg_frag_index": mean(arrays["frag_index"][:, v]),
            "idle_while_waiting": mean(idle_waiting[:, v]),
        }
    return means


def _timeline_frame(run: RunRecord, samples: list) -> pd.DataFrame:
    every = run.config.sample_every
    vcs = list(run.partition.vc_names)
    n_vc = len(vcs)
    arrays = _sample_arrays(run, samples)
    counts = arrays["counts"]
    offsets = np.concatenate([np.arange(c) for c in counts]) if len(counts) else np.zeros(0)
    times = np.repeat(arrays["starts"], counts) + offsets * every

    def expand(name: str) -> np.ndarray:
        return np.repeat(arrays[name], counts, axis=0)

    used, running, waiting, pending = (expand(n) for n in ("used", "running", "waiting", "pending"))
    borrowed, fragmented, blocked, index = (
        expand(n) for n in ("borrowed", "fragmented", "blocked", "frag_index")
    )
    held = used + borrowed
    capacity = run.partition.vc_capacity.astype(float)
    total = float(run.capacity.sum())
    vc_free = _vc_free(run, used)
    cluster = pd.DataFrame(
        {
            "time": times,
            "vc": ALL,
            "used_gpus": held.sum(axis=1),
            "free_gpus": total - held.sum(axis=1),
            "pending_gpus": pending.sum(axis=1),
            "running_jobs": running.sum(axis=1),
            "waiting_jobs": waiting.sum(axis=1),
            "utilization": held.sum(axis=1) / total,
            "borrowed_gpus": borrowed.sum(axis=1),
            "fragmented_gpus": expand("cluster_fragmented"),
            "blocked_jobs": blocked.sum(axis=1),
            "frag_index": expand("cluster_frag_index"),
        }
    )
    per_vc = pd.DataFrame(
        {
            "time": np.repeat(times, n_vc),
            "vc": np.tile(np.array(vcs, dtype=object), len(times)),
            "used_gpus": held.ravel(),
            "free_gpus": vc_free.ravel(),
            "pending_gpus": pending.ravel(),
            "running_jobs": running.ravel(),
            "waiting_jobs": waiting.ravel(),
            "utilization": np.divide(
                held, capacity[None, :], out=np.full(held.shape, np.nan), where=capacity > 0
            ).ravel(),
            "borrowed_gpus": borrowed.ravel(),
            "fragmented_gpus": fragmented.ravel(),
            "blocked_jobs": blocked.ravel(),
            "frag_index": index.ravel(),
        }
    )
    if "fgd_frag_milli" in arrays:  # resource mode: cluster-wide only (NaN per VC)
        cluster["fgd_frag_milli"] = expand("fgd_frag_milli")
        per_vc["fgd_frag_milli"] = np.nan
    if "down_nodes" in arrays:  # failures: the nodes down, cluster-wide (NaN per VC)
        down = expand("down_gpus")
        cluster["free_gpus"] = cluster["free_gpus"] - down
        cluster["down_nodes"] = expand("down_nodes").astype(float)
        cluster["down_gpus"] = down.astype(float)
        per_vc["down_nodes"] = per_vc["down_gpus"] = np.nan
    frame = pd.concat([cluster, per_vc], ignore_index=True)
    if not run.resource_mode:
        frame["free_gpus"] = frame["free_gpus"].astype(np.int64)
    return frame.sort_values(["time"], kind="stable", ignore_index=True)
