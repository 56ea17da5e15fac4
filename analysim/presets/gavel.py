"""The ``gavel`` preset: Gavel's heterogeneous cluster and its job generator (OSDI'20).

Sources: stanford-futuredata/gavel (MIT), commit c4fa40097339e9608ab71fd64c8bdea96a5e4a4c.

* **Cluster**: 36 V100 + 36 P100 + 36 K80 GPUs, the ``-c 36:36:36`` of every simulation
  sweep in its ``EXPERIMENTS.md`` (Figures 9-11 of the paper). Gavel's simulator registers
  one worker per GPU unless told otherwise (``--num_gpus_per_server``, default ``1:1:1``
  in ``scripts/sweeps/run_sweep_continuous.py``; the sweeps in ``EXPERIMENTS.md`` do not
  set it), so by default each node has one GPU (``gpus_per_node`` changes that). One rack
  per GPU type; node ``v100-00`` has GPU type ``v100`` (the names of Gavel's worker types).
* **Workload** (``scheduler/utils.py``, ``generate_job``): Poisson arrivals at
  ``jobs_per_hour`` (Gavel's ``lam`` = 3600 / rate seconds between arrivals); each job one
  of the 26 job types, uniformly (``gavel_applications``); its duration, the run time on
  a V100 (Gavel's ``reference_worker_type``), is ``60 * 10**U(1.5, 3)`` s with probability
  0.8, else ``60 * 10**U(3, 4)`` s (Gavel's "Philly distribution"). With ``multi_gpu``,
  its GPU count is 1 (70 %), 2 (10 %), 4 (15 %) or 8 (5 %), as Gavel's
  ``_generate_scale_factor``, and a multi-GPU job is of a type Gavel can distribute (not A3C,
  CycleGAN or Recommendation). A job whose type has no throughput on some GPU type for its
  GPU count (ResNet-50, batch size 128, on 2-8 K80s) gets a ``gpu_type`` constraint to the
  types it can use. The draws come from a ``numpy`` generator seeded by ``seed``, not
  Gavel's ``random.Random`` streams: the distributions are Gavel's, the jobs are not its.
* **Config** (:func:`config`, what ``analysim run --workload gavel`` starts from): Gavel's
  simulator's rounds, ``--time_per_iteration 360`` (``quantum=360``), and no checkpoint or
  migration cost (its simulator charges none: ``{"name": "constant"}``, 0 s). Its allocation
  resets at most every 1920 s (``min_reset_interval``), the policies' own default. The
  scheduler stays ``fifo``: pick one with ``--scheduler``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysim.inputs.applications import gavel_applications
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload

GAVEL_GPUS = {"v100": 36, "p100": 36, "k80": 36}
"""GPUs of each type in Gavel's simulated cluster (``-c 36:36:36``)."""
#: Gavel's scale factors (GPUs per job) and their probabilities, ``_generate_scale_factor``
SCALE_FACTORS = ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05))
#: the job types Gavel's job table marks ``distributed=False``: always one GPU
SINGLE_GPU_FAMILIES = ("A3C", "CycleGAN", "Recommendation")
GAVEL_JOBS = 1000
GAVEL_JOBS_PER_HOUR = 1.0
#: the most jobs the preset draws (ten times Gavel's longest experiments' 5,000 and more)
MAX_JOBS = 1_000_000
#: Gavel's round length (``--time_per_iteration`` of its simulation sweeps), seconds
GAVEL_QUANTUM = 360.0
#: no cost to stop or move a job, as in Gavel's simulator
NO_COST = {"name": "constant"}


def config() -> SimConfig:
    """Gavel's simulation setting: 360 s rounds, no checkpoint or migration cost."""
    return SimConfig(quantum=GAVEL_QUANTUM, checkpoint_cost=NO_COST, migration_cost=NO_COST)


def cluster(gpus_per_node: int = 1) -> Cluster:
    """Gavel's 36 V100 + 36 P100 + 36 K80 GPUs, ``gpus_per_node`` (dividing 36) per node."""
    whole = not isinstance(gpus_per_node, bool) and isinstance(gpus_per_node, (int, np.integer))
    if not whole or gpus_per_node < 1 or 36 % gpus_per_node:
        raise ValueError(f"gpus_per_node must divide 36 (1, 2, 3, 4, ...), got {gpus_per_node!r}")
    rows = [
        (f"{gpu_type}-{i:02d}", gpu_type, gpus_per_node, gpu_type)
        for gpu_type, total in GAVEL_GPUS.items()
        for i in range(total // gpus_per_node)
    ]
    nodes = pd.DataFrame(rows, columns=["node", "rack", "gpus", "gpu_type"])
    return Cluster.from_frame(nodes, name="gavel")


def _durations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Gavel's run times (seconds on a V100): 10**U(1.5, 3) minutes w.p. 0.8, else
    10**U(3, 4)."""
    long = rng.random(n) >= 0.8
    exponent = np.where(long, rng.uniform(3, 4, n), rng.uniform(1.5, 3, n))
    return 60 * 10**exponent


def workload(
    seed: int,
    load_scale: float,
    days: float | None = None,
    jobs: int = GAVEL_JOBS,
    jobs_per_hour: float = GAVEL_JOBS_PER_HOUR,
    multi_gpu: bool = False,
) -> Workload:
    """``jobs`` jobs drawn as Gavel's generator draws them (the module's description), at
    ``jobs_per_hour`` x ``load_scale`` arrivals an hour; ``days`` is ignored."""
    del days  # the span follows from the job count and the rate
    if (
        isinstance(jobs, bool)
        or not isinstance(jobs, (int, np.integer))
        or not 0 <= jobs <= MAX_JOBS
    ):
        raise ValueError(f"jobs must be a whole number from 0 to {MAX_JOBS:,}, got {jobs!r}")
    number = all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in (jobs_per_hour, load_scale)
    )
    rate = float(jobs_per_hour) * load_scale if number else float("nan")
    if not np.isfinite(rate) or rate <= 0:
        raise ValueError(
            f"jobs_per_hour x load_scale must be a finite number above 0, got "
            f"{jobs_per_hour!r} x {load_scale!r}"
        )
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(3600.0 / rate, jobs)) if jobs else np.zeros(0)
    duration = _durations(rng, jobs)
    gpus = np.ones(jobs, dtype=np.int64)
    if multi_gpu:
        sizes, weights = zip(*SCALE_FACTORS, strict=True)
        gpus = rng.choice(np.array(sizes), size=jobs, p=np.array(weights))
    apps = gavel_applications()
    names = sorted(apps)
    spread = [n for n in names if not n.startswith(SINGLE_GPU_FAMILIES)]
    pick_any = rng.integers(0, len(names), jobs)
    pick_spread = rng.integers(0, len(spread), jobs)
    application = np.where(
        gpus > 1, np.array(spread, dtype=object)[pick_spread], np.array(names)[pick_any]
    )
    frame = pd.DataFrame(
        {
            "job_id": [f"g{i:05d}" for i in range(jobs)],
            "vc": "gavel",
            "user": "gavel",
            "submit_time": submit,
            "duration": duration,
            "num_gpus": gpus,
            "application": application,
            "gpu_type": [_usable(apps[a], int(g)) for a, g in zip(application, gpus, strict=True)],
        }
    )
    return Workload.from_frame(frame, name="gavel")


def _usable(app, gpus: int) -> str | None:
    """The ``gpu_type`` constraint of a job of ``app`` on ``gpus`` GPUs: None when it can
    run on every type of the cluster, else the types it can (``v100|p100``)."""
    types = [t for t in GAVEL_GPUS if app.lists(gpus, t)]
    return None if len(types) == len(GAVEL_GPUS) else "|".join(types)


__all__ = ["GAVEL_GPUS", "cluster", "config", "workload"]
