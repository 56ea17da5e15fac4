"""The calibrated Helios presets (venus, earth, saturn, uranus), their generator, their
config and the calibration check (``analysim presets --check``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from analysim import SimConfig, presets
from analysim.faces.cli import main
from analysim.inputs import generators
from analysim.presets import calibrated, calibration
from analysim.presets import helios as helios_presets

HELIOS = ["venus", "earth", "saturn", "uranus"]


# -- facts -------------------------------------------------------------------------------------
def test_published_numbers_are_the_summary_rows(shared_data):
    summary = pd.read_csv(shared_data / "helios" / "helios_cluster_summary.csv").set_index("id")
    for name, facts in helios_presets.PUBLISHED.items():
        row = summary.loc[name.capitalize()]
        assert facts.gpu_jobs == row["gpu_job_num"]
        assert facts.mean_run == row["avg_run_time_gpu"]
        assert facts.median_run == row["med_run_time_gpu"]
        assert facts.mean_queue == row["avg_que_time_gpu"]
        assert facts.median_queue == row["med_que_time_gpu"] == 0
        assert facts.mean_gpus == row["avg_gpu_num"]
        assert facts.median_gpus == row["med_gpu_num"] == 1
        assert facts.total_gpus == row["gpu_num"]
        gpu_time = row[["complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"]].sum()
        assert facts.gpu_seconds == pytest.approx(gpu_time)


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("venus", helios_presets.VENUS_VC_GPUS_AVERAGE),
        ("earth", helios_presets.EARTH_VC_GPUS_AVERAGE),
    ],
)
def test_vc_sizes_are_the_vc_files_averaged_and_rounded_to_nodes(shared_data, name, table):
    frame = pd.read_csv(shared_data / "helios" / f"{name}_cluster_gpu_number.csv")
    average = frame.drop(columns=["date", "total"]).mean()
    nodes = round(frame["total"].mean() / 8)
    whole = helios_presets.largest_remainder(average.to_numpy() / 8, nodes)
    expected = {vc: int(n) * 8 for vc, n in zip(average.index, whole, strict=True) if n > 0}
    assert table == expected
    assert math.floor(frame["total"].mean()) == helios_presets.PUBLISHED[name].total_gpus


def test_largest_remainder_by_hand():
    assert helios_presets.largest_remainder(np.array([1.0, 1.0, 1.0]), 4).tolist() == [2, 1, 1]
    assert helios_presets.largest_remainder(np.array([0.1, 0.6, 0.3]), 10).tolist() == [1, 6, 3]
    assert helios_presets.largest_remainder(np.array([0.15, 0.15, 0.7]), 3).tolist() == [1, 0, 2]


@pytest.mark.parametrize("name", HELIOS)
def test_clusters_own_whole_nodes_and_match_the_published_size(name):
    cluster = presets.cluster(name)
    assert cluster.name == name
    assert (cluster.nodes["gpus"] == 8).all() and cluster.nodes["vc"].notna().all()
    published = helios_presets.PUBLISHED[name].total_gpus
    assert abs(cluster.total_gpus - published) / published < 0.005
    assert cluster.vc_capacity() == helios_presets.vc_gpus(name)


def test_cluster_sizes_by_hand():
    assert presets.cluster("venus").total_gpus == 1024
    assert presets.cluster("earth").total_gpus == 1000
    saturn = presets.cluster("saturn")
    assert saturn.total_gpus == 2080 and len(saturn.vcs) == 23
    assert presets.cluster("uranus").total_gpus == 2120
    assert min(saturn.vc_capacity().values()) >= 8


# -- config ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HELIOS)
def test_helios_config_is_slurm_like(name):
    config = presets.config(name)
    assert config == SimConfig(scheduler="fifo", placement="consolidate", backfill="easy")
    assert not config.preemption and not config.migration and not config.borrowing


def test_other_presets_keep_the_default_config():
    for name in ("toy", "large", "venus_overloaded"):
        assert presets.config(name) == SimConfig()
    with pytest.raises(ValueError, match=r"unknown preset 'mars'.*'earth'"):
        presets.config("mars")


# -- generator pieces --------------------------------------------------------------------------
def test_normal_quantile_known_values():
    u = np.array([0.001, 0.02, 0.5, 0.975, 0.999])
    expected = [-3.090232306, -2.053748911, 0.0, 1.959963985, 3.090232306]
    np.testing.assert_allclose(calibrated.normal_quantile(u), expected, atol=1e-8)


def test_stratified_uniform_puts_one_draw_in_each_slice():
    draws = calibrated.stratified_uniform(np.random.default_rng(1), 50)
    assert sorted(np.floor(draws * 50).astype(int).tolist()) == list(range(50))


def test_tilted_table_by_hand():
    table = calibrated.tilted_table(0.0, 0.6, cap=4)
    assert table == pytest.approx({1: 0.6, 2: 0.2, 4: 0.2})
    assert calibrated.tilted_table(1.0, 0.6, cap=1) == {1: 1.0}
    full = calibrated.tilted_table(1.0, 0.5)
    assert sum(full.values()) == pytest.approx(1.0) and full[128] == pytest.approx(2 * full[64])


def test_solve_demand_reaches_the_mean_and_refuses_the_unreachable():
    caps, shares = (8, 64), (0.5, 0.5)
    tilt = calibrated.solve_demand(3.0, 0.6, caps, shares)
    tables = [calibrated.tilted_table(tilt, 0.6, cap) for cap in caps]
    mean = sum(s * sum(g * p for g, p in t.items()) for s, t in zip(shares, tables, strict=True))
    assert mean == pytest.approx(3.0, rel=1e-6)
    with pytest.raises(ValueError, match="mean_gpus 40 is out of reach"):
        calibrated.solve_demand(40.0, 0.6, caps, shares)


def test_duration_model_has_the_target_median_and_mean():
    targets = calibrated.Targets(100.0, 5_000.0, 200.0, 2.0, 0.0)
    table = {1: 0.6, 2: 0.2, 8: 0.2}
    model = calibrated.solve_durations(targets, table, 1.0, 14 * 86_400.0)
    assert model.beta == 0.0  # enough GPU time without growth
    assert sum(p * model.mean(g) for g, p in table.items()) == pytest.approx(5_000.0, rel=1e-6)
    below = sum(
        p * 0.5 * (1 + math.erf((math.log(200.0) - model.mu) / model.sigma / math.sqrt(2)))
        for g, p in table.items()
    )
    assert below == pytest.approx(0.5, abs=1e-9)


def test_gpu_time_cap_shortens_only_the_jobs_it_reaches():
    day = 86_400.0
    model = calibrated.DurationModel(
        mu=math.log(200.0), sigma=2.0, beta=0.0, low=1.0, high=14 * day, gpu_time_cap=32 * day
    )
    # 32 GPU-days: 1 and 2 GPUs keep the 14-day limit, 4 GPUs 8 days, 32 GPUs one day
    assert model.highest(np.array([1, 2, 4, 32, 128])).tolist() == [
        14 * day,
        14 * day,
        8 * day,
        day,
        day / 4,
    ]
    assert model.highest(10**9) == 1.0  # never below the shortest run time
    uncapped = dataclasses.replace(model, gpu_time_cap=math.inf)
    assert model.mean(2) == uncapped.mean(2)
    assert model.mean(32) == pytest.approx(
        generators.clipped_lognormal_mean(math.log(200.0), 2.0, 1.0, day)
    )
    assert model.mean(32) < uncapped.mean(32)


def test_a_capped_shape_keeps_the_run_time_targets_and_the_cap():
    name = "venus"
    targets, vcs = helios_presets.PUBLISHED[name].targets(), helios_presets.vc_gpus(name)
    shape = dataclasses.replace(helios_presets.SHAPES[name], max_gpu_days=32.0)
    solved = calibrated.plan(targets, vcs, shape)
    table = solved.overall_table()
    model = solved.durations
    assert model.gpu_time_cap == 32 * 86_400.0
    assert sum(p * model.mean(g) for g, p in table.items()) == pytest.approx(
        targets.mean_duration, rel=1e-4
    )
    jobs = calibrated.calibrated_workload(targets, vcs, days=3, seed=1, shape=shape).jobs
    assert (jobs["num_gpus"] * jobs["duration"] <= 32 * 86_400.0).all()
    assert jobs["duration"].max() <= 14 * 86_400.0


def test_calibrated_largest_remainder_splits_a_total_by_hand():
    split = calibrated.largest_remainder
    assert split(10, np.array([0.5, 0.3, 0.2])).tolist() == [5, 3, 2]
    assert split(10, np.array([1.0, 1.0, 1.0])).tolist() == [4, 3, 3]  # ties: the first
    assert split(7, np.array([0.05, 0.55, 0.4])).tolist() == [0, 4, 3]  # 0.35, 3.85, 2.8
    assert split(0, np.array([0.5, 0.5])).tolist() == [0, 0]


def test_cycle_times_invert_the_daily_cycle():
    day = calibrated.DAY
    flat = calibrated.cycle_times(np.array([0.0, 0.25, 0.5]), 4 * day, 0.0, 15.0)
    assert flat.tolist() == pytest.approx([0.0, day, 2 * day])
    # with a cycle 1 + 0.5 cos(2 pi (t - 15 h) / day), the share of a day's arrivals by 9:00
    # is 9/24 + 0.5 / (2 pi) * (sin(-pi/2) - sin(-2 pi 15/24)) = 0.375 - 0.5 (1 + 0.7071) / 2 pi
    share = 0.375 - 0.5 * (1 + math.sqrt(0.5)) / (2 * math.pi)
    nine = calibrated.cycle_times(np.array([share]), day, 0.5, 15.0)
    assert nine[0] == pytest.approx(9 * 3600, abs=60)


def test_dealt_arrivals_spread_each_vcs_gpu_time_over_the_days():
    rng = np.random.default_rng(5)
    day = calibrated.DAY
    weight = np.r_[np.full(10, 1000.0), np.ones(290)]  # 10 heavy jobs, 290 light ones, 10 days
    times = calibrated.dealt_arrivals(rng, weight, 10 * day, 0.5, 15.0)
    days = (times // day).astype(int)
    assert sorted(days[:10].tolist()) == list(range(10))  # one heavy job a day
    assert np.bincount(days, minlength=10).tolist() == [30] * 10  # stratified times
    per_day = np.bincount(days, weights=weight, minlength=10)
    assert per_day.tolist() == [1029.0] * 10
    assert ((times >= 0) & (times < 10 * day)).all()
    again = calibrated.dealt_arrivals(np.random.default_rng(5), weight, 10 * day, 0.5, 15.0)
    assert again.tolist() == times.tolist()
    assert calibrated.dealt_arrivals(rng, np.zeros(0), day, 0.5, 15.0).size == 0


def test_dealt_months_give_each_vc_its_expected_share_of_the_jobs():
    name = "earth"
    targets, vcs = helios_presets.PUBLISHED[name].targets(), helios_presets.vc_gpus(name)
    shape = dataclasses.replace(helios_presets.SHAPES[name], arrivals="dealt")
    jobs = calibrated.calibrated_workload(targets, vcs, days=3, seed=2, shape=shape).jobs
    solved = calibrated.plan(targets, vcs, shape)
    expected = calibrated.largest_remainder(len(jobs), np.asarray(solved.shares))
    counts = jobs["vc"].value_counts().reindex(list(solved.vcs)).fillna(0).astype(int)
    assert counts.tolist() == expected.tolist()
    assert jobs["submit_time"].is_monotonic_increasing and jobs["submit_time"].max() < 3 * 86400
    # the presets keep independent draws (their months and golden values are unchanged)
    assert helios_presets.SHAPES[name].arrivals == "iid"


def test_a_shape_with_an_unknown_arrival_mode_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"arrivals must be one of \['iid', 'dealt'\], got 'x'"):
        calibrated.Shape(arrivals="x")


# -- workloads ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HELIOS)
def test_short_months_match_the_published_job_mix(name):
    """The static numbers hold on a few days already (stratified draws)."""
    facts = helios_presets.PUBLISHED[name]
    jobs = presets.workload(name, seed=0, days=4).jobs
    assert jobs["num_gpus"].median() == 1
    assert len(jobs) / 4 == pytest.approx(facts.jobs_per_day, rel=0.05)
    assert jobs["duration"].mean() == pytest.approx(facts.mean_run, rel=0.10)
    assert jobs["duration"].median() == pytest.approx(facts.median_run, rel=0.05)
    assert jobs["num_gpus"].mean() == pytest.approx(facts.mean_gpus, rel=0.05)
    capacity = presets.cluster(name).vc_capacity()
    assert (jobs["num_gpus"] <= jobs["vc"].map(capacity) // 2).all()


def test_helios_workloads_are_seeded_and_scale_with_load():
    first = presets.workload("earth", seed=3, days=1).jobs
    pd.testing.assert_frame_equal(first, presets.workload("earth", seed=3, days=1).jobs)
    assert not first.equals(presets.workload("earth", seed=4, days=1).jobs)
    busier = presets.workload("earth", seed=3, days=1, load_scale=2.0).jobs
    assert len(busier) / len(first) == pytest.approx(2.0, rel=0.05)
    assert len(presets.workload("venus")) == pytest.approx(30 * 684.7, rel=0.03)


# -- the tuned shapes and what they give (docs/calibration.md) ------------------------------------
TUNED = {  # (max_job_fraction, size_growth, max_gpu_days): tuned on seeds 0-2's mean delay
    "venus": (0.34, -0.175, 32.0),
    "earth": (0.1875, 0.89, 64.0),
    "saturn": (0.1875, 0.45, 32.0),
    "uranus": (0.25, 0.40, None),
}
MONTH_MEAN_QUEUE = {  # seed 0, 30 days, presets.config(name): docs/calibration.md's table
    "venus": 1001.8436741431207,
    "earth": 314.31584651142896,
    "saturn": 700.0928286227398,
    "uranus": 1576.327190304376,
}


def test_tuned_shapes_are_the_documented_ones():
    for name, tuned in TUNED.items():
        shape = helios_presets.SHAPES[name]
        assert (shape.max_job_fraction, shape.size_growth, shape.max_gpu_days) == tuned, name


@pytest.mark.parametrize("name", HELIOS)
def test_a_preset_month_keeps_its_documented_queueing_delay(name):
    """Seed 0's whole month gives the mean queueing delay of docs/calibration.md's table, and
    every criterion of the check passes: fails if the generator, the shapes or the
    scheduling drift (about 1-13 s of CPU per preset)."""
    simulated = calibration.run_month(name, seed=0)
    assert simulated["mean_queue"] == pytest.approx(MONTH_MEAN_QUEUE[name], rel=1e-9)
    rows = calibration.compare(name, 0, simulated)
    missed = rows[rows["verdict"] == "MISS"]
    assert missed.empty, missed


# -- the check ---------------------------------------------------------------------------------
def test_compare_verdicts_by_hand():
    reference = calibration.published("venus")
    simulated = {**reference, "mean_queue": reference["mean_queue"] * 1.3, "median_queue": 5.0}
    simulated["mean_run"] = reference["mean_run"] * 0.95
    simulated["mean_gpus"] = reference["mean_gpus"] * 0.8  # too low counts as much as too high
    rows = calibration.compare("venus", 0, simulated).set_index("metric")
    assert rows.loc["mean_gpus", "verdict"] == "MISS"
    assert rows.loc["mean_queue", "verdict"] == "MISS"
    assert rows.loc["mean_queue", "rel_error"] == pytest.approx(0.3)
    assert rows.loc["median_queue", "verdict"] == "MISS"
    assert rows.loc["mean_run", "verdict"] == "PASS"
    assert rows.loc["gpu_seconds_per_job", "verdict"] == "info"
    assert not calibration.passed(rows.reset_index())


def test_check_on_a_short_span():
    table = calibration.check(["earth"], seeds=[0], days=2)
    assert table["metric"].tolist() == [c.metric for c in calibration.CRITERIA]
    verdicts = table.set_index("metric")["verdict"]
    static = ["jobs_per_day", "mean_run", "median_run", "mean_gpus", "median_gpus"]
    assert (verdicts[static] == "PASS").all()
    assert verdicts["total_gpus"] == "PASS" and verdicts["median_queue"] == "PASS"
    text = calibration.format_check(table)
    assert text.startswith("earth:") and "mean queueing delay (s)" in text


def test_check_refuses_an_unknown_preset():
    known = r"\['earth', 'kalos', 'saturn', 'seren', 'uranus', 'venus'\]"
    with pytest.raises(ValueError, match=r"preset 'toy'.*" + known):
        calibration.check(["toy"])


def test_cli_check(capsys):
    code = main(["presets", "--check", "earth", "--days", "1", "--seeds", "0"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "earth:" in out and "jobs per day" in out
    assert main(["presets", "--check", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'nope'" in err[0] and "'venus'" in err[0]


# -- the study across load -----------------------------------------------------------------------
def test_study_over_load_runs_the_four_arms_per_load_point():
    from analysim.experiments.load_study import jct_gains, study_over_load
    from analysim.experiments.study import ARMS

    frame = study_over_load("earth", [1.0, 2.0], days=0.5)
    assert frame["load_scale"].tolist() == [1.0] * 4 + [2.0] * 4
    assert frame["arm"].tolist() == list(ARMS) * 2
    assert (frame.loc[~frame["preemption"], "preemptions"] == 0).all()
    assert (frame.loc[~frame["migration"], "migrations"] == 0).all()
    gains = jct_gains(frame)
    assert list(gains.columns) == [arm for arm in ARMS if arm != "baseline"]
    baseline = frame[frame["arm"] == "baseline"].set_index("load_scale")["avg_jct"]
    preempt = frame[frame["arm"] == "preemption"].set_index("load_scale")["avg_jct"]
    assert gains.loc[("earth", 2.0), "preemption"] == pytest.approx(baseline[2.0] / preempt[2.0])
    # the arms run on the preset's own config: backfill on, like Helios' Slurm
    assert presets.config("earth").backfill


def test_gains_over_load_one_row_per_seed_load_and_arm():
    from analysim.experiments.load_study import gains_over_load, jct_gains, study_over_load

    tidy = gains_over_load("earth", [1.0, 2.0], seeds=[0, 1], days=0.25)
    assert len(tidy) == 2 * 2 * 3  # seeds x loads x arms other than the baseline
    assert set(tidy["arm"]) == {"migration", "preemption", "preemption+migration"}
    assert tidy["jct_gain"].to_numpy() == pytest.approx(
        (tidy["baseline_avg_jct"] / tidy["avg_jct"]).to_numpy()
    )
    one = jct_gains(study_over_load("earth", [1.0, 2.0], seed=1, days=0.25))
    row = tidy[(tidy["seed"] == 1) & (tidy["load_scale"] == 2.0) & (tidy["arm"] == "preemption")]
    assert row["jct_gain"].item() == pytest.approx(one.loc[("earth", 2.0), "preemption"])
    seed0 = tidy[(tidy["seed"] == 0) & (tidy["load_scale"] == 2.0) & (tidy["arm"] == "preemption")]
    assert seed0["baseline_avg_jct"].item() != row["baseline_avg_jct"].item()  # own months


def test_notebook_helpers_put_the_varied_switch_on_the_real_scheduling():
    from analysim.experiments.figures import compare, real_scheduling, sensitivity

    base = real_scheduling("earth")
    assert "seed" not in base and base["backfill"] and base["placement"] == "consolidate"
    jobs, cluster = presets.workload("earth", seed=1, days=0.2), presets.cluster("earth")
    arms = {"real": {}, "no backfill": {"backfill": False}}
    results = compare(jobs, cluster, arms, base=base, scheduler="las", seed=1, progress=False)
    real, off = results["real"].config, results["no backfill"].config
    assert real["backfill"] and not off["backfill"] and off["placement"] == "consolidate"
    assert real["scheduler"] == "las" and real["seed"] == 1
    plain = compare(jobs, cluster, {"default": {}}, seed=1, progress=False)["default"]
    assert not plain.config["backfill"]  # without a base: SimConfig's defaults
    # a SimConfig as base: its seed is dropped, the runs' own seeds stay
    busy = presets.workload("earth", seed=1, days=0.5, load_scale=3.0)  # queues: backfill matters
    rows = sensitivity(
        busy,
        cluster,
        "preemption",
        [False, True],
        seeds=[2],
        base=presets.config("earth"),
        progress=False,
    )
    assert list(rows["seed"]) == [2, 2] and list(rows["preemption"]) == [False, True]
    real = compare(busy, cluster, {"x": {}}, base=presets.config("earth"), seed=2, progress=False)[
        "x"
    ].summary()["avg_jct"]
    default = compare(busy, cluster, {"x": {}}, seed=2, progress=False)["x"].summary()["avg_jct"]
    assert real != pytest.approx(default, rel=1e-3)
    assert rows.loc[0, "avg_jct"] == pytest.approx(real)
