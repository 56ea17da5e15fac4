"""The paper's four-arm study on the ``venus`` preset, one core (issue 4: < 30 s in total).

Builds the workload once, then runs ``las`` with preemption off/on and migration off/on
(``analysim.experiments.study.ARMS``), timing each arm as ``Simulation`` + ``run`` + ``result`` +
``summary``, and prints the study table with the times.

    python benchmarks/bench_study.py
    python benchmarks/bench_study.py --scheduler srtf
"""

from __future__ import annotations

import argparse
import time

from _common import header, markdown_table, pin_one_core, timed_simulation

from analysim import presets
from analysim.experiments.study import ARMS, METRICS

TARGET = 30.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", default="las")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one core")
    args = parser.parse_args(argv)
    header("bench_study", pin_one_core(not args.no_pin))
    start = time.perf_counter()
    workload = presets.workload("venus_overloaded", seed=args.seed)
    cluster = presets.cluster("venus_overloaded")
    print(f"workload built in {time.perf_counter() - start:.2f} s ({len(workload)} jobs)\n")
    rows = []
    for arm, switches in ARMS.items():
        config = {"scheduler": args.scheduler, "seed": args.seed, **switches}
        timing = timed_simulation(workload, cluster, config)
        t0, c0 = time.perf_counter(), time.process_time()
        summary = timing["res"].summary()
        timing["total"] += time.perf_counter() - t0
        timing["cpu"] += time.process_time() - c0
        rows.append(
            {
                "arm": arm,
                "wall s": timing["total"],
                "cpu s": timing["cpu"],
                **{m: float(summary[m]) for m in METRICS},
            }
        )
        print(f"{arm}: {timing['total']:.2f} s wall, {timing['cpu']:.2f} s cpu", flush=True)
    total = sum(r["wall s"] for r in rows)
    cpu = sum(r["cpu s"] for r in rows)
    print()
    print(markdown_table(rows, ["arm", "wall s", "cpu s", *METRICS]))
    verdict = "PASS" if total < TARGET else "MISS"
    print(f"\nfour arms: {total:.1f} s wall, {cpu:.1f} s cpu; target < {TARGET:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
