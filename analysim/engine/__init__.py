"""The simulation engine, as a package of collaborators (``docs/semantics.md`` gives the rules):

* :mod:`~analysim.engine.simulation`: :class:`Simulation`, the leap to the next step at which
  anything can happen, arrivals and completions, the state changes (the parts call the
  public ``start_running``, ``preempt`` and ``migrate``), and the wiring of the parts below,
  with read-only views of the state they own;
* :mod:`~analysim.engine.setup`: the free functions that set a simulation up (placer,
  flags, the jobs' values and state, the ledger, the groups), each returning what it builds;
* :mod:`~analysim.engine.jobs`: :class:`~analysim.engine.jobs.JobFacts`
  (``Simulation.facts``), the fixed per-job lists the parts read, and
  :class:`~analysim.engine.jobs.JobTable` (``Simulation.table``), the same as arrays;
* :mod:`~analysim.engine.job_state`: :class:`~analysim.engine.job_state.JobState`
  (``Simulation.job_state``), the changing per-job state (work left, rate, service, times,
  restart counts, run versions and ends), with one owner;
* :mod:`~analysim.engine.queues`: the jobs still to arrive (``Simulation.arrivals``) and the
  waiting and running jobs per group with their counters (``Simulation.queues``);
* :mod:`~analysim.engine.readout`: what the simulation hands out, returned, not kept: the
  timeline samples' counters and captures, and the frozen record (``Simulation.record()``);
* :mod:`~analysim.engine.flags`: :class:`~analysim.engine.flags.Flags`
  (``Simulation.flags``), the choices of the set-up the parts act on;
* :mod:`~analysim.engine.clock`: :class:`~analysim.engine.clock.Clock`, the present time
  (``Simulation.now`` reads it) and the clock's rules (steps, quantum boundaries, when a
  time is seen, when the next timeline sample is due);
* :mod:`~analysim.engine.ledger`: who holds which GPUs, the only writer of cluster state;
* :mod:`~analysim.engine.rounds`: :class:`~analysim.engine.rounds.Rounds`, a collaborator
  (``Simulation.decider``): the decision rounds (rank, place, evict) and when they are due,
  with its parts: :mod:`~analysim.engine.starts` (a try to start a job, answered with why it
  failed), :mod:`~analysim.engine.ranker`, :mod:`~analysim.engine.easy` and
  :mod:`~analysim.engine.evictions`;
* :mod:`~analysim.engine.tenancy`: :class:`~analysim.engine.tenancy.Tenancy`, a collaborator
  (``Simulation.tenancy``): borrowing, reclaiming, migrating, defragmenting;
* :mod:`~analysim.engine.reservations`: EASY backfill's reservations;
* :mod:`~analysim.engine.ranking`, :mod:`~analysim.engine.las_ranking`: what a round reads of
  a ranking; LAS's ranking kept job by job (the fast path);
* :mod:`~analysim.engine.gpu_moves`: migration and defragmentation plans on whole-GPU counts;
* :mod:`~analysim.engine.book`, :mod:`~analysim.engine.resource_placement`,
  :mod:`~analysim.engine.book_fit`, :mod:`~analysim.engine.book_moves`: resource mode (GPU
  shares, CPU, memory), the same engine and rules on the resource book: the book the ledger
  keeps, where a job fits
  (:class:`~analysim.engine.resource_placement.ResourcePlacement`, ``.placement``), what the
  rounds ask of it and the tenancy's planner on it;
* :mod:`~analysim.engine.records`: the event log and timeline samples results are built from;
* :mod:`~analysim.engine.shortcuts`: the shortcuts, and the switch that turns them all off.

Each part reads the others only through public names (``tests/test_engine_layout.py``).
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
from analysim.engine.simulation import Simulation
from analysim.policies.scheduling import DONE, PENDING, RUNNING, UNSCHEDULABLE, WAITING
from analysim.policies.scheduling import STATUS_NAMES as _STATUS_NAMES

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
    "Simulation",
    "UNSCHEDULABLE",
    "WAITING",
]
