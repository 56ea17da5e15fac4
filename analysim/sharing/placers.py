"""Placement policies of the FGD study for tasks that may share a GPU.

Each placer scores the nodes a task fits (higher is better, whole numbers as in the peer's
Kubernetes score plugins); the saturation loop takes the best score and, among equal
scores, the node with the smallest tie-break rank. Then the placer says which GPU(s) of that
node the task gets.

Names (registry :data:`SHARE_PLACERS`): ``fgd``, ``best_fit``, ``dot_product``,
``gpu_packing``, ``gpu_clustering``, ``random``. They live in their own registry, apart from
the whole-GPU placers of the time engine (``analysim.policies.PLACERS``: ``consolidate``,
``first_fit``, ``spread``, ``random``, ``topology``); ``random`` exists in both with the
same meaning (a uniformly random node that fits). The rules follow the peer's code
(hkust-adsl/kubernetes-scheduler-simulator, ``pkg/simulator/plugin/``); see
``docs/saturation.md`` for each rule with a worked example.

A custom placer subclasses :class:`SharePlacer` and implements ``scores`` (and optionally
``choose_gpus``); pass the instance as ``placement=``.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from analysim.policies.placement import PLACERS
from analysim.policies.registry import Policy, Registry
from analysim.sharing.fragmentation import FragMeter
from analysim.sharing.resources import MILLI, NodeState

MAX_SCORE = 100
MAX_SPEC_CPU = 128000.0  # the peer's normalisation constants (CPU milli, GPU milli)
MAX_SPEC_GPU = 8000.0
MAX_SPEC_GPU_MILLI = 8000


@dataclass(frozen=True)
class Request:
    """One arriving task, as the placers see it."""

    cpu: int
    memory: int
    num_gpus: int
    milli: int
    kind: str | None  # share-gpu, N-gpu, or None for CPU-only

    @property
    def shared(self) -> bool:
        return self.num_gpus == 1 and self.milli < MILLI

    @property
    def total_milli(self) -> int:
        return self.num_gpus * self.milli


@dataclass
class Context:
    """What a placer may read: the node state, the fragmentation meter, a random generator."""

    state: NodeState
    meter: FragMeter
    rng: np.random.Generator


class SharePlacer(Policy):
    """Base of the placers: ``scores`` for the feasible nodes, then ``choose_gpus``.

    ``cacheable``: the score of a node depends only on that node's state and the task's
    shape, so the loop may keep scores of nodes that did not change since the last task of
    the same shape.
    """

    name: ClassVar[str] = "share_placer"
    cacheable: ClassVar[bool] = True

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        raise NotImplementedError

    def choose_node(
        self, ctx: Context, feasible: np.ndarray, scores: np.ndarray, tie_rank: np.ndarray
    ) -> int:
        """The feasible node with the highest score, the smallest tie rank among equals."""
        best = scores == scores.max()
        candidates = feasible[best]
        return int(candidates[np.argmin(tie_rank[candidates])])

    def choose_gpus(self, ctx: Context, node: int, task: Request) -> list[int]:
        return best_fit_gpus(ctx.state.gpus_of(node), task)


SHARE_PLACERS: Registry[SharePlacer] = Registry("share placement", SharePlacer)


def exclusive_gpus(gpus: list[int], task: Request) -> list[int]:
    """Whole GPUs: the first ``num_gpus`` fully free GPUs by index."""
    free = [i for i, g in enumerate(gpus) if g == MILLI]
    return free[: task.num_gpus]


def best_fit_gpus(gpus: list[int], task: Request) -> list[int]:
    """A share goes to the GPU with the least milli left that holds it (first by index)."""
    if task.num_gpus == 0:
        return []
    if not task.shared:
        return exclusive_gpus(gpus, task)
    best = -1
    for i, g in enumerate(gpus):
        if g >= task.milli and (best < 0 or g < gpus[best]):
            best = i
    return [best]


@SHARE_PLACERS.register("best_fit")
class BestFit(SharePlacer):
    """Least CPU and GPU milli left after placing (each normalised, weight 1/2)."""

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        s = ctx.state
        cpu_free = s.cpu_left[nodes].astype(np.float64)
        gpu_free = s.gpu_left[nodes].sum(axis=1).astype(np.float64)
        score = (cpu_free - task.cpu) / MAX_SPEC_CPU * 0.5
        score = score + (gpu_free - task.total_milli) / MAX_SPEC_GPU * 0.5
        return np.trunc((1.0 - score) * MAX_SCORE).astype(np.int64)


@SHARE_PLACERS.register("dot_product")
class DotProduct(SharePlacer):
    """Smallest dot product of (CPU, GPU milli) left and requested, both over the peer's
    largest node (128 CPUs, 8 GPUs)."""

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        s = ctx.state
        cpu_free = s.cpu_left[nodes].astype(np.float64) / MAX_SPEC_CPU
        gpu_free = s.gpu_left[nodes].sum(axis=1).astype(np.float64) / MAX_SPEC_GPU
        inner = cpu_free * (task.cpu / MAX_SPEC_CPU) + gpu_free * (task.total_milli / MAX_SPEC_GPU)
        return np.trunc(MAX_SCORE * (1.0 - inner / 2.0)).astype(np.int64)


def packing_score(gpus: list[int], task: Request) -> int:
    """The peer's GpuPacking score of one node (see the class)."""
    if task.total_milli <= 0:
        return 0
    free = sum(1 for g in gpus if g == MILLI)
    if free == len(gpus):  # an idle node: fewer GPUs first (the peer caps at free, sic)
        return max(MAX_SCORE // 3 - free, free)
    order = sorted(range(len(gpus)), key=lambda i: gpus[i])  # stable: least left first
    need, free_used, used = task.num_gpus, 0, []
    for i in order:
        if need == 0:
            break
        if task.milli <= gpus[i]:
            need -= 1
            used.append(i)
            free_used += gpus[i] == MILLI
    if free_used > 0:
        return max(MAX_SCORE // 2 - free_used, MAX_SCORE // 3)
    ratio = sum(gpus[i] * 100 // MILLI for i in used)
    return max(MAX_SCORE - ratio // 10, MAX_SCORE // 2)


@SHARE_PLACERS.register("gpu_packing")
class GpuPacking(SharePlacer):
    """Prefer partly used GPUs, then free GPUs on used nodes, then idle nodes."""

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        s = ctx.state
        return np.array([packing_score(s.gpus_of(n), task) for n in nodes], dtype=np.int64)


@SHARE_PLACERS.register("gpu_clustering")
class GpuClustering(SharePlacer):
    """Prefer nodes that already run only tasks of the same kind (share-gpu, 1-gpu, ...),
    then mixed nodes with that kind, then empty nodes, then others; within each band, less
    GPU milli left first."""

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        if task.total_milli <= 0 or task.kind is None:
            return np.zeros(len(nodes), dtype=np.int64)
        s = ctx.state
        left = s.gpu_left[nodes].sum(axis=1)
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU_MILLI - left) // MAX_SPEC_GPU_MILLI
        band = np.empty(len(nodes), dtype=np.int64)
        for j, n in enumerate(nodes):
            kinds = s.kinds[n]
            if kinds.get(task.kind, 0) > 0:
                band[j] = 3 if len(kinds) == 1 else 2
            else:
                band[j] = 1 if len(kinds) == 0 else 0
        return base + band * (MAX_SCORE // 4)


def _sigmoid_score(before: float, after: float) -> int:
    return int(1.0 / (1.0 + math.exp(-((before - after) / 1000.0))) * MAX_SCORE)


@SHARE_PLACERS.register("fgd")
class FragmentationGradientDescent(SharePlacer):
    """The node (and GPU) whose fragmentation grows least: score = sigmoid of the decrease
    of the node's fragmentation (in thousands of milli), times 100; a share tries each GPU."""

    def __init__(self) -> None:
        self._memo: dict[tuple, int] = {}
        self._memo_meter: FragMeter | None = None

    def spec(self) -> dict:
        return {"name": self.name}

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        out = np.empty(len(nodes), dtype=np.int64)
        shape = (task.cpu, task.milli, task.num_gpus, task.memory == 0)
        if self._memo_meter is not ctx.meter:  # a new run: scores of another target workload
            self._memo, self._memo_meter = {}, ctx.meter
        memo = self._memo if ctx.meter.memo else {}
        for j, n in enumerate(nodes):
            key = ctx.state.key(n)
            got = memo.get((key, shape))
            if got is None:
                got = memo[(key, shape)] = max(self._options(ctx.meter, key, task))
            out[j] = got
        return out

    @staticmethod
    def _options(meter: FragMeter, key: tuple, task: Request) -> list[int]:
        """Score of each way to place the task on a node in state ``key`` (for a share: one
        per GPU position in the sorted state, for others a single entry)."""
        model, cpu_left, gpus = key
        before = meter.frag(key)
        if task.cpu == 0 and task.memory == 0 and task.num_gpus == 0:
            return [MAX_SCORE]
        if task.shared:
            out = []
            for i, g in enumerate(gpus):
                if g >= task.milli:
                    after = list(gpus)
                    after[i] = g - task.milli
                    new = (model, cpu_left - task.cpu, tuple(sorted(after, reverse=True)))
                    out.append(_sigmoid_score(before, meter.frag(new)))
            return out
        after = list(gpus)
        need = task.num_gpus
        for i in sorted(range(len(after)), key=lambda i: after[i]):
            if need == 0:
                break
            if task.milli <= after[i]:
                after[i] -= task.milli
                need -= 1
        new = (model, cpu_left - task.cpu, tuple(sorted(after, reverse=True)))
        return [_sigmoid_score(before, meter.frag(new))]

    def choose_gpus(self, ctx: Context, node: int, task: Request) -> list[int]:
        gpus = ctx.state.gpus_of(node)
        if not task.shared:
            return exclusive_gpus(gpus, task) if task.num_gpus else []
        key = ctx.state.key(node)
        model, cpu_left, _ = key
        before = ctx.meter.frag(key)
        best, best_score = -1, 0
        for i, g in enumerate(gpus):
            if g >= task.milli:
                after = list(gpus)
                after[i] = g - task.milli
                new = (model, cpu_left - task.cpu, tuple(sorted(after, reverse=True)))
                score = _sigmoid_score(before, ctx.meter.frag(new))
                if best < 0 or score > best_score:
                    best, best_score = i, score
        return [best]


@SHARE_PLACERS.register("random")
class RandomShare(SharePlacer):
    """A node that fits, uniformly at random; a share gets a random GPU that holds it."""

    cacheable: ClassVar[bool] = False

    def scores(self, ctx: Context, nodes: np.ndarray, task: Request) -> np.ndarray:
        return np.zeros(len(nodes), dtype=np.int64)

    def choose_node(
        self, ctx: Context, feasible: np.ndarray, scores: np.ndarray, tie_rank: np.ndarray
    ) -> int:
        return int(feasible[ctx.rng.integers(len(feasible))])

    def choose_gpus(self, ctx: Context, node: int, task: Request) -> list[int]:
        gpus = ctx.state.gpus_of(node)
        if task.num_gpus == 0:
            return []
        if not task.shared:
            return exclusive_gpus(gpus, task)
        fits = [i for i, g in enumerate(gpus) if g >= task.milli]
        return [fits[int(ctx.rng.integers(len(fits)))]]


def share_placer_of(spec: Any) -> SharePlacer | None:
    """The FGD-study placer a time-engine ``placement`` spec names, or None for a whole-GPU
    placer (``random`` is the whole-GPU one there)."""
    if isinstance(spec, SharePlacer):
        return copy.deepcopy(spec)  # one per simulation, as the registries copy instances
    name = spec.get("name") if isinstance(spec, dict) else spec
    if isinstance(name, str) and name in SHARE_PLACERS.names and name not in PLACERS.names:
        return SHARE_PLACERS.make(spec)
    return None
