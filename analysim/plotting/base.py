"""What every plot function shares: the results it accepts, its Axes, the data it drew.

Plot functions accept one :class:`~analysim.results.result.Result`, a dict ``{label: Result}`` or a
list of results (labelled from their configs). Each records the tidy numbers it drew on the
Axes (:func:`remember`), so :func:`~analysim.plotting.save.save_figure` can write them as the
CSV behind the figure without the caller collecting them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from analysim.results.result import Result

Results = "Result | Mapping[str, Result] | Sequence[Result]"

_DATA_ATTR = "_analysim_data"


def run_label(result: Result) -> str:
    """A short label of a run from its config: ``"las+preemption"``, ``"fifo"``."""
    config = result.config
    scheduler = config.get("scheduler", "run")
    name = scheduler if isinstance(scheduler, str) else dict(scheduler).get("name", "custom")
    switches = [s for s in ("preemption", "migration", "borrowing") if config.get(s)]
    return "+".join([name, *switches])


def as_results(results: Any) -> dict[str, Result]:
    """``{label: Result}`` from one result, a dict of them or a list of them."""
    from analysim.results.result import Result

    if isinstance(results, Result):
        return {run_label(results): results}
    if isinstance(results, Mapping):
        out = dict(results)
    elif isinstance(results, Sequence) and not isinstance(results, str):
        out = {}
        for result in results:
            label = run_label(result) if isinstance(result, Result) else str(result)
            if label in out:
                label = f"{label} ({sum(k.startswith(label) for k in out) + 1})"
            out[label] = result
    else:
        raise TypeError(
            f"expected a Result, a dict of label -> Result or a list of Results, "
            f"got {type(results).__name__}"
        )
    if not out:
        raise ValueError("no results to plot")
    for label, result in out.items():
        if not isinstance(result, Result):
            raise TypeError(f"results[{label!r}] is a {type(result).__name__}, not a Result")
    return {str(label): result for label, result in out.items()}


def new_figure(
    figsize: tuple[float, float], nrows: int = 1, ncols: int = 1, **subplots: Any
) -> tuple[Figure, Any]:
    """A new figure (through pyplot, so notebooks show it) and its Axes (one Axes, or an
    array as ``Figure.subplots`` returns), drawn in the AnalySIM style
    (:data:`~analysim.plotting.style.RC`)."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from analysim.plotting.style import RC

    with mpl.rc_context(RC):
        fig = plt.figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(nrows, ncols, **subplots)
    return fig, axes


def get_ax(ax: Axes | None, figsize: tuple[float, float] = (6.0, 4.0)) -> Axes:
    """``ax``, or the Axes of a new figure of ``figsize`` inches."""
    return ax if ax is not None else new_figure(figsize)[1]


def remember(ax: Axes, data: pd.DataFrame) -> None:
    """Record the tidy numbers drawn on ``ax`` (added to any recorded before)."""
    frames = getattr(ax, _DATA_ATTR, [])
    frames.append(data.reset_index(drop=True))
    setattr(ax, _DATA_ATTR, frames)


def plotted_data(target: Axes | Figure) -> pd.DataFrame:
    """The numbers drawn on an Axes, or on every Axes of a figure (with a ``panel`` column
    numbering the Axes when there are several); empty if none were recorded."""
    axes = getattr(target, "axes", None)
    axes = [target] if axes is None or not isinstance(axes, list) else axes
    frames = []
    for number, ax in enumerate(axes):
        recorded = getattr(ax, _DATA_ATTR, [])
        if not recorded:
            continue
        frame = pd.concat(recorded, ignore_index=True)
        if len(axes) > 1:
            frame.insert(0, "panel", number)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
