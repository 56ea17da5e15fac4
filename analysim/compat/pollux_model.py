"""The Pollux artifact's job model, as its simulator measures progress (``docs/pollux.md``).

A job of an application trains for the application's ``max_epochs`` epochs. An epoch ends
when the job's **progress** (samples weighted by statistical efficiency) reaches the
smallest progress any validated batch size recorded at the end of that epoch. Progress
grows at the **goodput** ``gain / iteration time``:

* the iteration time is the step time of the job's placement at its local ("atomic") batch
  size, plus ``accum_steps`` times the step time less the sync time (gradient accumulation);
  a measured placement (``traces/<app>/placements.csv``) is interpolated linearly between
  its local batch sizes, as scipy's ``interp1d`` does; any other placement is read from
  ``interpolated.csv``, the artifact's own Delaunay interpolation computed once
  (``tools/pollux_interpolated.py``);
* ``gain = (var + sqr) / (var / scale + sqr)``, with ``scale`` the batch size over the
  application's smallest validated one and the gradient statistics of the epoch,
  interpolated linearly between the two validated batch sizes around the job's.

Data: ``analysim/data/pollux`` (Apache-2.0, source in its README).
"""

from __future__ import annotations

import bisect
import math
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysim.inputs.batch import MAX_LOCAL_BSZ, curve_of, split_batch, validation_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "pollux"
#: epochs each application trains for
MAX_EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}


def canonical(placement: tuple[int, ...]) -> tuple[int, ...]:
    """A placement (GPUs per node) as its lexicographically smallest rotation."""
    return min(placement[i:] + placement[:i] for i in range(len(placement)))


class PolluxApplication:
    """One application's throughput and validation tables, read from the bundled data."""

    def __init__(self, name: str) -> None:
        self.name = name
        folder = DATA / "traces" / name
        validation = validation_tables(name)
        self.batch_sizes = sorted(validation)
        self._progress = {b: validation[b]["progress"].tolist() for b in self.batch_sizes}
        self._sqr = {b: validation[b]["grad_sqr"].tolist() for b in self.batch_sizes}
        self._var = {b: validation[b]["grad_var"].tolist() for b in self.batch_sizes}
        self._iteration = {b: validation[b]["iteration"].tolist() for b in self.batch_sizes}
        placements = pd.read_csv(folder / "placements.csv")
        self.curves = {
            int(pid): curve_of(rows) for pid, rows in placements.groupby("placement", sort=False)
        }
        self.init_batch_size = self.batch_sizes[0]
        self.max_batch_size = self.batch_sizes[-1]
        self.min_local_bsz = int(placements["local_bsz"].min())
        self.max_local_bsz = MAX_LOCAL_BSZ.get(name, int(placements["local_bsz"].max()))
        self.max_epochs = MAX_EPOCHS[name]
        self._interpolated = _interpolated().get(name, {})
        self._epoch_ends = [min(p) for p in zip(*self._progress.values(), strict=False)]

    def progress_at(self, epoch: int) -> float:
        """The progress that ends ``epoch`` (1-based): the least over the validated sizes."""
        return self._epoch_ends[epoch - 1]

    def throughput(self, placement: tuple[int, ...], bsz: int) -> tuple[float, float]:
        """(step time, sync time) of ``placement`` at local batch size ``bsz``."""
        shape = canonical(placement)
        curve = self.curves.get(int("".join(map(str, shape))))
        if curve is not None:
            return curve.at(bsz)
        key = (min(len(shape), 16), sum(shape), bsz)
        if key not in self._interpolated:
            value = _triangulation(self.name).at(key)
            if value is None:
                raise ValueError(
                    f"compat='pollux': no interpolated throughput for {self.name!r} on "
                    f"{key[0]} nodes, {key[1]} GPUs, local batch size {bsz}: outside the "
                    "artifact's measurements (its own interpolation fails there too)"
                )
            self._interpolated[key] = value
        return self._interpolated[key]

    def _between(self, batch: int) -> tuple[int, int]:
        """The validated batch sizes around ``batch`` (both ``batch`` if it is one)."""
        i = bisect.bisect_left(self.batch_sizes, batch)
        if i == len(self.batch_sizes) or batch < self.batch_sizes[0]:
            raise ValueError(f"batch size {batch} outside {self.batch_sizes} ({self.name})")
        hi = self.batch_sizes[i]
        return (hi if hi == batch else self.batch_sizes[i - 1]), hi

    def grad_stats(self, batch: int, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) during ``epoch`` (0-based) at global batch size ``batch``."""
        lo, hi = self._between(batch)
        if lo == hi:
            return self._sqr[lo][epoch], self._var[lo][epoch]
        out = []
        for table in (self._sqr, self._var):
            value = ((batch - lo) * table[hi][epoch] + (hi - batch) * table[lo][epoch]) / (hi - lo)
            out.append(value)
        return out[0], out[1]

    def iterations(self, batch: int, epoch: int) -> float:
        """Iterations done at global ``batch`` by the end of row ``epoch`` of the validation
        tables, interpolated linearly between the validated batch sizes around ``batch``."""
        lo, hi = self._between(batch)
        table = self._iteration
        if lo == hi:
            return table[lo][epoch]
        return ((batch - lo) * table[hi][epoch] + (hi - batch) * table[lo][epoch]) / (hi - lo)

    def packed_iteration_time(self, batch: int, replicas: int) -> float:
        """Optimus's estimate: the iteration time of global ``batch`` on ``replicas`` GPUs
        packed 4 per node, with at least one accumulation step on a single GPU."""
        placement = (4,) * (replicas // 4) + (replicas % 4,) * bool(replicas % 4)
        local = math.ceil(batch / replicas - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if replicas == 1:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        atomic = min(atomic, int(self.max_batch_size / (replicas * (accum + 1))))
        step, sync = self.throughput(placement, atomic)
        return step + (step - sync) * accum

    def local_batch(self, batch: int, replicas: int) -> tuple[int, int]:
        """(atomic local batch size, accumulation steps) of a job of global ``batch`` on
        ``replicas`` GPUs: the artifact's rule for a job with a fixed batch size."""
        return split_batch(
            batch, replicas, self.max_local_bsz, self.init_batch_size, self.max_batch_size
        )


class Triangulation:
    """The artifact's Delaunay triangulation of one application's measurements (nodes,
    replicas, local batch size), for barycentric interpolation as scipy's
    ``LinearNDInterpolator`` does (``tools/pollux_delaunay.py``)."""

    def __init__(self, points: np.ndarray, values: np.ndarray, simplices: np.ndarray) -> None:
        self.values = values
        self.simplices = simplices
        corners = points[simplices]  # (simplices, 4, 3)
        self.last = corners[:, 3]
        edges = np.transpose(corners[:, :3] - self.last[:, None, :], (0, 2, 1))
        flat = np.abs(np.linalg.det(edges)) < 1e-9  # degenerate: no point is inside it
        edges[flat] = np.eye(3)
        self.transforms = np.linalg.inv(edges)
        self.transforms[flat] = np.nan

    def at(self, key: tuple[int, int, int]) -> tuple[float, float] | None:
        """(step time, sync time) at ``key``; ``None`` outside the triangulation."""
        x = np.asarray(key, dtype=float)
        c = np.einsum("sij,sj->si", self.transforms, x - self.last)
        weights = np.column_stack([c, 1.0 - c.sum(axis=1)])
        inside = np.flatnonzero(np.all(weights >= -100 * np.finfo(float).eps, axis=1))
        if not len(inside):
            return None
        s = inside[0]
        step, sync = weights[s] @ self.values[self.simplices[s]]
        return float(step), float(sync)


@cache
def _triangulation(name: str) -> Triangulation:
    table = _delaunay()
    mine = table[table["application"] == name]
    points = mine[mine["kind"] == "point"]
    simplices = mine[mine["kind"] == "simplex"][["a", "b", "c", "d"]].to_numpy(dtype=np.int64)
    return Triangulation(
        points[["a", "b", "c"]].to_numpy(dtype=float),
        points[["step_time", "sync_time"]].to_numpy(dtype=float),
        simplices,
    )


@lru_cache(maxsize=1)
def _delaunay() -> pd.DataFrame:
    return pd.read_csv(DATA / "delaunay.csv")


@lru_cache(maxsize=1)
def _interpolated() -> dict[str, dict[tuple[int, int, int], tuple[float, float]]]:
    table = pd.read_csv(DATA / "interpolated.csv")
    out: dict[str, dict[tuple[int, int, int], tuple[float, float]]] = {}
    for row in table.itertuples(index=False):
        out.setdefault(str(row.application), {})[
            (int(row.num_nodes), int(row.num_replicas), int(row.local_bsz))
        ] = (float(row.step_time), float(row.sync_time))
    return out


@cache
def application(name: str) -> PolluxApplication:
    """The bundled application ``name`` (read once)."""
    return PolluxApplication(name)


APPLICATIONS = tuple(sorted(MAX_EPOCHS))

__all__ = ["APPLICATIONS", "PolluxApplication", "application", "canonical"]
