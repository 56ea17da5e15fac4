"""Speed of a run with failures on: the ``venus`` month (26 days, ~27,000 jobs, 133 nodes)
with node failures, checkpoints and jobs' own failures, against the same month without.

Prints, per scheduler, process CPU seconds (best of ``--repeat``) of ``Simulation(...)``,
``.run()`` and ``.result()`` with failures off and on, and what the failures did (nodes
down, restarts, GPU-hours lost, goodput). The failure settings (``FAILURES``): each node
fails on average every 30 days (exponential), is down 2 hours; jobs checkpoint every hour
(at their ``checkpoint_cost``, 40 s up to 8 GPUs), pay 5 minutes to restart; 30 % of jobs
fail by themselves early in their run, without retry.

    python benchmarks/bench_failures.py
    python benchmarks/bench_failures.py --repeat 1 --configs fifo
"""

from __future__ import annotations

import argparse
import time

from _common import CONFIGS

from analysim import SimConfig, Simulation, presets

FAILURES = {
    "node_mtbf": 30 * 86400.0,
    "repair_time": 7200.0,
    "checkpoint_every": 3600.0,
    "restart_overhead": 300.0,
    "job_failure_prob": 0.3,
}


def _cpu_seconds(workload, cluster, config: SimConfig, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = Simulation(workload, cluster, config).run().result()
        best = min(best, time.process_time() - started)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", nargs="+", default=["fifo", "las+preemption"])
    parser.add_argument("--days", type=float, default=26)
    args = parser.parse_args(argv)
    workload = presets.workload("venus", seed=0, days=args.days)
    cluster = presets.cluster("venus")
    print(f"venus, {args.days:g} days, {len(workload.jobs):,} jobs; best of {args.repeat}")
    for name in args.configs:
        base = SimConfig(**CONFIGS[name])
        off, _ = _cpu_seconds(workload, cluster, base, args.repeat)
        on, result = _cpu_seconds(workload, cluster, base.replace(**FAILURES), args.repeat)
        s, events = result.summary(), result.events
        downs = int((events["event"] == "node_down").sum())
        print(
            f"{name:<16} off {off:6.2f} s CPU  on {on:6.2f} s CPU  | {downs} node failures, "
            f"{int(s['restarts'])} restarts, {int(s['failed_jobs'])} jobs failed, "
            f"{s['lost_gpu_seconds'] / 3600:,.0f} GPU-h lost, goodput {s['goodput_ratio']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
