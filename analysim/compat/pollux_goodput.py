"""The Pollux agent's goodput model, as the artifact's ``pollux`` policy predicts a job's speed.

Pollux does not read the true throughput tables when it decides: each job fits a small model
of its step time to the configurations it has run (``PerfParams``) and of its gradient noise
(``sqr``, ``var``), and the policy asks that model for the best **goodput** (throughput x
statistical efficiency) a GPU allocation can give, over the batch sizes the job may use.
This module is that model, written from the rules of the artifact's ``goodput.py`` and
``speedup.py`` (``docs/pollux.md``):

* compute time of one accumulation step ``alpha_c + beta_c * atomic_bsz``;
* network time: over nodes ``alpha_n + beta_n * max(replicas - 2, 1e-8)``, within one node
  (several replicas) ``alpha_r + beta_r * ...``, on one GPU ``1e-8 + 1e-8 * ...``;
* the last (synchronising) step takes ``(compute ** gamma + network ** gamma) ** (1 / gamma)``
  (computed as ``exp(log(...) / gamma)``), the others ``compute``; throughput = samples of the
  batch over the sum;
* efficiency at batch size ``B``: ``gain / scale`` with ``scale = B / init_batch_size`` and
  ``gain = (var + sqr) / (var / scale + sqr)`` (1 when the denominator is not positive);
* the best configuration for (nodes, replicas): 50 batch sizes spaced geometrically from
  ``max(init_batch_size, min_atomic * replicas)`` to the largest, each split into an atomic
  batch and accumulation steps as a job does, the first of the largest goodputs among those
  whose atomic batch is within range (goodput 0 otherwise);
* speed-up of an allocation: its best goodput over the best on one GPU.

Fitting the parameters to a job's profile (the artifact uses scipy's L-BFGS-B) and the
NSGA-II search over allocations are not here yet (issue 26).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = 1e-8  # the artifact's tolerance in ceilings and its floor for absent network terms
CANDIDATES = 50  # batch sizes tried per allocation (numpy.geomspace's default)


@dataclass(frozen=True)
class PerfParams:
    """A job's fitted step-time model (the names of the artifact's ``PerfParams``)."""

    alpha_c: float  # constant term of the compute time of one step
    beta_c: float  # compute time per sample of the atomic batch
    alpha_n: float  # constant term of the network time across nodes
    beta_n: float  # its growth per replica beyond 2
    alpha_r: float  # constant term of the network time within one node
    beta_r: float  # its growth per replica beyond 2
    gamma: float  # overlap of compute and network: 1 none, 10 nearly full


@dataclass(frozen=True)
class GoodputModel:
    """Goodput of a job with step-time model ``perf`` and gradient statistics ``sqr, var``."""

    perf: PerfParams
    sqr: float
    var: float
    init_batch_size: int

    def throughput(self, nodes, replicas, atomic_bsz, accum_steps) -> np.ndarray:
        """Samples per second of ``replicas`` GPUs over ``nodes`` nodes (arrays broadcast)."""
        p = self.perf
        nodes, replicas = np.asarray(nodes), np.asarray(replicas)
        compute = p.alpha_c + p.beta_c * np.asarray(atomic_bsz)
        conditions = [nodes > 1, replicas > 1]
        base = np.select(conditions, [p.alpha_n, p.alpha_r], EPS)
        growth = np.select(conditions, [p.beta_n, p.beta_r], EPS)
        network = base + growth * np.maximum(replicas - 2, EPS)
        sync = np.exp(np.log(compute**p.gamma + network**p.gamma) / p.gamma)
        total = accum_steps * compute + sync
        return replicas * atomic_bsz * (accum_steps + 1) / total

    def efficiency(self, batch_size) -> np.ndarray:
        """Progress per sample at global ``batch_size``, relative to the initial batch size."""
        scale = np.asarray(batch_size) / self.init_batch_size
        denominator = self.var / scale + self.sqr
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(denominator > 0, (self.var + self.sqr) / denominator, 1.0)
        return gain / scale

    def goodput(self, nodes, replicas, atomic_bsz, accum_steps) -> np.ndarray:
        """Throughput times efficiency."""
        batch = np.asarray(replicas) * atomic_bsz * (np.asarray(accum_steps) + 1)
        return self.throughput(nodes, replicas, atomic_bsz, accum_steps) * self.efficiency(batch)

    def best(
        self, nodes, replicas, max_batch_size: int, atomic_range: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(goodput, atomic batch, accumulation steps) of the best batch size for each
        (``nodes``, ``replicas``) pair (1-D arrays of equal length), with accumulation."""
        low, high = atomic_range
        nodes = np.atleast_1d(np.asarray(nodes))
        replicas = np.atleast_1d(np.asarray(replicas))
        smallest = np.maximum(self.init_batch_size, low * replicas)
        batch = np.geomspace(smallest, max_batch_size, CANDIDATES)  # (candidates, pairs)
        local = batch / replicas
        accum = np.ceil(local / high - EPS) - 1
        single = (replicas == 1) & (local > self.init_batch_size + EPS)
        accum = np.where(single, np.maximum(accum, 1), accum).astype(int)
        atomic = np.ceil(local / (accum + 1) - EPS).astype(int)
        value = self.goodput(nodes, replicas, atomic, accum)
        value = np.where((low <= atomic) & (atomic <= high), value, 0.0)
        pick = np.argmax(value, axis=0), np.arange(value.shape[1])
        return value[pick], atomic[pick], accum[pick]

    def speedup(
        self, nodes, replicas, max_batch_size: int, atomic_range: tuple[int, int]
    ) -> np.ndarray:
        """Best goodput of each allocation over the best on one GPU (0 for no GPUs)."""
        nodes = np.atleast_1d(np.asarray(nodes))
        replicas = np.atleast_1d(np.asarray(replicas))
        base = self.best([1], [1], max_batch_size, atomic_range)[0][0]
        out = np.zeros(len(replicas))
        some = replicas > 0
        if some.any():
            out[some] = self.best(nodes[some], replicas[some], max_batch_size, atomic_range)[0]
        return out / base


__all__ = ["GoodputModel", "PerfParams"]
