"""Plot functions: what they draw (checked in the artists' data), colours, units, saving."""

from __future__ import annotations

import subprocess
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import analysim as asim  # noqa: E402
from analysim import plotting  # noqa: E402
from analysim.plotting import style  # noqa: E402
from analysim.plotting.timeline import resample  # noqa: E402

# the toy workload under FIFO on one pool (docs/semantics.md): JCT and queueing delay of j1..j8
TOY_FIFO_JCT = [600, 900, 300, 1620, 1260, 960, 600, 660]
TOY_FIFO_QUEUE = [0, 0, 0, 420, 660, 480, 240, 60]


@pytest.fixture(scope="module")
def toy_results() -> dict[str, asim.Result]:
    workload, cluster = asim.presets.workload("toy"), asim.presets.cluster("toy")
    return {
        s: asim.simulate(workload, cluster, scheduler=s, sample_every=60) for s in ("fifo", "sjf")
    }


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_toy_golden_values_hold(toy_results):
    assert toy_results["fifo"].jobs["jct"].tolist() == TOY_FIFO_JCT
    assert toy_results["fifo"].jobs["queue_delay"].tolist() == TOY_FIFO_QUEUE


def test_jct_cdf_draws_each_runs_quantiles_in_minutes(toy_results):
    ax = plotting.jct_cdf(toy_results)
    assert [line.get_label() for line in ax.lines] == ["fifo", "sjf"]
    assert ax.get_xlabel() == "job completion time (min)"
    assert ax.get_xscale() == "log"
    fifo = ax.lines[0]
    x, y = fifo.get_xdata(), fifo.get_ydata()
    assert x[0] == pytest.approx(300 / 60) and x[-1] == pytest.approx(1620 / 60)
    assert y[0] == 0 and y[-1] == 1 and np.all(np.diff(y) > 0)
    assert x[100] == pytest.approx(np.median(TOY_FIFO_JCT) / 60)  # the 0.5 level
    assert fifo.get_color() == style.PALETTE["fifo"]


def test_jct_cdf_of_one_result_is_labelled_by_its_config(toy_results):
    ax = plotting.jct_cdf(toy_results["sjf"], unit="s", log=False)
    assert [line.get_label() for line in ax.lines] == ["sjf"]
    assert ax.get_xlabel() == "job completion time (s)"
    assert ax.lines[0].get_xdata()[-1] == max(toy_results["sjf"].jobs["jct"])


def test_queue_delay_box_shows_quartiles_and_5_95_whiskers(toy_results):
    ax = plotting.queue_delay({"fifo": toy_results["fifo"]})
    assert ax.get_ylabel() == "queueing delay (min)"
    q = np.array(TOY_FIFO_QUEUE, dtype=float)
    # bxp draws: whiskers (2), caps (2), median, mean -> the median line's y is the median
    ys = {round(float(v), 6) for line in ax.lines for v in line.get_ydata()}
    for level in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert round(float(np.quantile(q, level)) / 60, 6) in ys
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fifo"]


def test_queue_delay_bars_are_mean_median_p95(toy_results):
    ax = plotting.queue_delay(toy_results, kind="bar", unit="s")
    heights = [p.get_height() for p in ax.patches]
    q = np.array(TOY_FIFO_QUEUE, dtype=float)
    # first bar of each statistic belongs to fifo
    assert heights[0] == pytest.approx(q.mean())
    assert heights[2] == pytest.approx(np.median(q))
    assert heights[4] == pytest.approx(np.quantile(q, 0.95))
    with pytest.raises(ValueError, match="kind must be 'box' or 'bar'"):
        plotting.queue_delay(toy_results, kind="violin")


def test_per_vc_bars_heights_are_the_per_vc_summary():
    workload = asim.presets.workload("toy")
    cluster = asim.presets.cluster("toy", partition="nodes")
    result = asim.simulate(workload, cluster, scheduler="fifo")
    ax = plotting.per_vc_bars({"fifo": result}, "avg_jct", unit="s")
    expected = result.summary(by="vc")["avg_jct"]
    assert [p.get_height() for p in ax.patches] == pytest.approx(expected.tolist())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert ax.get_ylabel() == "mean JCT (s)"
    # VC a: j1 600, j3 300, j4 (waits for rack r0) and j7; hand check of j1 and j3 only
    assert result.jobs.set_index("job_id").loc[["j1", "j3"], "jct"].tolist() == [600, 300]
    with pytest.raises(ValueError, match="unknown summary metric 'nope'"):
        plotting.per_vc_bars(result, "nope")


def test_timeline_draws_the_cluster_rows(toy_results):
    ax = plotting.timeline(toy_results, "used_gpus")
    timeline = toy_results["fifo"].timeline
    rows = timeline[timeline["vc"] == "(all)"]
    line = ax.lines[0]
    assert line.get_ydata().tolist() == rows["used_gpus"].tolist()
    assert line.get_xdata().tolist() == pytest.approx((rows["time"] / 60).tolist())
    assert ax.get_xlabel() == "time (min)" and ax.get_ylabel() == "GPUs in use"
    with pytest.raises(ValueError, match="no column 'nope'"):
        plotting.timeline(toy_results, "nope")
    with pytest.raises(ValueError, match="no timeline rows for vc='zz'"):
        plotting.timeline(toy_results, "used_gpus", vc="zz")


def test_resample_averages_whole_windows():
    frame = pd.DataFrame({"time": np.arange(6.0), "v": [0.0, 1, 2, 3, 4, 5]})
    out = resample(frame, "v", 2.0)
    assert out["time"].tolist() == [0.0, 2.0, 4.0]
    assert out["v"].tolist() == [0.5, 2.5, 4.5]


def test_timeline_keeps_at_most_max_points(toy_results):
    ax = plotting.timeline(toy_results["fifo"], "used_gpus", max_points=10)
    assert len(ax.lines[0].get_xdata()) <= 10


def test_comparison_table_in_hours(toy_results):
    table = plotting.comparison_table(toy_results, ["avg_jct", "finished"])
    assert list(table.columns) == ["mean JCT (h)", "finished"]
    assert table.loc["fifo", "mean JCT (h)"] == pytest.approx(862.5 / 3600)
    assert table.loc["fifo", "finished"] == 8


def test_metric_curve_mean_and_range_over_seeds_by_default():
    data = pd.DataFrame(
        {"quantum": [60, 60, 60, 300], "seed": [0, 1, 2, 0], "avg_jct": [1, 2, 3, 5.0]}
    )
    table = plotting.curve_data(data, "quantum", "avg_jct")
    first = table.iloc[0]
    assert first["avg_jct"] == 2 and first["count"] == 3
    assert (first["low"], first["high"]) == (1, 3)  # lowest and highest seed
    assert table.iloc[1]["low"] == table.iloc[1]["high"] == 5
    ax = plotting.metric_curve(data, x="quantum", y="avg_jct", unit="s")
    assert ax.lines[0].get_ydata().tolist() == [2, 5]
    assert len(ax.collections) == 1  # the band
    assert ax.get_xlabel().endswith("(mean of n = 1-3 seeds; band: lowest to highest)")


def test_mark_x_draws_each_mark_in_its_curve_colour_and_keeps_its_numbers():
    data = pd.DataFrame(
        {
            "every": [600, 3600, 600, 3600],
            "mtbf": ["7 days", "7 days", "30 days", "30 days"],
            "avg_jct": [10, 20, 11, 12.0],
        }
    )
    ax = plotting.metric_curve(data, x="every", y="avg_jct", hue="mtbf", unit="s")
    colours = {line.get_label(): line.get_color() for line in ax.lines}
    plotting.mark_x(ax, {"7 days": 1800.0, "30 days": 3000.0}, name="Young/Daly")
    marks = {line.get_label(): line for line in ax.lines[2:]}
    assert marks["Young/Daly, 7 days"].get_xdata()[0] == 1800.0
    assert marks["Young/Daly, 30 days"].get_color() == colours["30 days"]
    assert ax.get_legend().get_title().get_text() == "mtbf"
    drawn = plotting.plotted_data(ax)
    assert drawn.dropna(subset=["mark"])[["mark", "x"]].values.tolist() == [
        ["Young/Daly, 7 days", 1800.0],
        ["Young/Daly, 30 days", 3000.0],
    ]


def test_the_t_interval_is_an_option():
    data = pd.DataFrame({"quantum": [60, 60, 60], "avg_jct": [1, 2, 3.0]})
    first = plotting.curve_data(data, "quantum", "avg_jct", interval="ci95").iloc[0]
    assert first["high"] - first["avg_jct"] == pytest.approx(4.303 / np.sqrt(3))
    assert first["interval"] == "95% confidence interval (Student t)"
    with pytest.raises(ValueError, match="interval must be one of"):
        plotting.curve_data(data, "quantum", "avg_jct", interval="sd")


def test_error_bars_over_seeds_never_go_below_zero():
    # three seeds far apart: a t interval of the mean would reach below zero (2 - 4.3 * 1.5)
    data = pd.DataFrame({"scheduler": ["fifo"] * 3, "avg_jct": [100.0, 200, 7000]})
    ax = plotting.summary_bars(data, unit="s")
    low = ax.containers[0].lines  # the error bar artists
    (segments,) = [c.get_segments() for c in low[2]]
    assert segments[0][0][1] == 100 and segments[0][1][1] == 7000
    assert "n = 3 seeds; whiskers: lowest to highest" in ax.get_xlabel()
    saved = plotting.plotted_data(ax)
    drawn = saved[["avg_jct", "low", "high"]].iloc[0].tolist()
    assert drawn == pytest.approx([7300 / 3, 100, 7000])
    assert saved["unit"].iloc[0] == "s"


def test_metric_curve_reference_line_in_the_same_unit():
    data = pd.DataFrame({"checkpoint_cost": [0, 300], "avg_jct": [3600.0, 7200.0]})
    ax = plotting.metric_curve(
        data, x="checkpoint_cost", reference={"no preemption": 10800.0}, unit="h"
    )
    curve, reference = ax.lines
    assert curve.get_ydata().tolist() == [1.0, 2.0]
    assert reference.get_label() == "no preemption" and list(reference.get_ydata()) == [3, 3]
    assert reference.get_color() == plotting.PALETTE["no preemption"]
    assert plotting.plotted_data(ax)["reference"].dropna().tolist() == ["no preemption"]


def test_summary_bars_label_a_switch_by_its_name():
    data = pd.DataFrame({"migration": [False, True, True], "avg_jct": [7200.0, 3600, 5400]})
    ax = plotting.summary_bars(data, x="migration", unit="h")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["no migration", "migration"]
    assert [p.get_height() for p in ax.patches] == [2.0, 1.25]


def test_summary_bars_skip_failed_runs():
    data = pd.DataFrame(
        {
            "scheduler": ["fifo", "fifo", "las"],
            "avg_jct": [3600.0, 7200, 1800],
            "status": ["ok", "ok", "error"],
        }
    )
    ax = plotting.summary_bars(data, unit="h")
    assert [p.get_height() for p in ax.patches] == [1.5]


def test_policy_colours_are_fixed_and_variants_stay_in_the_family():
    assert plotting.policy_color("las") == style.PALETTE["las"]
    assert plotting.policy_color("las+preemption") != plotting.policy_color("las")
    assert plotting.policy_color("unknown-policy") == plotting.policy_color("unknown-policy")
    colours = plotting.colors_for(["consolidate", "fifo"])  # the same palette entry
    assert colours["consolidate"] != colours["fifo"]


@pytest.mark.parametrize(
    "seconds, unit",
    [([30], "s"), ([600], "min"), ([3 * 3600], "h"), ([5 * 86400], "days")],
)
def test_time_unit(seconds, unit):
    assert plotting.time_unit(seconds)[0] == unit


def _render(results, folder):
    fig = plotting.policy_comparison(results)
    paths = plotting.save_figure(fig, "cmp", folder)
    plt.close(fig)
    return paths


def test_saved_figures_are_byte_stable(toy_results, tmp_path):
    first = _render(toy_results, tmp_path / "a")
    second = _render(toy_results, tmp_path / "b")
    assert [p.name for p in first] == ["cmp.svg", "cmp.png", "cmp.csv"]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    svg = first[0].read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg
    assert b"Software" not in first[1].read_bytes()


def test_saved_csv_holds_the_plotted_numbers(toy_results, tmp_path):
    ax = plotting.jct_cdf(toy_results, unit="s")
    plotting.save_figure(ax.figure, "cdf", tmp_path)
    data = pd.read_csv(tmp_path / "cdf.csv")
    assert list(data.columns) == ["label", "jct", "fraction", "unit"]
    fifo = data[data["label"] == "fifo"]
    assert fifo["jct"].iloc[0] == 300 and fifo["jct"].iloc[-1] == 1620
    with pytest.raises(ValueError, match="plain file name"):
        plotting.save_figure(ax.figure, "../escape", tmp_path)


@pytest.mark.parametrize(
    "plot, column",
    [
        (lambda r: plotting.jct_cdf(r, unit="min"), "jct"),
        (lambda r: plotting.per_vc_bars(r, "avg_jct", unit="min"), "avg_jct"),
    ],
)
def test_the_csv_unit_column_is_true_to_its_values(toy_results, plot, column):
    ax = plot(toy_results)
    data = plotting.plotted_data(ax)
    assert set(data["unit"]) == {"min"}
    fifo = data.loc[data["label"] == "fifo", column]
    # the longest job (j4, 1,620 s); VC b: (900 + 1,260 + 960 + 660) / 4 = 945 s
    assert fifo.max() == pytest.approx(1620 / 60 if column == "jct" else 945 / 60)


def test_a_cdf_equal_to_an_earlier_one_is_labelled_and_marked_apart(toy_results):
    same = {"fifo": toy_results["fifo"], "fair": toy_results["fifo"], "sjf": toy_results["sjf"]}
    ax = plotting.jct_cdf(same)
    assert [line.get_label() for line in ax.lines] == ["fifo", "fair (same as fifo)", "sjf"]
    styles = {(line.get_linestyle(), line.get_marker()) for line in ax.lines}
    assert len(styles) == 3  # no two lines look alike, whatever their colours


def test_node_time_heatmap_shows_gpus_per_node(toy_results):
    ax = plotting.node_time_heatmap(toy_results["fifo"])
    image = ax.get_images()[0].get_array()
    assert image.shape[0] == 4  # one row per node
    assert image.max() <= 4 and image.min() >= 0
    usage = toy_results["fifo"].node_usage()
    assert image[:, 0].tolist() == usage.iloc[0].tolist()  # at t=0 only j1 runs, on n0
    assert usage.iloc[0].tolist() == [4, 0, 0, 0]


def test_node_time_heatmap_labels_the_rows_by_owning_vc():
    workload = asim.presets.workload("toy")
    result = asim.simulate(workload, asim.presets.cluster("toy", partition="nodes"))
    ax = plotting.node_time_heatmap(result)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert list(ax.get_yticks()) == [1.0, 3.0]  # VC a owns n0, n1; b owns n2, n3


def test_importing_analysim_does_not_import_matplotlib():
    code = "import sys, analysim; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_reexports_the_sweep_and_occupancy_plots():
    from analysim.plotting import occupancy
    from analysim.sweep import plots as sweep_plots

    assert plotting.gantt is occupancy.gantt
    assert plotting.metric_vs is sweep_plots.metric_vs
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        plotting.nope  # noqa: B018


def test_saturation_curves_draw_the_mean_and_range_over_seeds_per_placement():
    # two placements x two seeds x three arrived percents
    frame = pd.DataFrame(
        {
            "arrived_pct": [0, 1, 2] * 4,
            "allocated_pct": [0, 1, 2, 0, 1, 1, 0, 1, 1.5, 0, 0.5, 1.5],
            "placement": ["fgd"] * 6 + ["random"] * 6,
            "seed": ([42] * 3 + [43] * 3) * 2,
        }
    )
    ax = plotting.saturation_curves(frame, "allocated_pct")
    fgd, random = ax.lines
    assert fgd.get_label() == "fgd" and fgd.get_ydata().tolist() == [0, 1, 1.5]
    assert random.get_ydata().tolist() == [0, 0.75, 1.5]
    assert fgd.get_linestyle() != random.get_linestyle()
    data = plotting.plotted_data(ax)
    row = data[(data["placement"] == "fgd") & (data["arrived_pct"] == 2)].iloc[0]
    assert (row["low"], row["high"], row["count"], row["unit"]) == (1, 2, 2, "%")
    assert "n = 2 seeds; band: lowest to highest" in ax.get_xlabel()
    with pytest.raises(ValueError, match="no column"):
        plotting.saturation_curves(frame.drop(columns="placement"))
    fig = plotting.saturation_panels(frame.assign(frag_ratio_pct=1.0))
    assert [a.get_title(loc="left") for a in fig.axes] == ["(a)", "(b)"]
