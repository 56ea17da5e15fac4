"""The two Acme clusters (Shanghai AI Lab, LLM development, 2023) as presets: ``seren`` and
``kalos``. Published facts, the clusters built from them and the scheduling assumed.

Sources, named beside every number below:

- **summary** -- ``data/cluster_summary.csv`` of InternLM/AcmeTrace (the copy in
  ``shared/data/acme/acme_cluster_summary.csv``): per cluster, the GPU-job count, mean and
  median run time and queueing delay of GPU jobs, mean, median and largest GPUs per GPU job,
  the longest run, the shares of GPU jobs completed / cancelled / failed (failed counts
  FAILED, TIMEOUT and NODE_FAIL), and the GPU-time of each.
- **README** -- the AcmeTrace README: traces from March to August 2023; nodes of 8 GPUs (its
  example rows: 1 node with 8 GPUs, 8 nodes with 64).
- **paper** -- Hu et al., "Characterization of Large Language Model Development in the
  Datacenter", NSDI'24: Seren and Kalos hold 4,704 A100 GPUs together.

What no source gives is written as **assumed**. The summary file is not read at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.validation import MAX_CLUSTER_GPUS
from analysim.inputs.workload import Workload
from analysim.presets.calibrated import Shape, Targets, calibrated_workload
from analysim.presets.helios import MONTH_DAYS, SLURM_CONFIG
from analysim.presets.stratified import stratified_uniform

DAY = 86_400.0
VC = "default"
"""The one VC of every Acme job (the trace has no VCs)."""
GPUS_PER_NODE = 8
"""GPUs per Acme node: 8 (the README's example rows: 1 node with 8 GPUs, 8 nodes with 64)."""
RACK_NODES = 8  # assumed: the sources give no rack layout
NODES: dict[str, int] = {"seren": 286, "kalos": 302}
"""Nodes of each cluster: 2,288 and 2,416 A100 GPUs / 8. The paper (Hu et al., NSDI'24)
gives 4,704 A100 GPUs over the two clusters; the split is the project's notes
(``shared/data/acme/README.md``), consistent with that total but not checked against the
paper's Table 1: **assumed** until checked."""


def acme_cluster(nodes: int, name: str = "acme") -> Cluster:
    """``nodes`` nodes of 8 GPUs without VCs, in racks of 8 nodes (assumed)."""
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise ValueError(f"nodes must be a whole number >= 1, got {nodes!r}")
    if nodes * GPUS_PER_NODE > MAX_CLUSTER_GPUS:
        raise ValueError(f"nodes={nodes}: at most {MAX_CLUSTER_GPUS:,} GPUs in a cluster")
    width = len(str(nodes - 1))
    frame = pd.DataFrame(
        {
            "node": [f"n{i:0{width}d}" for i in range(nodes)],
            "rack": [f"r{i // RACK_NODES}" for i in range(nodes)],
            "gpus": GPUS_PER_NODE,
        }
    )
    return Cluster.from_frame(frame, name=name)


@dataclass(frozen=True)
class AcmePublished:
    """One cluster's row of the summary (GPU jobs only; seconds), and its trace's length."""

    gpu_jobs: int  # summary: gpu_job_num
    days: int  # see TRACE_DAYS
    mean_run: float  # summary: avg_run_time_gpu
    median_run: float  # summary: med_run_time_gpu
    mean_queue: float  # summary: avg_que_time_gpu
    median_queue: float  # summary: med_que_time_gpu
    mean_gpus: float  # summary: avg_gpu_num
    median_gpus: float  # summary: med_gpu_num
    max_gpus: int  # summary: max_gpu
    max_run: float  # summary: max_run_time_gpu
    completed_share: float  # summary: complete_rate_gpu
    cancelled_share: float  # summary: cancel_rate_gpu
    failed_share: float  # summary: fail_rate_gpu
    gpu_seconds: float  # summary: complete_gpu_time + cancel_gpu_time + fail_gpu_time
    nodes: int  # analysim.traces.acme.NODES

    @property
    def jobs_per_day(self) -> float:
        return self.gpu_jobs / self.days

    @property
    def total_gpus(self) -> int:
        return self.nodes * GPUS_PER_NODE

    def targets(self) -> Targets:
        return Targets.of_summary(self)


TRACE_DAYS = {"seren": 184, "kalos": 123}
"""Days each trace spans. Seren: March 1 - August 31, 2023 (README: "March 2023 to August
2023"). Kalos: **assumed** May 1 - August 31, 2023: its README example rows are of May 17,
and a third-party description of the dataset gives "May - August 2023"; neither the README
nor the summary states Kalos' window."""

PUBLISHED: dict[str, AcmePublished] = {
    "seren": AcmePublished(  # summary row "Seren"
        gpu_jobs=663_813,
        days=TRACE_DAYS["seren"],
        mean_run=1_414.335,
        median_run=122.0,
        mean_queue=445.984,
        median_queue=1.0,
        mean_gpus=5.68,
        median_gpus=1.0,
        max_gpus=1_024,
        max_run=1_209_604.0,
        completed_share=0.497,
        cancelled_share=0.075,
        failed_share=0.429,
        gpu_seconds=4_560_592_618.0 + 14_274_584_510.0 + 2_675_447_459.0,
        nodes=NODES["seren"],
    ),
    "kalos": AcmePublished(  # summary row "Kalos"
        gpu_jobs=19_907,
        days=TRACE_DAYS["kalos"],
        mean_run=1_259.689,
        median_run=124.0,
        mean_queue=214.179,
        median_queue=17.0,
        mean_gpus=26.77,
        median_gpus=1.0,
        max_gpus=1_024,
        max_run=625_740.0,
        completed_share=0.541,
        cancelled_share=0.062,
        failed_share=0.397,
        gpu_seconds=1_667_685_146.0 + 3_239_202_064.0 + 426_292_851.0,
        nodes=NODES["kalos"],
    ),
}
"""The published numbers each preset is calibrated on (summary, one row per cluster)."""

LAUNCH_DELAY = {name: facts.median_queue for name, facts in PUBLISHED.items()}
"""Seconds from a job's submission until it starts when nothing holds it back: **assumed**
to be the published median queueing delay (Seren 1 s, Kalos 17 s). More than half the GPU
jobs of each cluster waited no longer than this, which is scheduler and container start-up
time the engine does not model (it starts a job in the step its GPUs are free); the
calibration check adds it to every simulated queueing delay."""

MAX_JOB_FRACTION = 0.45
"""The largest job as a fraction of the cluster: 0.45 x 2,288 = 1,029 GPUs (Kalos 1,087), so
1,024 GPUs is the largest size drawn (the summary's ``max_gpu``) -- an 8-GPU-node cluster's
largest power of two below half its size."""

SHAPES: dict[str, Shape] = {
    "seren": Shape(
        one_gpu_share=0.6,
        max_job_fraction=MAX_JOB_FRACTION,
        size_growth=0.5,
        max_gpu_days=1536.0,
        daily_amplitude=0.65,
        arrivals="dealt",
        max_duration=PUBLISHED["seren"].max_run,
        largest_size=PUBLISHED["seren"].max_gpus,
        users_per_vc=100,
    ),
    "kalos": Shape(
        one_gpu_share=0.6,
        max_job_fraction=MAX_JOB_FRACTION,
        size_growth=0.86,
        max_gpu_days=1280.0,
        daily_amplitude=1.0,
        max_duration=PUBLISHED["kalos"].max_run,
        largest_size=PUBLISHED["kalos"].max_gpus,
        users_per_vc=100,
    ),
}
"""What the sources do not say (see :class:`analysim.presets.calibrated.Shape`).

**Assumed** for both: 60% of GPU jobs on 1 GPU (the published median is 1), the rest on
powers of two up to 1,024 GPUs; run times from 1 s to the published longest run; arrivals
peaking at 15:00; 100 users (the summary gives no user count).

Seren: **tuned** on the published mean queueing delay (seeds 0-2, 30 days): run-time median
∝ GPUs**0.5, no job above 1,536 GPU-days, arrivals ±65% over the day (``daily_amplitude``,
**assumed**: no source gives it; ±50% until 2026-12-03 missed seed 1 by 37%) and dealt so
that each day carries about the same GPU time (``arrivals="dealt"``). The growth solved for
the published GPU-seconds per job (0.385, no cap) gives months whose mean delay turns on one
1,024-GPU job running for days (seeds 0-2: 434, 4,977, 369 s). The months' mean delay moves
by tens of percent between neighbouring shapes and seeds (``docs/calibration.md``).

Kalos: **tuned** on the published mean queueing delay (seeds 0-2 over its 123 days, see
``docs/calibration.md``): run-time median ∝ GPUs**0.86, no job above 1,280 GPU-days, arrivals
±100% over the day. Its GPU-seconds per job are then about twice the published (the check's
``info`` row): with the published GPU time (offered load about 0.2) the simulated cluster
barely queues (mean 45-60 s), and a steeper growth cannot keep the published mean run
time."""


FINAL_STATES = ("COMPLETED", "CANCELLED", "FAILED")
STATE_STREAM = 28
"""The generated ``state`` column is drawn from ``default_rng([seed, STATE_STREAM])``, a
stream of its own, so that the jobs themselves are those :func:`calibrated_workload` draws."""


def draw_states(seed: int, count: int, facts: AcmePublished) -> np.ndarray:
    """``count`` final states with the published shares of completed, cancelled and failed
    GPU jobs (stratified: each share is within one job of its expectation); failed jobs are
    ``FAILED`` (TIMEOUT and NODE_FAIL, counted with them, are rare: README)."""
    shares = np.array([facts.completed_share, facts.cancelled_share, facts.failed_share])
    cdf = np.cumsum(shares / shares.sum())
    rng = np.random.default_rng([seed, STATE_STREAM])
    picks = np.searchsorted(cdf, stratified_uniform(rng, count), side="right")
    return np.asarray(FINAL_STATES, dtype=object)[np.minimum(picks, len(FINAL_STATES) - 1)]


def cluster(name: str) -> Cluster:
    """The cluster: ``NODES[name]`` nodes of 8 GPUs without VCs, racks of 8 nodes."""
    return acme_cluster(PUBLISHED[name].nodes, name=name)


def workload(
    name: str,
    seed: int = 0,
    load_scale: float = 1.0,
    days: float = MONTH_DAYS,
    shape: Shape | None = None,
) -> Workload:
    """A ``days``-day month of GPU jobs calibrated on cluster ``name``'s published numbers,
    every job in VC ``"default"``, with a drawn final ``state`` (:func:`draw_states`);
    ``shape``: another than the one in :data:`SHAPES`, to tune it."""
    facts = PUBLISHED[name]
    drawn = calibrated_workload(
        facts.targets(),
        {VC: facts.total_gpus},
        days=days,
        seed=seed,
        shape=SHAPES[name] if shape is None else shape,
        load_scale=load_scale,
        name=name,
    )
    jobs = drawn.jobs.assign(state=draw_states(seed, len(drawn), facts))
    return Workload.from_frame(jobs, name=name)


def config(name: str) -> SimConfig:
    """The scheduling assumed for both clusters: :data:`~analysim.presets.helios.SLURM_CONFIG`
    (FIFO with EASY backfill, nodes packed first). **Assumed**: the sources used here do not
    give the clusters' scheduler configuration."""
    del name
    return SLURM_CONFIG
