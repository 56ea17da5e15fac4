"""The resource model of GPU sharing: task shapes and node state in milli units.

A task asks for ``cpu_milli`` and ``memory_mib`` on one node and ``num_gpus`` GPUs of
``gpu_milli`` each (1-1000; below 1000 only with one GPU: a *share* of one GPU), optionally
restricted to GPU models (``gpu_type`` like ``"V100M16|V100M32"``). A CPU-only task has
``num_gpus = 0``. A node has CPU, memory and GPUs of one model; each GPU holds tasks while
their shares add up to at most 1000 milli.

Fit rules (those of the FGD simulator, see ``docs/saturation.md``): a task fits a node when
the node's CPU and memory left cover it, its GPU model is allowed and, for a GPU task, at
least ``num_gpus`` GPUs have ``gpu_milli`` left (a share needs one GPU with enough left; a
whole-GPU task, ``gpu_milli = 1000``, needs fully free GPUs). Memory only filters nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysim.inputs.validation import MAX_CLUSTER_GPUS, MAX_JOB_GPUS, MAX_NODE_AMOUNT

MILLI = 1000
TASK_COLUMNS = ("cpu_milli", "memory_mib", "num_gpus", "gpu_milli")
NODE_COLUMNS = ("node", "cpu_milli", "memory_mib", "gpus", "gpu_type")


#: the largest value of each column (the bounds of ``analysim.inputs.validation``: far past any
#: machine, well inside an int64, so sums never wrap around)
MAX_AMOUNT = {
    "cpu_milli": MAX_NODE_AMOUNT,
    "memory_mib": MAX_NODE_AMOUNT,
    "num_gpus": MAX_JOB_GPUS,
    "gpu_milli": MAX_NODE_AMOUNT,
    "gpus": MAX_CLUSTER_GPUS,
}


class ResourceError(ValueError):
    """A task or node table breaks the resource model (names column, row and value)."""


def _bad(frame: pd.DataFrame, mask: np.ndarray, table: str, column: str, rule: str) -> None:
    if mask.any():
        rows = np.flatnonzero(mask)
        first = rows[0]
        label = frame.index[first]
        value = frame[column].iloc[first]
        value = value.item() if isinstance(value, np.generic) else value
        raise ResourceError(
            f"{table}: column {column!r} must be {rule}; row {label!r} has "
            f"{value!r} ({len(rows)} bad row(s))"
        )


def _whole(
    frame: pd.DataFrame, table: str, column: str, default: float | None = None
) -> np.ndarray:
    if column not in frame.columns:
        if default is None:
            raise ResourceError(f"{table}: missing column {column!r}; found {list(frame.columns)}")
        return np.full(len(frame), default, dtype=np.int64)
    raw = frame[column]
    if pd.api.types.is_bool_dtype(raw.dtype):
        _bad(frame, np.ones(len(frame), dtype=bool), table, column, "a number, not True/False")
    flags = raw.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    _bad(frame, flags, table, column, "a number, not True/False")
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype="float64")
    _bad(frame, np.isnan(values) | (values < 0), table, column, "a number >= 0")
    _bad(frame, values > MAX_AMOUNT[column], table, column, f"at most {MAX_AMOUNT[column]:,}")
    _bad(frame, values != np.round(values), table, column, "a whole number")
    return values.astype(np.int64)


def allowed_models(spec: object) -> frozenset[str] | None:
    """The GPU models a ``gpu_type`` constraint allows (``"A|B"``), ``None`` for any."""
    if spec is None or (isinstance(spec, float) and np.isnan(spec)):
        return None
    names = frozenset(x for x in str(spec).split("|") if x)
    return names or None


@dataclass(frozen=True)
class Tasks:
    """Task requests as arrays (one entry per task, in the table's order)."""

    names: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    num_gpus: np.ndarray
    gpu_milli: np.ndarray
    gpu_type: np.ndarray  # object: the constraint string, "" for none

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, table: str = "tasks") -> Tasks:
        """Check and convert a task table (columns ``cpu_milli, memory_mib, num_gpus,
        gpu_milli`` and optional ``gpu_type`` and ``name``/``job_id``).

        A missing ``gpu_milli`` means whole GPUs; a CPU-only task has ``gpu_milli`` 0.
        """
        if not isinstance(frame, pd.DataFrame):
            raise ResourceError(f"{table}: expected a DataFrame, got {type(frame).__name__}")
        num = _whole(frame, table, "num_gpus")
        default_milli = None if "gpu_milli" in frame.columns else MILLI
        milli = _whole(frame, table, "gpu_milli", default_milli)
        milli = np.where(num == 0, 0, milli)
        _bad(
            frame,
            (num > 0) & ((milli < 1) | (milli > MILLI)),
            table,
            "gpu_milli",
            "between 1 and 1000 for a task with GPUs",
        )
        _bad(
            frame,
            (milli < MILLI) & (num > 1),
            table,
            "num_gpus",
            "1 for a share of a GPU (gpu_milli < 1000)",
        )
        cpu = _whole(frame, table, "cpu_milli", 0)
        memory = _whole(frame, table, "memory_mib", 0)
        if "gpu_type" in frame.columns:
            spec = frame["gpu_type"].astype(object)
            spec = spec.where(spec.notna(), "").astype(str).to_numpy(dtype=object)
        else:
            spec = np.full(len(frame), "", dtype=object)
        spec = np.where(num == 0, "", spec)
        name_col = next((c for c in ("name", "job_id") if c in frame.columns), None)
        names = (
            frame[name_col].astype(str).to_numpy(dtype=object)
            if name_col
            else np.array([f"task-{i}" for i in range(len(frame))], dtype=object)
        )
        return cls(names, cpu, memory, num, milli, spec)

    def __len__(self) -> int:
        return len(self.cpu)

    def total_gpu_milli(self) -> np.ndarray:
        return self.gpu_milli * self.num_gpus

    def take(self, index: np.ndarray) -> Tasks:
        return Tasks(
            *(
                a[index]
                for a in (
                    self.names,
                    self.cpu,
                    self.memory,
                    self.num_gpus,
                    self.gpu_milli,
                    self.gpu_type,
                )
            )
        )


@dataclass(frozen=True)
class Nodes:
    """Node capacities as arrays."""

    names: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    gpus: np.ndarray
    model: np.ndarray  # object: GPU model name

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, table: str = "nodes") -> Nodes:
        """Check and convert a node table (``node, cpu_milli, memory_mib, gpus, gpu_type``)."""
        if not isinstance(frame, pd.DataFrame):
            raise ResourceError(f"{table}: expected a DataFrame, got {type(frame).__name__}")
        for column in NODE_COLUMNS:
            if column not in frame.columns:
                raise ResourceError(
                    f"{table}: missing column {column!r}; a node table needs "
                    f"{list(NODE_COLUMNS)} (found {list(frame.columns)})"
                )
        gpus = _whole(frame, table, "gpus")
        names = frame["node"].astype(str)
        _bad(frame, names.duplicated(keep="first").to_numpy(), table, "node", "unique names")
        _bad(frame, frame["node"].isna().to_numpy(), table, "node", "a name (not empty)")
        return cls(
            names.to_numpy(dtype=object),
            _whole(frame, table, "cpu_milli"),
            _whole(frame, table, "memory_mib"),
            gpus,
            frame["gpu_type"].fillna("").astype(str).to_numpy(dtype=object),
        )

    def __len__(self) -> int:
        return len(self.cpu)

    @property
    def total_gpu_milli(self) -> int:
        return int(self.gpus.sum()) * MILLI


def check_tasks_fit_somewhere(tasks: Tasks, nodes: Nodes) -> None:
    """Raise naming the first task whose CPU, memory or GPU count exceeds every node."""
    for label, need, have in (
        ("cpu_milli", tasks.cpu, nodes.cpu.max()),
        ("memory_mib", tasks.memory, nodes.memory.max()),
        ("num_gpus", tasks.num_gpus, nodes.gpus.max()),
    ):
        too_big = need > have
        if too_big.any():
            i = int(np.flatnonzero(too_big)[0])
            raise ResourceError(
                f"tasks: column {label!r} of task {tasks.names[i]!r} is {int(need[i])}, more "
                f"than any node has ({int(have)}); {int(too_big.sum())} such task(s)"
            )


def access_matrix(specs: np.ndarray, models: np.ndarray) -> np.ndarray:
    """``[i, j]``: may a task with constraint ``specs[i]`` use GPU model ``models[j]``."""
    out = np.ones((len(specs), len(models)), dtype=bool)
    for i, spec in enumerate(specs):
        allowed = allowed_models(spec)
        if allowed is not None:
            out[i] = [m in allowed for m in models]
    return out


class NodeState:
    """What is left on every node: CPU, memory, milli on each GPU (padded with 0 beyond a
    node's GPU count), and the task kinds placed on it (for ``gpu_clustering``).

    ``place`` is the only writer; it checks every change (no GPU over 1000 milli, no node
    over its CPU or memory).
    """

    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes
        width = max(int(nodes.gpus.max()), 1)
        self.cpu_left = nodes.cpu.copy()
        self.mem_left = nodes.memory.copy()
        self.gpu_left = np.zeros((len(nodes), width), dtype=np.int64)
        for i, g in enumerate(nodes.gpus):
            self.gpu_left[i, :g] = MILLI
        self.models, self.model_code = np.unique(nodes.model, return_inverse=True)
        self.kinds: list[dict[str, int]] = [{} for _ in range(len(nodes))]
        self.version = np.zeros(len(nodes), dtype=np.int64)
        self._keys: list[tuple] = [self._key(i) for i in range(len(nodes))]

    def _key(self, node: int) -> tuple:
        gpus = tuple(sorted(self.gpu_left[node, : self.nodes.gpus[node]].tolist(), reverse=True))
        return (int(self.model_code[node]), int(self.cpu_left[node]), gpus)

    def key(self, node: int) -> tuple:
        """(model code, CPU left, GPU milli left sorted high to low): all a score needs."""
        return self._keys[node]

    def gpus_of(self, node: int) -> list[int]:
        return self.gpu_left[node, : self.nodes.gpus[node]].tolist()

    def feasible(
        self, cpu: int, memory: int, num_gpus: int, milli: int, model_ok: np.ndarray
    ) -> np.ndarray:
        """Boolean mask of the nodes a task fits (the fit rules above)."""
        ok = (self.cpu_left >= cpu) & (self.mem_left >= memory)
        if num_gpus > 0:
            ok &= model_ok[self.model_code]
            if num_gpus == 1:
                ok &= self.gpu_left.max(axis=1) >= milli
            else:
                ok &= (self.gpu_left >= milli).sum(axis=1) >= num_gpus
        return ok

    def place(
        self, node: int, gpus: list[int], cpu: int, memory: int, milli: int, kind: str | None
    ) -> None:
        """Take ``cpu``, ``memory`` and ``milli`` on each GPU in ``gpus`` of ``node``."""
        if self.cpu_left[node] < cpu or self.mem_left[node] < memory:
            raise AssertionError(f"node {self.nodes.names[node]}: CPU or memory over capacity")
        for g in gpus:
            if g >= self.nodes.gpus[node] or self.gpu_left[node, g] < milli:
                raise AssertionError(f"node {self.nodes.names[node]}: GPU {g} over 1000 milli")
        self.cpu_left[node] -= cpu
        self.mem_left[node] -= memory
        for g in gpus:
            self.gpu_left[node, g] -= milli
        if kind is not None:
            self.kinds[node][kind] = self.kinds[node].get(kind, 0) + 1
        self.version[node] += 1
        self._keys[node] = self._key(node)


def task_kind(num_gpus: int, milli: int) -> str | None:
    """The GPU-affinity tag of a task (``share-gpu``, ``N-gpu``; ``None`` for CPU-only)."""
    if num_gpus == 0:
        return None
    if num_gpus == 1 and milli < MILLI:
        return "share-gpu"
    if milli == MILLI:
        return f"{num_gpus}-gpu"
    return None
