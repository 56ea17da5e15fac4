"""Scheduling policies: priority keys over hand-built job views, LAS queues, starvation guard
and next_change, fair-share keys, and the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysim.policies import FIFO, LAS, SCHEDULERS, SJF, SRTF, FairShare, JobView, Scheduler
from analysim.policies.scheduling import RUNNING, WAITING

W, R = WAITING, RUNNING


def view(now=0.0, vc_used=None, **arrays) -> JobView:
    """A view over n jobs; columns not given get neutral values (waiting, nothing done)."""
    n = len(next(iter(arrays.values())))
    defaults = {
        "num_gpus": [1] * n,
        "submit_time": list(range(n)),
        "duration": [100.0] * n,
        "attained": [0.0] * n,
        "executed": [0.0] * n,
        "since": [0.0] * n,
        "vc": [0] * n,
        "priority": [0.0] * n,
        "status": [W] * n,
    }
    defaults.update(arrays)
    if "remaining" not in defaults:
        defaults["remaining"] = defaults["duration"]
    columns = {k: np.asarray(v) for k, v in defaults.items()}
    for k in ("num_gpus", "vc", "status"):
        columns[k] = columns[k].astype(np.int64)
    for k in ("submit_time", "duration", "remaining", "attained", "executed", "since", "priority"):
        columns[k] = columns[k].astype(float)
    used = None if vc_used is None else np.asarray(vc_used, dtype=np.int64)
    return JobView.from_arrays(now, vc_used=used, **columns)


def ranking(scheduler: Scheduler, jobs: JobView) -> list[int]:
    """The order the engine would use: keys lowest first, ties by position."""
    keys = [np.asarray(k) for k in scheduler.priority(jobs)]
    assert all(k.shape == jobs.index.shape for k in keys)
    return np.lexsort([jobs.index, *reversed(keys)]).tolist()


# -- the view itself --------------------------------------------------------------------------
def test_running_jobs_progress_with_the_clock():
    jobs = view(
        now=100.0,
        num_gpus=[2, 2],
        status=[R, W],
        since=[40.0, 40.0],
        remaining=[500.0, 500.0],
        attained=[10.0, 10.0],
        executed=[5.0, 5.0],
    )
    assert jobs.running.tolist() == [True, False]
    assert jobs.remaining.tolist() == [440.0, 500.0]  # ran 60 s since t=40
    assert jobs.attained.tolist() == [130.0, 10.0]  # 60 s x 2 GPUs
    assert jobs.executed.tolist() == [65.0, 5.0]


# -- fifo, sjf, srtf, priority ------------------------------------------------------------------
def test_fifo_orders_by_submit_time_then_position():
    jobs = view(submit_time=[30.0, 10.0, 20.0, 10.0], duration=[1.0, 500.0, 2.0, 3.0])
    assert ranking(FIFO(), jobs) == [1, 3, 2, 0]


def test_sjf_orders_by_duration():
    jobs = view(submit_time=[0.0, 1.0, 2.0, 3.0], duration=[300.0, 100.0, 200.0, 100.0])
    assert ranking(SJF(), jobs) == [1, 3, 2, 0]


def test_sjf_ignores_progress():
    jobs = view(now=50.0, duration=[100.0, 60.0], remaining=[10.0, 60.0], status=[R, W])
    assert ranking(SJF(), jobs) == [1, 0]


def test_srtf_orders_by_remaining_time_counting_running_progress():
    # job 0 has 100 s left as of t=0 and has been running since: at t=60 it has 40 left
    jobs = view(
        now=60.0,
        duration=[100.0, 50.0, 45.0],
        remaining=[100.0, 50.0, 45.0],
        status=[R, W, W],
        since=[0.0, 0.0, 0.0],
    )
    assert jobs.remaining.tolist() == [40.0, 50.0, 45.0]
    assert ranking(SRTF(), jobs) == [0, 2, 1]
    assert ranking(SRTF(), view(now=0.0, remaining=[100.0, 50.0, 45.0])) == [2, 1, 0]


def test_priority_orders_by_priority_then_submit():
    jobs = view(priority=[2.0, 1.0, 1.0, 0.0], submit_time=[0.0, 5.0, 3.0, 9.0])
    assert ranking(SCHEDULERS.make("priority"), jobs) == [3, 2, 1, 0]


# -- las ----------------------------------------------------------------------------------------
def test_las_queues_by_attained_service():
    las = LAS(thresholds=[100, 1000])
    jobs = view(attained=[0.0, 99.0, 100.0, 999.0, 1000.0, 5e6])
    assert las.queue(jobs).tolist() == [0, 0, 1, 1, 2, 2]


def test_las_ranks_queue_first_then_submit_order():
    las = LAS(thresholds=[100, 1000])
    jobs = view(
        submit_time=[0.0, 1.0, 2.0, 3.0, 4.0],
        attained=[5000.0, 150.0, 0.0, 999.0, 50.0],
        duration=[1.0, 2.0, 3.0, 4.0, 5.0],
    )
    # queues [2, 1, 0, 1, 0]
    assert ranking(las, jobs) == [2, 4, 1, 3, 0]


def test_las_counts_a_running_jobs_service_so_far():
    las = LAS(thresholds=[100])
    # job 0 has run on 4 GPUs since t=0: by t=30 it has 120 GPU-seconds, queue 1
    jobs = view(now=30.0, num_gpus=[4, 1], status=[R, W], submit_time=[0.0, 10.0])
    assert las.queue(jobs).tolist() == [1, 0]
    assert ranking(las, jobs) == [1, 0]
    assert las.queue(view(now=20.0, num_gpus=[4, 1], status=[R, W])).tolist() == [0, 0]


def test_las_default_thresholds_and_dynamic():
    las = SCHEDULERS.make("las")
    assert las.thresholds == [18000.0]
    assert las.starvation_factor == 4.0
    assert LAS.dynamic is True
    assert not any(SCHEDULERS.make(n).dynamic for n in SCHEDULERS.names if n != "las")


def starving_view(now):
    # job 0: waiting, queue 1 (attained 200), last stopped at t=100 after running 50 s
    # job 1: waiting, queue 0, waited long; job 2: running in queue 1;
    # job 3: waiting, queue 1, never starved long enough (executed 1000 s)
    return view(
        now=now,
        attained=[200.0, 10.0, 200.0, 500.0],
        executed=[50.0, 10.0, 50.0, 1000.0],
        since=[100.0, 0.0, 100.0, 100.0],
        status=[W, W, R, W],
    )


def test_las_service_resets_a_starving_job_only():
    las = LAS(thresholds=[100], starvation_factor=4.0)
    # job 0 becomes starving once it has waited 4 x 50 = 200 s since t=100, at t=300
    assert las.service_resets(starving_view(299.0)).tolist() == [False] * 4
    assert las.service_resets(starving_view(300.0)).tolist() == [True, False, False, False]
    assert las.service_resets(starving_view(5000.0)).tolist() == [True, False, False, True]


def test_las_without_a_guard_resets_nothing():
    las = LAS(thresholds=[100], starvation_factor=None)
    assert las.service_resets(starving_view(10_000.0)) is None
    # and so only threshold crossings change the ranking: job 2 runs in the last queue
    assert las.next_change(starving_view(300.0)) == math.inf


def test_las_next_change_is_when_a_running_job_crosses_a_threshold():
    las = LAS(thresholds=[100, 1000], starvation_factor=None)
    # job 0 runs on 2 GPUs with 50 GPU-s at t=10: reaches 100 at t=10 + 50/2 = 35
    jobs = view(now=10.0, num_gpus=[2, 1], attained=[50.0, 0.0], since=[10.0, 0.0], status=[R, W])
    assert las.next_change(jobs) == pytest.approx(35.0)
    # past the first threshold, the next one: 1000 at 10 + (1000 - 150) / 2 = 435
    jobs = view(now=10.0, num_gpus=[2, 1], attained=[150.0, 0.0], since=[10.0, 0.0], status=[R, W])
    assert las.next_change(jobs) == pytest.approx(435.0)
    # in the last queue: never
    jobs = view(now=10.0, num_gpus=[2, 1], attained=[2000.0, 0.0], since=[10.0, 0.0], status=[R, W])
    assert las.next_change(jobs) == math.inf
    # nothing running, nobody starving: never
    assert las.next_change(view(now=10.0, attained=[0.0, 0.0])) == math.inf


def test_las_next_change_is_when_a_waiting_job_starts_starving():
    las = LAS(thresholds=[100], starvation_factor=4.0)
    jobs = view(
        now=150.0,
        attained=[200.0, 300.0, 0.0],
        executed=[50.0, 30.0, 0.0],
        since=[100.0, 120.0, 0.0],
        status=[W, W, W],
    )
    # job 0 is due at 100 + 200 = 300, job 1 at 120 + 120 = 240; job 2 is in queue 0
    assert las.next_change(jobs) == pytest.approx(240.0)
    # once a due time has passed it no longer counts (the reset has happened or is due now)
    jobs = view(
        now=250.0,
        attained=[200.0, 300.0],
        executed=[50.0, 30.0],
        since=[100.0, 120.0],
        status=[W, W],
    )
    assert las.next_change(jobs) == pytest.approx(300.0)


def test_las_next_change_takes_the_sooner_of_both():
    las = LAS(thresholds=[100, 1000], starvation_factor=4.0)
    jobs = view(
        now=10.0,
        num_gpus=[2, 1],
        attained=[50.0, 200.0],
        executed=[0.0, 5.0],
        since=[10.0, 0.0],
        status=[R, W],
    )
    # crossing at 35; starvation due at 0 + 4 x 5 = 20
    assert las.next_change(jobs) == pytest.approx(20.0)


def test_las_rejects_bad_parameters():
    for bad in ({"thresholds": [1000, 100]}, {"thresholds": [0]}, {"thresholds": [5, 5]}):
        with pytest.raises(ValueError, match="thresholds"):
            LAS(**bad)
    with pytest.raises(ValueError, match="starvation_factor"):
        LAS(starvation_factor=-1)


# -- fair share ---------------------------------------------------------------------------------
def fair_view(include_running=True):
    # VC 0 (8 GPUs) runs job 0 on 4 GPUs; VC 0 waits with job 1 (2 GPUs); VC 1 (4 GPUs)
    # waits with jobs 2 (2 GPUs) and 3 (4 GPUs)
    rows = dict(
        num_gpus=[4, 2, 2, 4],
        vc=[0, 0, 1, 1],
        status=[R, W, W, W],
        submit_time=[0.0, 1.0, 2.0, 3.0],
    )
    if not include_running:
        rows = {k: v[1:] for k, v in rows.items()}
    return view(vc_used=[4, 0], **rows)


def test_fair_keys_by_progressive_filling():
    fair = FairShare()
    fair.bind(["a", "b"], np.array([8, 4]))
    jobs = fair_view()
    key, submit = fair.priority(jobs)
    # VC a: 4/8 with job 0, then 6/8 with job 1; VC b: 2/4 with job 2, then 6/4 with job 3
    assert key.tolist() == pytest.approx([0.5, 0.75, 0.5, 1.5])
    assert submit.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert ranking(fair, jobs) == [0, 2, 1, 3]


def test_fair_counts_running_jobs_outside_the_view():
    fair = FairShare()
    fair.bind(["a", "b"], np.array([8, 4]))
    jobs = fair_view(include_running=False)  # the 4 GPUs VC a holds still count
    key, _ = fair.priority(jobs)
    assert key.tolist() == pytest.approx([0.75, 0.5, 1.5])
    assert ranking(fair, jobs) == [1, 0, 2]


def test_fair_weights_replace_capacities():
    fair = FairShare(weights={"a": 1.0, "b": 4.0})
    fair.bind(["a", "b"], np.array([8, 4]))
    key, _ = fair.priority(fair_view())
    assert key.tolist() == pytest.approx([4.0, 6.0, 0.5, 1.5])
    assert ranking(fair, fair_view()) == [2, 3, 0, 1]


def test_fair_unnamed_vcs_weigh_one_and_unknown_ones_fail():
    fair = FairShare(weights={"b": 2.0})
    fair.bind(["a", "b"], np.array([8, 4]))
    key, _ = fair.priority(fair_view())
    assert key.tolist() == pytest.approx([4.0, 6.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="'zz'"):
        FairShare(weights={"zz": 1.0}).bind(["a", "b"], np.array([8, 4]))
    with pytest.raises(ValueError, match="weights"):
        FairShare(weights={"a": 0.0})


# -- the registry ---------------------------------------------------------------------------
def test_registry_by_name():
    assert isinstance(SCHEDULERS.make("fifo"), FIFO)
    assert isinstance(SCHEDULERS.make("sjf"), SJF)
    assert isinstance(SCHEDULERS.make("srtf"), SRTF)
    assert isinstance(SCHEDULERS.make("las"), LAS)
    assert isinstance(SCHEDULERS.make("fair"), FairShare)
    for name in SCHEDULERS.names:
        assert SCHEDULERS.make(name).name == name


def test_registry_by_dict_with_params():
    las = SCHEDULERS.make({"name": "las", "thresholds": [100, 1000], "starvation_factor": 2})
    assert las.thresholds == [100.0, 1000.0] and las.starvation_factor == 2
    assert las.spec() == {"name": "las", "thresholds": [100.0, 1000.0], "starvation_factor": 2}
    assert SCHEDULERS.make(las.spec()).spec() == las.spec()
    assert SCHEDULERS.make({"name": "fifo"}).spec() == {"name": "fifo"}


def test_registry_by_instance():
    # an instance is copied (each simulation binds a policy of its own), with its parameters
    fair = FairShare(weights={"a": 2.0})
    made = SCHEDULERS.make(fair)
    assert made is not fair and type(made) is FairShare and made.spec() == fair.spec()


def test_registry_unknown_name_lists_the_names():
    with pytest.raises(ValueError) as info:
        SCHEDULERS.make("lottery")
    message = str(info.value)
    assert "'lottery'" in message
    assert all(repr(name) in message for name in SCHEDULERS.names)


@pytest.mark.parametrize(
    "spec",
    [{"name": "las", "colour": "red"}, {"name": "fifo", "backfill": True}],
)
def test_registry_bad_params(spec):
    with pytest.raises(ValueError):
        SCHEDULERS.make(spec)


@pytest.mark.parametrize("spec", [5, None, {"thresholds": [1]}, ["fifo"]])
def test_registry_rejects_what_is_not_a_spec(spec):
    with pytest.raises(ValueError, match="expected a name"):
        SCHEDULERS.make(spec)
