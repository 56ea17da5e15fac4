"""The borrowing round: after a group's round, its waiting jobs try idle GPUs of other VCs.

A part of :class:`~analysim.engine.rounds.Rounds` (its rounds ask it when the tenancy lets
jobs borrow; ``docs/semantics.md``). It tries starts through the rounds' ``starts``, asks the
tenancy to borrow, and records each job that could not, as the rounds record their tries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysim.engine.records import BORROW_FAILED, RESERVED

if TYPE_CHECKING:
    from analysim.engine.reservations import Reservation
    from analysim.engine.rounds import Rounds


def borrow_round(rounds: Rounds, group: int, active: list[Reservation]) -> bool:
    """After every job of ``group`` has had its chance on its own GPUs: waiting jobs, in
    order, try idle GPUs of other VCs (each queue's head only, without backfill), keeping
    the EASY reservations ``active``. A job that comes to the head once the one before it
    has borrowed tries its own GPUs first. Whether anything started."""
    changed = False
    done: set[int] = set()
    records, queue_of, tenancy = rounds.records, rounds.sim.facts.queue, rounds.sim.tenancy
    for _, j in rounds.ranker.ranked(group, False).waiting_from(0):
        vc = queue_of[j]
        if vc in done:
            continue
        tried = rounds.starts.try_start(j, active)
        if tried.started:  # the head may have moved on
            changed = True
            continue
        why, room = tried.why, tried.room
        if why == RESERVED:
            records.try_reserved[len(records.try_job)] = tried.blocking
        if tenancy.try_borrow(j):
            changed = True
            continue
        records.try_job.append(j)
        records.try_code.append(why | BORROW_FAILED)
        records.try_free.append(room)
        if not rounds.config.backfill:
            done.add(vc)
    return changed
