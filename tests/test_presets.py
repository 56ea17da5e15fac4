"""Presets: the registry, the hand-checkable toy, Venus calibration and the large benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysim import presets
from analysim.inputs.cluster import Cluster
from analysim.inputs.workload import Workload


def offered_load(workload: Workload, cluster: Cluster) -> pd.Series:
    """Offered load per VC and ``all`` (GPU-seconds asked / (capacity x span))."""
    return workload.describe(cluster)["offered_load"]


# -- registry ----------------------------------------------------------------------------------
def test_names():
    assert presets.names() == [
        "earth",
        "gavel",
        "kalos",
        "large",
        "saturn",
        "seren",
        "toy",
        "uranus",
        "venus",
        "venus_overloaded",
    ]


@pytest.mark.parametrize("build", [presets.workload, presets.cluster])
def test_unknown_name_lists_known_names(build):
    known = r"\['earth', 'gavel', 'kalos', 'large', .*'venus_overloaded'\]"
    with pytest.raises(ValueError, match=r"unknown preset 'nope'.*" + known):
        build("nope")


def test_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match="colour"):
        presets.workload("toy", colour="red")
    with pytest.raises(ValueError, match="partition"):
        presets.cluster("venus", partition="nodes")
    with pytest.raises(
        ValueError,
        match=r"does not take parameter\(s\) \['mean_duration'\]; "
        r"it takes \['seed', 'load_scale', 'days'\]$",
    ):
        presets.workload("venus", mean_duration=600.0)


@pytest.mark.parametrize(
    "name", ["toy", "venus", "earth", "saturn", "uranus", "venus_overloaded", "gavel"]
)
def test_presets_carry_their_name(name):
    assert presets.workload(name, days=1).name == name
    assert presets.cluster(name).name == name


def test_large_carries_its_name():
    assert presets.workload("large", jobs=10, gpus=16).name == "large"
    assert presets.cluster("large", gpus=16).name == "large"


# -- toy ---------------------------------------------------------------------------------------
def test_toy_workload_is_the_documented_table():
    jobs = presets.workload("toy").jobs
    assert jobs["job_id"].tolist() == [f"j{i}" for i in range(1, 9)]
    assert jobs["vc"].tolist() == ["a", "b", "a", "a", "b", "b", "a", "b"]
    users = ["alice", "bob", "alice", "carol", "dave", "bob", "alice", "dave"]
    assert jobs["user"].tolist() == users
    assert jobs["submit_time"].tolist() == [0, 60, 120, 180, 300, 480, 720, 900]
    assert jobs["duration"].tolist() == [600, 900, 300, 1200, 600, 480, 360, 600]
    assert jobs["num_gpus"].tolist() == [4, 8, 2, 8, 1, 2, 1, 4]


def test_toy_ignores_seed_and_days_and_compresses_arrivals_with_load_scale():
    base = presets.workload("toy").jobs
    pd.testing.assert_frame_equal(base, presets.workload("toy", seed=5, days=3).jobs)
    faster = presets.workload("toy", load_scale=2.0).jobs
    assert faster["submit_time"].tolist() == (base["submit_time"] / 2).tolist()
    pd.testing.assert_series_equal(faster["duration"], base["duration"])
    with pytest.raises(ValueError, match="load_scale"):
        presets.workload("toy", load_scale=0)


def test_toy_queues_on_the_toy_cluster():
    jobs = presets.workload("toy").jobs
    ends = jobs["submit_time"] + jobs["duration"]
    running_at_180 = jobs[(jobs["submit_time"] < 180) & (ends > 180)]
    assert running_at_180["job_id"].tolist() == ["j1", "j2", "j3"]
    assert running_at_180["num_gpus"].sum() + 8 > presets.cluster("toy").total_gpus


def test_toy_cluster_shared_pool():
    cluster = presets.cluster("toy")
    assert cluster.total_gpus == 16
    assert cluster.nodes["node"].tolist() == ["n0", "n1", "n2", "n3"]
    assert cluster.nodes["rack"].tolist() == ["r0", "r0", "r1", "r1"]
    assert cluster.nodes["gpus"].tolist() == [4, 4, 4, 4]
    assert cluster.vcs == []


def test_toy_cluster_partitioned_by_nodes():
    cluster = presets.cluster("toy", partition="nodes")
    assert cluster.nodes["vc"].tolist() == ["a", "a", "b", "b"]
    assert cluster.vc_capacity() == {"a": 8, "b": 8}
    assert cluster.quotas == {}


def test_toy_cluster_partitioned_by_quota():
    cluster = presets.cluster("toy", partition="quota")
    assert cluster.nodes["vc"].isna().all()
    assert cluster.quotas == {"a": 8, "b": 8}


def test_toy_cluster_rejects_unknown_partition():
    with pytest.raises(ValueError, match="partition"):
        presets.cluster("toy", partition="racks")


# -- venus -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def venus() -> tuple[Workload, Cluster]:
    return presets.workload("venus_overloaded", seed=0), presets.cluster("venus_overloaded")


def test_venus_cluster_shape():
    cluster = presets.cluster("venus_overloaded")
    assert cluster.total_gpus == 1080
    assert len(cluster.nodes) == 135
    assert cluster.nodes["rack"].nunique() == 15
    assert set(cluster.nodes["gpus"]) == {8}
    assert cluster.nodes["vc"].notna().all()
    assert cluster.vc_capacity() == presets.VENUS_VC_GPUS


def test_venus_vc_sizes_match_the_helios_csv(shared_data):
    table = pd.read_csv(shared_data / "helios" / "venus_cluster_gpu_number.csv")
    day = table.loc[table["date"] == presets.VENUS_DATE].iloc[0]
    assert table["date"].max() == presets.VENUS_DATE
    gpus = day.drop(["date", "total"]).astype(int)
    derived = {vc: int(n) for vc, n in gpus.items() if n > 0}
    assert derived == presets.VENUS_VC_GPUS
    assert list(derived) == list(presets.VENUS_VC_GPUS)
    assert int(day["total"]) == 1080


def test_venus_expected_load_is_seventy_percent():
    offered = sum(presets.VENUS_VC_LOAD[vc] * g for vc, g in presets.VENUS_VC_GPUS.items())
    assert offered / 1080 == pytest.approx(0.7, abs=1e-3)
    assert sum(load >= 0.9 for load in presets.VENUS_VC_LOAD.values()) == 3


def test_venus_calibration(venus):
    workload, cluster = venus
    jobs = workload.jobs
    assert abs(len(jobs) - 26_000) <= 2_600
    assert abs(jobs["duration"].mean() - 13_000) <= 0.15 * 13_000
    assert jobs["num_gpus"].median() == 1
    assert (jobs["num_gpus"] > 8).mean() < 0.1
    load = offered_load(workload, cluster)
    assert 0.6 <= load["all"] <= 0.8
    assert (load.drop("all") > 0.8).sum() >= 2
    assert (load.drop("all") < 0.5).sum() >= 3
    assert workload.span > 25.9 * 86_400


def test_venus_docstring_table_matches(venus):
    workload, cluster = venus
    jobs = workload.jobs
    load = offered_load(workload, cluster)
    assert len(jobs) == 27_101
    assert round(jobs["duration"].mean()) == 13_353
    assert round(load["all"], 2) == 0.74


def test_venus_jobs_fit_their_vc(venus):
    workload, cluster = venus
    capacity = workload.jobs["vc"].map(cluster.vc_capacity())
    assert capacity.notna().all()
    assert (workload.jobs["num_gpus"] <= capacity).all()


def test_venus_is_reproducible_and_seeded():
    first = presets.workload("venus_overloaded", seed=3, days=2).jobs
    pd.testing.assert_frame_equal(first, presets.workload("venus_overloaded", seed=3, days=2).jobs)
    assert not first.equals(presets.workload("venus_overloaded", seed=4, days=2).jobs)


def test_venus_scales_with_days_and_load_scale(venus):
    month, _ = venus
    half = presets.workload("venus_overloaded", days=13)
    assert len(half) / len(month) == pytest.approx(0.5, rel=0.05)
    busier = presets.workload("venus_overloaded", load_scale=1.5)
    assert len(busier) / len(month) == pytest.approx(1.5, rel=0.05)


def test_venus_accepts_generator_overrides():
    jobs = presets.workload(
        "venus_overloaded", days=2, mean_duration=600.0, max_duration=3_600.0
    ).jobs
    assert jobs["duration"].max() <= 3_600


# -- large -------------------------------------------------------------------------------------
def test_large_is_right_sized():
    workload = presets.workload("large", jobs=20_000, gpus=800)
    cluster = presets.cluster("large", gpus=800)
    assert len(workload) == 20_000
    assert cluster.total_gpus == 800
    assert len(cluster.nodes) == 100
    assert cluster.nodes["rack"].nunique() == 10
    assert len(cluster.vcs) == 25
    assert set(workload.jobs["vc"]) == set(cluster.vcs)
    capacity = workload.jobs["vc"].map(cluster.vc_capacity())
    assert (workload.jobs["num_gpus"] <= capacity).all()
    assert 0.6 <= offered_load(workload, cluster)["all"] <= 0.8


def test_large_default_cluster():
    cluster = presets.cluster("large")
    assert cluster.total_gpus == 10_000
    assert len(cluster.nodes) == 1_250
    assert cluster.nodes["rack"].nunique() == 125
    assert set(cluster.vc_capacity().values()) == {400}


def test_large_with_few_nodes_has_fewer_vcs():
    cluster = presets.cluster("large", gpus=24)
    assert cluster.vc_capacity() == {"vc00": 8, "vc01": 8, "vc02": 8}
    assert np.array_equal(cluster.nodes["rack"].unique(), ["r0"])


@pytest.mark.parametrize("gpus", [0, 12, -8, 8.0])
def test_large_rejects_gpus_that_are_not_whole_nodes(gpus):
    with pytest.raises(ValueError, match="gpus"):
        presets.cluster("large", gpus=gpus)


# -- gavel: its own config ---------------------------------------------------------------------
def test_gavel_config_is_gavels_simulation_setting():
    config = presets.config("gavel")
    assert config.quantum == 360.0
    assert config.checkpoint_cost == {"name": "constant"}
    assert config.migration_cost == {"name": "constant"}
    assert config.make_cost_model().seconds == 0.0  # free, as in Gavel's
    assert config.scheduler == "fifo"  # the policy is the user's choice
    assert presets.run_config("gavel") == {
        "quantum": 360.0,
        "checkpoint_cost": {"name": "constant"},
        "migration_cost": {"name": "constant"},
    }


@pytest.mark.parametrize("name", ["toy", "venus", "seren", "venus_overloaded", "large"])
def test_other_presets_runs_on_the_command_line_keep_the_defaults(name):
    assert presets.run_config(name) == {}


class _Stop(Exception):
    pass


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([], {"quantum": 360.0, "checkpoint_cost": {"name": "constant"}}),
        (["--quantum", "60"], {"quantum": 60.0, "checkpoint_cost": {"name": "constant"}}),
        (["--checkpoint-cost", "5"], {"quantum": 360.0, "checkpoint_cost": 5.0}),
    ],
)
def test_analysim_run_gavel_starts_from_the_preset_config(monkeypatch, extra, expected):
    import analysim as asim
    from analysim.faces.cli import main

    seen = {}

    def fake(workload, cluster, **values):
        seen.update(values)
        raise _Stop

    monkeypatch.setattr(asim, "simulate", fake)
    with pytest.raises(_Stop):
        main(["run", "--workload", "gavel", "--scheduler", "max_min_fairness", *extra])
    assert seen["scheduler"] == "max_min_fairness"
    assert {k: seen[k] for k in expected} == expected
    assert seen["migration_cost"] == {"name": "constant"}


def test_analysim_run_toy_passes_no_preset_config(monkeypatch):
    import analysim as asim
    from analysim.faces.cli import main

    seen = {}

    def fake(workload, cluster, **values):
        seen.update(values)
        raise _Stop

    monkeypatch.setattr(asim, "simulate", fake)
    with pytest.raises(_Stop):
        main(["run", "--workload", "toy"])
    assert not {"quantum", "checkpoint_cost", "migration_cost"} & set(seen)
