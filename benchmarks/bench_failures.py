"""Speed of a run with failures on: the ``venus`` month (26 days, ~27,000 jobs, 133 nodes)
with node failures, checkpoints and jobs' own failures, against the same month without; or
(``--preset seren``) the Acme ``seren`` month (30 days, ~108,000 jobs, 286 nodes) under its
own config (FIFO, EASY backfill), issue 28's target: under 20 s of CPU on one core.

Prints, per scheduler, process CPU seconds (best of ``--repeat``) of ``Simulation(...)``,
``.run()`` and ``.result()`` with failures off and on, and what the failures did (nodes
down, restarts, GPU-hours lost, goodput); for ``seren`` also the CPU seconds of generating
the month (``presets.workload``) and the verdict on generation + the run with failures on.
The failure settings (``FAILURES``): each node fails on average every 30 days
(exponential), is down 2 hours; jobs checkpoint every hour (at their ``checkpoint_cost``,
40 s up to 8 GPUs), pay 5 minutes to restart; 30 % of jobs fail by themselves early in
their run, without retry (``seren`` is also run without these: "nodes only"). The
process is pinned to one core (``--no-pin``: not).

    python benchmarks/bench_failures.py
    python benchmarks/bench_failures.py --repeat 1 --configs fifo
    python benchmarks/bench_failures.py --preset seren --repeat 1
"""

from __future__ import annotations

import argparse
import time

from _common import CONFIGS, pin_one_core

from analysim import SimConfig, Simulation, presets

FAILURES = {
    "node_mtbf": 30 * 86400.0,
    "repair_time": 7200.0,
    "checkpoint_every": 3600.0,
    "restart_overhead": 300.0,
    "job_failure_prob": 0.3,
}
PRESET_DAYS = {"venus": 26.0, "seren": 30.0}
#: issue 28: a seren month with failures on, generated and simulated, in under 20 s of CPU
SEREN_TARGET = 20.0


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
    parser.add_argument("--preset", default="venus", choices=sorted(PRESET_DAYS))
    parser.add_argument(
        "--configs",
        nargs="+",
        default=None,
        help="venus: names of _common.CONFIGS (default fifo, las+preemption); seren: its own",
    )
    parser.add_argument("--days", type=float, default=None, help="default: 26 (venus), 30")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one core")
    args = parser.parse_args(argv)
    print(pin_one_core(not args.no_pin))
    days = PRESET_DAYS[args.preset] if args.days is None else args.days
    started = time.process_time()
    workload = presets.workload(args.preset, seed=args.seed, days=days)
    built = time.process_time() - started
    cluster = presets.cluster(args.preset)
    print(
        f"{args.preset}, {days:g} days, seed {args.seed}, {len(workload.jobs):,} jobs "
        f"(generated in {built:.2f} s CPU); best of {args.repeat}"
    )
    if args.preset == "seren":  # with and without jobs' own failures (they lighten the load)
        base = presets.config("seren")
        nodes_only = {k: v for k, v in FAILURES.items() if k != "job_failure_prob"}
        runs = {"seren": (base, FAILURES), "seren, nodes only": (base, nodes_only)}
    else:
        names = args.configs or ["fifo", "las+preemption"]
        runs = {name: (SimConfig(**CONFIGS[name]), FAILURES) for name in names}
    for name, (base, failures) in runs.items():
        off, _ = _cpu_seconds(workload, cluster, base, args.repeat)
        on, result = _cpu_seconds(workload, cluster, base.replace(**failures), args.repeat)
        s, events = result.summary(), result.events
        downs = int((events["event"] == "node_down").sum())
        print(
            f"{name:<18} off {off:6.2f} s CPU  on {on:6.2f} s CPU  | {downs} node failures, "
            f"{int(s['restarts'])} restarts, {int(s['failed_jobs'])} jobs failed, "
            f"{s['lost_gpu_seconds'] / 3600:,.0f} GPU-h lost, goodput {s['goodput_ratio']:.3f}"
        )
        if args.preset == "seren":
            total = built + on
            verdict = "PASS" if total < SEREN_TARGET else "MISS"
            print(
                f"{'':<18} generated + run with failures on: {total:.2f} s CPU "
                f"(target < {SEREN_TARGET:g} s: {verdict})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
