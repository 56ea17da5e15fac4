"""Whole and shared GPUs under one set of rules: random 40-job workloads on the toy cluster,
each run with and without a ``gpu_milli`` column of 1000 (which runs it in resource mode):
how many of 12 runs differ, with EASY backfill and with migration. Seconds.

    python benchmarks/same_modes.py
"""

from __future__ import annotations

import logging

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed
import numpy as np
import pandas as pd

import analysim as asim

COMPARED = ["job_id", "status", "start_time", "end_time", "preemptions", "migrations", "nodes"]


def workload(seed: int, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "vc": "a",
            "user": "u",
            "submit_time": np.sort(rng.integers(0, 2000, n)),
            "duration": rng.integers(10, 900, n),
            "num_gpus": rng.choice([1, 2, 4, 8, 16], n, p=[0.4, 0.25, 0.2, 0.1, 0.05]),
        }
    )


def main() -> int:
    logging.disable(logging.WARNING)
    cluster = asim.presets.cluster("toy")
    differ_in_all = 0
    for label, switch in [
        ("EASY backfill", {"backfill": "easy"}),
        ("migration", {"migration": True}),
    ]:
        differ = 0
        for k, scheduler in enumerate(["fifo", "sjf", "srtf", "las"] * 3):
            jobs = workload(k)
            config = dict(scheduler=scheduler, preemption=scheduler in ("srtf", "las"), seed=k)
            whole = asim.simulate(asim.Workload.from_frame(jobs), cluster, **config, **switch)
            shared = asim.simulate(
                asim.Workload.from_frame(jobs.assign(gpu_milli=1000)), cluster, **config, **switch
            )
            differ += not whole.jobs[COMPARED].equals(shared.jobs[COMPARED])
        print(f"{label}: {differ} of 12 runs differ")
        differ_in_all += differ
    return 1 if differ_in_all else 0


if __name__ == "__main__":
    raise SystemExit(main())
