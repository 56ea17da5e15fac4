"""Does the engine reproduce Young/Daly? A sweep of checkpoint intervals on one large job.

One job of 128 GPUs (16 nodes of 8) and ``--work`` seconds of work on a cluster of 18 such
nodes (two spares: a killed job restarts at once), nodes failing with an exponential MTBF of
``--node-mtbf`` (so the job fails every ``node_mtbf / 16`` s on average), repaired in 10
minutes; checkpoints cost ``--cost`` seconds, a restart 60 s. For each interval of the grid
(0.5-2x Young's ``sqrt(2 * cost * job MTBF)``) the job's mean completion time over
``--seeds`` seeds (the same failure times for every interval: common random numbers) is
printed; the best interval should be within 10 % of Young's (issue 28's fidelity check).

    python benchmarks/check_young_daly.py
    python benchmarks/check_young_daly.py --seeds 5 --work 864000
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401 - puts the checkout on sys.path when analysim is not installed
import numpy as np
import pandas as pd

from analysim import Cluster, SimConfig, Simulation, Workload, young_daly_interval

NODES_USED, GPUS_PER_NODE = 16, 8


def mean_end(interval: float, args: argparse.Namespace) -> float:
    job = pd.DataFrame(
        {
            "job_id": ["big"],
            "vc": ["a"],
            "user": ["u"],
            "submit_time": [0.0],
            "duration": [args.work],
            "num_gpus": [NODES_USED * GPUS_PER_NODE],
        }
    )
    workload = Workload.from_frame(job)
    cluster = Cluster.uniform(1, NODES_USED + 2, GPUS_PER_NODE, name="one-rack")
    ends = []
    for seed in range(args.seeds):
        config = SimConfig(
            seed=seed,
            node_mtbf=args.node_mtbf,
            repair_time=600.0,
            checkpoint_every=interval,
            checkpoint_cost=args.cost,
            restart_overhead=60.0,
            sample_every=86400.0,
        )
        sim = Simulation(workload, cluster, config).run()
        ends.append(float(sim.job_state.end[0]))
    return float(np.mean(ends))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=float, default=60 * 86400.0, help="seconds of work")
    parser.add_argument("--node-mtbf", type=float, default=10 * 86400.0)
    parser.add_argument("--cost", type=float, default=300.0, help="seconds per checkpoint")
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args(argv)
    started = time.process_time()
    young = young_daly_interval(args.cost, args.node_mtbf / NODES_USED)
    grid = young * np.round(np.arange(0.5, 2.01, 0.05), 2)
    means = {float(t): mean_end(float(t), args) for t in grid}
    best = min(means, key=means.__getitem__)
    for t, m in means.items():
        mark = " <- best" if t == best else ""
        print(f"interval {t:8.0f} s ({t / young:4.2f} x Young)  mean end {m:12,.0f} s{mark}")
    gap = abs(best - young) / young
    print(
        f"Young/Daly {young:,.0f} s; best of the sweep {best:,.0f} s ({gap:.1%} away; "
        f"{'within' if gap <= 0.10 else 'NOT within'} 10 %); "
        f"{time.process_time() - started:.1f} s CPU"
    )
    return 0 if gap <= 0.10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
