"""Sweep files: the YAML (or JSON) file ``analysim sweep`` reads.

.. code-block:: yaml

    workload: venus           # preset name (required)
    cluster: venus            # preset name (default: the workload's)
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
from pathlib import Path
from typing import Any

KEYS = ("workload", "cluster", "seeds", "modules", "grid")
REQUIRED = ("workload", "grid")


def load_sweep_file(path: str | Path) -> dict[str, Any]:
    """The keyword arguments of :func:`analysim.sweep` that a sweep file gives.

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
    return values
