"""The ``analysim sweep``, ``explain`` and ``docs`` commands: their options and handlers."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from analysim.faces.cli_options import PROG, UsageError
from analysim.faces.cli_own_data import add_own_data_options, sweep_inputs
from analysim.results.readable import table_text

log = logging.getLogger("analysim.faces.cli")


def add_sweep_command(commands: Any, common: argparse.ArgumentParser) -> None:
    sweep = commands.add_parser(
        "sweep",
        parents=[common],
        help="run a grid of configurations and seeds (on Dask), resumable",
        description="Run every configuration of a sweep file with every seed, in parallel on "
        "Dask; each finished run is saved under --out at once, so running the same command "
        "again skips what is done. See docs/sweeps.md for the file format.",
    )
    sweep.add_argument("file", type=Path, help="sweep file (YAML or JSON): workload, grid, ...")
    sweep.add_argument("--out", type=Path, required=True, metavar="DIR", help="results folder")
    sweep.add_argument(
        "--scheduler-address",
        default=None,
        metavar="ADDR",
        help="run on this Dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a local cluster)",
    )
    sweep.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes of the local cluster; 0 or 1 runs in this process "
        "(default: one per core, or in-process for a tiny sweep)",
    )
    add_own_data_options(sweep)
    sweep.add_argument("--retry-errors", action="store_true", help="re-run the failed runs")
    sweep.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the local Dask cluster's dashboard on a loopback port (default: none)",
    )
    sweep.add_argument("--no-progress", action="store_true", help="no progress bar")
    sweep.set_defaults(handler=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    from analysim.sweep import sweep
    from analysim.sweep.report import overview

    if args.workers is not None and args.workers < 0:
        raise UsageError(f"--workers must be >= 0, got {args.workers}")
    frame = sweep(
        **sweep_inputs(args),
        out=args.out,
        scheduler_address=args.scheduler_address,
        workers=args.workers,
        retry_errors=args.retry_errors,
        progress=not args.no_progress,
        dashboard=args.dashboard,
    )
    print(table_text(overview(frame)).to_string())
    log.info("wrote %s (one row per run) and runs/ to %s", "sweep.parquet", args.out)
    return 1 if frame.attrs["failed"] else 0


# -- analysim explain RESULT_DIR JOB [--at TIME] -----------------------------------------------
def add_explain_command(commands: Any, common: argparse.ArgumentParser) -> None:
    explain = commands.add_parser(
        "explain",
        parents=[common],
        help="why a job of a saved result waited, or what happened to it",
        description="Read a result saved with 'analysim run --out DIR' and say what happened "
        "to JOB: its events and why it waited after its submission and after each "
        "preemption; with --at TIME, why it is waiting (or not) at that moment. The answers "
        "are read from the engine's own records of its decisions.",
    )
    explain.add_argument("result", type=Path, metavar="RESULT_DIR", help="a folder of --out")
    explain.add_argument("job", metavar="JOB", help="the job's job_id")
    explain.add_argument(
        "--at",
        default=None,
        metavar="TIME",
        help="the moment to explain: seconds from the run's start (1215112), an amount with "
        "a unit (2.3 h, 45 min, 14 d) or a clock (14 d 01:31:52) (default: the job's story)",
    )
    explain.add_argument(
        "--waits",
        type=int,
        default=3,
        metavar="N",
        help="explain the first N spells of waiting (default: 3)",
    )
    explain.set_defaults(handler=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from analysim.inputs.validation import seconds
    from analysim.results.explain import job_story, why_waiting
    from analysim.results.readable import parse_moment
    from analysim.results.result import Result

    at = None
    if args.at is not None:
        at = seconds(parse_moment(args.at, "--at"), "--at", positive=False)
    if args.waits < 0:
        raise UsageError(f"--waits must be >= 0, got {args.waits}")
    if not (args.result / "result.json").is_file():
        raise UsageError(
            f"{args.result}: not a saved result (no result.json); save one with "
            "'analysim run ... --out DIR'"
        )
    result = Result.load(args.result)
    if at is None:
        print(job_story(result, args.job, waits=args.waits))
    else:
        job_story(result, args.job, waits=0)  # an unknown job: the same error as without --at
        print(why_waiting(result, args.job, at))
    return 0


def add_docs_command(commands: Any, common: argparse.ArgumentParser) -> None:
    docs = commands.add_parser(
        "docs",
        parents=[common],
        help="build the documentation site (Sphinx) into docs/_build/html",
        description="Build the documentation site of this checkout with Sphinx (the 'docs' "
        "extra: pip install -e '.[docs]'): the guide pages of docs/, the API reference from "
        "the docstrings and the gallery of notebooks with their committed figures (nothing is "
        "executed). Every Sphinx warning is an error and every internal link is checked.",
    )
    docs.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the site here (default: docs/_build/html of the checkout)",
    )
    docs.add_argument(
        "--no-strict",
        action="store_true",
        help="report warnings without failing (the internal links are still checked)",
    )
    docs.set_defaults(handler=cmd_docs)


def cmd_docs(args: argparse.Namespace) -> int:
    from analysim.faces.docsite import DocsError, build

    try:
        out = build(out=args.out, strict=not args.no_strict, quiet=not args.verbose)
    except DocsError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    print(out / "index.html")
    return 0
