"""What a trace reader kept, dropped and changed, and why: TraceError, LoadReport, Trace.

Every reader counts each input row exactly once: either it is kept, or it is dropped under
the first reason of :data:`REASONS` that applies to it. Kept rows that were changed (a
fractional GPU rounded up, a run cut at the end of the trace) or flagged (larger than their
VC could ever get) are counted again under a "kept" reason. The counts, with a few example
rows each, make the report's :attr:`LoadReport.frame` and :meth:`LoadReport.summary`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.workload import Workload

MAX_EXAMPLES = 3

DROPPED = "dropped"
KEPT = "kept"

REASONS: dict[str, str] = {
    # rows dropped (the first reason that applies)
    "missing_value": "a field the reader needs is empty",
    "bad_value": "a field is not a valid value (not a number, a negative count, ...)",
    "unparseable_time": "a time not in the file's time format",
    "out_of_range": "a number or time past the bounds of docs/traces.md (a date outside "
    "1970-2099, more than 100 years of seconds, more than 1,000,000 GPUs)",
    "duplicate_id": "the id appeared on an earlier row (the first one is kept)",
    "orphan_task": "a task whose job is not in the job table",
    "no_tasks": "a job without any task in the task table",
    "cpu_only": "asks for (or, for a machine, has) no GPU",
    "outside_window": "submitted before `start` or after `end`",
    "never_started": "never ran in the trace (pending, no attempt, no start time)",
    "nonpositive_duration": "ran for zero seconds or less",
    "empty_vc": "its VC owns no GPUs on the VC date",
    "unknown_vc": "its VC is not one of the cluster's VCs",
    "oversized": "asks for more GPUs (or CPU, memory) than its VC or any node could ever give",
    # kept rows that were changed or flagged
    "rounded_up_gpu": "a fraction of a GPU, rounded up to whole GPUs",
    "censored": "still running at the end of the trace: run time cut at the trace end",
    "skipped_attempt": "an attempt without a start or end time left out of the run time",
    "partial_node": "a VC's GPUs are not a multiple of 8: its last node has fewer GPUs",
    "cpu_task": "asks for no GPU: kept as a task or CPU-only job that takes CPU and memory",
    "gpu_share": "a share of one GPU (gpu_milli < 1000), kept as a share",
    "unknown_state": "a final state the reader does not know: kept with state None (its "
    "word in trace_state)",
    "unknown_type": "a job type that is not one of Acme's: kept with job_type None",
}
"""The fixed vocabulary of reasons (documented in ``docs/traces.md``)."""


class TraceError(ValueError):
    """A trace file that cannot be read: names the file, the line or row, the column, what
    was expected and what was found."""

    def __init__(
        self,
        path: str | Path,
        problem: str,
        *,
        line: int | None = None,
        where: str | None = None,
        column: str | None = None,
        expected: str | None = None,
        found: Any = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.column = column
        self.expected = expected
        found = found.item() if isinstance(found, np.generic) else found
        self.found = found
        place = [_file_name(Path(self.path))]
        if line is not None:
            place.append(f"line {line}")
        if where is not None:
            place.append(where)
        if column is not None:
            place.append(f"column {column!r}")
        message = ", ".join(place) + f": {problem}"
        if expected is not None:
            message += f"; expected {expected}"
        if found is not None:
            message += f", found {found!r}" if not isinstance(found, str) else f", found {found}"
        message += f" (file: {self.path})"
        super().__init__(message)


def _file_name(path: Path) -> str:
    """The name a message calls ``path`` by: its last part, also for ``.`` (the current
    folder's name) and ``/``."""
    return path.name or path.resolve().name or str(path)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds; a missing value as None."""
    if value is None or (not isinstance(value, (str, bytes)) and pd.isna(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass
class _Entry:
    table: str
    source: str
    outcome: str
    reason: str
    rows: int
    examples: list[str]


@dataclass
class LoadReport:
    """Rows read, kept, dropped by reason and changed by reason, per input table."""

    main: str = "jobs"
    entries: list[_Entry] = field(default_factory=list)
    read: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    # -- building ---------------------------------------------------------------------------
    def add(self, table: str, outcome: str, reason: str, rows: int, examples: list[str]) -> None:
        if reason not in REASONS:  # pragma: no cover - a reader bug
            raise KeyError(f"unknown reason {reason!r}; add it to REASONS and docs/traces.md")
        for entry in self.entries:
            if entry.table == table and entry.reason == reason and entry.outcome == outcome:
                entry.rows += rows
                entry.examples = (entry.examples + examples)[:MAX_EXAMPLES]
                return
        self.entries.append(
            _Entry(table, self.sources.get(table, ""), outcome, reason, rows, examples)
        )

    # -- reading ----------------------------------------------------------------------------
    @property
    def tables(self) -> list[str]:
        """The input tables, the jobs table (``main``) first."""
        return sorted(self.read, key=lambda t: t != self.main)

    def dropped(self, table: str | None = None) -> int:
        """Rows dropped from ``table`` (default: the first table, the jobs)."""
        table = table or self.tables[0]
        return sum(e.rows for e in self.entries if e.table == table and e.outcome == DROPPED)

    def count(self, reason: str, table: str | None = None, outcome: str | None = None) -> int:
        """Rows of ``table`` (default: the first) counted under ``reason``."""
        table = table or self.tables[0]
        return sum(
            e.rows
            for e in self.entries
            if e.table == table and e.reason == reason and (outcome is None or e.outcome == outcome)
        )

    def examples(self, reason: str, table: str | None = None) -> list[str]:
        """Up to three example rows counted under ``reason``, worded like ``line 5
        (job_id='7'): gpu_num=0``."""
        table = table or self.tables[0]
        return [
            x for e in self.entries if e.table == table and e.reason == reason for x in e.examples
        ]

    @property
    def frame(self) -> pd.DataFrame:
        """One row per table and outcome: ``read``, ``kept``, and each reason with its count,
        meaning and examples."""
        rows: list[dict[str, Any]] = []
        for table in self.tables:
            source = self.sources.get(table, "")
            rows.append(_row(table, source, "read", "", self.read[table], "rows in the input"))
            for e in self.entries:
                if e.table == table and e.outcome == DROPPED:
                    rows.append(_row(table, source, DROPPED, e.reason, e.rows, "", e.examples))
            rows.append(_row(table, source, KEPT, "", self.kept[table], "rows kept"))
            for e in self.entries:
                if e.table == table and e.outcome == KEPT:
                    rows.append(_row(table, source, KEPT, e.reason, e.rows, "", e.examples))
        frame = pd.DataFrame(
            rows,
            columns=["table", "source", "outcome", "reason", "rows", "meaning", "examples"],
        )
        return frame.astype({"rows": "int64"})

    def summary(self) -> str:
        """The report as readable text."""
        lines = []
        for table in self.tables:
            read, kept = self.read[table], self.kept[table]
            lines.append(
                f"{table} ({self.sources.get(table, '')}): {read:,} read, {kept:,} kept, "
                f"{self.dropped(table):,} dropped"
            )
            for outcome in (DROPPED, KEPT):
                for e in self.entries:
                    if e.table != table or e.outcome != outcome:
                        continue
                    label = f"{outcome} {e.reason}"
                    text = f"  {label:<30} {e.rows:>10,}  {REASONS[e.reason]}"
                    if e.examples:
                        text += "\n" + "\n".join(f"      e.g. {x}" for x in e.examples)
                    lines.append(text)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return self.frame.to_html(index=False)


def _row(
    table: str,
    source: str,
    outcome: str,
    reason: str,
    rows: int,
    meaning: str,
    examples: Sequence[str] = (),
) -> dict[str, Any]:
    return {
        "table": table,
        "source": source,
        "outcome": outcome,
        "reason": reason,
        "rows": int(rows),
        "meaning": meaning or REASONS.get(reason, ""),
        "examples": "; ".join(examples),
    }


class RowFilter:
    """Tracks which rows of one input table are still kept, counting every row it drops.

    ``locate(i)`` words where row ``i`` is in the input (``"line 7"``, ``"job 3"``);
    ``ids`` name the rows in examples.
    """

    def __init__(
        self,
        report: LoadReport,
        table: str,
        source: str,
        n: int,
        locate: Callable[[int], str],
        ids: Sequence[Any] | np.ndarray | None = None,
        id_name: str = "job_id",
    ) -> None:
        self.report = report
        self.table = table
        self.alive = np.ones(n, dtype=bool)
        self.locate = locate
        self.ids = ids
        self.id_name = id_name
        report.sources[table] = source
        report.read[table] = n
        report.kept[table] = n

    def _examples(self, positions: np.ndarray, column: str | None, values: Any) -> list[str]:
        out = []
        for pos in positions[:MAX_EXAMPLES].tolist():
            text = self.locate(pos)
            if self.ids is not None:
                text += f" ({self.id_name}={_plain(self.ids[pos])!r})"
            if column is not None and values is not None:
                value = values[pos] if not isinstance(values, pd.Series) else values.iloc[pos]
                text += f": {column}={_plain(value)!r}"
            out.append(text)
        return out

    def drop(
        self, mask: np.ndarray | pd.Series, reason: str, column: str | None = None, values=None
    ) -> int:
        """Drop the kept rows where ``mask`` holds, under ``reason``; return how many."""
        hit = self._count(mask, DROPPED, reason, column, values)
        if hit.any():
            self.alive &= ~hit
            self.report.kept[self.table] = int(self.alive.sum())
        return int(hit.sum())

    def flag(
        self, mask: np.ndarray | pd.Series, reason: str, column: str | None = None, values=None
    ) -> int:
        """Count the kept rows where ``mask`` holds under a "kept" ``reason``."""
        return int(self._count(mask, KEPT, reason, column, values).sum())

    def _count(
        self, mask: np.ndarray | pd.Series, kind: str, reason: str, column: str | None, values
    ) -> np.ndarray:
        """Record the kept rows where ``mask`` holds under ``kind``/``reason`` (with
        examples); return them as a boolean array."""
        hit = np.asarray(mask, dtype=bool) & self.alive
        count = int(hit.sum())
        if count:
            examples = self._examples(np.flatnonzero(hit), column, values)
            self.report.add(self.table, kind, reason, count, examples)
        return hit


@dataclass(frozen=True, eq=False)
class Trace:
    """What a reader returns: the ``workload``, the ``cluster`` (``None`` when the trace does
    not define one) and the load ``report``."""

    workload: Workload
    cluster: Cluster | None
    report: LoadReport

    def __repr__(self) -> str:
        cluster = repr(self.cluster) if self.cluster is not None else "no cluster"
        jobs = self.report.main
        return (
            f"Trace({self.workload!r}, {cluster}; {self.report.read[jobs]:,} rows read, "
            f"{self.report.dropped(jobs):,} dropped)"
        )


@dataclass(frozen=True)
class SharedTrace:
    """Tasks and nodes with CPU, memory and GPU shares, and the load report (what
    ``read_openb_tasks`` returns for the saturation experiment, :mod:`analysim.sharing`)."""

    tasks: pd.DataFrame
    nodes: pd.DataFrame
    report: Any = None
