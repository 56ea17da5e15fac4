"""Why a job waits, worked out from a run's records at one moment: ``WaitReason`` and how."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysim.inputs.config import SimConfig
from analysim.inputs.domains import allowed_types, build_partition
from analysim.results.result import parse_gpu_list
from analysim.results.spare_pool import spare_nodes_at
from analysim.results.spells import RUN_EVENTS, events_until, gpu_snapshot, status_at
from analysim.results.wait_words import describe

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.decisions import Decisions
    from analysim.results.result import Result

#: what a try found in vain besides its reason (columns of ``Decisions.tries``)
FAILED_FLAGS = ("borrow_failed", "reclaim_failed", "migration_failed")
#: the resources a resource-mode explanation words the room in
RESOURCES = ("GPU milli", "CPU milli", "memory MiB")


@dataclass(frozen=True)
class WaitReason:
    """Why ``job_id`` is (or is not) waiting at ``time``: a ``kind`` and the facts behind it.

    ``kind`` is one of ``not_submitted``, ``running``, ``done``, ``failed`` (it failed for
    good: ``docs/failures.md``), ``unschedulable``, ``full``
    (fewer GPUs free to it than it needs; ``scope`` says whose: ``"VC a"``, ``"quota of VC
    a"``, ``"cluster"``), ``fragmented``, ``ranked_behind`` (``blocker``: the first job of its
    queue the round tried in vain; ``ahead`` names it) or ``next_round`` (its group's last
    round did not try it, and nothing blocked its queue), or ``reserved`` (EASY backfill: it
    fits, but would delay the reservation of ``blocker``, ranked above it).
    ``detail["round"]`` is the time of that round, the engine's last decision about the job.
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
    #: failures (docs/failures.md): its last stop was a kill by a failure at this time, of
    #: this node (None: the job's own failure)
    failed_at: float | None = None
    failed_node: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def waiting(self) -> bool:
        return self.kind not in {"not_submitted", "running", "done", "unschedulable", "failed"}

    @property
    def text(self) -> str:
        """The reason as sentences."""
        return describe(self)


def _capacity_of(values: list[int] | None, nodes: np.ndarray) -> int | None:
    """The total of a node capacity over ``nodes`` (None: the nodes do not limit it)."""
    return None if values is None else int(np.asarray(values, dtype=np.int64)[nodes].sum())


# -- the state at one moment ----------------------------------------------------------------------
class RunAtMoment:
    """The state of a run after the decisions at ``time``, rebuilt from its records, and
    ``reason(job_id)``: why a job is (or is not) waiting then."""

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
        self.status = status_at(result, time)
        self.index = {j: i for i, j in enumerate(self.jobs["job_id"].tolist())}
        self._events = events_until(result, time)

    # -- free GPUs --------------------------------------------------------------------------
    def snapshot(self) -> pd.DataFrame:
        if getattr(self, "_snapshot", None) is None:
            self._snapshot = gpu_snapshot(self.result, self.time, self.cluster, self.spells)
        return self._snapshot

    def free_per_node(self) -> np.ndarray:
        snap = self.snapshot()
        free = snap["job_id"].isna().groupby(snap["node"], sort=False).sum()
        free = free.reindex(self.cluster.nodes["node"]).fillna(0).to_numpy(dtype=np.int64)
        return np.where(self.down_nodes() | self.spare_nodes(), 0, free)

    def spare_nodes(self) -> np.ndarray:
        """Per node: whether it is held as a spare now (``results/spare_pool.py``)."""
        events = events_until(self.result, self.time)
        return spare_nodes_at(self.config.spare_nodes, self.cluster, events)

    def down_nodes(self) -> np.ndarray:
        """Per node: whether it is down now (failures: its last node event is node_down)."""
        names = self.cluster.nodes["node"].astype(str)
        events = events_until(self.result, self.time)
        kinds = events["event"].astype(str)
        nodal = events[kinds.isin(("node_down", "node_up"))]
        if nodal.empty:
            return np.zeros(len(names), dtype=bool)
        last = dict(zip(nodal["nodes"].astype(str), nodal["event"].astype(str), strict=True))
        return names.map(last).eq("node_down").to_numpy()

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
            detail = self._never(j) if kind == "unschedulable" else {}
            detail["nodes"] = self._nodes_of(job_id)
            return WaitReason(kind=kind, **base, detail=detail)
        base.update(self._preemption(job_id))
        decided = _LastRound(self.decisions(), j, self.time)
        tried = decided.try_of(j)
        domain = self.partition.domains[self.partition.job_domain[j]]
        free_nodes = self.free_per_node()[domain.nodes]
        vc = int(self.partition.job_vc[j])
        detail: dict[str, Any] = {"round": decided.time}
        if tried is None and decided.nothing_free:
            tried = {"reason": "full", "preemption": "", "free": 0}
            tried.update(dict.fromkeys(FAILED_FLAGS, False))
            detail["nothing_free"] = True
        if tried is not None:
            detail["reason"] = tried["reason"]
            detail.update({flag: True for flag in FAILED_FLAGS[1:] if tried[flag]})
            detail.update(self._outlook(decided, j, tried))
            head = str(tried.get("reserved_for") or "")
            if tried["reason"] == "reserved":
                detail["reserved_at"] = float(tried["reserved_at"])
                return WaitReason(
                    kind="reserved",
                    free=int(tried["free"]),
                    ahead=(head,),
                    blocker=head,
                    detail=detail,
                    **base,
                )
            if head == job_id:  # EASY backfill: the reservation its try made
                detail["reserved_at"] = float(tried["reserved_at"])
            capacity, scope = self._room(domain, vc, tried["reason"])
            free = self._free_now(domain, vc, free_nodes, tried["reason"])
            if (free >= need) != (tried["reason"] == "fragmented"):
                # GPUs moved later in that round (backfill, evictions): as the try found them
                free = int(tried["free"])
            if self.result.resource_mode and tried["reason"] in ("full", "fragmented"):
                detail["resources"] = self.resources(j, domain, quota=False)
            if tried["reason"] == "fragmented":
                return WaitReason(
                    kind="fragmented",
                    free=free,
                    capacity=capacity,
                    scope=scope,
                    most_on_one_node=int(free_nodes.max(initial=0)),
                    detail={
                        "placement": self.config.placement,
                        "nodes_with_free": int((free_nodes > 0).sum()),
                        **detail,
                    },
                    **base,
                )
            lent = self.lent(domain.nodes) if scope.startswith(("VC", "shared")) else 0
            if tried["reason"] != "quota":
                gpus = self.cluster.nodes["gpus"].to_numpy()[domain.nodes]
                down = int(gpus[self.down_nodes()[domain.nodes]].sum())
                if down:
                    detail["down"] = down
                spare = int(gpus[self.spare_nodes()[domain.nodes]].sum())
                if spare:
                    detail["spare"] = spare
            if self.result.resource_mode and tried["reason"] == "quota":
                detail["resources"] = self.resources(j, domain, quota=True)
            if tried["borrow_failed"]:
                detail.update(self._borrowing_outlook(vc, domain))
            return WaitReason(
                kind="full",
                free=free,
                capacity=capacity,
                scope=scope,
                detail={"lent": lent, **detail},
                **base,
            )
        blocker = decided.blocker_of(j)
        if blocker is not None:
            name, why = blocker
            return WaitReason(
                kind="ranked_behind",
                free=int(free_nodes.sum()),
                ahead=(name,),
                blocker=name,
                detail={"blocker_reason": why, **detail},
                **base,
            )
        return WaitReason(kind="next_round", free=int(free_nodes.sum()), detail=detail, **base)

    def _never(self, j: int) -> dict[str, Any]:
        """What a job that can never run asks beyond what its VC may ever give: the GPU
        type it accepts, and the GPUs and GPU types of the nodes its VC may use."""
        domain = self.partition.domains[self.partition.job_domain[j]]
        nodes = self.cluster.nodes
        vc = self.partition.vc_names[domain.vc]
        if not self.cluster.partitioned:
            mine = nodes
        elif domain.quota is not None:
            mine = nodes[nodes["vc"].isna()]
        else:
            mine = nodes[nodes["vc"] == vc]
        accepted = allowed_types(domain.gpu_type)
        return {
            "vc": vc,
            "quota": domain.quota,
            "most": int(domain.max_gpus),
            "gpu_type": None if accepted is None else "|".join(sorted(accepted)),
            "types": sorted(set(mine["gpu_type"].astype(str))),
            "gpus_any_type": int(mine["gpus"].sum()),
        }

    def decisions(self) -> Decisions:
        known = getattr(self.result, "decisions", None)
        if known is None:
            raise ValueError(
                "explain: this result has no records of the engine's decisions (it was saved "
                "by a version that did not keep them): run it again and explain that Result"
            )
        return known

    def _outlook(self, decided: _LastRound, j: int, tried: dict[str, Any]) -> dict[str, Any]:
        """With preemption: what it found for the job at that round, and when its group's
        next full round came and whom the job evicted at it (all from the records)."""
        if not self.config.preemption:
            return {}
        out: dict[str, Any] = {"outlook": tried["preemption"] or "not_full"}
        if tried["preemption"] == "protected":
            out["ready"] = decided.protected_until
        after = decided.next_full_round()
        if after is not None:
            out["next_round"] = after
            events = self.result.events
            if "cause" in events.columns:
                evicted = events[
                    (events["time"] == after)
                    & events["event"].astype(str).isin(("preempt", "reclaim"))
                    & (events["cause"] == self.jobs.at[j, "job_id"])
                ]
                out["victims"] = tuple(str(v) for v in evicted["job_id"])
        return out

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

    def resources(self, j: int, domain: Any, quota: bool) -> dict[str, tuple[int, int, int]]:
        """Resource mode: per resource (GPU milli, CPU milli, memory MiB), what the job's
        nodes have (or its VC's quota, in GPU milli), what running jobs hold of it now, and
        what job ``j`` asks for; the engine's rule for a try found ``full`` is that one of
        them is short in all (``docs/semantics.md``)."""
        jobs = self.jobs
        asks = {
            "GPU milli": int(jobs.at[j, "num_gpus"]) * int(jobs.at[j, "gpu_milli"]),
            "CPU milli": int(jobs.at[j, "cpu_milli"]),
            "memory MiB": int(jobs.at[j, "memory_mib"]),
        }
        if quota:
            vc = self.partition.vc_names[int(self.partition.job_vc[j])]
            own = self._running_own(vc)
            used = int((jobs["num_gpus"] * jobs["gpu_milli"])[own].sum())
            return {"GPU milli": (int(domain.quota) * 1000, used, asks["GPU milli"])}
        layout = self.result.meta["nodes"]
        nodes = domain.nodes
        capacity = {
            "GPU milli": int(np.asarray(layout["gpus"])[nodes].sum()) * 1000,
            "CPU milli": _capacity_of(layout.get("cpu_milli"), nodes),
            "memory MiB": _capacity_of(layout.get("memory_mib"), nodes),
        }
        held = self._held_per_node()
        return {
            name: (capacity[name], int(held[name][nodes].sum()), asks[name])
            for name in capacity
            if capacity[name] is not None
        }

    def _running_own(self, vc: str) -> np.ndarray:
        """A mask of the jobs of ``vc`` running now on GPUs of their own (not borrowed)."""
        running = self.status == "running"
        mine = running & (self.jobs["vc"] == vc).to_numpy()
        if "borrowed" in self._events.columns:
            last = self._last_placements()
            lent = set(last.index[last["borrowed"].astype(bool)])
            mine &= ~self.jobs["job_id"].isin(lent).to_numpy()
        return mine

    def _last_placements(self) -> pd.DataFrame:
        """Each job's last start, resume or migration up to now, indexed by job id."""
        placed = self._events[self._events["event"].astype(str).isin(RUN_EVENTS)]
        return placed.drop_duplicates("job_id", keep="last").set_index("job_id")

    def _held_per_node(self) -> dict[str, np.ndarray]:
        """Resource mode: GPU milli, CPU milli and memory held on each node by the jobs
        running now, split over a job's nodes as the engine does (per GPU on each node)."""
        layout = self.result.meta["nodes"]
        index = {name: i for i, name in enumerate(layout["node"])}
        held = {name: np.zeros(len(index), dtype=np.int64) for name in RESOURCES}
        last = self._last_placements()
        for j in np.flatnonzero(self.status == "running"):
            job = self.jobs.iloc[j]
            need, milli = int(job["num_gpus"]), int(job["gpu_milli"])
            cpu, mem = int(job["cpu_milli"]), int(job["memory_mib"])
            where = last.loc[job["job_id"]]
            if need == 0:  # a CPU-only job: one node
                node = index[str(where["nodes"])]
                held["CPU milli"][node] += cpu
                held["memory MiB"][node] += mem
                continue
            per_node: dict[int, int] = {}
            for name, _ in parse_gpu_list(where["gpus"]):
                node = index[name]
                per_node[node] = per_node.get(node, 0) + 1
            for node, count in per_node.items():
                held["GPU milli"][node] += count * milli
                held["CPU milli"][node] += -(-cpu // need) * count
                held["memory MiB"][node] += -(-mem // need) * count
        return held

    def _free_now(self, domain: Any, vc: int, free_nodes: np.ndarray, reason: str) -> int:
        """The GPUs free to the job now: in its VC's quota (``reason`` "quota"), else on its
        nodes."""
        if reason == "quota":
            return int(domain.quota - self.own_used()[vc])
        return int(free_nodes.sum())

    def _room(self, domain: Any, vc: int, reason: str) -> tuple[int, str]:
        """The capacity the GPUs free to a job of ``domain`` come from, and whose it is: its
        VC's quota when the engine found the quota in the way (``reason``), else the
        nodes'."""
        name = self.partition.vc_names[vc]
        pool_capacity = int(domain.topology.capacity.sum())
        if domain.quota is not None:
            if reason == "quota":
                return domain.quota, f"quota of VC {name}"
            return pool_capacity, "shared pool"
        if self.cluster.partitioned:
            return pool_capacity, f"VC {name}"
        return pool_capacity, "cluster"

    def _nodes_of(self, job_id: str) -> str | None:
        mine = self._events[self._events["job_id"] == job_id]
        placed = mine[mine["event"].astype(str).isin(RUN_EVENTS)]
        return None if placed.empty else str(placed["nodes"].iloc[-1])

    def _preemption(self, job_id: str) -> dict[str, Any]:
        """Who preempted the job, if its last stop was a preemption or a reclaim."""
        mine = self._events[self._events["job_id"] == job_id]
        if not mine.empty and str(mine["event"].iloc[-1]) == "fail":
            last = mine.iloc[-1]
            node = last.get("from_nodes")
            return {
                "failed_at": float(last["time"]),
                "failed_node": str(node) if isinstance(node, str) else None,
            }
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


class _LastRound:
    """The last scheduling round of a job's group at or before a time, as recorded."""

    def __init__(self, decisions: Decisions, j: int, time: float) -> None:
        self.decisions, self.j = decisions, j
        rounds = decisions.rounds
        group = int(decisions.job_group[j])
        self.group_rounds = np.flatnonzero(rounds["group"].to_numpy() == group)
        times = rounds["time"].to_numpy()[self.group_rounds]
        at = int(np.searchsorted(times, time + 1e-9, side="right")) - 1
        if at < 0:
            raise ValueError(f"explain: no scheduling round of job {j}'s group by t={time:g} s")
        self.at = at
        row = rounds.iloc[self.group_rounds[at]]
        self.time = float(row["time"])
        self.nothing_free = bool(row["nothing_free"])
        self.protected_until = float(row["protected_until"])
        self.tries = decisions.tries.iloc[int(row["first"]) : int(row["stop"])]

    def try_of(self, j: int) -> dict[str, Any] | None:
        """The job's last try in the round, if the round tried it, with what any of its
        tries there found in vain (borrowing, reclaiming, migrating)."""
        mine = self.tries[self.tries["job"] == j]
        if mine.empty:
            return None
        last = mine.iloc[-1].to_dict()
        for flag in FAILED_FLAGS:
            last[flag] = bool(mine[flag].any())
        return last

    def blocker_of(self, j: int) -> tuple[str, str] | None:
        """The job of ``j``'s queue that the round tried last in vain (the head of the
        queue, which without backfill no job behind it passes), and why; None if none."""
        queue = self.decisions.job_queue
        tries = self.tries
        same = tries[(queue[tries["job"].to_numpy()] == queue[j]) & (tries["job"] != j)]
        if same.empty:
            return None
        last = same.iloc[-1]
        return str(last["job_id"]), str(last["reason"])

    def next_full_round(self) -> float | None:
        """The time of the group's next full round after this one, if the records reach it."""
        rounds = self.decisions.rounds
        later = rounds.iloc[self.group_rounds[self.at + 1 :]]
        later = later[later["full"].to_numpy()]
        return None if later.empty else float(later["time"].iloc[0])
