"""The goodput rules Pollux (OSDI'21) states, shared by the engine's elastic policies
(``analysim/policies/elastic.py``) and the Pollux replay (``analysim/compat/pollux_*.py``).

* **Goodput** is throughput times statistical efficiency: useful progress per second.
* **Gain** of a batch size ``scale`` times the initial one, given the gradient statistics
  ``sqr`` (squared norm of the gradient) and ``var`` (its noise): ``(var + sqr) / (var /
  scale + sqr)``; the efficiency is ``gain / scale``.
* **Fitness** of an allocation over jobs: the power mean of their speed-ups with ``p = -1``
  (a harmonic mean: it rewards raising the slowest job's speed-up), with the artifact's
  ``+ 1e-3`` guard against a speed-up of 0.
* **Restart weight**: the speed-up of a job under an allocation that would restart it is
  weighted by ``max(age - penalty * restarts, 0) / (age + penalty)`` (``age``: seconds since
  it was submitted; the artifact's penalty is 30 s): young jobs and jobs restarted often
  are moved less.

Written once here so the rules cannot drift apart; the arithmetic is the artifact's, in its
order (the replay's results depend on it to the last bit).
"""

from __future__ import annotations

import numpy as np

#: the artifact's guard added to every speed-up before its reciprocal is taken
SPEEDUP_GUARD = 1e-3


def gradient_gain(sqr, var, scale):
    """Pollux's gain of a batch ``scale`` times the initial one (floats or arrays)."""
    return (var + sqr) / (var / scale + sqr)


def goodput(throughput, efficiency):
    """Useful progress per second: throughput times statistical efficiency."""
    return throughput * efficiency


def fitness(speedups: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pollux's fitness: the power mean (p = -1) of ``speedups`` along ``axis``."""
    count = speedups.shape[axis]
    return (np.sum((speedups + SPEEDUP_GUARD) ** -1, axis=axis) / count) ** -1.0


def fitness_term(speedup: float) -> float:
    """One job's term of :func:`fitness`'s sum (lower is fitter): a greedy that adds GPUs
    one step at a time raises the fitness most by lowering this term most."""
    return (speedup + SPEEDUP_GUARD) ** -1


def restart_weight(age: float, restarts: int, penalty: float) -> float:
    """Pollux's weight of a job's speed-up under an allocation that restarts it (1.0 with
    no penalty)."""
    if penalty <= 0:
        return 1.0
    return max(age - penalty * restarts, 0.0) / (age + penalty)


__all__ = ["SPEEDUP_GUARD", "fitness", "fitness_term", "goodput", "gradient_gain", "restart_weight"]
