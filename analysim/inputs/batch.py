"""Per-batch-size rules of an application: throughput, statistical efficiency, best batch.

An application **with batch data** (the six of the Pollux study, ``analysim/data/pollux``)
knows, besides its throughput per GPU count and nodes spanned (``inputs/applications.py``),
how fast and how usefully it trains at each global batch size ``B``:

* **Split.** On ``g`` GPUs a batch ``B`` is ``accum + 1`` steps of an **atomic** local batch
  per GPU: ``local = ceil(B / g)``, ``accum = ceil(local / max_local) - 1`` (at least 1 on
  one GPU above the initial batch size), ``atomic = ceil(local / (accum + 1))``, at most
  ``max_batch / (g (accum + 1))`` (:func:`split_batch`, the artifact's rule; ``1e-8``
  tolerances in the ceilings).
* **Throughput** at ``(g, n, B)``: ``g * atomic * (accum + 1) / (step + (step - sync) *
  accum)``, samples per second, the step and sync times of a placement of ``g`` GPUs over
  ``n`` nodes at the atomic batch interpolated linearly between the measured local batch
  sizes (:class:`Curve`; outside a placement's measured sizes its nearest one's times). The
  measurements per (nodes, GPUs) are the artifact's, averaged per key (``delaunay.csv``'s
  points; for ``ncf``, which has none, ``placements.csv`` averaged per key); a node count
  between two measured ones is interpolated linearly, beyond them the nearest is taken.
* **Statistical efficiency** at ``B``: Pollux's ``gain / scale`` with ``scale = B /
  init_batch`` (the application's smallest validated batch size) and the gradient
  statistics ``sqr, var`` the means over the epochs of that batch size's validation table
  (:func:`statistical_efficiency`; ``policies/goodput.py`` has the gain).
* **Goodput** = throughput x efficiency; the **best batch** for ``g`` GPUs within limits
  ``[low, high]``: among 50 batch sizes spaced geometrically from ``max(low, min_local *
  g)`` to ``high`` (rounded to whole samples), the first of the highest goodput on the
  fewest nodes measured for ``g`` (:meth:`BatchApplication.best`).

A batch size is usable on ``g`` GPUs when its atomic batch is at least the smallest
measured local batch size (:meth:`BatchApplication.fits`). The rules are shared by the engine
(``engine/speed.py``, ``engine/elastic.py``) and the Pollux replay (``compat/pollux_*.py``:
:class:`Curve`, :func:`split_batch`, :func:`statistical_efficiency`).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysim.errors import describe_rows
from analysim.policies.goodput import goodput, gradient_gain

DATA = Path(__file__).resolve().parents[1] / "data" / "pollux"
#: the artifact's tolerance in its ceilings
EPS = 1e-8
#: batch sizes tried per GPU count by :meth:`BatchApplication.best`
CANDIDATES = 50
#: the largest local batch size when the measurements' largest is not the one the artifact uses
MAX_LOCAL_BSZ = {"yolov3": 8}
#: the workload columns of batch sizes (``docs/elastic.md``)
BATCH_COLUMNS = ("batch_size", "min_batch_size", "max_batch_size")


@dataclass(frozen=True)
class Curve:
    """Step and sync time of one measured placement against the local batch size."""

    sizes: list[int]
    step: list[float]
    sync: list[float]

    def at(self, bsz: int) -> tuple[float, float]:
        """Linear interpolation as ``interp1d``: the bracket is ``(x[i-1], x[i]]``."""
        sizes = self.sizes
        if not sizes[0] <= bsz <= sizes[-1]:
            raise ValueError(f"local batch size {bsz} outside the measured {sizes[0]}-{sizes[-1]}")
        i = min(max(bisect.bisect_left(sizes, bsz), 1), len(sizes) - 1)
        lo, hi = sizes[i - 1], sizes[i]
        out = []
        for ys in (self.step, self.sync):
            slope = (ys[i] - ys[i - 1]) / (hi - lo)
            out.append(slope * (bsz - lo) + ys[i - 1])
        return out[0], out[1]

    def clamped(self, bsz: int) -> tuple[float, float]:
        """As :meth:`at`, the nearest measured size's times outside the measured ones."""
        return self.at(min(max(bsz, self.sizes[0]), self.sizes[-1]))


def curve_of(rows: pd.DataFrame, size: str = "local_bsz") -> Curve:
    """The curve of a table of one placement's ``size``, ``step_time``, ``sync_time`` rows."""
    rows = rows.sort_values(size, kind="mergesort")
    return Curve(
        rows[size].astype(int).tolist(),
        rows["step_time"].astype(float).tolist(),
        rows["sync_time"].astype(float).tolist(),
    )


def split_batch(
    batch: int, replicas: int, max_local: int, init_batch: int, max_batch: int
) -> tuple[int, int]:
    """(atomic local batch size, accumulation steps) of global ``batch`` on ``replicas``
    GPUs: the artifact's rule for a job with a fixed batch size (see the module)."""
    local = math.ceil(batch / replicas - EPS)
    accum = math.ceil(local / max_local - EPS) - 1
    if replicas == 1 and batch > init_batch:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - EPS)
    return min(atomic, int(max_batch / (replicas * (accum + 1)))), accum


def statistical_efficiency(sqr, var, scale):
    """Pollux's progress per sample at ``scale`` times the initial batch size: ``gain /
    scale`` (gain 1 where ``var / scale + sqr`` is not positive; floats or arrays)."""
    scale = np.asarray(scale, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = var / scale + sqr
        gain = np.where(denominator > 0, gradient_gain(sqr, var, scale), 1.0)
    return gain / scale


def validation_tables(name: str) -> dict[int, pd.DataFrame]:
    """The bundled validation tables of Pollux application ``name``, per batch size."""
    folder = DATA / "traces" / name
    return {int(p.stem.split("-")[-1]): pd.read_csv(p) for p in folder.glob("validation-*.csv")}


@dataclass(frozen=True)
class BatchApplication:
    """One application's per-batch-size rules (see the module)."""

    name: str
    #: the smallest and largest validated global batch sizes
    init_batch_size: int
    max_batch_size: int
    #: the smallest measured and the largest usable local batch sizes
    min_local: int
    max_local: int
    #: gradient statistics (means over the epochs at the initial batch size)
    sqr: float
    var: float
    #: per GPU count: the node counts measured (ascending) and their curves
    curves: dict[int, tuple[list[int], list[Curve]]] = field(repr=False)
    _best: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def gpu_counts(self) -> list[int]:
        """The GPU counts with measurements."""
        return sorted(self.curves)

    def packed_nodes(self, gpus: int) -> int:
        """The fewest nodes measured for ``gpus`` GPUs."""
        return self.curves[gpus][0][0]

    def split(self, gpus: int, batch: int) -> tuple[int, int]:
        """:func:`split_batch` with this application's limits."""
        return split_batch(batch, gpus, self.max_local, self.init_batch_size, self.max_batch_size)

    def fits(self, gpus: int, batch: int) -> bool:
        """Whether ``batch`` is usable on ``gpus`` GPUs (measured, atomic batch measured)."""
        return gpus in self.curves and self.split(gpus, batch)[0] >= self.min_local

    def throughput(self, gpus: int, nodes: int, batch: int) -> float:
        """Samples per second of ``batch`` on ``gpus`` GPUs spanning ``nodes`` nodes."""
        atomic, accum = self.split(gpus, batch)
        listed, curves = self.curves[gpus]
        samples = gpus * atomic * (accum + 1)
        values = []
        for curve in curves:
            step, sync = curve.clamped(atomic)
            values.append(samples / (step + (step - sync) * accum))
        if len(values) == 1:
            return values[0]
        return float(np.interp(nodes, listed, values))

    def efficiency(self, batch: int) -> float:
        """Statistical efficiency at global ``batch`` (1.0 at the initial batch size)."""
        return float(statistical_efficiency(self.sqr, self.var, batch / self.init_batch_size))

    def goodput(self, gpus: int, nodes: int, batch: int) -> float:
        """Throughput times statistical efficiency."""
        return float(goodput(self.throughput(gpus, nodes, batch), self.efficiency(batch)))

    def candidates(self, gpus: int, low: int, high: int) -> list[int]:
        """The batch sizes :meth:`best` tries for ``gpus`` GPUs within ``[low, high]``
        (ascending; empty when none is usable)."""
        smallest = max(low, self.min_local * gpus)
        if smallest > high:
            return []
        sizes = np.unique(np.round(np.geomspace(smallest, high, CANDIDATES)).astype(np.int64))
        return [b for b in sizes.tolist() if self.fits(gpus, b)]

    def best(self, gpus: int, low: int, high: int) -> tuple[float, int] | None:
        """(goodput, batch size) of the best batch size for ``gpus`` GPUs packed within
        ``[low, high]``: the first of the highest goodput among :meth:`candidates`; None
        when none is usable (remembered per GPU count and limits)."""
        key = (gpus, low, high)
        if key not in self._best:
            nodes = self.packed_nodes(gpus) if gpus in self.curves else 0
            found = None
            for batch in self.candidates(gpus, low, high):
                value = self.goodput(gpus, nodes, batch)
                if found is None or value > found[0]:
                    found = (value, batch)
            self._best[key] = found
        return self._best[key]


def _measurements(name: str) -> pd.DataFrame:
    """Per (nodes, gpus, local batch size): mean step and sync time."""
    points = _delaunay_points()
    mine = points[points["application"] == name]
    if len(mine):
        return mine.rename(columns={"a": "nodes", "b": "gpus", "c": "local_bsz"})
    table = pd.read_csv(DATA / "traces" / name / "placements.csv")
    digits = table["placement"].astype(str)
    table["nodes"] = digits.str.len()
    table["gpus"] = digits.map(lambda s: sum(int(c) for c in s))
    keys = ["nodes", "gpus", "local_bsz"]
    return table.groupby(keys, as_index=False, sort=True)[["step_time", "sync_time"]].mean()


@lru_cache(maxsize=1)
def _delaunay_points() -> pd.DataFrame:
    table = pd.read_csv(DATA / "delaunay.csv")
    return table[table["kind"] == "point"]


def _read(name: str) -> BatchApplication:
    validation = validation_tables(name)
    sizes = sorted(validation)
    init = validation[sizes[0]]
    placements = pd.read_csv(DATA / "traces" / name / "placements.csv")
    measured = _measurements(name)
    curves: dict[int, tuple[list[int], list[Curve]]] = {}
    for gpus, rows in measured.groupby("gpus", sort=True):
        per_node = [(int(n), curve_of(r)) for n, r in rows.groupby("nodes", sort=True)]
        curves[int(gpus)] = ([n for n, _ in per_node], [c for _, c in per_node])
    return BatchApplication(
        name=name,
        init_batch_size=sizes[0],
        max_batch_size=sizes[-1],
        min_local=int(placements["local_bsz"].min()),
        max_local=MAX_LOCAL_BSZ.get(name, int(placements["local_bsz"].max())),
        sqr=float(init["grad_sqr"].mean()),
        var=float(init["grad_var"].mean()),
        curves=curves,
    )


@lru_cache(maxsize=1)
def batch_applications() -> dict[str, BatchApplication]:
    """The applications with batch data: the six of the Pollux study, by name."""
    names = sorted(p.name for p in (DATA / "traces").iterdir() if p.is_dir())
    return {name: _read(name) for name in names}


__all__ = [
    "BATCH_COLUMNS",
    "BatchApplication",
    "Curve",
    "batch_applications",
    "batch_columns",
    "curve_of",
    "split_batch",
    "statistical_efficiency",
    "validation_tables",
]


def _column_fail(
    frame: pd.DataFrame, mask, column: str, expected: str, beside: str | None = None
) -> None:
    raise ValueError(
        f"Workload: column {column!r} must be {expected}; "
        + describe_rows(frame, list(mask), column, "job_id", beside)
    )


def batch_columns(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """The checked batch-size columns of a workload ``frame`` (those present; float64, NaN
    where missing): a whole number from 1 up, or missing; ``min_batch_size`` and
    ``max_batch_size`` only on rows with a ``batch_size`` (a missing one is the row's
    ``batch_size``), ``min_batch_size`` at most ``max_batch_size`` (both given),
    ``batch_size`` within them (the limit named beside it). Errors name the column, the
    rows (job ids) and their values."""
    out: dict[str, pd.Series] = {}
    for column in BATCH_COLUMNS:
        if column not in frame.columns:
            continue
        given = frame[column]
        values = pd.to_numeric(given, errors="coerce").astype(float)
        flags = np.array([isinstance(v, (bool, np.bool_)) for v in given], dtype=bool)
        bad = (given.notna() & values.isna()).to_numpy() | flags
        bad |= (values.notna() & ((values < 1) | (values != np.round(values)))).to_numpy()
        bad |= np.isinf(values.to_numpy())
        if bad.any():
            _column_fail(frame, bad, column, "a whole number of samples from 1 up, or missing")
        out[column] = values
    if not out:
        return out
    batch = out.get("batch_size", pd.Series(np.nan, index=frame.index))
    low, high = out.get("min_batch_size"), out.get("max_batch_size")
    if low is not None and high is not None and (low > high).any():
        _column_fail(
            frame,
            (low > high).to_numpy(),
            "min_batch_size",
            "at most the row's max_batch_size",
            "max_batch_size",
        )
    for column in BATCH_COLUMNS[1:]:
        if column in out:
            alone = (out[column].notna() & batch.isna()).to_numpy()
            if alone.any():
                _column_fail(frame, alone, column, "missing on a row without a batch_size")
            out[column] = out[column].fillna(batch)
    low, high = out.get("min_batch_size"), out.get("max_batch_size")
    if low is not None and (batch < low).any():
        _column_fail(
            frame,
            (batch < low).to_numpy(),
            "batch_size",
            "at least the row's min_batch_size",
            "min_batch_size",
        )
    if high is not None and (batch > high).any():
        _column_fail(
            frame,
            (batch > high).to_numpy(),
            "batch_size",
            "at most the row's max_batch_size",
            "max_batch_size",
        )
    return out
