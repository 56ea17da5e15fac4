"""CPU per eviction and per start: the state changes alone, without the rounds around them.

    python benchmarks/bench_state_changes.py            # 40 cycles
    python benchmarks/bench_state_changes.py --cycles 10 --days 8

Runs the calibrated ``venus`` preset at 2x load with LAS + preemption + EASY backfill up to
day 2 (``--until``, in days), then evicts every running job (``Simulation.preempt``) and
starts each again where it ran (``Simulation.start_running``), ``--cycles`` times, with the
garbage collector off. Prints how many jobs ran and the CPU microseconds
(``time.process_time``) per eviction and per start. The run's own decisions take no part:
it measures the ledger, the job state, the queues, LAS's kept ranking, EASY's kept ends and
reservation claims and the records, as the rounds call them. For a machine shared with other
work, count instructions instead: run it under ``valgrind --tool=cachegrind --cache-sim=no``
with ``--cycles 0`` and ``--cycles 20`` and divide the difference by 20 times the jobs.
"""

from __future__ import annotations

import argparse
import gc
import time

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed

from analysim import Simulation, presets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=40, help="evictions and starts of all")
    parser.add_argument("--days", type=int, default=None, help="the workload's days (all)")
    parser.add_argument("--until", type=float, default=2.0, help="run up to this day first")
    args = parser.parse_args(argv)
    jobs = presets.workload("venus", seed=0, load_scale=2.0, days=args.days)
    config = presets.config("venus").replace(scheduler="las", preemption=True, backfill="easy")
    sim = Simulation(jobs, presets.cluster("venus"), config)
    sim.run(until=args.until * 86400)
    running = [j for group in sim.queues.running for j in group]
    ledger = sim.ledger
    evicting = starting = 0.0
    gc.disable()
    for _ in range(args.cycles):
        where = [
            (j, ledger.alloc_nodes[j], ledger.alloc_counts[j], bool(ledger.borrowed[j]))
            for j in running
        ]
        t = time.process_time()
        for j in running:
            sim.preempt(j)
        evicting += time.process_time() - t
        t = time.process_time()
        for j, nodes, counts, borrowed in where:
            sim.start_running(j, nodes, counts, None, borrowed)
        starting += time.process_time() - t
    gc.enable()
    n = max(args.cycles * len(running), 1)
    print(
        f"{len(running)} running jobs, {args.cycles} cycles: "
        f"{evicting / n * 1e6:.2f} us per eviction, {starting / n * 1e6:.2f} us per start"
    )


if __name__ == "__main__":
    main()
