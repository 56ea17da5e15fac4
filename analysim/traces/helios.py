"""SenseTime Helios traces: ``cluster_log.csv`` (jobs) and ``cluster_gpu_number.csv`` (VCs).

The job log has one row per Slurm job (``job_id, user, vc, gpu_num, cpu_num, node_num, state,
submit_time, start_time, end_time, duration, queue``; times ``YYYY-MM-DD HH:MM:SS``,
``duration`` in seconds). The VC file has one row per day: ``date``, the GPUs each VC owns
that day, and ``total``. Helios nodes have 8 GPUs and each belongs to one VC.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.validation import MAX_CLUSTER_GPUS
from analysim.traces._common import (
    blank_far_dates,
    drop_duplicates,
    drop_far_dates,
    epoch_seconds,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
    moment,
)
from analysim.traces._io import (
    check_header,
    existing_file,
    find_file,
    parse_numbers,
    parse_times,
    read_csv,
)
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import SLURM_STATES

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
GPUS_PER_NODE = 8
LOG_COLUMNS = ("job_id", "user", "vc", "gpu_num", "submit_time", "duration")
LOG_OPTIONAL = ("state",)


def read_helios(
    folder: str | Path,
    start: str | pd.Timestamp | None = None,
    end: str | pd.Timestamp | None = None,
    vc_date: str | pd.Timestamp | None = None,
    *,
    vc_map: Mapping[str, str] | None = None,
    drop_oversized: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a Helios cluster folder into a GPU-job Workload and its VC Cluster.

    Jobs submitted in ``[start, end]`` (both inclusive; default: the whole log) that ask for
    GPUs are kept, with ``submit_time`` in seconds from ``start`` (default: the first
    submission in the log). Each VC owns ``GPUs / 8`` nodes of 8 GPUs as of ``vc_date``
    (default: the day of ``start``). ``vc_map={"old": "new"}`` renames job VCs first (the
    Helios simulator merges some VCs this way). Jobs larger than their VC are counted as
    ``oversized`` and kept (the simulator marks them unschedulable) unless
    ``drop_oversized``. See ``docs/traces.md`` for everything dropped and why.
    """
    folder = Path(folder)
    log = find_file(folder, ["cluster_log.csv"], "the Helios job log cluster_log.csv")
    vc_file = find_file(
        folder, ["cluster_gpu_number.csv"], "the Helios VC sizes cluster_gpu_number.csv"
    )
    start_at, end_at = moment(start, "start"), moment(end, "end")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValueError(f"end={end!r} is before start={start!r}")

    raw, first = read_csv(
        log,
        required=LOG_COLUMNS,
        optional=LOG_OPTIONAL,
        strings=("job_id", "user", "vc", "submit_time", "state"),
    )
    report = LoadReport()
    filt = RowFilter(
        report, "jobs", log.name, len(raw), lambda i: f"line {first + i}", ids=raw["job_id"]
    )
    job_id = keep_labels(filt, raw["job_id"], "job_id")
    user = keep_labels(filt, raw["user"], "user")
    vc = keep_labels(filt, raw["vc"], "vc")
    gpus = keep_counts(filt, raw["gpu_num"], "gpu_num")
    submit, missing, bad = parse_times(
        raw["submit_time"], TIME_FORMAT, path=log, column="submit_time", first_line=first
    )
    filt.drop(missing, "missing_value", "submit_time", raw["submit_time"])
    filt.drop(bad, "unparseable_time", "submit_time", raw["submit_time"])
    drop_far_dates(filt, submit, "submit_time", raw["submit_time"])
    duration = keep_counts(filt, raw["duration"], "duration", whole=False, signed=True)
    drop_duplicates(filt, job_id, "job_id")
    filt.drop(gpus == 0, "cpu_only", "gpu_num", raw["gpu_num"])

    origin = epoch_seconds(start_at) if start_at is not None else _first_submit(submit, filt)
    outside = submit < origin
    if end_at is not None:
        outside |= submit > epoch_seconds(end_at)
    filt.drop(outside, "outside_window", "submit_time", raw["submit_time"])
    filt.drop(duration <= 0, "nonpositive_duration", "duration", raw["duration"])

    if vc_map:
        vc = vc.replace(dict(vc_map))
    origin_day = pd.Timestamp(origin, unit="s").normalize()
    cluster, vc_gpus = _cluster_and_sizes(vc_file, vc_date, origin_day, report, name)
    unknown = ~vc.isin(list(vc_gpus)).to_numpy()
    filt.drop(unknown, "unknown_vc", "vc", vc)
    empty = vc.isin([v for v, gpus in vc_gpus.items() if gpus == 0]).to_numpy()
    filt.drop(empty, "empty_vc", "vc", vc)

    jobs = pd.DataFrame(
        {
            "job_id": job_id,
            "vc": vc,
            "user": user,
            "submit_time": submit - origin,
            "duration": duration,
            "num_gpus": gpus,
        }
    )
    if "state" in raw.columns:
        jobs["trace_state"], jobs["state"] = keep_states(
            filt, raw["state"], "state", SLURM_STATES, slurm=True
        )
    return finish(
        filt,
        jobs,
        cluster,
        path=log,
        name=name or folder.name,
        drop_oversized=drop_oversized,
        vc_known=True,
    )


def _first_submit(submit: np.ndarray, filt: RowFilter) -> float:
    times = submit[filt.alive]
    times = times[~np.isnan(times)]
    return float(times.min()) if len(times) else 0.0


def read_helios_cluster(
    path: str | Path, date: str | pd.Timestamp | None = None, *, name: str | None = None
) -> Cluster:
    """The Cluster a Helios ``cluster_gpu_number.csv`` gives for ``date`` (default: its first
    day): each VC owning GPUs that day owns ``ceil(GPUs / 8)`` nodes of 8 GPUs (a last node
    holds the remainder, if any) in a rack of its own."""
    path = existing_file(path, "a Helios cluster_gpu_number.csv")
    stamp = moment(date, "date")
    cluster, _ = _cluster_and_sizes(path, stamp, None, LoadReport(), name)
    return cluster


def read_vc_sizes(path: str | Path) -> pd.DataFrame:
    """The VC file as a table indexed by day: one column per VC and ``total``, validated
    (whole GPU counts >= 0, VCs adding up to ``total``)."""
    path = existing_file(path, "a Helios cluster_gpu_number.csv")
    return _validated_sizes(path, _all_columns(path), 2)


def _all_columns(path: Path) -> pd.DataFrame:
    names = check_header(path, ("date",))
    frame, _ = read_csv(path, required=tuple(names), strings=("date",))
    return frame


def _validated_sizes(path: Path, table: pd.DataFrame, first: int) -> pd.DataFrame:
    days, missing, bad = parse_times(
        table["date"], "%Y-%m-%d", path=path, column="date", first_line=first
    )
    problems = np.flatnonzero(missing | bad | np.isnan(blank_far_dates(days)))
    if len(problems):
        i = int(problems[0])
        raise TraceError(
            path,
            "a date that does not parse (or is outside 1970-2099)",
            line=first + i,
            column="date",
            expected="dates like 2020-09-01",
            found=table["date"].iloc[i],
        )
    vcs = [c for c in table.columns if c not in ("date", "total")]
    if not vcs:
        raise TraceError(path, "no VC column", line=1, expected="date, one column per VC, total")
    sizes = pd.DataFrame(index=pd.to_datetime(days, unit="s"))
    sizes.index.name = "date"
    for column in [*vcs, *(["total"] if "total" in table.columns else [])]:
        values = parse_numbers(table[column])[0]
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
            bad |= values > MAX_CLUSTER_GPUS
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise TraceError(
                path,
                "not a GPU count",
                line=first + i,
                column=column,
                expected=f"a whole number of GPUs from 0 to {MAX_CLUSTER_GPUS:,}",
                found=table[column].iloc[i],
            )
        sizes[column] = values.astype(np.int64)
    if sizes.index.duplicated().any():
        i = int(np.flatnonzero(sizes.index.duplicated())[0])
        raise TraceError(
            path, "a day listed twice", line=first + i, column="date", found=table["date"].iloc[i]
        )
    if "total" in sizes.columns:
        sums = sizes[vcs].sum(axis=1).to_numpy()
        wrong = np.flatnonzero(sums != sizes["total"].to_numpy())
        if len(wrong):
            i = int(wrong[0])
            raise TraceError(
                path,
                "the VCs do not add up to the total",
                line=first + i,
                column="total",
                expected=f"{int(sums[i])} (the sum of the VC columns)",
                found=int(sizes["total"].iloc[i]),
            )
    return sizes


def _cluster_and_sizes(
    path: Path,
    vc_date: str | pd.Timestamp | None,
    default_day: pd.Timestamp | None,
    report: LoadReport,
    name: str | None,
) -> tuple[Cluster, dict[str, int]]:
    """Build the Cluster of ``vc_date`` (or ``default_day``) and report the VCs it drops."""
    table = _all_columns(path)
    sizes = _validated_sizes(path, table, 2)
    vcs = [c for c in sizes.columns if c != "total"]
    day = moment(vc_date, "vc_date")
    if day is not None:
        day = day.normalize()
        if day not in sizes.index:
            raise TraceError(
                path,
                f"no row for vc_date {day.date()}",
                column="date",
                expected=f"a day from {sizes.index.min().date()} to {sizes.index.max().date()}",
            )
    elif default_day is not None:
        # the window's first day, clamped to the days the file covers
        day = min(max(default_day, sizes.index.min()), sizes.index.max())
        earlier = sizes.index[sizes.index <= day]
        day = earlier.max() if len(earlier) else sizes.index.min()
    else:
        day = sizes.index.min()
    row = sizes.loc[day]
    owned = {vc: int(row[vc]) for vc in vcs}
    if sum(owned.values()) > MAX_CLUSTER_GPUS:
        raise TraceError(
            path,
            f"the VCs own {sum(owned.values()):,} GPUs on {day.date()}",
            column="date",
            expected=f"at most {MAX_CLUSTER_GPUS:,} GPUs in all (docs/traces.md)",
        )
    filt = RowFilter(
        report,
        "vcs",
        f"{path.name} on {day.date()}",
        len(vcs),
        lambda i: f"column {vcs[i]!r}",
        id_name="vc",
    )
    gpus = np.array([owned[v] for v in vcs])
    filt.drop(gpus == 0, "empty_vc", "gpus", gpus)
    filt.flag(gpus % GPUS_PER_NODE != 0, "partial_node", "gpus", gpus)
    nodes = _nodes(owned)
    if nodes.empty:
        raise TraceError(path, f"no VC owns GPUs on {day.date()}", column="date")
    cluster = Cluster.from_frame(nodes, name=name or path.parent.name or "helios")
    return cluster, owned


def _nodes(owned: Mapping[str, int]) -> pd.DataFrame:
    """Nodes of 8 GPUs for each VC in order (a last, smaller node takes any remainder)."""
    rows = []
    for vc, gpus in owned.items():
        full, rest = divmod(gpus, GPUS_PER_NODE)
        sizes = [GPUS_PER_NODE] * full + ([rest] if rest else [])
        for i, size in enumerate(sizes):
            rows.append({"node": f"{vc}-{i:03d}", "rack": vc, "gpus": size, "vc": vc})
    return pd.DataFrame(rows, columns=["node", "rack", "gpus", "vc"])
