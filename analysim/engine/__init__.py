"""The simulation engine, as a package of collaborators (``docs/semantics.md`` gives the rules):

* :mod:`~analysim.engine.simulation`: :class:`Simulation`, the present time and the leap to
  the next step at which anything can happen, arrivals and completions, and the wiring of
  the parts below;
* :mod:`~analysim.engine.clock`: the clock's rules (steps, quantum boundaries, when a time is
  seen);
* :mod:`~analysim.engine.ledger`: who holds which GPUs, the only writer of cluster state;
* :mod:`~analysim.engine.rounds`: the decision rounds (rank, place, evict);
* :mod:`~analysim.engine.tenancy`: borrowing, reclaiming, migrating, defragmenting;
* :mod:`~analysim.engine.las_ranking`: LAS's ranking kept job by job (the fast path);
* :mod:`~analysim.engine.resources`: resource mode (GPU shares, CPU, memory), its ledger
  and where a job fits;
* :mod:`~analysim.engine.records`: the event log and timeline samples results are built from;
* :mod:`~analysim.engine.shortcuts`: the shortcuts, and the switch that turns them all off.
"""

from __future__ import annotations

import numpy as np

from analysim.engine.records import (
    EVENT_NAMES,
    FINISH,
    MIGRATE,
    PREEMPT,
    RECLAIM,
    REJECT,
    RESUME,
    START,
    SUBMIT,
)
from analysim.engine.resources import ResourceSimulation
from analysim.engine.simulation import Simulation
from analysim.status import DONE, PENDING, RUNNING, UNSCHEDULABLE, WAITING
from analysim.status import STATUS_NAMES as _STATUS_NAMES

STATUS_NAMES = np.array(_STATUS_NAMES, dtype=object)

__all__ = [
    "DONE",
    "EVENT_NAMES",
    "FINISH",
    "MIGRATE",
    "PENDING",
    "PREEMPT",
    "RECLAIM",
    "REJECT",
    "RESUME",
    "RUNNING",
    "START",
    "STATUS_NAMES",
    "SUBMIT",
    "ResourceSimulation",
    "Simulation",
    "UNSCHEDULABLE",
    "WAITING",
]
