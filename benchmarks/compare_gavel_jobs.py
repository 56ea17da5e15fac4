"""Job-by-job comparison with Gavel's own simulator, on a small setting.

Runs Gavel's simulator (the ``scheduler/`` directory of a checkout of
stanford-futuredata/gavel, given as GAVEL_SCHEDULER_DIR) in a subprocess on the first
``--jobs`` jobs of its continuous single-GPU trace (seed 0, 36/36/36 GPUs, 360 s rounds),
then AnalySIM on the very same jobs (``check_gavel_fidelity.gavel_stream``), and prints
each side's average JCT and how far apart the jobs' JCTs are. Gavel's modules that the
simulation does not use (cvxpy, matrix_completion, psutil, its RPC runtime) are replaced by
empty modules, so only ``fifo`` and ``fifo_perf`` (which solve no programme) can run.

    python benchmarks/compare_gavel_jobs.py /path/to/gavel/scheduler --policy fifo_perf \\
        --rate 1.2 --jobs 300
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from check_gavel_fidelity import gavel_stream, measure_jobs  # noqa: E402

GAVEL_RUNNER = r"""
import contextlib, io, json, os, sys, types
gdir, policy, rate, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
for name in ["cvxpy", "matrix_completion", "psutil", "runtime", "runtime.rpc",
             "runtime.rpc.scheduler_server", "runtime.rpc.scheduler_client"]:
    sys.modules[name] = types.ModuleType(name)
sys.modules["runtime"].rpc = sys.modules["runtime.rpc"]
sys.modules["runtime.rpc"].scheduler_server = sys.modules["runtime.rpc.scheduler_server"]
sys.modules["runtime.rpc"].scheduler_client = sys.modules["runtime.rpc.scheduler_client"]
sys.path.insert(0, gdir)
import scheduler, utils
from job_id_pair import JobIdPair
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    sched = scheduler.Scheduler(
        utils.get_policy(policy, solver="ECOS", seed=0),
        throughputs_file=os.path.join(gdir, "simulation_throughputs.json"),
        seed=0, time_per_iteration=360, simulate=True)
    todo = set(JobIdPair(i, None) for i in range(n))
    sched.simulate({"v100": 36, "p100": 36, "k80": 36}, lam=3600.0 / rate,
                   jobs_to_complete=todo)
json.dump({int(j[0]): sched._job_completion_times[j] for j in todo}, sys.stdout)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gavel_scheduler_dir")
    parser.add_argument("--policy", choices=["fifo", "fifo_perf"], default="fifo_perf")
    parser.add_argument("--rate", type=float, default=1.2)
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    out = subprocess.run(
        [sys.executable, "-c", GAVEL_RUNNER, args.gavel_scheduler_dir, args.policy,
         str(args.rate), str(args.jobs)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    theirs = json.loads(out.stdout)
    gavel = np.array([theirs[str(i)] for i in range(args.jobs)])
    frame = gavel_stream(args.rate, 0)
    ours = measure_jobs(frame, args.policy, 0, args.jobs - 1)
    diff = np.abs(ours - gavel) / gavel
    print(f"{args.policy} at {args.rate} jobs/h, jobs 0-{args.jobs - 1} (seed 0)")
    print(f"average JCT (hours): Gavel {gavel.mean() / 3600:.3f}, ours {ours.mean() / 3600:.3f}")
    print(
        f"per job |ours - Gavel| / Gavel: median {np.median(diff):.2%}, "
        f"90th percentile {np.quantile(diff, 0.9):.2%}, largest {diff.max():.2%}; "
        f"within 5 %: {np.mean(diff <= 0.05):.0%} of jobs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
