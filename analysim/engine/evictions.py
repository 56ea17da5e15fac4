"""Preemption's side of the rounds: trial evictions for a waiting job (which lower-ranked
running jobs to evict, fewest first, and whether they are protected) and the trials that
count whether it would fit once they are gone (``docs/semantics.md``, "Preemption").

:class:`Evictions` is a collaborator of :class:`~analysim.engine.rounds.Rounds`
(``Rounds.evictions``): it owns the memos of failed trial evictions and answers
:meth:`Evictions.try_preempt_for` with the reason a job could not evict its way in; it also
answers what the placer would say of a trial free map (:meth:`Evictions.placer_fits`,
:meth:`Evictions.fits_hypothetically`), which EASY backfill and the tenancy ask too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from analysim.engine.book_fit import BookTrial
from analysim.engine.clock import EPS
from analysim.engine.ranking import Ranking
from analysim.engine.records import PREEMPT_NO_ROOM, PREEMPT_PROTECTED
from analysim.errors import PolicyError
from analysim.inputs.domains import Domain
from analysim.policies.placement import SMALL

if TYPE_CHECKING:
    from analysim.engine.book_fit import BookFit
    from analysim.engine.rounds import Rounds


class Evictions:
    """Trial evictions for the waiting jobs of the rounds ``rounds``."""

    def __init__(
        self,
        rounds: Rounds,
        book_fit: BookFit | None,
        covers_group: list[bool],
        evict_epoch: list[int],
    ) -> None:
        """``book_fit``: where a job fits in resource mode (None with whole GPUs only);
        ``covers_group``: per domain, whether it spans its group's nodes; ``evict_epoch``:
        per group, the rounds' counter of changes that may help an eviction (read here)."""
        sim = rounds.sim
        ledger, facts, flags = sim.ledger, sim.facts, sim.flags
        shortcuts = sim.shortcuts
        self.sim, self.clock, self.shortcuts = sim, sim.clock, shortcuts
        self.placer, self.rng, self._ask_placer = sim.placer, sim.rng, sim.ask_placer
        self._book_fit = book_fit
        self._picks_one_node = flags.picks_one_node
        self._picks_any_fitting_node = flags.picks_any_fitting_node
        #: the placer's ``can_spread_few`` (trials over a few nodes kept in a list), when it
        #: keeps the placer's own ``can_spread`` rule
        self._spread_few = (
            self.placer.can_spread_few
            if flags.picks_one_node and _defined_together(type(self.placer))
            else None
        )
        # read, never written here: the ledger's state, the jobs' facts, the rounds' epochs
        self.free, self.free_slots, self.group_free = (
            ledger.free,
            ledger.free_slots,
            ledger.group_free,
        )
        self.vc_used, self.borrowed = ledger.vc_used, ledger.borrowed
        self.alloc_nodes, self.alloc_counts = ledger.alloc_nodes, ledger.alloc_counts
        self._alloc_pairs = ledger.alloc_pairs
        self.evictable_from = sim.evictable_from
        self._gpus, self._vc, self._group = facts.gpus, facts.vc, facts.group
        self._domain, self._domain_index = facts.domain, facts.domain_index
        self._node_position, self._covers_group = facts.node_position, covers_group
        self.epoch, self._evict_epoch = rounds.epoch, evict_epoch
        # starting a job once its victims are gone, and its VC's quota
        self.quota_allows, self.try_start = rounds.starts.quota_allows, rounds.starts.try_start
        # job -> the group's eviction epoch when its trial evictions failed, and why
        self._preempt_failed_at: dict[int, int] = shortcuts.memo()
        self._preempt_why_of: dict[int, int] = {}
        # in the round at hand: (domain, GPUs, VC) -> the group's epoch when a job of those
        # needs failed its trial evictions (None: not kept)
        self._alike = book_fit is None and shortcuts.alike_evictions
        self._evictions_failed: dict[tuple[int, int, int], int] | None = None
        # the ranking, epoch and time at which _protected_below was last asked, whether it
        # found the position of the lowest-ranked protected running job then, and that
        self._protection_bound = shortcuts.protection_bound
        self._protection_seen: tuple[Ranking, int, float, bool, int | None] | None = None

    def new_round(self, preemptive: bool) -> None:
        """A round begins (the memo of alike failed trials lasts one preemptive round)."""
        self._evictions_failed = {} if self._alike and preemptive else None

    def try_preempt_for(self, j: int, ranked: Ranking, pos: int) -> int:
        """Evict the lowest-ranked running jobs below ``j`` (at ``pos`` in ``ranked``) that
        free room for it, if any do, and start it: 0; else why not (``PREEMPT_PROTECTED``
        or ``PREEMPT_NO_ROOM``, for the records)."""
        group = self._group[j]
        epoch = self._evict_epoch[group]
        if self._preempt_failed_at.get(j) == epoch:
            # nothing it could use has changed since it last failed (why, as then; a job
            # started since, below it, is protected)
            why = self._preempt_why_of[j]
            if why == PREEMPT_NO_ROOM and self._protected_below(ranked, pos, group):
                why = PREEMPT_PROTECTED
            return why
        failed, needs, now_epoch = self._evictions_failed, None, 0
        if failed is not None:
            needs, now_epoch = (
                (self._domain_index[j], self._gpus[j], self._vc[j]),
                self.epoch[group],
            )
        protected = None  # whether a running job below it is protected (for the records)
        if needs is not None and failed.get(needs) == now_epoch:
            # a job ranked above it with the same needs failed, and nothing started or
            # stopped since: it could evict only some of the same jobs (a prefix of them)
            evicted = False
        else:
            below = ranked.running_below(pos)
            candidates = self._evictable(below)
            evicted = self._evict_for(j, candidates)
            protected = len(candidates) < len(below)
        if evicted:
            return 0
        if needs is not None:
            failed[needs] = now_epoch
        self._preempt_failed_at[j] = epoch
        if protected is None:
            protected = self._protected_below(ranked, pos, group)
        why = PREEMPT_PROTECTED if protected else PREEMPT_NO_ROOM
        self._preempt_why_of[j] = why
        return why

    def _protected_below(self, ranked: Ranking, pos: int, group: int) -> bool:
        """Whether a running job ranked below position ``pos`` is still protected (may not
        be evicted yet): asked only when preemption failed, for the records."""
        now, evictable_from = self.clock.now + EPS, self.evictable_from
        if self._protection_bound:
            # asked again while nothing started or stopped: ask the ranking once for the
            # position of its lowest-ranked protected running job (one is below ``pos`` iff
            # it is); asked once, look below ``pos`` only
            seen, epoch = self._protection_seen, self.epoch[group]
            if seen is not None and seen[0] is ranked and seen[1] == epoch and seen[2] == now:
                if not seen[3]:
                    lowest = ranked.lowest_running(lambda r: evictable_from[r] > now)
                    seen = self._protection_seen = (ranked, epoch, now, True, lowest)
                return seen[4] is not None and seen[4] > pos
            self._protection_seen = (ranked, epoch, now, False, None)
        return any(evictable_from[r] > now for r in ranked.running_below(pos))

    def _evictable(self, running: list[int]) -> list[int]:
        """Those of the ``running`` jobs whose protection has ended, in the same order (the
        others are protected: they may not be evicted yet)."""
        now, evictable_from = self.clock.now + EPS, self.evictable_from
        return [r for r in running if evictable_from[r] <= now]

    def _evict_for(self, j: int, candidates: list[int]) -> bool:
        """Evict the fewest of ``candidates`` (in the order they should go) that let ``j``
        start, and start it; False if none would."""
        domain, vc = self._domain[j], self._vc[j]
        if not self._covers_group[self._domain_index[j]]:
            candidates = [
                r
                for r in candidates
                if (domain.quota is not None and self._vc[r] == vc)
                or domain.mask[self.alloc_nodes[r]].any()
            ]
        victims = self.fewest_to_free(j, candidates) if candidates else None
        if victims is None:
            return False
        for r in victims:
            self.sim.preempt(r, cause=j)
        if not self.try_start(j).started:  # cannot happen: the free map is the one that fitted
            raise PolicyError(f"placement policy {self.placer.name!r} is not deterministic")
        return True

    def fewest_to_free(self, j: int, candidates: list[int]) -> list[int] | None:
        """Of ``candidates`` (in the order they should go), the running jobs whose eviction
        lets ``j`` fit: the shortest prefix that does, less any of it (latest first) that
        turns out not to be needed; None if evicting them all would not do."""
        trial = self._trial_for(j, candidates)
        if trial is None:
            return None
        release, fits = trial.release, trial.fits
        # evicting more never hurts: if evicting them all does not make room, nothing will
        # (a quick way to fail when asking whether it fits costs much; a trial that counts
        # the GPUs it frees asks only at the first prefix with GPUs enough that does not fit)
        if trial.counts:
            victims = self._shortest_counted(trial, candidates)
            if victims is None:
                return None
            if len(victims) > 2 and trial.fits_alone(victims[-1]):
                # the last victim alone makes room: evicting more never hurts, so each of
                # the others turns out not to be needed, latest first
                return victims[-1:]
            need = trial.need
            for r in victims[-2::-1]:  # keep any victim not needed, latest first
                release(r, -1)
                if trial.total >= need and fits():  # (too few GPUs free: it does not)
                    victims.remove(r)
                else:
                    release(r, +1)
            return victims
        if not trial.cheap:
            for r in candidates:
                release(r, +1)
            if not fits():
                return None
            trial.reset()
        for i, r in enumerate(candidates):
            release(r, +1)
            if fits():
                victims = candidates[: i + 1]
                break
        else:
            return None
        for r in victims[-2::-1]:  # keep any victim not needed, latest first
            release(r, -1)
            if fits():
                victims.remove(r)
            else:
                release(r, +1)
        return victims

    @staticmethod
    def _shortest_counted(trial: _Trial, candidates: list[int]) -> list[int] | None:
        """The shortest prefix of ``candidates`` whose eviction lets the job fit (left
        released in ``trial``), on a trial that counts the GPUs it frees (``total``); None
        if evicting them all would not do (asked once, at the first prefix with GPUs enough
        that does not fit)."""
        # the prefixes with too few GPUs free do not fit: released without asking
        first = trial.release_until_enough(candidates)
        if first == len(candidates):
            return None
        if trial.fits():
            return candidates[: first + 1]
        rest = candidates[first + 1 :]
        trial.release_all(rest, +1)
        if not trial.fits():
            return None
        trial.release_all(rest, -1)
        release, fits = trial.release, trial.fits
        for i in range(first + 1, len(candidates)):
            release(candidates[i], +1)
            if fits():
                return candidates[: i + 1]
        return None

    def _trial_for(self, j: int, candidates: list[int]) -> _Trial | BookTrial | None:
        """The trial evictions for ``j`` (None when evicting every candidate would not free
        enough GPUs)."""
        if self._book_fit is not None:
            return self._book_fit.trial(j)
        need, domain = self._gpus[j], self._domain[j]
        if self._covers_group[self._domain_index[j]]:
            room = self.group_free[self._group[j]]  # counted already
        else:
            room = int(self.free[domain.nodes].sum())
        gpus = self._gpus
        if room + sum([gpus[r] for r in candidates]) < need:
            return None
        if self._picks_any_fitting_node and need <= domain.topology.largest:
            return _OneNodeTrial(self, j)
        if len(domain.nodes) <= SMALL and self.shortcuts.placer:
            return _FewNodesTrial(self, j)
        return _FreeMapTrial(self, j, room)

    def _release_into(self, r: int, free: np.ndarray, vc_used: np.ndarray, sign: int) -> None:
        """Add (sign +1) or take back (-1) job ``r``'s GPUs in a trial free map."""
        free[self.alloc_nodes[r]] += sign * self.alloc_counts[r]
        if not self.borrowed[r]:  # borrowed GPUs are not counted in the VC's usage
            vc_used[self._vc[r]] -= sign * self._gpus[r]

    def fits_hypothetically(self, j: int, free: np.ndarray, vc_used: np.ndarray) -> bool:
        """Would ``j`` fit given a trial free map and VC usage? (Draws nothing from the rng.)"""
        if not self.quota_allows(j, vc_used):
            return False
        domain = self._domain[j]
        return self.placer_fits(self._gpus[j], free[domain.nodes], domain)

    def placer_fits(
        self, need: int, room: np.ndarray, domain: Domain, total: int | None = None
    ) -> bool:
        """Would the placer find ``need`` GPUs given ``room``, the free GPUs of the domain's
        nodes (``total`` of them, if the caller has counted)? (Draws nothing from the rng.)"""
        if self._picks_any_fitting_node and need <= domain.topology.largest:
            return bool(room.max() >= need)  # it fits on one node iff some node has room
        if (room.sum() if total is None else total) < need:
            return False
        if self._picks_one_node and need > domain.topology.largest:
            answer = self.placer.can_spread(need, room, domain.topology)
            if answer is not None:  # said without placing
                return answer
        # only whether it fits: the placement itself is checked when the job really starts
        if not self.placer.random:
            return self._ask_placer(need, room, domain.topology) is not None
        state = self.rng.bit_generator.state
        take = self._ask_placer(need, room, domain.topology)
        self.rng.bit_generator.state = state
        return take is not None


class _Trial:
    """Trial evictions for job ``j``: release (+1) or take back (-1) a running job's GPUs,
    and ask whether ``j`` would fit; ``reset`` starts again from the present state."""

    #: whether ``fits`` costs next to nothing (then no need to try evicting them all first)
    cheap = False
    #: whether it counts the GPUs free with the trial evictions (``total``, at most) against
    #: the GPUs ``j`` asks for (``need``): ``fits`` says no while they are fewer (evicting
    #: them all is then tried only once they are as many)
    counts = False
    total = need = 0

    def reset(self) -> None:
        raise NotImplementedError

    def release(self, r: int, sign: int) -> None:
        raise NotImplementedError

    def fits(self) -> bool:
        raise NotImplementedError

    def fits_alone(self, r: int) -> bool:
        """Whether ``j`` would fit once ``r`` alone is evicted (a trial that counts may say;
        False: not known). The trial is left as it was."""
        return False

    def release_all(self, jobs: list[int], sign: int) -> None:
        """``release`` each of ``jobs``."""
        for r in jobs:
            self.release(r, sign)

    def release_until_enough(self, jobs: list[int]) -> int:
        """Release ``jobs`` in order until the GPUs free are as many as ``j`` asks for (a
        trial that counts): the index of the one that made them so (``len(jobs)``, all
        released, if none did)."""
        release = self.release
        for i, r in enumerate(jobs):
            release(r, +1)
            if self.total >= self.need:
                return i
        return len(jobs)


class _FreeMapTrial(_Trial):
    """On a copy of the free map, asking the placer (any job, any placer)."""

    counts = True

    def __init__(self, evictions: Evictions, j: int, room: int) -> None:
        self.evictions, self.j, self.need, self.start_room = evictions, j, evictions._gpus[j], room
        self.reset()

    def reset(self) -> None:
        self.free, self.vc_used = self.evictions.free.copy(), self.evictions.vc_used.copy()
        self.total = self.start_room  # free GPUs of j's domain, at most (a quick bound)

    def release(self, r: int, sign: int) -> None:
        self.evictions._release_into(r, self.free, self.vc_used, sign)
        self.total += sign * self.evictions._gpus[r]

    def fits(self) -> bool:
        return self.total >= self.need and self.evictions.fits_hypothetically(
            self.j, self.free, self.vc_used
        )


class _FewNodesTrial(_Trial):
    """Asking the placer, with the free GPUs of ``j``'s few nodes kept in a Python list
    (and its VC's usage, if its domain has a quota, as one number): a job larger than a
    node is asked of the placer's ``can_spread_few`` on that list, when it has one."""

    counts = True

    def __init__(self, evictions: Evictions, j: int) -> None:
        domain = evictions._domain[j]
        self.evictions, self.j, self.need, self.domain = evictions, j, evictions._gpus[j], domain
        self.position = evictions._node_position[
            evictions._domain_index[j]
        ]  # node -> index in domain
        # the quota: the VC's usage, counted as ``StartTries.quota_allows`` reads it
        self.quota, self.vc = domain.quota, evictions._vc[j]
        self.spread_few = evictions._spread_few if self.need > domain.topology.largest else None
        self.reset()
        self.start = (self.free.copy(), self.total, self.used)  # as it began

    def reset(self) -> None:
        evictions = self.evictions
        self.free = evictions.free[self.domain.nodes].tolist()
        self.total = sum(self.free)  # kept as jobs are released
        self.used = 0 if self.quota is None else int(evictions.vc_used[self.vc])

    def release(self, r: int, sign: int) -> None:
        evictions, free, position = self.evictions, self.free, self.position
        for node, count in evictions._alloc_pairs[r]:
            i = position.get(node)
            if i is not None:
                free[i] += sign * count
                self.total += sign * count
        # borrowed GPUs are not counted in the VC's usage
        if self.quota is not None and evictions._vc[r] == self.vc and not evictions.borrowed[r]:
            self.used -= sign * evictions._gpus[r]

    def release_all(self, jobs: list[int], sign: int) -> None:
        if self.quota is not None:  # (its usage too)
            super().release_all(jobs, sign)
            return
        free, position, pairs, total = self.free, self.position, self.evictions._alloc_pairs, 0
        for r in jobs:  # ``release``, inline
            for node, count in pairs[r]:
                i = position.get(node)
                if i is not None:
                    free[i] += sign * count
                    total += count
        self.total += sign * total

    def release_until_enough(self, jobs: list[int]) -> int:
        if self.quota is not None:  # (its usage too)
            return super().release_until_enough(jobs)
        free, position, pairs = self.free, self.position, self.evictions._alloc_pairs
        total, need = self.total, self.need
        for at, r in enumerate(jobs):  # ``release``, inline
            for node, count in pairs[r]:
                i = position.get(node)
                if i is not None:
                    free[i] += count
                    total += count
            if total >= need:
                self.total = total
                return at
        self.total = total
        return len(jobs)

    def fits(self) -> bool:
        need, total = self.need, self.total
        if total < need or (self.quota is not None and self.used + need > self.quota):
            return False
        if self.spread_few is not None:
            answer = self.spread_few(need, self.free, self.domain.topology)
            if answer is not None:  # said without placing
                return answer
        return self.evictions.placer_fits(
            need, np.array(self.free, dtype=np.int64), self.domain, total
        )

    def fits_alone(self, r: int) -> bool:
        if self.spread_few is None:  # (a placer asked for placements: the plain pass)
            return False
        now = self.free, self.total, self.used
        free, self.total, self.used = self.start
        self.free = free.copy()
        self.release(r, +1)
        answer = self.fits()
        self.free, self.total, self.used = now
        return answer


class _OneNodeTrial(_Trial):
    """For a job that fits on one node, when the placer takes any node with room: counted
    in plain Python over the nodes the released jobs hold (the job fits once one node of its
    domain has room and its quota allows). Each release updates how many nodes have room,
    so asking costs nothing."""

    cheap = True

    def __init__(self, evictions: Evictions, j: int) -> None:
        domain = evictions._domain[j]
        self.evictions, self.j, self.need = evictions, j, evictions._gpus[j]
        self.position = evictions._node_position[evictions._domain_index[j]]  # the domain's nodes
        # (the quota may block it)
        self.fits_now = max(evictions.free[domain.nodes].tolist()) >= self.need
        # the quota: the VC's usage, counted as ``StartTries.quota_allows`` reads it
        self.quota, self.vc = domain.quota, evictions._vc[j]
        self.reset()

    def reset(self) -> None:
        self.added: dict[int, int] = {}  # node -> GPUs the trial evictions free on it
        self.used = 0 if self.quota is None else int(self.evictions.vc_used[self.vc])
        self.roomy = 0  # nodes of the domain that have room for j only thanks to the trial

    def release(self, r: int, sign: int) -> None:
        evictions, added, need, position = self.evictions, self.added, self.need, self.position
        if self.quota is not None and evictions._vc[r] == self.vc and not evictions.borrowed[r]:
            self.used -= sign * evictions._gpus[r]  # (borrowed GPUs are not counted)
        for node, count in evictions._alloc_pairs[r]:
            before = added.get(node, 0)
            added[node] = before + sign * count
            if node in position:
                free = len(evictions.free_slots[node])
                if (free + before >= need) != (free + before + sign * count >= need):
                    self.roomy += sign

    def fits(self) -> bool:
        return (self.fits_now or self.roomy > 0) and (
            self.quota is None or self.used + self.need <= self.quota
        )


def _defined_together(cls: type) -> bool:
    """Whether placer class ``cls`` has its ``can_spread_few`` from the class that gives it
    its ``can_spread`` (so the two say the same)."""

    def owner(name: str) -> type:
        return next(k for k in cls.__mro__ if name in vars(k))

    return owner("can_spread") is owner("can_spread_few")
