"""What a reviewer would send back about the figures (issue 29), pinned: nothing is cut off
at a figure's edge (``save_figure`` refuses such a figure), box plots say what their whiskers
are and mark the mean apart from any outlier, legends sit beside bars, identical arms are
marked "(same as ...)", a fraction's axis zooms on values near 1, timelines of counts have
whole-number ticks and say when they show only part of a run, GPU milli are drawn as GPUs,
and the CSVs name their units."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import analysim as asim  # noqa: E402
from analysim import plotting  # noqa: E402
from analysim.experiments.figures import span_text  # noqa: E402
from analysim.plotting.bounds import FigureLayoutError, outside_figure  # noqa: E402
from analysim.plotting.jobs import BOX_NOTE  # noqa: E402


@pytest.fixture(scope="module")
def toy():
    workload, cluster = asim.presets.workload("toy"), asim.presets.cluster("toy")
    results = {
        s: asim.simulate(workload, cluster, scheduler=s, sample_every=60) for s in ("fifo", "sjf")
    }
    return results, cluster


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


# -- nothing cut off -------------------------------------------------------------------------
def test_save_figure_refuses_a_cut_off_legend_and_writes_nothing(tmp_path):
    fig, ax = plotting.new_figure((4.0, 3.0))
    fig.set_layout_engine(None)  # no layout to rescue it
    ax.plot([0, 1], label="a run with a name far too long to fit beside these axes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    with pytest.raises(FigureLayoutError, match="save_figure cut: axes 0 legend .* right by"):
        plotting.save_figure(fig, "cut", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_save_figure_wraps_a_title_wider_than_the_figure(tmp_path):
    fig, ax = plotting.new_figure((4.0, 3.0))
    ax.plot([0, 1])
    long = "a title " * 12
    ax.set_title(long.strip())
    plotting.save_figure(fig, "wide", tmp_path)
    assert "\n" in ax.get_title()
    assert outside_figure(fig) == []


def test_every_figure_function_draws_inside_its_figure(toy):
    results, cluster = toy
    long = {
        "fifo": results["fifo"],
        "sjf + preemption + migration + a long arm name": results["sjf"],
    }
    figures = [
        plotting.policy_comparison(long),
        plotting.timeline_panels(long, ["used_gpus", "waiting_jobs"]),
        plotting.gantt(results["fifo"], cluster=cluster, title="jobs on GPUs").figure,
        plotting.per_vc_bars(long, "avg_jct").figure,
        plotting.queue_delay(long).figure,
        plotting.jct_cdf(long).figure,
    ]
    for fig in figures:
        assert outside_figure(fig) == []


# -- box plots -------------------------------------------------------------------------------
def test_a_box_plot_says_what_its_whiskers_are_and_marks_the_mean(toy):
    results, _ = toy
    ax = plotting.queue_delay(results)
    assert "whiskers: 5th-95th percentile" in ax.get_xlabel() == BOX_NOTE
    means = [line for line in ax.lines if line.get_marker() == "D"]
    assert len(means) == 2 and all(m.get_markerfacecolor() == "black" for m in means)
    fliers = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata())]
    assert not fliers  # no point but the mean
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["mean", "median"]


# -- legends beside bars, same-as arms -------------------------------------------------------
def test_per_vc_bars_keep_the_legend_off_the_bars_and_mark_identical_arms(toy):
    results, _ = toy
    same = {"fifo": results["fifo"], "fair": results["fifo"], "sjf": results["sjf"]}
    ax = plotting.per_vc_bars(same, "avg_jct")
    ax.figure.draw_without_rendering()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1 - 1  # beside the axes
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["fifo", "fair (same as fifo)", "sjf"]


def test_identical_timelines_are_marked(toy):
    results, _ = toy
    ax = plotting.timeline({"fifo": results["fifo"], "fifo again": results["fifo"]}, "used_gpus")
    assert [line.get_label() for line in ax.lines] == ["fifo", "fifo again (same as fifo)"]


# -- axes ------------------------------------------------------------------------------------
def test_a_fraction_near_one_gets_a_zoomed_axis_with_the_reference_inside():
    data = pd.DataFrame(
        {"borrow_limit": [0.1, 0.1, 1.0, 1.0], "jain_fairness": [0.9991, 0.9994, 0.9996, 0.9999]}
    )
    ax = plotting.metric_curve(data, x="borrow_limit", y="jain_fairness", reference={"none": 1.0})
    low, high = ax.get_ylim()
    assert 0.99 < low < 0.9991 and 1.0 < high < 1.01  # not 0-1; the line at 1 not on the frame
    assert ax.get_ylabel().endswith("(axis zoomed)")
    wide = pd.DataFrame({"borrow_limit": [0.1, 1.0], "jain_fairness": [0.2, 0.9]})
    assert plotting.metric_curve(wide, x="borrow_limit", y="jain_fairness").get_ylim() == (0, 1)


def test_counts_over_time_have_whole_number_ticks(toy):
    results, _ = toy
    ax = plotting.timeline(results, "used_gpus")
    ax.figure.draw_without_rendering()
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_a_timeline_cut_short_says_how_much_it_shows(toy):
    results, _ = toy
    ax = plotting.timeline(results, "used_gpus", until=600.0)
    assert ax.get_xlabel().startswith("time (min); the first 10 of ")
    assert span_text(results, 600.0).startswith("the first 10 min of a ")
    assert span_text(results, None) == "the whole run"


def test_gpu_milli_are_drawn_as_gpus():
    trace = asim.figures.load_trace("bundled:openb", "openb", speedup=200.0, cluster_size=0.1)
    jobs = trace.workload.jobs.head(300)
    result = asim.simulate(asim.Workload.from_frame(jobs), trace.cluster, placement="fgd")
    ax = plotting.timeline(result, "fgd_frag_milli", max_points=10**6)  # every sample
    milli = result.timeline.loc[result.timeline["vc"] == "(all)", "fgd_frag_milli"]
    assert ax.get_ylabel() == "FGD fragmentation (GPUs)"
    assert np.nanmax(ax.lines[0].get_ydata()) == pytest.approx(milli.max() / 1000)
    assert "fgd_frag_gpus" in plotting.plotted_data(ax).columns


# -- the dashed line, titles, units in CSVs ----------------------------------------------------
def test_the_gantt_chart_says_what_its_dashed_line_is(toy):
    results, cluster = toy
    ax = plotting.gantt(results["fifo"], cluster=cluster, title="toy: jobs on GPUs")
    (entry,) = ax.get_legend().get_texts()
    assert entry.get_text().startswith("now (t = ") and ax.get_title() == "toy: jobs on GPUs"
    data = plotting.plotted_data(ax)
    assert {"start_s", "end_s"} <= set(data.columns) and "start" not in data.columns


def test_timeline_and_occupancy_csvs_name_seconds(toy, tmp_path):
    results, _ = toy
    ax = plotting.timeline(results, "used_gpus")
    assert {"time_s", "window_s"} <= set(plotting.plotted_data(ax).columns)
    ax = plotting.node_time_heatmap(results["fifo"])
    assert "time_s" in plotting.plotted_data(ax).columns


def test_the_calibration_csv_has_a_unit_per_metric():
    table = pd.DataFrame(
        {
            "preset": "venus",
            "seed": 0,
            "metric": ["jobs_per_day", "mean_queue", "total_gpus"],
            "label": ["jobs per day", "mean queueing delay (s)", "total GPUs"],
            "simulated": [680.0, 1000.0, 1024.0],
            "published": [684.7, 1253.0, 1024.0],
            "rel_error": [-0.007, -0.2, 0.0],
            "tolerance": [0.1, 0.25, 0.05],
            "verdict": ["PASS", "PASS", "PASS"],
        }
    )
    data = plotting.plotted_data(plotting.calibration_errors(table))
    assert data["unit"].tolist() == ["jobs/day", "s", "GPUs"]
    assert "rel_error_fraction" in data.columns
