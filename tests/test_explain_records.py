"""Property test: every explanation names what the engine really did.

Random small runs (``strategies.py``: every scheduler, placement, preemption, backfill,
migration, borrowing, on pools, VCs owning nodes and quotas) are stepped one moment at a
time; right after each moment's decisions every waiting job whose group had a round then is
explained (``analysim.results.explain``, which reads the engine's records), and each claim is
checked against the engine's own state at that moment, not against the records:

* ``full`` (quota): its VC's quota does not allow it; ``full`` (its nodes): fewer GPUs are free
  on its nodes than it asks for (none at all in its group when the round ended at once);
* ``fragmented``: enough GPUs are free on its nodes and its quota allows it, yet the placer
  finds no placement;
* ``reserved`` (EASY backfill): it fitted, and the job named, whose reservation it would have
  delayed, is another job promised a later time;
* ``ranked_behind``: the job named is waiting, in its queue, and (when nothing started or
  stopped at that moment, so that the ranking asked now is the round's) the scheduler ranks
  it ahead; the run has no backfill;
* preemption ``protected``: a running job ranked below it was still protected; ``no_room``:
  none was (only evictable ones, which did not make room) (checked when the ranking is the
  round's, as above);
* the numbers: ``full`` quotes fewer free GPUs than it needs, ``fragmented`` enough; GPUs
  free now agree unless later decisions of that moment moved GPUs;
* ``migration_failed`` only for a ``fragmented`` job with migration on; ``reclaim_failed``
  only with borrowing on and its quota allowing it;
* ``preempted_by``: the job named started at the moment of the preemption, and the event
  names it as the cause.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from strategies import cases

from analysim import Simulation
from analysim.engine.clock import EPS
from analysim.policies.scheduling import RUNNING, WAITING
from analysim.results.explain import explain

CHECKED = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_STEPS = 400  # moments stepped per run (each explained): enough to cover these small runs


def _ranking(sim: Simulation, group: int) -> list[int]:
    """The scheduler's ranking of the group's waiting and running jobs now (asked afresh,
    not read from the records)."""
    return sim.decider.ranker.rank(group, include_running=True).tolist()


def check_moment(sim: Simulation, case) -> int:
    """Explain every job waiting now whose group's last round ran now; check each claim.
    Returns how many explanations were checked."""
    now = sim.now
    result = sim.result()
    events = result.events
    partition = sim.partition
    checked = 0
    for j in np.flatnonzero(sim.status == WAITING).tolist():
        job_id = str(sim.job_ids[j])
        reason = explain(result, job_id, now, case.cluster)
        assert reason.waiting, reason
        if abs(reason.detail["round"] - now) > EPS:
            continue  # its group's last decision was earlier: the ranking may have moved
        checked += 1
        need = int(sim.gpus[j])
        domain = partition.domains[partition.job_domain[j]]
        vc = int(partition.job_vc[j])
        free = int(sim.free[domain.nodes].sum())
        quota_ok = domain.quota is None or sim.vc_used[vc] + need <= domain.quota
        group = int(sim.job_group[j])
        assert reason.kind in ("full", "fragmented", "ranked_behind", "reserved"), reason.text
        # what changed in the group at this moment after the round tried the job: GPUs taken
        # (later starts) or given back (evictions for a job ranked below it)
        now_events = events[events["time"] == now]
        moved = now_events[now_events["event"].isin(["start", "resume", "migrate"])]
        evicted = now_events[now_events["event"].isin(["preempt", "reclaim"])]
        # the ranking asked now is the round's if nothing started or stopped in the round
        # (some schedulers rank by the GPUs each VC holds)
        still = moved.empty and evicted.empty
        if reason.kind == "full" and reason.detail.get("nothing_free"):
            assert sim.ledger.group_free[group] == 0, reason.text
        elif reason.kind == "full" and reason.scope.startswith("quota"):
            assert reason.free < need, reason.text
            assert not quota_ok or len(evicted), reason.text
        elif reason.kind == "full":
            assert reason.free < need, reason.text
            # with backfill, jobs of its VC that started after its try may have used quota
            assert (free <= reason.free and (quota_ok or len(moved))) or len(evicted), reason.text
        elif reason.kind == "fragmented":
            assert reason.free >= need, reason.text
            if free >= need and not len(evicted):
                # the GPUs free now are a subset of those it was tried on: still no place
                assert not sim.placer_fits(need, sim.free[domain.nodes], domain), reason.text
            else:
                assert len(moved) or len(evicted), reason.text
        elif reason.kind == "reserved":
            # it fitted (on its nodes, in its quota) but would have delayed the reservation
            # of a waiting job ranked above it, promised for later
            assert sim.config.backfill == "easy", reason.text
            assert reason.free >= need and reason.detail["reserved_at"] > now, reason.text
            blocker = int(np.flatnonzero(sim.job_ids == reason.blocker)[0])
            assert blocker != j and sim.status[blocker] in (WAITING, RUNNING), reason.text
        else:
            assert not sim.config.backfill, reason.text
            blocker = int(np.flatnonzero(sim.job_ids == reason.blocker)[0])
            assert sim.status[blocker] == WAITING, reason.text
            assert sim.facts.queue[blocker] == sim.facts.queue[j], reason.text
            if still:
                order = _ranking(sim, group)
                assert order.index(blocker) < order.index(j), reason.text
        if reason.detail.get("migration_failed"):  # only tried when fragmentation blocks
            # (or it was, when tried: later starts of the moment may have taken GPUs since)
            assert sim.config.migration, reason.text
            assert reason.kind == "fragmented" or len(moved), reason.text
        if reason.detail.get("reclaim_failed"):  # only tried when its quota allows it
            assert sim.config.borrowing, reason.text
            assert not reason.scope.startswith("quota") or len(moved), reason.text
        outlook = reason.detail.get("outlook")
        if outlook in ("protected", "no_room") and still:
            order = _ranking(sim, group)
            below = order[order.index(j) + 1 :]
            started_now = set(moved["job_id"])  # after its try (backfill): not seen by it
            protected = [
                r
                for r in below
                if sim.status[r] == RUNNING
                and sim.evictable_from[r] > now + EPS
                and sim.job_ids[r] not in started_now
            ]
            assert bool(protected) == (outlook == "protected"), reason.text
        if reason.preempted_by:
            at = reason.preempted_at
            stop = events[(events["job_id"] == job_id) & (events["time"] == at)]
            assert set(stop["cause"].dropna()) == set(reason.preempted_by), reason.text
            for by in reason.preempted_by:
                ran = events[
                    (events["job_id"] == by)
                    & (events["time"] == at)
                    & events["event"].isin(["start", "resume"])
                ]
                assert len(ran) == 1, reason.text
    return checked


@CHECKED
@given(cases(max_jobs=12, max_duration=600))
def test_every_explanation_names_what_the_engine_did(drawn):
    case, workload, config = drawn
    sim = Simulation(workload, case.cluster, config)
    for _ in range(MAX_STEPS):
        if sim.done:
            break
        sim.step()
        check_moment(sim, case)


def test_the_property_sees_every_kind_of_reason():
    """The checks above are not vacuous: on hand-made runs each kind comes up."""
    import pandas as pd

    import analysim as asim

    columns = ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"]
    cluster = asim.presets.cluster("toy")
    spread = [(f"s{i}", "a", "u", 0.0, 1000.0, 2) for i in range(1, 5)]
    runs = [
        (asim.presets.workload("toy"), {}),  # full, ranked_behind
        (
            asim.Workload.from_frame(
                pd.DataFrame([*spread, ("big", "a", "u", 10.0, 100.0, 4)], columns=columns)
            ),
            {"placement": "spread"},
        ),  # fragmented
        (
            asim.Workload.from_frame(
                pd.DataFrame(
                    [("long", "a", "u", 0.0, 1000.0, 16), ("short", "a", "u", 10.0, 100.0, 4)],
                    columns=columns,
                )
            ),
            {"scheduler": "sjf", "preemption": True, "quantum": 60},
        ),  # preempted_by, no_room
        (
            asim.Workload.from_frame(
                pd.DataFrame(
                    [
                        ("long", "a", "u", 0.0, 1000.0, 16),
                        ("short", "a", "u", 10.0, 100.0, 4),
                        ("short2", "a", "u", 170.0, 100.0, 4),
                    ],
                    columns=columns,
                )
            ),
            {"scheduler": "sjf", "preemption": True, "checkpoint_cost": 30},
        ),  # protected: long resumed at 160, protected until 250 (quantum 60 + restore 30)
    ]
    seen: set[str] = set()
    for workload, config in runs:
        sim = Simulation(workload, cluster, asim.SimConfig(**config))
        case = type("Case", (), {"cluster": cluster})()
        while not sim.done:
            sim.step()
            check_moment(sim, case)
            result = sim.result()
            for j in np.flatnonzero(sim.status == WAITING).tolist():
                reason = explain(result, str(sim.job_ids[j]), sim.now, cluster)
                seen.add(reason.kind)
                seen.add(str(reason.detail.get("outlook")))
                if reason.preempted_by:
                    seen.add("preempted_by")
    kinds = {"full", "fragmented", "ranked_behind", "preempted_by", "no_room", "protected"}
    assert kinds <= seen, seen
