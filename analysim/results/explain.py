"""Why is a job waiting? Answers in words, from a run's own records.

:func:`why_waiting` reads what the engine recorded when it decided (``Result.decisions``:
per scheduling round, the waiting jobs it tried and could not start, and why) and decides
nothing again: it takes the last round of the job's group at or before ``time`` and says
what that round found. The numbers it quotes (GPUs free, in use) come from the state after
the decisions at ``time``, rebuilt from the events (``snapshot(time)``), or, where later
decisions of the same round (backfill, evictions) moved GPUs so that they no longer show
what the try found, from the records (the GPUs free to the job when it was tried). The answers:

* the job is not waiting at that time (not yet submitted, running, done, unschedulable);
* the round tried it and its VC's quota, or its nodes (its VC's, the shared pool, the
  cluster), had fewer free GPUs than it asks for (``full``), or enough but no placement fit
  (``fragmented``); with preemption, what eviction found (no lower-ranked evictable jobs
  that make room, or lower-ranked jobs still protected), and from the later records when the
  next full round came and whom the job evicted then; with borrowing or migration, whether
  reclaiming lent GPUs or moving running jobs was tried in vain;
* the round did not try it: the first job of its queue that did not fit blocks the queue
  (head-of-line blocking, without backfill);
* with EASY backfill (``backfill="easy"``), the round tried it and it fits, but starting it
  would delay the reservation of a job ranked above it (``reserved``; ``blocker`` names that
  job, ``detail["reserved_at"]`` the time it was promised); the answer for the job holding a
  reservation says from when.

If the job was last preempted, the answer says by whom (the ``cause`` recorded with the
event; for events without one, the jobs that started on its nodes at that moment).

The reasons are worked out by :mod:`analysim.results.wait_reason` (the state at the moment,
rebuilt from the records, and the job's group's last round);
:mod:`analysim.results.spells` replays the events into per-GPU intervals (for Gantt charts)
and one row per GPU at a time, like ``Result.snapshot``; the sentences are written by
:mod:`analysim.results.wait_words`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.results.readable import moment
from analysim.results.spells import RUN_EVENTS, cluster_of, status_at
from analysim.results.wait_reason import RunAtMoment
from analysim.results.wait_reason import WaitReason as WaitReason
from analysim.results.wait_words import gpus_text

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result


def why_waiting(result: Result, job_id: str, time: float, cluster: Cluster | None = None) -> str:
    """Why job ``job_id`` is waiting at ``time`` (after that moment's decisions), in words.

    ``cluster`` is the run's cluster; it may be left out when the result knows its own
    topology (``Result.snapshot``). See :func:`explain` for the structured answer.
    """
    return explain(result, job_id, time, cluster).text


def explain(
    result: Result,
    job_id: str,
    time: float,
    cluster: Cluster | None = None,
    spells: pd.DataFrame | None = None,
) -> WaitReason:
    """The structured form of :func:`why_waiting` (``spells``:
    :func:`~analysim.results.spells.allocations` of the result, if already computed)."""
    moment = _checked_time(time, "explain: time")
    return RunAtMoment(result, moment, cluster_of(result, cluster), spells).reason(job_id)


def waiting_jobs(result: Result, time: float) -> pd.DataFrame:
    """The jobs waiting at ``time`` (after that moment's decisions), in submit order."""
    status = status_at(result, _checked_time(time, "waiting_jobs: time"))
    jobs = result.jobs
    return jobs.loc[status == "waiting", ["job_id", "vc", "num_gpus", "submit_time"]].reset_index(
        drop=True
    )


def _checked_time(time: Any, name: str) -> float:
    """``time`` as seconds: a finite number >= 0 (NaN is no moment: every comparison with
    it is false, so every job would look not yet submitted)."""
    from analysim.inputs.validation import seconds

    return seconds(time, name, positive=False)


# -- a job's story -------------------------------------------------------------------------------
WAIT_STARTS = ("submit", "preempt", "reclaim")
MAX_EVENT_LINES = 20


def job_story(
    result: Result, job_id: str, cluster: Cluster | None = None, *, waits: int = 3
) -> str:
    """What happened to job ``job_id``, in words: one line of facts (VC, GPUs, submit, JCT,
    queueing), its events with readable times, and, for its first ``waits`` spells of
    waiting (after its submission, after each preemption), :func:`why_waiting` at the
    moment the spell began. ``analysim explain RESULT_DIR JOB`` prints it."""
    jobs = result.jobs
    rows = jobs.index[jobs["job_id"].astype(str) == str(job_id)]
    if not len(rows):
        known = ", ".join(map(repr, jobs["job_id"].astype(str).head(5)))
        raise ValueError(
            f"explain: no job {job_id!r} in this result ({len(jobs):,} jobs, e.g. {known})"
        )
    job = jobs.loc[rows[0]]
    events = result.events[result.events["job_id"].astype(str) == str(job_id)]
    lines = [_headline(job), ""]
    shown = events.head(MAX_EVENT_LINES)
    for time, event, nodes, cause in zip(
        shown["time"], shown["event"], shown["nodes"], shown["cause"], strict=True
    ):
        where = f" on {nodes}" if isinstance(nodes, str) and nodes else ""
        why = f" (by {cause})" if isinstance(cause, str) and cause else ""
        lines.append(f"  {moment(time):<18} {event}{where}{why}")
    if len(events) > len(shown):
        lines.append(f"  ... and {len(events) - len(shown):,} more events")
    starts = _wait_starts(events)
    if starts and waits <= 0:
        lines += ["", f"It began to wait {len(starts)} time(s); --waits N (waits=N) explains them."]
    elif starts:
        lines += ["", "Why it waited:"]
        for time in starts[:waits]:
            lines.append("  " + why_waiting(result, str(job_id), time, cluster))
        if len(starts) > waits:
            lines.append(f"  ... and {len(starts) - waits} more waits")
    lines += ["", "For any other moment: analysim explain RESULT_DIR JOB --at TIME"]
    return "\n".join(lines)


def _headline(job: pd.Series) -> str:
    """The job's facts in one line: VC, GPUs, submitted, status, JCT and queueing."""
    from analysim.results.readable import readable

    head = (
        f"{job['job_id']} (VC {job['vc']}, {_asks(job)}): submitted at {moment(job['submit_time'])}"
    )
    status = str(job["status"])
    if status == "done":
        return head + (
            f", finished at {moment(job['end_time'])}; JCT {readable('avg_jct', job['jct'])}, "
            f"queueing {readable('avg_queue_delay', job['queue_delay'])}, "
            f"{int(job['preemptions'])} preemption(s)."
        )
    if status == "unschedulable":
        return head + "; it never runs."
    return head + f"; {status} when the run stopped."


def _asks(job: pd.Series) -> str:
    """What a job asks for: its GPUs, or (resource mode) its GPU share, CPU and memory."""
    gpus = int(job["num_gpus"])
    milli = int(job["gpu_milli"]) if "gpu_milli" in job.index else 0
    asked = [f"{milli} milli of a GPU" if 0 < milli < 1000 and gpus <= 1 else gpus_text(gpus)]
    for column, unit in (("cpu_milli", "CPU milli"), ("memory_mib", "MiB")):
        if column in job.index and int(job[column]) > 0:
            asked.append(f"{int(job[column]):,} {unit}")
    return ", ".join(asked)


def _wait_starts(events: pd.DataFrame) -> list[float]:
    """The times the job began to wait: its submission or a preemption not followed at
    once by a start (a job that starts on arrival never waits)."""
    times, kinds = events["time"].tolist(), events["event"].astype(str).tolist()
    starts = []
    for i, (time, kind) in enumerate(zip(times, kinds, strict=True)):
        if kind not in WAIT_STARTS:
            continue
        later = [k for t, k in zip(times[i + 1 :], kinds[i + 1 :], strict=True) if t == time]
        if not any(k in RUN_EVENTS for k in later) and "unschedulable" not in later:
            starts.append(float(time))
    return starts
