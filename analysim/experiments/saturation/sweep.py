"""The saturation experiment over placements x seeds, on Dask (the sweep runner's local
cluster) or in this process."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from analysim.experiments.saturation.run import saturate

log = logging.getLogger(__name__)

FGD_STUDY = ("fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering", "random")


def _one(
    workload: Any,
    cluster: Any,
    placement: Any,
    seed: int,
    inflate: float,
    orders: Callable[[int], tuple[Any, Any]] | None,
) -> pd.DataFrame:
    arrivals, tie_break = orders(seed) if orders is not None else (None, None)
    curve = saturate(
        workload,
        cluster,
        placement=placement,
        inflate=inflate,
        seed=seed,
        arrivals=arrivals,
        tie_break=tie_break,
    )
    name = placement if isinstance(placement, str) else getattr(placement, "name", "custom")
    return curve.assign(placement=name, seed=seed)


def saturate_sweep(
    workload: Any,
    cluster: Any = None,
    *,
    placements: Sequence[Any] = FGD_STUDY,
    seeds: Iterable[int] = range(42, 52),
    inflate: float = 1.3,
    orders: Callable[[int], tuple[Any, Any]] | None = None,
    workers: int | None = None,
    client: Any = None,
) -> pd.DataFrame:
    """Saturation curves for every placement and seed, in one tidy frame (the curve columns
    plus ``placement`` and ``seed``).

    ``orders(seed) -> (arrivals, tie_break)`` replays given arrival orders (e.g. the peer's
    files) instead of sampling. ``client``: a Dask client; ``workers=N``: a local Dask
    cluster of N processes (``analysim.sweep``'s); neither: in this process.
    """
    from analysim.experiments.saturation.run import check_inflate, check_seed

    inflate = check_inflate(inflate)
    seeds = [check_seed(s) for s in seeds]
    if isinstance(workload, str):
        from analysim.traces.openb import read_openb_tasks

        workload = read_openb_tasks(workload)
    runs = [(p, s) for p in placements for s in seeds]
    if client is None and not workers:
        return pd.concat(
            [_one(workload, cluster, p, s, inflate, orders) for p, s in runs], ignore_index=True
        )
    if client is not None:
        return _on(client, workload, cluster, runs, inflate, orders)
    from analysim.sweep.runner import local_cluster

    with local_cluster(int(workers)) as local:
        return _on(local, workload, cluster, runs, inflate, orders)


def _on(
    client: Any, workload: Any, cluster: Any, runs: list, inflate: float, orders: Any
) -> pd.DataFrame:
    data = client.scatter(workload, broadcast=True, hash=False)
    nodes = client.scatter(cluster, broadcast=True, hash=False) if cluster is not None else None
    futures = [client.submit(_one, data, nodes, p, s, inflate, orders, pure=False) for p, s in runs]
    log.info("saturate_sweep: %d runs on %s", len(runs), client.scheduler.address)
    return pd.concat(client.gather(futures), ignore_index=True)
