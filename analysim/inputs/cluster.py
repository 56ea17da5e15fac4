"""Physical topology (racks, nodes, GPUs) and logical partition (virtual clusters).

A virtual cluster (VC) either owns whole nodes (the ``vc`` column of the nodes table, as in
Helios) or holds a GPU quota over the shared pool of nodes that no VC owns. A cluster with
neither is one shared pool that every job may use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from typing import Any

import numpy as np
import pandas as pd

from analysim.errors import InputTypeError, describe_rows
from analysim.inputs.validation import MAX_CLUSTER_GPUS, MAX_NODE_AMOUNT, bounded

NODE_COLUMNS = ("node", "rack", "gpus")
DEFAULT_GPU_TYPE = "gpu"
#: optional node capacities of resource mode (CPU in thousandths of a core, memory in MiB)
RESOURCE_COLUMNS = ("cpu_milli", "memory_mib")


def _fail(frame: pd.DataFrame, mask, column: str, expected: str) -> None:
    raise ValueError(
        f"Cluster: column {column!r} must be {expected}; "
        + describe_rows(frame, list(mask), column, "node")
    )


def validate_nodes(frame: pd.DataFrame) -> pd.DataFrame:
    """Check a nodes table (``node, rack, gpus`` and optional ``gpu_type, vc``)."""
    if not isinstance(frame, pd.DataFrame):
        raise InputTypeError(f"Cluster: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in NODE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"Cluster: missing column(s) {missing}; a nodes table needs {list(NODE_COLUMNS)}"
            f" (optional: gpu_type, vc; found {list(frame.columns)})"
        )
    if frame.empty:
        raise ValueError("Cluster: the nodes table is empty; a cluster needs at least one node")
    frame = frame.reset_index(drop=True)
    _check_names(frame)
    out = pd.DataFrame({"node": frame["node"].astype(str), "rack": frame["rack"].astype(str)})
    repeated = out["node"].duplicated(keep=False)
    if repeated.any():
        _fail(out, repeated, "node", "unique (a node listed twice, e.g. in two VCs)")
    out["gpus"] = _gpu_counts(frame)
    gpu_type = frame["gpu_type"] if "gpu_type" in frame.columns else None
    out["gpu_type"] = (
        DEFAULT_GPU_TYPE if gpu_type is None else gpu_type.fillna(DEFAULT_GPU_TYPE).astype(str)
    )
    vc = frame["vc"] if "vc" in frame.columns else pd.Series([None] * len(frame))
    out["vc"] = [None if pd.isna(v) or str(v) == "" else str(v) for v in vc]
    for column in RESOURCE_COLUMNS:  # optional capacities of resource mode
        if column in frame.columns:
            out[column] = _amounts(frame, column)
    return out


def _amounts(frame: pd.DataFrame, column: str) -> pd.Series:
    """An optional node capacity (``cpu_milli``, ``memory_mib``): whole numbers >= 0."""
    values = frame[column]
    flags = values.map(lambda v: isinstance(v, (bool, np.bool_)))
    if flags.any():
        _fail(frame, flags, column, "a number")
    numbers = pd.to_numeric(values, errors="coerce")
    bad = (
        numbers.isna()
        | (numbers < 0)
        | (numbers != np.round(numbers))
        | (numbers > MAX_NODE_AMOUNT)
    )
    if bad.any():
        _fail(frame, bad, column, f"a whole number from 0 to {MAX_NODE_AMOUNT:,}")
    return numbers.astype("int64")


def _check_names(frame: pd.DataFrame) -> None:
    """Node and rack names must be present, non-blank labels (not None or NaN)."""
    for column in ("node", "rack"):
        values = frame[column]
        blank = values.isna() | (values.astype(str).str.strip() == "")
        if blank.any():
            _fail(frame, blank, column, "a non-empty name (not None or NaN)")


def _gpu_counts(frame: pd.DataFrame) -> pd.Series:
    """The ``gpus`` column as int64: whole numbers from 1 to ``MAX_CLUSTER_GPUS`` in all
    (True/False are not counts)."""
    values = frame["gpus"]
    flags = pd.api.types.is_bool_dtype(values.dtype) or (
        values.dtype == object and any(isinstance(v, (bool, np.bool_)) for v in values)
    )
    if flags:
        _fail(frame, values.map(lambda v: isinstance(v, (bool, np.bool_))), "gpus", "a number")
    gpus = pd.to_numeric(values, errors="coerce")
    bad = gpus.isna() | (gpus < 1) | (gpus != np.round(gpus)) | (gpus > MAX_CLUSTER_GPUS)
    if bad.any():
        _fail(frame, bad, "gpus", f"a whole number from 1 to {MAX_CLUSTER_GPUS:,}")
    if gpus.sum() > MAX_CLUSTER_GPUS:
        raise ValueError(
            f"Cluster: column 'gpus' adds up to {gpus.sum():,.0f} GPUs; a cluster may have at most "
            f"{MAX_CLUSTER_GPUS:,} (analysim.inputs.validation.MAX_CLUSTER_GPUS)"
        )
    return gpus.astype("int64")


def _check_shape(racks: Any, nodes_per_rack: Any, gpus_per_node: Any) -> None:
    """Whole numbers >= 1 whose product is at most ``MAX_CLUSTER_GPUS``, checked before any
    node is built (a cluster of 10^12 GPUs would otherwise exhaust memory first)."""
    sizes = {"racks": racks, "nodes_per_rack": nodes_per_rack, "gpus_per_node": gpus_per_node}
    for name, value in sizes.items():
        bounded(value, f"Cluster: {name}", low=1, high=MAX_CLUSTER_GPUS, whole=True)
    total = int(racks) * int(nodes_per_rack) * int(gpus_per_node)
    if total > MAX_CLUSTER_GPUS:
        raise ValueError(
            f"Cluster: racks x nodes_per_rack x gpus_per_node = {total:,} GPUs; a cluster may "
            f"have at most {MAX_CLUSTER_GPUS:,}"
        )


def validate_quotas(quotas: Mapping[str, Any]) -> dict[str, int]:
    """``{vc: gpus}`` with whole numbers >= 0, naming the VC of any other value."""
    clean = {}
    for vc, quota in quotas.items():
        whole = isinstance(quota, (int, np.integer)) or (
            isinstance(quota, (float, np.floating)) and float(quota).is_integer()
        )
        if isinstance(quota, bool) or not whole or not 0 <= quota <= MAX_CLUSTER_GPUS:
            raise ValueError(
                f"Cluster: quota of VC {vc!r} must be a whole number from 0 to "
                f"{MAX_CLUSTER_GPUS:,}, got {quota!r}"
            )
        clean[str(vc)] = int(quota)
    return clean


class Cluster:
    """Nodes (``.nodes``: node, rack, gpus, gpu_type, vc) and per-VC quotas over the pool.

    A cluster is read-only: ``nodes`` and ``quotas`` give new copies on every read (the
    frame shares the validated data, pandas copy-on-write), so editing them never reaches
    the cluster a run uses. To change nodes, edit the frame and call :meth:`from_frame`.
    """

    __slots__ = ("_nodes", "_quotas", "_vcs", "name")

    def __init__(
        self, nodes: pd.DataFrame, quotas: Mapping[str, int] | None = None, name: str = "cluster"
    ) -> None:
        object.__setattr__(self, "_nodes", nodes)
        object.__setattr__(self, "_quotas", dict(quotas or {}))
        object.__setattr__(self, "name", name)
        self._check_tenancy()

    def __setattr__(self, key: str, value: object) -> None:
        raise FrozenInstanceError(
            f"Cluster is read-only: cannot set {key!r}; build a new one with "
            "Cluster.from_frame(...)"
        )

    def __delattr__(self, key: str) -> None:
        raise FrozenInstanceError(f"Cluster is read-only: cannot delete {key!r}")

    def __reduce__(self) -> tuple:
        return (type(self), (self._nodes, self._quotas, self.name))

    @property
    def nodes(self) -> pd.DataFrame:
        """The validated node table: a new frame on every read, sharing the cluster's data
        (an edit to it copies first and never reaches the cluster)."""
        return self._nodes.copy(deep=False)

    @property
    def quotas(self) -> dict[str, int]:
        """``{vc: GPUs}`` of the VCs holding a quota over the pool (a copy)."""
        return dict(self._quotas)

    def _check_tenancy(self) -> None:
        owners = {str(v) for v in self._nodes["vc"].dropna().tolist()}
        object.__setattr__(self, "_vcs", sorted(owners | set(self._quotas)))
        for vc, quota in self._quotas.items():
            if vc in owners:
                raise ValueError(
                    f"Cluster: VC {vc!r} both owns nodes and holds a quota; choose one"
                )
            if not isinstance(quota, (int, np.integer)) or quota < 0:
                raise ValueError(
                    f"Cluster: quota of VC {vc!r} must be a whole number >= 0, got {quota!r}"
                )
        pool = self.pool_gpus
        total_quota = sum(self._quotas.values())
        if total_quota > pool:
            raise ValueError(
                f"Cluster: quotas add up to {total_quota} GPUs but the shared pool (nodes no VC "
                f"owns) has {pool}; quotas: {self.quotas}"
            )

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_frame(
        cls, nodes: pd.DataFrame, quotas: Mapping[str, int] | None = None, name: str = "cluster"
    ) -> Cluster:
        """Build from a nodes table; ``quotas={vc: gpus}`` for VCs sharing the unowned pool."""
        return cls(validate_nodes(nodes), validate_quotas(quotas or {}), name)

    @classmethod
    def uniform(
        cls,
        racks: int,
        nodes_per_rack: int,
        gpus_per_node: int,
        *,
        gpu_type: str = DEFAULT_GPU_TYPE,
        vc_nodes: Mapping[str, int] | None = None,
        quotas: Mapping[str, int] | None = None,
        name: str = "cluster",
    ) -> Cluster:
        """Racks of identical nodes; ``vc_nodes={vc: n}`` gives VCs whole nodes in order."""
        _check_shape(racks, nodes_per_rack, gpus_per_node)
        count = racks * nodes_per_rack
        width = len(str(count - 1))
        owners: list[str | None] = []
        for vc, n in (vc_nodes or {}).items():
            owners += [vc] * int(n)
        if len(owners) > count:
            raise ValueError(f"Cluster: VCs ask for {len(owners)} nodes but there are {count}")
        owners += [None] * (count - len(owners))
        nodes = pd.DataFrame(
            {
                "node": [f"n{i:0{width}d}" for i in range(count)],
                "rack": [f"r{i // nodes_per_rack}" for i in range(count)],
                "gpus": gpus_per_node,
                "gpu_type": gpu_type,
                "vc": owners,
            }
        )
        return cls.from_frame(nodes, quotas, name)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Cluster:
        """Build from ``{"nodes": [{node, rack, gpus, ...}], "quotas": {...}}`` or the
        keyword arguments of :meth:`uniform` (``racks``, ``nodes_per_rack``, ...)."""
        spec = dict(spec)
        if "nodes" in spec:
            return cls.from_frame(
                pd.DataFrame(spec["nodes"]), spec.get("quotas"), spec.get("name", "cluster")
            )
        try:
            return cls.uniform(**spec)
        except TypeError as exc:
            raise ValueError(
                "Cluster: a cluster dict needs 'nodes' or racks/nodes_per_rack/gpus_per_node "
                f"({exc})"
            ) from None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description that :meth:`from_dict` turns back into this cluster."""
        return {
            "name": self.name,
            "nodes": self._nodes.to_dict("records"),
            "quotas": dict(self.quotas),
        }

    # -- facts ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"Cluster({self.name!r}: {self.total_gpus} GPUs on {len(self._nodes)} nodes in "
            f"{self._nodes['rack'].nunique()} racks, {len(self.vcs)} VCs)"
        )

    @property
    def total_gpus(self) -> int:
        return int(self._nodes["gpus"].sum())

    @property
    def pool_gpus(self) -> int:
        """GPUs on nodes that no VC owns (the shared pool quotas are drawn from)."""
        return int(self._nodes.loc[self._nodes["vc"].isna(), "gpus"].sum())

    @property
    def vcs(self) -> list[str]:
        """Names of the VCs (node owners and quota holders), sorted."""
        return list(self._vcs)

    @property
    def partitioned(self) -> bool:
        """Whether the cluster defines VCs at all (otherwise it is one shared pool)."""
        return bool(self.vcs)

    def vc_capacity(self) -> dict[str, int]:
        """GPUs each VC may use: the GPUs of its nodes, or its quota."""
        owned = self._nodes.dropna(subset=["vc"]).groupby("vc")["gpus"].sum()
        capacity = {str(vc): int(n) for vc, n in owned.items()}
        capacity.update(self.quotas)
        return capacity
