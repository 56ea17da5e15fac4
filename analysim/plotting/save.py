"""Byte-stable figure files: SVG + PNG + the CSV of the numbers behind the figure.

Saving the same figure twice gives identical bytes: the SVG's ids come from a fixed
``svg.hashsalt`` (clip paths are renumbered in order), neither file records a date or a
software version, the PNG is rendered by Agg (matplotlib's PNG canvas, whatever the
interactive backend) at a fixed dpi, and the CSV is written with a fixed float format and
``\\n`` line ends.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib as mpl
import pandas as pd

from analysim.inputs.validation import writable_output
from analysim.plotting.base import plotted_data
from analysim.plotting.bounds import check_inside, wrap_wide_titles
from analysim.plotting.style import RC

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 100
FLOAT_FORMAT = "%.6g"
SVG_METADATA = {"Date": None, "Creator": None, "Contributor": None, "Format": None, "Type": None}
PNG_METADATA = {"Software": None}
_CLIP_ID = re.compile(r"\bp[0-9a-f]{10}\b")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_csv(data: pd.DataFrame, path: str | Path) -> Path:
    """``data`` as CSV with the fixed float format (no index unless it is named)."""
    path = Path(path)
    keep_index = any(name is not None for name in data.index.names)
    text = data.to_csv(index=keep_index, float_format=FLOAT_FORMAT, lineterminator="\n")
    path.write_text(text)
    return path


def save_figure(
    fig: Figure,
    name: str,
    folder: str | Path = "figures",
    *,
    data: pd.DataFrame | None = None,
    formats: tuple[str, ...] = ("svg", "png"),
    dpi: int = DPI,
) -> list[Path]:
    """Write ``fig`` as ``folder/name.svg`` and ``.png`` and the numbers behind it as
    ``folder/name.csv``; return the paths written.

    ``data`` defaults to what the analysim plot functions recorded on the figure's Axes (no
    CSV when there is none). ``name`` is a plain file stem (letters, digits, ``_.-``).
    A title wider than the figure is wrapped; a legend, title, axis label or tick label that
    would still be cut off at the figure's edge raises
    :class:`~analysim.plotting.bounds.FigureLayoutError` naming it, and nothing is written.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"save_figure: name must be a plain file name stem, got {name!r}")
    unknown = sorted(set(formats) - {"svg", "png"})
    if unknown:
        raise ValueError(f"save_figure: formats must be 'svg' and/or 'png', got {unknown}")
    folder = Path(folder).expanduser()
    with mpl.rc_context(RC):
        wrap_wide_titles(fig)  # a title wider than the figure: on two lines, not cut
        check_inside(fig, f"save_figure {name}")
    writable_output(folder, "save_figure: folder", folder=True)  # names a file or read-only one
    written = []
    with mpl.rc_context(RC):
        if "svg" in formats:
            path = folder / f"{name}.svg"
            fig.savefig(path, format="svg", metadata=SVG_METADATA, dpi=dpi)
            path.write_text(_renumber_clips(path.read_text()))
            written.append(path)
        if "png" in formats:
            path = folder / f"{name}.png"
            fig.savefig(path, format="png", metadata=PNG_METADATA, dpi=dpi)
            written.append(path)
    data = plotted_data(fig) if data is None else data
    if not data.empty:
        written.append(write_csv(data, folder / f"{name}.csv"))
    return written


def _renumber_clips(svg: str) -> str:
    """Clip-path ids numbered in order of appearance: matplotlib hashes each clip box's exact
    floats, which can differ in the last bits between two layouts of one figure even when
    every coordinate written is the same."""
    numbers: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return numbers.setdefault(match.group(0), f"clip{len(numbers) + 1}")

    return _CLIP_ID.sub(number, svg)
