"""A random stress of resource mode whose invariants are rebuilt from the public frames only
(``Result.events``, with each job's request from ``Result.jobs`` and each node's capacity
from ``Result.meta``): at every moment no GPU holds more than 1000 milli and no node more
CPU or memory than it has; every job ends done or reported (unschedulable); the same seed
gives the same result. EASY backfill, preemption, migration and borrowing are switched on at
random (``strategies.resource_cases``)."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from strategies import resource_cases

from analysim import Result, simulate
from analysim.errors import PolicyError
from analysim.results.result import parse_gpu_list

STRESS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TAKES = {"start", "resume", "migrate"}
RELEASES = {"preempt", "reclaim", "finish"}


def _holding(job: pd.Series, row: Any) -> tuple[dict, dict]:
    """What one run of ``job`` holds, from its event: milli per (node, gpu), and CPU and
    memory per node (a whole-GPU job takes ceil(amount / GPUs) per GPU on each node; a share
    or a CPU-only job all of it on its one node)."""
    gpus = parse_gpu_list(row.gpus) if isinstance(row.gpus, str) else []
    milli = {(node, gpu): int(job["gpu_milli"]) if job["num_gpus"] == 1 else 1000
             for node, gpu in gpus}  # fmt: skip
    per_node: dict[str, int] = defaultdict(int)
    for node, _ in gpus:
        per_node[node] += 1
    amounts: dict[str, tuple[int, int]] = {}
    if gpus:
        n = int(job["num_gpus"])
        for node, count in per_node.items():
            amounts[node] = (
                math.ceil(int(job["cpu_milli"]) / n) * count,
                math.ceil(int(job["memory_mib"]) / n) * count,
            )
    else:  # a CPU-only job: on the one node its event names
        amounts[str(row.nodes)] = (int(job["cpu_milli"]), int(job["memory_mib"]))
    return milli, amounts


def check_events(result: Result) -> None:
    """Replay the events and check the resource limits after every moment's decisions."""
    jobs = result.jobs.set_index("job_id")
    nodes = result.meta["nodes"]
    unlimited = [None] * len(nodes["node"])
    cpu_of = dict(zip(nodes["node"], nodes.get("cpu_milli", unlimited), strict=True))
    mem_of = dict(zip(nodes["node"], nodes.get("memory_mib", unlimited), strict=True))
    held: dict[Any, tuple[dict, dict]] = {}
    events = result.events
    for time, moment in events.groupby("time", sort=True):
        for row in moment.itertuples(index=False):
            kind = str(row.event)
            if kind in TAKES:
                held[row.job_id] = _holding(jobs.loc[row.job_id], row)
            elif kind in RELEASES:
                assert held.pop(row.job_id, None) is not None, f"{row.job_id} released unheld"
        milli: dict[tuple, int] = defaultdict(int)
        cpu: dict[str, int] = defaultdict(int)
        memory: dict[str, int] = defaultdict(int)
        for gpus, amounts in held.values():
            for key, m in gpus.items():
                milli[key] += m
            for node, (c, mem) in amounts.items():
                cpu[node] += c
                memory[node] += mem
        over = {k: m for k, m in milli.items() if m > 1000}
        assert not over, f"t={time}: GPUs over 1000 milli: {over}"
        for node, used in cpu.items():
            assert cpu_of[node] is None or used <= cpu_of[node], f"t={time}: {node} CPU {used}"
        for node, used in memory.items():
            assert mem_of[node] is None or used <= mem_of[node], f"t={time}: {node} mem {used}"
    assert not held, f"jobs still holding resources at the end: {sorted(held)}"


def check_every_job_ends(result: Result) -> None:
    """Every job ends done (its last event a finish) or reported (unschedulable)."""
    last = result.events.drop_duplicates("job_id", keep="last").set_index("job_id")["event"]
    status = result.jobs.set_index("job_id")["status"]
    assert status.isin(["done", "unschedulable"]).all(), status.value_counts()
    for job, state in status.items():
        assert str(last.get(job)) == ("finish" if state == "done" else "unschedulable"), job


def _run(case, workload, config) -> Result:
    return simulate(workload, case.cluster, config)


@STRESS
@given(resource_cases(max_jobs=10))
def test_a_random_resource_mode_run_keeps_its_limits_at_every_event(drawn):
    case, workload, config = drawn
    try:
        result = _run(case, workload, config)
    except PolicyError as error:  # the ledger refused a decision: an engine bug, named
        raise AssertionError(f"engine bug under {config.to_dict()}: {error}") from None
    check_events(result)
    check_every_job_ends(result)
    again = _run(case, workload, config)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(result, name))


def test_the_replay_catches_a_gpu_over_1000_milli():
    """The checker would see a double-booked GPU: two 600-milli shares on one GPU."""
    from analysim import Cluster, Workload

    jobs = pd.DataFrame(
        {"job_id": ["a", "b"], "vc": ["v", "v"], "user": ["u", "u"], "submit_time": [0.0, 0.0],
         "duration": [10.0, 10.0], "num_gpus": [1, 1], "gpu_milli": [600, 400]}
    )  # fmt: skip
    cluster = Cluster.from_frame(pd.DataFrame({"node": ["n0"], "rack": ["r"], "gpus": [1]}))
    result = simulate(Workload.from_frame(jobs), cluster)
    check_events(result)  # 600 + 400 fit
    events = result.events.copy()
    milli = result.jobs.assign(gpu_milli=[600, 600])
    forged = Result(milli, events, result.timeline, result.config, result.meta)
    try:
        check_events(forged)
    except AssertionError as error:
        assert "over 1000 milli" in str(error)
    else:  # pragma: no cover - the checker is broken
        raise AssertionError("the replay did not see 1200 milli on one GPU")
    assert np.array_equal(result.jobs["gpu_milli"], [600, 400])
