"""Your own data on the command line: ``--jobs FILE --nodes FILE`` (with ``--column``,
``--time-format``, ``--quota``) instead of a preset or a trace folder."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import analysim as asim
from analysim.faces.cli_options import UsageError

log = logging.getLogger("analysim.faces.cli")

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
