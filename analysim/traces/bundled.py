"""Traces that ship inside the package, so that examples run on real data from a fresh clone.

Only the openb 2023 trace is bundled (Apache-2.0; source and licence in
``analysim/data/openb/NOTICE``). Name it ``"bundled:openb"`` wherever a trace folder is
accepted (:func:`analysim.traces.read_folder`, ``analysim run --trace``, notebook 07,
``asim.explore``), or ask for its folder:

>>> folder = bundled_folder("openb")   # .../analysim/data/openb
"""

from __future__ import annotations

from pathlib import Path

PREFIX = "bundled:"
DATA = Path(__file__).resolve().parents[1] / "data"
BUNDLED = ("openb",)


def bundled_folder(name: str) -> Path:
    """The folder of the bundled trace ``name`` (one of :data:`BUNDLED`)."""
    if name not in BUNDLED:
        raise ValueError(f"no bundled trace named {name!r}; bundled traces: {list(BUNDLED)}")
    return DATA / name


def resolve(folder: str | Path) -> Path:
    """``folder`` as a path: ``"bundled:NAME"`` is the bundled trace's folder, anything else
    the path it says (``~`` expanded)."""
    if str(folder).startswith(PREFIX):
        return bundled_folder(str(folder)[len(PREFIX) :])
    return Path(folder).expanduser()
