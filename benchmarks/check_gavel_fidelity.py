"""Fidelity against Gavel's continuous single-GPU experiment (OSDI'20, its Figure 9 setting).

Gavel's published average JCTs (hours) of jobs 4000-4999, seed 0, on 36 V100 + 36 P100 +
36 K80 GPUs, are printed in the outputs of
``scheduler/notebooks/figures/evaluation/continuous_jobs.ipynb`` (stanford-futuredata/gavel,
commit c4fa40097339e9608ab71fd64c8bdea96a5e4a4c; the cell of ``plot_jct_cdf``:
"Input job rate: 0.40 / fifo: 17.58 ..."). This script runs the same setting in AnalySIM:
the ``gavel`` preset cluster, 360 s rounds, no checkpoint or migration cost (Gavel's simulator
charges none), arrivals going on after job 5000 until jobs 4000-4999 have finished (as Gavel's
sweep generates jobs until those complete), and prints both side by side.

The jobs: ``--stream gavel`` (default) draws them as Gavel's simulator does, job for job
(Python's ``random.Random`` seeded ``seed + 2`` for jobs and ``seed + 3`` for arrivals,
the first job at time 0: ``Scheduler._initialize_seeds``, ``utils.generate_job`` and
``_generate_duration``, rewritten here from their rules); ``--stream preset`` draws them
with the ``gavel`` preset's numpy generator (the same distributions, other jobs).

    python benchmarks/check_gavel_fidelity.py            # the table; exit 1 if off by > 10 %
    python benchmarks/check_gavel_fidelity.py --stream preset --seeds 0 1 2
    python benchmarks/check_gavel_fidelity.py --policies finish_time_fairness \
        finish_time_fairness_perf

Each run's CPU seconds (``time.process_time``) are printed too (target: under 30 s).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

import numpy as np
import pandas as pd

import analysim as asim
from analysim.engine import Simulation

#: Gavel's published average JCT (hours), jobs 4000-4999, seed 0 (the notebook's outputs)
PUBLISHED = {
    0.4: {"fifo": 17.58, "fifo_perf": 15.31, "max_min_fairness": 23.26,
          "max_min_fairness_perf": 17.58, "finish_time_fairness": 23.26,
          "finish_time_fairness_perf": 17.58},
    1.2: {"fifo": 17.70, "fifo_perf": 15.42, "max_min_fairness": 23.51,
          "max_min_fairness_perf": 17.67, "finish_time_fairness": 23.51,
          "finish_time_fairness_perf": 17.67},
    2.0: {"fifo": 18.32, "fifo_perf": 15.45, "max_min_fairness": 23.47,
          "max_min_fairness_perf": 16.95, "finish_time_fairness": 23.47,
          "finish_time_fairness_perf": 17.07},
}  # fmt: skip
POLICIES = ["fifo", "fifo_perf", "max_min_fairness", "max_min_fairness_perf"]
#: Gavel's job table, in its order (``job_table.py``): the names of our applications
JOB_TABLE = (
    [f"ResNet-18 (batch size {b})" for b in (16, 32, 64, 128, 256)]
    + [f"ResNet-50 (batch size {b})" for b in (16, 32, 64, 128)]
    + [f"Transformer (batch size {b})" for b in (16, 32, 64, 128, 256)]
    + [f"LM (batch size {b})" for b in (5, 10, 20, 40, 80)]
    + [f"Recommendation (batch size {b})" for b in (512, 1024, 2048, 4096, 8192)]
    + ["A3C", "CycleGAN"]
)
FIRST, LAST = 4000, 4999  # the jobs measured
TAIL_HOURS = 400.0  # arrivals go on this long after job LAST arrives


def _gavel_job(rng: random.Random) -> tuple[float, str]:
    """One single-GPU job's V100 run time and type, drawn in Gavel's order."""
    rng.uniform(0, 1)  # the scale factor: drawn, then set to 1 (no multi-GPU jobs)
    if rng.random() >= 0.8:
        duration = 60 * 10 ** rng.uniform(3, 4)
    else:
        duration = 60 * 10 ** rng.uniform(1.5, 3)
    return duration, rng.choice(JOB_TABLE)


def gavel_stream(jobs_per_hour: float, seed: int) -> pd.DataFrame:
    """Single-GPU jobs as Gavel's simulator draws them for ``seed``, until TAIL_HOURS after
    job LAST has arrived."""
    jobs_rng, arrivals_rng = random.Random(seed + 2), random.Random(seed + 3)
    mean_gap = 3600.0 / jobs_per_hour
    rows: list[tuple] = []
    t = 0.0
    while len(rows) <= LAST or t <= rows[LAST][1] + TAIL_HOURS * 3600:
        rows.append((f"g{len(rows):05d}", t, *_gavel_job(jobs_rng)))
        t += -math.log(1.0 - arrivals_rng.random()) * mean_gap
    frame = pd.DataFrame(rows, columns=["job_id", "submit_time", "duration", "application"])
    return frame.assign(vc="gavel", user="gavel", num_gpus=1)


def preset_stream(jobs_per_hour: float, seed: int) -> pd.DataFrame:
    """The ``gavel`` preset's jobs, as many as arrive until TAIL_HOURS after job LAST."""
    extra = int(jobs_per_hour * TAIL_HOURS * 1.5) + 50
    frame = asim.presets.workload("gavel", seed=seed, jobs=LAST + 1 + extra,
                                  jobs_per_hour=jobs_per_hour).jobs  # fmt: skip
    return frame[frame["submit_time"] <= frame["submit_time"].iloc[LAST] + TAIL_HOURS * 3600]


def measure_jobs(frame: pd.DataFrame, policy: str, first: int, last: int) -> np.ndarray:
    """The JCTs (seconds) of jobs ``first``-``last`` of ``frame`` under ``policy``."""
    config = asim.SimConfig(
        scheduler=policy,
        quantum=360.0,
        checkpoint_cost={"name": "constant"},
        migration_cost={"name": "constant"},
        seed=0,
    )
    sim = Simulation(asim.Workload.from_frame(frame, name="gavel"),
                     asim.presets.cluster("gavel"), config)  # fmt: skip
    until = float(frame["submit_time"].iloc[last])
    while not np.isfinite(sim.end[first : last + 1]).all():
        until += 100 * 3600.0
        sim.run(until=until)
    return sim.end[first : last + 1] - sim.submit[first : last + 1]


def measure(frame: pd.DataFrame, policy: str) -> tuple[float, float]:
    """Average JCT (hours) of jobs FIRST-LAST under ``policy``, and the CPU seconds."""
    start = time.process_time()
    jct = measure_jobs(frame, policy, FIRST, LAST)
    return float(jct.mean() / 3600), time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream", choices=["gavel", "preset"], default="gavel")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--rates", type=float, nargs="+", default=sorted(PUBLISHED))
    parser.add_argument("--policies", nargs="+", default=POLICIES)
    args = parser.parse_args()
    draw = gavel_stream if args.stream == "gavel" else preset_stream
    print(f"jobs {FIRST}-{LAST}, average JCT (hours); stream {args.stream}, seeds {args.seeds}")
    print(f"{'rate':>5} {'policy':<22} {'Gavel':>7} {'ours':>7} {'diff':>7} {'CPU s':>6}")
    worst = 0.0
    for rate in args.rates:
        for policy in args.policies:
            runs = [measure(draw(rate, seed), policy) for seed in args.seeds]
            ours = float(np.mean([r[0] for r in runs]))
            cpu = max(r[1] for r in runs)
            theirs = PUBLISHED.get(rate, {}).get(policy, math.nan)
            diff = (ours - theirs) / theirs
            if np.isfinite(diff):
                worst = max(worst, abs(diff))
            print(f"{rate:5.1f} {policy:<22} {theirs:7.2f} {ours:7.2f} {diff:+7.1%} {cpu:6.1f}")
            sys.stdout.flush()
    print(f"largest difference {worst:.1%} (target: within 10 %)")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
