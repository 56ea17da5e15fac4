"""Each trace's words for a job's final state, mapped to the workload's ``state`` column.

The workload's ``state`` holds one of :data:`analysim.inputs.workload.STATES` (Slurm's words)
or None. A reader keeps the trace's own word in ``trace_state`` and its mapped word in
``state``: a word meaning "not ended" (a running or pending job) or one without a sure final
state (PAI's ``Terminated``) becomes None; a word the reader does not know becomes None too
and is counted as ``unknown_state`` (kept) in the load report. The maps are in
``docs/traces.md``.
"""

from __future__ import annotations

import pandas as pd

from analysim.inputs.workload import STATES
from analysim.traces._io import labels

SLURM_STATES: dict[str, str] = {word: word for word in STATES}
"""Helios and Acme (Slurm's words; a word is read upper-cased, up to its first space, so
Slurm's ``CANCELLED by 1234`` is ``CANCELLED``)."""
PHILLY_STATES: dict[str, str] = {"Pass": "COMPLETED", "Killed": "CANCELLED", "Failed": "FAILED"}
"""Philly's ``status`` (the map the Acme authors use for Philly in their analysis notebook)."""
PHILLY_NOT_FINAL = ("Running", "Queued")
PAI_STATES: dict[str, str] = {"Failed": "FAILED"}
"""PAI 2020's job ``status``: only ``Failed`` is mapped. ``Terminated`` ends both finished and
stopped jobs (the Acme authors leave PAI out of their final-state analysis: "not suitable"),
so it is kept as None, like ``Running`` and ``Waiting``."""
PAI_NOT_FINAL = ("Terminated", "Running", "Waiting")
OPENB_STATES: dict[str, str] = {"Succeeded": "COMPLETED", "Failed": "FAILED"}
"""openb's Kubernetes ``pod_phase``; ``Running``, ``Pending`` and ``Unknown`` have no final
state."""
OPENB_NOT_FINAL = ("Running", "Pending", "Unknown")


def slurm_words(values: pd.Series) -> pd.Series:
    """Slurm state words as written in Helios and Acme: upper-cased, up to the first space."""
    text, missing = labels(values)
    words = text.str.upper().str.split(" ", n=1).str[0]
    return words.where(~missing, None)
