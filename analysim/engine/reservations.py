"""EASY backfill's reservations (``SimConfig(backfill="easy")``).

When the first waiting job of a queue (its *head*) cannot start, it is promised the earliest
time ``at`` at which it would fit if no other job started: the running jobs release their
GPUs when their remaining run time ends, and the placer is asked, on that future free map,
where the head would go (its *reserved* GPUs). A job behind it may start now only if it
does not delay that promise: it ends by ``at``, or it takes only GPUs the head does not
need then (``spare``: free at ``at`` and not reserved). This is the rule of the Extensible
Argonne Scheduling sYstem (Lifka 1995) that Slurm's ``sched/backfill`` applies; the engine
knows each job's run time exactly, where Slurm reads the user's time limit.

A reservation is kept until GPUs of its group are released (the future free map may then
be earlier), its head starts, or a start it did not allow takes GPUs it needs; it is made
again when the head next fails. (A shortcut keeps it past releases it foresaw: jobs that
ended when it counted them to, with no GPU taken since; making it again would give it.)
``docs/semantics.md`` gives the rule with an example.

In resource mode (GPU shares, CPU, memory) the same rule is kept on the resource book
(``book``): what is left at ``at`` once the running jobs that end by then have given theirs
back and the head has taken its claims. A job running past ``at`` may take now, on the
head's nodes, only what that book still has (CPU and memory per node; milli per GPU for a
share), and its whole GPUs only up to the book's fully free GPUs per node: whole GPUs are
reserved by count on a node, as above (the head may be given any free GPUs of its nodes at
``at``); on the nodes the head cannot use (another GPU type, another VC's nodes) it may
take anything, as ``spare`` is unlimited there. So with every job asking for whole GPUs, the
two forms decide alike (``tests/test_one_rule.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from analysim.sharing.resources import MILLI

if TYPE_CHECKING:
    from analysim.engine.book import Claim, ResourceBook


@dataclass
class Reservation:
    """The promise made to ``head`` (a job index): its GPUs from time ``at`` on."""

    head: int
    at: float
    #: GPUs per node that may be taken now by a job still running at ``at``: free at ``at``
    #: less those of the head's placement then on its nodes, unlimited elsewhere (None in
    #: resource mode, or until ``EasyBackfill.spare_of`` places the head from ``spare_of``)
    spare: np.ndarray | None
    #: with a quota: the GPUs of the quota left at ``at`` once the head has its own (None:
    #: no quota); a job of the same VC running past ``at`` may use only these
    quota_spare: int | None
    vc: int
    #: the group's release count when it was made (a release may bring ``at`` forward)
    releases: int
    #: a start it did not allow took GPUs it needs: it is made again at the head's next try
    broken: bool = False
    #: the steps at which the running jobs it counted end by ``at``, sorted (None: it is
    #: made again after any release), and how many more it counted to end after ``at``; and
    #: how many times jobs of the group had taken GPUs then
    ends: list[float] | None = None
    ends_after: int = 0
    takes: int = 0
    #: when ``spare`` is None with whole GPUs: the head's GPUs, the GPUs free on its
    #: domain's nodes at ``at`` (a list) and the domain, to place it on first asking
    spare_of: tuple | None = None
    #: resource mode: the book at ``at`` less the head's claims (None in whole-GPU runs),
    #: and the GPUs (node, local GPU) the head takes whole there, swapped within a node
    #: when a job takes one of them now (the head may have any whole GPUs of that node)
    book: ResourceBook | None = None
    head_whole: set[tuple[int, int]] = field(default_factory=set)

    def runs_past(self, due: float) -> bool:
        """Whether a job seen to end at step ``due`` still holds its GPUs at ``at``."""
        return due > self.at + 1e-9

    def claim(self, pairs: tuple[tuple[int, int], ...], gpus: int, vc: int, own: bool) -> None:
        """A job running past ``at`` took GPUs, ``(node, count)`` ``pairs`` (``own``: counted
        in its VC's quota): less is spare; broken if it took reserved GPUs."""
        spare = self.spare
        for node, count in pairs:  # (a few nodes: an item at a time beats fancy indexing)
            left = spare[node] - count
            spare[node] = left
            if left < 0:
                self.broken = True
        if self.quota_spare is not None and own and vc == self.vc:
            self.quota_spare -= gpus
            if self.quota_spare < 0:
                self.broken = True

    def claim_book(
        self, claims: list[Claim], usage: int, vc: int, own: bool, now: ResourceBook
    ) -> None:
        """Resource mode: a job running past ``at`` took ``claims`` (``usage`` GPU milli;
        ``own``: counted in its VC's quota) on the ``now`` book: less is left at ``at``;
        broken if it took what the head needs. Whole GPUs are counted on a node: a whole
        GPU taken that the book has not fully free at ``at`` (the head's, or one busy then
        whose job has left since the book was made) stands for another fully free one of
        its node, preferring one busy now, as the whole-GPU ``claim`` counts it; broken if
        there is none. (A share that takes a GPU of the head's swaps it so too.)"""
        book, head = self.book, self.head_whole
        assert book is not None
        for node, gpus, cpu, memory, milli in claims:
            book.cpu_left[node] -= cpu
            book.mem_left[node] -= memory
            if book.cpu_left[node] < 0 or book.mem_left[node] < 0:
                self.broken = True
            for g in gpus:
                if book.gpu_left[node, g] < milli and (milli == MILLI or (node, g) in head):
                    other = self._spare_whole_gpu(node, now)
                    if other is None:
                        self.broken = True
                        continue
                    if (node, g) in head:
                        head.discard((node, g))
                        head.add((node, other))
                        book.gpu_left[node, other] = 0
                        book.gpu_left[node, g] = MILLI
                    else:  # busy at ``at`` (its job has left since): by count, another
                        g = other
                book.gpu_left[node, g] -= milli
                if book.gpu_left[node, g] < 0:
                    self.broken = True
        if self.quota_spare is not None and own and vc == self.vc:
            self.quota_spare -= usage
            if self.quota_spare < 0:
                self.broken = True

    def _spare_whole_gpu(self, node: int, now: ResourceBook) -> int | None:
        """A fully free GPU of ``node`` at ``at`` that the head does not take, preferring
        one busy now (so that the GPUs free now stay spare)."""
        book = self.book
        assert book is not None
        free_at = [g for g, left in enumerate(book.gpus_of(node)) if left == MILLI]
        if not free_at:
            return None
        return min(free_at, key=lambda g: (now.gpu_left[node, g] == MILLI, g))
