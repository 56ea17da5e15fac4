"""Trial evictions and EASY reservations computed in a cheaper order give the same answers.

* ``Evictions.fewest_to_free`` counts the GPUs its trial frees and tries evicting every
  candidate (the quick way to fail) only at the first prefix with GPUs enough that does not
  fit: it picks the victims the plain order (evict them all first, then the shortest prefix,
  then drop the unneeded) picks;
* an EASY reservation's spare GPUs are placed when first asked for: the same array as
  placed when the reservation is made.
"""

from __future__ import annotations

import numpy as np
import pytest
from jobs_table import make_jobs
from test_fast_paths import _run, _same_runs, same_decisions

from analysim import Cluster, SimConfig, Workload
from analysim.engine import easy, evictions
from analysim.policies.placement import Consolidate


class _AskingConsolidate(Consolidate):
    """Consolidate asked about every trial (trials on a copy of the free map, or a list)."""

    picks_any_fitting_node = False


def _plain_fewest_to_free(ev: evictions.Evictions, j: int, candidates: list[int]):
    """The plain order: evict them all (no room: None), then the shortest prefix that fits,
    then drop any victim not needed, latest first."""
    trial = ev._trial_for(j, candidates)
    if trial is None:
        return None
    for r in candidates:
        trial.release(r, +1)
    if not trial.fits():
        return None
    trial.reset()
    victims: list[int] = []
    for r in candidates:
        trial.release(r, +1)
        victims.append(r)
        if trial.fits():
            break
    for r in victims[-2::-1]:
        trial.release(r, -1)
        if trial.fits():
            victims.remove(r)
        else:
            trial.release(r, +1)
    return victims


def _busy_jobs(n: int, seed: int) -> Workload:
    """``n`` jobs of 1-16 GPUs arriving faster than two VCs of 16 GPUs each run them."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.integers(0, 40, n))
    rows = [
        (f"j{i}", "ab"[i % 2], int(submit[i]), int(rng.integers(30, 900)), int(g))
        for i, g in enumerate(rng.choice([1, 2, 2, 4, 6, 8, 12, 16], n))
    ]
    return make_jobs(rows)


@pytest.mark.parametrize("placer", [Consolidate(), _AskingConsolidate()], ids=["few", "asked"])
def test_trial_evictions_choose_the_victims_of_the_plain_order(placer, monkeypatch):
    """At every trial of a busy LAS + preemption + EASY run (one-node and many-node jobs,
    trials that fail), the victims are those of the plain order; some trials fail though
    evicting every candidate frees GPUs enough in count, and with more than two victims
    found the last alone made room (the others dropped at once) or did not."""
    fast = evictions.Evictions.fewest_to_free
    seen = {"trials": 0, "failed": 0, True: 0, False: 0}
    fits_alone = evictions._FewNodesTrial.fits_alone

    def alone(self, r):
        answer = fits_alone(self, r)
        seen[answer] += 1
        return answer

    def compared(self, j, candidates):
        got = fast(self, j, candidates)
        assert got == _plain_fewest_to_free(self, j, candidates)
        seen["trials"] += 1
        seen["failed"] += got is None and self._trial_for(j, candidates) is not None
        return got

    monkeypatch.setattr(evictions.Evictions, "fewest_to_free", compared)
    monkeypatch.setattr(evictions._FewNodesTrial, "fits_alone", alone)
    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(
        scheduler="las", preemption=True, backfill="easy", quantum=60, placement=placer
    )
    _run(_busy_jobs(160, seed=3), cluster, config, reference=False)
    assert seen["trials"] > 30 and seen["failed"] > 0 and seen[True] and seen[False]


@pytest.mark.parametrize(("scheduler", "preemption"), [("las", True), ("fifo", False)])
def test_reservations_placed_when_first_asked_for_are_those_placed_at_once(
    scheduler, preemption, monkeypatch
):
    """A reservation's spare GPUs, placed on first asking, equal those placed as it was
    made (from the same free GPUs at its time); some are never asked for, and the run and
    its decision records are those of placing every one at once."""
    made: list[tuple[object, np.ndarray]] = []
    make, spare_of = easy.EasyBackfill._make_reservation, easy.EasyBackfill.spare_of

    def making(self, j):
        reservation = make(self, j)
        if reservation is not None and reservation.spare is None:
            made.append((reservation, self._spare(*reservation.spare_of)))
        return reservation

    def asked(self, reservation):
        fresh = reservation.spare is None
        spare = spare_of(self, reservation)
        if fresh:
            at_once = next(s for r, s in made if r is reservation)
            np.testing.assert_array_equal(spare, at_once)
        return spare

    cluster = Cluster.uniform(4, 2, 4, vc_nodes={"a": 4, "b": 4})
    config = SimConfig(scheduler=scheduler, preemption=preemption, backfill="easy", quantum=60)
    workload = _busy_jobs(160, seed=5)
    with monkeypatch.context() as patch:
        patch.setattr(easy.EasyBackfill, "_make_reservation", making)
        patch.setattr(easy.EasyBackfill, "spare_of", asked)
        _, lazy = _run(workload, cluster, config, reference=False)
    placed = sum(r.spare is not None for r, _ in made)
    assert 0 < placed < len(made)
    init = easy.EasyBackfill.__init__

    def at_once(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._spare_later = False

    monkeypatch.setattr(easy.EasyBackfill, "__init__", at_once)
    _, eager = _run(workload, cluster, config, reference=False)
    _same_runs(lazy, eager)
    same_decisions(lazy, eager)
