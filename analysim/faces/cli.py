"""The ``analysim`` command: a thin argparse wrapper over presets, ``simulate`` and ``Result``.

``analysim run`` builds a preset workload and cluster, runs one simulation and prints its
summary; every ``SimConfig`` field is an option of its own, generated from the dataclass so the
command line says the same thing in the same words as notebooks, widgets and sweeps.
``analysim presets`` lists the preset names; ``analysim explain RESULT_DIR JOB`` says what
happened to a job of a saved result and why it waited.

Bad options, and a ``ValueError`` from the library, end in one line ``analysim: error: ...`` and
exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import logging
import re
import sys
import typing
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import analysim as asim
from analysim.experiments.figures import add_figures_command
from analysim.experiments.study import DEFAULT_PRESET as STUDY_PRESET
from analysim.faces.extras import MissingPackage, missing_package_message
from analysim.inputs.config import SimConfig
from analysim.policies import COSTS, PLACERS, SCHEDULERS
from analysim.policies.registry import Registry
from analysim.results.readable import summary_text, table_text
from analysim.sharing.placers import SHARE_PLACERS

PROG = "analysim"
USAGE_ERROR = 2

log = logging.getLogger("analysim.faces.cli")

# The registry that names the choices of each policy field of SimConfig.
POLICY_REGISTRIES: dict[str, Registry[Any]] = {
    "scheduler": SCHEDULERS,
    "placement": PLACERS,
    "checkpoint_cost": COSTS,
    "migration_cost": COSTS,
}
EXTRA_HELP = {"seed": "It also seeds the synthetic workload."}
# the placers of the FGD study, which run the engine in resource mode (docs/semantics.md)
EXTRA_CHOICES = {
    "placement": tuple(n for n in SHARE_PLACERS.names if n not in PLACERS.names),
}


class UsageError(Exception):
    """A bad command line or option value: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing usage and exiting."""

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- options generated from SimConfig ---------------------------------------------------------
def field_help(cls: type = SimConfig) -> dict[str, str]:
    """Each field's sentence from the ``name: text`` lines of the class docstring."""
    names = {f.name for f in dataclasses.fields(cls)}
    docs: dict[str, str] = {}
    current = None
    for line in inspect.cleandoc(cls.__doc__ or "").splitlines():
        match = re.match(r"(\w+):\s*(.*)", line)
        if match and match.group(1) in names:
            current = match.group(1)
            docs[current] = match.group(2)
        elif current and line.startswith(" ") and line.strip():
            docs[current] += " " + line.strip()
        else:
            current = None
    return {name: text.replace("``", "") for name, text in docs.items()}


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict) else str(value)


def policy_spec(
    registry: Registry[Any], numbers_are_seconds: bool = False, also: tuple[str, ...] = ()
) -> Callable[[str], Any]:
    """An argparse ``type``: a registered name (or one of ``also``), a JSON object
    ``{"name": ..., ...}``, or (for cost models) a number of seconds."""

    def parse(text: str) -> Any:
        if numbers_are_seconds:
            try:
                return float(text)
            except ValueError:
                pass
        if text.lstrip().startswith("{"):
            try:
                spec = json.loads(text)
            except json.JSONDecodeError as exc:
                raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text}") from None
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise argparse.ArgumentTypeError(f'a JSON spec needs a "name": {text}')
            name = spec["name"]
        else:
            spec = name = text
        if name not in registry.names and name not in also:
            choices = ", ".join([*registry.names, *also])
            raise argparse.ArgumentTypeError(
                f"unknown {registry.kind} {name!r}; choose one of {choices}"
            )
        return spec

    return parse


def add_config_options(parser: argparse.ArgumentParser) -> list[str]:
    """Add one option per ``SimConfig`` field; return the field names.

    Every option defaults to ``None`` (not given), so values from ``--config`` and the
    dataclass defaults stay in force unless the option is written.
    """
    group = parser.add_argument_group(
        "simulation options (the fields of SimConfig; JSON names use underscores)"
    )
    hints = typing.get_type_hints(SimConfig)
    docs = field_help()
    names = []
    for f in dataclasses.fields(SimConfig):
        flag = "--" + f.name.replace("_", "-")
        text = " ".join(filter(None, [docs.get(f.name, ""), EXTRA_HELP.get(f.name)]))
        kwargs: dict[str, Any] = {"dest": f.name, "default": None}
        kind = hints.get(f.name)
        registry = POLICY_REGISTRIES.get(f.name)
        if registry is not None:
            seconds = registry is COSTS
            also = EXTRA_CHOICES.get(f.name, ())
            kwargs["type"] = policy_spec(registry, numbers_are_seconds=seconds, also=also)
            kwargs["metavar"] = "SECONDS|NAME" if seconds else "NAME"
            listed = all(name in text for name in [*registry.names, *also])
            text += "" if listed else f" Choices: {', '.join([*registry.names, *also])}."
            text += " Or a number of seconds (constant)," if seconds else " Or"
            text += ' a JSON object {"name": ..., <parameters>}.'
        elif kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif kind in (int, float, float | None):
            kwargs["type"] = int if kind is int else float
            kwargs["metavar"] = {int: "N", float | None: "SECONDS"}.get(kind, "SECONDS")
            if f.name == "borrow_limit":
                kwargs["metavar"] = "FRACTION"
        text += f" (default: {_shown(_default(f))})"
        group.add_argument(flag, help=text.replace("%", "%%"), **kwargs)
        names.append(f.name)
    return names


# -- the parser -------------------------------------------------------------------------------
def _version() -> str:
    try:
        return metadata.version("analysim")
    except metadata.PackageNotFoundError:
        return getattr(asim, "__version__", "unknown")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Simulate a multi-tenant GPU cluster driven by a job trace.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    common = _Parser(add_help=False)
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
        choices=["helios"],
        help="replay with the public Helios simulator's rules (docs/compat.md); reads only "
        "--scheduler (fifo, sjf, srtf, tiresias) and --sample-every",
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


def add_trace_options(command: argparse.ArgumentParser) -> None:
    """``--trace FOLDER`` and ``--trace-format NAME``: a downloaded trace instead of a preset."""
    from analysim.traces import TRACE_FORMATS

    command.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="simulate a downloaded trace (its jobs and its cluster) instead of a preset; "
        "what the reader keeps and drops is logged (docs/traces.md)",
    )
    command.add_argument(
        "--trace-format",
        default=None,
        choices=TRACE_FORMATS,
        help="the trace's format (default: told from the files in FOLDER)",
    )


# -- commands ---------------------------------------------------------------------------------
def load_config_file(path: Path) -> dict[str, Any]:
    """The SimConfig values in a JSON (or YAML) file, as a dict."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"--config: cannot read {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() in (".yml", ".yaml"):
            import yaml

            values = yaml.safe_load(text)
        else:
            values = json.loads(text)
    except Exception as exc:  # a parse error of either format
        raise UsageError(f"--config: {path} is not valid: {exc}") from None
    if not isinstance(values, dict):
        raise UsageError(f"--config: {path} must hold an object of SimConfig fields")
    return values


def config_values(args: argparse.Namespace) -> dict[str, Any]:
    """The config file's values overridden by the options written; validated."""
    values = load_config_file(args.config) if args.config is not None else {}
    for name in SimConfig.fields():
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    if getattr(args, "compat", None) is None:
        SimConfig.from_dict(values)  # fail here, before building the workload
    return values


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

    check_trace_folder(args.trace)
    trace = load_trace(args.trace, args.trace_format, speedup=args.load_scale or 1.0)
    log.info("%s", trace.report)
    cluster = asim.presets.cluster(args.cluster) if args.cluster else trace.cluster
    return trace.workload, cluster


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
    log.info(
        "simulating workload %r (%s jobs) on cluster %r with %s",
        workload.name,
        f"{len(workload.jobs):,}",
        cluster.name,
        json.dumps(values, sort_keys=True) if values else "defaults",
    )
    if args.compat is not None:
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


# -- your own data: --jobs FILE --nodes FILE --------------------------------------------------
OWN_DATA_FLAGS = ("nodes", "column", "time_format", "quota")


def _pair(flag: str, text: str) -> tuple[str, str]:
    left, sep, right = text.partition("=")
    if not sep or not left.strip() or not right.strip():
        raise argparse.ArgumentTypeError(f"{flag} takes NAME=VALUE, got {text!r}")
    return left.strip(), right.strip()


def column_mapping(text: str) -> tuple[str, str]:
    """An argparse ``type``: ``FIELD=THEIRS``, AnalySIM's jobs field and the file's column."""
    from analysim.traces.generic import OPTIONAL, REQUIRED

    ours, theirs = _pair("--column", text)
    fields = [*REQUIRED, *OPTIONAL]
    if ours not in fields:
        hint = f" (is {theirs}={ours} meant?)" if theirs in fields else ""
        raise argparse.ArgumentTypeError(
            f"{ours!r} is not an AnalySIM jobs field{hint}; write FIELD=THEIRS with FIELD one "
            f"of {', '.join(fields)}"
        )
    return ours, theirs


def quota_value(text: str) -> tuple[str, int]:
    """An argparse ``type``: ``VC=GPUS``, a VC's quota of GPUs over the shared pool."""
    vc, gpus = _pair("--quota", text)
    if not gpus.isdigit():
        raise argparse.ArgumentTypeError(f"--quota {text}: GPUS must be a whole number >= 0")
    return vc, int(gpus)


def add_own_data_options(command: argparse.ArgumentParser) -> None:
    """``--jobs FILE`` and ``--nodes FILE`` (with ``--column``, ``--time-format``,
    ``--quota``): one's own jobs and nodes tables instead of a preset or a trace folder."""
    group = command.add_argument_group(
        "your own data (instead of a preset or --trace; docs/traces.md, 'Your own tables')"
    )
    group.add_argument(
        "--jobs",
        type=Path,
        default=None,
        metavar="FILE",
        help="a jobs table, CSV or parquet, one row per job: job_id, submit_time (seconds from "
        "the trace's start), num_gpus, and duration (seconds) or start_time and end_time; "
        "optional vc, user, gpu_type, priority (read by analysim.traces.read_csv_trace; what "
        "is dropped and why is logged)",
    )
    group.add_argument(
        "--nodes",
        type=Path,
        default=None,
        metavar="FILE",
        help="the nodes table of the --jobs cluster, CSV or parquet, one row per node: node, "
        "rack, gpus; optional gpu_type, vc (the VC owning the node; empty: the shared pool). "
        "Or --cluster NAME for a preset cluster",
    )
    group.add_argument(
        "--column",
        type=column_mapping,
        action="append",
        default=[],
        metavar="FIELD=THEIRS",
        help="the --jobs file's column holding FIELD, e.g. --column submit_time=submitted "
        "(repeat for each; a field not mapped is looked for under its own name)",
    )
    group.add_argument(
        "--time-format",
        default=None,
        metavar="FORMAT",
        help="the --jobs file's times are date-times in this format, e.g. '%%Y-%%m-%%d "
        "%%H:%%M:%%S' (they become seconds from the first submission; default: the times "
        "are numbers of seconds)",
    )
    group.add_argument(
        "--quota",
        type=quota_value,
        action="append",
        default=[],
        metavar="VC=GPUS",
        help="a VC's quota of GPUs over the nodes no VC owns (repeat for each VC)",
    )


def _given(args: argparse.Namespace, name: str) -> bool:
    return getattr(args, name, None) not in (None, [])


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def own_data(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """The workload and cluster of ``--jobs`` and ``--nodes`` (or ``--cluster``); ``None``
    when ``--jobs`` is not given. Clashing or stray options are a UsageError."""
    if not _given(args, "jobs"):
        stray = [name for name in OWN_DATA_FLAGS if _given(args, name)]
        if stray:
            raise UsageError(f"{_flag(stray[0])} needs --jobs FILE (your jobs table)")
        return None
    clashes = {"trace": "a trace folder", "workload": "a preset", "days": "a preset's length"}
    for name, what in clashes.items():
        if _given(args, name):
            raise UsageError(f"--jobs and --{name} ({what}) both name the jobs; give one")
    if _given(args, "nodes") == _given(args, "cluster"):
        raise UsageError(
            "--jobs needs its cluster: --nodes FILE (your nodes table) or --cluster NAME "
            "(a preset), one of them"
        )
    if _given(args, "quota") and not _given(args, "nodes"):
        raise UsageError("--quota needs --nodes FILE (a preset cluster has its own quotas)")
    from analysim.traces import read_csv_trace
    from analysim.traces.nodes import read_nodes_table

    if _given(args, "nodes"):
        cluster = read_nodes_table(args.nodes, dict(args.quota))
    else:
        cluster = asim.presets.cluster(args.cluster)
    trace = read_csv_trace(
        args.jobs, dict(args.column), time_format=args.time_format, cluster=cluster
    )
    log.info("%s", trace.report)
    return _faster(trace.workload, getattr(args, "load_scale", None)), cluster


def _faster(workload: Any, speedup: float | None) -> Any:
    """``workload`` with its arrivals ``speedup`` times faster (``--load-scale``)."""
    if speedup is None or speedup == 1:
        return workload
    from analysim.inputs.validation import bounded

    bounded(speedup, "--load-scale", low=0.0, low_open=True)
    jobs = workload.jobs.assign(submit_time=workload.jobs["submit_time"] / speedup)
    return asim.Workload.from_frame(jobs, name=f"{workload.name} x{speedup:g}")


def check_trace_folder(path: Path) -> None:
    """A UsageError for ``--trace`` given a file: it reads folders; one's own table is
    ``--jobs``."""
    if path.is_file():
        raise UsageError(
            f"--trace {path}: is a file; --trace reads a downloaded trace folder (Helios, "
            f"Philly, PAI or openb). For your own jobs table give --jobs {path} --nodes "
            "NODES.csv (or --cluster NAME), with --column FIELD=THEIRS for columns named "
            "otherwise"
        )


def sweep_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep file's arguments of :func:`analysim.sweep`, with ``--jobs``/``--nodes`` as
    its workload and cluster (the file then names neither)."""
    from analysim.sweep.files import load_sweep_file

    if not _given(args, "jobs"):
        return load_sweep_file(args.file)
    values = load_sweep_file(args.file, own_data=True)
    for key in ("workload", "cluster"):
        if values.get(key) is not None:
            raise UsageError(
                f"--jobs: the sweep file {args.file} names a {key} too; give one of them"
            )
    values["workload"], values["cluster"] = own_data(args)
    return values


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
