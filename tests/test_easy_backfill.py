"""EASY backfill (``SimConfig(backfill="easy")``): hand-worked runs with exact times.

The toy cluster has nodes n0, n1 (rack r0) and n2, n3 (rack r1) of 4 GPUs each, one VC
``a``. The rule (``docs/semantics.md``): the first job of a queue that cannot start is
promised the earliest step at which it fits once running jobs end (its reservation); a job
behind it starts only if it ends by then or takes only GPUs the reservation does not need.
"""

from __future__ import annotations

import copy
from bisect import insort

import pandas as pd
import pytest
from jobs_table import make_jobs

import analysim as asim
from analysim.engine import Simulation
from analysim.results.explain import explain

# j1 takes rack r0 (n0, n1) until 100, j2 node n2 until 50. j3 wants all 16 GPUs: it fits
# only when j1 ends, so it is promised t=100 on every node. j4 (ends at 30) and j6 (ends at
# 100) end by then and pass it; j5 (200 s from t=60) would hold GPUs past 100.
STARVING = [
    ("j1", "a", 0, 100, 8),
    ("j2", "a", 0, 50, 4),
    ("j3", "a", 10, 30, 16),
    ("j4", "a", 20, 10, 2),
    ("j5", "a", 60, 200, 4),
    ("j6", "a", 60, 40, 4),
]

# j1 (2 GPUs) and j1b (2 GPUs, until 40) share n0, j2 holds n1 and j1's n0 until 100, j7 n2
# until 50, j9 n3 until 300. j3 (8 GPUs) fits at t=100 (n0, n1, n2 free: 12 GPUs), and the
# placer puts it on rack r0 (n0, n1): those GPUs are reserved, n2's are spare.
SPARE = [
    ("j1", "a", 0, 100, 2),
    ("j1b", "a", 0, 40, 2),
    ("j2", "a", 0, 100, 4),
    ("j7", "a", 0, 50, 4),
    ("j9", "a", 0, 300, 4),
    ("j3", "a", 10, 30, 8),
    ("j5", "a", 60, 200, 2),
]


def run(rows: list[tuple], **config) -> asim.Result:
    return asim.simulate(make_jobs(rows), asim.presets.cluster("toy"), scheduler="fifo", **config)


def times(result: asim.Result) -> dict[str, tuple[float, float, str]]:
    jobs = result.jobs.set_index("job_id")
    return {j: (row.start_time, row.end_time, row.nodes) for j, row in jobs.iterrows()}


def test_plain_backfill_starves_the_head_of_the_queue():
    # t=60: j5 starts on n2 (j2 ended at 50), j6 on n3; at t=100 j5 still holds 4 GPUs, so
    # j3 (16 GPUs) waits until j5 ends at 260
    got = times(run(STARVING, backfill=True))
    assert got["j3"][:2] == (260, 290)
    assert got["j5"][:2] == (60, 260)


def test_easy_backfill_keeps_the_heads_reservation():
    # j3 is promised t=100. j4 ends at 30 <= 100: it passes (n3). At t=60 j5 would run to
    # 260 on GPUs j3 needs at 100 (there are no spare ones): it waits; j6 ends at 100: it
    # passes (n2, the best fit). t=100: j1 and j6 end, j3 starts on all 16 GPUs as promised;
    # j5 starts when j3 ends (130)
    result = run(STARVING, backfill="easy")
    assert times(result) == {
        "j1": (0, 100, "n0,n1"),
        "j2": (0, 50, "n2"),
        "j3": (100, 130, "n0,n1,n2,n3"),
        "j4": (20, 30, "n3"),
        "j5": (130, 330, "n0"),
        "j6": (60, 100, "n2"),
    }
    jct = result.jobs.set_index("job_id")["jct"].to_dict()
    assert jct == {"j1": 100, "j2": 50, "j3": 120, "j4": 10, "j5": 270, "j6": 40}


def test_without_backfill_every_job_waits_behind_the_head():
    got = times(run(STARVING, backfill=False))
    assert {j: got[j][:2] for j in ("j3", "j4", "j5", "j6")} == {
        "j3": (100, 130),
        "j4": (130, 140),
        "j5": (130, 330),
        "j6": (130, 170),
    }


def test_a_long_job_backfills_onto_gpus_the_reservation_does_not_need():
    # t=60: 2 GPUs free on n0 (j1b ended), 4 on n2 (j7 ended). j5 (2 GPUs, to 260) runs past
    # j3's t=100. Plain backfill puts it on n0 (the best fit), a node j3 is promised; EASY
    # asks the placer on the spare GPUs only: n2. j3 starts at 100 either way
    assert times(run(SPARE, backfill=True))["j5"] == (60, 260, "n0")
    easy = times(run(SPARE, backfill="easy"))
    assert easy["j5"] == (60, 260, "n2")
    assert easy["j3"] == (100, 130, "n0,n1")


def test_the_decisions_name_the_reservation_that_stops_a_job():
    tries = run(STARVING, backfill="easy").decisions.tries
    j5 = tries[tries["job_id"] == "j5"]
    # t=60: it fits but would delay j3; t=100: j3 took every GPU, and j5, now first in the
    # queue, is promised t=130 (when j3 ends)
    assert j5["reason"].tolist() == ["reserved", "full"]
    assert j5["reserved_for"].tolist() == ["j3", "j5"]
    assert j5["reserved_at"].tolist() == [100.0, 130.0]
    j4 = tries[tries["job_id"] == "j4"]
    assert j4.empty  # it ended by t=100: never stopped
    head = tries[tries["job_id"] == "j3"]
    assert set(head["reason"]) == {"full"}
    assert set(head["reserved_for"]) == {"j3"} and set(head["reserved_at"]) == {100.0}


def test_explain_says_which_reservation_a_job_waits_for():
    result = run(STARVING, backfill="easy")
    reason = explain(result, "j5", 70)
    assert reason.kind == "reserved"
    assert reason.blocker == "j3"
    assert reason.text == (
        "j5 at t=70 s: it waits because it would delay j3: EASY backfill has promised j3, "
        "ranked above it, the GPUs it needs from t=100 s, and j5 would still be running then "
        "on some of them."
    )
    head = explain(result, "j3", 70)
    assert head.kind == "full"
    assert head.text.endswith(
        "EASY backfill has GPUs reserved for it from t=100 s: no job ranked below it may start "
        "if that would delay it."
    )


def test_reservations_change_nothing_when_no_job_waits_behind_a_head():
    # every job fits when it arrives: the three modes run alike
    rows = [("j1", "a", 0, 100, 8), ("j2", "a", 5, 50, 4), ("j3", "a", 7, 30, 4)]
    frames = [run(rows, backfill=b).jobs for b in (False, True, "easy")]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    pd.testing.assert_frame_equal(frames[0], frames[2])


def test_easy_runs_are_those_of_the_reference_mode():
    for rows in (STARVING, SPARE):
        config = asim.SimConfig(scheduler="fifo", backfill="easy")
        fast = Simulation(make_jobs(rows), asim.presets.cluster("toy"), config).run()
        plain = Simulation(
            make_jobs(rows), asim.presets.cluster("toy"), config, reference=True
        ).run()
        pd.testing.assert_frame_equal(fast.result().jobs, plain.result().jobs)


@pytest.mark.parametrize("value", ["EASY", "yes", 1, None, "conservative"])
def test_a_bad_backfill_value_lists_the_valid_ones(value):
    with pytest.raises(ValueError) as error:
        asim.SimConfig(backfill=value)
    message = str(error.value)
    assert message == f"SimConfig: backfill must be one of [False, True, 'easy'], got {value!r}"
    assert "\n" not in message


def test_easy_survives_the_plain_config_round_trip():
    config = asim.SimConfig(backfill="easy")
    assert asim.SimConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["backfill"] == "easy"


def test_notebook_parameters_accept_easy_backfill():
    from analysim.faces.notebook_params import RULES

    rule = RULES["backfill"]
    assert [rule(v) for v in (False, True, "easy")] == [None, None, None]
    assert rule("EASY") == rule(1) == 'must be False, True or "easy"'


# One node of 8 GPUs. j1 holds 4 until 100; j2 (6 GPUs) is promised t=100 (8 free then: 6
# reserved, 2 spare). j5 ends at 50, by 100: it starts on free GPUs and is counted among the
# reservation's ends, so its release at 50, foreseen, keeps the reservation
# (``Shortcuts.kept_reservations``, widened to starts that end by its time). j3 ends at 105,
# past 100: it takes the 2 spare GPUs (claimed: none left spare); j4 (until 160) waits
# (`reserved`). At 100 j1 ends and j2 starts as promised; j4 starts when j3 ends.
KEPT_PAST_A_START = [
    ("j1", "a", 0, 100, 4),
    ("j2", "a", 10, 50, 6),
    ("j5", "a", 20, 30, 2),
    ("j3", "a", 60, 45, 2),
    ("j4", "a", 70, 90, 2),
]


def _times_on_one_node(rows: list[tuple], reference: bool) -> dict[str, tuple]:
    cluster = asim.Cluster.uniform(1, 1, 8)
    config = asim.SimConfig(scheduler="fifo", backfill="easy", quantum=60)
    sim = Simulation(make_jobs(rows), cluster, config, reference=reference)
    return {j: t[:2] for j, t in times(sim.run().result()).items()}


def test_a_reservation_kept_past_a_start_that_ends_by_its_time(monkeypatch):
    from analysim.engine.easy import EasyBackfill
    from analysim.engine.reservations import Reservation

    expected = {
        "j1": (0, 100),
        "j2": (100, 150),
        "j5": (20, 50),
        "j3": (60, 105),
        "j4": (105, 195),
    }
    kept: list[tuple[int, float]] = []
    foresaw = EasyBackfill._foresaw_releases

    def noted(self, reservation, group):
        answer = foresaw(self, reservation, group)
        if answer and reservation.takes:  # kept past the release of a start it counted
            kept.append((reservation.head, self.clock.now))
        return answer

    monkeypatch.setattr(EasyBackfill, "_foresaw_releases", noted)
    assert _times_on_one_node(KEPT_PAST_A_START, reference=False) == expected
    assert kept == [(1, 50.0)]  # j2's reservation, past j5's end
    assert _times_on_one_node(KEPT_PAST_A_START, reference=True) == expected
    # a wrong rule: counting a start among the ends when it ends up to a quantum past the
    # reservation's time (j3), instead of claiming the spare GPUs it takes, lets j4 take
    # them too, and j2 misses its promise
    monkeypatch.setattr(Reservation, "runs_past", lambda self, due: due > self.at + 60)
    wrong = _times_on_one_node(KEPT_PAST_A_START, reference=False)
    assert wrong["j2"] == (105, 155) and wrong["j4"] == (70, 160)


# One node of 8 GPUs. j1 holds 2 until 100 and j6 2 until 300; j2 (6 GPUs) is promised
# t=100, when j1 ends. The reservation keeps the ends it counted up to its time (j1's) and
# counts j6's, after it, without keeping it. j5 (2 GPUs, 20 to 50) ends by 100: counted
# among the ends as it starts, so its release at 50 is foreseen (j1 and j6 still run: the
# two counted to end after 50) and the reservation is kept.
ENDS_AFTER_ITS_TIME = [
    ("j1", "a", 0, 100, 2),
    ("j6", "a", 0, 300, 2),
    ("j2", "a", 10, 50, 6),
    ("j5", "a", 20, 30, 2),
]


def test_a_reservation_counts_the_ends_after_its_time_without_keeping_them(monkeypatch):
    from analysim.engine.easy import EasyBackfill

    cluster = asim.Cluster.uniform(1, 1, 8)
    config = asim.SimConfig(scheduler="fifo", backfill="easy", quantum=60)
    sim = Simulation(make_jobs(ENDS_AFTER_ITS_TIME), cluster, config)
    sim.run(until=10)
    (made,) = sim.decider.easy.reservations[0].values()
    assert (made.head, made.at, made.ends, made.ends_after) == (2, 100.0, [100.0], 1)
    kept: list[tuple[int, float]] = []
    foresaw = EasyBackfill._foresaw_releases

    def noted(self, reservation, group):
        answer = foresaw(self, reservation, group)
        kept.append((reservation.head, self.clock.now, answer))
        return answer

    monkeypatch.setattr(EasyBackfill, "_foresaw_releases", noted)
    sim.run(until=60)
    assert made.ends == [50.0, 100.0] and made.ends_after == 1  # j5's end, counted at 20
    assert kept == [(2, 50.0, True)]
    assert sim.decider.easy.reservations[0][0] is made
    expected = {"j1": (0, 100), "j6": (0, 300), "j2": (100, 150), "j5": (20, 50)}
    assert {j: t[:2] for j, t in times(sim.run().result()).items()} == expected
    assert _times_on_one_node(ENDS_AFTER_ITS_TIME, reference=True) == expected


# nodes of 4 GPUs: claims that break a reservation unplaced; of 8: a job may take all a node
# has free at a reservation's time where its head goes elsewhere, which does not break it
CLAIMED_CLUSTERS = [(4, 4), (2, 8)]


@pytest.mark.parametrize("scheduler", ["las", "fifo"])
def test_a_claim_breaks_an_unplaced_reservation_as_placing_it_would(scheduler, monkeypatch):
    """A job running past a reservation's time that takes more GPUs on a node than are free
    there then breaks the reservation without its spare GPUs being placed (fewer still are
    spare), and a claim on a broken reservation changes nothing: each claim breaks a
    reservation as placing its spare and claiming from it does, and the runs and their
    decision records are those of placing every claimed reservation's spare."""
    from test_fast_paths import _busy_jobs, _run, _same_runs, same_decisions

    from analysim.engine.easy import EasyBackfill

    workload = _busy_jobs(160, seed=5)
    config = asim.SimConfig(scheduler=scheduler, preemption=True, backfill="easy", quantum=60)
    clusters = [
        asim.Cluster.uniform(nodes, 2, gpus, vc_nodes={"a": nodes, "b": nodes})
        for nodes, gpus in CLAIMED_CLUSTERS
    ]
    broke_unplaced: list[int] = []
    claim = EasyBackfill._claim

    def noted(self, r, j):
        # the plain rule on a copy: place the spare GPUs, then claim from them
        twin = copy.copy(r)
        twin.spare = None if r.spare is None else r.spare.copy()
        self.spare_of(twin)
        twin.claim(self._alloc_pairs[j], self._gpus[j], self._vc[j], not self.borrowed[j])
        claim(self, r, j)
        assert r.broken == twin.broken
        if r.spare is None:  # broken without placing
            broke_unplaced.append(r.head)
        else:
            assert r.spare.tolist() == twin.spare.tolist()

    monkeypatch.setattr(EasyBackfill, "_claim", noted)
    fast = [_run(workload, cluster, config, reference=False)[1] for cluster in clusters]
    assert broke_unplaced

    def placed_first(self, j, group, reservations, due):  # the rule as it was: every claim
        due = self._end_due(j) if due is None else due
        for queue, r in list(reservations.items()):
            if r.head == j:
                del reservations[queue]
            elif not r.runs_past(due):
                if r.ends is not None and r.takes + 1 == self._takes[group]:
                    insort(r.ends, due)
                    r.takes += 1
            else:
                self.spare_of(r)
                r.claim(self._alloc_pairs[j], self._gpus[j], self._vc[j], not self.borrowed[j])

    monkeypatch.setattr(EasyBackfill, "_claim_reservations", placed_first)
    for cluster, result in zip(clusters, fast, strict=True):
        _, plain = _run(workload, cluster, config, reference=False)
        _same_runs(result, plain)
        same_decisions(result, plain)
