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

Each file carries its run's key and spec: a file whose stored key or spec is not the run's (a
file copied over another run's name) is ignored with a warning and the run computed again.

Claims: before computing runs, a sweep claims each one by creating ``runs/<key>.claim``
exclusively (a hard link to a file holding the claimer's host and process id: one process
wins). Another sweep on the same folder leaves a claimed run alone and waits for its file.
A claim is stale, and may be taken over, when its process is gone (same host) or it is
older than :data:`CLAIM_STALE_AFTER` (another host).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from analysim.sweep.grid import Run
from analysim.version import code_version

log = logging.getLogger("analysim.sweep")

CLAIM = ".claim"
CLAIM_STALE_AFTER = 24 * 3600.0
"""Seconds after which a claim made on another host is taken to be abandoned."""
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
        self.token = uuid.uuid4().hex  # this sweep call's claims, among this process's
        _ACTIVE.add(self.token)
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
        be read, or belongs to another run: logged, then treated as not done)."""
        path = self.path(run.key)
        if not path.exists():
            return None
        try:
            stored = pd.read_parquet(path).iloc[0].to_dict()
            outcome = _outcome(stored)
        except Exception as exc:  # a foreign or damaged file: run it again
            log.warning("sweep: cannot read %s (%s); running it again", path, exc)
            return None
        spec = json.dumps(run.spec(), sort_keys=True)
        if stored.get("run_id") != run.key or stored.get("spec") != spec:
            log.warning(
                "sweep: %s holds another run (run_id %r, spec %s), not run %s (spec %s); "
                "running it again",
                path,
                stored.get("run_id"),
                stored.get("spec"),
                run.key,
                spec,
            )
            return None
        return outcome

    # -- claims ---------------------------------------------------------------------------------
    def claim_path(self, key: str) -> Path:
        return self.runs / f"{key}{CLAIM}"

    def claim(self, key: str) -> bool:
        """Claim run ``key`` for this process; False if another holds a live claim."""
        path = self.claim_path(key)
        fd, temp = tempfile.mkstemp(prefix=".claim-", suffix=".tmp", dir=self.runs)
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(self._owner(), handle)
            for _ in range(2):
                try:
                    os.link(temp, path)  # atomic, with its content: one process wins
                    return True
                except FileExistsError:
                    if not self._stale(path):
                        return False
                    _take_over(path)
            return False
        finally:
            Path(temp).unlink(missing_ok=True)

    def release(self, key: str) -> None:
        """Drop this process's claim on run ``key`` (if it is still ours)."""
        path = self.claim_path(key)
        try:
            if json.loads(path.read_text()) == self._owner():
                path.unlink()
        except (OSError, ValueError):
            pass

    def claimed_elsewhere(self, key: str) -> bool:
        """Whether another live process holds a claim on run ``key``."""
        path = self.claim_path(key)
        return path.exists() and not self._stale(path)

    def close(self) -> None:
        """End this sweep call: claims it may have left (an interrupt) become stale."""
        _ACTIVE.discard(self.token)

    def _owner(self) -> dict[str, Any]:
        return {**_owner(), "token": getattr(self, "token", None)}

    @staticmethod
    def _stale(path: Path) -> bool:
        try:
            owner = json.loads(path.read_text())
            age = time.time() - path.stat().st_mtime
        except (OSError, ValueError):
            return True  # gone, or not a claim
        if owner.get("host") == socket.gethostname():
            if owner.get("pid") == os.getpid():  # this process: live while its call runs
                return owner.get("token") not in _ACTIVE
            return not _alive(int(owner.get("pid", -1)))
        return age > CLAIM_STALE_AFTER

    def save_frame(self, frame: pd.DataFrame) -> Path:
        path = self.folder / FRAME
        write_atomic(frame.reset_index(drop=True), path)
        return path


def saved_outcome(folder: str | Path, run: Run) -> dict[str, Any] | None:
    """The outcome saved for ``run`` in the out ``folder`` (as :meth:`RunStore.load`), or
    None; creates nothing (a Dask worker may not see the folder)."""
    runs = Path(folder) / RUNS
    if not runs.is_dir():
        return None
    store = RunStore.__new__(RunStore)
    store.folder, store.runs = Path(folder), runs
    return store.load(run)


def save_where_seen(folder: str | Path, run: Run, outcome: dict[str, Any]) -> bool:
    """Save ``run``'s file in ``folder`` if its ``runs`` folder is there (a worker on the
    sweep's machine); whether it was saved."""
    runs = Path(folder) / RUNS
    if not runs.is_dir():
        return False
    store = RunStore.__new__(RunStore)
    store.folder, store.runs = Path(folder), runs
    try:
        store.save(run, outcome)
    except OSError:
        return False
    return True


_ACTIVE: set[str] = set()
"""Tokens of the sweep calls running in this process (threads may run several)."""


def _owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def _take_over(path: Path) -> None:
    """Remove a stale claim (a rename first, so two processes cannot both remove it)."""
    moved = path.with_name(f"{path.name}.stale-{os.getpid()}")
    try:
        os.replace(path, moved)
        moved.unlink()
    except OSError:
        pass


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
