"""Placement policies: choose how many GPUs of each node a job gets, or say it does not fit.

A placer sees the free GPUs of the nodes the job may use (its VC's nodes, or the shared pool,
of its GPU type), with their :class:`Topology`, and returns an integer array of GPUs to take
per node of that list, or ``None``. A job that fits in one node
(``num_gpus`` <= the largest eligible node) is always placed on a single node; larger jobs
span nodes, and the placers differ in which. The engine checks every answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np

from analysim.policies.registry import Policy, Registry

#: where plain Python beats numpy (one place for the engine and the placers): up to SMALL
#: items (a VC's nodes, the tail of a queue) a rule runs over Python lists, beyond over numpy
#: arrays; the twins of each rule give the same answers (tested on both sides), only faster
SMALL = 64
#: how many answers ``Topology.spread_answers`` keeps (all are dropped when it is full)
SPREAD_ANSWERS = 4096


@dataclass(frozen=True)
class Topology:
    """Per-node capacity and rack index (racks numbered 0..n_racks-1) of the nodes a job may
    use (a node of capacity 0 is never used)."""

    capacity: np.ndarray
    rack: np.ndarray
    n_racks: int

    @cached_property
    def largest(self) -> int:
        """GPUs of the largest usable node: jobs up to this size go on one node."""
        return int(self.capacity.max(initial=0))

    @cached_property
    def capacity_list(self) -> list[int]:
        """``capacity`` as a Python list (for placers that loop over a few nodes)."""
        return self.capacity.tolist()

    @cached_property
    def rack_list(self) -> list[int]:
        """``rack`` as a Python list."""
        return self.rack.tolist()

    @cached_property
    def uniform_capacity(self) -> int:
        """The GPUs of every node when all have the same number, else 0."""
        first = self.capacity_list[0] if self.capacity_list else 0
        return first if all(c == first for c in self.capacity_list) else 0

    @cached_property
    def spread_answers(self) -> dict[tuple[int, bytes], np.ndarray | None]:
        """The ``consolidate`` placer's answers for jobs larger than a node on these few
        nodes, by (GPUs, free GPUs' bytes): a VC's free GPUs take the same few states again
        and again (at most ``SPREAD_ANSWERS`` kept)."""
        return {}


class Placer(Policy):
    """Base class for placement policies."""

    name: ClassVar[str] = "placer"
    #: whether ``place`` draws from the generator (the engine then restores it after trials)
    random: ClassVar[bool] = False
    #: whether ``pick_node`` finds a node whenever some node has room for the job (then the
    #: engine tests trial placements for such jobs by that rule, without asking)
    picks_any_fitting_node: ClassVar[bool] = False

    def place(
        self, num_gpus: int, free: np.ndarray, topo: Topology, rng: np.random.Generator
    ) -> np.ndarray | None:
        """Return GPUs to take per node (summing to ``num_gpus``), or ``None``."""
        if num_gpus <= topo.largest:
            node = self.pick_node(num_gpus, free, topo, rng)
            if node is None:
                return None
            take = np.zeros_like(free)
            take[node] = num_gpus
            return take
        if free.sum() < num_gpus:
            return None
        return self.spread_over_nodes(num_gpus, free, topo, rng)

    def pick_node(
        self, num_gpus: int, free: np.ndarray, topo: Topology, rng: np.random.Generator
    ) -> int | None:
        """The single node for a job that fits in one node, or ``None``."""
        raise NotImplementedError

    def spread_over_nodes(
        self, num_gpus: int, free: np.ndarray, topo: Topology, rng: np.random.Generator
    ) -> np.ndarray | None:
        """GPUs per node for a job larger than any node (enough GPUs are free in total)."""
        raise NotImplementedError

    def can_spread(self, num_gpus: int, free: np.ndarray, topo: Topology) -> bool | None:
        """Whether :meth:`spread_over_nodes` would place ``num_gpus`` (enough GPUs are free
        in total), said without placing, for the engine's trial placements; ``None`` (the
        default) if the engine must ask it."""
        return None

    def can_spread_few(self, num_gpus: int, free: list[int], topo: Topology) -> bool | None:
        """:meth:`can_spread` for at most ``SMALL`` nodes, their free GPUs given as a list
        (the engine's trial evictions keep them so). The engine asks it only of a placer
        whose class defines it together with ``can_spread`` (a subclass that overrides
        ``can_spread`` alone is asked that); ``None`` (the default): ask the placer."""
        return None


PLACERS: Registry[Placer] = Registry("placement", Placer)


def fill_in_order(num_gpus: int, free: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Take free GPUs node by node in ``order`` until ``num_gpus`` are taken."""
    ordered = free[order]
    before = np.cumsum(ordered) - ordered
    take = np.zeros_like(free)
    take[order] = np.clip(num_gpus - before, 0, ordered)
    return take


_NEVER = np.iinfo(np.int64).max


def best_fit(num_gpus: int, free: np.ndarray) -> int | None:
    """The node with the fewest free GPUs that still fits (ties: lowest index)."""
    if len(free) <= SMALL:  # a VC's few nodes: plain Python is several times faster
        node, tightest = None, _NEVER
        for i, room in enumerate(free.tolist()):
            if num_gpus <= room < tightest:
                node, tightest = i, room
        return node
    room = np.where(free >= num_gpus, free, _NEVER)
    node = int(room.argmin())
    return None if room[node] == _NEVER else node


def _fills_in_order(num_gpus: int, free: np.ndarray | list[int], topo: Topology) -> bool:
    """:meth:`Placer.can_spread` (and ``can_spread_few``) of a placer that fills nodes in
    some order: it always can."""
    return True


def _take_whole_nodes(order: list[int], room: list[int], num_gpus: int) -> tuple[list[int], int]:
    """Take whole free nodes in ``order`` while each fits entirely in what is left: the GPUs
    taken per node, and how many are still to place."""
    take, left = [0] * len(room), num_gpus
    for node in order:
        if room[node] > left:
            break
        take[node] = room[node]
        left -= room[node]
        if left == 0:
            break
    return take, left


@PLACERS.register("consolidate")
class Consolidate(Placer):
    """Best fit. A job larger than a node takes whole free nodes, preferring one rack (the
    rack whose whole free nodes fit it most tightly), and puts any remainder on the
    best-fitting other node, preferring the same rack."""

    picks_any_fitting_node = True

    def pick_node(self, num_gpus, free, topo, rng):
        return best_fit(num_gpus, free)

    def can_spread(self, num_gpus, free, topo):
        # The wholly free nodes are taken until one is larger than what is left, which then
        # fits the rest; so only when they are all taken may the rest find no node.
        if len(free) > SMALL:  # many nodes: numpy
            whole = (free == topo.capacity) & (free > 0)
            left = num_gpus - int(free[whole].sum())
            return left <= 0 or bool((free[free != topo.capacity] >= left).any())
        return self.can_spread_few(num_gpus, free.tolist(), topo)

    def can_spread_few(self, num_gpus, free, topo):
        # can_spread's rule: the wholly free nodes' GPUs, plus the most free on one node that
        # is not wholly free (where the rest goes), are enough
        size = topo.uniform_capacity
        if size:  # nodes alike: count the wholly free; one partly free has size - 1 at most
            left = num_gpus - size * free.count(size)
            return left <= 0 or (left < size and any(f >= left for f in free if f != size))
        return self._can_spread_on(num_gpus, free, topo.capacity_list)

    @staticmethod
    def _can_spread_on(num_gpus: int, free: list[int], capacity: list[int]) -> bool:
        """:meth:`can_spread_few` on nodes of any ``capacity``, in one pass."""
        whole = most = 0
        for f, c in zip(free, capacity, strict=True):
            if f == c:
                whole += f
            elif f > most:
                most = f
        return whole + most >= num_gpus

    def spread_over_nodes(self, num_gpus, free, topo, rng):
        if len(free) > SMALL:
            return self._spread_many(num_gpus, free, topo)
        # a VC's few nodes: the same rule in plain Python is faster, and its answer is kept
        answers, key = topo.spread_answers, (num_gpus, free.tobytes())
        take = answers.get(key, free)  # (``free``: not kept)
        if take is free:
            if len(answers) >= SPREAD_ANSWERS:
                answers.clear()
            take = answers[key] = self._spread_few(num_gpus, free, topo)
        return None if take is None else take.copy()

    @staticmethod
    def _spread_many(num_gpus: int, free: np.ndarray, topo: Topology) -> np.ndarray | None:
        """:meth:`spread_over_nodes` with numpy, for many nodes."""
        whole = (free == topo.capacity) & (free > 0)
        whole_per_rack = np.bincount(topo.rack[whole], weights=free[whole], minlength=topo.n_racks)
        fitting = whole_per_rack >= num_gpus
        if fitting.any():
            rack = int(np.where(fitting, whole_per_rack, np.inf).argmin())
        else:
            rack = int(whole_per_rack.argmax())
        # whole free nodes: preferred rack first, then by index, while they fit entirely
        order = np.lexsort((np.arange(len(free)), topo.rack != rack))
        taken, left = _take_whole_nodes(order[whole[order]].tolist(), free.tolist(), num_gpus)
        take = np.array(taken, dtype=free.dtype)
        if left == 0:
            return take
        rest = np.where(take > 0, 0, free)
        fits = rest >= left
        if fits.any():
            key = np.lexsort((np.arange(len(free)), rest, topo.rack != rack))
            node = int(key[fits[key]][0])
            take[node] = left
            return take
        return None

    @staticmethod
    def _spread_few(num_gpus: int, free: np.ndarray, topo: Topology) -> np.ndarray | None:
        """:meth:`spread_over_nodes` for a few nodes, in plain Python (same answer)."""
        room, rack_of = free.tolist(), topo.rack_list
        capacity = topo.capacity_list
        whole = [n for n, f in enumerate(room) if f and f == capacity[n]]  # wholly free
        # the racks' wholly free GPUs (racks without any count 0: of those, rack 0 first)
        per_rack: dict[int, int] = {}
        for node in whole:
            r = rack_of[node]
            per_rack[r] = per_rack.get(r, 0) + room[node]
        fitting = [(total, r) for r, total in per_rack.items() if total >= num_gpus]
        if fitting:  # the tightest, then the lowest rack
            rack = min(fitting)[1]
        else:  # the largest, then the lowest rack
            rack = min([(-total, r) for r, total in per_rack.items()], default=(0, 0))[1]
        # whole free nodes, the rack's first, then by index, while each fits entirely
        order = [n for n in whole if rack_of[n] == rack] + [n for n in whole if rack_of[n] != rack]
        take, left = _take_whole_nodes(order, room, num_gpus)
        if left == 0:
            return np.array(take, dtype=free.dtype)
        # the rest on the best-fitting node left, the rack's first, then by index
        best, best_key = -1, None
        for n, f in enumerate(room):
            if f >= left and not take[n]:
                key = (rack_of[n] != rack, f)
                if best_key is None or key < best_key:
                    best, best_key = n, key
        if best < 0:
            return None
        take[best] = left
        return np.array(take, dtype=free.dtype)


@PLACERS.register("first_fit")
class FirstFit(Placer):
    """The lowest-numbered node that fits; larger jobs fill nodes in index order."""

    picks_any_fitting_node = True

    def pick_node(self, num_gpus, free, topo, rng):
        fits = np.flatnonzero(free >= num_gpus)
        return int(fits[0]) if fits.size else None

    can_spread = can_spread_few = staticmethod(_fills_in_order)

    def spread_over_nodes(self, num_gpus, free, topo, rng):
        return fill_in_order(num_gpus, free, np.arange(len(free)))


@PLACERS.register("spread")
class Spread(Placer):
    """Worst fit: the node with the most free GPUs; larger jobs fill the emptiest nodes first."""

    picks_any_fitting_node = True

    def pick_node(self, num_gpus, free, topo, rng):
        node = int(free.argmax())
        return node if free[node] >= num_gpus else None

    can_spread = can_spread_few = staticmethod(_fills_in_order)

    def spread_over_nodes(self, num_gpus, free, topo, rng):
        return fill_in_order(num_gpus, free, np.argsort(-free, kind="stable"))


@PLACERS.register("random")
class RandomPlacer(Placer):
    """A node chosen uniformly among those that fit (seeded); larger jobs fill nodes in a
    random order."""

    picks_any_fitting_node = True

    random = True

    def pick_node(self, num_gpus, free, topo, rng):
        fits = np.flatnonzero(free >= num_gpus)
        return int(rng.choice(fits)) if fits.size else None

    can_spread = can_spread_few = staticmethod(_fills_in_order)

    def spread_over_nodes(self, num_gpus, free, topo, rng):
        order = rng.permutation(np.flatnonzero(free > 0))
        return fill_in_order(num_gpus, free, order)


@PLACERS.register("topology")
class TopologyAware(Placer):
    """Fewest racks, then fewest nodes. A job that fits in one node goes to the best-fitting
    node; a larger job goes to the single rack that holds it on the fewest nodes (ties: the
    rack left with the fewest free GPUs), else over the racks with the most free GPUs."""

    picks_any_fitting_node = True

    def pick_node(self, num_gpus, free, topo, rng):
        return best_fit(num_gpus, free)

    can_spread = can_spread_few = staticmethod(_fills_in_order)  # in one rack or across racks

    def spread_over_nodes(self, num_gpus, free, topo, rng):
        by_free = np.lexsort((np.arange(len(free)), -free))  # emptiest nodes first
        rack_free = np.bincount(topo.rack, weights=free, minlength=topo.n_racks)
        best: tuple[int, float, int] | None = None
        for rack in np.flatnonzero(rack_free >= num_gpus):
            nodes = by_free[topo.rack[by_free] == rack]
            needed = int(np.searchsorted(np.cumsum(free[nodes]), num_gpus) + 1)
            key = (needed, rack_free[rack], int(rack))
            best = key if best is None or key < best else best
        if best is not None:
            order = by_free[topo.rack[by_free] == best[2]]
            return fill_in_order(num_gpus, free, order)
        rack_order = np.argsort(-rack_free, kind="stable")
        rank_of_rack = np.empty(topo.n_racks, dtype=int)
        rank_of_rack[rack_order] = np.arange(topo.n_racks)
        order = np.lexsort((np.arange(len(free)), -free, rank_of_rack[topo.rack]))
        return fill_in_order(num_gpus, free, order)
