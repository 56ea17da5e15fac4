"""Shared hypothesis strategies: small random clusters, workloads and configurations.

Everything here is small on purpose (a handful of nodes, at most a dozen jobs of at most a
quarter of an hour) so that property tests can step through whole runs, even without
leaping, in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from hypothesis import strategies as st

from analysim import Cluster, SimConfig, Workload
from analysim.inputs.domains import allowed_types
from analysim.policies import PLACERS, SCHEDULERS

GPU_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)
NODE_SIZES = (2, 4, 8)
VC_NAMES = ("a", "b", "c")
MODES = ("pool", "nodes", "quota")
GPU_TYPES = ("V100", "A100")
JOB_TYPES = (None, None, "V100", "A100", "V100|A100")  # "any type" twice as likely
QUANTA = (1, 5, 60)


@dataclass(frozen=True)
class ClusterCase:
    """A random cluster, how it is partitioned, and the VC names jobs may use."""

    cluster: Cluster
    mode: str  # "pool" (no VCs), "nodes" (VCs own nodes) or "quota" (quotas over the pool)
    vcs: tuple[str, ...]
    typed: bool = False  # nodes carry distinct GPU types (jobs may then ask for one)
    quotas: dict[str, int] = field(default_factory=dict)

    def owner(self) -> dict[str, str | None]:
        nodes = self.cluster.nodes
        return dict(zip(nodes["node"], nodes["vc"], strict=True))

    def most_gpus(self, vc: str, gpu_type: str | None) -> int:
        """The most GPUs a job of ``vc`` asking for ``gpu_type`` could ever hold, worked out
        independently of the engine's own partition code."""
        nodes = self.cluster.nodes
        accepted = allowed_types(gpu_type)
        ok = nodes["gpu_type"].isin(accepted) if accepted is not None else nodes["gpus"] > 0
        if self.mode == "pool":
            return int(nodes.loc[ok, "gpus"].sum())
        if self.mode == "nodes":
            mine = nodes["vc"] == vc
            return int(nodes.loc[mine & ok, "gpus"].sum())
        pool = nodes["vc"].isna()
        return min(int(nodes.loc[pool & ok, "gpus"].sum()), self.quotas[vc])


@st.composite
def clusters(draw, modes=MODES, typed: bool | None = None) -> ClusterCase:
    """1-3 racks of 1-3 nodes of 2/4/8 GPUs, partitioned in one of ``modes``."""
    racks = draw(st.integers(1, 3))
    per_rack = draw(st.integers(1, 3))
    n = racks * per_rack
    gpus = draw(st.lists(st.sampled_from(NODE_SIZES), min_size=n, max_size=n))
    if typed is None:
        typed = draw(st.sampled_from((False, False, False, True)))  # typed in 1 of 4
    types = (
        draw(st.lists(st.sampled_from(GPU_TYPES), min_size=n, max_size=n)) if typed else ["gpu"] * n
    )
    mode = draw(st.sampled_from(modes))
    owners: list[str | None] = [None] * n
    quotas: dict[str, int] = {}
    if mode == "nodes":
        n_vcs = draw(st.integers(1, min(3, n)))
        order = draw(st.permutations(range(n)))
        choices = [None, *VC_NAMES[:n_vcs]]
        for i, node in enumerate(order):
            # every VC owns at least one node; the others go to a VC or stay unowned
            owners[node] = VC_NAMES[i] if i < n_vcs else draw(st.sampled_from(choices))
    elif mode == "quota":
        n_vcs = draw(st.integers(1, 3))
        left = sum(gpus)
        for vc in VC_NAMES[:n_vcs]:
            quotas[vc] = draw(st.integers(min(1, left), left))
            left -= quotas[vc]
    else:
        n_vcs = draw(st.integers(1, 3))
    nodes = pd.DataFrame(
        {
            "node": [f"n{i}" for i in range(n)],
            "rack": [f"r{i // per_rack}" for i in range(n)],
            "gpus": gpus,
            "gpu_type": types,
            "vc": owners,
        }
    )
    cluster = Cluster.from_frame(nodes, quotas or None)
    return ClusterCase(cluster, mode, VC_NAMES[:n_vcs], typed, quotas)


@st.composite
def workloads(
    draw,
    vcs=VC_NAMES,
    typed: bool = False,
    max_jobs: int = 12,
    max_submit: int = 600,
    max_duration: int = 900,
    gpus=GPU_CHOICES,
) -> Workload:
    """1-``max_jobs`` jobs with integer submit times and durations, GPUs from GPU_CHOICES."""
    n = draw(st.integers(1, max_jobs))
    ints = st.integers
    rows = {
        "job_id": [f"j{i}" for i in range(n)],
        "vc": draw(st.lists(st.sampled_from(vcs), min_size=n, max_size=n)),
        "user": draw(st.lists(st.sampled_from(["u1", "u2"]), min_size=n, max_size=n)),
        "submit_time": draw(st.lists(ints(0, max_submit), min_size=n, max_size=n)),
        "duration": draw(st.lists(ints(1, max_duration), min_size=n, max_size=n)),
        "num_gpus": draw(st.lists(st.sampled_from(gpus), min_size=n, max_size=n)),
        "priority": draw(st.lists(ints(0, 3), min_size=n, max_size=n)),
    }
    if typed:
        rows["gpu_type"] = draw(st.lists(st.sampled_from(JOB_TYPES), min_size=n, max_size=n))
    return Workload.from_frame(pd.DataFrame(rows))


# LAS with the default 18,000 GPU-s threshold never demotes a job this small, so also try
# thresholds these jobs do cross and a guard that fires.
LAS_VARIANTS = (
    "las",
    {"name": "las", "thresholds": [100.0, 1000.0]},
    {"name": "las", "thresholds": [60.0], "starvation_factor": 1.0},
    {"name": "las", "thresholds": [200.0], "starvation_factor": None},
)

# Gavel's allocation policies run their own rounds on one shared pool of whole GPUs:
# tests/test_gavel_policies.py checks them
RANKING_SCHEDULERS = [
    n for n in SCHEDULERS.names if not getattr(SCHEDULERS.make(n), "allocates", False)
]
schedulers = st.sampled_from(RANKING_SCHEDULERS).flatmap(
    lambda name: st.sampled_from(LAS_VARIANTS) if name == "las" else st.just(name)
)
placers = st.sampled_from(PLACERS.names)


@st.composite
def configs(draw, leap: bool = True) -> SimConfig:
    """Every scheduler x placement x preemption x migration x borrowing, quantum 1/5/60,
    constant checkpoint and migration costs of 0-50 s, sometimes periodic defragmentation."""
    migration = draw(st.booleans())
    return SimConfig(
        scheduler=draw(schedulers),
        placement=draw(placers),
        preemption=draw(st.booleans()),
        quantum=draw(st.sampled_from(QUANTA)),
        checkpoint_cost={"name": "constant", "seconds": draw(st.integers(0, 50))},
        backfill=draw(st.sampled_from((False, True, "easy"))),
        migration=migration,
        migration_cost={"name": "constant", "seconds": draw(st.integers(0, 50))},
        defrag_every=draw(st.sampled_from((None, None, 30, 120))) if migration else None,
        borrowing=draw(st.booleans()),
        borrow_limit=draw(st.sampled_from((0.5, 1.0, 3.0))),
        sample_every=draw(st.sampled_from((1, 30, 300))),
        seed=draw(st.integers(0, 2**16)),
        leap=leap,
    )


@st.composite
def cases(draw, max_jobs: int = 12, max_duration: int = 900, leap: bool = True):
    """(ClusterCase, Workload, SimConfig) drawn together so the jobs' VCs exist."""
    case = draw(clusters())
    workload = draw(
        workloads(case.vcs, typed=case.typed, max_jobs=max_jobs, max_duration=max_duration)
    )
    return case, workload, draw(configs(leap=leap))


# -- resource mode: GPU shares, CPU and memory ----------------------------------------------
SHARES = (100, 250, 300, 500, 600, 700, 1000)
SHARE_PLACER_NAMES = ("fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering")


@st.composite
def resource_cases(draw, max_jobs: int = 10, leap: bool = True):
    """(ClusterCase, Workload, SimConfig) in resource mode: nodes with CPU and memory, jobs
    with GPU shares (some whole, some several GPUs), CPU and memory, some CPU-only; the
    placement any whole-GPU placer or one of the FGD study's."""
    case = draw(clusters())
    nodes = case.cluster.nodes.copy()
    n = len(nodes)
    nodes["cpu_milli"] = draw(st.lists(st.sampled_from((2000, 4000, 8000)), min_size=n, max_size=n))
    nodes["memory_mib"] = draw(st.lists(st.sampled_from((4000, 16000)), min_size=n, max_size=n))
    cluster = Cluster.from_frame(nodes, case.quotas or None)
    case = ClusterCase(cluster, case.mode, case.vcs, case.typed, case.quotas)
    most_cpu, most_mem = int(nodes["cpu_milli"].max()), int(nodes["memory_mib"].max())
    base = draw(
        workloads(
            case.vcs, typed=case.typed, max_jobs=max_jobs, max_duration=400, gpus=(1, 1, 2, 4)
        )
    ).jobs.copy()
    k = len(base)
    kind = draw(
        st.lists(st.sampled_from(("share", "share", "whole", "cpu")), min_size=k, max_size=k)
    )
    milli = draw(st.lists(st.sampled_from(SHARES), min_size=k, max_size=k))
    gpus, shares = base["num_gpus"].tolist(), []
    for i in range(k):
        if kind[i] == "share":
            gpus[i], share = 1, milli[i]
        elif kind[i] == "cpu":
            gpus[i], share = 0, 0
        else:
            share = 1000
        shares.append(share)
    base["num_gpus"] = gpus
    base["gpu_milli"] = shares
    base["cpu_milli"] = draw(st.lists(st.integers(0, most_cpu), min_size=k, max_size=k))
    base["cpu_milli"] = [
        max(c, 1) if g == 0 else c for c, g in zip(base["cpu_milli"], gpus, strict=True)
    ]
    base["memory_mib"] = draw(st.lists(st.integers(0, most_mem), min_size=k, max_size=k))
    if "gpu_type" in base.columns:
        base.loc[base["num_gpus"] == 0, "gpu_type"] = None
    workload = Workload.from_frame(base)
    config = draw(configs(leap=leap))
    placement = draw(st.sampled_from((*PLACERS.names, *SHARE_PLACER_NAMES)))
    return case, workload, config.replace(placement=placement)
