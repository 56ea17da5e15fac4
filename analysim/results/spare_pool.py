"""Which nodes are spares at a moment of a run, rebuilt from its config and events
(``SimConfig.spare_nodes``; the rules in ``engine/spares.py`` and ``docs/failures.md``), for
``explain``: a spare's GPUs are neither free nor in use."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysim.inputs.failures import spare_node_indices


def spare_nodes_at(spares: Any, cluster: Any, events: pd.DataFrame) -> np.ndarray:
    """Per node of ``cluster``: whether it is held as a spare after ``events`` (a run's
    events up to a moment, in order), given the config's ``spares``. A ``resume`` with
    ``from_nodes`` is a job restarted on a spare: the spare it went to leaves the pool and
    the node it left joins it once repaired (``node_up``); a spare down is not held."""
    names = cluster.nodes["node"].astype(str).tolist()
    held = np.zeros(len(names), dtype=bool)
    if not spares:
        return held
    index = {name: i for i, name in enumerate(names)}
    pool = set(spare_node_indices(spares, names, cluster.name))
    replaced: set[int] = set()
    down: set[int] = set()
    kinds = events["event"].astype(str).tolist()
    nodes = events["nodes"].tolist()
    left = events["from_nodes"].tolist() if "from_nodes" in events else [None] * len(kinds)
    for kind, where, source in zip(kinds, nodes, left, strict=True):
        if kind == "node_down":
            down.add(index[str(where)])
        elif kind == "node_up":
            node = index[str(where)]
            down.discard(node)
            if node in replaced:
                replaced.discard(node)
                pool.add(node)
        elif kind == "resume" and isinstance(source, str):
            stood_in = [index[n] for n in str(where).split(",") if index[n] in pool]
            pool.difference_update(stood_in)
            replaced.add(index[source])
    for node in pool - down:
        held[node] = True
    return held


__all__ = ["spare_nodes_at"]
