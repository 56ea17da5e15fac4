"""The bounds every border checks, and small helpers that check one value against them.

A value coming in (a trace cell, a column of ``Workload.from_frame``, a ``SimConfig`` field, a
policy parameter, a CLI option, an explorer argument) must be of the right type, finite and
within these bounds; otherwise a ``ValueError`` names the parameter (or file, row, column) and
the value. The bounds are far beyond any real trace and well inside what the engine's dtypes
(int64 counts, float64 seconds) and memory hold; ``docs/traces.md`` lists them.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

YEAR = 365.25 * 86_400.0
MAX_SECONDS = 100 * YEAR
"""Largest time, duration or period in seconds (100 years): a submit time, a duration, a
quantum, ``until``. A trace's times are seconds from its start, so a trace may span a century."""
MIN_PERIOD = 1e-3
"""Smallest clock step, quantum or sampling period in seconds (a millisecond)."""
MAX_JOB_GPUS = 1_000_000
"""Most GPUs one job may ask for."""
MAX_NODE_AMOUNT = 10**12
"""Most CPU milli or memory MiB one task may ask for or one node may have (a million
terabytes of memory: far past any machine, well within an int64)."""
MAX_CLUSTER_GPUS = 10_000_000
"""Most GPUs a cluster (and so one node, one VC, one quota) may have: the engine keeps arrays
per GPU, so this bounds its memory (a few hundred MB at the limit)."""
MAX_SAMPLES = 10_000_000
"""Most timeline samples a run may take (``simulate`` checks ``sample_every`` against the
run's least possible length before running)."""
MAX_SEED = 2**63 - 1
"""Largest seed (it is stored in int64 columns)."""
MAX_WEIGHT = 1e12
"""Largest policy weight, factor or threshold that is not seconds (fair-share weights, LAS
starvation factor)."""
MAX_DAYS = 3_650.0
"""Largest number of days a synthetic workload may span (10 years: about 3.5 million jobs of
the ``venus`` preset)."""


DECIMAL = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
"""A number written in plain decimal (``12``, ``-1.5e3``): no hex (``0x10``), no digits of
other scripts, no ``1_000``; pandas alone would read ``"0x10"`` as 16."""


def decimal_numbers(values: Any) -> np.ndarray:
    """Text values as float64: NaN where a value is missing or not a plain decimal number."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    series = pd.Series(values).astype(object)
    missing = series.isna().to_numpy()
    text = [None if gone else str(v) for v, gone in zip(series.tolist(), missing, strict=True)]
    array = pa.array(text, type=pa.string())
    plain = pc.fill_null(pc.match_substring_regex(array, DECIMAL), False)
    kept = pc.if_else(plain, array, pa.scalar(None, pa.string()))
    numbers = pc.cast(pc.utf8_trim_whitespace(kept), pa.float64())
    return np.asarray(numbers.to_numpy(zero_copy_only=False), dtype="float64")


def plain_number(value: Any, name: str, *, whole: bool = False) -> float:
    """``value`` as a float if it is a real number (not a bool, not text); a ValueError naming
    ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{name} must be {kind}, got {value!r} ({type(value).__name__})")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if whole and not number.is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return number


def bounded(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    whole: bool = False,
) -> float:
    """``value`` checked to be a finite number in ``[low, high]`` (``(low, high]`` if
    ``low_open``); a ValueError naming ``name``, the bounds and the value otherwise."""
    number = plain_number(value, name, whole=whole)
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and number > high
    if too_low or too_high:
        left = "(" if low_open else "["
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"{name} must be in {left}{lo}, {hi}], got {value!r}")
    return number


def seconds(value: Any, name: str, *, positive: bool = True) -> float:
    """A number of seconds: finite, > 0 (>= 0 unless ``positive``), at most :data:`MAX_SECONDS`."""
    return bounded(value, name, low=0.0, high=MAX_SECONDS, low_open=positive)


def period(value: Any, name: str) -> float:
    """A clock period: seconds in ``[MIN_PERIOD, MAX_SECONDS]``."""
    number = plain_number(value, name)
    if not MIN_PERIOD <= number <= MAX_SECONDS:
        raise ValueError(
            f"{name} must be a finite number > 0 (seconds, from {MIN_PERIOD:g} to "
            f"{MAX_SECONDS:g}: 100 years), got {value!r}"
        )
    return number


def weight_map(values: Any, name: str) -> dict[str, float]:
    """``{label: weight}`` with finite weights in ``(0, MAX_WEIGHT]``, keys as text."""
    if not isinstance(values, Mapping):
        raise ValueError(f"{name} must be a dict of {{name: number}}, got {values!r}")
    return {
        str(key): bounded(w, f"{name}[{key!r}]", low=0.0, high=MAX_WEIGHT, low_open=True)
        for key, w in values.items()
    }


def writable_output(path: Path, name: str, *, folder: bool) -> None:
    """Check, before any work, that results can be written to ``path`` (a folder if
    ``folder``, else a file): it is not the other kind, and its folder can be created and
    written to. A ValueError naming the option otherwise."""
    path = Path(path).expanduser()
    if path.exists() and path.is_dir() != folder:
        kind = "a file" if folder else "a folder"
        raise ValueError(
            f"{name}: {str(path)!r} is {kind}; give {'a folder' if folder else 'a file'}"
        )
    target = path if folder else path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".analysim-write-check-"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValueError(f"{name}: cannot write to {str(target)!r} ({reason})") from None


def check_samples(jobs: Any, sample_every: float, until: float | None) -> None:
    """Refuse, before running, a ``sample_every`` that would make the timeline longer than
    ``MAX_SAMPLES`` rows per series: the run lasts at least until its latest job could end
    (its submit time plus its duration), or ``until``."""
    horizon = float((jobs["submit_time"] + jobs["duration"]).max()) if len(jobs) else 0.0
    if until is not None:
        horizon = min(horizon, float(until))
    samples = horizon / sample_every
    if samples > MAX_SAMPLES:
        raise ValueError(
            f"SimConfig: sample_every={sample_every:g} s would sample the run (at least "
            f"{horizon:,.0f} s) {samples:,.0f} times; at most {MAX_SAMPLES:,} samples: use a "
            f"sample_every of at least {horizon / MAX_SAMPLES:,.3g} s"
        )
