"""``analysim saturate``: the saturation experiment from the command line."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from analysim.experiments.saturation.run import peer_order_files
from analysim.experiments.saturation.sweep import saturate_sweep
from analysim.sharing.placers import SHARE_PLACERS

REPORT_PCTS = (50, 80, 100, 110, 120, 130)


def add_saturate_command(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``saturate`` subcommand to the CLI's subparsers."""
    cmd = commands.add_parser(
        "saturate",
        parents=[common],
        help="the FGD saturation experiment: tasks arrive and never leave (docs/saturation.md)",
        description="Place the tasks of an openb trace one after another until the demand "
        "reaches --inflate x the GPU capacity, for each placement and seed, and print the "
        "mean allocation and fragmentation ratio at a few arrived percents.",
    )
    cmd.add_argument(
        "--trace",
        default="bundled:openb",
        metavar="FOLDER",
        help="openb folder with *pod_list*.csv and *node_list*.csv (default: bundled:openb)",
    )
    cmd.add_argument(
        "--placement",
        nargs="+",
        default=["fgd"],
        metavar="NAME",
        help=f"one or more of {', '.join(SHARE_PLACERS.names)} (default: fgd)",
    )
    cmd.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0],
        metavar="N",
        help="seeds of the sampling (default: 0)",
    )
    cmd.add_argument(
        "--inflate",
        type=float,
        default=1.3,
        metavar="X",
        help="demand to reach, times the GPU capacity (default: 1.3)",
    )
    cmd.add_argument(
        "--peer-orders",
        type=Path,
        default=None,
        metavar="DIR",
        help="replay the FGD simulator's arrival orders and tie-break prefixes "
        "from DIR (files *_tune<X>_seed<N>_arrivals.csv, *_seed<N>_node_prefix.csv)",
    )
    cmd.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="run on a local Dask cluster of N processes",
    )
    cmd.add_argument(
        "--out", type=Path, default=None, metavar="FILE", help="save every curve (tidy CSV) to FILE"
    )
    cmd.set_defaults(handler=cmd_saturate)


def cmd_saturate(args: argparse.Namespace) -> int:
    from analysim.inputs.validation import writable_output

    if args.out is not None:  # before any work, so a bad --out costs no run
        writable_output(args.out, "--out", folder=False)
    for name in args.placement:
        if name not in SHARE_PLACERS.names:
            raise ValueError(f"--placement: unknown {name!r}; choose from {SHARE_PLACERS.names}")
    orders = peer_order_files(args.peer_orders, args.inflate) if args.peer_orders else None
    frame = saturate_sweep(
        args.trace,
        placements=args.placement,
        seeds=args.seeds,
        inflate=args.inflate,
        orders=orders,
        workers=args.workers,
    )
    if args.out is not None:
        frame.to_csv(args.out, index=False)
    pcts = [p for p in REPORT_PCTS if p <= int(args.inflate * 100)]
    table = (
        frame[frame["arrived_pct"].isin(pcts)]
        .groupby(["placement", "arrived_pct"])[["allocated_pct", "frag_ratio_pct"]]
        .mean()
        .unstack("arrived_pct")
        .round(2)
    )
    table.columns = [f"{'alloc' if c == 'allocated_pct' else 'frag'}@{p}" for c, p in table.columns]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(
            f"mean over seeds {args.seeds}: allocated % and fragmentation ratio % of GPU "
            "milli at each arrived % of demand"
        )
        print(table.to_string())
    return 0
