"""The Pollux agent's goodput model (analysim/compat/pollux_goodput.py): hand-checked values
and golden values of the artifact's own goodput.py/speedup.py for the same parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysim.compat.pollux_goodput import GoodputModel, PerfParams

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
