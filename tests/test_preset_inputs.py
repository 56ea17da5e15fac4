"""Presets, the generators and ``Shape`` refuse what they cannot honour, naming the argument:
seeds that are not whole numbers >= 0 (a bool, None, text), workloads beyond memory (with the
estimate, the limit and what to lower), shapes out of range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysim import presets
from analysim.faces.cli import main
from analysim.inputs import generators
from analysim.presets.calibrated import Shape


@pytest.mark.parametrize("seed", [True, False, np.bool_(True), None, -1, 1.5, "0", 2**64])
@pytest.mark.parametrize("name", ["toy", "venus", "venus_overloaded"])
def test_a_preset_refuses_a_seed_that_is_not_a_whole_number_naming_seed(name, seed):
    with pytest.raises(ValueError, match=r"^seed must be a whole number from 0"):
        presets.workload(name, seed=seed, days=0.5)


def test_seed_none_says_why_it_is_refused():
    with pytest.raises(ValueError, match="different workload on every call; pass seed=0"):
        presets.workload("venus", seed=None, days=0.5)


def test_numpy_seeds_are_seeds_and_give_the_same_month():
    a = presets.workload("venus", seed=np.int64(3), days=0.5)
    b = presets.workload("venus", seed=3, days=0.5)
    assert a.jobs.equals(b.jobs)


@pytest.mark.parametrize("seed", [True, None, -5])
def test_the_generators_refuse_the_same_seeds(seed):
    with pytest.raises(ValueError, match="seed"):
        generators.synthetic({"a": 8.0}, days=0.1, seed=seed)


@pytest.mark.parametrize(
    "name, days, load_scale",
    [("saturn", 3650, 1000), ("saturn", 3650, 1), ("venus_overloaded", 3650, 1000)],
)
def test_a_month_beyond_memory_is_refused_with_the_estimate_and_the_limit(name, days, load_scale):
    with pytest.raises(ValueError, match=r"jobs, about [\d,.]+ GiB.*limit is 4 GiB.*lower days"):
        presets.workload(name, days=days, load_scale=load_scale)


def test_the_large_preset_refuses_too_many_jobs_naming_jobs():
    with pytest.raises(ValueError, match="lower jobs"):
        presets.workload("large", jobs=10**12)


def test_presets_check_with_a_billion_days_is_one_line(capsys):
    assert main(["presets", "--check", "--days", "1e9", "--seeds", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("analysim: error:") and "days" in err[0]


@pytest.mark.parametrize(
    "field, value, needle",
    [
        ("one_gpu_share", -0.1, r"\[0, 1\]"),
        ("one_gpu_share", 1.5, r"\[0, 1\]"),
        ("one_gpu_share", math.nan, "finite"),
        ("max_job_fraction", 2, r"\(0, 1\]"),
        ("max_job_fraction", 0, r"\(0, 1\]"),
        ("size_growth", math.nan, "finite"),
        ("size_growth", math.inf, "finite"),
        ("load_skew", "1", "number"),
        ("min_duration", -1, r"\(0, "),
        ("max_duration", math.inf, "finite"),
        ("daily_amplitude", 1.5, r"\[0, 1\]"),
        ("daily_amplitude", math.nan, "finite"),
        ("peak_hour", 24, r"\[0, 24\)"),
        ("peak_hour", -1, r"\[0, 24\)"),
        ("peak_hour", math.nan, "finite"),
        ("users_per_vc", 0, "users_per_vc"),
        ("users_per_vc", True, "whole number"),
        ("users_per_vc", 2.5, "whole number"),
        ("user_zipf", -1, r"\[0, 100\]"),
        ("max_gpu_days", -1, r"\(0, "),
        ("max_gpu_days", 0, r"\(0, "),
        ("max_gpu_days", math.nan, "finite"),
        ("arrivals", None, "arrivals"),
    ],
)
def test_shape_refuses_a_value_its_generator_cannot_honour(field, value, needle):
    with pytest.raises(ValueError, match=rf"Shape: {field}.*{needle}|Shape: {field}"):
        Shape(**{field: value})
    with pytest.raises(ValueError, match=needle):
        Shape(**{field: value})


def test_shape_refuses_min_duration_above_max_duration():
    with pytest.raises(ValueError, match=r"min_duration \(100 s\) must be below max_duration"):
        Shape(min_duration=100, max_duration=10)


def test_every_helios_shape_is_valid():
    from analysim.presets.helios import SHAPES

    for shape in SHAPES.values():
        assert Shape(**shape.__dict__) == shape
