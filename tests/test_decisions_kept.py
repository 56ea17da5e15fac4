"""The decision records survive ``Result.save``/``load``, and record what reclaiming and
migration tried in vain."""

from __future__ import annotations

import pandas as pd
import pytest

import analysim as asim
from analysim import Result, ResultFormatError
from analysim.results.explain import explain

COLUMNS = ["job_id", "vc", "user", "submit_time", "duration", "num_gpus"]


def _workload(rows: list[tuple]) -> asim.Workload:
    return asim.Workload.from_frame(pd.DataFrame(rows, columns=COLUMNS))


@pytest.fixture
def waited() -> Result:
    """The toy preset under FIFO: jobs wait (full, ranked behind)."""
    return asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy"))


def test_decisions_round_trip(tmp_path, waited):
    again = Result.load(waited.save(tmp_path / "run"))
    assert len(waited.decisions.tries) > 0  # not vacuous
    pd.testing.assert_frame_equal(again.decisions.rounds, waited.decisions.rounds)
    pd.testing.assert_frame_equal(again.decisions.tries, waited.decisions.tries)
    assert again.decisions.job_group.tolist() == waited.decisions.job_group.tolist()
    assert again.decisions.job_queue.tolist() == waited.decisions.job_queue.tolist()


def _longest_wait(result: Result) -> tuple[str, float]:
    """The job that waited longest, and a moment it was waiting."""
    delayed = result.jobs.sort_values("queue_delay").iloc[-1]
    return str(delayed["job_id"]), float(delayed["submit_time"]) + 1.0


def test_a_loaded_result_explains_as_the_run_did(tmp_path, waited):
    again = Result.load(waited.save(tmp_path / "run"))
    cluster = asim.presets.cluster("toy")
    job_id, time = _longest_wait(waited)
    before = explain(waited, job_id, time, cluster)
    assert before.waiting, before.text
    assert explain(again, job_id, time, cluster).text == before.text


def test_a_result_saved_without_decisions_loads_and_explain_says_so(tmp_path, waited):
    folder = waited.save(tmp_path / "run")
    # as a version that kept no decisions saved it: no decision files, no manifest
    for name in ("decision_rounds", "decision_tries", "decision_jobs", "manifest"):
        next(folder.glob(f"{name}.*")).unlink()
    again = Result.load(folder)
    assert again.decisions is None
    job_id, time = _longest_wait(waited)
    with pytest.raises(ValueError, match="no records of the engine's decisions"):
        explain(again, job_id, time, asim.presets.cluster("toy"))


def test_a_partial_set_of_decision_files_is_named(tmp_path, waited):
    folder = waited.save(tmp_path / "run")
    (folder / "decision_tries.parquet").unlink()
    with pytest.raises(ResultFormatError, match=r"decision_tries\.parquet: missing"):
        Result.load(folder)


def test_migration_tried_in_vain_is_recorded_and_explained():
    # two 4-GPU nodes; a and b take 3 GPUs each, c asks for 2: two GPUs are free, one per
    # node, and no move helps (neither 3-GPU job fits in the other node's 1 free GPU)
    cluster = asim.Cluster.uniform(1, 2, 4)
    jobs = [("a", "v", "u", 0.0, 100.0, 3), ("b", "v", "u", 0.0, 100.0, 3)]
    jobs.append(("c", "v", "u", 10.0, 50.0, 2))
    result = asim.simulate(_workload(jobs), cluster, migration=True)
    tries = result.decisions.tries
    mine = tries[tries["job_id"] == "c"]
    assert mine["reason"].tolist() == ["fragmented"]
    assert mine["migration_failed"].tolist() == [True]
    assert not tries["reclaim_failed"].any()
    assert "Migration found no moves" in explain(result, "c", 10.0, cluster).text
    # without migration nothing is tried, and nothing is said
    plain = asim.simulate(_workload(jobs), cluster)
    assert not plain.decisions.tries["migration_failed"].any()
    assert "Migration" not in explain(plain, "c", 10.0, cluster).text
    assert result.jobs.set_index("job_id").loc["c", "start_time"] == 100.0


def test_reclaim_tried_in_vain_is_recorded_and_explained():
    # VC a owns node 0 and VC b node 1 (4 GPUs each). b's job b1 takes node 1 and b2 borrows
    # one GPU of node 0; a1 holds the other 3. At 10, a2 asks for 2: reclaiming b2 frees 1.
    cluster = asim.Cluster.uniform(1, 2, 4, vc_nodes={"a": 1, "b": 1})
    jobs = [
        ("a1", "a", "u", 0.0, 100.0, 3),
        ("b1", "b", "u", 0.0, 100.0, 4),
        ("b2", "b", "u", 1.0, 100.0, 1),
        ("a2", "a", "u", 10.0, 50.0, 2),
    ]
    result = asim.simulate(_workload(jobs), cluster, borrowing=True)
    events = result.events
    borrowed = events[(events["job_id"] == "b2") & (events["event"] == "start")]
    assert borrowed["borrowed"].tolist() == [True]  # the setting is what the comment says
    tries = result.decisions.tries
    mine = tries[(tries["job_id"] == "a2")]
    assert mine["reclaim_failed"].any()
    assert not (events["event"] == "reclaim").any()
    text = explain(result, "a2", 10.0, cluster).text
    assert "Reclaiming the GPUs its VC lent to other VCs would not make room" in text
