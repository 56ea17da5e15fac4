"""The ``analysim`` command: a thin argparse wrapper over presets, ``simulate`` and ``Result``.

``analysim run`` builds a preset workload and cluster, runs one simulation and prints its
summary; every ``SimConfig`` field is an option of its own (``faces/cli_options.py``).
``analysim presets`` lists the preset names; ``analysim explain RESULT_DIR JOB`` says what
happened to a job of a saved result and why it waited (``faces/cli_commands.py``, with
``sweep`` and ``docs``); one's own tables come in through ``faces/cli_own_data.py``.

Bad options, and a ``ValueError`` from the library, end in one line ``analysim: error: ...`` and
exit code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import analysim as asim
from analysim.experiments.regenerate import add_figures_command
from analysim.experiments.study import DEFAULT_PRESET as STUDY_PRESET
from analysim.faces.cli_commands import add_docs_command, add_explain_command, add_sweep_command
from analysim.faces.cli_options import (
    PROG,
    RaisingParser,
    UsageError,
    add_config_options,
    add_trace_options,
    config_values,
)
from analysim.faces.cli_own_data import add_own_data_options, check_trace_folder, own_data
from analysim.faces.extras import MissingPackage, missing_package_message
from analysim.results.readable import summary_text, table_text

USAGE_ERROR = 2

log = logging.getLogger("analysim.faces.cli")

__all__ = ["build_parser", "config_values", "main", "UsageError", "PROG"]


# -- the parser -------------------------------------------------------------------------------
def _version() -> str:
    try:
        return metadata.version("analysim")
    except metadata.PackageNotFoundError:
        return getattr(asim, "__version__", "unknown")


def build_parser() -> argparse.ArgumentParser:
    parser = RaisingParser(
        prog=PROG,
        description="Simulate a multi-tenant GPU cluster driven by a job trace.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    common = RaisingParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", help="log debugging detail")
    common.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run",
        parents=[common],
        help="simulate a preset workload (or a trace, or your own tables) and print the summary",
        description="Simulate a preset workload on a preset cluster, a downloaded trace on "
        "its cluster (--trace), or your own jobs and nodes tables (--jobs, --nodes), print the "
        "summary table and, with --out, save the result (parquet frames + config JSON; "
        "'analysim explain' reads it).",
    )
    run.add_argument(
        "--workload",
        default=None,
        metavar="NAME",
        help=f"workload preset: {', '.join(asim.presets.names())}; see 'analysim presets' "
        "(default: venus, unless --trace is given)",
    )
    run.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help="cluster preset (default: the same preset as --workload, or the trace's cluster)",
    )
    add_trace_options(run)
    add_own_data_options(run)
    run.add_argument(
        "--load-scale",
        type=float,
        default=None,
        metavar="X",
        help="multiply the workload's arrival rate by X (default: the preset's, 1.0)",
    )
    run.add_argument(
        "--days",
        type=float,
        default=None,
        metavar="N",
        help="days of trace to generate, for presets that have a length (default: the "
        "preset's: 30 for the Helios presets, 26 for venus_overloaded)",
    )
    run.add_argument(
        "--until",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop the simulation at this time (default: when every job has finished)",
    )
    run.add_argument(
        "--compat",
        default=None,
        choices=["helios", "pollux"],
        help="replay with a peer simulator's own rules: helios (docs/compat.md; reads only "
        "--scheduler: fifo, sjf, srtf, tiresias, and --sample-every), or pollux, for a Pollux "
        "artifact workload given as --trace FILE.csv --trace-format pollux (docs/pollux.md; "
        "--scheduler tiresias, optimus, or pollux, seeded by --seed)",
    )
    run.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="SimConfig as a JSON (or YAML) object; options written on the command line "
        "override its values",
    )
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="save the result (jobs, events, timeline as parquet, config as JSON) to DIR",
    )
    run.add_argument("--by-vc", action="store_true", help="also print the summary per VC")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_options(run)
    run.set_defaults(handler=cmd_run)

    from analysim.experiments.saturation.cli import add_saturate_command

    add_saturate_command(commands, common)
    presets = commands.add_parser(
        "presets", parents=[common], help="list the workload and cluster presets"
    )
    presets.add_argument(
        "--check",
        nargs="?",
        const="all",
        default=None,
        metavar="NAME",
        help="simulate each calibrated preset's month (or NAME's) under its own config and "
        "compare with the published Helios or Acme numbers (PASS/MISS per tolerance)",
    )
    presets.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S", help="seeds of --check"
    )
    presets.add_argument(
        "--days",
        type=float,
        default=None,
        metavar="N",
        help="days simulated by --check (30; kalos: its 123-day trace)",
    )
    presets.set_defaults(handler=cmd_presets)
    study = commands.add_parser(
        "study",
        parents=[common],
        help="the paper's study: preemption off/on x migration off/on, one scheduler",
        description="Run one scheduler with preemption off and on and migration off and "
        "on (four arms, same workload and seed) and print average and p95 JCT, queueing "
        "delay, utilisation, fragmented GPUs, blocked jobs, preemptions and migrations.",
    )
    study.add_argument(
        "--workload",
        default=None,
        metavar="NAME",
        help=f"workload preset (default: {STUDY_PRESET}, the preset of docs/study.md's table)",
    )
    study.add_argument("--cluster", default=None, metavar="NAME", help="cluster preset")
    add_trace_options(study)
    add_own_data_options(study)
    study.add_argument("--scheduler", default="las", metavar="NAME", help="(default: las)")
    study.add_argument("--seed", type=int, default=0, metavar="N", help="(default: 0)")
    study.add_argument("--days", type=float, default=None, metavar="N", help="trace length")
    study.add_argument(
        "--load-scale",
        type=float,
        default=None,
        metavar="X",
        help="multiply the workload's arrival rate by X",
    )
    study.add_argument("--out", type=Path, default=None, metavar="FILE.csv")
    study.set_defaults(handler=cmd_study)
    add_figures_command(commands, common)
    add_sweep_command(commands, common)
    add_explain_command(commands, common)
    add_docs_command(commands, common)
    return parser


# -- commands ---------------------------------------------------------------------------------


def preset_options(args: argparse.Namespace, seed: int | None) -> dict[str, Any]:
    """The workload preset's options written on the command line (and the seed, if any)."""
    options: dict[str, Any] = {} if seed is None else {"seed": seed}
    if args.load_scale is not None:
        options["load_scale"] = args.load_scale
    if args.days is not None:
        options["days"] = args.days
    return options


def workload_and_cluster(
    args: argparse.Namespace, seed: int | None, default: str = "venus"
) -> tuple[Any, Any]:
    """The workload and cluster the options name: a preset (``default`` if none is named),
    a trace (``--trace``) or one's own tables (``--jobs``, ``--nodes``), whose load report is
    logged; ``--load-scale`` speeds a trace's arrivals up, ``--cluster`` replaces its cluster
    with a preset."""
    own = own_data(args)
    if own is not None:
        return own
    if args.trace is None:
        if args.trace_format is not None:
            raise UsageError("--trace-format needs --trace FOLDER")
        name = args.workload or default
        workload = asim.presets.workload(name, **preset_options(args, seed))
        return workload, asim.presets.cluster(args.cluster or name)
    if args.workload is not None:
        raise UsageError("--trace and --workload both name the jobs to simulate; give one")
    if args.days is not None:
        raise UsageError("--days sets a preset's length; a trace has its own")
    from analysim.experiments.figures import load_trace

    if args.trace_format != "pollux":  # a Pollux workload is one CSV file
        check_trace_folder(args.trace)
    trace = load_trace(args.trace, args.trace_format, speedup=args.load_scale or 1.0)
    log.info("%s", trace.report)
    cluster = asim.presets.cluster(args.cluster) if args.cluster else trace.cluster
    return trace.workload, cluster


def preset_run_config(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields a preset workload's run starts from (``gavel``: Gavel's rounds and
    costs; the other presets: none), under the config file and the options written."""
    if args.trace is not None or getattr(args, "jobs", None) is not None or args.compat:
        return {}
    return asim.presets.run_config(args.workload or "venus")


def check_early(args: argparse.Namespace, out_is_folder: bool) -> None:
    """Check ``--out`` (and ``--until``) before any work, so a bad one costs no run."""
    from analysim.inputs.validation import seconds, writable_output

    if getattr(args, "until", None) is not None:
        seconds(args.until, "--until", positive=False)
    if args.out is not None:
        writable_output(args.out, "--out", folder=out_is_folder)


def cmd_run(args: argparse.Namespace) -> int:
    values = config_values(args)
    check_early(args, out_is_folder=True)
    workload, cluster = workload_and_cluster(args, values.get("seed"))
    values = {**preset_run_config(args), **values}
    log.info(
        "simulating workload %r (%s jobs) on cluster %r with %s",
        workload.name,
        f"{len(workload.jobs):,}",
        cluster.name,
        json.dumps(values, sort_keys=True) if values else "defaults",
    )
    if args.compat == "helios":
        values.pop("seed", None)  # it seeded the workload; the replay has no randomness
    result = asim.simulate(
        workload,
        cluster,
        progress=not args.no_progress,
        until=args.until,
        compat=args.compat,
        **values,
    )

    print(summary_text(result.summary()).to_string())
    if args.by_vc:
        print()
        print(table_text(result.summary(by="vc")).to_string())
    if args.out is not None:
        result.save(args.out)
        log.info("wrote the result to %s", args.out)
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    from analysim.experiments.study import paper_study

    check_early(args, out_is_folder=False)
    workload, cluster = workload_and_cluster(args, args.seed, default=STUDY_PRESET)
    table = paper_study(workload, cluster, scheduler=args.scheduler, seed=args.seed)
    print(table_text(table).to_string())
    if args.out is not None:
        table.to_csv(args.out, float_format="%.6g")
        log.info("wrote the study table to %s", args.out)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    if args.check is None:
        for name in asim.presets.names():
            print(f"{name:<17} {asim.presets.PRESETS[name].description}")
        return 0
    from analysim.presets import calibration

    names = None if args.check == "all" else [args.check]
    try:
        table = calibration.check(names, seeds=args.seeds, days=args.days)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    longer = ", ".join(f"{n}: {d:g}" for n, d in calibration.CHECK_DAYS.items())
    month = calibration.check_days("venus")
    span = f"{month:g} days ({longer})" if args.days is None else f"{args.days:g} days"
    print(f"{span}, seeds {args.seeds}, GPU jobs; config: asim.presets.config(name)\n")
    print(calibration.format_check(table))
    return 0 if calibration.passed(table) else 1


# -- entry point ------------------------------------------------------------------------------
def _one_line(message: str) -> str:
    return " ".join(str(message).split())


def _missing_package(exc: ModuleNotFoundError) -> str:
    """A one-line error for a command whose optional dependency is not installed."""
    if isinstance(exc, MissingPackage):
        return _one_line(str(exc))
    return missing_package_message(exc.name or str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return USAGE_ERROR
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0

    logger = logging.getLogger("analysim")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logger.setLevel(level)
    logger.propagate = False
    try:
        return args.handler(args)
    except (UsageError, ValueError) as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return USAGE_ERROR
    except (ModuleNotFoundError, MissingPackage) as exc:
        print(f"{PROG}: error: {_missing_package(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
