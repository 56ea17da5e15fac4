"""The goodput rules Pollux (OSDI'21) states, shared by the engine's elastic policies
(``analysim/policies/elastic.py``) and the Pollux replay (``analysim/compat/pollux_*.py``).

* **Goodput** is throughput times statistical efficiency: useful progress per second.
* **Gain** of a batch size ``scale`` times the initial one, given the gradient statistics
  ``sqr`` (squared norm of the gradient) and ``var`` (its noise): ``(var + sqr) / (var /
  scale + sqr)``; the efficiency is ``gain / scale``.
* **Fitness** of an allocation over jobs: the power mean of their speed-ups with ``p = -1``
  (a harmonic mean: it rewards raising the slowest job's speed-up), with the artifact's
  ``+ 1e-3`` guard against a speed-up of 0.

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


__all__ = ["SPEEDUP_GUARD", "fitness", "fitness_term", "goodput", "gradient_gain"]
