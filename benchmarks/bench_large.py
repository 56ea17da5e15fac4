"""The ``large`` preset: 1,000,000 jobs on 10,000 GPUs with ``fifo``; time and peak memory.

The measured part runs in a fresh Python process (``multiprocessing`` "spawn"), so nothing
the parent allocated counts: it imports analysim, builds the workload and the cluster, runs
``Simulation(...)`` with a progress bar, builds ``.result()`` and the summary, and reports
the time of each phase and the peak resident memory (``getrusage(RUSAGE_SELF).ru_maxrss``)
after each. Issue 2's target: simulation under 60 s and the whole process under 4 GB.

    python benchmarks/bench_large.py                          # 1,000,000 jobs, 10,000 GPUs
    python benchmarks/bench_large.py --jobs 100000 --gpus 1000  # a quick try
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from _common import CONFIGS, header, markdown_table, pin_one_core, run_in_fresh_process

TARGET_SECONDS = 60.0
TARGET_GB = 4.0
GB = 1024**3


def _peak_rss() -> int:
    """Peak resident set size of this process in bytes (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _current_rss() -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def measure(jobs: int, gpus: int, config_name: str, seed: int, progress: bool, trace: bool):
    """The measured part; runs in the child process. Returns a list of phase dicts."""
    phases = []
    if trace:
        import tracemalloc

        tracemalloc.start()

    cpu_mark = [time.process_time()]

    def mark(name: str, seconds: float, **extra) -> None:
        cpu_now = time.process_time()
        phase = {
            "phase": name,
            "seconds": seconds,
            "cpu s": cpu_now - cpu_mark[0],
            "peak RSS GB": _peak_rss() / GB,
            "RSS GB": _current_rss() / GB,
        }
        if trace:
            import tracemalloc

            current, peak = tracemalloc.get_traced_memory()
            phase["traced GB"] = current / GB
            phase["traced peak GB"] = peak / GB
        phase.update(extra)
        phases.append(phase)
        cpu_mark[0] = time.process_time()
        print(
            f"  {name:<22} {seconds:8.2f} s   peak RSS {phase['peak RSS GB']:.2f} GB   "
            f"RSS {phase['RSS GB']:.2f} GB",
            file=sys.stderr,
            flush=True,
        )

    t = time.perf_counter()
    from analysim import presets
    from analysim.engine import Simulation
    from analysim.inputs.config import SimConfig

    mark("import analysim", time.perf_counter() - t)

    t = time.perf_counter()
    workload = presets.workload("large", seed=seed, jobs=jobs, gpus=gpus)
    cluster = presets.cluster("large", gpus=gpus)
    mark(
        "build workload+cluster",
        time.perf_counter() - t,
        days=float(workload.jobs["submit_time"].max()) / 86_400,
    )

    t = time.perf_counter()
    sim = Simulation(
        workload, cluster, SimConfig.from_dict(CONFIGS[config_name]), progress=progress
    )
    mark("Simulation(...)", time.perf_counter() - t)

    t = time.perf_counter()
    sim.run()
    mark("sim.run()", time.perf_counter() - t)

    t = time.perf_counter()
    result = sim.result()
    mark(
        "sim.result()",
        time.perf_counter() - t,
        events=len(result.events),
        timeline=len(result.timeline),
    )

    t = time.perf_counter()
    summary = result.summary()
    mark(
        "result.summary()",
        time.perf_counter() - t,
        jobs=int(summary["jobs"]),
        avg_jct=float(summary["avg_jct"]),
        utilization=float(summary["gpu_utilization"]),
    )
    return phases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs in the workload")
    parser.add_argument(
        "--gpus", type=int, default=10_000, help="GPUs (a multiple of 8; 8-GPU nodes)"
    )
    parser.add_argument(
        "--config", choices=list(CONFIGS), default="fifo", help="configuration to simulate"
    )
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also report tracemalloc's traced peak (slows the run noticeably)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="measure in this process instead of a fresh subprocess",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = parser.parse_args(argv)

    pinning = pin_one_core(not args.no_pin)  # inherited by the child
    header("bench_large: large preset, time and peak memory", pinning)
    print(
        f"large preset: {args.jobs:,} jobs on {args.gpus:,} GPUs, {args.config}, "
        f"seed {args.seed}; measured in "
        + ("this process" if args.in_process else "a fresh subprocess (spawn)"),
        flush=True,
    )
    measure_args = (
        args.jobs,
        args.gpus,
        args.config,
        args.seed,
        not args.no_progress,
        args.tracemalloc,
    )
    wall = time.perf_counter()
    if args.in_process:
        phases = measure(*measure_args)
    else:
        status, payload = run_in_fresh_process(measure, *measure_args)
        if status != "ok":
            print(payload, file=sys.stderr)
            return 1
        phases = payload
    wall = time.perf_counter() - wall

    by = {p["phase"]: p for p in phases}
    build = by["build workload+cluster"]["seconds"]
    sim_phases = ("Simulation(...)", "sim.run()", "sim.result()")
    simulate = sum(by[k]["seconds"] for k in sim_phases)
    simulate_cpu = sum(by[k]["cpu s"] for k in sim_phases)
    peak = max(p["peak RSS GB"] for p in phases)
    info = by["result.summary()"]
    columns = ["phase", "seconds", "cpu s", "peak RSS GB", "RSS GB"]
    if args.tracemalloc:
        columns += ["traced GB", "traced peak GB"]
    print()
    print(
        f"{info['jobs']:,} jobs ({by['build workload+cluster']['days']:.1f} days) on "
        f"{args.gpus:,} GPUs, {args.config}: avg JCT {info['avg_jct']:,.0f} s, "
        f"utilisation {info['utilization']:.3f}; {by['sim.result()']['events']:,} events, "
        f"{by['sim.result()']['timeline']:,} timeline rows; wall {wall:.1f} s incl. start-up"
    )
    print()
    print(markdown_table(phases, columns))
    print()
    full = args.jobs == 1_000_000 and args.gpus == 10_000 and args.config == "fifo"
    verdict_t = "PASS" if simulate < TARGET_SECONDS else "MISS"
    verdict_m = "PASS" if peak < TARGET_GB else "MISS"
    summary_row = {
        "jobs": args.jobs,
        "GPUs": args.gpus,
        "config": args.config,
        "build s": build,
        "simulate s": simulate,
        "cpu s": simulate_cpu,
        "µs/job": simulate / max(args.jobs, 1) * 1e6,
        "peak RSS GB": peak,
        "time < 60 s": verdict_t if full else f"({verdict_t})",
        "mem < 4 GB": verdict_m if full else f"({verdict_m})",
    }
    print(markdown_table([summary_row], list(summary_row)))
    if not full:
        print("\n(verdicts in parentheses: the targets are for 1,000,000 jobs on 10,000 GPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
