"""The AnalySIM paper's study: one scheduler, preemption off/on x migration off/on.

Four *arms* run the same workload, cluster, scheduler and seed; only the two switches differ,
so any difference in JCT, queueing or fragmentation is theirs. ``docs/study.md`` reports the
numbers on the ``venus_overloaded`` preset (the default here and of ``analysim study``) and
how to regenerate them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.inputs.arguments import cluster_argument, workload_argument
from analysim.simulate import simulate

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result

logger = logging.getLogger(__name__)

#: the preset the study runs on when no workload or cluster is given (``docs/study.md``)
DEFAULT_PRESET = "venus_overloaded"
#: the four arms: name -> the switches that differ
ARMS: dict[str, dict[str, bool]] = {
    "baseline": {"preemption": False, "migration": False},
    "migration": {"preemption": False, "migration": True},
    "preemption": {"preemption": True, "migration": False},
    "preemption+migration": {"preemption": True, "migration": True},
}
#: the metrics the study reports (columns of :func:`paper_study`)
METRICS = (
    "avg_jct",
    "p95_jct",
    "avg_queue_delay",
    "gpu_utilization",
    "avg_fragmented_gpus",
    "avg_blocked_jobs",
    "preemptions",
    "migrations",
)


def run_arms(
    workload: Workload | None = None,
    cluster: Cluster | None = None,
    *,
    scheduler: Any = "las",
    arms: dict[str, dict[str, bool]] | None = None,
    progress: bool = False,
    **options: Any,
) -> dict[str, Result]:
    """Run each arm (default :data:`ARMS`) and return its :class:`Result` by arm name.

    ``workload``/``cluster``: a Workload and a Cluster, or preset names; they default to the
    :data:`DEFAULT_PRESET` (``venus_overloaded``, the preset of ``docs/study.md``'s table;
    ``analysim study`` has the same default). A preset workload is seeded by
    ``options["seed"]`` (default 0). ``options`` are further
    :class:`~analysim.inputs.config.SimConfig` fields shared by every arm (they may not set
    ``preemption`` or ``migration``).
    """
    arms = ARMS if arms is None else arms
    clash = sorted({"preemption", "migration"} & set(options))
    if clash:
        raise ValueError(f"paper_study: {clash} are set by the arms; leave them out")
    seed = options.get("seed", 0)
    workload = DEFAULT_PRESET if workload is None else workload
    workload = workload_argument(workload, "paper_study", seed=seed)
    cluster = cluster_argument(DEFAULT_PRESET if cluster is None else cluster, "paper_study")
    results = {}
    for name, switches in arms.items():
        logger.info("study arm %s: %s", name, switches)
        results[name] = simulate(
            workload, cluster, scheduler=scheduler, progress=progress, **switches, **options
        )
    return results


def paper_study(
    workload: Workload | None = None,
    cluster: Cluster | None = None,
    *,
    scheduler: Any = "las",
    progress: bool = False,
    **options: Any,
) -> pd.DataFrame:
    """The study's table: one row per arm (``preemption``, ``migration`` and
    :data:`METRICS`). Arguments as for :func:`run_arms`."""
    results = run_arms(workload, cluster, scheduler=scheduler, progress=progress, **options)
    return study_table(results)


def study_table(results: dict[str, Result]) -> pd.DataFrame:
    """One row per arm of already-run results."""
    rows = {}
    for name, result in results.items():
        summary = result.summary()
        rows[name] = {
            "preemption": bool(result.config["preemption"]),
            "migration": bool(result.config["migration"]),
            **{metric: float(summary[metric]) for metric in METRICS},
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("arm")
