"""How simulation time grows with jobs, GPUs and waiting jobs (fifo and las + preemption).

Three sweeps, each point one run (``--repeat`` for best of N), on one core:

* ``jobs``    -- the ``venus`` preset with ``days`` 6.5 / 13 / 26 / 52 (~7k .. ~55k jobs);
* ``gpus``    -- the ``large`` preset with a fixed number of jobs (``--large-jobs``, default
  50,000) on 1,000 / 4,000 / 10,000 GPUs (the trace span shrinks as the GPUs grow, since
  every VC offers load 0.7);
* ``waiting`` -- ``venus`` (26 days) with ``load_scale`` 0.6 / 1.0 / 1.4 / 1.8; the table gives
  the time-averaged number of waiting jobs (``Result.timeline`` rows with ``vc == "(all)"``).

Times are ``Simulation(...)`` + ``.run()`` + ``.result()`` (the workload build is not
counted); ``µs/job`` is that total over the number of jobs. Identical points shared by two
sweeps (venus 26 days = load_scale 1.0) are run once.

    python benchmarks/bench_scaling.py            # all three sweeps, ~5 minutes
    python benchmarks/bench_scaling.py --quick    # fewer points, ~1 minute
"""

from __future__ import annotations

import argparse
import time

from _common import (
    CONFIGS,
    header,
    markdown_table,
    pin_one_core,
    timed_simulation,
    waiting_jobs_mean,
)

from analysim import presets

FULL = {
    "jobs": [6.5, 13, 26, 52],
    "gpus": [1_000, 4_000, 10_000],
    "waiting": [0.6, 1.0, 1.4, 1.8],
}
QUICK = {
    "jobs": [6.5, 13, 26],
    "gpus": [1_000, 10_000],
    "waiting": [0.6, 1.0, 1.4],
}
SWEEPS = {
    "jobs": "venus, days varied",
    "gpus": "large, GPUs varied at a fixed job count",
    "waiting": "venus 26 days, load_scale varied",
}


def _csv_floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help=f"fewer points: {QUICK}")
    parser.add_argument(
        "--sweeps", nargs="+", choices=list(SWEEPS), default=list(SWEEPS), help="sweeps to run"
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        choices=list(CONFIGS),
        default=["fifo", "las+preemption"],
        metavar="CONFIG",
        help=f"configurations, from {list(CONFIGS)}",
    )
    parser.add_argument("--days", type=_csv_floats, help="jobs sweep: comma-separated days")
    parser.add_argument(
        "--gpus", type=_csv_floats, help="gpus sweep: comma-separated GPU counts (multiples of 8)"
    )
    parser.add_argument(
        "--loads", type=_csv_floats, help="waiting sweep: comma-separated load_scale values"
    )
    parser.add_argument(
        "--large-jobs", type=int, default=50_000, help="jobs of the large preset (gpus sweep)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="repeats per point; best kept")
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    points = dict(QUICK if args.quick else FULL)
    if args.days:
        points["jobs"] = args.days
    if args.gpus:
        points["gpus"] = [int(g) for g in args.gpus]
    if args.loads:
        points["waiting"] = args.loads

    pinning = pin_one_core(not args.no_pin)
    header("bench_scaling: time vs jobs, GPUs and waiting jobs", pinning)
    started = time.perf_counter()

    cache: dict[tuple, dict] = {}

    def measure(key: tuple, build, config_name: str) -> dict:
        """One point: build the workload/cluster (untimed), run best of --repeat."""
        full_key = (*key, config_name)
        if full_key in cache:
            return cache[full_key]
        tb = time.perf_counter()
        workload, cluster = build()
        build_s = time.perf_counter() - tb
        best = None
        for _ in range(args.repeat):
            timing = timed_simulation(workload, cluster, CONFIGS[config_name])
            if best is None or timing["total"] < best["total"]:
                best = timing
        res = best.pop("res")
        n = len(workload.jobs)
        row = {
            "config": config_name,
            "jobs": n,
            "GPUs": int(cluster.nodes["gpus"].sum()),
            "days": float(workload.jobs["submit_time"].max()) / 86_400,
            "avg waiting": waiting_jobs_mean(res),
            "preemptions": int(res.summary()["preemptions"]),
            "build s": build_s,
            "run s": best["run"],
            "result s": best["result"],
            "total s": best["total"],
            "cpu s": best["cpu"],
            "µs/job": best["total"] / n * 1e6,
        }
        del res
        cache[full_key] = row
        print(
            "  "
            + ", ".join(
                f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()
            )
            + f"  [{key}]",
            flush=True,
        )
        return row

    tables = {}
    for sweep in args.sweeps:
        rows = []
        print(f"sweep {sweep}: {SWEEPS[sweep]} -- {points[sweep]}", flush=True)
        for value in points[sweep]:
            for config_name in args.configs:
                if sweep == "jobs":
                    key = ("venus", float(value), 1.0)

                    def build(d=value):
                        return (
                            presets.workload("venus_overloaded", seed=args.seed, days=d),
                            presets.cluster("venus_overloaded"),
                        )

                    label = {"days": value}
                elif sweep == "gpus":
                    key = ("large", int(value), args.large_jobs)

                    def build(g=int(value)):
                        return (
                            presets.workload("large", seed=args.seed, jobs=args.large_jobs, gpus=g),
                            presets.cluster("large", gpus=g),
                        )

                    label = {}
                else:
                    key = ("venus", 26.0, float(value))

                    def build(ls=value):
                        return (
                            presets.workload("venus_overloaded", seed=args.seed, load_scale=ls),
                            presets.cluster("venus_overloaded"),
                        )

                    label = {"load_scale": value}
                row = measure(key, build, config_name)
                rows.append({**label, **row})
        tables[sweep] = rows

    print(f"\nall sweeps took {time.perf_counter() - started:.0f} s wall (builds included)")
    layouts = {
        "jobs": ["days", "config", "jobs", "avg waiting", "run s", "result s", "total s",
                 "cpu s", "µs/job"],
        "gpus": ["GPUs", "config", "jobs", "days", "avg waiting", "run s", "result s", "total s",
                 "cpu s", "µs/job"],
        "waiting": ["load_scale", "config", "jobs", "avg waiting", "preemptions", "run s",
                    "result s", "total s", "cpu s", "µs/job"],
    }  # fmt: skip
    for sweep, rows in tables.items():
        title = SWEEPS[sweep]
        if sweep == "gpus":
            title += f" ({args.large_jobs:,} jobs)"
        print(f"\n**{sweep}** -- {title}; best of {args.repeat}, seed {args.seed}\n")
        print(markdown_table(rows, layouts[sweep]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
