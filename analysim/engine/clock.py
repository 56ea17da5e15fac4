"""The clock: the present time, its rules (whole steps, quantum boundaries, the step at which a
time is seen), and when the next timeline sample is due.

:class:`Clock` owns the present (``now``; ``Simulation.now`` reads it), how many times the
simulation has advanced (``advances``; ``Simulation.rounds``) and the next timeline sample
time (``next_sample``). Only :meth:`Clock.advance_to`, :meth:`Clock.stop_at` and
:meth:`Clock.samples_before` move them. The simulation decides where to leap next (the next
arrival, completion, or round that can change anything); this module says what a step and a
boundary are, so every part of the engine counts time the same way.
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
    """Steps of ``step`` seconds; full rounds at multiples of ``quantum``; timeline samples
    every ``sample_every`` seconds. ``now`` is the present (read it, never write it)."""

    __slots__ = ("step", "quantum", "sample_every", "now", "advances", "next_sample")

    def __init__(self, step: float, quantum: float, sample_every: float = math.inf) -> None:
        self.step, self.quantum, self.sample_every = step, quantum, sample_every
        self.now = 0.0  # the present time
        self.advances = 0  # how many times the simulation advanced (its steps visited)
        self.next_sample = 0.0  # the next timeline sample time

    # -- the present --------------------------------------------------------------------------
    def advance_to(self, t: float) -> None:
        """Move the present to ``t``, a step the simulation visits."""
        self.now = t
        self.advances += 1

    def stop_at(self, t: float) -> None:
        """Move the present to ``t`` without visiting it (a run stopped there)."""
        self.now = t

    def samples_before(self, t: float) -> tuple[float, int] | None:
        """The timeline samples due before ``t`` (from ``next_sample`` on, every
        ``sample_every`` seconds), as (the first's time, how many); they are taken:
        ``next_sample`` moves past them. None if none is due."""
        first = self.next_sample
        if not first < t:
            return None
        every = self.sample_every
        last = ceil_to(t, every) - every
        count = int(round((last - first) / every)) + 1
        self.next_sample = first + count * every
        return first, count

    # -- the rules ----------------------------------------------------------------------------
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
