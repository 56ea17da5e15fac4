"""Who holds which GPU: a node × GPU occupancy heatmap and a Gantt chart of jobs on GPUs.

``occupancy_heatmap`` draws one moment (a ``Result.snapshot(time)`` frame, or
:func:`analysim.results.spells.gpu_snapshot`): one column per node, one row per GPU, coloured by
the VC of the job holding it, free GPUs pale, the cells past the last GPU of a node with fewer
GPUs than others white and hatched ("no GPU"), borrowed GPUs (a job on another VC's node) marked
with a cross; a strip under the grid shows which VC owns each node. In resource mode (a
snapshot with ``milli_used``) a GPU held by shares is filled from the bottom to its milli in
use / 1000, one band per VC of its holders, with a white line between shares.
``gantt`` draws every job's spells on GPUs over time, for small clusters (the ``toy``
teaching mode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib import colors as mcolors
from matplotlib.patches import Patch

from analysim.plotting.base import get_ax, remember
from analysim.plotting.style import COLORBLIND

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result

FREE = "#eeeeee"
NO_OWNER = "#ffffff"
NO_GPU = "#ffffff"  # a cell of the grid past a node's last GPU (nodes with fewer GPUs)
NO_GPU_HATCH = "#c8c8c8"
# seaborn's "colorblind" palette (as for the policies), then its "pastel" and "dark" ones
# (without their greys, which read as free), spelled out: 29 distinct colours, so the VCs of
# every bundled cluster (venus: 19) get one each
VC_COLORS = (
    *COLORBLIND,
    *("#a1c9f4", "#ffb482", "#8de5a1", "#ff9f9b", "#d0bbff", "#debb9b", "#fab0e4", "#fffea3"),
    "#b9f2f0",
    *("#001c7f", "#b1400d", "#12711c", "#8c0800", "#591e71", "#592f0d", "#a23582", "#3c3c3c"),
    *("#b8850a", "#006374"),
)
LABEL_CELLS = 64  # job ids are written in the cells of grids up to this size

MILLI = 1000  # GPU milli in one GPU

__all__ = ["gantt", "no_gpu_patch", "occupancy_heatmap", "share_bands", "vc_palette"]


def vc_palette(vcs: Any) -> dict[str, str]:
    """A fixed colour per VC, in sorted order of the names (the same VCs, the same colours);
    distinct for up to ``len(VC_COLORS)`` (29) VCs, then repeating."""
    names = sorted({str(v) for v in vcs if v is not None and not pd.isna(v)})
    return {vc: VC_COLORS[i % len(VC_COLORS)] for i, vc in enumerate(names)}


def _get_ax(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """``ax``, or the Axes of a new figure in the AnalySIM style (constrained layout: the
    legend beside the grid stays inside the figure)."""
    return get_ax(ax, figsize)


def occupancy_heatmap(
    snapshot: pd.DataFrame,
    ax: Axes | None = None,
    *,
    palette: dict[str, str] | None = None,
    title: str | None = None,
    labels: bool | None = None,
) -> Axes:
    """Draw the GPUs of one moment: nodes across, GPUs up, coloured by the job's VC.

    ``snapshot`` has one row per GPU with ``node, gpu, job_id, job_vc`` and optionally
    ``node_vc`` and ``borrowed``. ``palette`` maps VC names to colours (default
    :func:`vc_palette` of every VC in the frame); ``labels`` writes job ids in the cells
    (default: when the grid has at most 64 cells). Returns the Axes.
    """
    missing = sorted({"node", "gpu", "job_id", "job_vc"} - set(snapshot.columns))
    if missing:
        raise ValueError(f"occupancy_heatmap: the snapshot frame lacks column(s) {missing}")
    nodes = list(dict.fromkeys(snapshot["node"].tolist()))
    column = {n: i for i, n in enumerate(nodes)}
    depth = int(snapshot["gpu"].max()) + 1 if len(snapshot) else 0
    owners = snapshot["node_vc"] if "node_vc" in snapshot.columns else pd.Series(dtype=object)
    palette = palette or vc_palette([*snapshot["job_vc"].tolist(), *owners.tolist()])
    ax = _get_ax(ax, (min(14.0, 2.0 + 0.35 * len(nodes)), 1.6 + 0.3 * depth))
    has_owner = owners.notna().any()
    rows = depth + (1 if has_owner else 0)
    image = np.ones((rows, len(nodes), 3))
    image[:depth] = mcolors.to_rgb(NO_GPU)
    x = snapshot["node"].map(column).to_numpy(dtype=int)
    y = snapshot["gpu"].to_numpy(dtype=int)
    image[y, x] = mcolors.to_rgb(FREE)  # the GPUs each node has; the rest stay "no GPU"
    absent = _absent_cells(x, y, len(nodes), depth)
    vcs = snapshot["job_vc"].to_numpy(dtype=object)
    bands = share_bands(snapshot)
    for i in np.flatnonzero(pd.notna(vcs)):
        if i not in bands:  # a whole GPU (or shares of one VC filling it): the whole cell
            image[y[i], x[i]] = mcolors.to_rgb(palette.get(str(vcs[i]), "#333333"))
    if has_owner:
        first = snapshot.drop_duplicates("node")
        for node, owner in zip(first["node"], first["node_vc"], strict=True):
            color = palette.get(str(owner), NO_OWNER) if pd.notna(owner) else NO_OWNER
            image[depth, column[node]] = mcolors.to_rgb(color)
    ax.imshow(image, aspect="auto", origin="lower", interpolation="nearest")
    ax.grid(False)
    _hatch_absent(ax, absent)
    if "milli_used" in snapshot.columns:
        _draw_shares(ax, snapshot, x, y, bands, palette)
    if "borrowed" in snapshot.columns:
        marked = snapshot["borrowed"].fillna(False).to_numpy(dtype=bool)
        if marked.any():
            ax.scatter(x[marked], y[marked], marker="x", color="black", s=30, linewidths=1.2)
    if labels is None:
        labels = len(snapshot) <= LABEL_CELLS
    if labels:
        every = snapshot["job_ids"] if "job_ids" in snapshot.columns else snapshot["job_id"]
        used = snapshot["milli_used"] if "milli_used" in snapshot.columns else None
        for k, (xi, yi, job) in enumerate(zip(x, y, every.tolist(), strict=True)):
            if job is not None and not pd.isna(job):
                text, color = str(job), "white"
                if used is not None:  # several shares: every id, one per line
                    text = _share_label(text)
                    color = "white" if used.iloc[k] >= MILLI / 2 else "black"
                ax.text(xi, yi, text, ha="center", va="center", fontsize=8, color=color)
    _axes_labels(ax, nodes, depth, has_owner)
    handles = [Patch(color=c, label=vc) for vc, c in palette.items()]
    handles.append(Patch(facecolor=FREE, edgecolor="#999999", label="free"))
    if len(absent):
        handles.append(no_gpu_patch())
    if "borrowed" in snapshot.columns:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], marker="x", color="black", linestyle="", label="borrowed"))
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        ncols=1 + (len(handles) - 1) // 10,
    )
    if title:
        ax.set_title(title)
    return ax


def no_gpu_patch() -> Patch:
    """The legend entry of the cells past a node's last GPU."""
    return Patch(facecolor=NO_GPU, edgecolor=NO_GPU_HATCH, hatch="////", label="no GPU")


def _absent_cells(x: np.ndarray, y: np.ndarray, nodes: int, depth: int) -> np.ndarray:
    """(column, row) of the grid cells that are no GPU: past the last GPU of their node."""
    present = np.zeros((depth, nodes), dtype=bool)
    present[y, x] = True
    rows, columns = np.nonzero(~present)
    return np.column_stack([columns, rows])


def _hatch_absent(ax: Axes, cells: np.ndarray) -> None:
    """Hatch the cells that are no GPU, so that they do not read as free GPUs."""
    if not len(cells):
        return
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    boxes = [Rectangle((cx - 0.5, cy - 0.5), 1.0, 1.0) for cx, cy in cells]
    ax.add_collection(
        PatchCollection(
            boxes,
            facecolor="none",
            edgecolor=NO_GPU_HATCH,
            hatch="////",
            linewidth=0.0,
            label="_no_gpu",
        ),
        autolim=False,
    )


def share_bands(snapshot: pd.DataFrame) -> dict[int, list[tuple[str, float, float]]]:
    """The GPUs of a resource-mode snapshot drawn as bands rather than whole cells: by row
    position, ``(vc, bottom, height)`` of each VC's holders in the order they took the GPU
    (heights in GPUs: milli / 1000, adjacent holders of one VC merged). A GPU filled to
    1000 milli by one VC is not listed (it is drawn whole, like a whole-GPU job); neither
    is a free GPU, nor anything of a whole-GPU snapshot (no ``milli_used`` column)."""
    if "milli_used" not in snapshot.columns:
        return {}
    out: dict[int, list[tuple[str, float, float]]] = {}
    columns = (snapshot[c].tolist() for c in ("job_vcs", "job_milli", "milli_used"))
    for i, (vcs, milli, used) in enumerate(zip(*columns, strict=True)):
        if vcs is None or pd.isna(vcs) or not used:
            continue
        names = str(vcs).split(",")
        if used >= MILLI and len(set(names)) == 1:
            continue
        bands: list[tuple[str, float, float]] = []
        bottom = 0.0
        for vc, m in zip(names, str(milli).split(","), strict=True):
            height = int(m) / MILLI
            if bands and bands[-1][0] == vc:
                bands[-1] = (vc, bands[-1][1], bands[-1][2] + height)
            else:
                bands.append((vc, bottom, height))
            bottom += height
        out[i] = bands
    return out


def _share_label(ids: str, most: int = 3) -> str:
    """The ids of a GPU's holders, one per line (the first ``most``, then ``+n``)."""
    names = ids.split(",")
    shown = names[:most] + ([f"+{len(names) - most}"] if len(names) > most else [])
    return "\n".join(shown)


def _draw_shares(
    ax: Axes,
    snapshot: pd.DataFrame,
    x: np.ndarray,
    y: np.ndarray,
    bands: dict[int, list[tuple[str, float, float]]],
    palette: dict[str, str],
) -> None:
    """The bands of shared GPUs over their (free-coloured) cells, and a white line between
    the shares of a GPU held by several."""
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    boxes, fills = [], []
    for i, parts in bands.items():
        for vc, bottom, height in parts:
            boxes.append(Rectangle((x[i] - 0.5, y[i] - 0.5 + bottom), 1.0, height))
            fills.append(palette.get(vc, "#333333"))
    if boxes:
        ax.add_collection(
            PatchCollection(boxes, facecolors=fills, edgecolors="none", label="_shares"),
            autolim=False,
        )
    lines = []
    for i, milli in enumerate(snapshot["job_milli"].tolist()):
        if milli is None or pd.isna(milli) or "," not in str(milli):
            continue
        level = 0.0
        for m in str(milli).split(",")[:-1]:
            level += int(m) / MILLI
            lines.append([(x[i] - 0.5, y[i] - 0.5 + level), (x[i] + 0.5, y[i] - 0.5 + level)])
    if lines:
        ax.add_collection(
            LineCollection(lines, colors="white", linewidths=1.0, label="_share_edges"),
            autolim=False,
        )


def _axes_labels(ax: Axes, nodes: list[str], depth: int, has_owner: bool) -> None:
    step = max(1, len(nodes) // 30)  # at most ~30 node names along the axis
    ax.set_xticks(range(0, len(nodes), step), [nodes[i] for i in range(0, len(nodes), step)])
    ax.tick_params(axis="x", labelrotation=90 if len(nodes) > 8 else 0)
    ticks = list(range(depth)) + ([depth] if has_owner else [])
    ax.set_yticks(ticks, [str(g) for g in range(depth)] + (["owner"] if has_owner else []))
    ax.set_xlabel("node")
    ax.set_ylabel("GPU")


def gantt(
    result: Result,
    ax: Axes | None = None,
    *,
    cluster: Cluster | None = None,
    now: float | None = None,
    spells: pd.DataFrame | None = None,
    title: str | None = None,
) -> Axes:
    """Jobs on GPUs over time: one row per GPU (``node:gpu``), one bar per spell, coloured
    by job and labelled with its id. A job still running at ``now`` (default: the result's
    end) is drawn up to then, and a dashed line marks ``now`` (in the legend). ``spells``
    defaults to :func:`analysim.results.spells.allocations` of ``result`` on ``cluster``; they are
    recorded for the CSV with ``start_s, end_s`` in seconds. Returns the Axes."""
    from analysim.results.spells import allocations, gpu_snapshot

    if spells is None:
        spells = allocations(result, cluster)
    now = float(result.meta.get("now", 0.0)) if now is None else float(now)
    gpus = gpu_snapshot(result, 0.0, cluster)[["node", "gpu"]]
    rows = {(n, g): i for i, (n, g) in enumerate(zip(gpus["node"], gpus["gpu"], strict=True))}
    ax = _get_ax(ax, (9.0, 1.0 + 0.22 * len(rows)))
    jobs = list(dict.fromkeys(result.jobs["job_id"].tolist()))
    color = {j: VC_COLORS[i % len(VC_COLORS)] for i, j in enumerate(jobs)}
    for job, node, gpu, start, end in zip(
        spells["job_id"], spells["node"], spells["gpu"], spells["start"], spells["end"], strict=True
    ):
        stop = now if pd.isna(end) else float(end)
        row = rows[(node, int(gpu))]
        ax.broken_barh([(start, stop - start)], (row - 0.4, 0.8), color=color[job])
        if stop > start:
            ax.text((start + stop) / 2, row, str(job), ha="center", va="center", fontsize=7)
    ax.axvline(now, color="black", linewidth=1, linestyle="--", label=f"now (t = {now:,.0f} s)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # what the dashed line is
    ax.set_yticks(range(len(rows)), [f"{n}:{g}" for n, g in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, max(now, float(spells["end"].max()) if len(spells) else 0.0, 1.0) * 1.02)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("node:GPU")
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title)
    remember(ax, spells.rename(columns={"start": "start_s", "end": "end_s"}))
    return ax
