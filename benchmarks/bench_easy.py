"""CPU seconds of one venus preset run with EASY or greedy backfill.

    python benchmarks/bench_easy.py 2.0 easy                    # LAS + preemption
    python benchmarks/bench_easy.py 2.0 easy --scheduler fifo   # FIFO, no preemption

Prints the load, the backfill, the scheduler and the CPU seconds the run took
(``time.process_time``).
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed

from analysim import Simulation, presets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("load", type=float, help="the workload's load scale")
    parser.add_argument("backfill", choices=["easy", "true"])
    parser.add_argument("--scheduler", choices=["las", "fifo"], default="las")
    args = parser.parse_args(argv)
    backfill = {"easy": "easy", "true": True}[args.backfill]
    jobs = presets.workload("venus", seed=0, load_scale=args.load)
    cfg = presets.config("venus").replace(
        scheduler=args.scheduler, preemption=args.scheduler == "las", backfill=backfill
    )
    started = time.process_time()
    Simulation(jobs, presets.cluster("venus"), cfg).run()
    print(args.load, backfill, args.scheduler, "cpu", round(time.process_time() - started, 2))


if __name__ == "__main__":
    main()
