"""The explorer's figures, sized to be read on a projector: the JCT CDF, the timelines with
the slider's moment marked, the cluster at a moment (aggregated beyond a few hundred nodes;
in resource mode a shared GPU filled, or faded, to its milli in use) and the step-through
Gantt chart coloured like the heatmap."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib import colors as mcolors
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysim.explorer.units import time_unit
from analysim.plotting.bounds import fit_margins
from analysim.plotting.occupancy import FREE, MILLI, occupancy_heatmap, vc_palette
from analysim.plotting.style import colors_for

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result

DPI = 100
WIDE = 11.0  # inches: 1,100 px, the width of a notebook's output area at 1280 px
FONT = {"font.size": 14, "axes.titlesize": 15, "axes.labelsize": 14, "legend.fontsize": 13}
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)))
TIMELINE_LEFT, TIMELINE_RIGHT = 0.07, 0.98
"""Where the timelines' axes start and end, as fractions of the figure's width (the time
slider under them is placed to match)."""
PREEMPTED = {"marker": "v", "color": "black"}
"""The mark at the end of a Gantt bar that a preemption (or a reclaim) cut short."""
DETAILED_NODES = 160
"""Clusters with more nodes are drawn wrapped: rows of nodes, one pixel row per GPU."""
WRAP = 100  # nodes per row of the wrapped heatmap
TIMELINES = (
    ("utilization", "GPU utilisation (%)", 100.0),
    ("waiting_jobs", "waiting jobs", 1.0),
    ("fragmented_gpus", "fragmented GPUs", 1.0),
)
LEGEND_LINE = 0.27  # inches per line of a legend under or over the axes
LEGEND_CHARS = 44  # characters per line of a run's name in a legend
FGD_TIMELINE = ("fgd_frag_milli", "FGD fragmentation (GPUs: milli / 1000)", 1.0 / MILLI)
"""The panel added under the others when a run shown is in resource mode."""


def figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI)
    return fig


def image(fig: Figure, fmt: str = "png") -> bytes:
    """The figure as PNG or SVG bytes."""
    from matplotlib import rc_context

    buffer = io.BytesIO()
    with rc_context(FONT):
        fig.savefig(buffer, format=fmt, dpi=DPI)
    return buffer.getvalue()


def _styled(labels: list[str]) -> dict[str, dict[str, Any]]:
    colors = colors_for(labels)
    return {
        label: {"color": colors[label], "linestyle": LINESTYLES[i % len(LINESTYLES)]}
        for i, label in enumerate(labels)
    }


def cdf_figure(runs: dict[str, Result]) -> Figure:
    """The JCT CDF of each run (finished jobs), in hours or days as natural; the legend
    under the axes, one run a line (long names wrapped), so it never covers the curves or
    the y label."""
    from matplotlib import rc_context

    names = {label: legend_label(label) for label in runs}
    lines = sum(name.count("\n") + 1 for name in names.values())
    with rc_context(FONT):
        height = 3.9 + LEGEND_LINE * lines
        fig = figure(5.4, height)
        ax = fig.add_subplot()
        bottom = (0.75 + LEGEND_LINE * lines + 0.1) / height
        fig.subplots_adjust(left=0.15, right=0.97, top=1 - 0.4 / height, bottom=bottom)
        jcts = {
            k: np.sort(r.jobs.loc[r.jobs["status"] == "done", "jct"].to_numpy())
            for k, r in runs.items()
        }
        longest = max((float(np.percentile(j, 90)) for j in jcts.values() if len(j)), default=0.0)
        unit, size = time_unit(longest)
        for label, style in _styled(list(runs)).items():
            jct = jcts[label]
            if len(jct):
                fraction = np.arange(1, len(jct) + 1) / len(jct)
                ax.step(
                    jct / size,
                    fraction * 100,
                    where="post",
                    label=names[label],
                    linewidth=2,
                    **style,
                )
        if len(runs) and any(len(j) for j in jcts.values()):
            ax.set_xscale("log")
            _plain_log_ticks(ax, [j / size for j in jcts.values() if len(j)])
            fig.legend(
                *ax.get_legend_handles_labels(),
                loc="lower left",
                bbox_to_anchor=(0.02, 0.01),
                fontsize=13 if len(runs) <= 3 else 11,
                frameon=False,
            )
        else:
            ax.text(
                0.5, 0.5, "no finished job yet", ha="center", va="center", transform=ax.transAxes
            )
        ax.set_xlabel(f"job completion time ({unit}, log scale)")
        ax.set_ylabel("jobs finished (%)")
        ax.set_title("JCT distribution")
        ax.grid(alpha=0.3)
    return fig


def legend_label(label: str, width: int = LEGEND_CHARS) -> str:
    """A run's name for a legend: broken at spaces into lines of at most ``width``
    characters (``las + preemption + LAS queues at ...``)."""
    import textwrap

    return "\n".join(textwrap.wrap(label, width, break_on_hyphens=False)) or label


def _plain_log_ticks(ax: Any, values: list[np.ndarray]) -> None:
    """Log-axis ticks written as plain numbers (0.1, 1, 10; and 2, 5 within a short range)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    low = min(float(v[v > 0].min()) for v in values if (v > 0).any())
    high = max(float(v.max()) for v in values)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    short = high / max(low, 1e-12) < 30
    ax.xaxis.set_minor_formatter(
        FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else "")
        if short
        else NullFormatter()
    )


def timeline_figure(runs: dict[str, Result], moment: float | None, end: float) -> Figure:
    """Utilisation, waiting jobs and fragmented GPUs over time, one line per run, sharing
    a time axis from 0 to ``end`` (natural unit) with ``moment`` marked by a red line; with
    a run in resource mode also FGD's fragmentation (``fgd_frag_milli`` / 1000)."""
    from matplotlib import rc_context

    unit, size = time_unit(end)
    panels = TIMELINES
    if any("fgd_frag_milli" in r.timeline.columns for r in runs.values()):
        panels = (*TIMELINES, FGD_TIMELINE)
    with rc_context(FONT):
        columns = min(len(runs), 4) or 1
        rows = -(-len(runs) // columns)
        extra = 1.5 * (len(panels) - len(TIMELINES))
        fig = figure(WIDE, 5.0 + extra + 0.3 * (rows - 1))
        axes = fig.subplots(len(panels), 1, sharex=True)
        fig.subplots_adjust(
            left=TIMELINE_LEFT, right=TIMELINE_RIGHT, top=0.95, bottom=0.11, hspace=0.42
        )
        styles = _styled(list(runs))
        for ax, (column, title, scale) in zip(axes, panels, strict=True):
            for label, result in runs.items():
                rows = result.timeline[result.timeline["vc"] == "(all)"]
                if column in rows.columns:  # a sample holds until the next one: steps
                    ax.plot(
                        rows["time"] / size,
                        rows[column] * scale,
                        label=legend_label(label),
                        linewidth=1.6,
                        drawstyle="steps-post",
                        **styles[label],
                    )
            ax.set_title(title, loc="left", fontsize=14, pad=3)
            ax.set_ylim(bottom=0, top=max(ax.get_ylim()[1], 1.0))
            ax.grid(alpha=0.3)
            if moment is not None:
                ax.axvline(moment / size, color="#c00000", linewidth=2)
        axes[0].set_xlim(0, end / size)
        axes[-1].set_xlabel(f"time ({unit}); the red line is the moment shown below")
        if runs:  # above the panels, right-aligned, in rows of at most 4 runs
            _legend_above(fig, axes[0], columns)
    return fig


def _legend_above(fig: Figure, ax: Any, columns: int) -> None:
    """The runs' legend above the panels, right-aligned, in as many columns (at most
    ``columns``) as fit the figure's width; the panels start under it."""
    from analysim.plotting.bounds import laid_out_renderer

    handles, names = ax.get_legend_handles_labels()
    for ncols in range(columns, 0, -1):
        legend = fig.legend(
            handles,
            names,
            loc="upper right",
            bbox_to_anchor=(TIMELINE_RIGHT, 1.0),
            ncols=ncols,
            frameon=False,
        )
        extent = legend.get_window_extent(laid_out_renderer(fig))
        if extent.x0 >= fig.bbox.x0 + 2 or ncols == 1:
            break
        legend.remove()
    top = 1 - (extent.height + 0.35 * DPI) / fig.bbox.height  # and the first panel's title
    fig.subplots_adjust(top=min(fig.subplotpars.top, top))


def heatmap_figure(snapshot: pd.DataFrame, vcs: Any, title: str) -> Figure:
    """The cluster at a moment: the detailed node x GPU grid up to ``DETAILED_NODES`` nodes,
    otherwise nodes wrapped in rows of ``WRAP`` (one pixel row per GPU)."""
    from matplotlib import rc_context

    palette = vc_palette(vcs)
    nodes = snapshot["node"].nunique()
    with rc_context(FONT):
        if nodes <= DETAILED_NODES:
            fig = figure(WIDE, 3.6)
            fig.subplots_adjust(left=0.09, right=0.77, top=0.88, bottom=0.27)
            ax = fig.add_subplot()
            occupancy_heatmap(
                snapshot, ax=ax, palette=_legend_limit(palette, snapshot), title=title
            )
            for text in ax.texts:  # job ids in the cells: readable from the back of a room
                text.set_fontsize(12)
            legend = ax.get_legend()
            if legend is not None:
                for text in legend.get_texts():
                    text.set_fontsize(12)
            if nodes > 60:  # node names every few nodes, small enough not to collide
                ax.tick_params(axis="x", labelsize=9)
            fit_margins(fig)  # the legend's columns, the node names and the title inside
            return fig
        return _wrapped_heatmap(snapshot, palette, title)


def _legend_limit(palette: dict[str, str], snapshot: pd.DataFrame) -> dict[str, str]:
    """At most 20 VCs in the legend: those holding GPUs now, then the owners."""
    if len(palette) <= 20:
        return palette
    used = [vc for vc in palette if vc in set(snapshot["job_vc"].dropna())]
    return {vc: palette[vc] for vc in used[:20]}


def _wrapped_heatmap(snapshot: pd.DataFrame, palette: dict[str, str], title: str) -> Figure:
    names = list(dict.fromkeys(snapshot["node"].tolist()))
    column = {n: i for i, n in enumerate(names)}
    depth = int(snapshot["gpu"].max()) + 1
    bands = -(-len(names) // WRAP)
    band_rows = depth + 1  # a white row between bands
    picture = np.ones((bands * band_rows, WRAP, 3))
    index = snapshot["node"].map(column).to_numpy(dtype=int)
    band, x = np.divmod(index, WRAP)
    y = band * band_rows + snapshot["gpu"].to_numpy(dtype=int)
    free = mcolors.to_rgb(FREE)
    picture[y, x] = free
    vcs = snapshot["job_vc"].to_numpy(dtype=object)
    shared = "milli_used" in snapshot.columns  # resource mode: shares fill part of a GPU
    fill = snapshot["milli_used"].to_numpy(dtype=float) / MILLI if shared else None
    for vc, color in palette.items():
        held = vcs == vc
        if fill is None:
            picture[y[held], x[held]] = mcolors.to_rgb(color)
        else:  # the VC's colour faded towards free as the GPU's milli in use falls
            part = np.minimum(fill[held], 1.0)[:, None]
            picture[y[held], x[held]] = np.add(
                free, (np.subtract(mcolors.to_rgb(color), free)) * part
            )
    fig = figure(WIDE, max(3.6, 0.9 + 0.045 * bands * band_rows))
    fig.subplots_adjust(left=0.16, right=0.8, top=0.9, bottom=0.12)
    ax = fig.add_subplot()
    ax.imshow(picture, aspect="auto", interpolation="nearest")
    ticks = [b * band_rows + depth / 2 for b in range(bands)]
    ax.set_yticks(
        ticks,
        [f"{names[b * WRAP]} …" if b * WRAP < len(names) else "" for b in range(bands)],
        fontsize=9,
    )
    ax.set_xticks(range(0, WRAP, 10), [f"+{k}" for k in range(0, WRAP, 10)])
    ax.set_xlabel(f"node (rows of {WRAP}; each node is a column of {depth} GPU rows at most)")
    used = int(pd.notna(vcs).sum())
    worth = f" ({fill.sum():,.1f} GPUs of milli in use)" if fill is not None else ""
    ax.set_title(
        f"{title}: {used:,} of {len(snapshot):,} GPUs in use{worth} on {len(names):,} nodes"
    )
    handles = [Patch(color=c, label=vc) for vc, c in _legend_limit(palette, snapshot).items()]
    handles.append(Patch(facecolor=FREE, edgecolor="#999999", label="free"))
    if (snapshot.groupby("node")["gpu"].count() < depth).any():  # white, as drawn here
        handles.append(Patch(facecolor="white", edgecolor="#999999", label="no GPU"))
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=12,
        ncols=1 + (len(handles) - 1) // 14,
    )
    fit_margins(fig)
    return fig


def waiting_spells(events: pd.DataFrame, now: float) -> pd.DataFrame:
    """When each job waited up to ``now``: ``job_id, vc, num_gpus, start, end`` (end NaN
    while it still waits): from its submission, preemption or reclaim to its (re)start."""
    rows, since, info = [], {}, {}
    for time, kind, job, vc, gpus in zip(
        events["time"],
        events["event"].astype(str),
        events["job_id"],
        events["vc"],
        events["num_gpus"],
        strict=True,
    ):
        if time > now + 1e-9:
            break
        info[job] = (vc, gpus)
        if kind in ("submit", "preempt", "reclaim", "fail"):
            since.setdefault(job, float(time))
        elif kind in ("start", "resume", "unschedulable") and job in since:
            start = since.pop(job)
            if time > start:
                rows.append((job, *info[job], start, float(time)))
    for job, start in since.items():
        rows.append((job, *info[job], start, float("nan")))
    return pd.DataFrame(rows, columns=["job_id", "vc", "num_gpus", "start", "end"])


def gantt_figure(
    result: Result, spells: pd.DataFrame, cluster: Cluster, now: float, end: float
) -> Figure:
    """Jobs on GPUs over time coloured by VC as in the heatmap, job ids on the bars, and
    below them one row per job that waited (hatched while it waited); a line marks ``now``."""
    from matplotlib import rc_context

    nodes = cluster.nodes
    gpu_rows = [
        (n, g) for n, k in zip(nodes["node"], nodes["gpus"], strict=True) for g in range(int(k))
    ]
    row_of = {key: i for i, key in enumerate(gpu_rows)}
    waits = waiting_spells(result.events, now)
    waiters = list(dict.fromkeys(waits["job_id"].tolist()))
    palette = vc_palette([*result.jobs["vc"].tolist(), *nodes["vc"].dropna().tolist()])
    unit, size = time_unit(end)
    with rc_context(FONT):
        fig = figure(WIDE, 1.3 + 0.3 * (len(gpu_rows) + len(waiters)))
        fig.subplots_adjust(left=0.1, right=0.86, top=0.97, bottom=0.6 / fig.get_figheight())
        ax = fig.add_subplot()
        stopped = _stopped_at(result.events, now)
        marks = []
        for job, vc, node, gpu, start, stop in zip(
            spells["job_id"],
            spells["vc"] if "vc" in spells else _vcs(result, spells),
            spells["node"],
            spells["gpu"],
            spells["start"],
            spells["end"],
            strict=True,
        ):
            stop = now if pd.isna(stop) or stop > now else float(stop)
            if start > now:
                continue
            row = row_of[(node, int(gpu))]
            # one bar per job per run segment, edged in white: two jobs of one VC back to
            # back, or a job preempted and resumed, stay two bars
            ax.broken_barh(
                [(start / size, (stop - start) / size)],
                (row - 0.4, 0.8),
                facecolor=palette.get(str(vc), "#333"),
                edgecolor="white",
                linewidth=2.0,
                label=f"_run {job}",
            )
            if (job, stop) in stopped:  # the segment ended by a preemption or reclaim
                marks.append((stop / size, row))
            wide = (stop - start) / end * 0.76 * WIDE * DPI  # the bar's width in pixels
            if wide > 9 * len(str(job)):  # the id fits in the bar
                ax.text(
                    (start + stop) / 2 / size,
                    row,
                    str(job),
                    ha="center",
                    va="center",
                    fontsize=12,
                    color="white",
                    fontweight="bold",
                )
        base = len(gpu_rows)
        for k, job in enumerate(waiters):
            for vc, start, stop in zip(
                *(waits.loc[waits["job_id"] == job, c] for c in ("vc", "start", "end")), strict=True
            ):
                stop = now if pd.isna(stop) else stop
                ax.broken_barh(
                    [(start / size, max(stop - start, 0.0) / size)],
                    (base + k - 0.35, 0.7),
                    facecolor="white",
                    edgecolor=palette.get(str(vc), "#333"),
                    hatch="///",
                    linewidth=1.2,
                )
        if marks:
            ax.scatter(*zip(*marks, strict=True), s=60, zorder=3, **PREEMPTED)
        if waiters:
            ax.axhline(base - 0.5, color="#555555", linewidth=1)
        ax.axvline(now / size, color="#c00000", linewidth=2)
        labels = [f"{n}:{g}" for n, g in gpu_rows] + [f"waits: {j}" for j in waiters]
        ax.set_yticks(range(len(labels)), labels, fontsize=12)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_xlim(0, end / size * 1.02)
        ax.set_xlabel(f"time ({unit}); red line: now")
        ax.grid(axis="x", alpha=0.3)
        handles = [Patch(color=c, label=f"VC {vc}") for vc, c in palette.items()]
        handles.append(Patch(facecolor="white", edgecolor="#555", hatch="///", label="waiting"))
        if marks:
            handles.append(
                Line2D([], [], linestyle="", markersize=8, label="preempted", **PREEMPTED)
            )
        handles.append(Line2D([], [], color="#c00000", linewidth=2, label="now"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=12)
        fit_margins(fig, sides=("left", "right"))
    return fig


def _stopped_at(events: pd.DataFrame, now: float) -> set[tuple[str, float]]:
    """(job, time) of each preemption or reclaim up to ``now``."""
    kinds = events["event"].astype(str)
    cut = events[kinds.isin(("preempt", "reclaim")) & (events["time"] <= now + 1e-9)]
    return set(zip(cut["job_id"], cut["time"].astype(float), strict=True))


def _vcs(result: Result, spells: pd.DataFrame) -> pd.Series:
    vc = dict(zip(result.jobs["job_id"], result.jobs["vc"], strict=True))
    return spells["job_id"].map(vc)
