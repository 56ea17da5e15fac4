"""Sweep files: the YAML (or JSON) file ``analysim sweep`` reads.

.. code-block:: yaml

    workload: venus           # preset name (this, or a trace)
    # trace: data/Venus       # or a downloaded trace folder (relative to this file), and
    # trace_format: helios    # its format (default: told from its files)
    cluster: venus            # preset name (default: the workload's, or the trace's cluster)
    seeds: [0, 1, 2]          # default [0]
    modules: []               # modules to import where runs execute (custom policies)
    grid:                     # a mapping of value lists, or a list of configurations
      scheduler: [fifo, las]
      preemption: [false, true]
      workload.load_scale: [0.6, 1.0]
      workload.days: [7]
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

KEYS = ("workload", "trace", "trace_format", "cluster", "seeds", "modules", "grid")
REQUIRED = ("grid",)

log = logging.getLogger("analysim.sweep")


def load_sweep_file(path: str | Path, *, own_data: bool = False) -> dict[str, Any]:
    """The keyword arguments of :func:`analysim.sweep` that a sweep file gives.

    ``own_data=True``: the workload comes from elsewhere (``analysim sweep --jobs``), so the
    file need not name one.

    Raises ``ValueError`` naming the file and the problem (unreadable, not YAML, not a
    mapping, an unknown or missing key).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"sweep file {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        if path.suffix.lower() == ".json":
            values = json.loads(text)
        else:
            import yaml

            values = yaml.safe_load(text)
    except Exception as exc:  # a parse error of either format, with its line
        message = " ".join(str(exc).split())
        raise ValueError(f"sweep file {path}: not valid YAML/JSON: {message}") from None
    if not isinstance(values, dict):
        raise ValueError(f"sweep file {path}: must hold a mapping with keys {list(KEYS)}")
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise ValueError(f"sweep file {path}: unknown key(s) {unknown}; keys are {list(KEYS)}")
    missing = [key for key in REQUIRED if values.get(key) is None]
    if missing:
        raise ValueError(f"sweep file {path}: missing key(s) {missing}")
    if values.get("modules") is None:
        values.pop("modules", None)
    return _with_trace(values, path, own_data)


def _with_trace(values: dict[str, Any], path: Path, own_data: bool = False) -> dict[str, Any]:
    """Replace ``trace`` (and ``trace_format``) by the trace's workload and cluster."""
    trace, trace_format = values.pop("trace", None), values.pop("trace_format", None)
    if trace is None:
        if trace_format is not None:
            raise ValueError(f"sweep file {path}: trace_format needs trace (a folder)")
        if values.get("workload") is None and not own_data:
            raise ValueError(f"sweep file {path}: give workload (a preset) or trace (a folder)")
        return values
    if values.get("workload") is not None:
        raise ValueError(f"sweep file {path}: give workload or trace, not both")
    from analysim.traces import read_folder

    folder = path.parent / Path(str(trace)).expanduser()
    loaded = read_folder(folder, trace_format)
    log.info("%s", loaded.report)
    values["workload"] = loaded.workload
    if values.get("cluster") is None:
        values["cluster"] = loaded.cluster
    return values
