"""Small teaching scenarios: each shows one mechanism changing the outcome.

Each :class:`Scenario` is a handful of jobs on a few GPUs with the settings it is meant to be
run under, and the one switch (``lesson``) whose flip visibly changes the result: the jobs'
completion times differ, and the Gantt chart of the step-through panel shows why::

    import analysim as asim
    from analysim.inputs import scenarios

    s = scenarios.get("preemption")
    on = asim.simulate(s.workload(), s.cluster(), s.config())
    off = asim.simulate(s.workload(), s.cluster(), s.config(**s.without()))

``asim.explore("preemption")`` opens the explorer on it (scenarios are offered in its
workload list next to ``toy``). ``tests/test_teaching_scenarios.py`` checks that each lesson
changes the outcome the way its description says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload

COLUMNS = ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"]

TWO_HALVES_THEN_A_WHOLE = (
    ("a1", "a", "ann", 0.0, 3600.0, 2),
    ("a2", "a", "ann", 30.0, 3600.0, 2),
    ("big", "a", "bo", 60.0, 1800.0, 4),
)
"""Two long 2-GPU jobs, then a 4-GPU job: the jobs of the fragmentation and migration
scenarios (on two 4-GPU nodes)."""


@dataclass(frozen=True)
class Scenario:
    """A small workload and cluster, the settings to run it with, and the lesson: the
    setting (``lesson``, with its value ``on``) whose flip to ``off`` changes the outcome."""

    name: str
    description: str
    jobs: tuple[tuple, ...]
    build_cluster: Callable[[], Cluster]
    settings: dict[str, Any] = field(default_factory=dict)
    lesson: str = ""
    on: Any = True
    off: Any = False

    def workload(self) -> Workload:
        return Workload.from_frame(pd.DataFrame(list(self.jobs), columns=COLUMNS), name=self.name)

    def cluster(self) -> Cluster:
        return self.build_cluster()

    def config(self, **changes: Any) -> SimConfig:
        """The scenario's settings (the lesson's switch on), with ``changes``."""
        return SimConfig.from_dict({**self.settings, self.lesson: self.on, **changes})

    def without(self) -> dict[str, Any]:
        """The change that turns the lesson off."""
        return {self.lesson: self.off}


def _one_pool(nodes: int, gpus: int, name: str) -> Callable[[], Cluster]:
    return lambda: Cluster.uniform(1, nodes, gpus, name=name)


LAS_TWO_QUEUES = {"name": "las", "thresholds": [3600.0], "starvation_factor": None}
LAS_ONE_QUEUE = {"name": "las", "thresholds": [360_000.0], "starvation_factor": None}

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "preemption",
            "A 1-hour job holds the only node; a 5-minute job arrives. Under SRTF with "
            "preemption the short job evicts the long one at the round of its arrival and "
            "finishes 5 minutes later; without preemption it waits the hour out.",
            (
                ("long", "a", "ann", 0.0, 3600.0, 4),
                ("short", "a", "bo", 120.0, 300.0, 4),
            ),
            _one_pool(1, 4, "one node"),
            {"scheduler": "srtf", "quantum": 60.0, "checkpoint_cost": 30},
            lesson="preemption",
        ),
        Scenario(
            "las_queues",
            "LAS with two queues (split at 1 GPU-hour of service): a 4-hour job drops to the "
            "second queue after 15 minutes on 4 GPUs, so the 10-minute jobs arriving later "
            "preempt it. With one queue (threshold 100 GPU-h) LAS orders by arrival and the "
            "short jobs wait behind the long one.",
            (
                ("long", "a", "ann", 0.0, 14400.0, 4),
                *((f"s{k}", "a", "bo", 1800.0 + 1800.0 * k, 600.0, 4) for k in range(4)),
            ),
            _one_pool(1, 4, "one node"),
            {"preemption": True, "quantum": 60.0, "checkpoint_cost": 30},
            lesson="scheduler",
            on=LAS_TWO_QUEUES,
            off=LAS_ONE_QUEUE,
        ),
        Scenario(
            "fragmentation",
            "Two long 2-GPU jobs, then a 4-GPU job, on two 4-GPU nodes. Placement 'spread' "
            "puts the 2-GPU jobs on different nodes: 4 GPUs are free but 2 on each node, and "
            "the 4-GPU job waits for an hour. 'consolidate' packs them on one node and the "
            "4-GPU job starts at once.",
            TWO_HALVES_THEN_A_WHOLE,
            _one_pool(2, 4, "two nodes"),
            {"placement": "consolidate"},
            lesson="placement",
            on="consolidate",
            off="spread",
        ),
        Scenario(
            "migration",
            "The fragmentation scenario under 'spread': with migration, the engine moves one "
            "2-GPU job next to the other (paying a 60 s migration cost) so the 4-GPU job "
            "starts at once instead of waiting an hour.",
            TWO_HALVES_THEN_A_WHOLE,
            _one_pool(2, 4, "two nodes"),
            {"placement": "spread", "migration_cost": 60},
            lesson="migration",
        ),
        Scenario(
            "borrowing",
            "VC a owns one node, VC b the other. a submits four 4-GPU jobs while b is idle: "
            "with borrowing a runs two at once on b's node, until b's job arrives and "
            "reclaims it; without, a's jobs queue on its own node while b's node stays idle.",
            (
                *((f"a{k}", "a", "ann", 60.0 * k, 1800.0, 4) for k in range(4)),
                ("b1", "b", "bo", 2400.0, 1200.0, 4),
            ),
            lambda: Cluster.uniform(1, 2, 4, vc_nodes={"a": 1, "b": 1}, name="two VCs"),
            {"preemption": False, "checkpoint_cost": 30},
            lesson="borrowing",
        ),
    )
}


def names() -> list[str]:
    """Names of the teaching scenarios, in teaching order."""
    return list(SCENARIOS)


def get(name: str) -> Scenario:
    """The scenario called ``name`` (``ValueError`` naming the known ones otherwise)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; known scenarios: {names()}")
    return SCENARIOS[name]
