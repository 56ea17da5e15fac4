"""Speed of a Helios preset month with elastic jobs mixed in, against the rigid month.

For each preset (default ``venus``: 30 days, ~20,600 jobs) prints process CPU seconds (best
of ``--repeat``) of ``Simulation(...).run().result()`` for:

* ``rigid``: the preset's month under its own config (``presets.config``: FIFO, EASY backfill);
* ``rigid, backfill``: the same with plain backfill (``backfill=True``), the elastic runs'
  setting (elastic schedulers refuse EASY backfill, whose reservations do not foresee
  resizes);
* for each ``--shares``: that share of the GPU jobs elastic (``with_elastic_jobs``: from
  half to twice their GPUs, seed 0) under ``--scheduler`` (default ``elastic_goodput``),
  plain backfill, ``rescale_cost`` 30 s; its ratio to ``rigid`` and its average JCT,
  resizes and GPU-seconds per unit of progress; with ``--restart-penalty S`` the scheduler
  is ``{"name": "elastic_goodput", "restart_penalty": S}`` (Pollux's restart weight).

Exit 1 if an elastic run takes more than ``TARGET`` (3) times the rigid month's CPU.

    python benchmarks/bench_elastic.py
    python benchmarks/bench_elastic.py --presets venus --shares 0.5 1 --repeat 1
"""

from __future__ import annotations

import argparse
import time

from analysim import Simulation, presets
from analysim.inputs.elastic import with_elastic_jobs

TARGET = 3.0
RESCALE_COST = 30.0


def timed(workload, cluster, config, repeat: int):
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = Simulation(workload, cluster, config).run().result()
        best = min(best, time.process_time() - started)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=["venus"])
    parser.add_argument("--shares", nargs="+", type=float, default=[0.5, 1.0])
    parser.add_argument("--scheduler", default="elastic_goodput")
    parser.add_argument("--restart-penalty", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    ok = True
    print("| preset | run | jobs | CPU s | x rigid | avg JCT s | resizes | GPU-s per work s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.presets:
        cluster, config = presets.cluster(name), presets.config(name)
        rigid = presets.workload(name, seed=args.seed)
        runs = [("rigid", rigid, config), ("rigid, backfill", rigid, config.replace(backfill=True))]
        scheduler = args.scheduler
        if args.restart_penalty is not None:
            scheduler = {"name": scheduler, "restart_penalty": args.restart_penalty}
        elastic_config = config.replace(
            scheduler=scheduler, backfill=True, rescale_cost=RESCALE_COST
        )
        for share in args.shares:
            label = f"{share:.0%} elastic, {args.scheduler}"
            if args.restart_penalty is not None:
                label += f" (restart penalty {args.restart_penalty:g} s)"
            runs.append((label, with_elastic_jobs(rigid, share, seed=args.seed), elastic_config))
        base = None
        for label, workload, run_config in runs:
            cpu, result = timed(workload, cluster, run_config, args.repeat)
            base = cpu if base is None else base
            s = result.summary()
            resizes = int(result.jobs["resizes"].sum()) if "resizes" in result.jobs else 0
            per_work = s.get("gpu_seconds_per_progress", float("nan"))
            print(
                f"| {name} | {label} | {len(workload.jobs):,} | {cpu:.2f} | {cpu / base:.2f} | "
                f"{s['avg_jct']:,.0f} | {resizes:,} | {per_work:.3f} |"
            )
            if "elastic" in label and cpu > TARGET * base:
                ok = False
    print(
        f"target: every elastic run within {TARGET:g}x the rigid month's CPU: "
        f"{'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
