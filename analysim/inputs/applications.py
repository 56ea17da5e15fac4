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

A table with a ``gpu_type`` column is **typed**: it lists throughput per (GPU type, GPU
count, nodes), and the rate is relative to the packed placement on its **reference** type
(the type a job's ``duration`` is measured on): ``throughput(type, g, n) /
throughput(reference, g, fewest nodes)``. A job placed on GPUs of several types runs at the
slowest of their rates (``docs/heterogeneity.md``).

The six applications of the Pollux study (OSDI'21) are built in (``pollux_applications``,
from ``analysim/data/pollux``), and so are Gavel's 26 job types (OSDI'20,
``gavel_applications``, typed: V100, P100, K80; ``analysim/data/gavel``); a user adds one
from a small table with :meth:`Application.from_table` and passes it to the simulation
(``Simulation(..., applications={"mine": table})``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysim.errors import InputTypeError, describe_rows

TABLE_COLUMNS = ("gpus", "nodes", "throughput")
#: the optional column of a typed table: the GPU type each row was measured on
TYPE_COLUMN = "gpu_type"
POLLUX_TABLE = Path(__file__).resolve().parents[1] / "data" / "pollux" / "applications.csv"
GAVEL_TABLE = Path(__file__).resolve().parents[1] / "data" / "gavel" / "applications.csv"
#: the GPU type Gavel's job generator measures a job's duration on (``generate_job``)
GAVEL_REFERENCE = "v100"


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
    finite number above 0), and optionally ``gpu_type`` (a non-empty name); one row per
    (gpu_type, gpus, nodes). Returns a clean copy, sorted."""
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
    keys = ["gpus", "nodes"]
    if TYPE_COLUMN in table.columns:
        clean.insert(0, TYPE_COLUMN, _type_names(table, where))
        keys = [TYPE_COLUMN, *keys]
    twice = clean.duplicated(keys, keep=False).to_numpy()
    if twice.any():
        _bad_rows(
            table, twice, "gpus", f"listed once per ({', '.join(keys)}): duplicate rows", where
        )
    return clean.sort_values(keys, kind="stable").reset_index(drop=True)


def _type_names(table: pd.DataFrame, where: str) -> np.ndarray:
    """The ``gpu_type`` column as names (a non-empty string on every row)."""
    values = table[TYPE_COLUMN]
    bad = np.array([not isinstance(v, str) or not v.strip() for v in values], dtype=bool)
    if bad.any():
        _bad_rows(table, bad, TYPE_COLUMN, "a GPU type name (a non-empty string)", where)
    return values.str.strip().to_numpy(dtype=object)


@dataclass(frozen=True)
class Application:
    """A job performance model: throughput per GPU count and nodes spanned, and, if the
    table is typed, per GPU type (checked)."""

    name: str
    table: pd.DataFrame = field(repr=False)
    #: the GPU type a job's ``duration`` is measured on (None for an untyped table)
    reference: str | None = None
    #: per (GPU type or None, GPU count): the node counts listed (ascending) and their rates
    _rates: dict[tuple[str | None, int], tuple[np.ndarray, np.ndarray]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        typed = TYPE_COLUMN in self.table.columns
        if typed and self.reference not in set(self.table[TYPE_COLUMN]):
            raise ValueError(
                f"application {self.name!r}: reference GPU type {self.reference!r} is not in "
                f"its table (types {sorted(set(self.table[TYPE_COLUMN]))})"
            )
        keys = [TYPE_COLUMN, "gpus"] if typed else ["gpus"]
        listed = {}
        for key, rows in self.table.groupby(keys, sort=True):
            gpu_type, gpus = key if typed else (None, key[0] if isinstance(key, tuple) else key)
            listed[(gpu_type, int(gpus))] = (
                rows["nodes"].to_numpy(dtype=float),
                rows["throughput"].to_numpy(dtype=float),
            )
        rates = {}
        for (gpu_type, gpus), (nodes, throughput) in listed.items():
            base = listed[(self.reference, gpus)][1][0]  # packed, on the reference type
            rates[(gpu_type, gpus)] = (nodes, throughput / base)
        object.__setattr__(self, "_rates", rates)

    @classmethod
    def from_table(
        cls, name: str, table: pd.DataFrame, reference: str | None = None
    ) -> Application:
        """An application from a table of ``gpus, nodes, throughput`` and optionally
        ``gpu_type`` (checked: errors name the column, row and value). A typed table with
        several types needs ``reference``, the type its jobs' ``duration`` is measured on,
        which must list every GPU count the table lists."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"Application: the name must be a non-empty string, got {name!r}")
        where = f"application {name!r}"
        clean = check_table(table, where)
        if TYPE_COLUMN not in clean.columns:
            if reference is not None:
                raise ValueError(
                    f"{where}: reference={reference!r} needs a table with a {TYPE_COLUMN!r} column"
                )
            return cls(name, clean)
        types = sorted(set(clean[TYPE_COLUMN]))
        if reference is None and len(types) == 1:
            reference = types[0]
        if reference not in types:
            raise ValueError(
                f"{where}: a table of several GPU types {types} needs a reference type, one "
                f"of them: the type a job's duration is measured on (got {reference!r}; "
                f"Application.from_table(name, table, reference=TYPE))"
            )
        on_reference = set(clean.loc[clean[TYPE_COLUMN] == reference, "gpus"])
        given = table.reset_index(drop=True)
        unlisted = ~pd.to_numeric(given["gpus"], errors="coerce").isin(on_reference).to_numpy()
        if unlisted.any():
            _bad_rows(
                given,
                unlisted,
                "gpus",
                f"a GPU count the reference type {reference!r} lists "
                f"({sorted(on_reference)}): a job's work is its time there",
                where,
            )
        return cls(name, clean, reference)

    @property
    def typed(self) -> bool:
        """Whether the throughput depends on the GPU type."""
        return self.reference is not None

    @property
    def gpu_types(self) -> list[str]:
        """The GPU types the table lists (empty for an untyped table)."""
        return sorted({t for t, _ in self._rates if t is not None})

    @property
    def gpu_counts(self) -> list[int]:
        """The GPU counts the table lists (on its reference type, if typed)."""
        return sorted(g for t, g in self._rates if t == self.reference)

    def lists(self, gpus: int, gpu_type: str | None = None) -> bool:
        """Whether the table has a throughput for ``gpus`` GPUs (of ``gpu_type``, if typed;
        an untyped table lists every type)."""
        return (gpu_type if self.typed else None, gpus) in self._rates

    def rate(self, gpus: int, nodes: int, gpu_type: str | None = None) -> float:
        """The rate of a job of ``gpus`` GPUs on ``nodes`` nodes (of ``gpu_type``: needed
        for a typed table, ignored otherwise), relative to its packed placement (on the
        reference type): 1.0 there."""
        listed, rates = self._rates[(gpu_type if self.typed else None, gpus)]
        return float(np.interp(nodes, listed, rates))

    def slowest(self, gpus: int, gpu_types: Iterable[str] | None = None) -> float:
        """The lowest rate a job of ``gpus`` GPUs can have, wherever it is placed (on any of
        ``gpu_types``; default: every type the table lists for ``gpus``; 1.0 when it lists
        none of them: such a job never runs)."""
        if not self.typed:
            return float(self._rates[(None, gpus)][1].min())
        types = self.gpu_types if gpu_types is None else gpu_types
        rates = self._rates
        listed = [float(rates[(t, gpus)][1].min()) for t in types if (t, gpus) in rates]
        return min(listed, default=1.0)

    def packed(self, gpus: int, gpu_type: str | None = None) -> float:
        """The rate of a job of ``gpus`` GPUs on the fewest nodes listed (of ``gpu_type``)."""
        return float(self._rates[(gpu_type if self.typed else None, gpus)][1][0])


@lru_cache(maxsize=1)
def pollux_applications() -> dict[str, Application]:
    """The six applications of the Pollux artifact (``analysim/data/pollux/README``):
    throughput at the batch size of a job not yet profiled."""
    table = pd.read_csv(POLLUX_TABLE)
    return {
        str(name): Application.from_table(str(name), rows[list(TABLE_COLUMNS)])
        for name, rows in table.groupby("application", sort=True)
    }


@lru_cache(maxsize=1)
def gavel_applications() -> dict[str, Application]:
    """The 26 job types of Gavel (OSDI'20; ``analysim/data/gavel/README``), named as Gavel
    names them (``"ResNet-50 (batch size 64)"``): steps per second alone on V100, P100
    and K80 at 1, 2, 4 and 8 GPUs, on one server (the consolidated rows, as Gavel's
    simulator reads them; so every placement counts as one node). Their reference type is
    V100: a job's ``duration`` is its run time there, as in Gavel's job generator. Gavel
    lists 0.0 for ResNet-50 (batch size 128) on 2, 4 and 8 K80s (it cannot run there):
    those rows are left out, so such a job must not be placeable on K80s."""
    table = pd.read_csv(GAVEL_TABLE)
    table = table[table["consolidated"] & (table["throughput"] > 0)].assign(nodes=1)
    return {
        str(name): Application.from_table(
            str(name), rows[[TYPE_COLUMN, *TABLE_COLUMNS]], reference=GAVEL_REFERENCE
        )
        for name, rows in table.groupby("job_type", sort=True)
    }


def resolve_applications(given: Mapping[str, Any] | None) -> dict[str, Application]:
    """The built-in applications (Pollux's and Gavel's), with ``given`` (name -> an
    :class:`Application` or a throughput table) added over them."""
    known = {**pollux_applications(), **gavel_applications()}
    for name, value in (given or {}).items():
        if isinstance(value, Application):
            renamed = Application(name, value.table, value.reference)
            known[name] = value if value.name == name else renamed
        else:
            known[name] = Application.from_table(name, value)
    return known


__all__ = [
    "Application",
    "check_table",
    "gavel_applications",
    "pollux_applications",
    "resolve_applications",
]
