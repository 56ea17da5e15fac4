"""The Pollux agent's goodput model (analysim/compat/pollux_goodput.py): hand-checked values
and golden values of the artifact's own goodput.py/speedup.py for the same parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysim.compat.pollux_goodput import GoodputModel, PerfParams, _Profile, fit_perf_params

MODEL = GoodputModel(PerfParams(0.05, 0.002, 0.3, 0.01, 0.1, 0.005, 2.0), 2.0, 30.0, 128)
LIMITS = (4096, (32, 1024))  # largest batch size, atomic batch size range


def test_throughput_hand_checked():
    """2 nodes, 8 GPUs, atomic batch 64, one accumulation step: compute 0.05 + 0.002 x 64 =
    0.178 s, network 0.3 + 0.01 x (8 - 2) = 0.36 s, synchronising step sqrt(0.178² + 0.36²)
    (gamma 2); 8 x 64 x 2 = 1024 samples in 0.178 + that."""
    expected = 1024 / (0.178 + math.sqrt(0.178**2 + 0.36**2))
    assert MODEL.throughput(2, 8, 64, 1) == pytest.approx(expected, rel=1e-12)
    assert MODEL.throughput(2, 8, 64, 1) == pytest.approx(1766.7302149110794, rel=1e-12)


def test_efficiency_hand_checked():
    """Batch 1024 = 8 x the initial 128: gain (30 + 2) / (30 / 8 + 2) = 32 / 5.75, over 8."""
    assert MODEL.efficiency(1024) == pytest.approx(16 / 23, rel=1e-15)
    assert MODEL.efficiency(128) == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize(
    ("nodes", "replicas", "goodput", "atomic", "accum"),
    [  # the artifact's GoodputFunction.optimize for the same model and limits
        (1, 1, 418.300653594771, 128, 0),
        (1, 4, 1329.5978832603437, 142, 0),
        (2, 8, 1615.0348882421597, 196, 0),
        (4, 16, 2043.101096341342, 175, 0),
    ],
)
def test_best_configuration_equals_the_artifact(nodes, replicas, goodput, atomic, accum):
    value, best_atomic, best_accum = MODEL.best([nodes], [replicas], *LIMITS)
    assert (int(best_atomic[0]), int(best_accum[0])) == (atomic, accum)
    assert value[0] == pytest.approx(goodput, rel=1e-12)


def test_one_gpu_accumulates_beyond_the_initial_batch():
    """Gradient noise so large that efficiency stays near 1: the largest batch (4096) wins;
    on one GPU it is 4 steps of 1024 (the largest atomic batch), on 4 GPUs 1024 each."""
    noisy = GoodputModel(MODEL.perf, 1.0, 1e9, 128)
    _, atomic, accum = noisy.best([1, 1], [1, 4], *LIMITS)
    assert atomic.tolist() == [1024, 1024] and accum.tolist() == [3, 0]


def test_speedup_equals_the_artifact():
    nodes, replicas = np.array([1, 1, 2, 4, 16, 0]), np.array([1, 4, 8, 16, 64, 0])
    expected = [1.0, 3.178569939669261, 3.8609427797039153, 4.884288558441024, 3.557340998559994]
    speedup = MODEL.speedup(nodes, replicas, *LIMITS)
    assert speedup[:5] == pytest.approx(expected, rel=1e-12)
    assert speedup[5] == 0.0


# Profiles made from the artifact's traces (true step and accumulation times of the
# configurations a job has run: nodes, replicas, atomic batch size, accumulation step time,
# whole step time), with the artifact's fit_perf_params's parameters and objective.
PROFILES = {
    "cifar10 on one GPU": (
        [[1, 1, 128, 0.10258998776940922, 0.10311532334277498]],
        [
            0.05129499388470461,
            0.0004017901831556793,
            1.1000000000000001e-08,
            1.1000000000000001e-08,
            1e-08,
            1e-08,
            1.0009999738311823,
        ],
    ),
    "cifar10 on up to 2 nodes": (
        [
            [1, 1, 128, 0.10258998776940922, 0.10311532334277498],
            [1, 2, 64, 0.0645524805128575, 0.0654734373092651],
            [1, 4, 128, 0.1053293809633506, 0.10976016960645973],
            [2, 4, 256, 0.19821873082478836, 0.2234345359802245],
        ],
        [
            0.019788538276249053,
            0.000665636519135527,
            0.0311265610015585,
            0.00938306107986785,
            0.005773175367605704,
            0.0012578902048078322,
            1.1747564142813567,
        ],
    ),
    "imagenet on up to 4 nodes": (
        [
            [1, 1, 100, 0.4974615588924464, 0.498661531420315],
            [1, 4, 100, 0.5258259836154826, 0.5336955168667962],
            [2, 8, 200, 1.008518467950821, 1.0148882150650025],
            [4, 16, 100, 0.5263294678870369, 0.5776139701113981],
            [1, 2, 50, 0.2892996106954182, 0.2920937187531415],
        ],
        [
            0.05003212039911838,
            0.004655303264267582,
            0.0449096463071538,
            0.003942946203100161,
            0.02077444160603058,
            0.00423507383465684,
            1.1846428824144615,
        ],
    ),
    "bert on one node": (
        [
            [1, 1, 12, 0.9078199193477632, 0.9215156733989716],
            [1, 3, 8, 0.6617541025877, 0.7418830245733261],
            [1, 4, 12, 0.8642503433227539, 0.9571182131767272],
        ],
        [
            0.18976386025777825,
            0.059314800714672655,
            0.327050463313649,
            1.1000000000000001e-08,
            0.29731860301240814,
            1e-08,
            1.8651025118382334,
        ],
    ),
}


def _profile(rows):
    return _Profile(*(np.array(column, dtype=float) for column in zip(*rows, strict=True)))


@pytest.mark.parametrize("name", list(PROFILES))
def test_objective_gradient_matches_finite_differences(name):
    rows, params = PROFILES[name]
    profile = _profile(rows)
    x = np.array(params) + np.array([0.01, 0.001, 0.01, 0.001, 0.01, 0.001, 0.2])
    _, grad = profile.objective(x)
    h = 1e-6 * np.abs(x)
    for i in range(7):
        step = np.eye(7)[i] * h[i]
        numeric = (profile.objective(x + step)[0] - profile.objective(x - step)[0]) / (2 * h[i])
        assert grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("name", list(PROFILES))
def test_fit_is_as_good_as_the_artifacts(name):
    """Our optimum's objective is within 1e-4 of the artifact's (or better), and the fitted
    model predicts each profiled step time within 1 % of the artifact's fitted model."""
    rows, params = PROFILES[name]
    profile = _profile(rows)
    ours = fit_perf_params(*(np.array(c) for c in zip(*rows, strict=True)), compiled=False)
    x = np.array([getattr(ours, f) for f in PerfParams.__dataclass_fields__])
    assert profile.objective(x)[0] <= profile.objective(np.array(params))[0] + 1e-4
    nodes, replicas, atomic = profile.nodes, profile.replicas, profile.atomic
    theirs = GoodputModel(PerfParams(*params), 1.0, 1.0, 1)
    mine = GoodputModel(ours, 1.0, 1.0, 1)
    assert mine.throughput(nodes, replicas, atomic, 0) == pytest.approx(
        theirs.throughput(nodes, replicas, atomic, 0), rel=0.01
    )


def test_fit_holds_what_one_configuration_cannot_tell():
    """One GPU, one batch size: alpha_c is half the accumulation time, the network terms stay
    at their floor 1e-8 and, as no run spanned nodes, alpha_n and beta_n are raised to 1.1 x
    alpha_r and beta_r."""
    rows, params = PROFILES["cifar10 on one GPU"]
    fit = fit_perf_params(*(np.array(c) for c in zip(*rows, strict=True)), compiled=False)
    assert fit.alpha_c == rows[0][3] / 2
    assert (fit.alpha_r, fit.beta_r) == (1e-8, 1e-8)
    assert (fit.alpha_n, fit.beta_n) == (pytest.approx(1.1e-8), pytest.approx(1.1e-8))
    assert fit.beta_c == pytest.approx(params[1], rel=0.01)
