"""The explorer's widgets and their layout: controls, outputs, and how they are arranged
so that nothing overflows a notebook at 1280 px (flex rows that wrap, images at most 100%
wide, tables that scroll sideways inside their own box) and reads from a distance (15 px)."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from analysim.experiments.saturation.sweep import FGD_STUDY
from analysim.explorer import render
from analysim.explorer.inputs import CLUSTER_STEPS, LOAD_STEPS, cost_text, name_of, thresholds_text
from analysim.inputs.config import SimConfig
from analysim.policies import PLACERS, SCHEDULERS

LAS_DEFAULT_HOURS = "5"  # LAS's default threshold, 18,000 GPU-seconds
LAS_DEFAULT_STARVATION = "4"
TOOLTIPS = {
    "workload": "a preset, a teaching scenario, or the trace given to explore()",
    "load_scale": "arrivals this many times faster (0.05x to 200x)",
    "cluster_size": "each VC's nodes scaled by this factor (0.05x to 4x)",
    "days": "days of the venus workload (jobs submitted in that span), > 0 and <= 400",
    "seed": "seed of the venus workload and of random placement and ties, a whole number >= 0",
    "scheduler": "the ranking policy",
    "las_thresholds": "attained service splitting LAS's queues, in GPU-hours (1 GPU-h = 3,600 "
    "GPU-seconds, the unit of the API's thresholds), comma-separated",
    "las_starvation": "promote a job that waited this many times as long as it ran (off: never)",
    "placement": "the placement policy",
    "quantum": "seconds between scheduling rounds (preemption and re-ranking happen then)",
    "preemption": "let waiting jobs evict lower-ranked running jobs at rounds",
    "checkpoint_cost": "seconds a job loses per preemption: a number, a model name or JSON",
    "migration": "move running jobs to make room for a job blocked by fragmentation",
    "migration_cost": "seconds a job loses per migration: a number, a model name or JSON",
    "borrowing": "let a VC run on other VCs' idle GPUs (reclaimed when the owner needs them)",
    "backfill": "off: a queue's first job that cannot start blocks the jobs behind it; "
    "greedy: any later job that fits starts (large jobs can starve); EASY: later jobs start "
    "only if they do not delay the reservation of the queue's first job (Slurm)",
}
"""What each control sets, with its unit, shown when the pointer rests on it."""
SHARE_PLACERS = tuple(name for name in FGD_STUDY if name not in PLACERS.names)
"""The FGD study's placers the explorer offers besides the whole-GPU ones (``random`` is
one of those already): they run the engine in resource mode."""
PLACER_HELP = {
    "consolidate": "best fit: the node with the fewest free GPUs that holds the job",
    "first_fit": "the lowest-numbered node that holds the job",
    "spread": "worst fit: the node with the most free GPUs",
    "random": "a node that holds the job, chosen at random (seeded)",
    "topology": "fewest racks, then fewest nodes",
    "fgd": "FGD (ATC'23): the node and GPU where the fragmentation of the workload's task "
    "shapes grows least",
    "best_fit": "the least CPU and GPU milli left after placing",
    "dot_product": "the smallest dot product of (CPU, GPU milli) left and asked for",
    "gpu_packing": "partly used GPUs first, then free GPUs of used nodes, then idle nodes",
    "gpu_clustering": "nodes running only jobs of the same kind (share, 1 GPU, ...) first",
}
"""One line on each placer the explorer offers (its tooltip and the line under the controls;
``docs/semantics.md`` and ``docs/saturation.md`` give the rules)."""
BACKFILL_CHOICES = [("off", False), ("greedy", True), ("EASY", "easy")]
"""The backfill control's choices: label and ``SimConfig.backfill`` value."""
STYLE = """
<style>
.analysim-explorer { --jp-widgets-font-size: 15px; font-size: 15px; max-width: 100%; }
.analysim-explorer .widget-html-content { line-height: 1.45; white-space: normal; }
.analysim-explorer .widget-html, .analysim-explorer .widget-html-content,
.analysim-explorer .widget-box { min-width: 0; max-width: 100%; }
.analysim-explorer .widget-label, .analysim-explorer .widget-button { font-size: 15px; }
.analysim-explorer img { max-width: 100%; height: auto; }
.analysim-explorer .widget-image { margin-left: 0; margin-right: 0; }
.analysim-explorer .widget-button { flex-shrink: 0; min-width: fit-content; }
.analysim-table { border-collapse: collapse; font-size: 15px; }
.analysim-table th { text-align: right; padding: 2px 10px; border-bottom: 1px solid #999;
  vertical-align: bottom; max-width: 200px; }
.analysim-table th:first-child { text-align: left; }
.analysim-table td { padding: 1px 10px; }
.analysim-table td.num { text-align: right; font-variant-numeric: tabular-nums; }
.analysim-table td.unit { color: #555; }
.analysim-table small { color: #555; font-weight: normal; }
.analysim-scroll { overflow-x: auto; max-width: 100%; }
.analysim-scroll table { font-size: 13px; }
.analysim-note { background: #fff6d5; border-left: 4px solid #e0a800; padding: 4px 10px; }
.analysim-lesson { background: #e8f3ff; border-left: 4px solid #0173b2; padding: 4px 10px; }
.analysim-why-list li { margin-bottom: 4px; }
.analysim-timeline-box { position: relative; }
.analysim-explorer .analysim-time-overlay { position: absolute; top: 4%; height: 86%;
  margin: 0; opacity: 0; cursor: crosshair; }
.analysim-time-overlay .slider-container, .analysim-time-overlay .noUi-target,
.analysim-time-overlay .noUi-base { height: 100% !important; }
</style>
"""


def factor_slider(name: str, label: str, steps: tuple[float, ...]) -> widgets.ValueWidget:
    """A slider of a factor that stops only at ``steps`` (readable values, 1 among them, so
    it can always return to exactly 1), starting at 1 and read out as ``1×``, ``0.25×``."""
    return box(
        widgets.SelectionSlider,
        name,
        label,
        options=[(factor_text(v), v) for v in steps],
        value=1.0,
        continuous_update=False,
    )


def factor_text(value: float) -> str:
    """A factor as the slider reads it out: ``1×``, ``0.25×``, ``200×``."""
    return f"{value:g}×"


def box(kind: Any, name: str, description: str, **kw: Any) -> widgets.ValueWidget:
    widget = kind(
        description=description,
        style={"description_width": "170px"},
        layout=widgets.Layout(width="350px"),
        **kw,
    )
    widget.add_class(f"analysim-{name}")
    return widget


def tag(widget: widgets.DOMWidget, name: str) -> widgets.DOMWidget:
    widget.add_class(f"analysim-{name}")
    return widget


def placer_options(shares: bool, current: str) -> list[str]:
    """The placers offered: the whole-GPU ones, and the FGD study's when the workload asks
    for GPU shares, CPU or memory (``shares``) or one of them is ``current``."""
    names = list(PLACERS.names)
    if shares or current in SHARE_PLACERS:
        names += [n for n in SHARE_PLACERS if n not in names]
    return names


def placer_tooltip(name: str) -> str:
    """The placement control's tooltip: what the chosen placer does."""
    help_ = PLACER_HELP.get(name)
    return f"{TOOLTIPS['placement']}: {name}, {help_}" if help_ else TOOLTIPS["placement"]


def make_controls(
    config: SimConfig,
    options: list[tuple[str, str]],
    start: str,
    days: float,
    placers: list[str] | None = None,
) -> dict[str, widgets.ValueWidget]:
    """The input widgets by name, set to ``config``; ``options``: the workload list;
    ``placers``: the placement list (default: the whole-GPU placers)."""
    c = config
    las = dict(c.scheduler) if isinstance(c.scheduler, dict) else {}
    hours = thresholds_text(las.get("thresholds", [])) or LAS_DEFAULT_HOURS
    starvation = las.get("starvation_factor", 4.0)
    controls = {
        "workload": box(widgets.Dropdown, "workload", "workload", options=options, value=start),
        "days": box(widgets.FloatText, "days", "days (venus)", value=days),
        "load_scale": factor_slider("load_scale", "load scale", LOAD_STEPS),
        "cluster_size": factor_slider("cluster_size", "cluster size", CLUSTER_STEPS),
        # plain number boxes: a value out of range is refused with a message, not clamped
        "seed": box(widgets.IntText, "seed", "seed", value=c.seed),
        "scheduler": box(
            widgets.Dropdown,
            "scheduler",
            "scheduler",
            options=SCHEDULERS.names,
            value=name_of(c.scheduler),
        ),
        "las_thresholds": box(
            widgets.Text,
            "las_thresholds",
            "LAS queues (GPU-h)",
            value=hours,
            continuous_update=False,
        ),
        "las_starvation": box(
            widgets.Text,
            "las_starvation",
            "LAS starvation ×",
            value="off" if starvation is None else f"{starvation:g}",
            continuous_update=False,
        ),
        "placement": box(
            widgets.Dropdown,
            "placement",
            "placement",
            options=placers or PLACERS.names,
            value=name_of(c.placement),
        ),
        "quantum": box(widgets.FloatText, "quantum", "quantum (s)", value=c.quantum),
        "preemption": box(widgets.Checkbox, "preemption", "preemption", value=c.preemption),
        "checkpoint_cost": box(
            widgets.Text,
            "checkpoint_cost",
            "checkpoint cost (s)",
            value=cost_text(c.checkpoint_cost),
            continuous_update=False,
        ),
        "migration": box(widgets.Checkbox, "migration", "migration", value=c.migration),
        "migration_cost": box(
            widgets.Text,
            "migration_cost",
            "migration cost (s)",
            value=cost_text(c.migration_cost),
            continuous_update=False,
        ),
        "borrowing": box(widgets.Checkbox, "borrowing", "borrowing", value=c.borrowing),
        "backfill": box(
            widgets.Dropdown,
            "backfill",
            "backfill",
            options=BACKFILL_CHOICES,
            value=c.backfill,
        ),
    }
    for name, tip in TOOLTIPS.items():
        controls[name].tooltip = tip
    controls["placement"].tooltip = placer_tooltip(controls["placement"].value)
    return controls


def make_outputs() -> dict[str, widgets.DOMWidget]:
    """The output widgets by name."""
    return {
        "status": tag(widgets.HTML(value="not run yet"), "status"),
        "progress": tag(
            widgets.FloatProgress(value=0, min=0, max=1, layout={"width": "200px"}),
            "progress",
        ),
        "message": tag(widgets.HTML(value=""), "message"),
        "lesson": tag(widgets.HTML(value=""), "lesson-box"),
        # what the chosen placer does: shown while the FGD study's placers are offered
        "placer_help": tag(
            widgets.HTML(value="", layout={"display": "none", "max_width": "1100px"}),
            "placer-help",
        ),
        "note": tag(widgets.HTML(value=""), "note-box"),
        "summary": tag(
            widgets.HTML(value="", layout={"flex": "1 1 420px", "max_width": "100%"}),
            "summary",
        ),
        "cdf": tag(
            widgets.Image(format="png", layout={"width": "540px", "max_width": "100%"}), "cdf"
        ),
        "plots": tag(
            widgets.Image(format="png", layout={"width": "100%", "max_width": "1100px"}),
            "plots",
        ),
        "time": tag(
            widgets.FloatSlider(
                description="",
                min=0,
                max=1,
                step=1,
                readout=False,
                continuous_update=False,
                style={"description_width": "0px"},
                layout={"width": "100%"},
            ),
            "time",
        ),
        "moment": tag(widgets.HTML(value=""), "moment"),
        "heatmap": tag(
            widgets.Image(format="png", layout={"width": "100%", "max_width": "1100px"}),
            "heatmap",
        ),
        "waiting": tag(widgets.Select(options=[], rows=10, layout={"width": "320px"}), "waiting"),
        "waiting_label": tag(widgets.HTML(value="<b>waiting jobs</b>"), "waiting-label"),
        "why": tag(widgets.HTML(value="", layout={"flex": "1 1 300px"}), "why"),
        "exported": tag(widgets.HTML(value=""), "exported"),
    }


def arrange(
    c: dict[str, widgets.Widget],
    o: dict[str, widgets.Widget],
    b: dict[str, widgets.Widget],
    stepper: widgets.Widget,
) -> tuple[widgets.Widget, widgets.FloatSlider, widgets.Accordion]:
    """The app laid out: controls, status, comparison buttons, summary and CDF, the
    timelines with the slider (and the invisible slider over them, returned), the moment,
    the step-through accordion (returned)."""
    groups = (
        ("workload", "days", "load_scale", "cluster_size", "seed"),
        ("scheduler", "las_thresholds", "las_starvation", "placement", "quantum"),
        ("preemption", "checkpoint_cost", "migration", "migration_cost", "borrowing"),
        ("backfill",),
    )
    columns = widgets.HBox(
        [widgets.VBox([c[k] for k in group]) for group in groups],
        layout={"flex_flow": "row wrap"},
    )
    status = widgets.HBox([o["progress"], o["status"]], layout={"flex_flow": "row wrap"})
    compare_row = widgets.HBox(
        [b["pin"], b["name"], b["keep"], b["clear"], b["export"], b["all_metrics"]],
        layout={"flex_flow": "row wrap"},
    )
    results = widgets.HBox(
        [o["summary"], o["cdf"]],
        layout={"flex_flow": "row wrap", "align_items": "flex-start", "width": "100%"},
    )
    left = f"{render.TIMELINE_LEFT * 100:.1f}%"
    width = f"{(render.TIMELINE_RIGHT - render.TIMELINE_LEFT) * 100:.1f}%"
    slider = widgets.Box([o["time"]], layout={"margin": f"0 0 0 {left}", "width": width})
    # an invisible copy of the slider laid over the timelines' axes, linked to the slider
    # in the browser: a click on a timeline moves the moment there
    overlay = tag(
        widgets.FloatSlider(
            min=0,
            max=1,
            step=1,
            readout=False,
            continuous_update=False,
            style={"description_width": "0px"},
            layout={"width": width, "left": left},
        ),
        "time-overlay",
    )
    overlay.tooltip = "click to show this moment"
    timelines = tag(
        widgets.Box([o["plots"], overlay], layout={"width": "100%", "max_width": "1100px"}),
        "timeline-box",
    )
    slider_row = widgets.VBox(
        [slider, o["moment"]], layout={"width": "100%", "max_width": "1100px"}
    )
    moment_box = widgets.VBox(
        [
            widgets.HTML(
                "<b>Over time</b> — click a timeline, or drag the slider under them, to "
                "move the moment (the red line) shown below"
            ),
            timelines,
            slider_row,
            widgets.HTML("<b>The cluster at that moment</b> (× = borrowed GPU)"),
            o["heatmap"],
            widgets.HBox(
                [
                    widgets.VBox([o["waiting_label"], o["waiting"]]),
                    widgets.VBox(
                        [widgets.HTML("<b>why is it waiting?</b>"), o["why"]],
                        layout={"flex": "1 1 300px"},
                    ),
                ],
                layout={"flex_flow": "row wrap", "width": "100%"},
            ),
        ],
        layout={"width": "100%"},
    )
    steps = widgets.Accordion(children=[stepper], titles=("step through (toy and scenarios)",))
    steps.selected_index = None
    app = widgets.VBox(
        [
            widgets.HTML(STYLE),
            columns,
            o["placer_help"],
            o["lesson"],
            status,
            o["message"],
            compare_row,
            o["note"],
            results,
            o["exported"],
            moment_box,
            steps,
        ],
        layout={"width": "100%"},
    )
    app.add_class("analysim-explorer")
    return app, overlay, steps
