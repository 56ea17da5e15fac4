"""``Flags``: the choices fixed when a simulation is set up that its parts act on.

The simulation works them out once (from its config, cluster, scheduler, placer and
shortcuts) and hands them to the rounds and the tenancy as ``Simulation.flags``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Flags:
    """What a simulation's parts need to know of how it was set up."""

    #: whether a full round may be skipped when it provably changes nothing (a shortcut)
    skip_rounds: bool
    #: whether the placer keeps ``Placer.place``'s rule that a job that fits on one node
    #: goes on one node: the engine then asks its ``pick_node`` directly
    picks_one_node: bool
    #: whether, moreover, it picks any node with room for such a job
    picks_any_fitting_node: bool
    #: whether jobs may borrow idle GPUs of other VCs (then every VC is in one group)
    borrowing: bool
    #: whether the cluster is partitioned into VCs (one queue per VC), or one pool
    partitioned: bool
    #: whether the scheduler ranks by fixed keys, kept once for the run (a shortcut)
    static: bool
    #: whether the scheduler's ranking is kept between rounds (a shortcut; not ``static``)
    ranking_kept: bool


__all__ = ["Flags"]
