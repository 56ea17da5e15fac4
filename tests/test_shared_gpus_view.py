"""Shared GPUs as the user sees them: ``Result.snapshot`` and ``node_usage`` of a resource-mode
run (several jobs on one GPU), the occupancy heatmap filling a shared GPU to its milli in
use, and the explorer offering the FGD study's placers for a workload with shares."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import colors as mcolors  # noqa: E402
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402

import analysim as asim  # noqa: E402
from analysim import Cluster, SimConfig, Workload  # noqa: E402
from analysim.plotting.occupancy import FREE, occupancy_heatmap, share_bands  # noqa: E402

WHOLE_GPU_COLUMNS = ["node", "rack", "gpu", "node_vc", "job_id", "job_vc", "borrowed"]
SHARE_COLUMNS = ["job_ids", "job_vcs", "job_milli", "milli_used"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _run() -> asim.Result:
    """n0 (1 GPU): a (500 milli, VC x, 100 s) and b (500, VC y, 50 s) share it from 0;
    n1 (2 GPUs): c (300, x) from 0 and a CPU-only job d (50 s) beside it."""
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "vc": ["x", "y", "x", "x"],
            "user": "u",
            "submit_time": 0.0,
            "duration": [100.0, 50.0, 100.0, 50.0],
            "num_gpus": [1, 1, 1, 0],
            "gpu_milli": [500, 500, 300, 0],
            "cpu_milli": [0, 0, 0, 1000],
        }
    )
    nodes = pd.DataFrame({"node": ["n0", "n1"], "rack": "r", "gpus": [1, 2]})
    config = SimConfig(quantum=60, sample_every=10, placement="best_fit")
    return asim.simulate(Workload.from_frame(jobs), Cluster.from_frame(nodes), config)


def test_the_snapshot_lists_every_share_of_a_gpu():
    result = _run()
    assert result.resource_mode
    assert result.jobs[["gpu_milli", "cpu_milli"]].values.tolist() == [
        [500, 0],
        [500, 0],
        [300, 0],
        [0, 1000],
    ]
    snap = result.snapshot(10)
    assert snap.columns.tolist() == WHOLE_GPU_COLUMNS + SHARE_COLUMNS
    rows = snap[["node", "gpu", "job_id", "job_vc", *SHARE_COLUMNS]].values.tolist()
    assert rows == [
        ["n0", 0, "a", "x", "a,b", "x,y", "500,500", 1000],  # a: the first of the largest
        ["n1", 0, "c", "x", "c", "x", "300", 300],
        ["n1", 1, None, None, None, None, None, 0],
    ]
    # b leaves at 50: a still holds its half (it did not vanish with b)
    later = result.snapshot(60)
    assert later[["job_ids", "milli_used"]].values.tolist() == [["a", 500], ["c", 300], [None, 0]]
    assert result.snapshot(100)["milli_used"].tolist() == [0, 0, 0]


def test_node_usage_counts_a_shared_gpu_once():
    usage = _run().node_usage(every=50)
    assert usage.index.tolist() == [0.0, 50.0, 100.0]
    assert usage.values.tolist() == [[1, 1], [1, 1], [0, 0]]


def test_a_saved_result_gives_the_same_snapshot(tmp_path):
    result = _run()
    again = asim.Result.load(result.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(again.snapshot(10), result.snapshot(10))


def test_a_whole_gpu_snapshot_keeps_its_columns():
    toy = asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    assert not toy.resource_mode
    assert toy.snapshot(300).columns.tolist() == WHOLE_GPU_COLUMNS


# -- the heatmap ------------------------------------------------------------------------------
def _hand_snapshot() -> pd.DataFrame:
    """n0: GPU 0 two 500-milli shares of VC a (full), GPU 1 one 300 share of VC b;
    n1: GPU 0 a whole-GPU job of VC a, GPU 1 a 600 share of a and a 400 share of b."""
    return pd.DataFrame(
        {
            "node": ["n0", "n0", "n1", "n1"],
            "gpu": [0, 1, 0, 1],
            "job_id": ["s1", "s3", "w", "s4"],
            "job_vc": ["a", "b", "a", "a"],
            "job_ids": ["s1,s2", "s3", "w", "s4,s5"],
            "job_vcs": ["a,a", "b", "a", "a,b"],
            "job_milli": ["500,500", "300", "1000", "600,400"],
            "milli_used": [1000, 300, 1000, 1000],
        }
    )


def test_share_bands_fill_a_gpu_to_its_milli_in_use():
    bands = share_bands(_hand_snapshot())
    # two 500 shares of one VC: drawn whole (no band); a whole-GPU job likewise
    assert set(bands) == {1, 3}
    assert bands[1] == [("b", 0.0, 0.3)]  # one 300 share: 30 % of the cell, from the bottom
    assert bands[3] == [("a", 0.0, 0.6), ("b", 0.6, 0.4)]  # one band per VC, stacked
    assert share_bands(_hand_snapshot().drop(columns=SHARE_COLUMNS)) == {}


def test_the_heatmap_draws_two_halves_as_full_and_a_300_share_as_30_percent():
    palette = {"a": "#0173b2", "b": "#de8f05"}
    ax = occupancy_heatmap(_hand_snapshot(), palette=palette)
    image = ax.get_images()[0].get_array()
    a, b, free = (np.array(mcolors.to_rgb(c)) for c in (palette["a"], palette["b"], FREE))
    # rows: GPU index; columns: node
    np.testing.assert_allclose(image[0, 0], a)  # two 500s of VC a: the whole cell
    np.testing.assert_allclose(image[0, 1], a)  # a whole-GPU job, as ever
    np.testing.assert_allclose(image[1, 0], free)  # the 300 share is drawn over a free cell
    (patches,) = [c for c in ax.collections if isinstance(c, PatchCollection)]
    boxes = [p.get_extents() for p in patches.get_paths()]
    corners = [
        (round(e.x0, 6), round(e.y0, 6), round(e.width, 6), round(e.height, 6)) for e in boxes
    ]
    assert corners == [
        (-0.5, 0.5, 1.0, 0.3),  # n0 GPU 1: 30 % of its cell, VC b
        (0.5, 0.5, 1.0, 0.6),  # n1 GPU 1: 600 of VC a ...
        (0.5, 1.1, 1.0, 0.4),  # ... then 400 of VC b above it
    ]
    fills = [tuple(np.round(f[:3], 6)) for f in patches.get_facecolor()]
    assert fills == [tuple(np.round(x, 6)) for x in (b, a, b)]
    # a white line between the shares of each GPU held by several: at half of n0's GPU 0
    (edges,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    lines = [np.round(s, 6).tolist() for s in edges.get_segments()]
    assert lines == [[[-0.5, 0.0], [0.5, 0.0]], [[0.5, 1.1], [1.5, 1.1]]]
    labels = {t.get_text() for t in ax.texts}
    assert {"s1\ns2", "s3", "w", "s4\ns5"} <= labels


def test_a_whole_gpu_heatmap_adds_nothing_for_shares():
    ax = occupancy_heatmap(_hand_snapshot().drop(columns=SHARE_COLUMNS))
    assert not ax.collections
    assert {t.get_text() for t in ax.texts} == {"s1", "s3", "w", "s4"}


def test_the_wrapped_heatmap_fades_a_share_to_its_milli():
    from analysim.explorer.render import DETAILED_NODES, MILLI, heatmap_figure

    nodes = [f"n{i}" for i in range(DETAILED_NODES + 40)]
    snap = pd.DataFrame(
        {
            "node": nodes,
            "gpu": 0,
            "job_id": None,
            "job_vc": None,
            "job_ids": None,
            "job_vcs": None,
            "job_milli": None,
            "milli_used": 0,
        }
    )
    snap.loc[0, ["job_id", "job_vc", "job_ids", "job_vcs", "job_milli", "milli_used"]] = [
        "s",
        "a",
        "s",
        "a",
        "300",
        300,
    ]
    snap.loc[1, ["job_id", "job_vc", "job_ids", "job_vcs", "job_milli", "milli_used"]] = [
        "w",
        "a",
        "w",
        "a",
        "1000",
        MILLI,
    ]
    fig = heatmap_figure(snap, ["a"], "t = 0 s")
    ax = fig.axes[0]
    picture = ax.get_images()[0].get_array()
    color, free = np.array(mcolors.to_rgb("#0173b2")), np.array(mcolors.to_rgb(FREE))
    np.testing.assert_allclose(picture[0, 0], free + 0.3 * (color - free))
    np.testing.assert_allclose(picture[0, 1], color)
    assert ax.get_title() == (
        "t = 0 s: 2 of 200 GPUs in use (1.3 GPUs of milli in use) on 200 nodes"
    )


# -- the explorer -----------------------------------------------------------------------------
def test_the_explorer_offers_the_fgd_placers_for_openb_and_runs_fgd():
    pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets")
    from analysim.explorer import explore
    from analysim.explorer.layout import PLACER_HELP, SHARE_PLACERS

    assert SHARE_PLACERS == ("fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering")
    app = explore("bundled:openb", sync=True, run=False)  # GPU shares, CPU and memory
    placement = app.controls["placement"]
    assert list(placement.options) == [*asim.policies.PLACERS.names, *SHARE_PLACERS]
    assert all(PLACER_HELP[name] for name in placement.options)
    assert app.outputs["placer_help"].layout.display == ""
    # three controls at once, one run (as after the debounce): the 200x trace on 690 GPUs
    app._set_controls({"cluster_size": 0.1, "load_scale": 200.0, "placement": "fgd"})
    app._enable()
    app.run_now()
    assert app.message == "" and app.result.config["placement"] == "fgd"
    assert app.result.resource_mode and app.cluster.total_gpus == 690
    assert "fgd" in placement.tooltip and "fragmentation" in placement.tooltip
    assert "FGD study" in app.outputs["placer_help"].value
    # the heatmap at the moment shown: shared GPUs drawn in bands or whole, counted in the title
    ax = app.moment.heatmap_figure().axes[0]
    snap = app.result.snapshot(float(app.outputs["time"].value))
    several = int(snap["job_ids"].dropna().str.contains(",").sum())
    assert several > 0 and f"{several:,} GPUs held by several shares" in ax.get_title()
    timelines = render_panels(app)
    assert timelines[-1] == "FGD fragmentation (GPUs: milli / 1000)"
    # a whole-GPU workload offers the whole-GPU placers only, back to consolidate
    app.controls["workload"].value = "toy"
    app.controls["cluster_size"].value = 1.0
    assert list(placement.options) == asim.policies.PLACERS.names
    assert placement.value == "consolidate" and app.result.config["placement"] == "consolidate"
    assert app.outputs["placer_help"].layout.display == "none"
    assert len(render_panels(app)) == 3  # as before: no FGD panel for whole-GPU runs


def render_panels(app) -> list[str]:
    """The titles of the explorer's timeline panels, as drawn now."""
    return [ax.get_title(loc="left") for ax in app.moment.timeline_figure().axes]


def test_a_config_naming_an_fgd_placer_offers_them_on_any_workload():
    pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets")
    from analysim.explorer import explore

    app = explore("toy", sync=True, config={"placement": "gpu_packing"})
    assert "gpu_packing" in app.controls["placement"].options
    assert app.result.config["placement"] == "gpu_packing" and app.result.resource_mode
    # a whole-GPU run in resource mode: every GPU is whole, drawn as ever
    assert not share_bands(app.result.snapshot(300))


# -- the time replay of notebook 07 -----------------------------------------------------------
def test_load_trace_scales_the_openb_cluster_and_keeps_the_shares():
    from analysim.experiments.figures import load_trace

    trace = load_trace("bundled:openb", speedup=200.0, cluster_size=0.1)
    full = load_trace("bundled:openb")
    assert trace.cluster.total_gpus == 690 and full.cluster.total_gpus == 6212
    assert len(trace.cluster.nodes) == 121 == round(len(full.cluster.nodes) * 0.1)
    # the first tenth of the nodes, with their CPU and memory capacities
    kept = full.cluster.nodes.iloc[:121].reset_index(drop=True)
    pd.testing.assert_frame_equal(trace.cluster.nodes[kept.columns], kept)
    jobs, before = trace.workload.jobs, full.workload.jobs
    np.testing.assert_allclose(jobs["submit_time"] * 200.0, before["submit_time"])
    assert (jobs["gpu_milli"] < 1000).sum() == (before["gpu_milli"] < 1000).sum() > 0
    with pytest.raises(ValueError, match="cluster_size must be a number > 0, got 0"):
        load_trace("bundled:openb", cluster_size=0)


def test_preemption_arms():
    from analysim.experiments.figures import preemption_arms

    assert preemption_arms(False) == {
        "no preemption": {"preemption": False},
        "preemption": {"preemption": True},
    }
    assert preemption_arms()["preemption + migration"] == {"preemption": True, "migration": True}


def test_the_placement_parameter_takes_the_fgd_placers():
    from analysim.faces.notebook_params import ParameterError, check_parameters

    check_parameters(placement="fgd", cluster_size=0.1)
    with pytest.raises(ParameterError, match="parameter cluster_size = 0: must be a number > 0"):
        check_parameters(cluster_size=0)
    with pytest.raises(ParameterError, match="unknown placement"):
        check_parameters(placement="nope")


def test_scale_cluster_lives_in_the_package():
    from analysim.explorer import inputs
    from analysim.inputs import scaling

    assert inputs.scale_cluster is scaling.scale_cluster
    assert inputs.scale_load is scaling.scale_load


def test_queue_window_and_a_timeline_cut_there():
    from analysim.experiments.figures import queue_window
    from analysim.plotting.timeline import timeline_data

    # toy under FIFO, sampled every 60 s: jobs wait at 900 s (last), the run ends at 1,800 s
    toy = {
        "fifo": asim.simulate(
            asim.presets.workload("toy"), asim.presets.cluster("toy"), sample_every=60
        )
    }
    assert queue_window(toy) == 1350.0  # 1.5 x 900 s
    assert queue_window(toy, margin=3.0) == 1800.0  # never past the end
    cut = timeline_data(toy, "waiting_jobs", until=600.0)
    assert cut["time"].max() == 600.0
    assert timeline_data(toy, "waiting_jobs")["time"].max() == 1800.0  # no cut
