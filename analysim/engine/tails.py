"""Backfill rounds that repeat the tail of the round before (a shortcut of the rounds).

With backfill and a static ranking, a round without preemption tries every waiting job in
rank order. The jobs the previous round tried after its last start all failed, each in the
group's state as it was at the end of that round. When nothing of the group has started or
stopped since (its epoch is the same), the same jobs come up again in the same order with
the same reservations to keep, and each fails again for the same reason with the same GPUs
free: a job that did not fit, or did not fit within its quota, is as it was (the memo of
``StartTries.try_start`` says so too); a job that only reservations stopped runs past at least
the same ones later on (its end moves later with the clock), and fits on the GPUs they leave
no better. Only the reservation named in its record may differ (the first of those it runs
past now), so it is found again. The round then copies those records at once and goes on
with the jobs that arrived since (they rank after them).

``docs/semantics.md`` ("Shortcuts") lists it; ``Simulation(..., reference=True)`` turns it
off, and ``benchmarks/same_results.py --reference`` compares whole runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from analysim.engine.records import Records
    from analysim.engine.reservations import Reservation


@dataclass
class Tail:
    """What a round tried after its last start: the jobs' ranks, its tries in the records,
    and the reservations to keep before and after them."""

    epoch: int  # the group's epoch at the end of the round
    ranks: list[int]  # the jobs tried, by rank, in order
    first_try: int  # the records' index of the first of their tries
    active_before: list[Reservation]
    queues_before: set[int]
    active_after: list[Reservation]
    queues_after: set[int]
    #: per try with a reservation in the records, its offset in the tail and either the
    #: reservation's (head, time) (the try that made it) or, for a job only reservations
    #: stopped, (the job, how many reservations were active then)
    reserved: list[tuple[int, bool, tuple]]


def same_reservations(active: list[Reservation], kept: list[Reservation]) -> bool:
    """Whether two lists hold the very same reservations, in the same order."""
    return len(active) == len(kept) and all(a is b for a, b in zip(active, kept, strict=True))


def comes_next(
    tail: Tail, ranks: list[int], pos: int, active: list[Reservation], queues: set[int]
) -> bool:
    """Whether the tail's jobs come next in a round (its waiting ranks ``ranks`` from
    ``pos`` on) with the same reservations to keep (``active``, of the ``queues``): then
    it is replayed."""
    return (
        ranks[pos : pos + len(tail.ranks)] == tail.ranks
        and queues == tail.queues_before
        and same_reservations(active, tail.active_before)
    )


def make_tail(
    records: Records,
    epoch: int,
    ranks: list[int],
    first_try: int,
    before: tuple[list[Reservation], set[int]],
    after: tuple[list[Reservation], set[int]],
    marks: list[tuple[int, bool, tuple]],
) -> Tail | None:
    """The tail of a round that has just ended (None if it tried none, or its tries do not
    match its jobs one for one). ``marks``: the round's tries with a reservation in the
    records, as (try index, whether only reservations stopped it, its value as in
    :class:`Tail`)."""
    if not ranks or len(records.try_job) - first_try != len(ranks):
        return None
    reserved = [(i - first_try, stopped, v) for i, stopped, v in marks if i >= first_try]
    return Tail(epoch, ranks, first_try, *before, list(after[0]), set(after[1]), reserved)


def replay(
    tail: Tail,
    records: Records,
    blocking_of: Callable[[int, list[Reservation]], tuple[int, float]],
    marks: list[tuple[int, bool, tuple]],
) -> None:
    """Append the tail's tries to the records again (and their reservations to ``marks``);
    ``blocking_of(j, active)`` names the reservation that stops job ``j`` now among the
    ``active`` ones."""
    lo, hi = tail.first_try, tail.first_try + len(tail.ranks)
    base = len(records.try_job)
    records.try_job.extend(records.try_job[lo:hi])
    records.try_code.extend(records.try_code[lo:hi])
    records.try_free.extend(records.try_free[lo:hi])
    reserved, active = records.try_reserved, tail.active_after
    for offset, stopped, value in tail.reserved:
        index = base + offset
        if stopped:
            j, n_active = value
            reserved[index] = blocking_of(j, active[:n_active])
        else:
            reserved[index] = value
        marks.append((index, stopped, value))
