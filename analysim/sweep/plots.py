"""Plots of a sweep frame, seaborn style: axes-level functions taking the frame, column names
and ``ax=None``, returning the Axes.

Rows whose ``status`` is not ``ok`` are left out (and counted in a log line); repeated rows
of one point (the seeds) are averaged, with a confidence band or error bars over them.

>>> frame = asim.sweep({"scheduler": ["fifo", "las"], "workload.load_scale": [0.6, 0.8, 1.0]},
...                    workload="venus", seeds=range(3))
>>> asim.sweep.plots.metric_vs(frame, x="workload.load_scale", y="avg_jct", hue="scheduler")
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.sweep.report import parameter_columns

if TYPE_CHECKING:
    from matplotlib.axes import Axes

log = logging.getLogger("analysim.sweep")

LABELS = {
    "avg_jct": "average JCT (s)",
    "median_jct": "median JCT (s)",
    "p95_jct": "95th percentile JCT (s)",
    "p99_jct": "99th percentile JCT (s)",
    "avg_queue_delay": "average queueing delay (s)",
    "median_queue_delay": "median queueing delay (s)",
    "p95_queue_delay": "95th percentile queueing delay (s)",
    "avg_slowdown": "average slowdown",
    "makespan": "makespan (s)",
    "gpu_utilization": "GPU utilisation",
    "preemptions": "preemptions",
    "preempted_jobs": "preempted jobs",
    "workload.load_scale": "load scale (x the preset's arrival rate)",
}


def finished_rows(data: pd.DataFrame, columns: list[str | None]) -> pd.DataFrame:
    """The ``ok`` rows of a sweep frame, after checking that ``columns`` exist."""
    if not isinstance(data, pd.DataFrame):
        raise ValueError(
            f"expected the DataFrame analysim.sweep returned, got {type(data).__name__}"
        )
    missing = [c for c in columns if c is not None and c not in data.columns]
    if missing:
        raise ValueError(f"the sweep frame has no column(s) {missing}; it has {list(data.columns)}")
    ok = data[data["status"] == "ok"] if "status" in data.columns else data
    if len(ok) < len(data):
        log.info("plot: leaving out %d failed run(s) of %d", len(data) - len(ok), len(data))
    if ok.empty:
        raise ValueError("the sweep frame has no finished (status 'ok') runs to plot")
    return ok


def unshown_parameters(rows: pd.DataFrame, shown: list[str | None]) -> list[str]:
    """The sweep's parameter columns that take several values in ``rows`` but are not among
    ``shown``: a plot that averaged over them would pool different configurations."""
    if "seed" not in rows.columns:
        return []
    return [
        column
        for column in parameter_columns(rows)
        if column not in shown and rows[column].astype(str).nunique() > 1
    ]


def _refuse_pooling(rows: pd.DataFrame, shown: list[str | None], how: str) -> None:
    unshown = unshown_parameters(rows, shown)
    if unshown:
        values = {c: sorted(rows[c].astype(str).unique()) for c in unshown}
        raise ValueError(
            f"the frame's runs also differ in {values}, which this plot does not show: "
            f"{how}, or plot a subset (frame[frame[...] == ...])"
        )


def _label(ax: Axes, x: str, y: str) -> None:
    ax.set_xlabel(LABELS.get(x, x))
    ax.set_ylabel(LABELS.get(y, y))


def metric_vs(
    data: pd.DataFrame,
    *,
    x: str = "workload.load_scale",
    y: str = "avg_jct",
    hue: str | None = "scheduler",
    style: str | None = None,
    errorbar: Any = ("ci", 95),
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """A metric against a numeric parameter: one line per ``hue`` (and ``style``) value, the
    mean over seeds with a band (``errorbar``, as in ``seaborn.lineplot``: ``("ci", 95)``,
    ``"sd"``, ``None``). Extra keywords go to ``seaborn.lineplot``.

    Runs are never pooled across a parameter the plot does not show: one other parameter
    that varies becomes the line ``style`` (dashes and markers) when ``style`` is free;
    more, and the call is refused with a ``ValueError`` that names them."""
    import seaborn as sns

    rows = finished_rows(data, [x, y, hue, style])
    unshown = unshown_parameters(rows, [x, hue, style])
    if style is None and len(unshown) == 1:
        style = unshown[0]
    _refuse_pooling(rows, [x, hue, style], "give it as hue= or style=")
    ax = sns.lineplot(
        data=rows,
        x=x,
        y=y,
        hue=hue,
        style=style,
        errorbar=errorbar,
        marker="o",
        seed=0,  # the bootstrap of the confidence band: byte-stable figures
        ax=ax,
        **kwargs,
    )
    _label(ax, x, y)
    return ax


def jct_vs_load(data: pd.DataFrame, *, ax: Axes | None = None, **kwargs: Any) -> Axes:
    """Average JCT against ``workload.load_scale``, a line per scheduler, a 95% confidence
    band over seeds (:func:`metric_vs` with those defaults: one other parameter that varies,
    such as ``preemption``, is told apart by line style)."""
    return metric_vs(data, x="workload.load_scale", y="avg_jct", hue="scheduler", ax=ax, **kwargs)


def metric_bars(
    data: pd.DataFrame,
    *,
    x: str = "scheduler",
    y: str = "avg_jct",
    hue: str | None = None,
    errorbar: Any = ("ci", 95),
    ax: Axes | None = None,
    **kwargs: Any,
) -> Axes:
    """A metric per value of a categorical parameter (bars: the mean over seeds, with error
    bars), optionally split by ``hue`` (e.g. ``"preemption"``). Extra keywords go to
    ``seaborn.barplot``. One other parameter that varies becomes the ``hue`` when ``hue``
    is free; more, and the call is refused (runs are never pooled across them)."""
    import seaborn as sns

    rows = finished_rows(data, [x, y, hue])
    unshown = unshown_parameters(rows, [x, hue])
    if hue is None and len(unshown) == 1:
        hue = unshown[0]
    _refuse_pooling(rows, [x, hue], "give it as hue=")
    ax = sns.barplot(data=rows, x=x, y=y, hue=hue, errorbar=errorbar, seed=0, ax=ax, **kwargs)
    _label(ax, x, y)
    return ax
