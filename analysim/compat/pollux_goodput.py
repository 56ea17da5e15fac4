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

:func:`fit_perf_params` fits the parameters to a job's profile (the artifact uses scipy's
L-BFGS-B; this is our own bounded quasi-Newton search, as good at the optimum, not equal to
the bit). The NSGA-II search over allocations is not here yet (issue 26).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from analysim.inputs.batch import statistical_efficiency
from analysim.policies.goodput import goodput

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
        return statistical_efficiency(self.sqr, self.var, scale)

    def goodput(self, nodes, replicas, atomic_bsz, accum_steps) -> np.ndarray:
        """Throughput times efficiency."""
        batch = np.asarray(replicas) * atomic_bsz * (np.asarray(accum_steps) + 1)
        return goodput(
            self.throughput(nodes, replicas, atomic_bsz, accum_steps), self.efficiency(batch)
        )

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


def fit_perf_params(
    nodes, replicas, atomic_bsz, accum_time, step_time, compiled: bool = True
) -> PerfParams:
    """The step-time model that best fits a job's profile: one row per configuration it has
    run (nodes, replicas, atomic batch size; seconds of an accumulation step and of a whole
    synchronising step). Minimises the artifact's objective (root-mean-square error of the
    logarithms of both times, plus ``1e-3 (gamma - 1)²`` and ``1e-2 ((beta_n / alpha_n)² +
    (beta_r / alpha_r)²)``) within its bounds, from its starting point, holding fixed what
    the profile cannot tell (``alpha_c`` at half the mean accumulation time if one batch size
    was seen; the network terms of a kind of link never seen; the growth terms if no run had
    more than 2 replicas); then, with no multi-node run, raises ``alpha_n, beta_n`` to at
    least 1.1 times ``alpha_r, beta_r``. The artifact uses scipy's L-BFGS-B; this is our own
    projected quasi-Newton search (:func:`_minimize`), so the parameters agree with the
    artifact's to the precision of the optimum, not to the bit. ``compiled``: the same
    search compiled (:mod:`analysim.compat.pollux_lbfgs`, the same parameters), else run on
    plain floats."""
    profile = _Profile(
        *(np.asarray(v, dtype=float) for v in (nodes, replicas, atomic_bsz)),
        np.asarray(accum_time, dtype=float),
        np.asarray(step_time, dtype=float),
    )
    start = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    lower = np.array([1e-8, 1e-8] * 3 + [1.0])
    upper = np.array([np.inf, np.inf] * 3 + [10.0])
    fixed = np.zeros(7, dtype=bool)

    def hold(index: int, value: float) -> None:
        start[index] = lower[index] = upper[index] = value
        fixed[index] = True

    if len(np.unique(profile.atomic)) == 1:
        hold(0, float(np.mean(profile.accum)) / 2)
    if not np.any(profile.nodes > 1):
        hold(2, lower[2])
        hold(3, lower[3])
    if not np.any((profile.nodes == 1) & (profile.replicas > 1)):
        hold(4, lower[4])
        hold(5, lower[5])
    if not np.any(profile.replicas > 2):
        hold(3, lower[3])
        hold(5, lower[5])
    if compiled:
        from analysim.compat.pollux_lbfgs import minimize

        found = minimize(np.array(profile._rows, dtype=float), start, lower, upper, fixed)
    else:
        found = _minimize(profile, start.tolist(), lower.tolist(), upper.tolist(), fixed.tolist())
    params = np.array(found)
    if not np.any(profile.nodes > 1):
        params[2] = max(params[2], params[4] * 1.1)
        params[3] = max(params[3], params[5] * 1.1)
    return PerfParams(*(float(p) for p in params))


@dataclass(frozen=True)
class _Profile:
    nodes: np.ndarray
    replicas: np.ndarray
    atomic: np.ndarray
    accum: np.ndarray
    step: np.ndarray

    def objective(self, x) -> tuple[float, list[float]]:
        """The artifact's fitting objective at ``x`` and its gradient (``inf`` where the
        model cannot be evaluated). Plain floats: a profile has a few rows, and numpy's
        overhead on arrays that small would be most of the fit's time."""
        value, gradient = self.lazy(x)
        grad = gradient()
        return (value, grad) if grad is not None else (math.inf, [0.0] * 7)

    def lazy(self, x) -> tuple[float, Callable[[], list[float] | None]]:
        """The objective at ``x`` and a function computing its gradient there (``None``
        where that cannot be computed): a line search needs the gradient only at the point
        it accepts."""
        ac, bc, an, bn, ar, br, gamma = (float(v) for v in x)
        try:
            value, terms, weights = self._value(ac, bc, an, bn, ar, br, gamma)
        except (ValueError, OverflowError, ZeroDivisionError):
            return math.inf, _no_gradient

        def gradient() -> list[float] | None:
            try:
                return self._gradient(an, bn, ar, br, gamma, terms, weights)
            except (ValueError, OverflowError, ZeroDivisionError):
                return None

        return value, gradient

    @cached_property
    def _rows(self) -> list[tuple[bool, bool, float, float, float, float]]:
        """Per configuration: across nodes, within one node, replicas beyond 2, atomic
        batch, log of the accumulation time, log of the step time."""
        rows = []
        for nodes, replicas, atomic, accum, step in zip(
            self.nodes.tolist(),
            self.replicas.tolist(),
            self.atomic.tolist(),
            self.accum.tolist(),
            self.step.tolist(),
            strict=True,
        ):
            inter = nodes > 1
            intra = not inter and replicas > 1
            more = max(replicas - 2, EPS)
            rows.append((inter, intra, more, atomic, math.log(accum), math.log(step)))
        return rows

    def _value(self, ac, bc, an, bn, ar, br, gamma) -> tuple[float, list, tuple[float, float]]:
        """The objective, the per-row terms its gradient reuses and the weights of both
        errors in it."""
        terms = []
        sum1 = sum2 = 0.0
        for inter, intra, more, atomic, log_accum, log_step in self._rows:
            compute = ac + bc * atomic
            if inter:
                network = an + bn * more
            elif intra:
                network = ar + br * more
            else:
                network = EPS + EPS * more
            power_c, power_n = compute**gamma, network**gamma
            total = power_c + power_n
            log_total, log_c = math.log(total), math.log(compute)
            d1 = log_c - log_accum
            d2 = log_total / gamma - log_step
            sum1 += d1 * d1
            sum2 += d2 * d2
            terms.append((inter, intra, more, atomic, compute, network, power_c, power_n, total,
                          log_total, log_c, d1, d2))  # fmt: skip
        n = len(terms)
        err1, err2 = math.sqrt(sum1 / n), math.sqrt(sum2 / n)
        penalty = 1e-2 * ((bn / an) * (bn / an) + (br / ar) * (br / ar))
        value = err1 + err2 + 1e-3 * ((gamma - 1) * (gamma - 1)) + penalty
        w1_scale = 1 / (n * err1) if err1 > 0 else 0.0
        w2_scale = 1 / (n * err2) if err2 > 0 else 0.0
        return value, terms, (w1_scale, w2_scale)

    @staticmethod
    def _gradient(an, bn, ar, br, gamma, terms, weights) -> list[float]:
        w1_scale, w2_scale = weights
        grad = [0.0] * 7
        for (inter, intra, more, atomic, compute, network, power_c, power_n, total, log_total,
             log_c, d1, d2) in terms:  # fmt: skip
            w1, w2 = d1 * w1_scale, d2 * w2_scale
            # d log_sync / d compute, / d network, / d gamma
            dc = power_c / compute / total
            dn = power_n / network / total
            dg = -log_total / (gamma * gamma) + (power_c * log_c + power_n * math.log(network)) / (
                gamma * total
            )
            via_compute = w1 / compute + w2 * dc
            grad[0] += via_compute
            grad[1] += via_compute * atomic
            if inter:
                grad[2] += w2 * dn
                grad[3] += w2 * dn * more
            elif intra:
                grad[4] += w2 * dn
                grad[5] += w2 * dn * more
            grad[6] += w2 * dg
        grad[2] += -2e-2 * (bn * bn) / (an * an * an)
        grad[3] += 2e-2 * bn / (an * an)
        grad[4] += -2e-2 * (br * br) / (ar * ar * ar)
        grad[5] += 2e-2 * br / (ar * ar)
        grad[6] += 2e-3 * (gamma - 1)
        return grad


def _no_gradient() -> None:
    return None


def _dot(a: list[float], b: list[float]) -> float:
    return sum(map(operator.mul, a, b))


def _minimize(profile: _Profile, x0, lower, upper, fixed, iterations: int = 15000) -> list[float]:
    """Minimise ``profile``'s objective within bounds: limited-memory BFGS directions on the
    variables not held at a bound, projected backtracking steps; stops as L-BFGS-B's defaults
    do (relative decrease below 2.2e-9, or projected gradient below 1e-5). Vectors are lists
    of 7 floats. A trial point's gradient is computed only if its value is accepted (a point
    whose gradient cannot be computed counts as ``inf``, as in :meth:`_Profile.objective`)."""
    x = [min(max(v, lo), hi) for v, lo, hi in zip(x0, lower, upper, strict=True)]
    value, grad = profile.objective(x)
    memory: list[_Pair] = []
    for _ in range(iterations):
        free = [
            not f and not (v <= lo and g > 0) and not (v >= hi and g < 0)
            for f, v, lo, hi, g in zip(fixed, x, lower, upper, grad, strict=True)
        ]
        projected = [g if f else 0.0 for g, f in zip(grad, free, strict=True)]
        if max(abs(g) for g in projected) < 1e-5:
            break
        direction = [-v for v in _two_loop(projected, memory, free)]
        if _dot(direction, projected) >= 0:
            direction, memory = [-g for g in projected], []
        step, trial_grad = 1.0, None
        while step > 1e-20:
            trial = [
                min(max(v + step * d, lo), hi)
                for v, d, lo, hi in zip(x, direction, lower, upper, strict=True)
            ]
            trial_value, gradient = profile.lazy(trial)
            moved = [t - v for t, v in zip(trial, x, strict=True)]
            if math.isfinite(trial_value) and trial_value <= value + 1e-4 * _dot(projected, moved):
                trial_grad = gradient()
                if trial_grad is not None:
                    break
            step /= 2
        if trial_grad is None:
            break
        s = moved
        y = [a - b for a, b in zip(trial_grad, grad, strict=True)]
        if _dot(s, y) > 1e-12:
            memory = [*memory[-9:], _Pair(s, y)]
        done = (value - trial_value) <= 2.2e-9 * max(abs(value), abs(trial_value), 1.0)
        x, value, grad = trial, trial_value, trial_grad
        if done:
            break
    return x


class _Pair:
    """One (step, gradient change) pair of the L-BFGS memory, with its versions masked to
    the free variables (and their products), kept while the free variables stay the same."""

    __slots__ = ("_masked", "s", "y")

    def __init__(self, s: list[float], y: list[float]) -> None:
        self.s, self.y = s, y
        self._masked: dict[tuple[bool, ...], tuple[list[float], list[float], float, float]] = {}

    def masked(self, free: tuple[bool, ...]) -> tuple[list[float], list[float], float, float]:
        """(s, y, s.y, y.y) with the variables that are not free set to 0."""
        out = self._masked.get(free)
        if out is None:
            s, y = self.s, self.y
            if not all(free):
                s = [a if f else 0.0 for a, f in zip(s, free, strict=True)]
                y = [b if f else 0.0 for b, f in zip(y, free, strict=True)]
            out = self._masked[free] = (s, y, _dot(s, y), _dot(y, y))
        return out


def _two_loop(grad: list[float], memory: list[_Pair], free: list[bool]) -> list[float]:
    """The L-BFGS product of the inverse Hessian estimate and ``grad``, on the free variables."""
    q = [g if f else 0.0 for g, f in zip(grad, free, strict=True)]
    if not memory:
        return q
    key = tuple(free)
    masked = [pair.masked(key) for pair in memory]
    alphas = []
    for s, y, sy, _ in reversed(masked):
        if sy <= 1e-12:
            alphas.append(0.0)
            continue
        a = _dot(s, q) / sy
        alphas.append(a)
        q = [qi - a * yi for qi, yi in zip(q, y, strict=True)]
    _, _, sy, yy = masked[-1]
    if yy > 0 and sy > 1e-12:
        q = [qi * (sy / yy) for qi in q]
    for (s, y, sy, _), a in zip(masked, reversed(alphas), strict=True):
        if sy <= 1e-12:
            continue
        b = _dot(y, q) / sy
        q = [qi + si * (a - b) for qi, si in zip(q, s, strict=True)]
    return [qi if f else 0.0 for qi, f in zip(q, free, strict=True)]


__all__ = ["GoodputModel", "PerfParams", "fit_perf_params"]
