"""Summaries as people read them: each metric with its unit, times also in hours or days.

``Result.summary()`` returns a :class:`Summary` (a pandas Series) and ``summary(by=...)`` a
:class:`SummaryTable` (a DataFrame). They hold the plain numbers (seconds for times) and
compute like any Series or DataFrame; only their display changes: in a notebook and in
``print`` each metric shows its unit, and times are shown in a readable unit as well.

>>> res.summary()["avg_jct"]          # 21645.1: seconds, a plain float
>>> res.summary()                     # avg_jct  21,645 s  (6.0 h) ...
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

TIME = "s"
UNITS: dict[str, str] = {
    "avg_jct": TIME,
    "median_jct": TIME,
    "p95_jct": TIME,
    "p99_jct": TIME,
    "avg_queue_delay": TIME,
    "median_queue_delay": TIME,
    "p95_queue_delay": TIME,
    "makespan": TIME,
    "avg_slowdown": "x",  # JCT over run time
    "gpu_utilization": "fraction",
    "borrowed_gpu_hours": "GPU-h",
    "gpu_hours": "GPU-h",
    "share_gpu_hours": "GPU-h",  # all GPU-hours held, times the VC's share of the GPUs
    "avg_fragmented_gpus": "GPUs",
    "avg_frag_index": "0-1",
    "avg_fgd_frag_milli": "milli",
    "idle_while_waiting": "fraction",
    "jain_fairness": "0-1",
    "lost_gpu_seconds": "GPU-s",  # work lost to failures (docs/failures.md)
    "goodput_ratio": "fraction",
    "max_ftf_rho": "x",  # finish-time fairness: JCT over JCT alone on a 1/N share
    "ftf_unfair_share": "fraction",
    "ftf_jain": "0-1",
    "avg_time_to_recover": TIME,  # from a kill to the job's next start
}
"""The unit of each summary metric (``s``: seconds); counts of jobs and events have none."""

# (below this many seconds, unit, seconds per unit); from 2 days on: days
_SPANS = ((120.0, "s", 1.0), (7_200.0, "min", 60.0), (172_800.0, "h", 3_600.0))
DAYS = ("days", 86_400.0)


def readable_unit(seconds: float) -> tuple[str, float]:
    """The unit a span of ``seconds`` reads best in, as (name, seconds per unit): ``s``
    below 2 minutes, ``min`` below 2 hours, ``h`` below 2 days, else ``days`` (NaN: ``s``).
    The one rule behind summaries, plot axes and the explorer."""
    size = abs(float(seconds)) if seconds == seconds else 0.0
    for bound, name, scale in _SPANS:
        if size < bound:
            return name, scale
    return DAYS


def unit_of(metric: str) -> str:
    """The unit of a summary metric (``""`` for one this module does not know)."""
    return UNITS.get(metric, "")


def number(value: Any) -> str:
    """A number as people read it: thousands separated, no exponent, ``-`` for NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value != value:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"


def duration(seconds: float) -> str:
    """Seconds in minutes (from 2 min), hours (from 2 h) or days (from 2 days); ``""`` below
    2 minutes, where seconds read well."""
    name, scale = readable_unit(seconds)
    if seconds != seconds or name == "s":
        return ""
    return f"{seconds / scale:.1f} {name}"


CLOCK_FROM = 3_600.0
"""From this many seconds on, a moment reads as a clock (``[D d ]HH:MM:SS``), below it as
seconds (``t=420 s``)."""


def moment(seconds: float) -> str:
    """A moment of a run, ``seconds`` from its start, as people read it: ``t=420 s`` below
    an hour, ``t=02:15:00`` below a day, ``t=14 d 01:31:52`` from then on (never an
    exponent). :func:`parse_moment` reads every form back."""
    value = float(seconds)
    if value != value or abs(value) < CLOCK_FROM:
        return f"t={value:g} s"
    sign, value = ("-", -value) if value < 0 else ("", value)
    value = round(value, 3)
    whole = int(value)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    fraction = f"{value - whole:.3f}".rstrip("0").rstrip(".")[1:]  # ".5" or ""
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}{fraction}"
    return f"t={sign}{days} d {clock}" if days else f"t={sign}{clock}"


_UNITS = {"s": 1.0, "min": 60.0, "h": 3_600.0, "d": 86_400.0, "days": 86_400.0}
_MOMENT = re.compile(
    r"^\s*(t\s*=\s*)?(?:(?P<days>\d+)\s*d\s+)?(?P<clock>\d+:\d{1,2}:\d{1,2}(\.\d+)?)\s*$"
)
_AMOUNT = re.compile(r"^\s*(t\s*=\s*)?(?P<number>[0-9.,eE+-]+)\s*(?P<unit>[a-z]*)\s*$")


def parse_moment(text: str, name: str = "time") -> float:
    """Seconds from ``text``: a number of seconds (``1215112``, ``420 s``), an amount with a
    unit (``2.3 h``, ``45 min``, ``14 d``) or a clock as :func:`moment` writes it
    (``02:15:00``, ``14 d 01:31:52``, with or without ``t=``). A ValueError naming ``name``
    otherwise."""
    clock = _MOMENT.match(text)
    if clock:
        hours, minutes, secs = (float(part) for part in clock["clock"].split(":"))
        if minutes >= 60 or secs >= 60:
            raise ValueError(f"{name}: minutes and seconds go up to 59 in {text!r}")
        return int(clock["days"] or 0) * 86_400.0 + hours * 3_600 + minutes * 60 + secs
    amount = _AMOUNT.match(text)
    if amount and (amount["unit"] or "s") in _UNITS:
        try:
            number = float(amount["number"].replace(",", ""))
        except ValueError:
            number = float("nan")
        if number == number:
            return number * _UNITS[amount["unit"] or "s"]
    raise ValueError(
        f"{name}: {text!r} is not a time; give seconds (1215112), an amount with a unit "
        "(2.3 h, 45 min, 14 d) or a clock (14 d 01:31:52)"
    )


def readable(metric: str, value: Any) -> str:
    """One metric's value with its unit: ``"21,645 s (6.0 h)"``, ``"0.838 fraction"``."""
    text = number(value)
    unit = unit_of(metric)
    if unit == TIME and isinstance(value, (int, float)) and value == value:
        extra = duration(float(value))
        return f"{text} s ({extra})" if extra else f"{text} s"
    return f"{text} {unit}".rstrip() if text != "-" else text


def summary_text(summary: pd.Series) -> pd.Series:
    """A summary Series as text: each value with its unit."""
    return pd.Series(
        [readable(str(m), v) for m, v in summary.items()], index=summary.index, name=summary.name
    )


def table_text(table: pd.DataFrame) -> pd.DataFrame:
    """A per-VC or per-user summary as text: times in hours, columns named with units."""
    shown = {}
    for metric in table.columns:
        unit = unit_of(str(metric))
        values = table[metric]
        if unit == TIME:
            shown[f"{metric} (h)"] = (values.astype(float) / 3_600.0).map(number)
        else:
            shown[f"{metric} ({unit})" if unit else str(metric)] = values.map(number)
    return pd.DataFrame(shown, index=table.index)


class Summary(pd.Series):
    """A summary Series that shows each metric with its unit (the values stay plain numbers:
    seconds for times)."""

    @property
    def _constructor(self) -> type[pd.Series]:
        return pd.Series  # arithmetic and selections give plain Series

    def __repr__(self) -> str:
        return summary_text(self).to_string()

    def _repr_html_(self) -> str:
        return summary_text(self).to_frame("value").to_html()


class SummaryTable(pd.DataFrame):
    """A per-VC or per-user summary DataFrame that shows times in hours and names each
    column's unit (the values stay plain numbers: seconds for times)."""

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    def __repr__(self) -> str:
        return table_text(self).to_string()

    def _repr_html_(self) -> str:
        return table_text(self).to_html()
