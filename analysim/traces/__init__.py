"""Readers for public GPU-cluster traces: each returns a :class:`Trace` (workload, cluster,
load report).

>>> import analysim as asim
>>> t = asim.traces.read_helios("data/Venus", start="2020-09-01", end="2020-09-26 23:59:00")
>>> print(t.report)                       # rows read, kept, dropped by reason, with examples
>>> res = asim.simulate(t.workload, t.cluster, scheduler="fifo")
>>> t = asim.traces.read_folder("bundled:openb")   # the openb trace shipped with analysim
>>> t = asim.traces.read_folder("downloads/Venus")  # any format, told from the files

What each reader keeps, drops and changes, and the fixed vocabulary of reasons, are in
``docs/traces.md``.
"""

from analysim.traces.acme import read_acme
from analysim.traces.bundled import BUNDLED, bundled_folder
from analysim.traces.folders import TRACE_FORMATS, detect_format, read_folder
from analysim.traces.generic import read_csv_trace
from analysim.traces.helios import read_helios, read_helios_cluster, read_vc_sizes
from analysim.traces.nodes import read_nodes_table
from analysim.traces.openb import read_openb, read_openb_tasks
from analysim.traces.pai import read_pai
from analysim.traces.philly import read_philly
from analysim.traces.pollux import pollux_cluster, read_pollux
from analysim.traces.report import REASONS, LoadReport, Trace, TraceError

__all__ = [
    "BUNDLED",
    "REASONS",
    "TRACE_FORMATS",
    "LoadReport",
    "Trace",
    "TraceError",
    "bundled_folder",
    "detect_format",
    "pollux_cluster",
    "read_acme",
    "read_csv_trace",
    "read_folder",
    "read_helios",
    "read_helios_cluster",
    "read_nodes_table",
    "read_openb",
    "read_openb_tasks",
    "read_pai",
    "read_philly",
    "read_pollux",
    "read_vc_sizes",
]
