"""Why a job waits, in words: the sentences of :class:`~analysim.results.wait_reason.WaitReason`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysim.results.readable import moment

if TYPE_CHECKING:
    from analysim.results.wait_reason import WaitReason


def _seconds(t: float) -> str:
    return moment(t)


def gpus_text(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _jobs(n: int) -> str:
    return f"{n} waiting job" if n == 1 else f"{n} waiting jobs"


def describe(r: WaitReason) -> str:
    head = f"{r.job_id} at {_seconds(r.time)}: "
    if r.kind == "not_submitted":
        return head + "not waiting: it has not been submitted yet."
    if r.kind == "running":
        return head + f"not waiting: it is running on {r.detail.get('nodes')}."
    if r.kind == "done":
        return head + "not waiting: it has finished."
    if r.kind == "failed":
        return head + "not waiting: it failed for good (its own failure, without retry)."
    if r.kind == "unschedulable":
        return head + "it never runs: " + _never(r)
    text = head
    if r.failed_at is not None:
        what = (
            "its own failure" if r.failed_node is None else f"the failure of node {r.failed_node}"
        )
        text += (
            f"it was killed by {what} at {_seconds(r.failed_at)} and restarts from its last "
            "checkpoint. It waits because "
        )
    elif r.preempted_by or r.preempted_at is not None:
        by = ", ".join(r.preempted_by) or "a higher-ranked job"
        what = "its borrowed GPUs were reclaimed" if r.reclaimed else "it was preempted"
        text += f"{what} by {by} at {_seconds(r.preempted_at)}. It waits because "
    else:
        text += "it waits because "
    if r.kind == "full":
        return text + _full(r) + _own_room(r) + _outlook(r) + _borrowing(r) + _reserved(r)
    if r.kind == "reserved":
        return text + (
            f"it would delay {r.blocker}: EASY backfill has promised {r.blocker}, ranked above "
            f"it, the GPUs it needs from {_seconds(r.detail['reserved_at'])}, and {r.job_id} "
            "would still be running then on some of them."
        )
    if r.kind == "fragmented" and "resources" in r.detail:
        return (
            text
            + (
                f"its nodes have enough {_kinds(list(r.detail['resources']))} free in all, but "
                f"no node has room for all it asks at once (placement {r.detail['placement']}): "
                + _rooms(r.detail["resources"], list(r.detail["resources"]))
                + "."
            )
            + _own_room(r)
            + _outlook(r)
            + _reserved(r)
        )
    if r.kind == "fragmented":
        return (
            text
            + (
                f"enough GPUs are free but fragmented: {gpus_text(r.free)} are free to it over "
                f"{r.detail['nodes_with_free']} nodes, at most {r.most_on_one_node} on one node, "
                f"and placement {r.detail['placement']} finds no place for {r.need}."
            )
            + _own_room(r)
            + _outlook(r)
            + _reserved(r)
        )
    if r.kind == "ranked_behind":
        why = {"quota": "its VC's quota", "fragmented": "fragmentation"}.get(
            r.detail.get("blocker_reason", ""), "too few free GPUs"
        )
        return text + (
            f"it is ranked behind {r.blocker} in its queue; {r.blocker}, first in line, does "
            f"not fit ({why}), and without backfill no job ranked below it starts."
        )
    return text + (
        f"its group's last scheduling round, at {_seconds(r.detail['round'])}, did not try it."
    )


def _never(r: WaitReason) -> str:
    """Why a job can never run: a GPU type its VC's nodes lack, more GPUs than they have
    (or than its quota), or (resource mode) more than any one of them can hold."""
    d = r.detail
    if "most" not in d:  # a WaitReason made by hand
        return "it asks for more than its VC could ever give."
    if d["quota"] is None:
        where, have = f"the nodes VC {d['vc']} may use", "have"
    else:
        where, have = "the shared pool", "has"
    spec, need, most = d["gpu_type"], r.need, d["most"]
    if spec is not None and most == 0:
        kinds = "none" if len(d["types"]) > 1 else "no"
        return (
            f"it asks for GPU type {spec}, which {kinds} of {where} "
            f"{'have' if kinds == 'none' else 'has'} (they have {', '.join(d['types'])})."
        )
    if spec is not None and need > most and d["gpus_any_type"] >= need:
        return (
            f"it asks for {gpus_text(need)} of type {spec}; {where} {have} only {most} of that "
            "type."
        )
    if d["quota"] is not None and need > d["quota"]:
        return (
            f"it asks for {gpus_text(need)}, more than VC {d['vc']}'s quota of {d['quota']} (the "
            f"shared pool has {d['gpus_any_type']})."
        )
    if need > most:
        return f"it asks for {gpus_text(need)}; {where} {have} {most} in all."
    return (
        f"no node of {where} could hold it even when empty (it asks for more GPU milli, CPU or "
        "memory than one node has, or more GPU milli than its VC's quota)."
    )


def _reserved(r: WaitReason) -> str:
    """EASY backfill: the reservation a queue's first job holds."""
    at = r.detail.get("reserved_at")
    if at is None:
        return ""
    return (
        f" EASY backfill has GPUs reserved for it from {_seconds(at)}: no job ranked below it "
        "may start if that would delay it."
    )


def _full(r: WaitReason) -> str:
    if "resources" in r.detail:
        return _full_resources(r)
    whose = {"cluster": "the cluster", "shared pool": "the shared pool"}.get(r.scope)
    if whose is None and r.scope.startswith("quota"):
        vc = r.scope.removeprefix("quota of VC ")
        return (
            f"its VC {vc} is at its quota: {r.capacity - r.free} of its "
            f"{gpus_text(r.capacity)} are in use, {r.free} free, and it needs {r.need}."
        )
    whose = whose or f"its {r.scope}"
    lent = r.detail.get("lent", 0)
    by_others = f" ({lent} by jobs of other VCs that borrowed them)" if lent else ""
    down = r.detail.get("down", 0)
    on_down = f", {down} on nodes down (failed)" if down else ""
    spare = r.detail.get("spare", 0)
    on_down += f", {spare} on spare nodes (held for failures)" if spare else ""
    in_use = r.capacity - r.free - down - spare
    return (
        f"{whose} is full: {in_use} of its {gpus_text(r.capacity)} are in use"
        f"{by_others}{on_down}, {r.free} free, and it needs {r.need}."
    )


def _full_resources(r: WaitReason) -> str:
    """Resource mode: which of GPU milli, CPU and memory its nodes (or its quota) lack."""
    rooms = r.detail["resources"]
    if r.scope.startswith("quota"):
        whose = f"its VC {r.scope.removeprefix('quota of VC ')}'s quota"
    else:
        whose = {"cluster": "the cluster", "shared pool": "the shared pool"}.get(r.scope)
        whose = whose or f"its {r.scope}"

    short = [name for name, (have, used, asks) in rooms.items() if have - used < asks]
    if not short:
        return (
            f"{whose} had too little GPU milli, CPU or memory in all when it was tried (jobs "
            "have moved since in that round); now " + _rooms(rooms, list(rooms)) + "."
        )
    rest = [name for name in rooms if name not in short]
    text = f"{whose} has too little {_kinds(short)} left in all: " + _rooms(rooms, short)
    if rest:
        text += " (" + _rooms(rooms, rest) + ")"
    return text + "."


def _kinds(names: list[str]) -> str:
    """``GPU``, ``GPU and CPU``, ``GPU, CPU and memory``."""
    kinds = [name.split()[0] for name in names]
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def _rooms(rooms: dict[str, tuple[int, int, int]], names: list[str]) -> str:
    """``used of have <resource> in use, free, it asks for``, for each of ``names``."""
    words = []
    for name in names:
        have, used, asks = rooms[name]
        words.append(
            f"{used:,} of {have:,} {name} in use, {have - used:,} free, it asks for {asks:,}"
        )
    return "; ".join(words)


def _own_room(r: WaitReason) -> str:
    """What reclaiming and migration tried for the job in vain (empty if neither was)."""
    text = ""
    if r.detail.get("reclaim_failed"):
        text += " Reclaiming the GPUs its VC lent to other VCs would not make room for it."
    if r.detail.get("migration_failed"):
        text += " Migration found no moves of running jobs that make room for it."
    return text


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
        return f" Borrowing cannot help: only {gpus_text(idle)} of other VCs are idle."
    return f" Borrowing: {gpus_text(idle)} of other VCs are idle; it may borrow up to {room}."


def _outlook(r: WaitReason) -> str:
    """What preemption did and does for the job (empty without preemption)."""
    outlook = r.detail.get("outlook")
    if outlook is None:
        return ""
    if outlook == "no_room":
        text = " Preemption found no lower-ranked job it may evict that makes room for it."
    elif outlook == "protected":
        text = (
            " Preemption: no lower-ranked job it may evict makes room for it, and lower-ranked "
            "jobs are protected (a (re)started job first runs one quantum); the next "
            f"protection ends at {_seconds(r.detail['ready'])}."
        )
    else:
        text = " Preemption is tried at full rounds only."
    after = r.detail.get("next_round")
    if after is None:
        return text
    victims = r.detail.get("victims", ())
    if victims:
        return text + f" At the next full round, {_seconds(after)}, it evicts {', '.join(victims)}."
    return text + f" The next full round is at {_seconds(after)}."
