"""Job performance models: how fast a job progresses on what it is given.

An :class:`Application` holds a table of throughput (any unit: samples, iterations per
second) per GPU count and nodes spanned. A job of that application that asks for ``g`` GPUs
and runs on GPUs spanning ``n`` nodes progresses at the **rate**

    throughput(g, n) / throughput(g, reference nodes)

where the reference is the fewest nodes the table lists for ``g`` (its packed placement):
the job's ``duration`` stays its run time packed, and its work is ``duration`` such
seconds. A node count between two listed ones is interpolated linearly; below the fewest
or above the most listed the nearest listed one is taken. A GPU count the table does not
list has no rate (an error at set-up, naming the job). A job without an application runs at
rate 1 wherever it is placed, as every job did before (``docs/performance.md``).

The six applications of the Pollux study (OSDI'21) are built in (``pollux_applications``,
from ``analysim/data/pollux``); a user adds one from a small table with
:meth:`Application.from_table` and passes it to the simulation
(``Simulation(..., applications={"mine": table})``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysim.errors import InputTypeError, describe_rows

TABLE_COLUMNS = ("gpus", "nodes", "throughput")
POLLUX_TABLE = Path(__file__).resolve().parents[1] / "data" / "pollux" / "applications.csv"


def _bad_rows(table: pd.DataFrame, mask: Any, column: str, expected: str, where: str) -> None:
    raise ValueError(
        f"{where}: column {column!r} must be {expected}; "
        + describe_rows(table, mask, column, None)
    )


def _whole_positive(table: pd.DataFrame, column: str, where: str) -> np.ndarray:
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 1) | (values != np.round(values))
    if pd.api.types.is_bool_dtype(table[column].dtype):
        bad[:] = True
    if bad.any():
        _bad_rows(table, bad, column, "a whole number from 1 up", where)
    return values.astype(np.int64)


def check_table(table: Any, where: str) -> pd.DataFrame:
    """A throughput table checked (``where`` names it in errors): columns ``gpus``,
    ``nodes`` (whole numbers, at least 1, nodes no more than GPUs) and ``throughput`` (a
    finite number above 0), one row per (gpus, nodes). Returns a clean copy, sorted."""
    if not isinstance(table, pd.DataFrame):
        raise InputTypeError(f"{where}: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in TABLE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{where}: missing column(s) {missing}; a throughput table needs "
            f"{list(TABLE_COLUMNS)} (found {list(table.columns)})"
        )
    if table.empty:
        raise ValueError(f"{where}: the throughput table has no rows")
    table = table.reset_index(drop=True)
    gpus = _whole_positive(table, "gpus", where)
    nodes = _whole_positive(table, "nodes", where)
    if (nodes > gpus).any():
        _bad_rows(table, nodes > gpus, "nodes", "at most the row's gpus", where)
    throughput = pd.to_numeric(table["throughput"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(throughput) | (throughput <= 0)
    if bad.any():
        _bad_rows(table, bad, "throughput", "a finite number above 0", where)
    clean = pd.DataFrame({"gpus": gpus, "nodes": nodes, "throughput": throughput})
    twice = clean.duplicated(["gpus", "nodes"], keep=False).to_numpy()
    if twice.any():
        _bad_rows(table, twice, "gpus", "listed once per (gpus, nodes): duplicate rows", where)
    return clean.sort_values(["gpus", "nodes"], kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Application:
    """A job performance model: throughput per GPU count and nodes spanned (checked)."""

    name: str
    table: pd.DataFrame = field(repr=False)
    #: per GPU count: the node counts listed (ascending) and their rates
    _rates: dict[int, tuple[np.ndarray, np.ndarray]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rates = {}
        for gpus, rows in self.table.groupby("gpus", sort=True):
            nodes = rows["nodes"].to_numpy(dtype=float)
            throughput = rows["throughput"].to_numpy(dtype=float)
            rates[int(gpus)] = (nodes, throughput / throughput[0])
        object.__setattr__(self, "_rates", rates)

    @classmethod
    def from_table(cls, name: str, table: pd.DataFrame) -> Application:
        """An application from a table of ``gpus, nodes, throughput`` (checked: errors name
        the column, row and value)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"Application: the name must be a non-empty string, got {name!r}")
        return cls(name, check_table(table, f"application {name!r}"))

    @property
    def gpu_counts(self) -> list[int]:
        """The GPU counts the table lists."""
        return sorted(self._rates)

    def rate(self, gpus: int, nodes: int) -> float:
        """The rate of a job of ``gpus`` GPUs on ``nodes`` nodes, relative to its packed
        placement (1.0 there)."""
        listed, rates = self._rates[gpus]
        return float(np.interp(nodes, listed, rates))

    def slowest(self, gpus: int) -> float:
        """The lowest rate a job of ``gpus`` GPUs can have, wherever it is placed."""
        return float(self._rates[gpus][1].min())


@lru_cache(maxsize=1)
def pollux_applications() -> dict[str, Application]:
    """The six applications of the Pollux artifact (``analysim/data/pollux/README``):
    throughput at the batch size of a job not yet profiled."""
    table = pd.read_csv(POLLUX_TABLE)
    return {
        str(name): Application.from_table(str(name), rows[list(TABLE_COLUMNS)])
        for name, rows in table.groupby("application", sort=True)
    }


def resolve_applications(given: Mapping[str, Any] | None) -> dict[str, Application]:
    """The built-in applications, with ``given`` (name -> an :class:`Application` or a
    throughput table) added over them."""
    known = dict(pollux_applications())
    for name, value in (given or {}).items():
        if isinstance(value, Application):
            known[name] = value if value.name == name else Application(name, value.table)
        else:
            known[name] = Application.from_table(name, value)
    return known


__all__ = ["Application", "check_table", "pollux_applications", "resolve_applications"]
