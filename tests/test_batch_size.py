"""Batch sizes (docs/elastic.md, analysim/inputs/batch.py): hand-checked runs from the bundled
Pollux tables, bad input, invariants, and rigid runs unchanged."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from elastic_checks import run_checking_elastic_invariants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim import SimConfig, Simulation, Workload
from analysim.inputs.batch import batch_applications, split_batch, statistical_efficiency
from analysim.results.goodput import goodput_spells

TOY_GPUS = 16
COLUMNS = (
    "job_id",
    "submit_time",
    "duration",
    "num_gpus",
    "min_gpus",
    "max_gpus",
    "application",
    "batch_size",
    "min_batch_size",
    "max_batch_size",
)


def frame(rows: list[tuple], columns=COLUMNS) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)).assign(vc="a", user="u")


def example() -> pd.DataFrame:
    """Elastic cifar10 job ``a`` (2 GPUs asked, 1-4, batch 256 within 128-4096, 1200 s of
    work) beside rigid ``b`` (12 GPUs, 600 s, no application)."""
    return frame(
        [
            ("a", 0, 1200, 2, 1, 4, "cifar10", 256, 128, 4096),
            ("b", 0, 600, 12, 12, 12, None, None, None, None),
        ]
    )


def _by_hand_goodput(gpus: int, batch: int) -> float:
    """cifar10's goodput on ``gpus`` GPUs of one node at global ``batch``, from the bundled
    CSV files alone: the local batch ``ceil(batch / gpus)`` (no accumulation below 1024),
    its step time interpolated linearly between the measured local sizes of (1 node, gpus)
    in delaunay.csv; throughput = gpus x local / step; efficiency = gain / scale with
    ``scale = batch / 128`` and sqr, var the means of validation-128.csv's columns."""
    from analysim.inputs.batch import DATA as data

    points = pd.read_csv(data / "delaunay.csv")
    rows = points[
        (points["application"] == "cifar10")
        & (points["kind"] == "point")
        & (points["a"] == 1)
        & (points["b"] == gpus)
    ].sort_values("c")
    local = math.ceil(batch / gpus)
    step = float(np.interp(local, rows["c"].to_numpy(float), rows["step_time"].to_numpy()))
    validation = pd.read_csv(data / "traces" / "cifar10" / "validation-128.csv")
    sqr, var = validation["grad_sqr"].mean(), validation["grad_var"].mean()
    scale = batch / 128
    efficiency = (var + sqr) / (var / scale + sqr) / scale
    return gpus * local / step * efficiency


def test_hand_checked_joint_choice_of_gpus_and_batch_size():
    """b holds 12 of the toy cluster's 16 GPUs, so a may grow from 2 to 4. At 60 s under
    ``elastic_goodput`` a grows to 4 GPUs at batch 370, the best of the 50 candidates for 4
    GPUs (local batch ceil(370 / 4) = 93); its rate is goodput(4 GPUs, 370) / goodput(2 GPUs,
    256) = 1.866715 (both from the CSV files, ``_by_hand_goodput``). It did 60 s of work at
    rate 1: 1140 + 30 (rescale) are left, so it ends at 60 + 1170 / 1.866715 = 686.769477.
    ``elastic_gain`` keeps batch 256: rate goodput(4, 256) / goodput(2, 256) = 1.671829, end
    60 + 1170 / 1.671829 = 759.832542. ``fifo``: a runs 1200 s on 2 GPUs."""
    rate_joint = _by_hand_goodput(4, 370) / _by_hand_goodput(2, 256)
    rate_fixed = _by_hand_goodput(4, 256) / _by_hand_goodput(2, 256)
    assert rate_joint == pytest.approx(1.866715, abs=1e-6)
    assert rate_fixed == pytest.approx(1.671829, abs=1e-6)
    wl = Workload.from_frame(example())
    ends = {}
    for scheduler, rate, batch in (
        ("elastic_goodput", rate_joint, 370),
        ("elastic_gain", rate_fixed, 256),
    ):
        result = asim.simulate(wl, "toy", scheduler=scheduler, rescale_cost=30)
        jobs = result.jobs.set_index("job_id")
        ends[scheduler] = jobs.loc["a", "end_time"]
        assert jobs.loc["a", "end_time"] == pytest.approx(60 + 1170 / rate, rel=1e-12)
        assert jobs.loc["a", "last_batch_size"] == batch
        assert jobs.loc["a", "resizes"] == 1
        spells = goodput_spells(result)
        a = spells[spells["job_id"] == "a"]
        assert a[["start", "num_gpus", "batch_size"]].values.tolist() == [
            [0.0, 2, 256.0],
            [60.0, 4, float(batch)],
        ]
        assert a["goodput"].tolist() == pytest.approx([1.0, rate], rel=1e-12)
        assert jobs.loc["b", "end_time"] == 600.0
    assert ends["elastic_goodput"] == pytest.approx(686.769477, abs=1e-6)
    assert ends["elastic_gain"] == pytest.approx(759.832542, abs=1e-6)
    app = batch_applications()["cifar10"]
    tried = app.candidates(4, 128, 4096)
    assert max(tried, key=lambda b: (app.goodput(4, 1, b), -b)) == 370
    fifo = asim.simulate(wl, "toy", scheduler="fifo").jobs.set_index("job_id")
    assert fifo.loc["a", "end_time"] == 1200.0


def test_a_job_whose_count_stays_takes_its_best_batch_at_no_cost():
    """a (cifar10, 4 GPUs asked, 4-16, batch 512) cannot grow (the walk's first step, to 5
    GPUs on 2 nodes, lowers its goodput); at 60 s it changes to batch 370 on its 4 GPUs: a
    ``resize`` event at the same count, no rescale cost, not counted. Rate goodput(4, 370) /
    goodput(4, 512) = 1.030585; end 60 + 1140 / 1.030585 = 1166.168166."""
    wl = frame(
        [
            ("a", 0, 1200, 4, 4, 16, "cifar10", 512, 128, 4096),
            ("b", 0, 1000, 8, 8, 8, None, None, None, None),
        ]
    )
    result = asim.simulate(
        Workload.from_frame(wl), "toy", scheduler="elastic_goodput", rescale_cost=30
    )
    jobs = result.jobs.set_index("job_id")
    rate = _by_hand_goodput(4, 370) / _by_hand_goodput(4, 512)
    assert jobs.loc["a", "end_time"] == pytest.approx(60 + 1140 / rate, rel=1e-12)
    assert jobs.loc["a", "end_time"] == pytest.approx(1166.168166, abs=1e-6)
    assert jobs.loc["a", "resizes"] == 0
    events = result.events
    assert events[events["event"] == "resize"][
        ["time", "num_gpus", "batch_size"]
    ].values.tolist() == [[60.0, 4, 370.0]]


def test_a_rigid_job_with_a_batch_size_runs_at_its_goodput_ratio():
    """On 2-GPU nodes a rigid cifar10 job of 4 GPUs (batch 512) spans 2 nodes: its rate is
    throughput(4 GPUs, 2 nodes, 512) / throughput(4, 1 node, 512) (the Pollux measurements'
    packed placement; the efficiency at its batch cancels), 0.624319, so its 1000 s of work
    take 1000 / 0.624319 = 1601.745955 s. On the toy's 4-GPU nodes it runs at rate 1."""
    app = batch_applications()["cifar10"]
    a = frame([("a", 0, 1000, 4, 4, 4, "cifar10", 512, 512, 512)])
    small_nodes = asim.Cluster.uniform(1, 4, 2, vc_nodes={"a": 4})
    jobs = asim.simulate(Workload.from_frame(a), small_nodes).jobs
    rate = app.throughput(4, 2, 512) / app.throughput(4, 1, 512)
    assert jobs["nodes"].iloc[0] == "n0,n1"
    assert jobs["rate"].iloc[0] == pytest.approx(rate, rel=1e-12)
    assert jobs["end_time"].iloc[0] == pytest.approx(1601.745955, abs=1e-6)
    assert asim.simulate(Workload.from_frame(a), "toy").jobs["end_time"].iloc[0] == 1000.0


def test_the_shared_rules_are_pollux_s():
    """The split of a batch and the efficiency are the artifact's rules (the replay uses them)."""
    assert split_batch(512, 4, 1024, 128, 4096) == (128, 0)
    assert split_batch(4096, 2, 1024, 128, 4096) == (1024, 1)  # 2048 a GPU: 2 steps of 1024
    assert split_batch(256, 1, 1024, 128, 4096) == (128, 1)  # one GPU above init: accumulate
    assert float(statistical_efficiency(1.0, 1.0, 1.0)) == 1.0
    assert float(statistical_efficiency(1.0, 1.0, 2.0)) == pytest.approx(2 / 1.5 / 2)
    assert float(statistical_efficiency(0.0, 0.0, 2.0)) == 0.5  # no statistics: gain 1


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "column", "words"),
    [
        ({"batch_size": [0, None]}, "batch_size", "a whole number"),
        ({"batch_size": [256.5, None]}, "batch_size", "a whole number"),
        ({"batch_size": ["big", None]}, "batch_size", "a whole number"),
        (
            {"min_batch_size": [512, None], "max_batch_size": [300, None]},
            "min_batch_size",
            "at most the row's max_batch_size",
        ),
        (
            {"min_batch_size": [300, None], "max_batch_size": [400, None]},
            "batch_size",
            "at least the row's min_batch_size",
        ),
        ({"max_batch_size": [200, None]}, "batch_size", "at most the row's max_batch_size"),
        ({"min_batch_size": [128, 256]}, "min_batch_size", "missing on a row without a batch_size"),
        # an empty min_batch_size is the batch_size: the error is the batch_size's against
        # max_batch_size, not "min above max"
        (
            {"min_batch_size": [None, None], "max_batch_size": [200, None]},
            "batch_size",
            "at most the row's max_batch_size",
        ),
        (
            {"min_batch_size": [300, None], "max_batch_size": [None, None]},
            "batch_size",
            "at least the row's min_batch_size",
        ),
        ({"max_batch_size": [np.inf, None]}, "max_batch_size", "a whole number"),
        ({"batch_size": [True, None]}, "batch_size", "a whole number"),
    ],
)
def test_bad_batch_columns_name_column_row_and_value(change, column, words):
    wl = example().assign(**change)
    with pytest.raises(ValueError, match=words) as error:
        Workload.from_frame(wl)
    message = str(error.value)
    assert message.startswith(f"Workload: column {column!r} must be {words}")
    assert "1 bad row(s): row 0 (job_id='a'" in message or "row 1 (job_id='b'" in message


def test_a_batch_size_against_its_limit_names_the_limit_beside_it():
    wl = example().assign(min_batch_size=[None, None], max_batch_size=[200, None])
    with pytest.raises(ValueError) as error:
        Workload.from_frame(wl)
    assert str(error.value) == (
        "Workload: column 'batch_size' must be at most the row's max_batch_size; "
        "1 bad row(s): row 0 (job_id='a', max_batch_size=200.0): 256.0"
    )


@pytest.mark.parametrize(
    ("change", "column", "words"),
    [
        ({"application": [None, None]}, "batch_size", "needs an application with batch data"),
        ({"batch_size": [64, None], "min_batch_size": [64, None]}, "batch_size", "validated"),
        ({"max_batch_size": [8192, None]}, "max_batch_size", "validated"),
        (
            {"num_gpus": [8, 12], "max_gpus": [8, 12], "batch_size": [128, None]},
            "batch_size",
            "at least 32 samples",
        ),
    ],
)
def test_batch_sizes_the_application_cannot_take_are_refused(change, column, words):
    wl = Workload.from_frame(example().assign(**change))
    with pytest.raises(ValueError, match=words) as error:
        asim.simulate(wl, "toy", scheduler="elastic_goodput")
    message = str(error.value)
    assert f"column {column!r}" in message and "row 0 (job_id='a')" in message


def test_an_application_without_batch_data_is_refused():
    table = pd.DataFrame({"gpus": [1, 2], "nodes": [1, 1], "throughput": [1.0, 1.8]})
    wl = Workload.from_frame(example().assign(application=["mine", None], num_gpus=[2, 12]))
    with pytest.raises(ValueError, match="needs an application with batch data"):
        Simulation(wl, asim.presets.cluster("toy"), SimConfig(), applications={"mine": table})


# -- without the columns, the run of before -----------------------------------------------------
def test_without_batch_columns_the_run_is_unchanged():
    wl = example().drop(columns=["batch_size", "min_batch_size", "max_batch_size"])
    for scheduler in ("fifo", "elastic_goodput"):
        result = asim.simulate(Workload.from_frame(wl), "toy", scheduler=scheduler)
        assert "batch_size" not in result.events.columns
        assert "last_batch_size" not in result.jobs.columns
        assert "batch_size" not in goodput_spells(result).columns
        # a: an application without batch sizes, the table's rates
        assert result.jobs.set_index("job_id").loc["a", "status"] == "done"


# -- invariants ---------------------------------------------------------------------------------
@st.composite
def batch_cases(draw):
    apps = batch_applications()
    n = draw(st.integers(1, 6))
    rows = []
    for i in range(n):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        low = draw(st.integers(1, gpus))
        high = draw(st.integers(gpus + (i == 0), TOY_GPUS))
        name = draw(st.sampled_from(["cifar10", "deepspeech2", "imagenet", None]))
        submit, work = draw(st.integers(0, 600)), draw(st.integers(1, 900))
        if name is None:
            rows.append((f"j{i}", submit, work, gpus, low, high, None, None, None, None))
            continue
        app = apps[name]
        smallest = max(app.init_batch_size, app.min_local * gpus)
        batch = draw(st.integers(smallest, max(smallest, app.max_batch_size)))
        batch = min(batch, app.max_batch_size)
        if not app.fits(gpus, batch):
            batch = None
        blow = draw(st.integers(app.init_batch_size, batch)) if batch else None
        bhigh = draw(st.integers(batch, app.max_batch_size)) if batch else None
        rows.append((f"j{i}", submit, work, gpus, low, high, name, batch, blow, bhigh))
    scheduler = draw(
        st.sampled_from(
            [
                "elastic_goodput",
                "elastic_gain",
                "fifo",
                {"name": "elastic_goodput", "restart_penalty": 30},
            ]
        )
    )
    config = SimConfig(
        scheduler=scheduler,
        preemption=draw(st.booleans()),
        checkpoint_cost=0,
        rescale_cost=draw(st.sampled_from([0, 7, 30])),
        placement=draw(st.sampled_from(["consolidate", "spread"])),
    )
    chooses = scheduler == "elastic_goodput" or isinstance(scheduler, dict)
    return Workload.from_frame(frame(rows)), config, chooses


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_cases())
def test_batch_invariants(case):
    wl, config, chooses = case
    cluster = asim.presets.cluster("toy")
    _, spells = run_checking_elastic_invariants(wl, cluster, config, TOY_GPUS)
    given_jobs = wl.jobs.set_index("job_id")
    if "batch_size" in spells.columns:
        batched = spells[spells["batch_size"].notna()]
        low = given_jobs.loc[batched["job_id"], "min_batch_size"].to_numpy()
        high = given_jobs.loc[batched["job_id"], "max_batch_size"].to_numpy()
        sizes = batched["batch_size"].to_numpy()
        assert (low <= sizes).all() and (sizes <= high).all()  # within its limits
        if not chooses:
            asked = given_jobs.loc[batched["job_id"], "batch_size"].to_numpy()
            np.testing.assert_array_equal(sizes, asked)  # only elastic_goodput chooses


def test_the_command_line_reads_applications_and_batch_sizes(tmp_path, capsys):
    """``--jobs`` keeps ``application`` and the batch columns: the worked example's run
    (a ends at 686.8 s, b at 600: makespan 687 s, average JCT 643 s)."""
    from analysim.faces.cli import main

    path = tmp_path / "jobs.csv"
    example().to_csv(path, index=False)
    argv = ["run", "--jobs", str(path), "--cluster", "toy", "--scheduler", "elastic_goodput"]
    assert main([*argv, "--rescale-cost", "30"]) == 0
    out = capsys.readouterr().out
    assert "643 s" in out and "687 s" in out


def test_the_pollux_study_keeps_notebook_09_and_can_use_batch_sizes():
    """Without ``batch_sizes`` the study's workload-1 rows are figures/09_pollux.csv's (the
    workloads' batch_size column left out); with it, elastic jobs also choose their batch
    size within their application's validated range, and workload 1's average JCT under
    elastic_goodput falls from 3,204 s to 1,629 s."""
    from analysim.experiments.elastic_study import pollux_study

    figures = pd.read_csv(Path(__file__).resolve().parents[1] / "figures" / "09_pollux.csv")
    kept = pollux_study([1])
    expected = figures[figures["workload"] == "workload-1"].reset_index(drop=True)
    for column in ("avg_jct", "makespan", "mean_goodput", "resizes"):
        np.testing.assert_allclose(kept[column], expected[column], rtol=1e-5)
    batched = pollux_study([1], batch_sizes=True).set_index("run")
    assert batched.loc["rigid", "avg_jct"] == pytest.approx(kept["avg_jct"].iloc[0], rel=1e-12)
    assert batched.loc["elastic_goodput", "avg_jct"] == pytest.approx(1629.0790, abs=1e-3)
