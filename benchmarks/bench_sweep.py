"""Sweep speed-up: 48 runs of the ``venus_overloaded`` preset in a row vs on a LocalCluster.

The grid is 4 schedulers (fifo, sjf, las, fair) x 3 loads (``workload.load_scale`` 0.8, 1.0,
1.2) x 4 seeds = 48 runs; every run builds its workload from the preset and its seed, as a
sweep does. The sequential time is ``analysim.sweep(..., workers=0)`` (in this process); the
parallel time is ``analysim.sweep(..., workers=N)`` including starting and closing the
LocalCluster. The target of issue 5: parallel <= 0.6 x sequential with 2 workers. A third row times
``analysim.sweep(...)`` as a user calls it (no ``workers``: runs start in this process, then a
LocalCluster of one worker per core starts in the background); ``--no-auto`` skips it.

``--days`` shortens the preset's trace (26 days is the full month) to keep the benchmark
practical; the figures say which length was used. Not pinned: the workers need the cores.

    python benchmarks/bench_sweep.py                # 8-day venus_overloaded, 2 workers
    python benchmarks/bench_sweep.py --days 26      # the full month (several minutes)
"""

from __future__ import annotations

import argparse
import os
import time

from _common import header, markdown_table

import analysim as asim
from analysim.sweep.runner import local_cluster

GRID = {
    "scheduler": ["fifo", "sjf", "las", "fair"],
    "workload.load_scale": [0.8, 1.0, 1.2],
}
SEEDS = range(4)
TARGET = 0.6


def sequential(days: float) -> dict:
    """The sweep in this process: wall and CPU seconds, and the frame."""
    c0, t0 = time.process_time(), time.perf_counter()
    frame = asim.sweep(
        _grid(days), workload="venus_overloaded", seeds=SEEDS, workers=0, progress=False
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall": wall, "startup": 0.0, "cpu": cpu, "frame": frame}


def parallel(days: float, workers: int) -> dict:
    """The sweep on a LocalCluster started (and closed) as ``sweep(workers=N)`` does; CPU
    seconds are the workers' (``time.process_time`` on each, before and after the sweep)."""
    t0 = time.perf_counter()
    with local_cluster(workers) as client:
        started = time.perf_counter() - t0
        before = client.run(time.process_time)
        frame = asim.sweep(
            _grid(days), workload="venus_overloaded", seeds=SEEDS, client=client, progress=False
        )
        after = client.run(time.process_time)
    wall = time.perf_counter() - t0
    cpu = sum(after[w] - before[w] for w in after if w in before)
    return {"wall": wall, "startup": started, "cpu": cpu, "frame": frame}


def automatic(days: float) -> dict:
    """``sweep()`` with no ``workers``: starts here, then a LocalCluster of one worker per
    core, started in the background while runs go on here. CPU seconds: this process only."""
    c0, t0 = time.process_time(), time.perf_counter()
    frame = asim.sweep(_grid(days), workload="venus_overloaded", seeds=SEEDS, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall": wall, "startup": float("nan"), "cpu": cpu, "frame": frame}


def _grid(days: float) -> dict:
    return {**GRID, "workload.days": [days]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--days", type=float, default=8, help="trace length of the preset")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument(
        "--no-auto", action="store_true", help="skip timing sweep() with its automatic choice"
    )
    args = parser.parse_args(argv)
    header(f"bench_sweep: venus ({args.days:g} days), 48 runs", "not pinned (uses all cores)")

    ways = [
        ("sequential (in-process)", lambda: sequential(args.days)),
        (f"LocalCluster, {args.workers} workers", lambda: parallel(args.days, args.workers)),
    ]
    if not args.no_auto:
        ways.append(("sweep() default (automatic)", lambda: automatic(args.days)))
    rows, frames = [], []
    for name, way in ways:
        load = os.getloadavg()[0]
        timing = way()
        frame = timing["frame"]
        frames.append(frame.drop(columns="seconds"))
        rows.append(
            {
                "how": name,
                "where": frame.attrs["where"],
                "failed": int((frame["status"] != "ok").sum()),
                "wall s": timing["wall"],
                "ratio": timing["wall"] / rows[0]["wall s"] if rows else 1.0,
                "cluster start s": timing["startup"],
                "runs' wall s (sum)": float(frame["seconds"].sum()),
                "runs' cpu s": timing["cpu"],
                "load avg before": load,
            }
        )
        print(f"  {name}: {timing['wall']:.1f} s wall", flush=True)

    same = all(frame.equals(frames[0]) for frame in frames[1:])
    print()
    print(
        f"venus {args.days:g} days, 48 runs (4 schedulers x 3 loads x 4 seeds); "
        f"load average now {os.getloadavg()[0]:.2f}"
    )
    print()
    print(markdown_table(rows, list(rows[0])))
    print()
    ratio = rows[1]["ratio"]
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"ratio LocalCluster / sequential: {ratio:.2f} (target <= {TARGET}): {verdict}")
    print(f"frames identical apart from timings: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
