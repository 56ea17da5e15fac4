"""The fragmentation measure of FGD (Weng et al., ATC'23), as its simulator computes it.

The *target workload* is the distribution of task shapes ``(cpu_milli, gpu_milli, num_gpus,
gpu_type)`` of the trace: the most common shapes that together make up 95 % of the tasks,
with weights ``p_k`` renormalised to sum to 1 (:func:`typical_shapes`).

For a node and a shape ``k``: if the shape is CPU-only, or the node's GPU model is not
allowed, or the node lacks the CPU or GPUs for it, all the node's idle GPU milli is
fragmented for ``k``; if the shape fits, the idle milli on GPUs with less left than the
shape's ``gpu_milli`` is. The node's fragmentation is ``sum_k p_k * f_k``; the cluster's is
the sum over nodes, and the *fragmentation ratio* is that over the idle GPU milli.

Amounts are accumulated per category in the peer's order (``BUCKETS``), so that scores built
on differences of them (FGD) are bit-identical to the peer's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysim.sharing.resources import Tasks, allowed_models

# The peer's categories, in its order: lack both, lack GPU, satisfied, lack CPU,
# CPU-only satisfied, CPU-only lacking CPU, no access (GPU model not allowed).
BUCKETS = (
    "q1_lack_both",
    "q2_lack_gpu",
    "q3_satisfied",
    "q4_lack_cpu",
    "xl_satisfied",
    "xr_lack_cpu",
    "no_access",
)
POPULARITY = 95.0


@dataclass(frozen=True)
class Shape:
    cpu: int
    milli: int
    num_gpus: int
    gpu_type: str
    weight: float


def typical_shapes(tasks: Tasks, popularity: float = POPULARITY) -> list[Shape]:
    """The most common task shapes covering ``popularity`` % of the tasks, weights summing
    to 1 (peer: ``GetTypicalPods`` with threshold 95, step 1, CPU tasks included)."""
    counts: dict[tuple, float] = {}
    for key in zip(
        tasks.cpu.tolist(),
        tasks.gpu_milli.tolist(),
        tasks.num_gpus.tolist(),
        tasks.gpu_type.tolist(),
        strict=True,
    ):
        counts[key] = counts.get(key, 0.0) + 1.0
    total = float(len(tasks))
    # most common first; among equal counts the larger (cpu, milli, num, type) first
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected = popularity * total / 100.0
    cum = 0.0
    chosen = 0
    while cum < expected and chosen < len(ordered):
        cum += ordered[chosen][1]
        chosen += 1
    weights = [count / total for _, count in ordered[:chosen]]
    if chosen < len(ordered):
        weights = [w / (cum / total) for w in weights]
    return [
        Shape(int(k[0]), int(k[1]), int(k[2]), str(k[3]), w)
        for (k, _), w in zip(ordered[:chosen], weights, strict=True)
    ]


class FragMeter:
    """Fragmentation of node states against the target shapes, memoised by node state."""

    def __init__(self, shapes: list[Shape], models: np.ndarray, *, memo: bool = True) -> None:
        self.shapes = shapes
        self.models = [str(m) for m in models]
        access = []
        for s in shapes:
            allowed = allowed_models(s.gpu_type)
            access.append(tuple(allowed is None or m in allowed for m in self.models))
        self._plan = [
            (s.cpu, s.milli, s.num_gpus, s.weight, acc)
            for s, acc in zip(shapes, access, strict=True)
        ]
        self._memo: dict[tuple, tuple[float, ...]] = {}
        self.memo = memo

    def buckets(self, key: tuple) -> tuple[float, ...]:
        """The seven category amounts of a node state ``(model code, cpu left, gpus)``."""
        if not self.memo:
            return self._buckets(*key)
        got = self._memo.get(key)
        if got is None:
            got = self._memo[key] = self._buckets(*key)
        return got

    def frag(self, key: tuple) -> float:
        """Fragmented GPU milli of a node state: every category but 'satisfied'."""
        b = self.buckets(key)
        return 0.0 + b[0] + b[1] + b[3] + b[4] + b[5] + b[6]

    def _buckets(self, model: int, cpu_left: int, gpus: tuple[int, ...]) -> tuple[float, ...]:
        d = [0.0] * 7
        idle = sum(gpus)
        for cpu, milli, num, weight, access in self._plan:
            if milli == 0:
                d[4 if cpu_left >= cpu else 5] += weight * idle
                continue
            if not access[model]:
                d[6] += weight * idle
                continue
            fits_gpu = sum(1 for g in gpus if g >= milli) >= num
            fits_cpu = cpu_left >= cpu
            if fits_gpu and fits_cpu:
                small = sum(g for g in gpus if g < milli)
                d[1] += weight * small
                d[2] += weight * (idle - small)
            elif fits_gpu:
                d[3] += weight * idle
            elif fits_cpu:
                d[1] += weight * idle
            else:
                d[0] += weight * idle
        return tuple(d)
