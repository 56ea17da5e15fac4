"""Nothing drawn outside the picture: find the legends, titles, axis labels and tick labels
that extend past a figure's edges (and so are cut off in the saved file), and move the
subplots' edges to make room for them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TOLERANCE = 1.0  # pixels: anti-aliasing may spill a pixel past an edge

__all__ = [
    "FigureLayoutError",
    "check_inside",
    "fit_margins",
    "laid_out_renderer",
    "outside_figure",
    "wrap_wide_titles",
]


class FigureLayoutError(ValueError):
    """A figure would be saved with a legend, title or tick label cut off at its edge."""


def _texts(fig: Figure) -> list[tuple[str, Any]]:
    """The artists that must show whole: (what it is, the artist)."""
    found: list[tuple[str, Any]] = []
    if fig._suptitle is not None:  # noqa: SLF001 - matplotlib keeps it only there
        found.append(("suptitle", fig._suptitle))  # noqa: SLF001
    found += [("figure legend", legend) for legend in fig.legends]
    found += [("figure text", text) for text in fig.texts if text is not fig._suptitle]  # noqa: SLF001
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"axes {k}"
        for title in (ax.title, ax._left_title, ax._right_title):  # noqa: SLF001
            found.append((f"{where} title", title))
        found.append((f"{where} x label", ax.xaxis.label))
        found.append((f"{where} y label", ax.yaxis.label))
        for axis in (ax.xaxis, ax.yaxis):  # the ticks drawn (in view), not all located
            for tick in axis._update_ticks():  # noqa: SLF001
                found += [(f"{where} tick label", t) for t in (tick.label1, tick.label2)]
        if ax.get_legend() is not None:
            found.append((f"{where} legend", ax.get_legend()))
    return found


def laid_out_renderer(fig: Figure) -> Any:
    """A renderer of ``fig`` after laying it out as it will be saved (Agg, as PNGs are)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    return fig.canvas.get_renderer()


def outside_figure(fig: Figure) -> list[str]:
    """What extends past the figure's edges, one line each (``[]`` when everything shows):
    every legend, title, axis label and visible tick label with text, by
    ``artist.get_window_extent(renderer)`` against ``fig.bbox``."""
    renderer = laid_out_renderer(fig)
    box = fig.bbox
    problems = []
    for what, artist in _texts(fig):
        if not artist.get_visible():
            continue
        text = artist.get_text() if hasattr(artist, "get_text") else "legend"
        if not text:
            continue
        extent = artist.get_window_extent(renderer)
        if extent.width == 0 and extent.height == 0:
            continue
        over = {
            "left": box.x0 - extent.x0,
            "right": extent.x1 - box.x1,
            "bottom": box.y0 - extent.y0,
            "top": extent.y1 - box.y1,
        }
        sides = [f"{side} by {px:.0f} px" for side, px in over.items() if px > TOLERANCE]
        if sides:
            problems.append(f"{what} {str(text)[:40]!r} is cut off at the {', '.join(sides)}")
    return problems


def check_inside(fig: Figure, name: str = "figure") -> None:
    """Raise :class:`FigureLayoutError` naming what :func:`outside_figure` finds."""
    problems = outside_figure(fig)
    if problems:
        raise FigureLayoutError(f"{name}: " + "; ".join(problems))


def wrap_wide_titles(fig: Figure, margin: float = 4.0) -> None:
    """Break a line of an axes title (or of the suptitle) that would extend past the
    figure's edges into lines that fit (a title is centred on its axes or on the figure)."""
    import textwrap

    renderer = laid_out_renderer(fig)
    titles = [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title)]  # noqa: SLF001
    if fig._suptitle is not None:  # noqa: SLF001
        titles.append(fig._suptitle)  # noqa: SLF001
    box = fig.bbox
    for title in titles:
        text = title.get_text()
        if not text or not title.get_visible():
            continue
        extent = title.get_window_extent(renderer)
        if extent.x0 >= box.x0 + margin and extent.x1 <= box.x1 - margin:
            continue
        middle = (extent.x0 + extent.x1) / 2
        if title.get_horizontalalignment() == "left":
            room = box.x1 - margin - extent.x0
        else:
            room = 2 * min(middle - box.x0, box.x1 - middle) - 2 * margin
        lines = text.split("\n")
        longest = max(len(line) for line in lines)
        chars = max(20, int(longest * room / extent.width) - 1)
        wrapped = [part for line in lines for part in textwrap.wrap(line, chars) or [""]]
        title.set_text("\n".join(wrapped))


def fit_margins(
    fig: Figure,
    *,
    sides: tuple[str, ...] = ("left", "right", "bottom", "top"),
    rounds: int = 3,
    pad: float = 4.0,
) -> None:
    """Move the subplots' edges on ``sides`` inwards until every title, axis label, tick
    label and axes legend (anchored to its axes, so it moves with them) ends ``pad`` pixels
    inside the figure; wide titles are wrapped first (:func:`wrap_wide_titles`)."""
    wrap_wide_titles(fig)
    for _ in range(rounds):
        renderer = laid_out_renderer(fig)
        box = fig.bbox
        over = dict.fromkeys(("left", "right", "bottom", "top"), 0.0)
        for what, artist in _texts(fig):
            if what.startswith("figure") or what == "suptitle" or not artist.get_visible():
                continue
            if hasattr(artist, "get_text") and not artist.get_text():
                continue
            e = artist.get_window_extent(renderer)
            over["left"] = max(over["left"], box.x0 + pad - e.x0)
            over["right"] = max(over["right"], e.x1 - box.x1 + pad)
            over["bottom"] = max(over["bottom"], box.y0 + pad - e.y0)
            over["top"] = max(over["top"], e.y1 - box.y1 + pad)
        moves = {side: px for side, px in over.items() if side in sides and px > 0.5}
        if not moves:
            return
        p = fig.subplotpars
        edges = {"left": p.left, "right": p.right, "bottom": p.bottom, "top": p.top}
        edges["left"] += moves.get("left", 0.0) / box.width
        edges["right"] -= moves.get("right", 0.0) / box.width
        edges["bottom"] += moves.get("bottom", 0.0) / box.height
        edges["top"] -= moves.get("top", 0.0) / box.height
        if edges["right"] - edges["left"] < 0.2 or edges["top"] - edges["bottom"] < 0.2:
            return  # no room left: the check (outside_figure) will say what is cut
        fig.subplots_adjust(**edges)
