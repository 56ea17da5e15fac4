"""Resource mode with migration: the bundled openb trace replayed fast on part of its cluster.

Reads ``bundled:openb`` with arrivals ``--speedup`` times faster on ``--cluster-size`` of its
nodes (:func:`analysim.experiments.figures.load_trace`, as notebook 07's part 2), keeps the first
``--jobs`` jobs by submit time (all by default), and times each configuration (placement
``fgd``): ``fifo+migration``, ``fifo+preemption+migration``, ``srtf+preemption+migration``.

    python benchmarks/bench_migration.py --jobs 3000
    python benchmarks/bench_migration.py --configs fifo+migration
"""

from __future__ import annotations

import argparse

import _common

from analysim.inputs.workload import Workload

CONFIGS = {
    "fifo+migration": {"scheduler": "fifo", "migration": True},
    "fifo+preemption+migration": {"scheduler": "fifo", "preemption": True, "migration": True},
    "srtf+preemption+migration": {"scheduler": "srtf", "preemption": True, "migration": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None, help="first N jobs (default: all)")
    parser.add_argument("--speedup", type=float, default=200.0)
    parser.add_argument("--cluster-size", type=float, default=0.1)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args()
    pinning = _common.pin_one_core(not args.no_pin)
    _common.header("bench_migration", pinning)
    from analysim.experiments import figures

    trace = figures.load_trace(
        "bundled:openb", "openb", speedup=args.speedup, cluster_size=args.cluster_size
    )
    workload = trace.workload
    if args.jobs is not None:
        jobs = workload.jobs.sort_values("submit_time", kind="stable").head(args.jobs)
        workload = Workload.from_frame(jobs.reset_index(drop=True), name=f"openb first {args.jobs}")
    rows = []
    for name in args.configs:
        timing = _common.timed_simulation(
            workload, trace.cluster, {**CONFIGS[name], "placement": "fgd"}
        )
        summary = timing.pop("res").summary()
        rows.append(
            {
                "config": name,
                "jobs": len(workload.jobs),
                "total s": timing["total"],
                "cpu s": timing["cpu"],
                "migrations": int(summary["migrations"]),
                "preemptions": int(summary["preemptions"]),
                "avg JCT s": float(summary["avg_jct"]),
            }
        )
        print(f"{name}: {timing['total']:.1f} s", flush=True)
    columns = ["config", "jobs", "total s", "cpu s", "migrations", "preemptions", "avg JCT s"]
    print(_common.markdown_table(rows, columns))


if __name__ == "__main__":
    main()
