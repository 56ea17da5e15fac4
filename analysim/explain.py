"""Why is a job waiting? Answers in words, from a run's own records.

:func:`why_waiting` reads a :class:`~analysim.result.Result`'s ``jobs`` and ``events`` (and
``snapshot(time)`` where the engine provides it), rebuilds the state after the decisions at
``time`` (who runs where, who waits, how much service each job has had) and, where the answer
depends on the ranking, ranks the jobs again with the run's own scheduler. The reasons, in the
order they are checked:

* the job is not waiting at that time (not yet submitted, running, done, unschedulable);
* its VC (or the shared pool, or the whole cluster) has fewer free GPUs than it asks for;
* enough GPUs are free to it, but no placement fits them (fragmentation);
* it would fit, but waiting jobs ranked ahead of it in its queue do not, and without
  backfilling no job behind them starts (head-of-line blocking).

If the job was last preempted, the answer says by whom (the ``cause`` recorded with the
event when the engine keeps one; otherwise the jobs that started on its nodes at that moment).

:func:`allocations` replays the events into per-GPU intervals (for Gantt charts) and
:func:`gpu_snapshot` gives one row per GPU at a time, like ``Result.snapshot``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.config import SimConfig
from analysim.domains import build_partition
from analysim.policies.scheduling import JobView
from analysim.status import RUNNING, WAITING

if TYPE_CHECKING:
    from analysim.cluster import Cluster
    from analysim.result import Result

RUN_EVENTS = ("start", "resume", "migrate")
STOP_EVENTS = ("preempt", "reclaim", "finish")
SNAPSHOT_COLUMNS = ["node", "rack", "gpu", "node_vc", "job_id", "job_vc", "borrowed"]


@dataclass(frozen=True)
class WaitReason:
    """Why ``job_id`` is (or is not) waiting at ``time``: a ``kind`` and the facts behind it.

    ``kind`` is one of ``not_submitted``, ``running``, ``done``, ``unschedulable``, ``full``
    (fewer GPUs free to it than it needs; ``scope`` says whose: ``"VC a"``, ``"quota of VC
    a"``, ``"cluster"``), ``fragmented``, ``ranked_behind`` or ``next_round``.
    """

    job_id: str
    time: float
    kind: str
    need: int = 0
    free: int = 0
    capacity: int = 0
    scope: str = ""
    most_on_one_node: int = 0
    ahead: tuple[str, ...] = ()
    blocker: str | None = None
    preempted_by: tuple[str, ...] = ()
    preempted_at: float | None = None
    reclaimed: bool = False  # the stop was its borrowed GPUs taken back by their owner
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def waiting(self) -> bool:
        return self.kind not in {"not_submitted", "running", "done", "unschedulable"}

    @property
    def text(self) -> str:
        """The reason as sentences."""
        return _describe(self)


def why_waiting(result: Result, job_id: str, time: float, cluster: Cluster | None = None) -> str:
    """Why job ``job_id`` is waiting at ``time`` (after that moment's decisions), in words.

    ``cluster`` is the run's cluster; it may be left out when the result knows its own
    topology (``Result.snapshot``). See :func:`explain` for the structured answer.
    """
    return explain(result, job_id, time, cluster).text


def explain(
    result: Result,
    job_id: str,
    time: float,
    cluster: Cluster | None = None,
    spells: pd.DataFrame | None = None,
) -> WaitReason:
    """The structured form of :func:`why_waiting` (``spells``: :func:`allocations` of the
    result, if already computed)."""
    return _Moment(result, float(time), _cluster_of(result, cluster), spells).reason(job_id)


def waiting_jobs(result: Result, time: float) -> pd.DataFrame:
    """The jobs waiting at ``time`` (after that moment's decisions), in submit order."""
    status = _status_at(result, float(time))
    jobs = result.jobs
    return jobs.loc[status == "waiting", ["job_id", "vc", "num_gpus", "submit_time"]].reset_index(
        drop=True
    )


# -- replaying the events ------------------------------------------------------------------------
def _events_until(result: Result, time: float) -> pd.DataFrame:
    events = result.events
    return events[events["time"] <= time + 1e-9]


def _status_at(result: Result, time: float) -> np.ndarray:
    """Each job's status after the decisions at ``time`` (an array aligned with ``jobs``)."""
    jobs = result.jobs
    last = _events_until(result, time).drop_duplicates("job_id", keep="last")
    kind = jobs["job_id"].map(dict(zip(last["job_id"], last["event"].astype(str), strict=True)))
    names = {
        "submit": "waiting",
        "preempt": "waiting",
        "reclaim": "waiting",
        "finish": "done",
        "unschedulable": "unschedulable",
        **dict.fromkeys(RUN_EVENTS, "running"),
    }
    return kind.map(names).fillna("pending").to_numpy(dtype=object)


def allocations(result: Result, cluster: Cluster | None = None) -> pd.DataFrame:
    """Every spell of a job on a GPU: ``job_id, vc, node, gpu`` (index on the node), ``start,
    end`` (``end`` is NaN while it still runs at the end of the records).

    Rebuilt from the events: their ``gpus`` column (``"n0:0,n0:1"``) where the engine
    records it; otherwise a job on one node takes that node's lowest free GPUs, as the engine
    does, and a job over several nodes fills its whole free nodes first and puts the remainder
    on the others (the events name its nodes but not the GPUs on each).
    """
    nodes = _cluster_of(result, cluster).nodes
    capacity = dict(zip(nodes["node"], nodes["gpus"].astype(int), strict=True))
    free = {n: list(range(c)) for n, c in capacity.items()}
    held: dict[str, list[tuple[str, int, float]]] = {}
    rows: list[tuple[str, str, str, int, float, float]] = []
    vc_of = dict(zip(result.jobs["job_id"], result.jobs["vc"], strict=True))
    events = result.events
    moving = events[events["event"].astype(str).isin(RUN_EVENTS + STOP_EVENTS)]
    exact = (
        moving["gpus"].astype(object).tolist() if "gpus" in moving.columns else [None] * len(moving)
    )
    for time, kind, job, gpus, where, slots in zip(
        moving["time"].tolist(),
        moving["event"].astype(str).tolist(),
        moving["job_id"].tolist(),
        moving["num_gpus"].tolist(),
        moving["nodes"].astype(object).tolist(),
        exact,
        strict=True,
    ):
        if job in held:  # stops, or moves (migrate): release what it holds
            for node, gpu, start in held.pop(job):
                free[node].append(gpu)
                free[node].sort()
                rows.append((job, vc_of[job], node, gpu, start, time))
        if kind in RUN_EVENTS and isinstance(slots, str):
            taken = [(n, int(g)) for n, g in (s.rsplit(":", 1) for s in slots.split(","))]
            for n, g in taken:
                free[n].remove(g)
            held[job] = [(n, g, time) for n, g in taken]
        elif kind in RUN_EVENTS and isinstance(where, str):
            held[job] = [(n, g, time) for n, g in _take(free, capacity, where.split(","), gpus)]
    for job, spells in held.items():
        rows.extend((job, vc_of[job], n, g, s, np.nan) for n, g, s in spells)
    frame = pd.DataFrame(rows, columns=["job_id", "vc", "node", "gpu", "start", "end"])
    return frame.sort_values(["start", "node", "gpu"], kind="stable", ignore_index=True)


def _take(
    free: dict[str, list[int]], capacity: dict[str, int], names: list[str], gpus: int
) -> list[tuple[str, int]]:
    """GPUs for a job on ``names``: the lowest free ones, whole free nodes filled first."""
    if len(names) == 1:
        counts = {names[0]: gpus}
    else:
        order = sorted(names, key=lambda n: len(free[n]) != capacity[n])  # whole nodes first
        counts, left = {}, gpus
        for name in order:
            counts[name] = min(left, len(free[name]))
            left -= counts[name]
    taken = []
    for name, count in counts.items():
        slots = free[name][:count]
        del free[name][:count]
        taken.extend((name, g) for g in slots)
    return taken


def gpu_snapshot(
    result: Result,
    time: float,
    cluster: Cluster | None = None,
    spells: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per GPU after the decisions at ``time``: ``node, rack, gpu, node_vc, job_id,
    job_vc, borrowed``. Uses ``result.snapshot`` when the result has it; otherwise rebuilt
    with :func:`allocations` (pass ``spells``, its answer, to reuse it)."""
    if hasattr(result, "snapshot"):
        return result.snapshot(time)
    nodes = _cluster_of(result, cluster).nodes
    gpus = nodes.loc[nodes.index.repeat(nodes["gpus"].astype(int))]
    frame = pd.DataFrame(
        {
            "node": gpus["node"].to_numpy(dtype=object),
            "rack": gpus["rack"].to_numpy(dtype=object),
            "gpu": gpus.groupby("node", sort=False).cumcount().to_numpy(),
            "node_vc": gpus["vc"].astype(object).where(gpus["vc"].notna(), None).to_numpy(),
        }
    )
    if spells is None:
        spells = allocations(result, cluster)
    now = spells[(spells["start"] <= time + 1e-9) & ~(spells["end"] <= time + 1e-9)]
    on = now.set_index(["node", "gpu"])
    key = pd.MultiIndex.from_arrays([frame["node"], frame["gpu"]])
    for column, source in (("job_id", "job_id"), ("job_vc", "vc")):
        values = np.array(on[source].reindex(key).to_numpy(), dtype=object)
        values[pd.isna(values)] = None
        frame[column] = pd.Series(values, dtype=object)
    owned = frame["node_vc"].notna() & frame["job_vc"].notna()
    frame["borrowed"] = owned & (frame["node_vc"] != frame["job_vc"])
    return frame[SNAPSHOT_COLUMNS]


def _cluster_of(result: Result, cluster: Cluster | None) -> Cluster:
    if cluster is not None:
        return cluster
    known = getattr(result, "cluster", None)
    if known is not None and hasattr(known, "nodes"):
        return known
    if hasattr(result, "snapshot"):
        return _cluster_from_snapshot(result)
    raise ValueError(
        "this Result does not record its cluster's nodes: pass cluster= (the cluster it ran on)"
    )


def _cluster_from_snapshot(result: Result) -> Cluster:
    """The nodes (and quotas) of a run, as far as its snapshot and meta tell them."""
    from analysim.cluster import Cluster

    gpus = result.snapshot(0.0)
    nodes = gpus.groupby("node", sort=False).agg(
        rack=("rack", "first"), gpus=("gpu", "size"), vc=("node_vc", "first")
    )
    nodes = nodes.reset_index()
    owners = set(nodes["vc"].dropna())
    total = int(nodes["gpus"].sum())
    capacity = dict(zip(result.meta["vcs"], result.meta["vc_capacity"], strict=True))
    quotas = {vc: c for vc, c in capacity.items() if vc not in owners and c < total}
    return Cluster.from_frame(nodes, quotas=quotas or None, name=result.meta.get("cluster", ""))


# -- the state at one moment ----------------------------------------------------------------------
class _Moment:
    """The state of a run after the decisions at ``time``, rebuilt from its records."""

    def __init__(
        self, result: Result, time: float, cluster: Cluster, spells: pd.DataFrame | None
    ) -> None:
        if result.config.get("compat"):
            raise ValueError(
                "explain: a compat replay follows another simulator's rules; explain applies "
                "to AnalySIM runs"
            )
        self.result, self.time, self.cluster, self.spells = result, time, cluster, spells
        self.jobs = result.jobs.reset_index(drop=True)
        self.config = SimConfig.from_dict(
            {k: v for k, v in result.config.items() if k in SimConfig.fields()}
        )
        self.partition = build_partition(self.jobs, cluster)
        self.status = _status_at(result, time)
        self.index = {j: i for i, j in enumerate(self.jobs["job_id"].tolist())}
        self._events = _events_until(result, time)

    # -- free GPUs --------------------------------------------------------------------------
    def snapshot(self) -> pd.DataFrame:
        if getattr(self, "_snapshot", None) is None:
            self._snapshot = gpu_snapshot(self.result, self.time, self.cluster, self.spells)
        return self._snapshot

    def free_per_node(self) -> np.ndarray:
        snap = self.snapshot()
        free = snap["job_id"].isna().groupby(snap["node"], sort=False).sum()
        return free.reindex(self.cluster.nodes["node"]).fillna(0).to_numpy(dtype=np.int64)

    def lent(self, nodes: np.ndarray) -> int:
        """GPUs of these nodes (indices) held by jobs of other VCs (borrowed)."""
        snap = self.snapshot()
        if "borrowed" not in snap.columns:
            return 0
        names = set(self.cluster.nodes["node"].to_numpy()[nodes].tolist())
        return int((snap["borrowed"].fillna(False).astype(bool) & snap["node"].isin(names)).sum())

    def own_used(self) -> np.ndarray:
        """GPUs each VC's jobs hold on GPUs of their own (what its quota counts)."""
        snap = self.snapshot()
        held = snap["job_id"].notna()
        if "borrowed" in snap.columns:
            held &= ~snap["borrowed"].fillna(False).astype(bool)
        counts = snap.loc[held, "job_vc"].value_counts()
        return np.array([int(counts.get(v, 0)) for v in self.partition.vc_names], dtype=np.int64)

    def vc_used(self) -> np.ndarray:
        """GPUs each VC's jobs hold, own and borrowed (what schedulers see as its usage)."""
        running = self.status == "running"
        used = np.zeros(len(self.partition.vc_names), dtype=np.int64)
        np.add.at(used, self.partition.job_vc[running], self.jobs["num_gpus"].to_numpy()[running])
        return used

    # -- the reason --------------------------------------------------------------------------
    def reason(self, job_id: str) -> WaitReason:
        if job_id not in self.index:
            raise ValueError(f"why_waiting: no job {job_id!r} in this result")
        j = self.index[job_id]
        status = self.status[j]
        need = int(self.jobs.at[j, "num_gpus"])
        base = {"job_id": job_id, "time": self.time, "need": need}
        if status != "waiting":
            kind = "not_submitted" if status == "pending" else status
            return WaitReason(kind=kind, **base, detail={"nodes": self._nodes_of(job_id)})
        base.update(self._preemption(job_id))
        domain = self.partition.domains[self.partition.job_domain[j]]
        free_nodes = self.free_per_node()[domain.nodes]
        used = self.own_used()
        vc = int(self.partition.job_vc[j])
        free, capacity, scope = self._room(domain, vc, free_nodes, used, need)
        if free < need:
            lent = self.lent(domain.nodes) if scope.startswith(("VC", "shared")) else 0
            return WaitReason(
                kind="full",
                free=free,
                capacity=capacity,
                scope=scope,
                detail={
                    "lent": lent,
                    **self._preemption_outlook(j, need, free),
                    **self._borrowing_outlook(vc, domain),
                },
                **base,
            )
        placer = self.config.make_placer()
        rng = np.random.default_rng(self.config.seed)
        fits = domain.quota is None or used[vc] + need <= domain.quota
        fits = fits and placer.place(need, free_nodes.copy(), domain.topology, rng) is not None
        if not fits:
            return WaitReason(
                kind="fragmented",
                free=free,
                capacity=capacity,
                scope=scope,
                most_on_one_node=int(free_nodes.max(initial=0)),
                detail={
                    "placement": placer.name,
                    "nodes_with_free": int((free_nodes > 0).sum()),
                    **self._preemption_outlook(j, need, free),
                },
                **base,
            )
        ahead = self._ahead_in_queue(j)
        if ahead and not self.config.backfill:
            return WaitReason(
                kind="ranked_behind", free=free, ahead=ahead, blocker=ahead[0], **base
            )
        return WaitReason(kind="next_round", free=free, ahead=ahead, **base)

    def _preemption_outlook(self, j: int, need: int, free: int) -> dict[str, Any]:
        """With preemption: which running jobs ranked below ``j`` it could evict, and from
        when (a (re)started job is not evicted before it has run one quantum past its restore
        cost). Counts GPUs only: whether they would make a placement is the round's to see."""
        if not self.config.preemption:
            return {}
        order = self.ranking(j)
        running = self.status == "running"
        below = [k for k in order[order.index(j) + 1 :] if running[k]]
        gpus = self.jobs["num_gpus"].to_numpy()
        held = int(gpus[below].sum()) if below else 0
        if free + held < need:
            return {"outlook": "no_victims", "victims": (), "victim_gpus": held}
        evictable = self._evictable_from()
        chosen, room, ready = [], free, 0.0
        for k in sorted(below, key=lambda k: evictable[k]):  # the soonest evictable first
            chosen.append(k)
            room += int(gpus[k])
            ready = max(ready, float(evictable[k]))
            if room >= need:
                break
        quantum, step = self.config.quantum, self.config.step
        after = max(ready, self.time + step)
        next_round = float(np.ceil(after / quantum - 1e-9) * quantum)
        names = tuple(str(self.jobs.at[k, "job_id"]) for k in chosen)
        kind = "protected" if ready > self.time + 1e-9 else "can_preempt"
        return {"outlook": kind, "victims": names, "ready": ready, "next_round": next_round}

    def _borrowing_outlook(self, vc: int, domain: Any) -> dict[str, Any]:
        """With borrowing: GPUs of other VCs idle now, and how many more its VC may borrow
        (``borrow_limit`` x its own GPUs or quota, less what its jobs borrow now)."""
        if not getattr(self.config, "borrowing", False):
            return {}
        name = self.partition.vc_names[vc]
        share = domain.quota if domain.quota is not None else self.partition.vc_capacity[vc]
        cap = int(np.floor(self.config.borrow_limit * share + 1e-9))
        snap = self.snapshot()
        flags = snap["borrowed"].fillna(False).astype(bool) if "borrowed" in snap else False
        borrowed_now = int(((snap["job_vc"] == name) & flags).sum())
        elsewhere = snap["node_vc"] != name if domain.quota is None else True
        idle = int((snap["job_id"].isna() & elsewhere).sum())
        return {"borrow_idle": idle, "borrow_room": max(0, cap - borrowed_now), "borrow_cap": cap}

    def _evictable_from(self) -> np.ndarray:
        """When each running job may be evicted: its last (re)start + quantum (+ its restore
        cost after a resume)."""
        n = len(self.jobs)
        since = np.full(n, np.inf)
        resumed = np.zeros(n, dtype=bool)
        runs = self._events[self._events["event"].astype(str).isin(("start", "resume"))]
        for time, kind, job in zip(
            runs["time"].tolist(),
            runs["event"].astype(str).tolist(),
            runs["job_id"].tolist(),
            strict=True,
        ):
            since[self.index[job]] = time
            resumed[self.index[job]] = kind == "resume"
        try:
            cost = self.config.make_cost_model().costs(self.jobs).astype(float)
        except (KeyError, ValueError):
            cost = np.zeros(n)
        return since + self.config.quantum + np.where(resumed, cost, 0.0)

    def _room(
        self, domain: Any, vc: int, free_nodes: np.ndarray, used: np.ndarray, need: int
    ) -> tuple[int, int, str]:
        """GPUs free to a job of ``domain``, the capacity they come from, and whose it is.
        Under a quota: the quota's room when it is too small for the job (the job cannot
        start whatever the pool holds), else the pool's."""
        name = self.partition.vc_names[vc]
        pool_free = int(free_nodes.sum())
        pool_capacity = int(domain.topology.capacity.sum())
        if domain.quota is not None:
            quota_free = domain.quota - int(used[vc])
            if quota_free < need or quota_free < pool_free:
                return quota_free, domain.quota, f"quota of VC {name}"
            return pool_free, pool_capacity, "shared pool"
        if self.cluster.partitioned:
            return pool_free, pool_capacity, f"VC {name}"
        return pool_free, pool_capacity, "cluster"

    def _nodes_of(self, job_id: str) -> str | None:
        mine = self._events[self._events["job_id"] == job_id]
        placed = mine[mine["event"].astype(str).isin(RUN_EVENTS)]
        return None if placed.empty else str(placed["nodes"].iloc[-1])

    def _preemption(self, job_id: str) -> dict[str, Any]:
        """Who preempted the job, if its last stop was a preemption or a reclaim."""
        mine = self._events[self._events["job_id"] == job_id]
        if mine.empty or str(mine["event"].iloc[-1]) not in ("preempt", "reclaim"):
            return {}
        last = mine.iloc[-1]
        at = float(last["time"])
        stop = {"preempted_at": at, "reclaimed": str(last["event"]) == "reclaim"}
        if "cause" in mine.columns and pd.notna(last["cause"]):
            return {"preempted_by": (str(last["cause"]),), **stop}
        nodes = set(str(last["nodes"]).split(","))
        same_time = self._events[
            (self._events["time"] == at)
            & self._events["event"].astype(str).isin(RUN_EVENTS)
            & (self._events["job_id"] != job_id)
        ]
        by = [
            str(row_job)
            for row_job, where in zip(same_time["job_id"], same_time["nodes"], strict=True)
            if nodes & set(str(where).split(","))
        ]
        return {"preempted_by": tuple(dict.fromkeys(by)), **stop}

    # -- the ranking -------------------------------------------------------------------------
    def _ahead_in_queue(self, j: int) -> tuple[str, ...]:
        """The waiting jobs of ``j``'s queue that the run's scheduler ranks above it now."""
        order = self.ranking(j)
        pos = order.index(j)
        waiting = self.status == "waiting"
        return tuple(str(self.jobs.at[k, "job_id"]) for k in order[:pos] if waiting[k])

    def ranking(self, j: int) -> list[int]:
        """Active jobs of ``j``'s queue (its VC, or everyone on an unpartitioned cluster),
        ranked by the run's scheduler with their state at this moment."""
        active = np.isin(self.status, ["waiting", "running"])
        if self.cluster.partitioned:
            active &= self.partition.job_vc == self.partition.job_vc[j]
        else:
            active &= self.partition.job_domain >= 0
        index = np.flatnonzero(active)
        scheduler = self.config.make_scheduler()
        scheduler.bind(self.partition.vc_names, self.partition.vc_capacity)
        view = JobView(self.time, index, self._columns(), list(self.vc_used()))
        keys = [np.asarray(k) for k in scheduler.priority(view)]
        return index[np.lexsort([index, *reversed(keys)])].tolist()

    def _columns(self) -> dict[str, np.ndarray]:
        """Per-job arrays as the engine keeps them (service as of each job's last change;
        a LAS starvation promotion, which the events do not record, is not replayed)."""
        jobs = self.jobs
        gpus = jobs["num_gpus"].to_numpy(dtype=np.int64)
        executed, since, stops = self._service()
        try:
            cost = self.config.make_cost_model().costs(jobs).astype(float)
        except (KeyError, ValueError):
            cost = np.zeros(len(jobs))
        duration = jobs["duration"].to_numpy(dtype=float)
        status = np.where(
            self.status == "running", RUNNING, np.where(self.status == "waiting", WAITING, 0)
        )
        return {
            "num_gpus": gpus,
            "submit_time": jobs["submit_time"].to_numpy(dtype=float),
            "duration": duration,
            "remaining": duration + stops * cost - executed,
            "attained": executed * gpus,
            "executed": executed,
            "since": since,
            "status": status.astype(np.int8),
            "vc": self.partition.job_vc,
            "priority": np.zeros(len(jobs)),
        }

    def _service(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Seconds each job has run up to its last change, that change's time, and how many
        times it was preempted, from the events up to now."""
        n = len(self.jobs)
        executed, since = np.zeros(n), self.jobs["submit_time"].to_numpy(dtype=float).copy()
        stops = np.zeros(n)
        started: dict[int, float] = {}
        events = self._events
        for time, kind, job in zip(
            events["time"].tolist(),
            events["event"].astype(str).tolist(),
            events["job_id"].tolist(),
            strict=True,
        ):
            k = self.index[job]
            if kind in RUN_EVENTS:
                if k in started:  # a migration: the run goes on
                    executed[k] += time - started[k]
                started[k] = since[k] = time
            elif kind in STOP_EVENTS and k in started:
                executed[k] += time - started.pop(k)
                since[k] = time
                stops[k] += kind != "finish"
        return executed, since, stops


# -- words ---------------------------------------------------------------------------------------
def _seconds(t: float) -> str:
    return f"t={t:g} s"


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _jobs(n: int) -> str:
    return f"{n} waiting job" if n == 1 else f"{n} waiting jobs"


def _describe(r: WaitReason) -> str:
    head = f"{r.job_id} at {_seconds(r.time)}: "
    if r.kind == "not_submitted":
        return head + "not waiting: it has not been submitted yet."
    if r.kind == "running":
        return head + f"not waiting: it is running on {r.detail.get('nodes')}."
    if r.kind == "done":
        return head + "not waiting: it has finished."
    if r.kind == "unschedulable":
        return head + "it never runs: it asks for more GPUs than its VC could ever get."
    text = head
    if r.preempted_by or r.preempted_at is not None:
        by = ", ".join(r.preempted_by) or "a higher-ranked job"
        what = "its borrowed GPUs were reclaimed" if r.reclaimed else "it was preempted"
        text += f"{what} by {by} at {_seconds(r.preempted_at)}. It waits because "
    else:
        text += "it waits because "
    if r.kind == "full":
        return text + _full(r) + _outlook(r) + _borrowing(r)
    if r.kind == "fragmented":
        return (
            text
            + (
                f"enough GPUs are free but fragmented: {_gpus(r.free)} are free to it over "
                f"{r.detail['nodes_with_free']} nodes, at most {r.most_on_one_node} on one node, "
                f"and placement {r.detail['placement']} finds no place for {r.need}."
            )
            + _outlook(r)
        )
    if r.kind == "ranked_behind":
        return text + (
            f"it is ranked behind {_jobs(len(r.ahead))} of its queue ({', '.join(r.ahead)}); "
            f"{r.blocker}, first in line, does not fit, and without backfill no job ranked "
            f"below it starts."
        )
    return text + "it fits now; it starts at the next scheduling round."


def _full(r: WaitReason) -> str:
    whose = {"cluster": "the cluster", "shared pool": "the shared pool"}.get(r.scope)
    if whose is None and r.scope.startswith("quota"):
        vc = r.scope.removeprefix("quota of VC ")
        return (
            f"its VC {vc} is at its quota: {r.capacity - r.free} of its "
            f"{_gpus(r.capacity)} are in use, {r.free} free, and it needs {r.need}."
        )
    whose = whose or f"its {r.scope}"
    lent = r.detail.get("lent", 0)
    by_others = f" ({lent} by jobs of other VCs that borrowed them)" if lent else ""
    return (
        f"{whose} is full: {r.capacity - r.free} of its {_gpus(r.capacity)} are in use"
        f"{by_others}, {r.free} free, and it needs {r.need}."
    )


def _borrowing(r: WaitReason) -> str:
    """What borrowing can do for the job (empty without borrowing)."""
    if "borrow_idle" not in r.detail:
        return ""
    idle, room, cap = (r.detail[k] for k in ("borrow_idle", "borrow_room", "borrow_cap"))
    if room < r.need:
        return f" Borrowing cannot help: its VC may borrow {room} more GPUs (limit {cap})."
    if not idle:
        return " Borrowing cannot help: no GPU of another VC is idle."
    if idle < r.need:
        return f" Borrowing cannot help: only {_gpus(idle)} of other VCs are idle."
    return f" Borrowing: {_gpus(idle)} of other VCs are idle; it may borrow up to {room}."


def _outlook(r: WaitReason) -> str:
    """What preemption can do for the job (empty without preemption)."""
    outlook = r.detail.get("outlook")
    victims = ", ".join(r.detail.get("victims", ()))
    if outlook == "no_victims":
        held = r.detail["victim_gpus"]
        if not held:
            return " Preemption cannot help: every running job of its queue is ranked above it."
        return f" Preemption cannot help: the jobs ranked below it hold only {_gpus(held)}."
    if outlook == "protected":
        return (
            f" Preemption: jobs ranked below it ({victims}) hold enough GPUs but may not be "
            f"evicted before {_seconds(r.detail['ready'])} (a (re)started job first runs one "
            f"quantum); the first full round after that is at {_seconds(r.detail['next_round'])}."
        )
    if outlook == "can_preempt":
        return (
            f" Preemption: it may evict jobs ranked below it ({victims}) at the next full "
            f"round, {_seconds(r.detail['next_round'])}."
        )
    return ""
