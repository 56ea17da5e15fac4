"""The folder format of a saved :class:`~analysim.results.result.Result`, checked up front on load.

A saved result is a folder: ``jobs.parquet``, ``events.parquet``, ``timeline.parquet``,
``result.json`` (config and meta), the decisions' three parquet files when the run kept
them, and ``manifest.json``::

    {"format": "analysim-result", "version": 1, "analysim": "<version that wrote it>",
     "files": {"jobs.parquet": {"columns": [...], "rows": 12}, ...}}

:func:`read_result_files` checks the whole folder before building anything: the manifest's
shape and version, every file it lists (present, readable parquet or JSON, its columns and row
count as listed, the columns the result needs) and ``result.json``'s config and meta. Whatever
is wrong raises one :class:`ResultFormatError` naming the file and what is wrong.

A folder saved before the manifest (AnalySIM before format version 1) still loads when its
files pass the same checks (the decisions are then read if all three files are there); one
that does not is refused with a message saying to run the simulation again and save it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from analysim.errors import ResultFormatError
from analysim.results.decisions import DECISION_FILES as DECISION_FILE_NAMES

log = logging.getLogger(__name__)

FORMAT = "analysim-result"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
RESULT_JSON = "result.json"

#: the columns every saved frame must have (what ``Result``'s methods read)
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "jobs.parquet": tuple(
        "job_id vc user num_gpus submit_time duration start_time end_time jct queue_delay "
        "run_time preemptions status nodes".split()
    ),
    "events.parquet": ("time", "event", "job_id", "vc", "num_gpus", "nodes", "gpus", "borrowed"),
    "timeline.parquet": ("time", "vc", "used_gpus", "free_gpus", "utilization"),
    "decision_rounds.parquet": ("time", "group", "full", "nothing_free", "first", "stop"),
    "decision_tries.parquet": ("round", "job", "job_id", "reason"),
    "decision_jobs.parquet": ("group", "queue"),
}
FRAME_FILES = ("jobs.parquet", "events.parquet", "timeline.parquet")
DECISION_FILES = tuple(DECISION_FILE_NAMES.values())
#: what ``meta`` must hold for ``summary()`` (and its kinds)
REQUIRED_META: dict[str, tuple[type | tuple[type, ...], str]] = {
    "total_gpus": ((int, float), "a number"),
    "vcs": (list, "a list"),
    "vc_capacity": (list, "a list"),
}
RESAVE = "run the simulation again and save it with Result.save"


def manifest_for(frames: dict[str, pd.DataFrame], version: str) -> dict[str, Any]:
    """The manifest of a folder holding ``frames`` (file name -> frame) and ``result.json``."""
    files: dict[str, Any] = {
        name: {"columns": [str(c) for c in frame.columns], "rows": len(frame)}
        for name, frame in frames.items()
    }
    files[RESULT_JSON] = {"keys": ["config", "meta"]}
    return {"format": FORMAT, "version": FORMAT_VERSION, "analysim": version, "files": files}


def _error(folder: Path, file: str, what: str) -> ResultFormatError:
    return ResultFormatError(f"Result.load: {folder / file}: {what}")


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, checked for shape and version; None for a folder saved before
    manifests."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    manifest = _read_json(folder, MANIFEST)
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _error(folder, MANIFEST, f"not an AnalySIM result manifest (no format {FORMAT!r})")
    version = manifest.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _error(folder, MANIFEST, f"version must be a whole number, got {version!r}")
    if version > FORMAT_VERSION:
        raise _error(
            folder,
            MANIFEST,
            f"format version {version} (saved by AnalySIM {manifest.get('analysim')}); this "
            f"AnalySIM reads up to version {FORMAT_VERSION}: upgrade AnalySIM to load it",
        )
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("columns", []), list) for v in files.values()
    ):
        raise _error(folder, MANIFEST, "'files' must map each file to {'columns': [...]}")
    for needed in (*FRAME_FILES, RESULT_JSON):
        if needed not in files:
            raise _error(folder, MANIFEST, f"does not list {needed!r}")
    return manifest


def _read_json(folder: Path, file: str) -> Any:
    path = folder / file
    if not path.is_file():
        raise _error(folder, file, "missing" if not path.exists() else "is not a file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise _error(folder, file, f"cannot be read ({error.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _error(folder, file, f"is not valid JSON ({error})") from None


def _read_parquet(folder: Path, file: str, listed: dict[str, Any] | None) -> pd.DataFrame:
    path = folder / file
    if not path.is_file():
        raise _error(folder, file, "missing" if not path.exists() else "is not a file")
    try:
        frame = pd.read_parquet(path)
    except OSError as error:
        if error.errno is not None:
            raise _error(folder, file, f"cannot be read ({error.strerror})") from None
        raise _error(folder, file, f"is not a readable parquet file ({error})") from None
    except Exception as error:  # noqa: BLE001 - pyarrow raises many kinds for a damaged file
        raise _error(folder, file, f"is not a readable parquet file ({error})") from None
    columns = set(map(str, frame.columns))
    needed = list(REQUIRED_COLUMNS.get(file, ()))
    if listed is not None:
        needed += [c for c in listed.get("columns", []) if c not in needed]
    missing = [c for c in needed if c not in columns]
    if missing:
        raise _error(folder, file, f"missing column(s) {missing} (has {sorted(columns)})")
    _empty_categories_as_text(frame)
    rows = None if listed is None else listed.get("rows")
    if isinstance(rows, int) and not isinstance(rows, bool) and rows != len(frame):
        raise _error(folder, file, f"has {len(frame)} rows, the manifest lists {rows}")
    return frame


def _empty_categories_as_text(frame: pd.DataFrame) -> None:
    """Give categorical columns with no categories text categories again (parquet keeps no
    dtype for an empty category list), so a loaded frame equals the saved one."""
    for column in frame.columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype) and len(values.cat.categories) == 0:
            frame[column] = values.cat.set_categories(pd.Index([], dtype="str"))


def _check_payload(folder: Path, payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise _error(folder, RESULT_JSON, f"must be an object, got {type(payload).__name__}")
    for key in ("config", "meta"):
        if not isinstance(payload.get(key), dict):
            got = repr(payload.get(key))[:60]
            raise _error(folder, RESULT_JSON, f"{key!r} must be an object, got {got}")
    meta = payload["meta"]
    for key, (kind, wanted) in REQUIRED_META.items():
        value = meta.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            got = repr(value)[:60]
            raise _error(folder, RESULT_JSON, f"meta[{key!r}] must be {wanted}, got {got}")
    if len(meta["vcs"]) != len(meta["vc_capacity"]):
        raise _error(folder, RESULT_JSON, "meta['vcs'] and meta['vc_capacity'] differ in length")
    return payload


def read_result_files(folder: str | Path) -> dict[str, Any]:
    """Every file of a saved result, checked: ``{"frames": {file: frame}, "config", "meta",
    "decisions": {file: frame} or None}``. A :class:`ResultFormatError` for anything wrong."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "no such folder" if not folder.exists() else "is a file, not a result folder"
        raise ResultFormatError(f"Result.load: {str(folder)!r}: {what}")
    manifest = read_manifest(folder)
    listed = manifest["files"] if manifest is not None else {}
    try:
        frames = {f: _read_parquet(folder, f, listed.get(f)) for f in FRAME_FILES}
        payload = _check_payload(folder, _read_json(folder, RESULT_JSON))
    except ResultFormatError as error:
        if manifest is None:
            raise ResultFormatError(
                f"{error}. This folder has no {MANIFEST} (saved before AnalySIM's result "
                f"format {FORMAT_VERSION}, or not a saved result): {RESAVE}"
            ) from None
        raise
    decisions = _read_decisions(folder, listed if manifest is not None else None)
    if manifest is None:
        log.info("%s has no %s (an older save); it loaded, %s to add one", folder, MANIFEST, RESAVE)
    config, meta = payload["config"], payload["meta"]
    return {"frames": frames, "config": config, "meta": meta, "decisions": decisions}


def _read_decisions(folder: Path, listed: dict[str, Any] | None) -> dict[str, pd.DataFrame] | None:
    """The decision frames: those the manifest lists (all three or none); without a manifest,
    all three if any is there."""
    if listed is not None:
        wanted = [f for f in DECISION_FILES if f in listed]
    else:
        wanted = list(DECISION_FILES) if any((folder / f).exists() for f in DECISION_FILES) else []
    if not wanted:
        return None
    if len(wanted) < len(DECISION_FILES):
        gone = [f for f in DECISION_FILES if f not in wanted]
        raise _error(folder, MANIFEST, f"lists some decision files but not {gone}")
    return {f: _read_parquet(folder, f, None if listed is None else listed.get(f)) for f in wanted}
