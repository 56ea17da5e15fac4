"""The Pollux agent of one job in the artifact's simulator (``docs/pollux.md``).

Under the ``pollux`` policy a job's batch size is its own choice (ncf's is held at 32,768):
each configuration it runs (nodes, GPUs, atomic batch size) is profiled with its true step
and sync times, and a new one refits its step-time model
(:func:`~analysim.compat.pollux_goodput.fit_perf_params`); the latest gradient statistics
stand for its noise. After every stretch of training and at every (re)allocation it picks
the batch size of the best predicted goodput for its GPUs. The policy reads the same model
to predict the job's speed-up on any allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from analysim.compat.pollux_goodput import GoodputModel, PerfParams, fit_perf_params
from analysim.compat.pollux_model import PolluxApplication

NCF_BATCH = 32768  # the artifact holds ncf's batch size there


@dataclass
class Agent:
    """What a job has learnt about itself, and what the policy reads of it."""

    app: PolluxApplication
    fixed_batch: int | None = None
    profile: dict[tuple[int, int, int], tuple[float, float]] = field(default_factory=dict)
    perf: PerfParams | None = None
    grad: tuple[float, float] | None = None
    restarts: int | None = None  # None until first given GPUs
    attained: int = 0  # GPU-seconds held, restarts included

    def observe(
        self,
        nodes: int,
        gpus: int,
        atomic: int,
        step: float,
        sync: float,
        grad: tuple[float, float],
    ) -> None:
        """Record a stretch of training; refit the step-time model on a new configuration."""
        self.grad = grad
        key = (nodes, gpus, atomic)
        if key in self.profile:
            return
        self.profile[key] = (step, sync)
        self.perf = _fit(tuple((*k, *v) for k, v in self.profile.items()))

    def model(self) -> GoodputModel | None:
        """The job's goodput model (``None`` before its first profile)."""
        if self.perf is None:
            return None
        return GoodputModel(self.perf, self.grad[0], self.grad[1], self.app.init_batch_size)

    def choose(self, nodes: int, gpus: int) -> tuple[int, int]:
        """(atomic batch size, accumulation steps) on ``gpus`` GPUs over ``nodes`` nodes."""
        app = self.app
        model = self.model()
        if self.fixed_batch is not None or model is None:
            batch = self.fixed_batch or max(app.init_batch_size, app.min_local_bsz * gpus)
            return app.local_batch(batch, gpus)
        limits = (app.max_batch_size, app.min_local_bsz, app.max_local_bsz)
        atomic, accum = _best_batch(model, nodes, gpus, *limits)
        return min(atomic, int(app.max_batch_size / (gpus * (accum + 1)))), accum

    def max_replicas(self) -> int:
        """GPUs the policy may give: twice the most profiled (at least 1), at most 64 and
        the largest batch over the smallest local batch (ncf: 1)."""
        if self.app.name == "ncf":
            return 1
        most = max((key[1] for key in self.profile), default=0)
        return min(max(2 * most, 1), 64, self.app.max_batch_size // self.app.min_local_bsz)


@lru_cache(maxsize=8192)
def _best_batch(
    model: GoodputModel, nodes: int, gpus: int, max_batch: int, low: int, high: int
) -> tuple[int, int]:
    """(atomic batch, accumulation steps) of the best goodput ``model`` predicts on ``gpus``
    GPUs over ``nodes`` nodes: a pure function, asked again with the same arguments after
    most stretches of training."""
    _, atomic, accum = model.best([nodes], [gpus], max_batch, (low, high))
    return int(atomic[0]), int(accum[0])


@lru_cache(maxsize=8192)
def _fit(rows: tuple[tuple[float, ...], ...]) -> PerfParams:
    """The step-time model of a profile (rows: nodes, GPUs, atomic batch, step, sync time in
    the order they were seen). A pure function of its rows, so computed once: jobs of one
    application often see the same configurations in the same order."""
    nodes, gpus, atomic, step, sync = np.array(rows, dtype=float).T
    return fit_perf_params(nodes, gpus, atomic, step - sync, step)
