"""Step and sync times the Pollux artifact interpolates for placements it did not measure.

The artifact's simulator (petuum/adaptdl, branch osdi21-artifact, ``simulator/``) looks a
placement up in ``traces/<app>/placements.csv``; a placement not listed there gets its step
and sync times from a linear interpolation over a Delaunay triangulation (scipy's
``LinearNDInterpolator``) of (nodes, replicas, local batch size): the measured placements
averaged per (nodes, replicas, local batch size), then the rows of ``scalability.csv``.
AnalySIM has no scipy, so this tool asks the artifact's own ``Application.get_throughput``
once for those values (it is run as an oracle, outside AnalySIM), for every
application, every validated batch size, every replica count a job can hold (the ones the
artifact's workloads ask for, and under Optimus every count from 1 to its cap of batch size
over the smallest local batch size, at most 64) and every node count such a job can span on
16 nodes of 4 GPUs, at the local batch size such a job runs at;
``analysim/compat/pollux_model.py`` reads the table. A key outside the triangulation (the
artifact's own lookup fails there) is left out.

Usage (with the artifact's requirements, not AnalySIM's; this table was made with Python
3.11, numpy 1.23.5, pandas 1.5.3, scipy 1.9.3)::

    python tools/pollux_interpolated.py ARTIFACT/simulator \
        > analysim/data/pollux/interpolated.csv
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

REPLICAS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def atomic_bsz(batch: int, replicas: int, low: int, high: int, init: int, top: int) -> int:
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / high - 1e-8) - 1
    if replicas == 1 and batch > init:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    return min(atomic, int(top / (replicas * (accum + 1))))


def shapes(nodes: int, replicas: int) -> Iterator[tuple[int, ...]]:
    """Placements of ``replicas`` GPUs over ``nodes`` nodes of 1 to 4 GPUs each."""
    if nodes == 0:
        if replicas == 0:
            yield ()
        return
    for first in range(1, 5):
        if nodes - 1 <= replicas - first <= 4 * (nodes - 1):
            for rest in shapes(nodes - 1, replicas - first):
                yield (first, *rest)


def replica_counts(app, batch: int) -> set[int]:
    """GPU counts a job of global ``batch`` can hold: the workloads' (Tiresias keeps the
    CSV's) and every count up to Optimus's cap (``batch // min_local_bsz``, ncf 1)."""
    low = int(app.min_local_bsz)
    cap = 1 if app.name == "ncf" else min(64, batch // low)
    return {r for r in (*REPLICAS, *range(1, cap + 1)) if r * low <= app.max_batch_size}


def rows_of(app, measured: set[int]) -> list[tuple]:
    """The artifact's own interpolation (``Application.get_throughput``) at every key."""
    low, high = int(app.min_local_bsz), int(app.max_local_bsz)
    sizes_of: dict[int, set[int]] = {}
    for batch in app.validation:
        for replicas in replica_counts(app, batch):
            bsz = atomic_bsz(batch, replicas, low, high, app.init_batch_size, app.max_batch_size)
            sizes_of.setdefault(replicas, set()).add(bsz)
    rows = []
    for replicas in sorted(sizes_of):
        sizes = sorted(sizes_of[replicas])
        for nodes in range(math.ceil(replicas / 4), min(replicas, 16) + 1):
            shape = next(
                (
                    s
                    for s in shapes(min(nodes, 16), replicas)
                    if int("".join(map(str, s))) not in measured and canonical(s) == s
                ),
                None,
            )
            if shape is None:
                continue  # every such placement was measured
            for bsz in sizes:
                try:
                    step, sync = app.get_throughput(shape, bsz)
                except AssertionError:  # outside the triangulation: the artifact fails too
                    continue
                rows.append((app.name, nodes, replicas, bsz, repr(float(step)), repr(float(sync))))
    return rows


def canonical(shape: tuple[int, ...]) -> tuple[int, ...]:
    return min(shape[i:] + shape[:i] for i in range(len(shape)))


def main(simulator: str) -> None:
    sys.path.insert(0, simulator)
    from applications import APPLICATIONS  # the artifact's module, run as its oracle

    print("application,num_nodes,num_replicas,local_bsz,step_time,sync_time")
    for name in sorted(APPLICATIONS):
        app = APPLICATIONS[name]
        measured = set(app.placements.placement.values.tolist())
        for row in rows_of(app, measured):
            print(",".join(map(str, row)))


if __name__ == "__main__":
    main(sys.argv[1])
