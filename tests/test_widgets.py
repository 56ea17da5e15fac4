"""The explorer app driven from code, without a browser: every check reads widget state."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets (the notebooks extra)")

import analysim as asim  # noqa: E402
from analysim.widgets import explore, parse_cost, scale_cluster, teach  # noqa: E402


@pytest.fixture
def app():
    """The explorer on the toy preset, running each change at once."""
    return explore("toy", sync=True)


def test_importing_analysim_does_not_import_ipywidgets():
    code = "import sys, analysim; print('ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_first_run_fills_summary_slider_and_why(app):
    assert app.runs == 1 and app.message == ""
    assert app.result.summary()["avg_jct"] == 862.5  # the worked FIFO example
    summary = app.outputs["summary"].value
    # times in a natural unit, one per row: 862.5 s = 14.4 min
    assert ">avg_jct</td><td class='unit'>min</td><td class='num'>14.4</td></tr>" in summary
    assert ">gpu_utilization</td><td class='unit'>%</td><td class='num'>83.8</td>" in summary
    assert (
        "title='avg_jct: mean job completion time (end - submit), finished jobs (min)'" in summary
    )
    assert "<th>fifo<br><small>this run</small></th>" in summary
    assert "previous run" not in summary
    slider = app.outputs["time"]
    assert (slider.min, slider.max) == (0, 1800.0)  # the run ends at 1800 s
    # the slider starts where the queue peaks: at 900 s j5, j6, j7, j8 wait
    assert slider.value == 900.0
    assert [job for _, job in app.outputs["waiting"].options] == ["j5", "j6", "j7", "j8"]
    assert app.outputs["waiting_label"].value == "<b>4 waiting jobs</b> at t = 15 min (900 s)"
    assert app.outputs["moment"].value == "<b>moment shown: t = 15 min (900 s)</b> of 30 min"
    assert app.outputs["why"].value == (
        "j5 at t=900 s: it waits because the cluster is full: 16 of its 16 GPUs are in use, "
        "0 free, and it needs 1."
    )
    assert bytes(app.outputs["heatmap"].value).startswith(b"\x89PNG")
    assert bytes(app.outputs["plots"].value).startswith(b"\x89PNG")


def test_changing_the_scheduler_reruns_and_keeps_the_previous_numbers(app):
    first = app.result
    app.controls["scheduler"].value = "sjf"
    assert app.runs == 2 and app.result is not first and app.previous is first
    assert app.result.config["scheduler"] == "sjf"
    assert app.result.summary()["avg_jct"] == 727.5
    row = app.summary.loc["avg_jct"]
    assert (row["fifo"], row["sjf"]) == (862.5, 727.5)  # columns named by what differs
    html = app.outputs["summary"].value
    assert "<th>fifo<br><small>previous run</small></th>" in html
    assert "<th>sjf<br><small>this run</small></th>" in html
    assert "-15.7%" in html  # (727.5 - 862.5) / 862.5
    assert app.outputs["time"].max == 2160.0  # SJF ends at 2160 s (j4 runs last)


def test_the_progress_bar_moves_while_a_run_goes_on(app):
    seen, statuses = [], []
    app.outputs["progress"].observe(lambda change: seen.append(change["new"]), names="value")
    app.outputs["status"].observe(lambda change: statuses.append(change["new"]), names="value")
    app.controls["scheduler"].value = "sjf"
    steps = [v for v in seen if v > 0]
    assert len(steps) == 21 and steps == sorted(steps) and steps[-1] == 1.0  # 20 slices + end
    assert seen[-1] == 0.0  # reset once the run is over
    assert any(s.startswith("running sjf on toy (8 jobs)… ") for s in statuses)
    assert statuses[-1].startswith("run 2: sjf on toy, 8 jobs, 16 GPUs — simulated in ")


def test_slider_and_pick_explain_the_waiting_jobs(app):
    app.outputs["time"].value = 300
    assert [job for _, job in app.outputs["waiting"].options] == ["j4", "j5"]
    assert app.outputs["waiting"].value == "j5"  # the picked job stays picked while it waits
    assert app.outputs["why"].value == (
        "j5 at t=300 s: it waits because it is ranked behind j4 in its queue; j4, first in "
        "line, does not fit (too few free GPUs), and without backfill no job ranked below it "
        "starts."
    )
    app.outputs["waiting"].value = "j4"
    assert app.outputs["why"].value == (
        "j4 at t=300 s: it waits because the cluster is full: 14 of its 16 GPUs are in use, "
        "2 free, and it needs 8."
    )
    app.outputs["time"].value = 1000  # nobody waits after 960
    assert app.outputs["waiting"].options == ()
    assert app.outputs["why"].value == "No job is waiting at t = 16 min 40 s (1,000 s)."


def test_every_control_reaches_the_config(app):
    changes = {
        "placement": "spread",
        "preemption": True,
        "quantum": 120.0,
        "checkpoint_cost": "30",
        "seed": 3,
    }
    for name, value in changes.items():
        app.controls[name].value = value
    config = app.result.config
    assert (config["placement"], config["preemption"], config["quantum"], config["seed"]) == (
        "spread",
        True,
        120.0,
        3,
    )
    assert config["checkpoint_cost"] == {"name": "constant", "seconds": 30.0}
    assert app.runs == 1 + len(changes)
    if "migration" in asim.SimConfig.fields():
        app.controls["migration"].value = True
        app.controls["migration_cost"].value = "15"
        app.controls["borrowing"].value = True
        assert app.result.config["migration"] is True
        assert app.result.config["migration_cost"] == {"name": "constant", "seconds": 15.0}
        assert app.result.config["borrowing"] is True


def test_cluster_too_small_shows_a_message_and_keeps_the_results(app):
    before, summary = app.result, app.outputs["summary"].value
    app.controls["cluster_size"].value = 0.25  # one 4-GPU node; j2 and j4 ask for 8
    assert app.result is before and app.runs == 1
    assert app.outputs["summary"].value == summary
    assert app.message == (
        "Not run: the cluster is too small for this workload: job j2 asks for 8 GPUs but VC b "
        "can get at most 4 on 4 GPUs; 2 job(s) could never run. Choose a larger cluster size."
    )
    assert "the results below are from the previous run" in app.outputs["message"].value
    app.controls["cluster_size"].value = 2.0  # valid again: runs, and the message goes
    assert app.runs == 2 and app.message == "" and app.outputs["message"].value == ""
    assert app.cluster.total_gpus == 32


@pytest.mark.parametrize(
    ("control", "value", "message"),
    [
        ("checkpoint_cost", "-5", "checkpoint cost must be a number of seconds >= 0, got -5"),
        ("checkpoint_cost", "abc", "unknown cost model 'abc'"),
        ("checkpoint_cost", "{oops", "checkpoint cost: not valid JSON"),
        ("quantum", 0.5, "quantum (0.5) must be a whole multiple of step (1.0)"),
        ("migration_cost", "-1", "migration cost must be a number of seconds >= 0, got -1"),
    ],
)
def test_bad_values_show_a_message(app, control, value, message):
    before = app.result
    app.controls[control].value = value
    assert message in app.message and app.message.startswith("Not run: ")
    assert app.result is before


def test_a_failing_run_never_raises_out_of_the_callback(app, monkeypatch):
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(app, "_simulate", broken)
    app.controls["scheduler"].value = "sjf"
    assert app.message == "Not run (internal error): RuntimeError: boom"
    assert app.result.config["scheduler"] == "fifo"


def test_debounced_changes_make_one_run():
    app = explore("toy", debounce=0.05)
    assert app.runs == 1  # the first run is synchronous
    app.controls["scheduler"].value = "sjf"
    app.controls["placement"].value = "first_fit"
    app.wait()
    assert app.runs == 2
    assert (app.result.config["scheduler"], app.result.config["placement"]) == (
        "sjf",
        "first_fit",
    )
    assert app.outputs["progress"].value == 0.0 and "run 2: sjf" in app.outputs["status"].value


def test_run_now_takes_the_place_of_a_pending_debounced_run():
    app = explore("toy", debounce=30)  # the debounced run would come much later
    app.controls["scheduler"].value = "sjf"
    app.run_now()
    app.wait(timeout=5)
    assert app.runs == 2 and app.result.config["scheduler"] == "sjf"
    assert not app._timer.is_alive()  # cancelled: no third run


def test_a_change_during_a_run_is_run_after_it():
    app = explore("toy", debounce=0.01)
    slow = app._simulate

    def slower(*args):
        time.sleep(0.3)  # the second change arrives while this run goes on
        return slow(*args)

    app._simulate = slower
    app.controls["scheduler"].value = "sjf"
    time.sleep(0.15)
    app.controls["placement"].value = "spread"
    app.wait()
    assert (app.result.config["scheduler"], app.result.config["placement"]) == ("sjf", "spread")


def test_a_loaded_trace_with_its_cluster():
    workload = asim.presets.workload("toy")
    big = asim.Cluster.uniform(2, 5, 8, name="big")  # 80 GPUs: too many to step through
    app = explore(workload, big, sync=True)
    assert app.controls["workload"].value == "trace"
    assert app.result.meta["total_gpus"] == 80
    assert app.stepper.sim is None and app.stepper.controls["step"].disabled
    app.controls["load_scale"].value = 2.0  # arrivals twice as fast
    assert app.result.jobs["submit_time"].max() == 450.0
    with pytest.raises(ValueError, match="needs the cluster"):
        explore(workload)


def test_a_trace_folder(tmp_path):
    from trace_samples import helios_folder

    folder = helios_folder(tmp_path)
    trace = asim.traces.read_helios(folder)
    app = explore(str(folder), sync=True)
    assert app.controls["workload"].value == "trace"
    assert app.message.startswith("1 job(s) ask for more GPUs than their VC")  # job 104
    assert app.result.meta["total_gpus"] == trace.cluster.total_gpus
    assert app.result.jobs["job_id"].tolist() == trace.workload.jobs["job_id"].tolist()
    with pytest.raises(ValueError, match="a trace folder, a Trace or a Workload; got 'nowhere'"):
        explore("nowhere")


def test_a_trace_from_a_reader(shared_data):
    folder = shared_data / "openb"  # 8,152 tasks on its own 1,213 nodes
    trace = asim.traces.read_openb(
        folder / "openb_pod_list_default.csv", folder / "openb_node_list_gpu_node.csv"
    )
    app = explore(trace, sync=True, run=False)
    app.controls["load_scale"].value = 0.5  # one run: half as many arrivals per second
    assert app.message == "" and app.runs == 1
    assert app.result.meta["total_gpus"] == trace.cluster.total_gpus
    assert len(app.result.jobs) == len(trace.workload.jobs)


def test_stepper_steps_through_the_toy_run(app):
    stepper = app.stepper
    assert stepper.sim is not None and stepper.sim.now == 0.0
    assert stepper.step() == 0.0  # the first step: j1 arrives and starts at 0
    assert stepper.step() == 60.0  # j2 arrives at 60
    assert "j2" in stepper.outputs["jobs"].value
    assert stepper.outputs["time"].value.startswith("t = 1 min (60 s) — ")
    assert stepper.outputs["events"].value == "at t=60 s: j2 submitted; j2 started on n2,n3"
    stepper.step()
    stepper.step()  # j4 (8 GPUs) arrives at 180 and waits: nothing starts
    assert stepper.outputs["events"].value == "at t=180 s: j4 submitted"
    assert bytes(stepper.outputs["gantt"].value).startswith(b"\x89PNG")
    stepper.controls["run"].click()
    assert stepper.sim.done and stepper.sim.now == 1800.0
    stepper.controls["reset"].click()
    assert stepper.sim.now == 0.0 and not stepper.sim.started


def test_teach_steps_a_run_on_its_own():
    stepper = teach(scheduler="sjf")
    assert stepper.sim.config.scheduler == "sjf"
    times = [stepper.step() for _ in range(5)]
    assert times == [0.0, 60.0, 120.0, 180.0, 300.0]
    # under SJF j5 (600 s) starts at once on n1, ahead of j4 (1200 s)
    assert stepper.outputs["events"].value == "at t=300 s: j5 submitted; j5 started on n1"
    assert stepper.step() == 420.0
    assert stepper.outputs["events"].value == "at t=420 s: j3 finished on n1"
    with pytest.raises(ValueError, match="needs the cluster"):
        teach(asim.presets.workload("toy"))


def test_app_why_uses_the_latest_result(app):
    assert app.why("j4", 200) == (
        "j4 at t=200 s: it waits because the cluster is full: 14 of its 16 GPUs are in use, "
        "2 free, and it needs 8."
    )


def test_scale_cluster():
    toy = asim.presets.cluster("toy", partition="nodes")
    half = scale_cluster(toy, 0.5)
    assert half.nodes["node"].tolist() == ["n0", "n2"]  # one node of each VC
    double = scale_cluster(toy, 2.0)
    assert double.total_gpus == 32
    assert sorted(double.nodes["node"]) == ["n0", "n0+1", "n1", "n1+1", "n2", "n2+1", "n3", "n3+1"]
    assert double.vc_capacity() == {"a": 16, "b": 16}
    quota = scale_cluster(asim.presets.cluster("toy", partition="quota"), 0.5)
    assert quota.quotas == {"a": 4, "b": 4}
    with pytest.raises(ValueError, match="cluster size must be a number > 0"):
        scale_cluster(toy, 0)


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("", {"name": "size_scaled"}),
        ("size_scaled", {"name": "size_scaled"}),
        ("40", {"name": "constant", "seconds": 40.0}),
        ('{"name": "per_job"}', {"name": "per_job"}),
        ("per_job", {"name": "per_job"}),
    ],
)
def test_parse_cost(text, spec):
    assert parse_cost(text, "cost") == spec


# -- comparisons -----------------------------------------------------------------------------
def test_a_pinned_baseline_stays_and_columns_say_what_differs(app):
    app.pin()
    app.controls["scheduler"].value = "sjf"
    app.controls["preemption"].value = True
    runs, names, roles = app.shown_runs()
    assert roles == ["baseline", "this run"]  # the run in between is not shown
    assert names == ["fifo", "sjf + preemption"]
    assert list(app.summary.columns) == ["fifo", "sjf + preemption", "change vs fifo"]
    assert app.summary.loc["avg_jct", "fifo"] == 862.5
    app.keep("mine")
    app.controls["scheduler"].value = "srtf"
    runs, names, roles = app.shown_runs()
    assert roles == ["baseline", "kept", "this run"]
    assert names == ["fifo", "mine", "srtf + preemption"]
    assert "<th>mine<br><small>kept</small></th>" in app.outputs["summary"].value
    app.clear()
    assert app.shown_runs()[2] == ["previous run", "this run"]


def test_kept_runs_are_capped():
    from analysim.explorer.compare import MAX_KEPT

    app = explore("toy", sync=True)
    for quantum in range(1, MAX_KEPT + 3):
        app.controls["quantum"].value = 60.0 * quantum
        app.keep()
    assert len(app.kept) == MAX_KEPT
    assert app.kept[-1].settings["quantum"] == 60.0 * (MAX_KEPT + 2)


def test_a_workload_change_resets_the_comparison(app):
    app.pin()
    app.keep()
    app.controls["load_scale"].value = 2.0
    assert app.baseline is None and app.kept == [] and app.previous is None
    assert app.note.startswith("The workload changed: the comparison was reset")
    assert app.shown_runs()[2] == ["this run"]


def test_identical_results_are_noted_with_the_reason(app):
    app.pin()
    app.controls["scheduler"].value = "las"  # toy: no job reaches 5 GPU-h; no preemption
    assert app.note.startswith(
        "Same results as the baseline (fifo): every job started and ended at the same moments."
    )
    assert "LAS without preemption ranks like FIFO" in app.note
    app.controls["scheduler"].value = "sjf"  # different results: no note
    assert app.note == ""
    app.clear()  # compared with the previous run (sjf) now
    app.controls["checkpoint_cost"].value = "100"
    # without preemption the checkpoint cost does not apply: the runs are named alike
    assert app.note.startswith("Same results as the previous run (sjf):"), app.note
    assert "the checkpoint cost is paid only on preemption" in app.note


def test_labels_name_what_differs():
    from analysim.explorer.compare import labels

    base = {"scheduler": "fifo", "preemption": False, "migration": False, "quantum": 60.0}
    assert labels([base, {**base, "scheduler": "las", "preemption": True}]) == [
        "fifo",
        "las + preemption",
    ]
    assert labels([base, {**base, "preemption": True}]) == ["no preemption", "preemption"]
    assert labels([base, {**base, "quantum": 120.0}]) == ["quantum 60 s", "quantum 120 s"]
    assert labels([base, base]) == ["fifo", "fifo (2)"]


# -- units and the moment --------------------------------------------------------------------
def test_units_and_moments():
    from analysim.explorer.units import duration, metric_unit, moment

    assert moment(45) == "45 s"
    assert moment(1000) == "16 min 40 s (1,000 s)"
    assert moment(19_200) == "5 h 20 min (19,200 s)"
    assert moment(310_800) == "3 d 14 h 20 min (310,800 s)"
    assert duration(5400) == "90 min" and duration(3 * 86400) == "3 d"
    import pandas as pd

    assert metric_unit("avg_jct", pd.Series([7200.0, 30.0])) == ("h", 3600.0)
    assert metric_unit("gpu_utilization", pd.Series([0.5])) == ("%", 0.01)


def test_the_slider_goes_to_a_busy_moment_on_a_workload_change(app):
    app.outputs["time"].value = 100
    app.controls["scheduler"].value = "sjf"  # same workload: the moment stays
    assert app.outputs["time"].value == 100
    app.controls["workload"].value = "scenario: borrowing"
    # the queue is longest (2 of a's jobs) from 120 s; sampled every 300 s: at 300 s
    assert app.outputs["time"].value == 300.0
    assert [job for _, job in app.outputs["waiting"].options] == ["a2", "a3"]
    app.controls["workload"].value = "scenario: fragmentation"
    # under consolidate nobody waits: the moment the most GPUs are in use (all 8 from 60 s)
    assert app.outputs["time"].value == 300.0 and app.outputs["waiting"].options == ()


# -- controls ----------------------------------------------------------------------------------
def test_controls_that_do_nothing_are_disabled(app):
    c = app.controls
    assert c["days"].disabled and c["las_thresholds"].disabled and c["migration_cost"].disabled
    assert c["checkpoint_cost"].disabled  # no preemption, no borrowing
    c["scheduler"].value = "las"
    assert not c["las_thresholds"].disabled and not c["las_starvation"].disabled
    c["preemption"].value = True
    assert not c["checkpoint_cost"].disabled
    c["workload"].value = "venus"
    assert not c["days"].disabled


def test_las_parameters_reach_the_scheduler(app):
    app.controls["scheduler"].value = "las"
    assert app.result.config["scheduler"] == "las"  # LAS's defaults: its plain name
    app.controls["las_thresholds"].value = "0.5, 2"
    app.controls["las_starvation"].value = "off"
    assert app.result.config["scheduler"] == {
        "name": "las",
        "thresholds": [1800.0, 7200.0],
        "starvation_factor": None,
    }
    app.controls["las_thresholds"].value = "2, 1"
    assert app.message == "Not run: LAS thresholds must be increasing and > 0 GPU-hours, got '2, 1'"


def test_the_load_range_reaches_a_sparse_trace():
    from analysim.explorer.inputs import LOAD_RANGE

    app = explore("toy", sync=True)
    stops = [value for _, value in app.controls["load_scale"].options]
    assert (stops[0], stops[-1]) == LOAD_RANGE == (0.05, 200.0)
    app.controls["load_scale"].value = 0.05  # arrivals 20 times slower: nobody waits
    assert app.result.summary()["avg_queue_delay"] == 0.0


# -- explore() arguments -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"days": 0}, "explore: days must be > 0 and <= 400, got 0"),
        ({"days": float("nan")}, "explore: days must be > 0 and <= 400, got nan"),
        ({"days": "7"}, "explore: days must be a number of days, got '7'"),
        ({"debounce": -1}, "explore: debounce must be between 0 and 60 seconds, got -1"),
        ({"config": 3}, "explore: config must be a SimConfig or a dict of its fields, got int"),
        ({"sync": 1}, "explore: sync must be True or False, got 1"),
        ({"workload": 3}, "explore: workload must be a preset or scenario name, a trace folder"),
        ({"cluster": 3}, "explore: cluster must be a preset name or a Cluster, got int"),
    ],
)
def test_bad_explore_arguments_are_refused(kwargs, message):
    from analysim.explorer import ExploreArgumentError

    with pytest.raises(ExploreArgumentError) as info:
        explore(**{"workload": "toy", "run": False, **kwargs})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_missing_folder_is_reported_as_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="explore: no such folder: .*nowhere$"):
        explore(str(tmp_path / "nowhere"), run=False)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        explore(tmp_path / "nowhere", run=False)


# -- export ------------------------------------------------------------------------------------
def test_export_writes_figures_summary_and_a_call_that_reproduces_the_run(tmp_path):
    app = explore("toy", sync=True, export_dir=tmp_path)
    app.pin()
    app.controls["scheduler"].value = "sjf"
    app.controls["cluster_size"].value = 2.0
    files = app.export()
    assert sorted(files) == sorted(
        [f"{n}.{k}" for n in ("timelines", "jct_cdf", "heatmap") for k in ("png", "svg")]
        + ["summary.csv", "run.py", "config.json"]
    )
    assert files["heatmap.png"].read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in files["timelines.svg"].read_bytes()[:500]
    csv = files["summary.csv"].read_text().splitlines()
    assert csv[0] == ("metric,unit,fifo + cluster ×1,sjf + cluster ×2,change vs fifo + cluster ×1")
    assert csv[4].startswith("avg_jct,s,862.5,")
    namespace: dict = {}
    exec(files["run.py"].read_text(), namespace)  # noqa: S102 - our own export
    assert namespace["result"].summary().equals(app.result.summary())
    recipe = json.loads(files["config.json"].read_text())
    assert recipe["preset"] == "toy" and recipe["cluster_size"] == 2.0
    assert recipe["config"]["scheduler"] == "sjf"
    assert "download='summary.csv' href='data:text/csv;base64," in app.outputs["exported"].value


def test_export_of_a_scenario_reproduces_it(tmp_path):
    app = explore("borrowing", sync=True, export_dir=tmp_path)
    files = app.export()
    namespace: dict = {}
    exec(files["run.py"].read_text(), namespace)  # noqa: S102
    assert namespace["result"].summary().equals(app.result.summary())


# -- scenarios and the stepper ---------------------------------------------------------------
def test_a_scenario_sets_its_controls_and_shows_its_lesson():
    app = explore("las_queues", sync=True)
    c = app.controls
    assert c["workload"].value == "scenario: las_queues" and app.runs == 1
    assert (c["scheduler"].value, c["las_thresholds"].value, c["las_starvation"].value) == (
        "las",
        "1",
        "off",
    )
    assert c["preemption"].value is True
    assert "Scenario las_queues" in app.outputs["lesson"].value
    assert "set the LAS queues to 100 GPU-h" in app.outputs["lesson"].value
    two_queues = app.result.summary()["avg_jct"]
    app.controls["las_thresholds"].value = "100"  # one queue: LAS orders by arrival
    assert app.result.summary()["avg_jct"] > 3 * two_queues


def test_the_stepper_says_why_every_waiting_job_waits():
    app = explore("preemption", sync=True)
    app.controls["preemption"].value = False
    stepper = app.stepper
    stepper.step()
    assert stepper.step() == 120.0
    assert stepper.outputs["why"].value == (
        "<ul class='analysim-why-list'><li>short at t=120 s: it waits because the cluster is "
        "full: 4 of its 4 GPUs are in use, 0 free, and it needs 4.</li></ul>"
    )
    stepper.controls["run"].click()
    assert stepper.outputs["why"].value.startswith(
        "<i>No job is waiting at t = 1 h 05 min (3,900 s)"
    )


def test_waiting_spells_follow_the_events():
    from analysim.explorer.render import waiting_spells
    from analysim.inputs.scenarios import get

    s = get("preemption")
    result = asim.simulate(s.workload(), s.cluster(), s.config())  # short evicts long at 120
    spells = waiting_spells(result.events, now=10_000)
    assert spells[["job_id", "start", "end"]].values.tolist() == [["long", 120.0, 420.0]]
    spells = waiting_spells(result.events, now=200)
    assert spells["job_id"].tolist() == ["long"] and spells["end"].isna().all()


def test_a_large_cluster_heatmap_is_wrapped():
    from analysim.explorer.render import DETAILED_NODES, heatmap_figure

    cluster = asim.Cluster.uniform(30, 10, 8, name="300 nodes")
    snap = pd.DataFrame(
        {
            "node": np.repeat(cluster.nodes["node"].to_numpy(), 8),
            "gpu": np.tile(np.arange(8), 300),
            "job_id": None,
            "job_vc": None,
        }
    )
    snap.loc[:799, ["job_id", "job_vc"]] = ["j", "a"]
    assert len(cluster.nodes) > DETAILED_NODES
    fig = heatmap_figure(snap, ["a"], "t = 0 s")
    ax = fig.axes[0]
    assert ax.get_title() == "t = 0 s: 800 of 2,400 GPUs in use on 300 nodes"
    assert len(ax.get_yticklabels()) == 3  # three rows of 100 nodes
    assert fig.get_size_inches()[0] == 11.0


def test_the_bundled_openb_trace_queues_only_when_compressed_on_a_smaller_cluster():
    app = explore("bundled:openb", sync=True)  # 7,255 jobs on 1,213 nodes, 6,212 GPUs
    assert app.controls["borrowing"].disabled  # no VC owns nodes or has a quota
    assert app.result.summary()["avg_queue_delay"] < 1.0  # a sparse trace: nobody waits
    wrapped = app.moment.heatmap_figure().axes[0]
    assert len(wrapped.get_yticklabels()) == 13  # 1,213 nodes in rows of 100
    assert app.controls["load_scale"].options[-1] == ("200×", 200.0)
    app.controls["cluster_size"].value = 0.1
    app.controls["load_scale"].value = 200.0
    assert app.cluster.total_gpus == 690 and app.message == ""
    assert app.result.summary()["avg_queue_delay"] > 3600  # 29,603 s on 2026-12-01
    detailed = app.moment.heatmap_figure().axes[0]  # 122 nodes: one column per node
    assert detailed.get_xlabel() == "node" and len(detailed.get_yticklabels()) == 8


def test_the_summary_shows_key_metrics_unless_all_are_asked_for(app):
    from analysim.explorer.units import KEY_METRICS

    html = app.outputs["summary"].value
    assert html.count("<tr>") == 1 + len(KEY_METRICS) and ">idle_while_waiting<" not in html
    app.buttons["all_metrics"].value = True
    html = app.outputs["summary"].value
    assert html.count("<tr>") == 1 + len(app.summary) and ">idle_while_waiting<" in html


def test_a_click_on_the_timelines_moves_the_moment(app):
    overlay = app._overlay  # the invisible slider laid over the timelines
    assert (overlay.max, overlay.value) == (1800.0, 900.0)
    overlay.value = 300.0  # what a click a sixth of the way along the time axis sends
    assert app.outputs["time"].value == 300.0
    assert [job for _, job in app.outputs["waiting"].options] == ["j4", "j5"]
    app.outputs["time"].value = 600.0
    assert overlay.value == 600.0


def test_every_control_has_a_tooltip_with_its_meaning(app):
    assert all(control.tooltip for control in app.controls.values())
    assert app.controls["quantum"].tooltip.startswith("seconds between scheduling rounds")


def test_the_backfill_control_offers_easy_and_names_it_in_the_comparison(app):
    from analysim.explorer.compare import label

    assert [value for _, value in app.controls["backfill"].options] == [False, True, "easy"]
    assert app.controls["backfill"].value is False
    app.controls["backfill"].value = "easy"
    assert app.result.config["backfill"] == "easy"
    assert label({"backfill": "easy"}, ["backfill"]) == "EASY backfill"
    assert label({"backfill": True}, ["backfill"]) == "backfill"
    assert label({"backfill": False}, ["backfill"]) == "no backfill"
