"""EASY backfill's reservations (``SimConfig(backfill="easy")``).

When the first waiting job of a queue (its *head*) cannot start, it is promised the earliest
time ``at`` at which it would fit if no other job started: the running jobs release their
GPUs when their remaining run time ends, and the placer is asked, on that future free map,
where the head would go (its *reserved* GPUs). A job behind it may start now only if it
does not delay that promise: it ends by ``at``, or it takes only GPUs the head does not
need then (``spare``: free at ``at`` and not reserved). This is the rule of the Extensible
Argonne Scheduling sYstem (Lifka 1995) that Slurm's ``sched/backfill`` applies; the engine
knows each job's run time exactly, where Slurm reads the user's time limit.

A reservation is kept until GPUs of its group are released (the future free map may then
be earlier), its head starts, or a start it did not allow takes GPUs it needs; it is made
again when the head next fails. (A shortcut keeps it past releases it foresaw: jobs that
ended when it counted them to, with no GPU taken since; making it again would give it.)
``docs/semantics.md`` gives the rule with an example.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Reservation:
    """The promise made to ``head`` (a job index): its GPUs from time ``at`` on."""

    head: int
    at: float
    #: GPUs per node (whole cluster) the head's placement at ``at`` takes
    reserved: np.ndarray
    #: GPUs per node that may be taken now by a job still running at ``at``: free at ``at``
    #: less the reserved ones on the head's nodes, unlimited elsewhere
    spare: np.ndarray
    #: with a quota: the GPUs of the quota left at ``at`` once the head has its own (None:
    #: no quota); a job of the same VC running past ``at`` may use only these
    quota_spare: int | None
    vc: int
    #: the group's release count when it was made (a release may bring ``at`` forward)
    releases: int
    #: a start it did not allow took GPUs it needs: it is made again at the head's next try
    broken: bool = False
    #: the steps at which the running jobs it counted end, sorted (None: it is made again
    #: after any release); and how many times jobs of the group had taken GPUs then
    ends: list[float] | None = None
    takes: int = 0

    def runs_past(self, due: float) -> bool:
        """Whether a job seen to end at step ``due`` still holds its GPUs at ``at``."""
        return due > self.at + 1e-9

    def claim(self, nodes: np.ndarray, counts: np.ndarray, gpus: int, vc: int, own: bool) -> None:
        """A job running past ``at`` took ``counts`` GPUs on ``nodes`` (``own``: counted in
        its VC's quota): less is spare; broken if it took reserved GPUs."""
        self.spare[nodes] -= counts
        if (self.spare[nodes] < 0).any():
            self.broken = True
        if self.quota_spare is not None and own and vc == self.vc:
            self.quota_spare -= gpus
            if self.quota_spare < 0:
                self.broken = True
