"""Check `asim.saturate` against the FGD simulator's cached curves on every openb workload of
the paper (default and its 16 variants) at every point.

For each workload, seed and deterministic policy (fgd, best_fit, dot_product, gpu_packing,
gpu_clustering) our curve is computed with the peer's arrival order and node tie-break
prefixes for that seed and compared with the peer's cached curve point by point; a table
gives, per workload and policy, how many points equal the peer's (allocation exactly, the
fragmentation ratio within 1e-9, the amount within 0.011) and the largest difference.

Needs a checkout of hkust-adsl/kubernetes-scheduler-simulator (Apache-2.0) for the pod lists
(`data/csv/`) and the cached curves (`experiments/analysis/expected_results/`), and the
peer's arrival orders: files `openb_pod_list_<workload>_tune1.3_seed<N>_arrivals.csv` and
`..._seed<N>_node_prefix.csv` in `--orders`; missing ones are made with the Go tool
`benchmarks/fgd_peer_orders/main.go` (needs `go`, 1.19-1.23: the peer's math/rand).

    python benchmarks/check_fgd_variants.py --peer ~/kubernetes-scheduler-simulator \
        --orders /tmp/fgd_orders --seeds 42 43 51 --workers 2

Exit status 1 when any point differs.
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

import analysim as asim
from analysim.experiments.saturation.peer import (
    DETERMINISTIC,
    compare_with_peer,
    count_matching,
    read_peer_curves,
)

WORKLOADS = (
    "default",
    "cpu050", "cpu100", "cpu200", "cpu250",
    "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
)  # fmt: skip
GO_TOOL = Path(__file__).resolve().parent / "fgd_peer_orders" / "main.go"


def pod_list(peer: Path, workload: str) -> Path:
    return peer / "data" / "csv" / f"openb_pod_list_{workload}.csv"


def order_files(orders: Path, workload: str, seed: int, tune: float = 1.3) -> tuple[Path, Path]:
    stem = f"openb_pod_list_{workload}"
    return (
        orders / f"{stem}_tune{tune:g}_seed{seed}_arrivals.csv",
        orders / f"{stem}_seed{seed}_node_prefix.csv",
    )


@functools.lru_cache(maxsize=4)
def read_trace(peer: Path, workload: str):
    return asim.traces.read_openb_tasks(
        pod_list(peer, workload), peer / "data" / "csv" / "openb_node_list_gpu_node.csv"
    )


def make_orders(peer: Path, orders: Path, workload: str, seeds: list[int], go: str) -> None:
    """Write the peer's orders for ``workload`` and ``seeds`` with the Go tool."""
    trace = read_trace(peer, workload)
    with tempfile.TemporaryDirectory() as tmp:
        pods, nodes = Path(tmp) / "pods.csv", Path(tmp) / "nodes.csv"
        trace.tasks.rename(columns={"num_gpus": "num_gpu"})[
            ["name", "num_gpu", "gpu_milli"]
        ].to_csv(pods, index=False)
        trace.nodes[["node"]].to_csv(nodes, index=False)
        gpus = int(trace.nodes["gpus"].sum())
        for seed in seeds:
            subprocess.run(
                [go, "run", str(GO_TOOL), "-pods", str(pods), "-nodes", str(nodes),
                 "-gpus", str(gpus), "-seed", str(seed), "-tune", "1.3", "-out", str(orders),
                 "-stem", f"openb_pod_list_{workload}"],
                check=True,
            )  # fmt: skip


def one_run(peer: Path, orders: Path, workload: str, policy: str, seed: int) -> pd.DataFrame:
    arrivals, prefixes = order_files(orders, workload, seed)
    curve = asim.saturate(
        read_trace(peer, workload), placement=policy, arrivals=arrivals, tie_break=prefixes
    )
    return curve.assign(workload=workload, policy=policy, seed=seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", type=Path, required=True, help="checkout of the FGD simulator")
    parser.add_argument("--orders", type=Path, required=True, help="folder of peer order files")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS))
    parser.add_argument("--policies", nargs="+", default=list(DETERMINISTIC))
    parser.add_argument("--seeds", nargs="+", type=int, default=[42, 43, 51])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--go", default="go", help="the go command (to make missing orders)")
    parser.add_argument("--out", type=Path, help="write the point-by-point comparison here (CSV)")
    args = parser.parse_args(argv)
    peer, orders = args.peer.resolve(), args.orders.resolve()
    orders.mkdir(parents=True, exist_ok=True)
    expected = read_peer_curves(
        peer / "experiments" / "analysis" / "expected_results", args.workloads
    )
    for workload in args.workloads:
        missing = [
            s for s in args.seeds if not all(p.is_file() for p in order_files(orders, workload, s))
        ]
        if missing:
            make_orders(peer, orders, workload, missing, args.go)

    start = time.perf_counter()
    jobs = [(w, p, s) for w in args.workloads for p in args.policies for s in args.seeds]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        curves = list(pool.map(one_run, *zip(*[(peer, orders, *j) for j in jobs], strict=True)))
    seconds = time.perf_counter() - start

    rows, points = [], []
    by_run = expected.groupby(["workload", "policy", "seed"])
    for (workload, policy, seed), curve in zip(jobs, curves, strict=True):
        theirs = by_run.get_group((workload, policy, seed))
        comparison = compare_with_peer(curve, theirs).assign(
            workload=workload, policy=policy, seed=seed
        )
        points.append(comparison)
        counts = count_matching(comparison)
        rows.append({"workload": workload, "policy": policy, "seed": seed} | {
            f"{m}_{part}": value for m, triple in counts.items()
            for part, value in zip(("ok", "n", "max_diff"), triple, strict=True)
        })  # fmt: skip
    table = pd.DataFrame(rows)
    summary = table.groupby(["workload", "policy"], sort=False).agg(
        seeds=("seed", "size"),
        alloc_ok=("allocated_pct_ok", "sum"),
        points=("allocated_pct_n", "sum"),
        alloc_max_diff=("allocated_pct_max_diff", "max"),
        ratio_ok=("frag_ratio_pct_ok", "sum"),
        ratio_max_diff=("frag_ratio_pct_max_diff", "max"),
        amount_ok=("frag_amount_pct_ok", "sum"),
        amount_max_diff=("frag_amount_pct_max_diff", "max"),
    )
    with pd.option_context("display.max_rows", None, "display.width", 160):
        print(summary.to_string(float_format=lambda x: f"{x:.4g}"))
    bad = summary[
        (summary["alloc_ok"] < summary["points"])
        | (summary["ratio_ok"] < summary["points"])
        | (summary["amount_ok"] < summary["points"])
    ]
    print(
        f"\n{len(jobs)} runs ({len(args.workloads)} workloads x {len(args.policies)} policies x "
        f"seeds {args.seeds}) in {seconds:.0f} s on {args.workers} worker(s); "
        f"{len(summary) - len(bad)} of {len(summary)} workload/policy pairs equal the peer at "
        f"all {int(summary['points'].sum())} points"
    )
    if args.out:
        pd.concat(points).to_csv(args.out, index=False)
    return 1 if len(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
