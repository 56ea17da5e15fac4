"""The durable side of a sweep: one parquet file per finished run, written atomically.

Layout of the ``out`` folder::

    out/runs/<key>.parquet    one row per finished run (ok or error), named by the run's key
    out/sweep.parquet         the whole frame, rewritten when a sweep call ends

A run's key hashes its workload, cluster, configuration and seed (:func:`grid.run_key`), so a
second call of the same sweep finds the files of the runs already done and skips them. A file
is written to a temporary name in the same folder and then renamed over its final name
(``os.replace``), so a file that exists is complete, whatever dies when. Each file also
records the code version that made it (:func:`analysim.version.code_version`), so that
reusing runs made by other code can be reported.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from analysim.sweep.grid import Run
from analysim.version import code_version

log = logging.getLogger("analysim.sweep")

RUNS = "runs"
FRAME = "sweep.parquet"
OUTCOME = ("status", "error", "seconds", "run_id")
"""Columns of a run's row besides its parameters, seed and metrics."""


def row(run: Run, outcome: dict[str, Any]) -> dict[str, Any]:
    """The run's row of the sweep frame: parameters, seed, metrics, status, error, seconds."""
    return {
        "workload": run.workload.label,
        "cluster": run.cluster.label,
        **run.params,
        "seed": run.seed,
        **outcome["metrics"],
        "status": outcome["status"],
        "error": outcome["error"],
        "seconds": outcome["seconds"],
        "run_id": run.key,
    }


def write_atomic(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` as parquet to ``path`` via a temporary file and a rename."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.to_parquet(temp, index=False)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class RunStore:
    """The ``out`` folder of a sweep."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.runs = self.folder / RUNS
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"sweep: cannot create the output folder {self.runs}: {exc}") from exc

    def path(self, key: str) -> Path:
        return self.runs / f"{key}.parquet"

    def save(self, run: Run, outcome: dict[str, Any]) -> None:
        """Write one finished run (with its full spec, for provenance)."""
        record = {
            **row(run, outcome),
            "spec": json.dumps(run.spec(), sort_keys=True),
            "metric_names": json.dumps(list(outcome["metrics"])),
            "analysim_version": code_version(),
        }
        write_atomic(pd.DataFrame([record]), self.path(run.key))

    def load(self, run: Run) -> dict[str, Any] | None:
        """The outcome stored for ``run``, or None when it has not finished (or its file cannot
        be read, which is logged and then treated as not done)."""
        path = self.path(run.key)
        if not path.exists():
            return None
        try:
            return _outcome(pd.read_parquet(path).iloc[0].to_dict())
        except Exception as exc:  # a foreign or damaged file: run it again
            log.warning("sweep: cannot read %s (%s); running it again", path, exc)
            return None

    def save_frame(self, frame: pd.DataFrame) -> Path:
        path = self.folder / FRAME
        write_atomic(frame.reset_index(drop=True), path)
        return path


def _outcome(stored: dict[str, Any]) -> dict[str, Any]:
    """A run's outcome from its stored row. The row's parameter columns may differ from the
    current grid's (a parameter written at its default is the same run), so the metrics are
    the ones the row names."""
    error = stored.get("error")
    return {
        "metrics": {name: float(stored[name]) for name in json.loads(stored["metric_names"])},
        "status": str(stored["status"]),
        "error": error if isinstance(error, str) else None,
        "seconds": float(stored["seconds"]),
        "version": stored.get("analysim_version"),  # None for a file from before versions
    }
