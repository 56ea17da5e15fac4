"""``JobSpeed``: each job's performance model, asked for its rate where it is placed.

A job whose workload row names an ``application`` progresses at that application's rate
for its GPU count and the nodes its GPUs span (``analysim/inputs/applications.py``); any
other job at rate 1. A **typed** application (its table has a ``gpu_type`` column) also
depends on the GPU type of those nodes: on GPUs of several types the job runs at the
slowest of their rates (``docs/heterogeneity.md``). The simulation asks
:meth:`JobSpeed.rate` when a job starts, resumes or migrates, and keeps it in
``Simulation.rate``; a job's run then ends at ``now + remaining / rate`` and a stop takes
``elapsed * rate`` off its remaining work. EASY backfill asks :attr:`JobSpeed.slowest` to
tell whether a job that has not been placed yet ends by a reservation's time whatever its
placement (for a typed application: the slowest over the types it may be placed on). With
no application in the workload (``in_use`` False) every rate is 1.0, and dividing or
multiplying by 1.0 is exact: the run is the one it was before rates existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysim.errors import describe_rows
from analysim.inputs.applications import Application, resolve_applications
from analysim.inputs.batch import BATCH_COLUMNS, BatchApplication, batch_applications
from analysim.inputs.domains import Partition

COLUMN = "application"


class JobSpeed:
    """The performance model of each job of ``jobs`` (a validated jobs table).

    ``nodes`` (the cluster's nodes table: each node's ``gpu_type`` and ``gpus``) and
    ``partition`` (which nodes each job may be placed on: those of its domain, or with
    ``borrowing`` those of the GPU types it accepts anywhere) are needed for typed
    applications."""

    def __init__(
        self,
        jobs: pd.DataFrame,
        gpus: list[int],
        given: Mapping[str, Any] | None = None,
        nodes: pd.DataFrame | None = None,
        partition: Partition | None = None,
        borrowing: bool = False,
    ) -> None:
        self._gpus = gpus
        self._borrowing = borrowing
        names = jobs[COLUMN] if COLUMN in jobs.columns else None
        #: whether any job has an application (else every rate is 1)
        self.in_use = names is not None and bool(names.notna().any())
        self.model: list[Application | None] = [None] * len(jobs)
        #: per job: the lowest rate it can have (1.0 without an application)
        self.slowest: list[float] = [1.0] * len(jobs)
        #: whether any job's application is typed (its rate depends on the GPU type)
        self.typed = False
        self._nodes = nodes
        self._node_types = None if nodes is None else nodes["gpu_type"].to_numpy(dtype=object)
        self._partition = partition
        self._node_type_list = [] if self._node_types is None else self._node_types.tolist()
        #: the rate of each (application, GPU count, nodes spanned, GPU types) seen
        self._rate_of: dict[tuple[str, int, int, frozenset[str]], float] = {}
        self._rate_on_one: dict[tuple[str, int, str], float] = {}  # (on one node)
        self._type_table: tuple[list[str], np.ndarray, np.ndarray] | None = None
        #: with a ``batch_size`` column: per job its batch rules (None: none), its batch size
        #: now (NaN: none), its asked and limits, its goodput packed on its asked GPUs
        self.batch_app: list[BatchApplication | None] | None = None
        self.batch = np.empty(0)
        self.batch_asked = self.batch_low = self.batch_high = np.empty(0)
        self._reference = np.empty(0)
        self._goodput: dict[tuple[str, int, int, int], float] = {}
        if self.in_use:
            self._bind(jobs, names, resolve_applications(given))
        if "batch_size" in jobs.columns and jobs["batch_size"].notna().any():
            self._bind_batch(jobs)

    def _bind(self, jobs: pd.DataFrame, names: pd.Series, known: dict[str, Application]) -> None:
        present = names.notna().to_numpy()
        unknown = present & ~names.isin(list(known)).to_numpy()
        if unknown.any():
            raise ValueError(
                f"Workload: column {COLUMN!r} must name a known application "
                f"{sorted(known)} (or add it: Simulation(..., applications={{name: table}})); "
                + describe_rows(jobs, unknown, COLUMN, "job_id")
            )
        model = [known[n] if p else None for n, p in zip(names.tolist(), present, strict=True)]
        counts = {m.name: set(m.gpu_counts) for m in model if m is not None}
        unlisted = [
            m is not None and g not in counts[m.name]
            for m, g in zip(model, self._gpus, strict=True)
        ]
        if any(unlisted):
            raise ValueError(
                f"Workload: column 'num_gpus' must be a GPU count the job's application "
                f"lists a throughput for ({_listed(model, unlisted)}); "
                + describe_rows(jobs, unlisted, "num_gpus", "job_id")
            )
        self.model = model
        self.typed = any(m is not None and m.typed for m in model)
        if not self.typed:
            self.slowest = [
                1.0 if m is None else m.slowest(g) for m, g in zip(model, self._gpus, strict=True)
            ]
            return
        types = self._placeable_types()
        domains = self._partition.job_domain.tolist()  # type: ignore[union-attr]
        # jobs of one application, GPU count and domain share their slowest rate and check
        slowest_of: dict[tuple[str, int, int], float] = {}
        self.slowest = [1.0] * len(model)
        for j, (m, g, d) in enumerate(zip(model, self._gpus, domains, strict=True)):
            if m is not None:
                key = (m.name, g, d)
                if key not in slowest_of:
                    self._check_types(jobs, m, g, types[d], d)
                    slowest_of[key] = m.slowest(g, types[d])
                self.slowest[j] = slowest_of[key]

    def _bind_batch(self, jobs: pd.DataFrame) -> None:
        """Check the batch columns against the jobs' applications (``inputs/batch.py``) and
        keep each job's batch rules, batch size and reference goodput."""
        known = batch_applications()
        batch = jobs["batch_size"].to_numpy(dtype=float)
        has = ~np.isnan(batch)
        names = [None if m is None else m.name for m in self.model]
        apps = [
            known.get(n) if h and n is not None else None for n, h in zip(names, has, strict=True)
        ]
        lacking = has & np.array([a is None for a in apps], dtype=bool)
        if lacking.any():
            raise ValueError(
                "Workload: column 'batch_size' needs an application with batch data "
                f"({sorted(known)}) in column {COLUMN!r}; "
                + describe_rows(jobs, lacking, "batch_size", "job_id")
            )
        limits = {}
        for column in BATCH_COLUMNS:
            values = jobs[column].to_numpy(dtype=float) if column in jobs.columns else batch
            outside = np.array(
                [
                    a is not None and not a.init_batch_size <= v <= a.max_batch_size
                    for a, v in zip(apps, values, strict=True)
                ],
                dtype=bool,
            )
            if outside.any():
                first = apps[int(np.argmax(outside))]
                raise ValueError(
                    f"Workload: column {column!r} must be within the application's validated "
                    f"batch sizes ({first.name!r}: {first.init_batch_size} to "
                    f"{first.max_batch_size}); " + describe_rows(jobs, outside, column, "job_id")
                )
            limits[column] = values
        unusable = np.array(
            [
                a is not None and not a.fits(g, int(b))
                for a, g, b in zip(apps, self._gpus, batch, strict=True)
            ],
            dtype=bool,
        )
        if unusable.any():
            first = apps[int(np.argmax(unusable))]
            raise ValueError(
                "Workload: column 'batch_size' must be usable on the row's num_gpus: a GPU count "
                f"the application measured ({first.name!r}: {first.gpu_counts[0]} to "
                f"{first.gpu_counts[-1]}) and at least {first.min_local} samples per GPU; "
                + describe_rows(jobs, unusable, "batch_size", "job_id")
            )
        self.batch_app = apps
        self.batch = batch.copy()
        self.batch_asked = batch.copy()
        self.batch_low, self.batch_high = limits["min_batch_size"], limits["max_batch_size"]
        self._reference = np.ones(len(apps))
        for j, app in enumerate(apps):
            if app is not None:
                g, b = self._gpus[j], int(batch[j])
                self._reference[j] = self.goodput(app, g, app.packed_nodes(g), b)
                listed = app.curves[g][0]
                self.slowest[j] = (
                    min(self.goodput(app, g, n, b) for n in listed) / self._reference[j]
                )

    def goodput(self, app: BatchApplication, gpus: int, nodes: int, batch: int) -> float:
        """``app.goodput`` (remembered)."""
        key = (app.name, gpus, nodes, batch)
        value = self._goodput.get(key)
        if value is None:
            value = self._goodput[key] = app.goodput(gpus, nodes, batch)
        return value

    def batch_rate(self, j: int, gpus: int, nodes: int) -> float:
        """Job ``j``'s rate on ``gpus`` GPUs spanning ``nodes`` nodes at its batch size now:
        its goodput there over its goodput packed on its asked GPUs at its asked batch."""
        app = self.batch_app[j]  # type: ignore[index]
        return self.goodput(app, gpus, nodes, int(self.batch[j])) / self._reference[j]

    def _placeable_types(self) -> list[list[str]]:
        """Per domain, the GPU types of the nodes its jobs may be placed on: the domain's
        nodes, or with borrowing every node of the types they accept (another VC's too)."""
        if self._node_types is None or self._partition is None:
            raise ValueError("JobSpeed: typed applications need nodes and partition")
        node_types = self._node_types
        masks = [
            d.type_mask if self._borrowing and d.type_mask is not None else d.mask
            for d in self._partition.domains
        ]
        return [sorted(set(node_types[mask].tolist())) for mask in masks]

    def _check_types(
        self,
        jobs: pd.DataFrame,
        app: Application,
        gpus: int,
        types: list[str],
        domain: int,
    ) -> None:
        """A typed application lists ``gpus`` GPUs on every type (``types``) its jobs of
        ``domain`` may be placed on: else an error naming the application, the type and
        those jobs."""
        if not app.typed:
            return
        gpu_type = next((t for t in types if not app.lists(gpus, t)), None)
        if gpu_type is not None:
            name = app.name
            listed = [t for t in app.gpu_types if app.lists(gpus, t)]
            names = jobs[COLUMN].to_numpy(dtype=object)
            mask = (
                (names == name)
                & (np.asarray(self._gpus) == gpus)
                & (self._partition.job_domain == domain)  # type: ignore[union-attr]
            )
            raise ValueError(
                f"Workload: application {name!r} lists no throughput on GPU type {gpu_type!r} "
                f"for {gpus} GPU(s), and these jobs may be placed on {gpu_type!r} nodes (add "
                f"the rows, or restrict the jobs' 'gpu_type' to types it lists for {gpus} "
                f"GPU(s): {'|'.join(listed)}); " + describe_rows(jobs, mask, COLUMN, "job_id")
            )

    def rate(self, j: int, nodes: np.ndarray, counts: np.ndarray) -> float:
        """Job ``j``'s rate on ``counts[i]`` GPUs of each node ``nodes[i]``."""
        model = self.model[j]
        if model is None:
            return 1.0
        if self.batch_app is not None and self.batch_app[j] is not None:
            return self.batch_rate(j, self._gpus[j], int(np.count_nonzero(counts)))
        if not model.typed:
            return model.rate(self._gpus[j], int(np.count_nonzero(counts)))
        node_type = self._node_type_list
        if len(nodes) == 1:  # the common case: one node, one type
            key1 = (model.name, self._gpus[j], node_type[int(nodes[0])])
            rate = self._rate_on_one.get(key1)
            if rate is None:
                rate = model.rate(key1[1], 1, key1[2])
                self._rate_on_one[key1] = rate
            return rate
        pairs = zip(np.asarray(nodes).tolist(), np.asarray(counts).tolist(), strict=True)
        held = [n for n, c in pairs if c]
        types = frozenset([node_type[n] for n in held])
        key = (model.name, self._gpus[j], len(held), types)
        rate = self._rate_of.get(key)
        if rate is None:  # the slowest type's rate, at the nodes the placement spans
            rate = min(model.rate(self._gpus[j], len(held), t) for t in types)
            self._rate_of[key] = rate
        return rate

    def type_table(self) -> tuple[list[str], np.ndarray, np.ndarray] | None:
        """With typed applications (finish-time fairness, ``results/fairness.py``): the
        cluster's GPU types, their GPUs, and :meth:`type_rates` over them (computed once);
        None otherwise."""
        if not self.typed or self._nodes is None:
            return None
        if self._type_table is None:
            gpus = self._nodes.groupby("gpu_type", sort=True)["gpus"].sum()
            names = [str(t) for t in gpus.index]
            self._type_table = (names, gpus.to_numpy(dtype=float), self.type_rates(names))
        return self._type_table

    def type_rates(self, type_names: list[str]) -> np.ndarray:
        """Per job (rows) and GPU type (columns, ``type_names``): the job's packed rate on
        GPUs of that type, 0.0 where it may not be placed on that type (finish-time
        fairness reads it: ``analysim/results/fairness.py``)."""
        n = len(self.model)
        node_types = self._node_types
        if node_types is None or self._partition is None:
            return np.ones((n, len(type_names)))
        partition = self._partition
        usable = np.array(
            [[t in set(present) for t in type_names] for present in self._placeable_types()],
            dtype=bool,
        ).reshape(len(partition.domains), len(type_names))
        rates = usable[partition.job_domain].astype(float)
        packed: dict[tuple[str, int], list[float]] = {}  # per (application, GPU count)
        for j, (m, g) in enumerate(zip(self.model, self._gpus, strict=True)):
            if m is not None:
                key = (m.name, g)
                if key not in packed:
                    packed[key] = [m.packed(g, t) if m.lists(g, t) else 0.0 for t in type_names]
                rates[j] *= packed[key]
        return rates


def _listed(model: list[Application | None], unlisted: list[bool]) -> str:
    first = next(m for m, bad in zip(model, unlisted, strict=True) if bad)
    return f"{first.name!r} lists {first.gpu_counts}"


__all__ = ["JobSpeed"]
