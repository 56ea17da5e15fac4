"""The decision rounds in resource mode: placing jobs that share GPUs and ask for CPU and
memory, and weighing evictions on trial copies of the resource book.

:class:`ResourceRounds` is the :class:`~analysim.engine.rounds.Rounds` of a
:class:`~analysim.engine.resources.ResourceSimulation`: the same interface and state, with
quotas in GPU milli, placements asked of the simulation's
:class:`~analysim.engine.resource_placement.ResourcePlacement` (``place_on``, on the real
book; the claims planned for the ledger), and trial evictions on a copy of the book
(:class:`_ResourceTrial`). A round of a group with no whole GPU free does not end at once (a
share or a CPU-only job may fit all the same).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.domains import Domain
from analysim.engine.rounds import Rounds, _Trial
from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.resources import ResourceSimulation


class ResourceRounds(Rounds):
    """The scheduling rounds of a simulation in resource mode."""

    sim: ResourceSimulation
    _needs_are_gpus = False  # a job needs GPU milli, CPU and memory too

    def __init__(self, sim: ResourceSimulation) -> None:
        super().__init__(sim)
        self.placement = sim.placement  # where a job fits
        self._nothing_free_ends_round = False  # a share or a CPU job may fit all the same

    def place(
        self, j: int, free: np.ndarray, domain: Domain | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Where ``j`` goes now (on its own nodes, or those of ``domain``): the nodes and
        GPUs per node, its claims kept for the ledger; None (and why) if nowhere."""
        placement = self.placement
        domain = domain or self._domain[j]
        claims = placement.place_on(placement.book, j, domain, self.rng)
        if claims is None:
            self._why = placement.why_not(j, domain)
            self._room_seen = int(self.free[domain.nodes].sum())
            return None
        self.ledger.plans[j] = claims
        return np.array([c[0] for c in claims]), np.array([len(c[1]) for c in claims])

    def quota_allows(self, j: int, vc_used) -> bool:
        quota = self._domain[j].quota
        return quota is None or vc_used[self._vc[j]] + self._usage[j] <= quota * MILLI

    def _room_of(self, j: int) -> int:
        return int(self.free[self._domain[j].nodes].sum())

    def _trial_for(self, j: int, candidates: list[int]) -> _Trial | None:
        return _ResourceTrial(self, j)


class _ResourceTrial(_Trial):
    """Trial evictions on a copy of the resource book."""

    def __init__(self, rounds: ResourceRounds, j: int) -> None:
        self.rounds, self.sim, self.j = rounds, rounds.sim, j
        self.reset()

    def reset(self) -> None:
        self.book = self.sim.book.clone()
        self.vc_used = list(self.rounds.vc_used)

    def release(self, r: int, sign: int) -> None:
        sim = self.sim
        for claim in sim.ledger.claims[r]:
            if sign > 0:
                self.book.give(claim, sim.facts.kind[r])
            else:
                self.book.take(claim, sim.facts.kind[r])
        if not sim.borrowed[r]:
            self.vc_used[sim.facts.vc[r]] -= sign * sim.facts.usage[r]

    def fits(self) -> bool:
        return self.rounds.quota_allows(self.j, self.vc_used) and (
            self.rounds.placement.fits_on(self.book, self.j) is not None
        )
