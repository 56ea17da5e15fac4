"""The front door: what simulate, Simulation and the study accept, and the one-line message
for what they do not."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import analysim as asim
from analysim.errors import InputTypeError
from analysim.experiments.study import paper_study


@pytest.fixture(scope="module")
def toy() -> tuple[asim.Workload, asim.Cluster]:
    return asim.presets.workload("toy"), asim.presets.cluster("toy")


def _with_priority(workload: asim.Workload, values: list[float]) -> asim.Workload:
    return asim.Workload.from_frame(workload.jobs.assign(priority=values), name="ranked")


# -- workloads and clusters -------------------------------------------------------------------
def test_a_dataframe_workload_says_to_use_from_frame(toy):
    workload, cluster = toy
    with pytest.raises(InputTypeError) as error:
        asim.simulate(workload.jobs, cluster)
    assert str(error.value) == "simulate: workload is a DataFrame: use asim.Workload.from_frame(df)"
    assert isinstance(error.value, ValueError) and isinstance(error.value, TypeError)


def test_a_dataframe_cluster_says_to_use_from_frame(toy):
    workload, cluster = toy
    message = "simulate: cluster is a DataFrame: use asim.Cluster.from_frame(df)"
    with pytest.raises(InputTypeError, match=re.escape(message)):
        asim.simulate(workload, cluster.nodes)


def test_a_trace_in_the_workload_place_says_which_parts_to_pass(toy):
    trace = asim.traces.read_folder("bundled:openb")
    message = "simulate: workload is a Trace: pass trace.workload and trace.cluster"
    with pytest.raises(InputTypeError, match=re.escape(message)):
        asim.simulate(trace, trace.cluster)


def test_preset_names_run_the_presets_seeded_by_the_config(toy, monkeypatch):
    workload, cluster = toy
    by_name = asim.simulate("toy", "toy", scheduler="sjf")
    by_object = asim.simulate(workload, cluster, scheduler="sjf")
    pd.testing.assert_frame_equal(by_name.jobs, by_object.jobs)
    # the workload is built with the config's seed, as `analysim run --seed` does
    seeds = []
    build = asim.presets.workload
    monkeypatch.setattr(
        asim.presets, "workload", lambda name, seed=0: seeds.append(seed) or build(name, seed)
    )
    asim.simulate("toy", "toy", {"seed": 3})
    asim.simulate("toy", "toy", seed=5)
    assert seeds == [3, 5]


def test_an_unknown_name_lists_the_presets_and_the_trace_readers(toy):
    with pytest.raises(ValueError) as error:
        asim.simulate("my_trace.csv", "toy")
    message = str(error.value)
    assert message.startswith("simulate: workload 'my_trace.csv' is not a preset (presets: earth,")
    assert "asim.traces.read_csv_trace(path)" in message


def test_simulation_refuses_preset_names_saying_which_call_builds_them(toy):
    workload, _ = toy
    message = "Simulation: cluster 'toy' is a preset name: use asim.presets.cluster('toy')"
    with pytest.raises(ValueError, match=re.escape(message)):
        asim.Simulation(workload, "toy")
    message = "Simulation: workload 'toy' is a preset name: use asim.presets.workload('toy')"
    with pytest.raises(ValueError, match=re.escape(message)):
        asim.Simulation("toy", toy[1])


def test_simulation_refuses_a_dataframe_workload(toy):
    workload, cluster = toy
    message = "Simulation: workload is a DataFrame: use asim.Workload.from_frame(df)"
    with pytest.raises(InputTypeError, match=re.escape(message)):
        asim.Simulation(workload.jobs, cluster)


# -- configs ----------------------------------------------------------------------------------
def test_a_string_config_is_the_scheduler_name(toy):
    workload, cluster = toy
    by_string = asim.simulate(workload, cluster, "sjf")
    by_keyword = asim.simulate(workload, cluster, scheduler="sjf")
    assert by_string.config["scheduler"] == "sjf"
    pd.testing.assert_frame_equal(by_string.jobs, by_keyword.jobs)
    assert by_string.summary()["avg_jct"] != asim.simulate(workload, cluster).summary()["avg_jct"]


def test_a_string_config_and_a_scheduler_keyword_clash(toy):
    message = "simulate: config 'las' names the scheduler and so does scheduler='sjf'; give one"
    with pytest.raises(ValueError, match=re.escape(message)):
        asim.simulate(*toy, "las", scheduler="sjf")


def test_an_unknown_scheduler_name_in_the_config_place_lists_the_schedulers(toy):
    with pytest.raises(ValueError, match="unknown scheduler 'lsa'") as error:
        asim.simulate(*toy, "lsa")
    assert "'las'" in str(error.value)


def test_a_config_of_another_type_is_refused(toy):
    message = (
        "simulate: config must be a SimConfig, a dict of its fields, a scheduler name or "
        "None, got list"
    )
    with pytest.raises(InputTypeError, match=re.escape(message)):
        asim.simulate(*toy, ["las"])


def test_simulation_takes_a_dict_and_a_name_as_simulate_does(toy):
    workload, cluster = toy
    expected = asim.simulate(workload, cluster, scheduler="sjf").jobs
    for config in ({"scheduler": "sjf"}, "sjf", asim.SimConfig(scheduler="sjf")):
        sim = asim.Simulation(workload, cluster, config)
        assert isinstance(sim.config, asim.SimConfig) and sim.config.scheduler == "sjf"
        pd.testing.assert_frame_equal(sim.run().result().jobs, expected)


def test_a_dict_naming_a_share_placer_runs_in_resource_mode(toy):
    sim = asim.Simulation(*toy, {"placement": "fgd"})
    assert sim.resource_mode


# -- the priority scheduler needs its column ---------------------------------------------------
def test_priority_without_a_priority_column_is_an_error(toy):
    message = (
        "simulate: scheduler 'priority' ranks jobs by the workload's 'priority' column, which "
        "workload 'toy' does not have (its columns: ['job_id', 'vc', 'user', 'submit_time', "
        "'duration', 'num_gpus']); add a 'priority' column to the jobs table, or choose "
        "another scheduler"
    )
    with pytest.raises(ValueError) as error:
        asim.simulate(*toy, scheduler="priority")
    assert str(error.value) == message
    with pytest.raises(ValueError, match=r"^Simulation: scheduler 'priority' ranks jobs"):
        asim.Simulation(*toy, {"scheduler": "priority"})


def test_priority_with_the_column_ranks_by_it(toy):
    workload, cluster = toy
    n = len(workload.jobs)
    first = asim.simulate(_with_priority(workload, [0.0] * n), cluster, "priority")
    reverse = asim.simulate(_with_priority(workload, list(range(n, 0, -1))), cluster, "priority")
    fifo = asim.simulate(workload, cluster, "fifo")
    pd.testing.assert_frame_equal(first.jobs, fifo.jobs)  # all equal: submit order
    assert not reverse.jobs["start_time"].equals(fifo.jobs["start_time"])


# -- the study ---------------------------------------------------------------------------------
def test_the_study_takes_preset_names_and_refuses_dataframes(toy):
    by_name = paper_study("toy", "toy", scheduler="srtf")
    by_object = paper_study(*toy, scheduler="srtf")
    pd.testing.assert_frame_equal(by_name, by_object)
    message = "paper_study: workload is a DataFrame: use asim.Workload.from_frame(df)"
    with pytest.raises(InputTypeError, match=re.escape(message)):
        paper_study(toy[0].jobs, toy[1])


def test_the_study_and_its_command_default_to_the_preset_of_docs_study(monkeypatch):
    from analysim.experiments import study
    from analysim.faces.cli import main

    assert study.DEFAULT_PRESET == "venus_overloaded"
    ran = []

    def fake_arms(workload, cluster, **_):
        ran.append((workload.name, cluster.name))
        return {}

    monkeypatch.setattr(study, "study_table", lambda results: pd.DataFrame({"arm": []}))
    monkeypatch.setattr(study, "run_arms", fake_arms)
    assert main(["study", "--quiet"]) == 0
    expected = asim.presets.workload("venus_overloaded").name, "venus_overloaded"
    assert ran == [expected]


def test_explore_refuses_a_dataframe_saying_which_call_to_make(toy):
    pytest.importorskip("ipywidgets")
    message = "explore: workload is a DataFrame: use asim.Workload.from_frame(df)"
    with pytest.raises(ValueError, match=re.escape(message)):
        asim.explore(toy[0].jobs, toy[1], run=False)
    message = "explore: cluster is a DataFrame: use asim.Cluster.from_frame(df)"
    with pytest.raises(ValueError, match=re.escape(message)):
        asim.explore(toy[0], toy[1].nodes, run=False)


def test_a_string_config_names_the_scheduler_of_a_compat_replay_too():
    workload = asim.presets.workload("venus", days=0.5)
    cluster = asim.presets.cluster("venus")
    by_string = asim.simulate(workload, cluster, "sjf", compat="helios")
    by_keyword = asim.simulate(workload, cluster, compat="helios", scheduler="sjf")
    assert by_string.config["scheduler"] == "sjf"
    pd.testing.assert_frame_equal(by_string.jobs, by_keyword.jobs)
    message = "simulate: workload is a DataFrame: use asim.Workload.from_frame(df)"
    with pytest.raises(InputTypeError, match=re.escape(message)):
        asim.simulate(workload.jobs, cluster, compat="helios")
