"""Check that a speed change changed speed only: fingerprints of 19 varied runs.

Runs 8 days of the ``venus`` workload at load 1.3 (seed 1) under 19 configurations (every
scheduler, preemption, greedy and EASY backfill, migration, borrowing, and VCs that own
nodes, hold quotas, or share one pool), and the first 1,500 jobs of the bundled openb trace
(GPU shares, CPU and memory: resource mode) under 8 more (FGD-study and whole-GPU placers,
preemption, EASY backfill, migration), hashes each run's ``jobs``, ``events`` and
``timeline`` frames, and either saves the fingerprints or compares them with saved ones.
About two minutes.

    python benchmarks/same_results.py save /tmp/before.json     # before the change
    python benchmarks/same_results.py compare /tmp/before.json  # after it: exit 1 if any differ

``--reference`` also runs each configuration with every shortcut of the engine off
(``Simulation(..., reference=True)``: no memo, no kept ranking, no skipped round, no placer
shortcut) and checks that it gives the same fingerprint: the shortcuts change speed only.
About five more minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed
import pandas as pd

from analysim import Cluster, SimConfig, Simulation, presets, simulate
from analysim.presets import VENUS_VC_GPUS

RUNS: dict[str, dict] = {
    "fifo": {"scheduler": "fifo"},
    "las_pre": {"scheduler": "las", "preemption": True},
    "srtf_pre": {"scheduler": "srtf", "preemption": True},
    "fair_pre": {"scheduler": "fair", "preemption": True},
    "sjf_backfill": {"scheduler": "sjf", "backfill": True},
    "las_all": {"scheduler": "las", "preemption": True, "migration": True, "borrowing": True},
    "fifo_migration_spread": {"scheduler": "fifo", "migration": True, "placement": "spread"},
    "las_pre_first_fit": {"scheduler": "las", "preemption": True, "placement": "first_fit"},
    "quota_las_pre": {"scheduler": "las", "preemption": True, "cluster": "quota"},
    "quota_fair_pre": {"scheduler": "fair", "preemption": True, "cluster": "quota"},
    "quota_las_all": {
        "scheduler": "las",
        "preemption": True,
        "migration": True,
        "borrowing": True,
        "cluster": "quota",
    },
    "pool_fair_pre": {"scheduler": "fair", "preemption": True, "cluster": "pool"},
    "pool_srtf_pre_topology": {
        "scheduler": "srtf",
        "preemption": True,
        "placement": "topology",
        "cluster": "pool",
    },
    "pool_fifo_backfill_random": {
        "scheduler": "fifo",
        "backfill": True,
        "placement": "random",
        "cluster": "pool",
    },
    "las_pre_easy": {"scheduler": "las", "preemption": True, "backfill": "easy"},
    "fifo_easy": {"scheduler": "fifo", "backfill": "easy"},
    "fifo_easy_random": {"scheduler": "fifo", "backfill": "easy", "placement": "random"},
    "quota_srtf_pre_easy": {
        "scheduler": "srtf",
        "preemption": True,
        "backfill": "easy",
        "cluster": "quota",
    },
    "pool_las_pre_easy_topology": {
        "scheduler": "las",
        "preemption": True,
        "backfill": "easy",
        "placement": "topology",
        "cluster": "pool",
    },
}


#: resource-mode runs on the openb trace (``resource_trace``), every one with its placer
RESOURCE_RUNS: dict[str, dict] = {
    "openb_fifo_fgd": {"scheduler": "fifo", "placement": "fgd"},
    "openb_fifo_best_fit": {"scheduler": "fifo", "placement": "best_fit"},
    "openb_fifo_first_fit_easy": {
        "scheduler": "fifo",
        "placement": "first_fit",
        "backfill": "easy",
    },
    "openb_las_pre_fgd": {"scheduler": "las", "preemption": True, "placement": "fgd"},
    "openb_srtf_pre_mig_fgd": {
        "scheduler": "srtf",
        "preemption": True,
        "migration": True,
        "placement": "fgd",
    },
    "openb_fifo_mig_gpu_packing": {
        "scheduler": "fifo",
        "migration": True,
        "placement": "gpu_packing",
    },
    "openb_fifo_easy_dot_product": {
        "scheduler": "fifo",
        "backfill": "easy",
        "placement": "dot_product",
    },
    "openb_fifo_backfill_consolidate": {
        "scheduler": "fifo",
        "backfill": True,
        "placement": "consolidate",
    },
}


def resource_trace():
    """The first 1,500 jobs of the bundled openb trace, 200 times faster, on a tenth of its
    cluster."""
    from analysim import Workload
    from analysim.experiments import figures

    trace = figures.load_trace("bundled:openb", "openb", speedup=200.0, cluster_size=0.1)
    jobs = trace.workload.jobs.sort_values("submit_time", kind="stable").head(1500)
    return Workload.from_frame(jobs.reset_index(drop=True), name="openb first 1500"), trace.cluster


def clusters() -> dict[str, Cluster]:
    """The venus cluster, and its 135 nodes as quota VCs over one pool, and as one pool."""
    return {
        "nodes": presets.cluster("venus_overloaded"),
        "quota": Cluster.uniform(9, 15, 8, quotas=dict(VENUS_VC_GPUS), name="venus-quotas"),
        "pool": Cluster.uniform(9, 15, 8, name="venus-pool"),
    }


def fingerprint(result) -> str:
    digest = hashlib.sha256()
    for frame in (result.jobs, result.events, result.timeline):
        digest.update(pd.util.hash_pandas_object(frame.astype(str), index=True).values.tobytes())
    return digest.hexdigest()[:16]


def fingerprints(reference: bool = False) -> tuple[dict[str, str], list[str]]:
    """The fingerprint of each run, and (with ``reference``) the runs whose reference-mode
    fingerprint differs."""
    venus = presets.workload("venus_overloaded", seed=1, days=8, load_scale=1.3)
    by_name = clusters()
    openb, by_name["openb"] = resource_trace()
    prints, unlike = {}, []
    runs = {**RUNS, **{name: {**o, "cluster": "openb"} for name, o in RESOURCE_RUNS.items()}}
    for name, options in runs.items():
        options = dict(options)
        cluster = by_name[options.pop("cluster", "nodes")]
        workload = openb if cluster is by_name["openb"] else venus
        started = time.perf_counter()
        prints[name] = fingerprint(simulate(workload, cluster, seed=3, **options))
        line = f"{name:<26} {prints[name]}  {time.perf_counter() - started:5.2f} s"
        if reference:
            started = time.perf_counter()
            sim = Simulation(workload, cluster, SimConfig(seed=3, **options), reference=True)
            plain = fingerprint(sim.run().result())
            same = "same" if plain == prints[name] else "DIFFERENT"
            line += f"  reference {plain} {same} {time.perf_counter() - started:6.2f} s"
            if plain != prints[name]:
                unlike.append(name)
        print(line, flush=True)
    return prints, unlike


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["save", "compare"])
    parser.add_argument("path", type=Path, help="the JSON file of fingerprints")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also run each configuration with every engine shortcut off; exit 1 if any differs",
    )
    args = parser.parse_args(argv)
    if args.action == "compare" and not args.path.is_file():
        parser.error(f"{args.path}: no saved fingerprints (run 'save' first)")
    prints, unlike = fingerprints(args.reference)
    if args.reference:
        print(
            "reference mode: same runs"
            if not unlike
            else f"reference mode DIFFERENT: {', '.join(unlike)}"
        )
    if args.action == "save":
        args.path.write_text(json.dumps(prints, indent=1) + "\n")
        print(f"saved {len(prints)} fingerprints to {args.path}")
        return 1 if unlike else 0
    saved = json.loads(args.path.read_text())
    differ = sorted(name for name in prints if saved.get(name) != prints[name])
    print("identical" if not differ else f"DIFFERENT: {', '.join(differ)}")
    return 1 if differ or unlike else 0


if __name__ == "__main__":
    sys.exit(main())
