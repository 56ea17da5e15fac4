"""CPU seconds of one venus preset run with EASY or greedy backfill.

    python benchmarks/bench_easy.py 2.0 easy                    # LAS + preemption
    python benchmarks/bench_easy.py 2.0 easy --scheduler fifo   # FIFO, no preemption
    python benchmarks/bench_easy.py 2.0 easy --migration        # LAS + preemption + migration
    python benchmarks/bench_easy.py 2.0 easy --migration --no-preemption   # LAS + migration
    python benchmarks/bench_easy.py 2.0 easy --no-gc            # the run with gc disabled

Prints the load, the backfill, the scheduler, the switches and the CPU seconds the run took
(``time.process_time``).
"""

from __future__ import annotations

import argparse
import gc
import time

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed

from analysim import Simulation, presets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("load", type=float, help="the workload's load scale")
    parser.add_argument("backfill", choices=["easy", "true"])
    parser.add_argument("--scheduler", choices=["las", "fifo"], default="las")
    parser.add_argument("--migration", action="store_true", help="migration on")
    parser.add_argument(
        "--no-preemption", action="store_true", help="LAS without preemption (FIFO: never)"
    )
    parser.add_argument(
        "--no-gc", action="store_true", help="Python's cyclic garbage collector off for the run"
    )
    args = parser.parse_args(argv)
    preemption = args.scheduler == "las" and not args.no_preemption
    backfill = {"easy": "easy", "true": True}[args.backfill]
    jobs = presets.workload("venus", seed=0, load_scale=args.load)
    cfg = presets.config("venus").replace(
        scheduler=args.scheduler,
        preemption=preemption,
        migration=args.migration,
        backfill=backfill,
    )
    simulation = Simulation(jobs, presets.cluster("venus"), cfg)
    if args.no_gc:
        gc.disable()
    started = time.process_time()
    simulation.run()
    switches = ("preemption" if preemption else "") + (" migration" if args.migration else "")
    cpu = round(time.process_time() - started, 2)
    print(args.load, backfill, args.scheduler, switches.strip() or "-", "cpu", cpu)


if __name__ == "__main__":
    main()
