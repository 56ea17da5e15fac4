"""Each teaching scenario's lesson changes the outcome the way its description says."""

from __future__ import annotations

import pytest

import analysim as asim
from analysim.inputs import scenarios


def _runs(name: str):
    s = scenarios.get(name)
    on = asim.simulate(s.workload(), s.cluster(), s.config())
    off = asim.simulate(s.workload(), s.cluster(), s.config(**s.without()))
    return on, off


def _jct(result) -> dict[str, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["jct"], strict=True))


def test_the_scenarios_in_teaching_order():
    assert scenarios.names() == [
        "preemption",
        "las_queues",
        "fragmentation",
        "migration",
        "borrowing",
    ]
    with pytest.raises(ValueError, match="unknown scenario 'nope'; known scenarios: "):
        scenarios.get("nope")


def test_preemption_lets_the_short_job_through():
    on, off = _runs("preemption")
    # with preemption 'short' evicts 'long' when it arrives (t=120) and runs its 5 minutes;
    # 'long' pays 30 s of checkpoint cost and finishes 5.5 min later than alone
    assert _jct(on) == {"long": 3930.0, "short": 300.0}
    assert on.summary()["preemptions"] == 1
    # without, 'short' waits for the hour-long job: 3600 - 120 + 300
    assert _jct(off) == {"long": 3600.0, "short": 3780.0}


def test_las_queues_demote_the_long_job():
    on, off = _runs("las_queues")
    # two queues split at 1 GPU-h: after 15 min on 4 GPUs 'long' drops to the second queue,
    # so each short job preempts it and runs at once
    assert [_jct(on)[f"s{k}"] for k in range(4)] == [600.0] * 4
    assert on.summary()["preemptions"] == 4
    # one queue (100 GPU-h): LAS orders by arrival and the short jobs wait for 'long'
    assert off.summary()["preemptions"] == 0
    assert _jct(off)["long"] == 14400.0
    assert _jct(off)["s0"] == 14400.0 - 1800.0 + 600.0


def test_fragmentation_makes_the_big_job_wait_under_spread():
    on, off = _runs("fragmentation")
    assert _jct(on)["big"] == 1800.0  # consolidate: both 2-GPU jobs on one node
    # spread: 2 GPUs free on each node; 'big' waits until a1 ends (3600) and frees its node
    assert _jct(off)["big"] == 3600.0 - 60.0 + 1800.0
    assert off.summary()["avg_blocked_jobs"] > 0


def test_migration_moves_a_job_to_make_room():
    on, off = _runs("migration")
    assert on.summary()["migrations"] == 1
    assert _jct(on)["big"] == 1800.0
    assert _jct(on)["a1"] == 3600.0 + 60.0  # the moved job pays the 60 s migration cost
    assert _jct(off)["big"] == 5340.0


def test_borrowing_uses_the_idle_vc_and_is_reclaimed():
    on, off = _runs("borrowing")
    assert on.summary()["borrowed_gpu_hours"] > 0 and on.summary()["reclaims"] == 1
    assert _jct(on)["b1"] == _jct(off)["b1"] == 1200.0  # the owner gets its node back at once
    assert on.summary()["avg_jct"] < off.summary()["avg_jct"]
    assert _jct(off) == {"a0": 1800.0, "a1": 3540.0, "a2": 5280.0, "a3": 7020.0, "b1": 1200.0}
