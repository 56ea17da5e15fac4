"""When a group's round may change things though nothing happened in the group: its
ranking's next change, and the next of its running jobs to come out of protection.

Parts of :class:`~analysim.engine.rounds.Rounds` (its rounds ask them after each round, to
set ``ranking_valid_until`` and ``protected_until``; ``docs/semantics.md``, "Rounds"). They
read the rounds' ranker, the scheduler and the jobs' state, and return the bounds (the rounds
keep them).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from analysim.engine.clock import EPS

if TYPE_CHECKING:
    from analysim.engine.ranking import Ranking
    from analysim.engine.rounds import Rounds


def bound_ranking(rounds: Rounds, group: int) -> tuple[float, bool]:
    """Until when the group's ranking holds (``ranking_valid_until``), and whether asking was
    put off (``change_unknown``): while no job of the group waits, nothing reads the ranking
    and the next job to wait arrives (its round asks then); if arrivals cannot bring the
    change forward, asking is put off until then."""
    scheduler, sim = rounds.scheduler, rounds.sim
    if (
        sim.flags.skip_rounds
        and not rounds.group_waiting[group]
        and scheduler.arrivals_keep_next_change
    ):
        return math.inf, True
    if sim.las is not None:
        return sim.las.next_change(group), False
    return scheduler.next_change(rounds.ranker.view(group, include_running=True)), False


def next_unprotected(rounds: Rounds, group: int) -> float:
    """When the group's next running job that ranks below one of its waiting jobs may be
    evicted (its protection ends); only such a job can make room for one.

    The answer holds until jobs arrive, start or stop, or the ranking changes. Where the
    positions are not at hand (a ranking made afresh each round), every running job counts:
    an early answer only costs a round that changes nothing."""
    now, running, ranker = rounds.clock.now + EPS, rounds.running[group], rounds.ranker
    evictable_from = rounds.evictable_from
    flags = rounds.sim.flags
    if flags.static:
        waiting = ranker.waiting_ranks[group]
        if not waiting:
            return math.inf
        top, rank_of = waiting[0], ranker.rank_of
        running = [r for r in running if rank_of[r] > top]
    elif flags.ranking_kept and ranker.kept_ranking[group] is not None:
        kept: Ranking = ranker.kept_ranking[group]
        first = kept.first_waiting()
        if first is None:
            return math.inf
        later = map(evictable_from.item, kept.running_below(first))
        return min([t for t in later if t > now], default=math.inf)
    later = [t for t in map(evictable_from.item, running) if t > now]
    return min(later, default=math.inf)
