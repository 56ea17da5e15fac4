"""What the explorer draws and how its controls behave (issue 29): the factor sliders return
to exactly 1, typed values out of range are refused (never clamped), a node's heatmap column
has exactly its GPUs, the Gantt chart has one bar per job run segment, timelines are steps,
run names carry only settings that apply, every metric has a unit and a meaning, no two VCs
share a colour, and nothing in a figure is cut off at its edges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets (the notebooks extra)")

import analysim as asim  # noqa: E402
from analysim.explorer import render  # noqa: E402
from analysim.explorer.compare import labels  # noqa: E402
from analysim.explorer.inputs import (  # noqa: E402
    CLUSTER_STEPS,
    GPU_SECONDS_PER_GPU_HOUR,
    LOAD_STEPS,
    parse_thresholds,
    thresholds_text,
)
from analysim.explorer.units import KEY_METRICS, METRICS, summary_html  # noqa: E402
from analysim.plotting.bounds import outside_figure  # noqa: E402
from analysim.plotting.occupancy import (  # noqa: E402
    FREE,
    NO_GPU,
    VC_COLORS,
    occupancy_heatmap,
    vc_palette,
)
from analysim.widgets import explore  # noqa: E402


@pytest.fixture
def app():
    return explore("toy", sync=True)


def mixed() -> tuple[asim.Workload, asim.Cluster]:
    """An 8-GPU node and a 2-GPU P100 node, and three jobs that keep both busy a while."""
    nodes = pd.DataFrame(
        {
            "node": ["big", "p100"],
            "rack": ["r0", "r0"],
            "gpus": [8, 2],
            "gpu_type": ["V100", "P100"],
            "vc": ["a", "b"],
        }
    )
    jobs = pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3"],
            "vc": ["a", "b", "a"],
            "user": ["u", "u", "u"],
            "submit_time": [0.0, 0.0, 10.0],
            "duration": [100.0, 50.0, 40.0],
            "num_gpus": [4, 1, 2],
        }
    )
    return asim.Workload.from_frame(jobs), asim.Cluster.from_frame(nodes)


# -- the factor sliders --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "steps"), [("load_scale", LOAD_STEPS), ("cluster_size", CLUSTER_STEPS)]
)
def test_a_factor_slider_returns_to_exactly_one(app, name, steps):
    slider = app.controls[name]
    values = [value for _, value in slider.options]
    assert values == list(steps) and 1.0 in values and slider.value == 1.0
    assert [text for text, _ in slider.options][values.index(1.0)] == "1×"
    key = (app.workload_key(), app.cluster.total_gpus)
    summary = app.result.summary()
    slider.value = values[values.index(1.0) + 1]  # one step up, then back
    assert (app.workload_key(), app.cluster.total_gpus) != key
    slider.value = values[values.index(1.0)]
    assert slider.value == 1.0  # exactly, not 0.9976
    assert (app.workload_key(), app.cluster.total_gpus) == key
    pd.testing.assert_series_equal(app.result.summary(), summary)


def test_touching_a_slider_without_moving_it_runs_nothing(app):
    runs = app.runs
    app.controls["load_scale"].value = 1.0  # the value it has: no change, no run
    app.controls["cluster_size"].value = 1.0
    assert app.runs == runs and app.result.meta is not None


def test_a_slider_takes_only_its_stops(app):
    from traitlets import TraitError

    with pytest.raises(TraitError):
        app.controls["load_scale"].value = 0.9976


# -- days and seed: refused, never clamped ---------------------------------------------------
@pytest.mark.parametrize(
    ("control", "value", "message"),
    [
        ("days", 0, "Not run: days must be > 0 and <= 400, got 0"),
        ("days", -3, "Not run: days must be > 0 and <= 400, got -3"),
        ("days", 500, "Not run: days must be > 0 and <= 400, got 500"),
        ("seed", -1, "Not run: seed must be a whole number from 0 to 2**63 - 1, got -1"),
    ],
)
def test_out_of_range_days_and_seed_are_refused_with_the_range(control, value, message):
    app = explore("venus", days=1, sync=True)
    runs = app.runs
    app.controls[control].value = value
    assert app.controls[control].value == value  # kept as typed, not clamped
    assert app.message == message
    assert app.runs == runs  # the previous results stay, marked as such
    assert "the results below are from the previous run" in app.outputs["message"].value


# -- the heatmap: a node has exactly its GPUs ------------------------------------------------
def _cell_kinds(ax) -> np.ndarray:
    """Per cell of the drawn grid (rows: GPUs, columns: nodes): True where a GPU is drawn
    (free or held), False where the grid says "no GPU"."""
    picture = np.asarray(ax.images[0].get_array())[..., :3]
    return ~np.all(np.isclose(picture, mcolor(NO_GPU)), axis=-1)


def mcolor(color: str) -> np.ndarray:
    from matplotlib import colors

    return np.array(colors.to_rgb(color))


def test_a_nodes_heatmap_column_has_exactly_its_gpus():
    from analysim.results.spells import gpu_snapshot

    workload, cluster = mixed()
    result = asim.simulate(workload, cluster)
    snap = gpu_snapshot(result, 20.0, cluster)
    fig = render.heatmap_figure(snap, cluster.vcs, "t = 20 s")
    drawn = _cell_kinds(fig.axes[0])[:8]  # the GPU rows (the owner strip is above them)
    gpus = dict(zip(cluster.nodes["node"], cluster.nodes["gpus"], strict=True))
    assert drawn.sum(axis=0).tolist() == [gpus["big"], gpus["p100"]] == [8, 2]
    assert drawn[:2, 1].all() and not drawn[2:, 1].any()  # the P100's two GPUs at the bottom
    labels_ = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "no GPU" in labels_ and "free" in labels_
    assert outside_figure(fig) == []


def test_free_cells_are_only_gpus_that_exist():
    snap = pd.DataFrame(
        {"node": ["n0"] * 4 + ["n1"] * 2, "gpu": [0, 1, 2, 3, 0, 1], "job_id": None, "job_vc": None}
    )
    ax = occupancy_heatmap(snap)
    picture = np.asarray(ax.images[0].get_array())[..., :3]
    free = np.all(np.isclose(picture, mcolor(FREE)), axis=-1)
    assert free.sum(axis=0).tolist() == [4, 2]


def test_uniform_nodes_have_no_no_gpu_entry():
    snap = pd.DataFrame({"node": ["n0", "n0"], "gpu": [0, 1], "job_id": None, "job_vc": None})
    ax = occupancy_heatmap(snap)
    assert "no GPU" not in [t.get_text() for t in ax.get_legend().get_texts()]


# -- colours ---------------------------------------------------------------------------------
def test_no_two_vcs_share_a_colour_on_venus():
    vcs = asim.presets.cluster("venus").vcs
    palette = vc_palette(vcs)
    assert len(palette) == len(vcs) == 23
    assert len(set(palette.values())) == len(palette)


def test_the_vc_palette_has_distinct_colours_none_like_free():
    assert len(set(VC_COLORS)) == len(VC_COLORS) >= 29
    assert FREE not in VC_COLORS and NO_GPU not in VC_COLORS
    palette = vc_palette([f"vc{i:02d}" for i in range(len(VC_COLORS))])
    assert len(set(palette.values())) == len(VC_COLORS)


# -- the step-through Gantt chart -----------------------------------------------------------
def test_the_gantt_chart_has_one_bar_per_job_run_segment():
    from matplotlib.collections import PathCollection

    from analysim.results.spells import allocations

    stepper = asim.explorer.teach("preemption")
    stepper.run()
    result = stepper.sim.result()
    spells = allocations(result, stepper.sim.cluster)
    now = float(stepper.sim.now)
    fig = render.gantt_figure(result, spells, stepper.sim.cluster, now, now)
    ax = fig.axes[0]
    bars = [c for c in ax.collections if c.get_label().startswith("_run ")]
    assert len(bars) == len(spells)  # long is preempted: its two segments are two bars
    per_job = pd.Series([c.get_label()[5:] for c in bars]).value_counts()
    assert per_job["long"] == 2 * spells.loc[spells["job_id"] == "long", "gpu"].nunique()
    assert all(np.allclose(c.get_edgecolor()[0][:3], 1.0) for c in bars)  # white edges
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    preempted = result.jobs.set_index("job_id").loc["long"]
    assert preempted["preemptions"] == 1
    assert sum(len(c.get_offsets()) for c in marks) == preempted["num_gpus"]  # one per GPU
    assert "preempted" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert outside_figure(fig) == []


# -- timelines are steps ---------------------------------------------------------------------
def test_timelines_hold_each_sample_until_the_next(app):
    fig = app.moment.timeline_figure()
    lines = [line for ax in fig.axes for line in ax.get_lines() if line.get_label() == "fifo"]
    assert lines and all(line.get_drawstyle() == "steps-post" for line in lines)


# -- run names -------------------------------------------------------------------------------
def test_run_names_carry_only_settings_that_apply():
    fifo = {"scheduler": "fifo", "preemption": False, "las_thresholds": None,
            "starvation_factor": None, "checkpoint_cost": "size_scaled"}  # fmt: skip
    las = {**fifo, "scheduler": "las", "preemption": True, "las_thresholds": (1800.0, 7200.0),
           "starvation_factor": 4.0}  # fmt: skip
    las_default = {**las, "las_thresholds": (18000.0,), "starvation_factor": None}
    assert labels([fifo, las]) == ["fifo", "las + preemption"]
    three = labels([fifo, las, las_default])
    assert three[0] == "fifo"  # no "LAS queues at default GPU-h + starvation factor None"
    assert three[1:] == [
        "las + preemption + LAS queues at 0.5, 2 GPU-h + starvation ×4",
        "las + preemption + LAS queues at 5 GPU-h + no starvation promotion",
    ]
    cost = {**fifo, "checkpoint_cost": "100 s"}  # no preemption: the cost does not apply
    assert labels([fifo, cost]) == ["fifo", "fifo (2)"]


def test_explorer_names_runs_by_what_applies(app):
    app.pin()
    app.controls["scheduler"].value = "las"
    app.controls["preemption"].value = True
    app.controls["las_thresholds"].value = "0.5, 2"
    _, names, _ = app.shown_runs()
    assert names == ["fifo", "las + preemption"]


# -- units -----------------------------------------------------------------------------------
def test_las_thresholds_convert_gpu_hours_exactly_in_one_place(app):
    assert GPU_SECONDS_PER_GPU_HOUR == 3600.0
    assert parse_thresholds("0.5, 2") == [1800.0, 7200.0]
    assert thresholds_text([1800.0, 7200.0]) == "0.5, 2"
    control = app.controls["las_thresholds"]
    assert "GPU-h" in control.description and "3,600 GPU-seconds" in control.tooltip


def test_every_summary_metric_has_a_unit_and_a_meaning():
    app = explore("bundled:openb", sync=True)  # resource mode: avg_fgd_frag_milli
    summary = app.result.summary()
    assert "avg_fgd_frag_milli" in summary.index
    assert set(summary.index) <= set(METRICS), set(summary.index) - set(METRICS)
    html = summary_html(pd.DataFrame({"run": summary}))
    row = next(r for r in html.split("<tr>") if ">avg_fgd_frag_milli<" in r)
    assert "<td class='unit'>GPUs</td>" in row
    assert "title='avg_fgd_frag_milli: time-mean of FGD" in row and "(GPUs)'" in row
    shown = float(row.split("<td class='num'>")[1].split("<")[0].replace(",", ""))
    assert shown == pytest.approx(summary["avg_fgd_frag_milli"] / 1000, rel=0.01, abs=0.01)
    assert all(METRICS[m][1] for m in KEY_METRICS)


# -- nothing cut off -------------------------------------------------------------------------
LONG = "las + preemption + migration + LAS queues at 0.5, 2, 8 GPU-h + quantum 120 s"


def test_explorer_figures_fit_with_long_run_names():
    app = explore("venus", days=1, sync=True)
    runs = {"fifo": app.result, LONG: app.result, LONG + " (2)": app.result, "sjf": app.result}
    for name, fig in (
        ("cdf", render.cdf_figure(runs)),
        ("timelines", render.timeline_figure(runs, 3600.0, 86400.0)),
        ("heatmap", app.moment.heatmap_figure()),
    ):
        assert outside_figure(fig) == [], name


def test_the_venus_heatmap_legend_fits_all_its_columns():
    app = explore("venus", days=1, sync=True)
    fig = app.moment.heatmap_figure()
    legend = fig.axes[0].get_legend()
    assert len(legend.get_texts()) >= 20  # the VCs holding GPUs, free, borrowed
    assert outside_figure(fig) == []


def test_openb_heatmaps_fit_at_full_size_and_a_tenth():
    app = explore("bundled:openb", sync=True)
    assert outside_figure(app.moment.heatmap_figure()) == []  # the wrapped one, its long title
    app.controls["cluster_size"].value = 0.1
    app.controls["load_scale"].value = 200.0
    assert outside_figure(app.moment.heatmap_figure()) == []  # 122 node names under the grid
    assert outside_figure(app.moment.timeline_figure()) == []


def test_outside_figure_sees_a_cut_legend():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1], label="a run with a very long name that cannot fit beside the axes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    problems = outside_figure(fig)
    assert len(problems) == 1 and problems[0].startswith("axes 0 legend")
