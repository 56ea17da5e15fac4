"""A nodes table in a CSV or parquet file: the cluster of one's own data."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa

from analysim.inputs.cluster import NODE_COLUMNS, RESOURCE_COLUMNS, Cluster
from analysim.traces._io import existing_file, read_csv
from analysim.traces.report import TraceError

OPTIONAL = ("gpu_type", "vc", *RESOURCE_COLUMNS)


def read_nodes_table(
    path: str | Path, quotas: dict[str, int] | None = None, *, name: str | None = None
) -> Cluster:
    """The :class:`~analysim.inputs.cluster.Cluster` of the nodes table at ``path``: one row per
    node with columns ``node``, ``rack``, ``gpus`` and optionally ``gpu_type`` and ``vc``
    (the VC owning the node; empty: the shared pool), as
    :meth:`Cluster.from_frame <analysim.inputs.cluster.Cluster.from_frame>` takes them.
    ``quotas={vc: gpus}`` for VCs sharing the pool. A bad value is a ``ValueError`` naming
    the file and the row (row 0 is the first line after the header)."""
    path = existing_file(path, "a nodes table (CSV or parquet)")
    if path.suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except (pa.ArrowException, OSError, ValueError) as error:
            raise TraceError(path, f"not a readable parquet file ({error})") from None
    else:
        frame, _ = read_csv(
            path,
            required=list(NODE_COLUMNS),
            optional=OPTIONAL,
            strings=["node", "rack", "gpu_type", "vc"],
        )
    try:
        return Cluster.from_frame(frame, quotas, name or path.stem)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error} (file: {path})") from None
