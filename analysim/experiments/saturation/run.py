"""The saturation experiment of FGD (ATC'23): tasks arrive one after another and never
leave; allocation and fragmentation are recorded against the arrived GPU demand.

:func:`saturation_log` places every arrival and returns one row per arrival;
:func:`saturation_curve` reads it at each integer percent of arrived demand, as the peer's
analysis scripts do; :func:`saturate` does both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysim.inputs.validation import MAX_SEED, bounded
from analysim.sharing.fragmentation import FragMeter, typical_shapes
from analysim.sharing.placers import SHARE_PLACERS, Context, Request, SharePlacer
from analysim.sharing.resources import (
    Nodes,
    NodeState,
    ResourceError,
    Tasks,
    access_matrix,
    check_tasks_fit_somewhere,
    task_kind,
)
from analysim.traces.report import SharedTrace

log = logging.getLogger(__name__)

CURVE_COLUMNS = ("arrived_pct", "allocated_pct", "frag_amount_pct", "frag_ratio_pct", "failed_pods")
_CLONE = re.compile(r"-tuned-\d+$")


def _as_tables(workload: Any, cluster: Any) -> tuple[Tasks, Nodes]:
    if isinstance(workload, (str, Path)):
        from analysim.traces.openb import read_openb_tasks

        workload = read_openb_tasks(workload)
    nodes_frame = cluster
    if isinstance(workload, SharedTrace):
        nodes_frame = workload.nodes if cluster is None else cluster
        workload = workload.tasks
    if hasattr(workload, "jobs") and not isinstance(workload, pd.DataFrame):
        workload = workload.jobs
    if isinstance(nodes_frame, SharedTrace):
        nodes_frame = nodes_frame.nodes
    if nodes_frame is None:
        raise ResourceError("saturate: no cluster given (a node table or a SharedTrace)")
    if hasattr(nodes_frame, "nodes") and not isinstance(nodes_frame, pd.DataFrame):
        nodes_frame = nodes_frame.nodes
    return Tasks.from_frame(workload), Nodes.from_frame(nodes_frame)


MAX_INFLATE = 100.0
"""Largest ``inflate``: demand up to 100 x the GPU capacity (the FGD study goes to 1.3)."""
MAX_SATURATION_BYTES = 2 * 2**30
"""Most memory a saturation run may take for its per-arrival log (2 GiB)."""
BYTES_PER_ARRIVAL = 160
"""Memory of one arrival: its row of the log (nine columns, two of them text) and its
place in the arrival order."""


def check_inflate(inflate: Any) -> float:
    """``inflate`` as a float in ``(0, MAX_INFLATE]``; a ValueError naming it otherwise
    (text, None or a bool are not numbers)."""
    return bounded(inflate, "saturate: inflate", low=0.0, high=MAX_INFLATE, low_open=True)


def check_seed(seed: Any) -> int:
    """``seed`` as a whole number in ``[0, MAX_SEED]``; a ValueError naming it otherwise."""
    return int(bounded(seed, "saturate: seed", low=0, high=MAX_SEED, whole=True))


def estimated_arrivals(tasks: Tasks, nodes: Nodes, inflate: float) -> int:
    """How many arrivals the sampling will make: every task, plus the clones (of the mean
    GPU demand per task) that bring the demand up to ``inflate`` x the capacity."""
    total = tasks.total_gpu_milli().astype(float)
    target = inflate * nodes.total_gpu_milli
    missing = target - float(total.sum())
    if missing <= 0 or len(tasks) == 0:
        return len(tasks)
    return len(tasks) + int(np.ceil(missing / max(float(total.mean()), 1e-300)))


def check_saturation_size(tasks: Tasks, nodes: Nodes, inflate: float, sampling: bool) -> None:
    """Refuse, before placing anything, a run that cannot end or would not fit in memory: no
    GPUs in the cluster, no task asking for GPUs while the demand must grow, or more
    arrivals than :data:`MAX_SATURATION_BYTES` holds (the estimate, the limit and how to
    lower it in the message). Without ``sampling`` (given arrivals) only the first two."""
    if len(tasks) == 0:
        raise ResourceError("saturate: the workload has no tasks")
    if nodes.total_gpu_milli == 0:
        raise ResourceError(
            "saturate: cluster: no node has GPUs (column 'gpus' sums to 0); the saturation "
            "experiment measures GPU allocation, give nodes with GPUs"
        )
    if not sampling:
        return
    demand = int(tasks.total_gpu_milli().sum())
    if demand == 0:
        raise ResourceError(
            "saturate: workload: no task asks for GPUs (num_gpus is 0 for all), so the arrived "
            "GPU demand never reaches inflate x the capacity"
        )
    arrivals = estimated_arrivals(tasks, nodes, inflate)
    need = arrivals * BYTES_PER_ARRIVAL
    if need > MAX_SATURATION_BYTES:
        per_task = float(tasks.total_gpu_milli().mean())
        most = (MAX_SATURATION_BYTES / BYTES_PER_ARRIVAL) * per_task / nodes.total_gpu_milli
        raise ResourceError(
            f"saturate: inflate={inflate:g} on {nodes.total_gpu_milli // 1000:,} GPUs needs "
            f"about {arrivals:,} arrivals ({need / 2**30:,.1f} GiB); the limit is "
            f"{MAX_SATURATION_BYTES / 2**30:g} GiB: lower inflate to at most {most:.3g}, or use "
            "a smaller cluster"
        )


def sample_arrivals(
    tasks: Tasks, capacity_milli: int, inflate: float, rng: np.random.Generator
) -> np.ndarray:
    """The peer's arrival order with our generator (its ``SortClusterPods`` and
    ``TunePodsByNodeTotalResource``): every task in a shuffled order (of the tasks sorted by
    name), then tuned to ``inflate`` x capacity.

    * Demand below the target (**tune-up**): clones of tasks drawn uniformly from the trace
      are appended while the demand stays within the target. As in the peer, the stop test
      adds the drawn task's milli per GPU (not its total) to the demand so far.
    * Demand above the target (**tune-down**, e.g. openb ``multigpu30``-``50`` at 1.3):
      tasks are removed from the shuffled order, each drawn uniformly among those left, until
      the demand (totals) is at most the target; the others keep their order.
    * Demand equal to the target: the shuffled order as it is.
    """
    by_name = np.argsort(tasks.names, kind="stable")
    order = by_name[rng.permutation(len(by_name))]
    total_milli = tasks.total_gpu_milli()
    demand = int(total_milli.sum())
    target = inflate * capacity_milli
    if demand > target:
        return _tune_down(order, total_milli, demand, target, rng)
    if demand == target:
        return order
    clones: list[np.ndarray] = []
    while demand <= target:
        draw = by_name[rng.integers(len(by_name), size=4096)]
        before = demand + np.concatenate(([0], np.cumsum(total_milli[draw])[:-1]))
        stop = np.flatnonzero(before + tasks.gpu_milli[draw] > target)
        if stop.size:
            clones.append(draw[: stop[0]])
            break
        clones.append(draw)
        demand = int(before[-1] + total_milli[draw[-1]])
    return np.concatenate([order, *clones]) if clones else order


def _tune_down(
    order: np.ndarray,
    total_milli: np.ndarray,
    demand: int,
    target: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Remove uniformly drawn tasks from ``order`` until the demand is at most ``target``."""
    kept = order.tolist()
    while demand > target:
        if not kept:  # cannot happen with a positive target; guards a bad capacity
            raise ResourceError(f"saturate: no task left while demand {demand} > target {target}")
        gone = kept.pop(int(rng.integers(len(kept))))
        demand -= int(total_milli[gone])
    return np.array(kept, dtype=order.dtype)


def arrivals_from_names(tasks: Tasks, names: Sequence[str]) -> np.ndarray:
    """Task indices for a list of arriving names; ``<name>-tuned-N`` is a clone of ``name``."""
    index = {n: i for i, n in enumerate(tasks.names.tolist())}
    out = np.empty(len(names), dtype=np.int64)
    for k, name in enumerate(names):
        base = _CLONE.sub("", str(name))
        if base not in index:
            raise ResourceError(f"arrivals: row {k} names task {name!r}, not in the workload")
        out[k] = index[base]
    return out


def read_peer_arrivals(path: str | Path) -> list[str]:
    """The ``pod_name`` column of a peer arrival-order file (``arrival_idx, pod_name``)."""
    frame = pd.read_csv(path)
    if "pod_name" not in frame.columns:
        raise ResourceError(f"{path}: no column 'pod_name' (found {list(frame.columns)})")
    return frame.sort_values("arrival_idx")["pod_name"].astype(str).tolist()


def read_peer_tie_break(path: str | Path) -> dict[str, str]:
    """``{node: prefix}`` from a peer node-prefix file (``tiebreak_prefix, node_name``)."""
    frame = pd.read_csv(path, dtype={"tiebreak_prefix": str})
    for column in ("tiebreak_prefix", "node_name"):
        if column not in frame.columns:
            raise ResourceError(f"{path}: no column {column!r} (found {list(frame.columns)})")
    return dict(zip(frame["node_name"].astype(str), frame["tiebreak_prefix"], strict=True))


def peer_order_files(folder: str | Path, inflate: float = 1.3):
    """``seed -> (arrival file, prefix file)`` for a folder of the peer's seed orders
    (``*_tune<inflate>_seed<N>_arrivals.csv``, ``*_seed<N>_node_prefix.csv``), for
    ``saturate_sweep(orders=...)``."""
    folder = Path(folder)

    def files(seed: int) -> tuple[Path, Path]:
        arrivals = sorted(folder.glob(f"*_tune{inflate:g}_seed{seed}_arrivals.csv"))
        prefixes = sorted(folder.glob(f"*_seed{seed}_node_prefix.csv"))
        if len(arrivals) != 1 or len(prefixes) != 1:
            raise ResourceError(
                f"peer orders: expected one arrival file and one prefix file for seed {seed} "
                f"in {folder}, found {[p.name for p in arrivals + prefixes]}"
            )
        return arrivals[0], prefixes[0]

    return files


def _tie_rank(
    nodes: Nodes, tie_break: Mapping[str, str] | str | Path | None, rng: np.random.Generator
) -> np.ndarray:
    if tie_break is None:  # the peer's rule: a random prefix per node, drawn per run
        by_name = np.argsort(nodes.names.astype(str), kind="stable")
        rank = np.empty(len(nodes), dtype=np.int64)
        rank[by_name] = rng.permutation(len(nodes))
        return rank
    if isinstance(tie_break, str) and tie_break == "name":
        labels = nodes.names.astype(str)
    else:
        if not isinstance(tie_break, Mapping):
            tie_break = read_peer_tie_break(tie_break)
        missing = [n for n in nodes.names if n not in tie_break]
        if missing:
            raise ResourceError(
                f"tie_break: no prefix for node {missing[0]!r} ({len(missing)} node(s) without one)"
            )
        labels = np.array([f"{tie_break[n]}-{n}" for n in nodes.names], dtype=str)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.argsort(labels, kind="stable")] = np.arange(len(labels))
    return rank


def saturation_log(
    workload: Any,
    cluster: Any = None,
    *,
    placement: str | Mapping | SharePlacer = "fgd",
    inflate: float = 1.3,
    seed: int = 0,
    arrivals: Sequence[str] | str | Path | None = None,
    tie_break: Mapping[str, str] | str | Path | None = None,
    reference: bool = False,
) -> pd.DataFrame:
    """Place the arriving tasks one by one; one row per arrival.

    Columns: ``arrival_idx, task, node`` (empty when the task failed), ``gpu_index``
    (``"3"`` or ``"0-1-2-3"``, empty without GPUs), ``arrived_gpu_milli, used_gpu_milli,
    frag_milli, frag_ratio`` (cluster state right after the arrival) and ``failed`` (count
    so far). ``arrivals`` (names, or a peer arrival file) replaces the seeded sampling;
    Among nodes with equal scores the one with the smallest tie-break rank wins: by default
    a random order of the nodes drawn from ``seed`` (the peer gives every node a random
    prefix per run); ``tie_break="name"`` orders by node name; ``{node: prefix}`` or a peer
    prefix file orders by ``prefix-node``. ``reference=True`` turns the shortcuts off (scores
    kept for unchanged nodes, memoised fragmentation and FGD scores): every node is scored
    afresh at every arrival, for comparing whole runs against the plain rules.
    """
    inflate, seed = check_inflate(inflate), check_seed(seed)
    tasks, nodes = _as_tables(workload, cluster)
    check_saturation_size(tasks, nodes, inflate, sampling=arrivals is None)
    check_tasks_fit_somewhere(tasks, nodes)
    rng = np.random.default_rng(seed)
    placer = SHARE_PLACERS.make(placement)
    if isinstance(arrivals, (str, Path)):
        arrivals = read_peer_arrivals(arrivals)
    if arrivals is None:
        order = sample_arrivals(tasks, nodes.total_gpu_milli, inflate, rng)
    else:
        order = arrivals_from_names(tasks, arrivals)
    tie_rank = _tie_rank(nodes, tie_break, rng)
    return _run(tasks, nodes, order, placer, rng, tie_rank, reference)


def _run(
    tasks: Tasks,
    nodes: Nodes,
    order: np.ndarray,
    placer: SharePlacer,
    rng: np.random.Generator,
    tie_rank: np.ndarray,
    reference: bool = False,
) -> pd.DataFrame:
    state = NodeState(nodes)
    meter = FragMeter(typical_shapes(tasks), state.models, memo=not reference)
    ctx = Context(state, meter, rng)
    spec_codes, specs = pd.factorize(pd.Series(tasks.gpu_type, dtype=object))
    model_ok = access_matrix(np.asarray(specs, dtype=object), state.models)
    # tasks with equal requests share kept scores (a score may read any field of the request)
    shape_ids = pd.MultiIndex.from_arrays(
        [tasks.cpu, tasks.memory, tasks.gpu_milli, tasks.num_gpus, spec_codes]
    ).factorize()[0]
    buckets = np.array([meter.buckets(state.key(i)) for i in range(len(nodes))])
    caches: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    n = len(order)
    node_out = np.full(n, -1, dtype=np.int64)
    gpu_out = np.empty(n, dtype=object)
    arrived = np.empty(n, dtype=np.int64)
    used = np.empty(n, dtype=np.int64)
    frag = np.empty(n, dtype=np.float64)
    idle = np.empty(n, dtype=np.float64)
    failed = np.empty(n, dtype=np.int64)
    arrived_now = used_now = failed_now = 0
    for k, t in enumerate(order.tolist()):
        num, milli = int(tasks.num_gpus[t]), int(tasks.gpu_milli[t])
        req = Request(int(tasks.cpu[t]), int(tasks.memory[t]), num, milli, task_kind(num, milli))
        arrived_now += req.total_milli
        fits = state.feasible(req.cpu, req.memory, req.num_gpus, req.milli, model_ok[spec_codes[t]])
        feasible = np.flatnonzero(fits)
        gpu_out[k] = ""
        if feasible.size == 0:
            failed_now += 1
        else:
            if placer.cacheable and not reference:
                sid = int(shape_ids[t])
                if sid not in caches:
                    caches[sid] = (np.zeros(len(nodes), np.int64), np.full(len(nodes), -1))
                cached, seen = caches[sid]
                stale = feasible[seen[feasible] != state.version[feasible]]
                if stale.size:
                    cached[stale] = placer.scores(ctx, stale, req)
                    seen[stale] = state.version[stale]
                scores = cached[feasible]
            else:
                scores = placer.scores(ctx, feasible, req)
            node = placer.choose_node(ctx, feasible, scores, tie_rank)
            gpus = placer.choose_gpus(ctx, node, req)
            if len(set(gpus)) != req.num_gpus:
                raise AssertionError(
                    f"placement {placer.name!r} gave task {tasks.names[t]!r} GPUs {gpus}, "
                    f"not {req.num_gpus} distinct GPUs"
                )
            state.place(node, gpus, req.cpu, req.memory, req.milli, req.kind)
            buckets[node] = meter.buckets(state.key(node))
            used_now += req.total_milli
            node_out[k] = node
            gpu_out[k] = "-".join(str(g) for g in gpus)
        total = buckets.sum(axis=0)
        arrived[k], used[k], failed[k] = arrived_now, used_now, failed_now
        frag[k] = total[[0, 1, 3, 4, 5, 6]].sum()
        idle[k] = total.sum()
    names = np.where(node_out >= 0, nodes.names[np.maximum(node_out, 0)], "")
    return pd.DataFrame(
        {
            "arrival_idx": np.arange(n),
            "task": tasks.names[order],
            "node": names,
            "gpu_index": gpu_out,
            "arrived_gpu_milli": arrived,
            "used_gpu_milli": used,
            "frag_milli": frag,
            "frag_ratio": 100.0 * frag / np.where(idle > 0, idle, np.nan),
            "failed": failed,
        }
    )


def saturation_curve(arrivals: pd.DataFrame, total_gpus: int, top_pct: int = 130) -> pd.DataFrame:
    """Read a per-arrival log at each integer percent 0..``top_pct`` of arrived GPU demand,
    as the peer's analysis does (``experiments/analysis/merge_*_discrete.py``): the arrivals
    whose demand rounds to that percent, else those within one percent; allocation rounded
    to 0.01 per arrival then averaged; the fragmentation ratio and amount (rounded to 0.01
    as the peer logs them) averaged.

    Two roundings, as in the peer's pandas code: per arrival with Python's ``round``
    (correctly rounded from the exact binary value), the averages (numpy floats) with
    numpy's ``round`` (scale by 100, round half to even, scale back), which differs from
    Python's on some values: ``round(0.015, 2)`` is 0.01, ``np.round(0.015, 2)`` 0.02."""

    def per_arrival(values: np.ndarray, digits: int) -> np.ndarray:  # Python floats, Python round
        return np.array([round(x, digits) for x in values.tolist()], dtype=np.float64)

    arrive = per_arrival(arrivals["arrived_gpu_milli"].to_numpy() / total_gpus / 10, 0)
    alloc = per_arrival(arrivals["used_gpu_milli"].to_numpy() / total_gpus / 10, 2)
    ratio = per_arrival(arrivals["frag_ratio"].to_numpy(dtype=np.float64), 2)
    amount = per_arrival(arrivals["frag_milli"].to_numpy(dtype=np.float64), 2)
    failed = arrivals["failed"].to_numpy()
    rows = []
    for pct in range(top_pct + 1):
        pick = arrive == pct
        if not pick.any():
            pick = (arrive >= pct - 1) & (arrive <= pct + 1)
        if not pick.any():
            rows.append((pct, np.nan, np.nan, np.nan, np.nan))
            continue
        rows.append(
            (
                pct,
                float(np.round(pd.Series(alloc[pick]).mean(), 2)),
                float(np.round(100 * pd.Series(amount[pick]).mean() / 1000 / total_gpus, 2)),
                float(pd.Series(ratio[pick]).mean()),
                int(failed[np.flatnonzero(pick)[-1]]),
            )
        )
    frame = pd.DataFrame(rows, columns=list(CURVE_COLUMNS))
    frame["failed_pods"] = frame["failed_pods"].astype("Int64")
    return frame


def saturate(
    workload: Any,
    cluster: Any = None,
    *,
    placement: str | Mapping | SharePlacer = "fgd",
    inflate: float = 1.3,
    seed: int = 0,
    arrivals: Sequence[str] | str | Path | None = None,
    tie_break: Mapping[str, str] | str | Path | None = None,
) -> pd.DataFrame:
    """The saturation curve: one row per percent of arrived GPU demand, 0..int(inflate*100),
    columns ``arrived_pct, allocated_pct, frag_amount_pct, frag_ratio_pct, failed_pods``.

    ``workload``: an openb folder (``"bundled:openb"``), a task table (``cpu_milli,
    memory_mib, num_gpus, gpu_milli, gpu_type, name``), a Workload, or the
    :class:`~analysim.experiments.saturation.SharedTrace` of ``read_openb_tasks`` (then
    ``cluster`` may be omitted).
    ``cluster``: a node table (``node, cpu_milli, memory_mib, gpus, gpu_type``).
    ``placement``: a name of :data:`SHARE_PLACERS` or a placer instance.
    See :func:`~analysim.experiments.saturation.saturation_log` for ``arrivals`` and
    ``tie_break``.
    """
    inflate = check_inflate(inflate)
    frame = saturation_log(
        workload,
        cluster,
        placement=placement,
        inflate=inflate,
        seed=seed,
        arrivals=arrivals,
        tie_break=tie_break,
    )
    _, nodes = _as_tables(workload, cluster)
    return saturation_curve(frame, int(nodes.gpus.sum()), int(inflate * 100))
