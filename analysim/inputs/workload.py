"""The jobs table every simulation runs on: schema, validation and summaries.

A workload is a validated pandas DataFrame, one row per job, with times in seconds from the
start of the trace. Synthetic generators live in :mod:`analysim.inputs.generators`; trace readers
build a workload with :meth:`Workload.from_frame`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analysim.errors import InputTypeError, describe_rows
from analysim.inputs.batch import batch_columns
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_NODE_AMOUNT, MAX_SECONDS, decimal_numbers

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster

REQUIRED_COLUMNS = ("job_id", "vc", "user", "submit_time", "duration", "num_gpus")
OPTIONAL_COLUMNS = (
    "gpu_type",
    "priority",
    "application",
    "state",
    "job_type",
    "min_gpus",
    "max_gpus",
    "batch_size",
    "min_batch_size",
    "max_batch_size",
)
STATES = ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT")
"""The final states a job may have recorded in its trace (optional column ``state``; Slurm's
words, as Helios and Acme write them; missing: not recorded or still running). The readers
map other traces' words to these (``docs/traces.md``)."""
FAILED_STATES = ("FAILED", "TIMEOUT", "NODE_FAIL")
"""The states counted as failed (the Acme analysis counts TIMEOUT and NODE_FAIL as failed)."""
JOB_TYPES = ("Pretrain", "SFT", "Eval", "MLLM", "Debug", "Other")
"""The kinds of LLM-development job (optional column ``job_type``; missing: unknown): the
Acme trace's own ``type`` words (pre-training, supervised fine-tuning, evaluation,
multimodal, debugging, other; InternLM/AcmeTrace ``analysis.ipynb``)."""
#: the optional columns of resource mode (``docs/semantics.md``): a share of one GPU in
#: thousandths, CPU in thousandths of a core, memory in MiB
RESOURCE_COLUMNS = ("gpu_milli", "cpu_milli", "memory_mib")
MILLI = 1000


def _fail(frame: pd.DataFrame, mask, column: str, expected: str, beside: str | None = None) -> None:
    """Raise the error of ``column``'s rows in ``mask`` (with column ``beside``'s values)."""
    raise ValueError(
        f"Workload: column {column!r} must be {expected}; "
        + describe_rows(frame, list(mask), column, "job_id", beside)
    )


def _booleans(values: pd.Series) -> np.ndarray:
    """Where ``values`` hold True/False (``pd.to_numeric`` would take them for 1/0)."""
    if pd.api.types.is_bool_dtype(values.dtype):
        return np.ones(len(values), dtype=bool)
    if values.dtype != object:
        return np.zeros(len(values), dtype=bool)
    return np.array([isinstance(v, (bool, np.bool_)) for v in values], dtype=bool)


def _to_numbers(values: pd.Series) -> pd.Series:
    """Numbers as they are, timedeltas as seconds; text only when it is a plain decimal
    number (not ``"0x10"``)."""
    if pd.api.types.is_timedelta64_dtype(values.dtype):
        return values.dt.total_seconds()
    if pd.api.types.is_numeric_dtype(values.dtype):
        return pd.to_numeric(values, errors="coerce")
    text = values.map(lambda v: isinstance(v, str))
    numbers = pd.to_numeric(values.where(~text, None), errors="coerce").astype("float64")
    if text.any():
        numbers[text.to_numpy()] = decimal_numbers(values[text])
    return numbers


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    """Return ``frame[column]`` as float64, naming any value that is not a number (True and
    False are not numbers here)."""
    flags = _booleans(frame[column])
    if flags.any():
        _fail(frame, flags, column, "numeric (not True/False)")
    if pd.api.types.is_datetime64_any_dtype(frame[column].dtype):
        _fail(frame, frame[column].notna(), column, "seconds from the trace start (not date-times)")
    values = _to_numbers(frame[column])
    unparsable = values.isna() & frame[column].notna()
    if unparsable.any():
        _fail(frame, unparsable, column, "numeric")
    missing = frame[column].isna()
    if missing.any():
        _fail(frame, missing, column, "present (no missing values)")
    return values.astype("float64")


def _labels(frame: pd.DataFrame, column: str) -> pd.Series:
    missing = frame[column].isna() | (frame[column].astype(str).str.strip() == "")
    if missing.any():
        _fail(frame, missing, column, "a non-empty label")
    return frame[column].astype(str)


def _check_ids(frame: pd.DataFrame) -> None:
    """Job ids must be present and unique as text (``1`` and ``"1"`` are one id: results and
    saved files write ids as text)."""
    ids = frame["job_id"]
    blank = ids.isna() | (ids.astype(str).str.strip() == "")
    if blank.any():
        _fail(frame, blank, "job_id", "present (no missing or blank ids)")
    if ids.dtype == object:
        text = np.array([isinstance(v, str) for v in ids], dtype=bool)
        if text.any() and not text.all():
            _fail(frame, ~text, "job_id", "all text or all numbers (not a mix)")
        flags = _booleans(ids)
        if flags.any():
            _fail(frame, flags, "job_id", "a name or number (not True/False)")
    duplicated = ids.astype(str).duplicated(keep=False)
    if duplicated.any():
        _fail(frame, duplicated, "job_id", "unique (duplicate ids found; 1 and '1' are one id)")


def validate_jobs(frame: pd.DataFrame, vcs: Iterable[str] | None = None) -> pd.DataFrame:
    """Check a jobs table and return a clean copy with canonical dtypes, in submit order.

    Raises ``ValueError`` naming the column, the offending rows and their values for: a
    missing column, a duplicate ``job_id`` (compared as text), a missing, negative or
    non-finite time, a duration that is not positive, a time past ``MAX_SECONDS``, a GPU count
    that is not a whole number from 1 to ``MAX_JOB_GPUS`` (True/False are not numbers), or
    (when ``vcs`` is given) a VC that is not one of them, an ``application`` that is not
    text, or a ``state`` / ``job_type`` that is not one of :data:`STATES` /
    :data:`JOB_TYPES` (missing allowed) (bounds:
    :mod:`analysim.inputs.validation`). Nothing is dropped.
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputTypeError(f"Workload: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Workload: missing column(s) {missing}; a jobs table needs {list(REQUIRED_COLUMNS)}"
            f" (found {list(frame.columns)})"
        )
    frame = frame.reset_index(drop=True)
    out = frame.copy()
    _check_ids(frame)
    out["vc"] = _labels(frame, "vc")
    out["user"] = _labels(frame, "user")
    submit = _numeric(frame, "submit_time")
    bad = ~np.isfinite(submit) | (submit < 0) | (submit > MAX_SECONDS)
    if bad.any():
        _fail(frame, bad, "submit_time", f"a finite number of seconds in [0, {MAX_SECONDS:g}]")
    out["submit_time"] = submit
    duration = _numeric(frame, "duration")
    bad = ~np.isfinite(duration) | (duration <= 0) | (duration > MAX_SECONDS)
    if bad.any():
        _fail(frame, bad, "duration", f"a finite number of seconds in (0, {MAX_SECONDS:g}]")
    out["duration"] = duration
    gpus = _numeric(frame, "num_gpus")
    resources = _resources(frame, out)
    # a CPU-only job (no GPU) is allowed only in resource mode, when it asks for CPU or memory
    cpu_only = np.zeros(len(frame), dtype=bool)
    if resources:
        asks = np.zeros(len(frame), dtype=np.int64)
        for column in ("cpu_milli", "memory_mib"):
            if column in out.columns:
                asks = asks + out[column].to_numpy()
        cpu_only = (gpus == 0).to_numpy() & (asks > 0)
    bad = ~np.isfinite(gpus) | (gpus < 1) | (gpus != np.round(gpus)) | (gpus > MAX_JOB_GPUS)
    bad &= ~cpu_only
    if bad.any():
        more = " (0 only for a job that asks for cpu_milli or memory_mib)" if resources else ""
        _fail(frame, bad, "num_gpus", f"a whole number from 1 to {MAX_JOB_GPUS:,}{more}")
    out["num_gpus"] = gpus.astype("int64")
    if resources:
        _check_shares(frame, out)
    if "priority" in frame.columns:
        priority = _numeric(frame, "priority")
        if not np.isfinite(priority).all():
            _fail(frame, ~np.isfinite(priority), "priority", "a finite number")
        out["priority"] = priority
    if "gpu_type" in frame.columns:
        out["gpu_type"] = frame["gpu_type"].astype("string").astype(object)
        out.loc[frame["gpu_type"].isna(), "gpu_type"] = None
    if "application" in frame.columns:
        out["application"] = _applications(frame)
    for column, words in (("state", STATES), ("job_type", JOB_TYPES)):
        if column in frame.columns:
            out[column] = _vocabulary(frame, column, words)
    for column, values in _elastic_columns(frame, out["num_gpus"].to_numpy()).items():
        out[column] = values  # elastic jobs' limits (docs/elastic.md)
    for column, values in batch_columns(frame).items():
        out[column] = values  # batch sizes and their limits (inputs/batch.py)
    if vcs is not None:
        known = set(vcs)
        unknown = ~out["vc"].isin(known)
        if unknown.any():
            _fail(out, unknown, "vc", f"one of the cluster's VCs {sorted(known)}")
    order = np.argsort(out["submit_time"].to_numpy(), kind="stable")
    return out.iloc[order].reset_index(drop=True)


def _applications(frame: pd.DataFrame) -> pd.Series:
    """The optional ``application`` column: a name (text) per job, or missing (the job runs
    at rate 1); the names are looked up when a simulation is set up."""
    values = frame["application"]
    missing = values.isna().to_numpy()
    text = np.array([isinstance(v, str) and v.strip() != "" for v in values], dtype=bool)
    bad = ~missing & ~text
    if bad.any():
        _fail(frame, bad, "application", "an application's name (text), or missing")
    names = [None if gone else str(v) for v, gone in zip(values, missing, strict=True)]
    return pd.Series(np.array(names, dtype=object), index=frame.index)


def _elastic_columns(frame: pd.DataFrame, gpus: np.ndarray) -> dict[str, pd.Series]:
    """Elastic jobs' limits (``docs/elastic.md``): the checked ``min_gpus`` / ``max_gpus``
    columns of ``frame`` (those present), int64, a missing value filled with the row's
    ``num_gpus`` (``gpus``); an error naming the column, the rows and their values for a
    value that is not a whole number from 1 to ``MAX_JOB_GPUS`` (infinity included),
    ``min_gpus`` above ``max_gpus`` (both given), ``min_gpus`` above or ``max_gpus`` below
    ``num_gpus`` (named beside the value: an empty limit is no error of the other)."""
    out: dict[str, pd.Series] = {}
    given: dict[str, np.ndarray] = {}
    for column in ("min_gpus", "max_gpus"):
        if column not in frame.columns:
            continue
        values = pd.to_numeric(frame[column], errors="coerce").astype(float)
        whole = (values >= 1) & (values <= MAX_JOB_GPUS) & (values == np.round(values))
        bad = (frame[column].notna() & ~whole).to_numpy() | _booleans(frame[column])
        if bad.any():
            _fail(
                frame, bad, column, f"a whole number of GPUs from 1 to {MAX_JOB_GPUS:,}, or missing"
            )
        given[column] = values.notna().to_numpy()
        out[column] = pd.Series(
            np.where(values.isna(), gpus, values).astype("int64"), index=frame.index
        )
    low = out.get("min_gpus")
    high = out.get("max_gpus")
    if low is not None and high is not None:
        bad = (low > high).to_numpy() & given["min_gpus"] & given["max_gpus"]
        if bad.any():
            _fail(frame, bad, "min_gpus", "at most the row's max_gpus", "max_gpus")
    starts = "(a job starts on num_gpus)"
    if low is not None:
        bad = low.to_numpy() > gpus
        if bad.any():
            _fail(frame, bad, "min_gpus", f"at most the row's num_gpus {starts}", "num_gpus")
    if high is not None:
        bad = high.to_numpy() < gpus
        if bad.any():
            _fail(frame, bad, "max_gpus", f"at least the row's num_gpus {starts}", "num_gpus")
    return out


def _vocabulary(frame: pd.DataFrame, column: str, words: tuple[str, ...]) -> pd.Series:
    """An optional column of fixed words (``state``, ``job_type``): each value one of
    ``words`` exactly (case included), or missing (None, NaN, empty text), kept as None."""
    values = frame[column]
    missing = values.isna().to_numpy() | np.array(
        [isinstance(v, str) and v.strip() == "" for v in values], dtype=bool
    )
    known = np.array([isinstance(v, str) and v in words for v in values], dtype=bool)
    bad = ~missing & ~known
    if bad.any():
        _fail(frame, bad, column, f"one of {list(words)}, or missing")
    kept = [None if gone else str(v) for v, gone in zip(values, missing, strict=True)]
    return pd.Series(kept, index=frame.index, dtype=object)


def _whole_amounts(frame: pd.DataFrame, column: str, high: int) -> pd.Series:
    """An optional resource column as int64: whole numbers from 0 to ``high``; a missing
    value is 0 here (``gpu_milli``: see ``_check_shares``)."""
    values = _numeric(frame.assign(**{column: frame[column].fillna(0)}), column)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values)) | (values > high)
    if bad.any():
        _fail(frame, bad, column, f"a whole number from 0 to {high:,}")
    return values.astype("int64")


def _resources(frame: pd.DataFrame, out: pd.DataFrame) -> list[str]:
    """Check and convert the resource columns present (``RESOURCE_COLUMNS``); their names."""
    present = [c for c in RESOURCE_COLUMNS if c in frame.columns]
    for column in present:
        out[column] = _whole_amounts(
            frame, column, MILLI if column == "gpu_milli" else MAX_NODE_AMOUNT
        )
    return present


def _check_shares(frame: pd.DataFrame, out: pd.DataFrame) -> None:
    """``gpu_milli``: 1-1000 for a job with GPUs (below 1000 only with one GPU), 0 without;
    a missing column or value means whole GPUs (1000; 0 for a CPU-only job)."""
    gpus = out["num_gpus"].to_numpy()
    whole = np.where(gpus > 0, MILLI, 0).astype("int64")
    if "gpu_milli" not in out.columns:
        out["gpu_milli"] = whole
        return
    out["gpu_milli"] = np.where(frame["gpu_milli"].isna(), whole, out["gpu_milli"])
    milli = out["gpu_milli"].to_numpy()
    bad = (gpus > 0) & (milli < 1)
    if bad.any():
        _fail(frame, bad, "gpu_milli", "from 1 to 1000 for a job with GPUs")
    bad = (gpus == 0) & (milli != 0)
    if bad.any():
        _fail(frame, bad, "gpu_milli", "0 for a job without GPUs (num_gpus 0)")
    bad = (gpus > 1) & (milli < MILLI)
    if bad.any():
        _fail(
            frame,
            bad,
            "gpu_milli",
            "1000 for a job with several GPUs (a share, below 1000, needs num_gpus 1)",
        )


def gpu_seconds(jobs: pd.DataFrame) -> pd.Series:
    """GPU-seconds each job asks for: GPUs x duration, a share of one GPU counted as its
    share (``gpu_milli`` / 1000)."""
    held = jobs["num_gpus"].astype("float64")
    if "gpu_milli" in jobs.columns:
        held = held * jobs["gpu_milli"].astype("float64") / MILLI
    return held * jobs["duration"]


def uses_resources(jobs: pd.DataFrame) -> bool:
    """Whether a jobs table asks for GPU shares, CPU or memory (then it runs in resource
    mode)."""
    return any(c in jobs.columns for c in RESOURCE_COLUMNS)


class Workload:
    """A validated jobs table (``.jobs``), sorted by submit time; build with :meth:`from_frame`.

    A workload is read-only: ``jobs`` gives a new frame on every read that shares the
    validated data (pandas copy-on-write), so editing it changes that frame only, never the
    workload the engine runs (its arrays are read-only too). To change jobs, edit the frame
    and build a new workload: ``Workload.from_frame(edited)``.
    """

    __slots__ = ("_jobs", "name")

    def __init__(self, jobs: pd.DataFrame, name: str = "workload") -> None:
        object.__setattr__(self, "_jobs", jobs)
        object.__setattr__(self, "name", name)

    def __setattr__(self, key: str, value: object) -> None:
        raise FrozenInstanceError(
            f"Workload is read-only: cannot set {key!r}; build a new one with "
            "Workload.from_frame(...)"
        )

    def __delattr__(self, key: str) -> None:
        raise FrozenInstanceError(f"Workload is read-only: cannot delete {key!r}")

    def __reduce__(self) -> tuple:
        return (type(self), (self._jobs, self.name))

    @property
    def jobs(self) -> pd.DataFrame:
        """The validated jobs table: a new frame on every read, sharing the workload's data
        (an edit to it copies first and never reaches the workload)."""
        return self._jobs.copy(deep=False)

    @classmethod
    def from_frame(
        cls, jobs: pd.DataFrame, vcs: Iterable[str] | None = None, name: str = "workload"
    ) -> Workload:
        """Validate ``jobs`` (see :func:`validate_jobs`) and wrap it."""
        return cls(validate_jobs(jobs, vcs), name=name)

    def __len__(self) -> int:
        return len(self._jobs)

    def __repr__(self) -> str:
        return (
            f"Workload({self.name!r}: {len(self)} jobs, {self._jobs['vc'].nunique()} VCs, "
            f"{self.gpu_hours:,.0f} GPU-hours)"
        )

    @property
    def gpu_hours(self) -> float:
        """GPU-hours of work the jobs ask for (a share of one GPU counts its share: 500
        milli for an hour is half a GPU-hour)."""
        return float(gpu_seconds(self._jobs).sum() / 3600.0)

    @property
    def span(self) -> float:
        """Seconds from time 0 to the last submission (at least one second)."""
        return max(float(self._jobs["submit_time"].max()) if len(self) else 0.0, 1.0)

    def describe(self, cluster: Cluster | None = None, by: str = "vc") -> pd.DataFrame:
        """Per-VC jobs, GPU-hours and offered load, with a final ``all`` row.

        ``offered_gpus`` is the GPU-seconds asked for divided by the submission span: the
        number of GPUs the VC would keep busy on average. Given a ``cluster``,
        ``offered_load`` divides it by the GPUs the VC may use (its capacity).
        ``by="gpu_type"`` gives the same per GPU-model constraint instead (``"any"``: jobs
        without one); the capacity is then the cluster's GPUs of the accepted models.
        """
        if by == "gpu_type":
            return self._describe_gpu_types(cluster)
        if by != "vc":
            raise ValueError(f"describe: by must be 'vc' or 'gpu_type', got {by!r}")
        jobs = self._jobs.assign(gpu_seconds=gpu_seconds(self._jobs))
        groups = {"all": jobs, **dict(tuple(jobs.groupby("vc", sort=True)))}
        rows = []
        for vc, part in groups.items():
            rows.append(
                {
                    "vc": vc,
                    "jobs": len(part),
                    "users": part["user"].nunique(),
                    "gpu_hours": part["gpu_seconds"].sum() / 3600.0,
                    "mean_duration": part["duration"].mean(),
                    "median_gpus": part["num_gpus"].median(),
                    "max_gpus": part["num_gpus"].max(),
                    "offered_gpus": part["gpu_seconds"].sum() / self.span,
                }
            )
        table = pd.DataFrame(rows).set_index("vc")
        if cluster is not None:
            capacity = cluster.vc_capacity()
            capacity["all"] = cluster.total_gpus
            table["capacity_gpus"] = [capacity.get(vc, np.nan) for vc in table.index]
            table["offered_load"] = table["offered_gpus"] / table["capacity_gpus"]
        return table

    def _describe_gpu_types(self, cluster: Cluster | None) -> pd.DataFrame:
        """``describe`` per GPU-model constraint (the ``gpu_type`` column; ``any`` if none)."""
        types = self._jobs["gpu_type"] if "gpu_type" in self._jobs.columns else None
        key = "any" if types is None else types.where(types.notna(), "any").astype(str)
        jobs = self._jobs.assign(gpu_type=key)
        renamed = Workload(jobs.assign(vc=jobs["gpu_type"]), name=self.name)
        table = renamed.describe().rename_axis("gpu_type")
        if cluster is not None:
            nodes = cluster.nodes
            total = int(nodes["gpus"].sum())
            capacity = {"all": total, "any": total}
            for spec in table.index.difference(["all", "any"]):
                accepted = {part.strip() for part in str(spec).split("|")}
                capacity[spec] = int(nodes.loc[nodes["gpu_type"].isin(accepted), "gpus"].sum())
            table["capacity_gpus"] = [capacity[t] for t in table.index]
            table["offered_load"] = table["offered_gpus"] / table["capacity_gpus"]
        return table
