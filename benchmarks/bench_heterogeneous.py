"""Speed of GPU-type-aware runs (``docs/heterogeneity.md``), one core.

Gavel's setting (issue 27): the ``gavel`` preset, 36 V100 + 36 P100 + 36 K80 GPUs, ``--jobs``
jobs of Gavel's 26 job types at ``--rates`` jobs an hour, ``fifo``; each run also without
the ``application`` column (every job at rate 1: what the typed model costs). Times
``Simulation`` + ``run`` + ``result`` (``timed_simulation``), best of ``--repeat``. Target
(issue 27): one run of about 5,000 jobs on 108 GPUs under 30 s.

``--helios NAME`` also times a Helios preset month (its config) with every GPU job on a typed
application of rate 1 on the cluster's one type (``gpu``), against the month without
applications, and checks the jobs tables agree: what the typed model costs where it changes
nothing (issue 27: within 20 %).

    python benchmarks/bench_heterogeneous.py                   # 5,000 jobs at 0.4, 1.2, 2.0/h
    python benchmarks/bench_heterogeneous.py --jobs 1000 --rates 1.2 --repeat 1
    python benchmarks/bench_heterogeneous.py --rates --helios venus
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import header, markdown_table, pin_one_core, timed_simulation

import analysim as asim
from analysim import presets
from analysim.engine import Simulation
from analysim.inputs.applications import Application

TARGET = 30.0
HELIOS_TARGET = 1.2  # the typed month at most 20 % slower


def best(workload, cluster, repeat: int, config: dict | None = None) -> dict:
    config = config or {"scheduler": "fifo"}
    runs = [timed_simulation(workload, cluster, config) for _ in range(repeat)]
    return min(runs, key=lambda r: r["cpu"])


def helios_month(name: str, seed: int, repeat: int) -> dict:
    """CPU seconds of the preset's month with a rate-1 typed application, and without."""
    cluster = presets.cluster(name)
    plain = presets.workload(name, seed=seed)
    config = presets.config(name)
    gpus = sorted(set(plain.jobs["num_gpus"]) - {0})
    flat = Application.from_table(
        "flat", pd.DataFrame({"gpu_type": "gpu", "gpus": gpus, "nodes": 1, "throughput": 1.0})
    )
    named = np.where(plain.jobs["num_gpus"] > 0, "flat", None)
    typed = asim.Workload.from_frame(plain.jobs.assign(application=named))
    cpu = {}
    jobs = {}
    for label, workload, apps in (("typed", typed, {"flat": flat}), ("plain", plain, None)):
        times = []
        for _ in range(repeat):
            c0 = time.process_time()
            sim = Simulation(workload, cluster, config, applications=apps)
            sim.run()
            result = sim.result()
            times.append(time.process_time() - c0)
        cpu[label] = min(times)
        jobs[label] = result.jobs
    same = jobs["typed"].drop(columns=["application", "rate", "ftf_rho"]).equals(jobs["plain"])
    return {
        "preset": name,
        "jobs": len(plain.jobs),
        "typed cpu s": round(cpu["typed"], 3),
        "plain cpu s": round(cpu["plain"], 3),
        "ratio": round(cpu["typed"] / cpu["plain"], 3),
        "same jobs": same,
        "target": HELIOS_TARGET,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--jobs", type=int, default=5000, help="jobs per run")
    parser.add_argument("--rates", type=float, nargs="*", default=[0.4, 1.2, 2.0])
    parser.add_argument("--helios", nargs="*", default=[], help="Helios presets to time")
    parser.add_argument("--repeat", type=int, default=3, help="repeats per rate; best kept")
    parser.add_argument("--seed", type=int, default=0, help="workload seed")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    header("bench_heterogeneous: gavel preset, fifo, one core", pin_one_core(not args.no_pin))
    cluster = presets.cluster("gavel")
    rows = []
    for rate in args.rates:
        typed = presets.workload("gavel", seed=args.seed, jobs=args.jobs, jobs_per_hour=rate)
        plain = asim.Workload.from_frame(typed.jobs.drop(columns="application"))
        with_types = best(typed, cluster, args.repeat)
        without = best(plain, cluster, args.repeat)
        summary = with_types["res"].summary()
        rows.append(
            {
                "jobs/h": rate,
                "jobs": args.jobs,
                "typed s": round(with_types["total"], 3),
                "typed cpu s": round(with_types["cpu"], 3),
                "rate-1 s": round(without["total"], 3),
                "avg JCT h": round(summary["avg_jct"] / 3600, 2),
                "max rho": round(summary["max_ftf_rho"], 2),
                "target s": TARGET,
            }
        )
        print(
            f"  {rate} jobs/h: {with_types['total']:.3f} s typed, {without['total']:.3f} s rate 1"
        )
    ok = all(r["typed s"] < TARGET for r in rows)
    if rows:
        print()
        print(markdown_table(rows, list(rows[0])))
    months = [helios_month(name, args.seed, args.repeat) for name in args.helios]
    if months:
        print()
        print(markdown_table(months, list(months[0])))
        ok = ok and all(m["ratio"] <= HELIOS_TARGET and m["same jobs"] for m in months)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
