"""``Result``: the tidy outcome of a run (jobs, events, timeline, config), saved as parquet."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.inputs.validation import writable_output
from analysim.results import metrics
from analysim.results.decisions import decision_frames, decisions_from_frames
from analysim.results.format import MANIFEST, RESULT_JSON, manifest_for, read_result_files
from analysim.results.readable import Summary, SummaryTable
from analysim.version import VERSION

if TYPE_CHECKING:
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


_TAKES = ("start", "resume", "migrate", "resize")  # (resize: elastic jobs)
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


def parse_gpu_list(text: Any) -> list[tuple[str, int]]:
    """(node name, GPU index on the node) of each item of a ``node:gpu,node:gpu`` list, the
    form of the events' ``gpus`` column (empty for a CPU-only job)."""
    return [
        (node, int(gpu))
        for node, _, gpu in (item.rpartition(":") for item in filter(None, str(text).split(",")))
    ]
