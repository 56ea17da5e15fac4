"""The clock's rules: whole steps, quantum boundaries, and the step at which a time is seen.

The simulation holds the present time (``Simulation.now``) and decides where to leap next
(the next arrival, completion, or round that can change anything); this module says what a
step and a boundary are, so every part of the engine counts time the same way.
"""

from __future__ import annotations

import math

import numpy as np

EPS = 1e-9  # tolerance when comparing times


def ceil_to(t: float, unit: float) -> float:
    """The first multiple of ``unit`` at or after ``t`` (tolerant to float noise; no -0.0)."""
    return math.ceil(t / unit - EPS) * unit + 0.0


def on_multiple(t: float, unit: float) -> bool:
    """Whether ``t`` is a multiple of ``unit`` (up to float noise)."""
    multiples = t / unit
    return abs(multiples - round(multiples)) < EPS


class Clock:
    """Steps of ``step`` seconds; full rounds at multiples of ``quantum``."""

    __slots__ = ("step", "quantum")

    def __init__(self, step: float, quantum: float) -> None:
        self.step, self.quantum = step, quantum

    def arrival_steps(self, submit: np.ndarray) -> np.ndarray:
        """The step at which each job submitted at ``submit`` is seen (the first at or after
        it)."""
        return np.ceil(submit / self.step - EPS) * self.step + 0.0

    def due(self, end: float) -> float:
        """The step at which a run that ends at ``end`` is seen to have ended."""
        step = self.step
        return end if step == 1.0 and end == int(end) else ceil_to(end, step)

    def boundary_after(self, now: float, unit: float) -> float:
        """The first multiple of ``unit`` after the present step (``now``)."""
        return ceil_to(now + self.step, unit)

    def is_quantum_boundary(self, t: float) -> bool:
        return on_multiple(t, self.quantum)
