"""The engine's decisions as a run recorded them: what each scheduling round tried in vain.

:func:`build_decisions` turns a simulation's records (``analysim.engine.records``) into
:class:`Decisions`, which ``Result.decisions`` gives and :mod:`analysim.results.explain` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from analysim.engine.snapshot import RunRecord


@dataclass(frozen=True)
class Decisions:
    """The scheduling rounds of a run and the waiting jobs each tried and could not start.

    ``rounds``: one row per round in the order they ran: ``time``, ``group`` (jobs of one
    group compete for the same GPUs), ``full`` (a full round: preemption may be tried),
    ``nothing_free`` (it ended at once: no GPU free to its group, none to reclaim),
    ``protected_until`` (with preemption: when the group's next lower-ranked running job
    stops being protected, as the round left it), ``first``/``stop`` (its rows of ``tries``).

    ``tries``: one row per job a round tried and could not start, in the order tried:
    ``round``, ``job`` (index into ``Result.jobs``), ``job_id``, ``reason`` (``full``: fewer
    GPUs free on its nodes than it needs; ``quota``: its VC's quota does not allow it;
    ``fragmented``: enough free, no placement fits), ``preemption`` (in a full round with
    preemption: ``no_room``, or ``protected`` when lower-ranked running jobs were still
    protected; empty when not tried), ``borrow_failed`` (it tried idle GPUs of other VCs),
    ``reclaim_failed`` (with borrowing: GPUs of its VC were lent to other VCs, and reclaiming
    them could not make room for it), ``migration_failed`` (with migration: enough GPUs were
    free to it but fragmented, and no plan of moves made it fit),
    ``free`` (the GPUs free to it when tried: in its VC's quota for ``quota``, else on its
    nodes; later starts in the same round, with backfill, may have taken some since).
    With EASY backfill (``backfill="easy"``) ``reason`` may also be ``reserved``: it fits
    on the free GPUs, but would delay the reservation of a job ranked above it;
    ``reserved_for`` names that job and ``reserved_at`` the time it was promised (on the
    try of the first job of a queue that could not start, its own reservation); empty and
    NaN otherwise.

    ``job_group`` and ``job_queue``: per job, its group and its queue (its VC, or 0 on an
    unpartitioned cluster): a waiting job a round did not try was behind the first job of
    its queue that round tried in vain (without backfill, head-of-line blocking).
    """

    rounds: pd.DataFrame
    tries: pd.DataFrame
    job_group: np.ndarray
    job_queue: np.ndarray


def build_decisions(run: RunRecord, count: int, tries: int) -> Decisions:
    """The first ``count`` rounds of ``sim``'s records and their ``tries`` tries."""
    records = run.records
    table = records.rounds[:count]
    columns = list(zip(*table, strict=True)) if table else [[]] * 5
    flags = np.array(columns[2], dtype=np.int64)
    full_flag, nothing_free_flag = records.ROUND_FULL, records.ROUND_NOTHING_FREE
    first = np.array(columns[3], dtype=np.int64)
    rounds = pd.DataFrame(
        {
            "time": np.array(columns[0], dtype=float),
            "group": np.array(columns[1], dtype=np.int64),
            "full": (flags & full_flag) > 0,
            "nothing_free": (flags & nothing_free_flag) > 0,
            "protected_until": np.array(columns[4], dtype=float),
            "first": first,
            "stop": np.r_[first[1:], tries][:count].astype(np.int64),
        }
    )
    job = np.array(records.try_job[:tries], dtype=np.int64)
    code = np.array(records.try_code[:tries], dtype=np.int64)
    reasons = np.array([records.REASON_NAMES[k] for k in range(4)], dtype=object)
    preemption = np.array([records.PREEMPTION_NAMES[k] for k in (0, 4, 8)], dtype=object)
    frame = pd.DataFrame(
        {
            "round": np.repeat(np.arange(count), rounds["stop"] - rounds["first"]),
            "job": job,
            "job_id": run.job_ids[job] if len(job) else np.array([], dtype=object),
            "reason": reasons[code & 3],
            "preemption": preemption[(code >> 2) & 3],
            "borrow_failed": (code & records.BORROW_FAILED) > 0,
            "reclaim_failed": (code & records.RECLAIM_FAILED) > 0,
            "migration_failed": (code & records.MIGRATION_FAILED) > 0,
            "free": np.array(records.try_free[:tries], dtype=np.int64),
        }
    )
    reserved = np.where((code & records.RESERVED) > 0)[0]
    if len(reserved):
        frame.loc[reserved, "reason"] = "reserved"
    # EASY backfill: the reservation that stopped a try (or that its try made)
    heads = np.full(tries, -1, dtype=np.int64)
    at = np.full(tries, np.nan)
    for index, (head, when) in records.try_reserved.items():
        if index < tries:
            heads[index], at[index] = head, when
    frame["reserved_for"] = np.where(heads >= 0, run.job_ids[np.maximum(heads, 0)], "")
    frame["reserved_at"] = at
    if not len(job):
        frame["reserved_for"] = frame["reserved_for"].astype(object)
    queue = np.asarray(run.job_vc if run.cluster.partitioned else np.zeros(run.n_jobs, int))
    return Decisions(rounds, frame, np.asarray(run.job_group).copy(), queue.astype(np.int64))


#: the decision files of a saved result's folder (:func:`decision_frames`)
DECISION_FILES = {
    "rounds": "decision_rounds.parquet",
    "tries": "decision_tries.parquet",
    "jobs": "decision_jobs.parquet",
}


def decision_frames(decisions: Decisions) -> dict[str, pd.DataFrame]:
    """``decisions`` as the three frames a saved result holds (file name -> frame)."""
    per_job = pd.DataFrame({"group": decisions.job_group, "queue": decisions.job_queue})
    return {
        DECISION_FILES["rounds"]: decisions.rounds,
        DECISION_FILES["tries"]: decisions.tries,
        DECISION_FILES["jobs"]: per_job,
    }


def decisions_from_frames(frames: dict[str, pd.DataFrame], jobs: int, folder: Path) -> Decisions:
    """The :class:`Decisions` of a loaded result's three frames (checked by
    :mod:`analysim.results.format`); ``jobs``: the result's job count, which the per-job file
    must match."""
    from analysim.errors import ResultFormatError

    per_job = frames[DECISION_FILES["jobs"]]
    if len(per_job) != jobs:
        raise ResultFormatError(
            f"Result.load: {folder / DECISION_FILES['jobs']}: {len(per_job)} rows for "
            f"{jobs} jobs in jobs.parquet"
        )
    try:
        group = per_job["group"].to_numpy(dtype=np.int64)
        queue = per_job["queue"].to_numpy(dtype=np.int64)
    except (TypeError, ValueError) as error:
        raise ResultFormatError(
            f"Result.load: {folder / DECISION_FILES['jobs']}: 'group' and 'queue' must be "
            f"whole numbers ({error})"
        ) from None
    return Decisions(
        frames[DECISION_FILES["rounds"]], frames[DECISION_FILES["tries"]], group, queue
    )
