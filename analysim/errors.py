"""Exceptions raised by AnalySIM, and helpers that word them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

MAX_EXAMPLES = 5


class InputTypeError(TypeError, ValueError):
    """An input of the wrong kind (a list where a DataFrame is needed): a ``TypeError``, and
    a ``ValueError`` like every other refused input, so one ``except ValueError`` catches
    all bad input."""


class ResultFormatError(ValueError):
    """A saved result's folder is damaged or not one: a file missing, unreadable, not the
    parquet or JSON it should be, or without a column it needs (the message names the file
    and what is wrong; see :mod:`analysim.results.format`)."""


class PolicyError(RuntimeError):
    """A policy made a decision the engine refuses (a double-booked GPU, a VC over its limit)."""


def _plain(value: object) -> object:
    """A numpy scalar as the plain Python value it holds (so messages read ``5``, not
    ``np.int64(5)``)."""
    return value.item() if isinstance(value, np.generic) else value


def describe_rows(
    frame: pd.DataFrame,
    mask: Sequence[bool] | pd.Series,
    column: str,
    id_column: str | None,
    beside: str | None = None,
) -> str:
    """Word the offending rows of ``frame`` as ``row 3 (job_id='j3'): -1, ...``; with
    ``beside``, that column's value too (``row 3 (job_id='j3', num_gpus=4): 2``), for a
    value wrong against another of its row.

    Rows are numbered by their position in the input (0-based), which is how the caller can
    find them again in their own table.
    """
    positions = [i for i, bad in enumerate(mask) if bad]
    parts = []
    for pos in positions[:MAX_EXAMPLES]:
        value = _plain(frame[column].iloc[pos]) if column in frame.columns else None
        named = [
            f"{name}={_plain(frame[name].iloc[pos])!r}"
            for name in (id_column, beside)
            if name is not None and name in frame.columns and name != column
        ]
        ident = f" ({', '.join(named)})" if named else ""
        parts.append(f"row {pos}{ident}: {value!r}")
    more = len(positions) - MAX_EXAMPLES
    tail = f", and {more} more" if more > 0 else ""
    return f"{len(positions)} bad row(s): " + ", ".join(parts) + tail
