"""Read a downloaded trace folder by format name, or tell its format from the files in it.

>>> trace = read_folder("bundled:openb")                   # the openb trace shipped with analysim
>>> trace = read_folder("downloads/openb")                 # the format is told from the files
>>> trace = read_folder("data/Venus", "helios")             # or named
"""

from __future__ import annotations

from pathlib import Path

from analysim.traces._io import check_folder
from analysim.traces.acme import FILES as ACME_FILES
from analysim.traces.acme import read_acme
from analysim.traces.bundled import resolve
from analysim.traces.helios import read_helios
from analysim.traces.openb import read_openb
from analysim.traces.pai import read_pai
from analysim.traces.philly import read_philly
from analysim.traces.pollux import read_pollux
from analysim.traces.report import Trace, TraceError

OPENB_FILES = ("openb_pod_list_default.csv", "openb_node_list_gpu_node.csv")

# per format, the files (any one of them) that mark a folder of that format
MARKERS: dict[str, tuple[str, ...]] = {
    "helios": ("cluster_log.csv",),
    "philly": ("cluster_job_log", "cluster_job_log.json"),
    "pai": ("pai_job_table.csv", "pai_job_table"),
    "openb": (OPENB_FILES[0],),
    "acme": ACME_FILES,
}
#: the formats read_folder reads: those told from a folder's files, and the Pollux artifact's
#: workload, one CSV file (``read_pollux``), which must be named
TRACE_FORMATS = (*MARKERS, "pollux")


def detect_format(folder: str | Path) -> str:
    """The format of the trace in ``folder``, told by which of the known files it holds."""
    folder = resolve(folder)
    if folder.is_file():
        raise TraceError(
            folder,
            "is a file, not a folder",
            expected="a folder holding a trace; for a jobs table of your own use "
            "asim.traces.read_csv_trace(path) (on the command line: --jobs FILE)",
        )
    check_folder(folder, "a trace")
    found = [name for name, files in MARKERS.items() if any((folder / f).exists() for f in files)]
    if len(found) != 1:
        if found:
            problem = f"looks like both {' and '.join(found)}: name its format"
        else:
            problem = "holds no trace of a known format"
        markers = "; ".join(f"{name}: {' or '.join(files)}" for name, files in MARKERS.items())
        own = "; for a jobs table of your own: asim.traces.read_csv_trace, or --jobs FILE"
        raise TraceError(folder, problem, expected=f"the files of one format ({markers}){own}")
    return found[0]


def read_folder(folder: str | Path, trace_format: str | None = None) -> Trace:
    """Read the trace in ``folder`` with the reader of ``trace_format`` (``helios``,
    ``philly``, ``pai``, ``openb`` or ``acme``; ``None``: told from the files), with each reader's
    defaults (see ``docs/traces.md``); ``pollux`` reads one workload CSV of the Pollux artifact
    (``folder`` is that file: :func:`~analysim.traces.read_pollux`). ``"bundled:openb"``
    names the openb trace shipped with the package (:mod:`analysim.traces.bundled`)."""
    folder = resolve(folder)
    if trace_format is None:
        trace_format = detect_format(folder)
    if trace_format == "helios":
        return read_helios(folder)
    if trace_format == "philly":
        return read_philly(folder)
    if trace_format == "pai":
        return read_pai(folder)
    if trace_format == "openb":
        return read_openb(folder / OPENB_FILES[0], folder / OPENB_FILES[1])
    if trace_format == "acme":
        return read_acme(_one_acme_file(folder))
    if trace_format == "pollux":
        return read_pollux(folder)
    raise ValueError(f"trace format must be one of {list(TRACE_FORMATS)}, got {trace_format!r}")


def _one_acme_file(folder: Path) -> Path:
    """The one Acme job trace in ``folder`` (a TraceError if there are none or both)."""
    found = [folder / name for name in ACME_FILES if (folder / name).exists()]
    if len(found) != 1:
        problem = "holds both Acme traces" if found else "holds no Acme trace"
        raise TraceError(
            folder,
            problem,
            expected="one of " + " or ".join(ACME_FILES) + "; read either with "
            "asim.traces.read_acme(path)",
        )
    return found[0]
