"""``SimConfig``: the one plain, JSON-serialisable configuration every front end shares."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysim.inputs.failures import (
    check_failure_settings,
    failure_schedule,
    schedule_records,
    spare_setting,
)
from analysim.inputs.validation import MAX_SEED, bounded, period, seconds
from analysim.policies import COSTS, PLACERS, SCHEDULERS
from analysim.policies.registry import spec_of
from analysim.sharing.placers import share_placer_of

BACKFILL_MODES = (False, True, "easy")
"""The values of ``SimConfig.backfill``: none, without reservation, EASY (with one)."""
NUMERIC_FIELDS = (
    "step",
    "quantum",
    "sample_every",
    "defrag_every",
    "borrow_limit",
    "seed",
    "node_mtbf",
    "failure_shape",
    "repair_time",
    "checkpoint_every",
    "restart_overhead",
    "job_failure_prob",
    "rescale_cost",
)
PolicySpec = Any  # a name, a {"name": ..., **params} dict, or a policy instance


def _cost_model(spec: PolicySpec):
    """A cost model from its spec; a bare number means a constant number of seconds."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        spec = {"name": "constant", "seconds": spec}
    return COSTS.make(spec)


@dataclass(frozen=True)
class SimConfig:
    """How a simulation decides and measures.

    scheduler: ranking policy (``fifo``, ``sjf``, ``srtf``, ``las``, ``fair``, ``priority``:
        the workload's ``priority`` column, which it must have). ``las`` takes
        ``{"name": "las", "thresholds": [18000], "starvation_factor": 4}``: its queue limits
        in GPU-seconds of attained service (GPUs held x seconds run; 18,000 = 5 GPU-hours).
    placement: placement policy (``consolidate``, ``first_fit``, ``spread``, ``random``,
        ``topology``; or one of the FGD study's, ``fgd``, ``best_fit``, ``dot_product``,
        ``gpu_packing``, ``gpu_clustering``, which runs the engine in resource mode).
    preemption: let waiting jobs evict lower-ranked running jobs at scheduling rounds.
    quantum: seconds between scheduling rounds (preemption and re-ranking happen then).
    checkpoint_cost: cost model of the seconds a job loses per preemption.
    backfill: ``False``: strict head-of-line blocking per queue (VC); ``True``: let a job
        start when a higher-ranked job of its queue cannot (no reservation: a large job can
        starve); ``"easy"``: EASY backfill as Slurm's ``sched/backfill`` does it, a job may
        pass the first job of its queue that cannot start only if it does not delay the
        time that job was promised (its *reservation*, ``docs/semantics.md``).
    migration: when a waiting job cannot be placed although enough GPUs are free to it
        (fragmentation), move running jobs to other nodes to make room (fewest GPUs moved).
    migration_cost: cost model of the seconds a job loses per migration.
    rescale_cost: seconds of work an elastic job loses each time an elastic scheduler gives
        it another GPU count (a checkpoint-restart, kept apart from ``checkpoint_cost`` so
        resizes can be studied on their own; ``docs/elastic.md``).
    defrag_every: seconds between periodic defragmentation passes (``None``: none); needs
        ``migration``.
    borrowing: let a VC run jobs on idle GPUs of other VCs; the owner reclaims them (the
        borrower is preempted and pays its checkpoint cost) when it needs them.
    borrow_limit: the most GPUs a VC may borrow at once, as a fraction of its own capacity.
    step: the clock's step in seconds; every decision happens at a multiple of it.
    sample_every: seconds between rows of ``Result.timeline``.
    seed: seed of the run's random generator (random placement, ties).
    leap: jump over steps where nothing can happen (identical results, much faster).
    node_mtbf: mean seconds between failures of each node (drawn from the seed; ``None``: no
        drawn failures), or a dict of them per GPU type; a failed node's jobs are killed and
        it is down ``repair_time`` s.
    failure_shape: the Weibull shape of the times between failures (1: exponential).
    repair_time: seconds a failed node stays down (needed with ``node_mtbf``).
    checkpoint_every: seconds of work (at rate 1) between a job's checkpoints, each costing its
        ``checkpoint_cost`` (``None``: none; a killed job loses the work since its last
        checkpoint, preemption or start).
    restart_overhead: seconds a killed job pays when it runs again (``None``: 0).
    failures: a table of node downtimes, columns ``node, down, up`` (seconds), as a DataFrame
        or records (kept as a tuple of ``(node, down, up)``); ``None``: none.
    job_failure_prob: the probability that a job fails by itself, once, early in its run
        (after an exponential time of mean 300 s of work, at most its duration).
    retry_failed: whether a job that failed by itself restarts (else it ends ``failed``).
    fates: how a job ends: ``"model"`` (every job runs its duration and completes unless the
        failure model fails it) or ``"recorded"`` (each job runs its duration and ends in
        the workload's recorded ``state``: a FAILED, NODE_FAIL or TIMEOUT job fails for good
        then; needs a ``state`` column, ``job_failure_prob`` 0 and no ``retry_failed``).
    spare_nodes: nodes held out of normal placement, to stand in for failed ones: a count
        (the last nodes of the cluster) or a list of node names (0: none; needs node
        failures). A job killed by a node failure restarts at once on a spare that can
        take the failed node's place; the repaired node becomes a spare.
    ``docs/failures.md`` gives the failure rules.
    """

    scheduler: PolicySpec = "fifo"
    placement: PolicySpec = "consolidate"
    preemption: bool = False
    quantum: float = 60.0
    checkpoint_cost: PolicySpec = field(default_factory=lambda: {"name": "size_scaled"})
    backfill: bool | str = False
    migration: bool = False
    migration_cost: PolicySpec = field(default_factory=lambda: {"name": "size_scaled"})
    rescale_cost: float = 0.0
    defrag_every: float | None = None
    borrowing: bool = False
    borrow_limit: float = 1.0
    step: float = 1.0
    sample_every: float = 300.0
    seed: int = 0
    leap: bool = True
    node_mtbf: float | dict[str, float] | None = None
    failure_shape: float = 1.0
    repair_time: float | None = None
    checkpoint_every: float | None = None
    restart_overhead: float | None = None
    failures: Any = None
    job_failure_prob: float = 0.0
    retry_failed: bool = False
    fates: str = "model"
    spare_nodes: int | tuple[str, ...] = 0

    def __post_init__(self) -> None:
        self._plain_numbers()
        for name in ("step", "quantum", "sample_every"):
            period(getattr(self, name), f"SimConfig: {name}")
        ratio = self.quantum / self.step
        if abs(ratio - round(ratio)) > 1e-9:
            raise ValueError(
                f"SimConfig: quantum ({self.quantum}) must be a whole multiple of "
                f"step ({self.step})"
            )
        if not (isinstance(self.backfill, bool) or self.backfill == "easy"):
            raise ValueError(
                f"SimConfig: backfill must be one of {list(BACKFILL_MODES)}, got {self.backfill!r}"
            )
        for name in ("preemption", "leap", "migration", "borrowing"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"SimConfig: {name} must be True or False, got {getattr(self, name)!r}"
                )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"SimConfig: seed must be a whole number >= 0, got {self.seed!r}")
        bounded(self.seed, "SimConfig: seed", low=0, high=MAX_SEED, whole=True)
        self._check_defrag_and_borrowing()
        seconds(self.rescale_cost, "SimConfig: rescale_cost", positive=False)
        object.__setattr__(self, "failures", failure_schedule(self.failures))
        object.__setattr__(self, "spare_nodes", spare_setting(self.spare_nodes))
        check_failure_settings(self)
        # fail now, not mid-run, on an unknown policy or bad parameters
        self.make_scheduler()
        self.make_placer()
        self.make_cost_model()
        self.make_migration_cost_model()

    def _plain_numbers(self) -> None:
        """numpy numbers in the numeric fields become the Python numbers they hold (the
        config stays JSON-serialisable); numpy booleans stay refused."""
        for name in NUMERIC_FIELDS:
            value = getattr(self, name)
            if isinstance(value, np.generic) and not isinstance(value, np.bool_):
                object.__setattr__(self, name, value.item())

    def _check_defrag_and_borrowing(self) -> None:
        every = self.defrag_every
        if every is not None:
            if isinstance(every, bool) or not isinstance(every, (int, float)):
                raise ValueError(f"SimConfig: defrag_every must be seconds or None, got {every!r}")
            period(every, "SimConfig: defrag_every")
            ratio = every / self.step
            if abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(
                    f"SimConfig: defrag_every ({every}) must be a whole multiple of "
                    f"step ({self.step})"
                )
            if not self.migration:
                raise ValueError("SimConfig: defrag_every needs migration=True")
        limit = self.borrow_limit
        if (
            isinstance(limit, bool)
            or not isinstance(limit, (int, float))
            or not math.isfinite(limit)
            or limit < 0
        ):
            raise ValueError(
                f"SimConfig: borrow_limit must be a finite fraction >= 0 of a VC's capacity, "
                f"got {limit!r}"
            )

    def make_scheduler(self):
        return SCHEDULERS.make(self.scheduler)

    def make_placer(self):
        """The placer: a whole-GPU one (``PLACERS``), or one of the FGD study's
        (``analysim.sharing.SHARE_PLACERS``: the run is then in resource mode)."""
        return share_placer_of(self.placement) or PLACERS.make(self.placement)

    def make_cost_model(self):
        return _cost_model(self.checkpoint_cost)

    def make_migration_cost_model(self):
        return _cost_model(self.migration_cost)

    # -- plain data ---------------------------------------------------------------------------
    @classmethod
    def fields(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SimConfig:
        """Build from a dict, naming any key that is not a field."""
        unknown = sorted(set(values) - set(cls.fields()))
        if unknown:
            raise ValueError(f"SimConfig: unknown option(s) {unknown}; options are {cls.fields()}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable values; policy instances become their specs."""
        plain = {name: spec_of(getattr(self, name)) for name in self.fields()}
        plain["failures"] = schedule_records(self.failures)
        if isinstance(self.spare_nodes, tuple):
            plain["spare_nodes"] = list(self.spare_nodes)
        return plain

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def replace(self, **changes: Any) -> SimConfig:
        """A copy with some fields changed (unknown names are an error)."""
        return SimConfig.from_dict({**{n: getattr(self, n) for n in self.fields()}, **changes})
