"""The Helios simulator's ``consolidate`` placer, on the free-GPU counts of one VC's nodes.

Rules (``docs/compat.md``; every node has 8 GPUs):

* the VC must have at least ``n`` free GPUs in all;
* ``n <= 8``: the one node with the fewest free GPUs that still fits, ties to the lowest index;
* ``n = 8k``: ``k`` completely free nodes, the lowest-numbered ones;
* any other ``n > 8``: ``n // 8`` completely free nodes (lowest-numbered) and ``n % 8`` GPUs on
  the next node in the order "most free GPUs first, ties lowest index" (another free node if
  one is left, else the fullest-free partly used node); the job does not fit if that node has
  fewer than ``n % 8`` free GPUs.
"""

from __future__ import annotations

NODE_GPUS = 8

Allocation = list[tuple[int, int]]  # (node index within the VC, GPUs taken there)


def place(free: list[int], n: int, total_free: int) -> Allocation | None:
    """Where a job of ``n`` GPUs goes on nodes with ``free`` GPUs, or ``None`` if it does not
    fit. ``total_free`` is ``sum(free)`` (kept by the caller)."""
    if total_free < n:
        return None
    if n <= NODE_GPUS:
        return _one_node(free, n)
    whole, rest = divmod(n, NODE_GPUS)
    empty = [i for i, f in enumerate(free) if f == NODE_GPUS]
    if len(empty) < whole:
        return None
    taken = [(i, NODE_GPUS) for i in empty[:whole]]
    if rest == 0:
        return taken
    if len(empty) > whole:  # the next node in most-free-first order is another free node
        return [*taken, (empty[whole], rest)]
    node = _most_free(free)
    if node is None or free[node] < rest:
        return None
    return [*taken, (node, rest)]


def _one_node(free: list[int], n: int) -> Allocation | None:
    """Best fit: fewest free GPUs among the nodes with at least ``n`` free, lowest index."""
    best = -1
    best_free = NODE_GPUS + 1
    for i, f in enumerate(free):
        if n <= f < best_free:
            best, best_free = i, f
    return None if best < 0 else [(best, n)]


def _most_free(free: list[int]) -> int | None:
    """The partly used node with the most free GPUs (ties: lowest index), or ``None``."""
    best = None
    best_free = 0
    for i, f in enumerate(free):
        if best_free < f < NODE_GPUS:
            best, best_free = i, f
    return best
