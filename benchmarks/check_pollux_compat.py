"""Fidelity and speed of ``simulate(..., compat="pollux", scheduler=...)``.

For each workload of the Pollux artifact at each relative load, replays it under a policy
(``--scheduler``: ``tiresias``, the default, or ``optimus``) and compares every job's
completion time (JCT) with the artifact's own results
(``results-jobload/<policy>-<load>/summary.json``): jobs matched to the second, the largest
absolute difference, the average JCT ours and the artifact's, and the replay's CPU seconds
(``read_pollux`` excluded). Under ``pollux`` (a random policy: the artifact's run cannot be
matched job for job) the check is on the average JCT: within 10 % on each workload and 5 %
over them (``--seed`` for our draws).

    python benchmarks/check_pollux_compat.py ARTIFACT/simulator        # loads 0.5 1.0 1.5 2.0
    POLLUX_ARTIFACT=ARTIFACT/simulator python benchmarks/check_pollux_compat.py --loads 1.0
    python benchmarks/check_pollux_compat.py --bundled   # load 1.0 from analysim/data/pollux
    python benchmarks/check_pollux_compat.py --bundled --scheduler optimus
    python benchmarks/check_pollux_compat.py ARTIFACT/simulator --scheduler pollux \
        --loads 1.0 --workloads 1 3 6      # minutes per workload

ARTIFACT: an export of the ``osdi21-artifact`` branch of petuum/adaptdl (``git archive
osdi21-artifact simulator | tar -x``). Without it (and without ``--bundled``) the check is
skipped with a message. Exit status 1 if any job differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import analysim as asim

BUNDLED = Path(asim.__file__).resolve().parent / "data" / "pollux"
LOADS = ("0.5", "1.0", "1.5", "2.0")
SCHEDULERS = ("tiresias", "optimus", "pollux")


def sources(artifact: Path | None, load: str, scheduler: str) -> tuple[Path, dict]:
    """The workload folder of ``load`` and the artifact's JCTs per workload."""
    if artifact is None:
        summary = BUNDLED / "results" / f"{scheduler}-1.0.json"
        return BUNDLED / "workloads", json.loads(summary.read_text())["jcts"]
    folder = artifact / ("workloads" if load == "1.0" else f"workloads-{load}")
    summary = artifact / "results-jobload" / f"{scheduler}-{load}" / "summary.json"
    return folder, json.loads(summary.read_text())["jcts"]


def check(path: Path, peer: dict[str, int], scheduler: str, seed: int = 0) -> dict:
    trace = asim.traces.read_pollux(path)
    start = time.process_time()
    extra = {"seed": seed} if scheduler == "pollux" else {}
    result = asim.simulate(
        trace.workload, trace.cluster, compat="pollux", scheduler=scheduler, **extra
    )
    cpu = time.process_time() - start
    jct = result.jobs.set_index("job_id")["jct"]
    diff = (jct - jct.index.map(peer).astype(float)).abs()
    return {
        "workload": path.stem,
        "jobs": len(jct),
        "matched": int((diff == 0).sum()),
        "max_abs_diff_s": float(diff.max()),
        "avg_jct_ours": float(jct.mean()),
        "avg_jct_peer": sum(peer.values()) / len(peer),
        "cpu_s": round(cpu, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("artifact", nargs="?", default=os.environ.get("POLLUX_ARTIFACT"))
    parser.add_argument("--loads", nargs="+", default=list(LOADS), choices=LOADS)
    parser.add_argument("--bundled", action="store_true", help="load 1.0, bundled data")
    parser.add_argument("--scheduler", default="tiresias", choices=SCHEDULERS)
    parser.add_argument("--workloads", nargs="+", type=int, help="numbers (default: all 8)")
    parser.add_argument("--seed", type=int, default=0, help="of the pollux policy")
    args = parser.parse_args()
    if args.bundled:
        artifact, loads = None, ["1.0"]
    elif args.artifact is None or not Path(args.artifact).is_dir():
        print(
            "skipped: give the artifact's simulator/ folder (argument or POLLUX_ARTIFACT), "
            "or --bundled for load 1.0 from analysim/data/pollux"
        )
        return 0
    else:
        artifact, loads = Path(args.artifact), args.loads
    worst, ours, peers = 0.0, [], []
    print(
        "| load | workload | jobs | matched | max abs diff (s) | avg JCT ours | avg JCT peer |",
        end="",
    )
    print(" diff % | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for load in loads:
        folder, jcts = sources(artifact, load, args.scheduler)
        for path in sorted(folder.glob("workload-*.csv"), key=lambda p: int(p.stem.split("-")[1])):
            if args.workloads and int(path.stem.split("-")[1]) not in args.workloads:
                continue
            row = check(path, jcts[path.stem], args.scheduler, args.seed)
            worst = max(worst, row["max_abs_diff_s"])
            ours.append(row["avg_jct_ours"])
            peers.append(row["avg_jct_peer"])
            off = 100 * (row["avg_jct_ours"] / row["avg_jct_peer"] - 1)
            print(
                f"| {load} | {row['workload']} | {row['jobs']} | {row['matched']} | "
                f"{row['max_abs_diff_s']:g} | {row['avg_jct_ours']:.5f} | "
                f"{row['avg_jct_peer']:.5f} | {off:+.2f} | {row['cpu_s']} |",
                flush=True,
            )
    if args.scheduler != "pollux":
        return 1 if worst > 0 else 0
    each = [abs(o / p - 1) for o, p in zip(ours, peers, strict=True)]
    overall = abs(sum(ours) / sum(peers) - 1)
    print(f"mean of averages: ours {sum(ours) / len(ours):.2f}, peer {sum(peers) / len(peers):.2f}")
    return 1 if max(each, default=0) > 0.10 or overall > 0.05 else 0


if __name__ == "__main__":
    sys.exit(main())
