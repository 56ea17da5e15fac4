"""``read_pollux``: a workload CSV of the Pollux artifact (OSDI'21) and its 64-GPU cluster.

The artifact's workloads (``simulator/workloads/*.csv`` on the ``osdi21-artifact`` branch of
petuum/adaptdl; the 8 of load 1.0 are bundled in ``analysim/data/pollux/workloads``) have one
row per job: ``name, time, application, num_replicas, batch_size``. Every row becomes a job
(none is dropped: a bad row is an error naming the file, line, column and value):

* ``job_id`` = ``name``, ``submit_time`` = ``time``, ``num_gpus`` = ``num_replicas``;
  ``application`` and ``batch_size`` are kept as columns; ``vc`` and ``user`` are
  ``"pollux"`` (the artifact has neither);
* ``duration`` = the seconds the job trains alone on its GPUs packed on the fewest nodes,
  to the end of its last epoch as the artifact measures progress
  (:func:`analysim.compat.pollux_engine.packed_run_time`; ``docs/pollux.md``).

The cluster is the artifact's: 16 nodes (``n0``-``n15``, one rack) of 4 GPUs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysim.compat.pollux_engine import NODE_GPUS, NODES, packed_run_time
from analysim.compat.pollux_model import APPLICATIONS, application
from analysim.inputs.cluster import Cluster
from analysim.inputs.workload import Workload
from analysim.traces._io import existing_file
from analysim.traces.report import LoadReport, Trace, TraceError

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
VC = "pollux"


def pollux_cluster() -> Cluster:
    """The artifact's cluster: 16 nodes of 4 GPUs, all of VC ``pollux``."""
    nodes = pd.DataFrame(
        {
            "node": [f"n{i}" for i in range(NODES)],
            "rack": "r0",
            "gpus": NODE_GPUS,
            "vc": VC,
        }
    )
    return Cluster.from_frame(nodes, name="pollux")


def _fail(path: Path, frame: pd.DataFrame, bad: np.ndarray, column: str, expected: str) -> None:
    row = int(np.flatnonzero(bad)[0])
    raise TraceError(
        path,
        "a bad value",
        line=row + 2,
        where=f"row {row} (name={frame['name'].iloc[row]!r})",
        column=column,
        expected=expected,
        found=repr(frame[column].iloc[row]),
    )


def _whole(path: Path, frame: pd.DataFrame, column: str, low: int, expected: str) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (values < low)
    if bad.any():
        _fail(path, frame, bad, column, expected)
    return values.astype(np.int64)


def _read(path: Path) -> pd.DataFrame:
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise TraceError(path, f"not a readable CSV file ({error})") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(
            path,
            f"missing column(s) {missing}",
            expected=f"the columns {list(COLUMNS)}",
            found=str(list(frame.columns)),
        )
    if frame.empty:
        raise TraceError(path, "no job rows")
    return frame


def _check_batches(path: Path, frame: pd.DataFrame, apps: list[str], batch: np.ndarray) -> None:
    for row, (name, size) in enumerate(zip(apps, batch, strict=True)):
        sizes = application(name).batch_sizes
        if not sizes[0] <= size <= sizes[-1]:
            _fail(
                path,
                frame,
                np.arange(len(frame)) == row,
                "batch_size",
                f"a batch size {name!r} was validated for ({sizes[0]} to {sizes[-1]})",
            )


def read_pollux(path: str | Path) -> Trace:
    """The workload of the Pollux artifact's CSV at ``path`` on its 64-GPU cluster."""
    path = existing_file(path, "a Pollux workload CSV")
    frame = _read(path)
    empty = (frame["name"].str.strip() == "").to_numpy()
    if empty.any():
        _fail(path, frame, empty, "name", "a job name")
    twice = frame["name"].duplicated().to_numpy()
    if twice.any():
        _fail(path, frame, twice, "name", "a name not used on an earlier row")
    time = _whole(path, frame, "time", 0, "whole seconds from 0 up")
    unknown = ~frame["application"].isin(APPLICATIONS).to_numpy()
    if unknown.any():
        _fail(path, frame, unknown, "application", f"one of {list(APPLICATIONS)}")
    replicas = _whole(path, frame, "num_replicas", 1, "a whole number of GPUs from 1 up")
    too_many = replicas > NODES * NODE_GPUS
    if too_many.any():
        _fail(path, frame, too_many, "num_replicas", f"at most the cluster's {NODES * NODE_GPUS}")
    batch = _whole(path, frame, "batch_size", 1, "a whole batch size from 1 up")
    apps = frame["application"].tolist()
    _check_batches(path, frame, apps, batch)
    duration = [
        packed_run_time(application(a), int(r), int(b))
        for a, r, b in zip(apps, replicas, batch, strict=True)
    ]
    jobs = pd.DataFrame(
        {
            "job_id": frame["name"].to_numpy(),
            "vc": VC,
            "user": VC,
            "submit_time": time.astype(float),
            "duration": duration,
            "num_gpus": replicas,
            "application": apps,
            "batch_size": batch,
        }
    )
    report = LoadReport()
    report.read["jobs"] = report.kept["jobs"] = len(jobs)
    report.sources["jobs"] = path.name
    workload = Workload.from_frame(jobs, name=path.stem)
    return Trace(workload, pollux_cluster(), report)


__all__ = ["read_pollux", "pollux_cluster"]
