"""Synthetic workload generators: determinism, shape of the distributions, parameter checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysim.inputs import generators as gen

VCS = {"vc00": 40.0, "vc01": 10.0}


def small(seed: int = 0, **params) -> pd.DataFrame:
    return gen.synthetic(VCS, days=2, seed=seed, **params).jobs


# -- determinism -------------------------------------------------------------------------------
def test_same_seed_gives_identical_frames():
    pd.testing.assert_frame_equal(small(7), small(7))


def test_different_seeds_differ():
    assert not small(1).equals(small(2))


def test_global_numpy_seed_has_no_effect():
    np.random.seed(1)
    first = small(3)
    np.random.seed(2)
    pd.testing.assert_frame_equal(first, small(3))


def test_jobs_are_sorted_with_sequential_ids():
    jobs = small(0)
    assert jobs["submit_time"].is_monotonic_increasing
    expected = [f"j{i:06d}" for i in range(1, len(jobs) + 1)]
    assert jobs["job_id"].tolist() == expected
    assert list(jobs.columns) == ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"]


def test_job_ids_widen_past_a_million():
    assert gen.job_ids(3).tolist() == ["j000001", "j000002", "j000003"]
    assert gen.job_ids(1_000_000)[-1] == "j1000000"


# -- counts and load ---------------------------------------------------------------------------
def test_expected_count_follows_offered_gpus():
    rates = gen.arrival_rates({"x": 100.0}, mean_duration=1_000.0, gpu_demand={1: 0.5, 3: 0.5})
    assert rates["x"] == pytest.approx(100.0 / (2.0 * 1_000.0))
    jobs = gen.synthetic(
        {"x": 100.0}, days=1, seed=0, mean_duration=1_000.0, gpu_demand={1: 0.5, 3: 0.5}
    ).jobs
    expected = rates["x"] * gen.DAY
    assert abs(len(jobs) - expected) < 5 * math.sqrt(expected)


def test_load_scale_multiplies_the_arrival_rate():
    base = len(small(0, mean_duration=600.0))
    doubled = len(small(0, mean_duration=600.0, load_scale=2.0))
    assert doubled / base == pytest.approx(2.0, rel=0.1)


def test_exact_job_count():
    jobs = gen.synthetic(VCS, days=1, seed=4, jobs=321).jobs
    assert len(jobs) == 321
    assert set(jobs["vc"]) == set(VCS)


def test_vc_without_offered_load_gets_no_jobs():
    jobs = gen.synthetic({"busy": 50.0, "idle": 0.0}, days=1, seed=0).jobs
    assert set(jobs["vc"]) == {"busy"}


# -- arrivals ----------------------------------------------------------------------------------
def test_daily_cycle_averages_one_and_peaks_at_peak_hour():
    times = np.arange(0, gen.DAY, 60.0)
    rate = gen.daily_cycle(times, amplitude=0.6, peak_hour=14.0)
    assert rate.mean() == pytest.approx(1.0)
    assert times[rate.argmax()] == 14 * 3600
    assert gen.cumulative_cycle(3 * gen.DAY, 0.6, 14.0) == pytest.approx(3 * gen.DAY)


def test_arrivals_crowd_around_the_peak():
    rng = np.random.default_rng(0)
    times = gen.arrival_times(rng, 20_000, 2 * gen.DAY, amplitude=0.9, peak_hour=12.0)
    assert len(times) == 20_000
    assert times.min() >= 0 and times.max() < 2 * gen.DAY
    hour = (times % gen.DAY) // 3600
    assert (hour == 12).sum() > 5 * (hour == 0).sum()


# -- GPU demand --------------------------------------------------------------------------------
def test_default_demand_has_median_one_and_rare_multi_node_jobs():
    table = gen.check_gpu_demand(gen.DEFAULT_GPU_DEMAND)
    assert table[1] > 0.5
    assert sum(p for size, p in table.items() if size > 8) < 0.1
    assert gen.mean_gpus(table) == pytest.approx(5.26)


def test_demand_table_truncates_and_renormalises():
    table = gen.demand_table({1: 0.5, 8: 0.25, 64: 0.25}, max_gpus=16)
    assert table == pytest.approx({1: 2 / 3, 8: 1 / 3})


def test_draw_gpus_matches_the_table():
    rng = np.random.default_rng(0)
    drawn = gen.draw_gpus(rng, 50_000, {1: 0.7, 4: 0.2, 8: 0.1})
    shares = pd.Series(drawn).value_counts(normalize=True)
    assert shares.to_dict() == pytest.approx({1: 0.7, 4: 0.2, 8: 0.1}, abs=0.01)


def test_jobs_never_exceed_their_vc_cap():
    jobs = gen.synthetic(
        {"big": 200.0, "small": 20.0}, days=2, seed=0, max_gpus={"big": 256, "small": 8}
    ).jobs
    assert jobs.loc[jobs["vc"] == "small", "num_gpus"].max() <= 8
    assert jobs.loc[jobs["vc"] == "big", "num_gpus"].max() > 8


# -- durations ---------------------------------------------------------------------------------
def test_clipped_lognormal_hits_the_target_mean():
    mu = gen.lognormal_mu(5_000.0, 2.0, 10.0, 86_400.0)
    assert gen.clipped_lognormal_mean(mu, 2.0, 10.0, 86_400.0) == pytest.approx(5_000.0)
    drawn = gen.draw_durations(np.random.default_rng(0), 200_000, 5_000.0, 1.0, 10.0, 86_400.0)
    assert drawn.min() >= 10 and drawn.max() <= 86_400
    assert drawn.mean() == pytest.approx(5_000.0, rel=0.02)
    assert np.all(drawn == np.rint(drawn))


# -- users -------------------------------------------------------------------------------------
def test_users_have_zipf_shares_and_vc_prefixed_names():
    shares = gen.zipf_shares(5, 1.0)
    assert shares.sum() == pytest.approx(1.0)
    assert np.all(np.diff(shares) < 0)
    assert gen.user_names("vc03", 8)[7] == "vc03-u07"
    jobs = small(0, users_per_vc=4)
    users = jobs.groupby("vc")["user"].unique()
    assert all(u.startswith(f"{vc}-u0") for vc, names in users.items() for u in names)
    counts = jobs.loc[jobs["vc"] == "vc00", "user"].value_counts()
    assert counts.index[0] == "vc00-u00"


# -- parameter checks --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"days": -1}, "days"),
        ({"days": 0}, "days"),
        ({"days": float("nan")}, "days"),
        ({"mean_duration": -5}, "mean_duration"),
        ({"mean_duration": 5.0, "min_duration": 10.0}, "mean_duration"),
        ({"max_duration": 5.0}, "max_duration"),
        ({"duration_sigma": 0}, "duration_sigma"),
        ({"gpu_demand": {1: 0.5, 2: 0.4}}, "gpu_demand"),
        ({"gpu_demand": {1: 1.2, 2: -0.2}}, "gpu_demand"),
        ({"gpu_demand": {0: 1.0}}, "gpu_demand"),
        ({"gpu_demand": {}}, "gpu_demand"),
        ({"load_scale": 0}, "load_scale"),
        ({"daily_amplitude": 1.5}, "daily_amplitude"),
        ({"peak_hour": 24}, "peak_hour"),
        ({"users_per_vc": 0}, "users_per_vc"),
        ({"user_zipf": -1}, "user_zipf"),
        ({"jobs": -3}, "jobs"),
        ({"max_gpus": {"nope": 8}}, "max_gpus"),
        ({"max_gpus": {"vc00": 0}}, "max_gpus"),
        ({"max_gpus": {"vc00": 4}, "gpu_demand": {8: 1.0}}, "max_gpus"),
    ],
)
def test_bad_parameters_raise_naming_the_parameter(params, named):
    arguments = {"days": 1, **params}
    with pytest.raises(ValueError, match=named):
        gen.synthetic(VCS, **arguments)


@pytest.mark.parametrize("vcs", [{}, {"a": -1.0}, {"a": 0.0}, {"": 3.0}, [("a", 1.0)]])
def test_bad_vcs_raise(vcs):
    with pytest.raises(ValueError, match="vcs"):
        gen.synthetic(vcs, days=1)


# -- properties --------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    offered=st.lists(st.floats(0.5, 30.0), min_size=1, max_size=4),
    cap=st.sampled_from([1, 4, 8, 24, 64]),
    days=st.floats(0.05, 2.0),
    seed=st.integers(0, 2**32 - 1),
    amplitude=st.floats(0.0, 1.0),
)
def test_any_generated_workload_is_well_formed(offered, cap, days, seed, amplitude):
    vcs = {f"vc{i:02d}": gpus for i, gpus in enumerate(offered)}
    workload = gen.synthetic(
        vcs,
        days=days,
        seed=seed,
        mean_duration=900.0,
        max_gpus={vc: cap for vc in vcs},
        daily_amplitude=amplitude,
        users_per_vc=3,
    )
    jobs = workload.jobs
    assert jobs["submit_time"].between(0, days * gen.DAY).all()
    assert jobs["submit_time"].is_monotonic_increasing
    assert jobs["duration"].between(10, 7 * gen.DAY).all()
    assert (jobs["num_gpus"] <= cap).all()
    assert set(jobs["vc"]) <= set(vcs)
    assert jobs["job_id"].is_unique
