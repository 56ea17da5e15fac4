"""Steps every reader shares: a time window, the VC checks, oversized jobs, the Workload."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from analysim.inputs.cluster import Cluster
from analysim.inputs.domains import allowed_types
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_SECONDS
from analysim.inputs.workload import Workload
from analysim.traces._io import labels, parse_numbers
from analysim.traces.report import LoadReport, RowFilter, Trace, TraceError
from analysim.traces.states import slurm_words

FIRST_DATE = pd.Timestamp("1970-01-01")
END_DATE = pd.Timestamp("2100-01-01")
"""Date-times in a trace must fall in [FIRST_DATE, END_DATE); others are ``out_of_range``
(a year-1020 typo must not become the trace's time origin)."""


def naive_utc(stamp: pd.Timestamp) -> pd.Timestamp:
    """A Timestamp with a time zone as the same instant in UTC, without the zone; a naive
    one as it is. Every reader reads times this way: a naive time is taken as UTC, a time
    with a zone (a window, a column, a ``%z`` in a time format) is converted to UTC."""
    return stamp.tz_convert("UTC").tz_localize(None) if stamp.tzinfo is not None else stamp


def moment(value: Any, name: str) -> pd.Timestamp | None:
    """``value`` (a string, datetime or Timestamp) as a naive UTC Timestamp
    (:func:`naive_utc`); None stays None."""
    if value is None:
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name}={value!r} is not a date/time ({error})") from None
    if pd.isna(stamp):
        raise ValueError(f"{name}={value!r} is not a date/time")
    return naive_utc(stamp)


def epoch_seconds(stamp: pd.Timestamp) -> float:
    """A naive Timestamp as seconds since 1970-01-01 (the scale ``parse_times`` gives)."""
    return float((stamp - pd.Timestamp("1970-01-01")).total_seconds())


def keep_labels(filt: RowFilter, values: pd.Series, column: str) -> pd.Series:
    """Stripped labels; rows with an empty one are dropped as ``missing_value``."""
    text, missing = labels(values)
    filt.drop(missing, "missing_value", column, values)
    return text


def keep_counts(
    filt: RowFilter,
    values: pd.Series,
    column: str,
    whole: bool = True,
    signed: bool = False,
    high: float | None = None,
) -> np.ndarray:
    """Numbers >= 0 (any sign if ``signed``; whole if ``whole``); missing ones dropped as
    ``missing_value``, others that are not such numbers as ``bad_value``, and those above
    ``high`` (default: ``MAX_JOB_GPUS`` for whole numbers, ``MAX_SECONDS`` otherwise) or
    below ``-high`` as ``out_of_range``."""
    numbers, missing, bad = parse_numbers(values)
    filt.drop(missing, "missing_value", column, values)
    with np.errstate(invalid="ignore"):
        invalid = bad | ~np.isfinite(numbers)
        if not signed:
            invalid |= numbers < 0
        if whole:
            invalid |= numbers != np.round(numbers)
    filt.drop(invalid & ~missing, "bad_value", column, values)
    limit = high if high is not None else (MAX_JOB_GPUS if whole else MAX_SECONDS)
    with np.errstate(invalid="ignore"):
        filt.drop(np.abs(numbers) > limit, "out_of_range", column, values)
    return numbers


def drop_far_dates(filt: RowFilter, seconds: np.ndarray, column: str, values: Any) -> None:
    """Drop rows whose date-time (epoch seconds) is outside [FIRST_DATE, END_DATE)."""
    low, high = epoch_seconds(FIRST_DATE), epoch_seconds(END_DATE)
    with np.errstate(invalid="ignore"):
        far = ~np.isnan(seconds) & ((seconds < low) | (seconds >= high))
    filt.drop(far, "out_of_range", column, values)


def blank_far_dates(seconds: np.ndarray) -> np.ndarray:
    """``seconds`` with date-times outside [FIRST_DATE, END_DATE) made NaN (not recorded)."""
    low, high = epoch_seconds(FIRST_DATE), epoch_seconds(END_DATE)
    with np.errstate(invalid="ignore"):
        return np.where((seconds < low) | (seconds >= high), np.nan, seconds)


def factorize(values: pd.Series) -> tuple[np.ndarray, Sequence[Any]]:
    """Integer codes and the distinct values (an Arrow array, or a list: index them with
    :func:`value_at`); Arrow's hash table is faster than pandas' for millions of strings.
    Missing values get code -1."""
    try:
        array = pa.array(values.array)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        encoded = array.dictionary_encode()
    except (pa.ArrowException, TypeError, ValueError):
        codes, uniques = pd.factorize(values)
        return np.asarray(codes, dtype=np.int64), list(uniques)
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, encoded.dictionary


def value_at(uniques: Sequence[Any], i: int) -> Any:
    value = uniques[i]
    return value.as_py() if isinstance(value, pa.Scalar) else value


def machine_rows(
    report: LoadReport, path: Path, raw: pd.DataFrame, first: int, id_column: str, gpus: str
) -> tuple[RowFilter, pd.Series, pd.Series]:
    """Start checking a machine table: its filter, the kept machine ids and GPU counts
    (machines without GPUs are dropped as ``cpu_only``)."""
    filt = RowFilter(
        report,
        "machines",
        path.name,
        len(raw),
        lambda i: f"line {first + i}",
        ids=raw[id_column],
        id_name=id_column,
    )
    machine = keep_labels(filt, raw[id_column], id_column)
    counts = keep_counts(filt, raw[gpus], gpus)
    filt.drop(counts == 0, "cpu_only", gpus, raw[gpus])
    return filt, machine, counts


def drop_duplicates(filt: RowFilter, ids: pd.Series, column: str) -> None:
    """Drop later rows repeating the id of an earlier kept row."""
    codes, _ = factorize(ids)
    alive = np.flatnonzero(filt.alive & (codes >= 0))
    _, first = np.unique(codes[alive], return_index=True)
    repeated = filt.alive.copy()
    repeated[alive[first]] = False
    repeated &= codes >= 0
    filt.drop(repeated, "duplicate_id", column, ids)


def most_gpus(cluster: Cluster, vc: pd.Series, gpu_type: pd.Series | None) -> np.ndarray:
    """The most GPUs each job could ever get: the GPUs of the nodes its VC may use (its own
    nodes, or the pool within its quota) that are of an accepted type. The engine's rule
    (``analysis.domains``)."""
    nodes = cluster.nodes
    owner = nodes["vc"].to_numpy(dtype=object)
    node_type = nodes["gpu_type"].to_numpy(dtype=object)
    gpus = nodes["gpus"].to_numpy(dtype=np.int64)
    vc_codes, vc_names = factorize(vc)
    if gpu_type is None:
        type_codes, type_names = np.zeros(len(vc), dtype=np.int64), [""]
    else:
        type_codes, type_names = factorize(gpu_type.fillna("").astype(str))
    pair_codes, pairs = pd.factorize(vc_codes * len(type_names) + type_codes)
    codes = pair_codes
    width = len(type_names)
    uniques = [
        (value_at(vc_names, p // width), value_at(type_names, p % width)) for p in pairs.tolist()
    ]
    most = np.zeros(len(uniques), dtype=np.int64)
    for k, (name, spec) in enumerate(uniques):
        if not cluster.partitioned:
            mask = np.ones(len(nodes), dtype=bool)
        elif name in cluster.quotas:
            mask = pd.isna(owner)
        else:
            mask = owner == name
        accepted = allowed_types(spec or None)
        if accepted is not None:
            mask = mask & np.isin(node_type, list(accepted))
        total = int(gpus[mask].sum())
        most[k] = min(total, cluster.quotas[name]) if name in cluster.quotas else total
    return most[codes] if len(codes) else np.zeros(0, dtype=np.int64)


def _drop_out_of_bounds(filt: RowFilter, jobs: pd.DataFrame) -> None:
    """Drop kept rows that ``Workload.from_frame`` would refuse for their size: a submit time
    or duration past ``MAX_SECONDS``, more than ``MAX_JOB_GPUS`` GPUs (the last net under
    each reader's own checks)."""
    limits = {"submit_time": MAX_SECONDS, "duration": MAX_SECONDS, "num_gpus": MAX_JOB_GPUS}
    for column, limit in limits.items():
        values = jobs[column].to_numpy(dtype="float64")
        with np.errstate(invalid="ignore"):
            filt.drop(~(np.abs(values) <= limit), "out_of_range", column, values)


def finish(
    filt: RowFilter,
    jobs: pd.DataFrame,
    cluster: Cluster | None,
    *,
    path: Path,
    name: str,
    drop_oversized: bool,
    vc_known: bool = False,
) -> Trace:
    """Check the kept jobs against ``cluster`` (unknown VC, oversized) and build the Trace.

    ``jobs`` holds every input row (aligned with ``filt``); the kept ones become the
    Workload. Unless ``vc_known`` (the reader checked VCs itself), jobs of a VC the
    partitioned cluster lacks are dropped as ``unknown_vc``.
    """
    _drop_out_of_bounds(filt, jobs)
    gpus = np.nan_to_num(jobs["num_gpus"].to_numpy(dtype="float64"))
    gpus = np.where(filt.alive, gpus, 0.0)
    jobs = jobs.assign(num_gpus=gpus.astype(np.int64))
    if cluster is not None:
        if cluster.partitioned and not vc_known:
            unknown = ~jobs["vc"].isin(cluster.vcs).to_numpy()
            filt.drop(unknown, "unknown_vc", "vc", jobs["vc"])
        alive = filt.alive
        kept = jobs.loc[alive]
        most = np.zeros(len(jobs), dtype=np.int64)
        most[alive] = most_gpus(cluster, kept["vc"], kept.get("gpu_type"))
        too_big = alive & (jobs["num_gpus"].to_numpy() > most)
        if drop_oversized:
            filt.drop(too_big, "oversized", "num_gpus", jobs["num_gpus"])
        else:
            filt.flag(too_big, "oversized", "num_gpus", jobs["num_gpus"])
    kept = jobs.loc[filt.alive].reset_index(drop=True)
    if kept.empty:
        raise TraceError(path, "no job is left to simulate:\n" + filt.report.summary())
    workload = Workload.from_frame(kept, name=name)
    return Trace(workload, cluster, filt.report)


def new_report() -> LoadReport:
    return LoadReport()


def keep_states(
    filt: RowFilter,
    values: pd.Series,
    column: str,
    mapping: dict[str, str],
    not_final: tuple[str, ...] = (),
    *,
    slurm: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The trace's words (stripped; None where empty) and their mapped ``state`` (None where
    the word is missing, in ``not_final`` or unknown); unknown words are flagged
    ``unknown_state``."""
    text, missing = labels(values)
    raw = np.array(text.to_numpy(dtype=object), dtype=object)
    raw[missing] = None
    keys = slurm_words(values) if slurm else pd.Series(raw, dtype=object)
    keys = keys.to_numpy(dtype=object)
    state = np.array([mapping.get(k) if k is not None else None for k in keys], dtype=object)
    known = np.array([k is None or k in mapping or k in not_final for k in keys], dtype=bool)
    filt.flag(~known, "unknown_state", column, values)
    return raw, state
