"""Any CSV or parquet jobs table, given which of its columns hold what."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from analysim.inputs.batch import BATCH_COLUMNS
from analysim.inputs.cluster import Cluster
from analysim.traces._common import (
    drop_duplicates,
    drop_far_dates,
    epoch_seconds,
    finish,
    keep_counts,
    keep_labels,
    keep_states,
    moment,
)
from analysim.traces._io import check_header, existing_file, parse_numbers, parse_times, read_csv
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import SLURM_STATES

REQUIRED = ("job_id", "submit_time", "num_gpus")
OPTIONAL = (
    "duration",
    "start_time",
    "end_time",
    "vc",
    "user",
    "gpu_type",
    "priority",
    "state",
    "min_gpus",  # elastic jobs (docs/elastic.md)
    "max_gpus",
    "application",  # the job performance model (docs/performance.md)
    "batch_size",  # batch sizes (docs/elastic.md)
    "min_batch_size",
    "max_batch_size",
)
TIME_COLUMNS = ("submit_time", "start_time", "end_time")
DEFAULTS = {"vc": "default", "user": "unknown"}


def read_csv_trace(
    path: str | Path,
    columns: Mapping[str, str] | None = None,
    *,
    time_format: str | None = None,
    start: str | pd.Timestamp | None = None,
    cluster: Cluster | None = None,
    drop_oversized: bool = False,
    name: str | None = None,
) -> Trace:
    """Read a jobs table from a CSV or parquet file, mapping its columns to AnalySIM's.

    ``columns={"job_id": "id", "submit_time": "submitted", ...}`` names, for each of
    AnalySIM's columns, the file's column holding it (unmapped ones are looked for under
    their own name). Needed: ``job_id``, ``submit_time``, ``num_gpus`` and ``duration`` (or
    ``start_time`` and ``end_time``); optional: ``vc``, ``user`` (default ``"default"`` /
    ``"unknown"``), ``gpu_type``, ``priority``, ``state``. Times are numbers of seconds, or
    date-times in ``time_format`` (e.g. ``"%Y-%m-%d %H:%M:%S"``); date-times become seconds
    from ``start`` (default: the first submission). A fractional GPU count is rounded up.
    Given a ``cluster``, jobs of VCs it lacks are dropped and oversized jobs counted.
    """
    path = existing_file(path, "a jobs table (CSV or parquet)")
    mapping = {ours: ours for ours in (*REQUIRED, *OPTIONAL)}
    unknown = sorted(set(columns or {}) - set(mapping))
    if unknown:
        raise ValueError(
            f"columns: unknown AnalySIM column(s) {unknown}; map any of {sorted(mapping)}"
        )
    _check_mapping(columns or {})
    mapping.update(columns or {})
    _unmap_shadowed_defaults(mapping, columns or {})
    raw = _read(path, mapping, time_format)
    _check_mapped_present(path, raw, columns or {})
    first = 2
    report = LoadReport(main="jobs")
    theirs = {ours: mapping[ours] for ours in mapping if mapping[ours] in raw.columns}
    filt = RowFilter(
        report,
        "jobs",
        path.name,
        len(raw),
        lambda i: f"line {first + i}" if path.suffix != ".parquet" else f"row {i}",
        ids=raw[mapping["job_id"]],
        id_name=mapping["job_id"],
    )

    def column(ours: str) -> pd.Series:
        return raw[theirs[ours]]

    job_id = keep_labels(filt, column("job_id"), theirs["job_id"])
    labels_ = {
        key: keep_labels(filt, column(key), theirs[key])
        if key in theirs
        else pd.Series(DEFAULTS[key], index=raw.index)
        for key in ("vc", "user")
    }
    gpus = keep_counts(filt, column("num_gpus"), theirs["num_gpus"], whole=False)
    dated = _dated(path, {key: column(key) for key in TIME_COLUMNS if key in theirs})
    times = {
        key: _times(filt, path, column(key), theirs[key], time_format)
        for key in TIME_COLUMNS
        if key in theirs
    }
    origin = 0.0
    if start is not None and time_format is None and not dated:
        raise ValueError(
            f"start={start!r}: the times of {path.name} are numbers (seconds from the trace "
            "start), so a start date cannot apply; give time_format= for date-times, or "
            "leave start out"
        )
    if time_format is not None or dated:
        known = times["submit_time"][filt.alive & ~np.isnan(times["submit_time"])]
        start_at = moment(start, "start")
        if start_at is not None:
            origin = epoch_seconds(start_at)
        elif len(known):
            origin = float(known.min())
    if "duration" in theirs:
        duration = keep_counts(
            filt,
            _as_seconds(path, column("duration"), theirs["duration"]),
            theirs["duration"],
            whole=False,
            signed=True,
        )
    else:
        duration = times["end_time"] - times["start_time"]
    drop_duplicates(filt, job_id, theirs["job_id"])
    filt.drop(gpus == 0, "cpu_only", theirs["num_gpus"], column("num_gpus"))
    submit = times["submit_time"] - origin
    filt.drop(submit < 0, "outside_window", theirs["submit_time"], column("submit_time"))
    filt.drop(duration <= 0, "nonpositive_duration", "duration", duration)
    whole = np.ceil(gpus)
    filt.flag(whole != gpus, "rounded_up_gpu", theirs["num_gpus"], column("num_gpus"))

    jobs = pd.DataFrame(
        {
            "job_id": job_id,
            "vc": labels_["vc"],
            "user": labels_["user"],
            "submit_time": submit,
            "duration": duration,
            "num_gpus": whole,
        }
    )
    if "gpu_type" in theirs:
        jobs["gpu_type"] = column("gpu_type").astype(object).where(column("gpu_type").notna(), None)
    if "state" in theirs:
        jobs["trace_state"], jobs["state"] = keep_states(
            filt, column("state"), theirs["state"], SLURM_STATES, slurm=True
        )
    if "priority" in theirs:
        priority, _, bad = parse_numbers(column("priority"))
        filt.drop(bad, "bad_value", theirs["priority"], column("priority"))
        jobs["priority"] = priority
    for limit in ("min_gpus", "max_gpus", *BATCH_COLUMNS):  # the Workload checks them
        if limit in theirs:
            jobs[limit] = column(limit).to_numpy()
    if "application" in theirs:
        names = column("application")
        jobs["application"] = names.astype(object).where(names.notna(), None)
    return finish(
        filt,
        jobs,
        cluster,
        path=path,
        name=name or path.stem,
        drop_oversized=drop_oversized,
    )


def _read(path: Path, mapping: Mapping[str, str], time_format: str | None) -> pd.DataFrame:
    """The file's columns that the mapping names, checking the needed ones are there."""
    needed = [mapping[c] for c in REQUIRED]
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except (pa.ArrowException, OSError, ValueError) as error:
            raise TraceError(path, f"not a readable parquet file ({error})") from None
        present = list(frame.columns)
        _refuse_nested(path, frame, [mapping[c] for c in (*REQUIRED, *OPTIONAL)])
    else:
        present = check_header(path, needed)
        wanted = [mapping[c] for c in OPTIONAL if mapping[c] in present]
        strings = [mapping[c] for c in ("job_id", "vc", "user", "gpu_type", "state")]
        if time_format is not None:
            strings += [mapping[c] for c in TIME_COLUMNS]
        frame, _ = read_csv(path, required=needed, optional=wanted, strings=strings)
    missing = [mapping[c] for c in REQUIRED if mapping[c] not in present]
    has_duration = mapping["duration"] in present or (
        mapping["start_time"] in present and mapping["end_time"] in present
    )
    if not has_duration:
        missing.append(
            f"{mapping['duration']} (or {mapping['start_time']} and {mapping['end_time']})"
        )
    if missing:
        raise TraceError(
            path,
            "missing column(s) " + ", ".join(repr(m) for m in missing),
            expected="the columns named by `columns=`",
            found=", ".join(map(str, present)),
        )
    if frame.empty:
        raise TraceError(path, "no data rows", expected="at least one row")
    return frame


def _refuse_nested(path: Path, frame: pd.DataFrame, columns: list[str]) -> None:
    """A TraceError naming the first of ``columns`` whose cells hold lists, dicts or arrays
    (a parquet list or struct column): a cell must hold one value."""
    for column in columns:
        if column not in frame.columns or frame[column].dtype != object:
            continue
        nested = frame[column].map(lambda v: isinstance(v, (list, tuple, dict, np.ndarray)))
        if nested.any():
            row = int(np.flatnonzero(nested.to_numpy(dtype=bool))[0])
            raise TraceError(
                path,
                f"row {row} holds {type(frame[column].iloc[row]).__name__} "
                f"{frame[column].iloc[row]!r:.60} ({int(nested.sum())} such row(s))",
                column=column,
                expected="one value per cell (not a list or a struct)",
            )


def _check_mapping(columns: Mapping[str, str]) -> None:
    """The mapping's file columns are text, and no file column is mapped to two fields."""
    for ours, theirs in columns.items():
        if not isinstance(theirs, str) or not theirs:
            raise ValueError(f"columns[{ours!r}] must be a column name (text), got {theirs!r}")
    seen: dict[str, str] = {}
    for ours, theirs in columns.items():
        if theirs in seen:
            raise ValueError(
                f"columns: the file column {theirs!r} is mapped to both {seen[theirs]!r} "
                f"and {ours!r}; map each file column to one field"
            )
        seen[theirs] = ours


UNMAPPED = "\0unmapped:"


def _unmap_shadowed_defaults(mapping: dict[str, str], columns: Mapping[str, str]) -> None:
    """A field left at its default name whose file column the caller mapped to another field
    is unmapped if optional (the caller's choice wins); a ValueError if needed."""
    for ours in list(mapping):
        if ours in columns or mapping[ours] not in columns.values():
            continue
        if ours in REQUIRED:
            taker = next(k for k, v in columns.items() if v == mapping[ours])
            raise ValueError(
                f"columns: the file column {mapping[ours]!r} is mapped to {taker!r} but is "
                f"also where {ours!r} is read by default; map {ours!r} to another column"
            )
        mapping[ours] = UNMAPPED + ours


def _check_mapped_present(path: Path, raw: pd.DataFrame, columns: Mapping[str, str]) -> None:
    """Every column the caller mapped (optional ones too) must be in the file."""
    absent = [
        f"{theirs!r} (for {ours})" for ours, theirs in columns.items() if theirs not in raw.columns
    ]
    if absent:
        raise TraceError(
            path,
            "mapped column(s) missing: " + ", ".join(absent),
            expected="the columns named by `columns=`",
            found=", ".join(map(str, raw.columns)),
        )


def _dated(path: Path, values: Mapping[str, pd.Series]) -> bool:
    """Whether the time columns are date-time typed (parquet); a TraceError if only some are."""
    kinds = {key: pd.api.types.is_datetime64_any_dtype(v.dtype) for key, v in values.items()}
    if any(kinds.values()) and not all(kinds.values()):
        raise TraceError(
            path,
            "some time columns hold date-times and others numbers: "
            + ", ".join(f"{k} ({'date-time' if d else 'number'})" for k, d in kinds.items()),
            expected="all time columns of one kind",
        )
    return any(kinds.values())


def _as_seconds(path: Path, values: pd.Series, column: str) -> pd.Series:
    """A duration column in seconds: a timedelta column (parquet) converted, numbers as they
    are; a date-time column is a TraceError (a duration is not a date)."""
    if pd.api.types.is_timedelta64_dtype(values.dtype):
        return values.dt.total_seconds()
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        raise TraceError(
            path, "holds date-times", column=column, expected="a duration (seconds or timedelta)"
        )
    return values


def _epoch_seconds(values: pd.Series) -> np.ndarray:
    """A date-time column as seconds since 1970 (UTC for zone-aware ones), NaN where NaT;
    computed in the column's own unit, so no date overflows."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):  # as naive_utc does for one time
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    stamps = values.to_numpy()
    seconds = (stamps - np.datetime64("1970-01-01")) / np.timedelta64(1, "s")
    return np.where(np.isnat(stamps), np.nan, seconds)


def _times(
    filt: RowFilter, path: Path, values: pd.Series, column: str, time_format: str | None
) -> np.ndarray:
    """Seconds: the numbers themselves, date-time columns as seconds since 1970, or
    date-times parsed with ``time_format``."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        seconds = _epoch_seconds(values)
        filt.drop(np.isnan(seconds), "missing_value", column, values)
        drop_far_dates(filt, seconds, column, values)
        return seconds
    if pd.api.types.is_timedelta64_dtype(values.dtype):
        return keep_counts(filt, values.dt.total_seconds(), column, whole=False)
    if time_format is None:
        return keep_counts(filt, values, column, whole=False)
    seconds, missing, bad = parse_times(values, time_format, path=path, column=column)
    filt.drop(missing, "missing_value", column, values)
    filt.drop(bad, "unparseable_time", column, values)
    drop_far_dates(filt, seconds, column, values)
    return seconds
