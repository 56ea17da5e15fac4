"""Named workloads, clusters and configurations.

>>> from analysim import presets
>>> presets.names()[:6]
['earth', 'gavel', 'kalos', 'large', 'saturn', 'seren']
>>> cluster = presets.cluster("venus")
>>> workload = presets.workload("venus", seed=0)
>>> config = presets.config("venus")   # the scheduling Venus ran (Slurm: FIFO + backfill)

Every preset returns a :class:`~analysim.inputs.workload.Workload` /
:class:`~analysim.inputs.cluster.Cluster` whose ``name`` is the preset's name. ``load_scale``
multiplies the arrival rate (so the offered load) of every workload preset.

venus, earth, saturn, uranus
    The four public Helios clusters, calibrated on their published summary statistics: a
    30-day month by default, VCs owning 8-GPU nodes, and :func:`config` the scheduling they
    ran (per-VC FIFO with backfill). Sources and assumptions beside every number in
    :mod:`analysim.presets.helios`; the generator in :mod:`analysim.presets.calibrated`; how close
    they come in :mod:`analysim.presets.calibration` (``analysim presets --check``).

seren, kalos
    The two Acme clusters of Shanghai AI Lab (LLM development, March-August 2023; NSDI'24),
    calibrated the same way on their published summary: a 30-day month by default, nodes of
    8 GPUs without VCs, jobs of 1 to 1,024 GPUs, and a ``state`` column (COMPLETED,
    CANCELLED, FAILED) drawn with the published shares (43% / 40% of GPU jobs fail). Sources
    and assumptions in :mod:`analysim.presets.acme`; how close they come in
    ``docs/calibration.md`` (``analysim presets --check``). A Seren month has about 108,000
    jobs; ``days=`` makes it shorter.

venus_overloaded
    The ``venus`` preset before calibration (below, named ``venus`` there), kept because the
    golden runs, benchmarks and earlier study numbers use it: far busier than the real Venus
    (its GPU jobs wait 35 h on average under strict FIFO, Venus' waited 21 min).

toy
    16 GPUs (2 racks ``r0``/``r1`` x 2 nodes ``n0`` to ``n3`` x 4 GPUs), one shared pool; with
    ``partition="nodes"`` VC ``a`` owns rack ``r0`` and ``b`` owns ``r1``; with
    ``partition="quota"`` ``a`` and ``b`` each hold an 8-GPU quota over the pool. The workload
    is the fixed table :data:`TOY_JOBS` (8 jobs in the first 15 minutes), small enough to
    follow by hand: at t=180 ``j4`` asks for 8 GPUs while ``j1``-``j3`` hold 14, so it waits
    (at least until ``j1`` ends at t=600). ``seed`` and ``days`` are ignored; ``load_scale``
    divides the submit times (arrivals come ``load_scale`` times faster; durations unchanged).

venus_overloaded (was ``venus``)
    Helios Venus as of 2020-09-28: 135 nodes x 8 GPUs = 1,080 GPUs in 15 racks of 9 nodes,
    16 VCs owning whole nodes (:data:`VENUS_VC_GPUS`, in the order of the source CSV's
    columns, nodes handed out in that order). The workload is
    :func:`analysim.inputs.generators.synthetic` with its Helios-Venus-calibrated defaults
    (lognormal run times of shape 2.5 with mean 13,000 s, here clipped to [10 s, 3 days];
    :data:`~analysim.inputs.generators.DEFAULT_GPU_DEMAND`, median 1 GPU; a daily arrival cycle of
    ±50% peaking at 15:00; 10 users per VC) and the per-VC offered loads
    :data:`VENUS_VC_LOAD` (0.7 over the cluster). A job asks for at most half its VC's GPUs
    (:data:`VENUS_MAX_GPUS`). ``days`` (default 26) scales the job count; extra keyword
    arguments override the generator's (e.g. ``mean_duration``).

    Calibration. Helios facts (data/README.md): Venus ran 125,303 GPU jobs in ~6 months
    (about 690 a day), mean GPU-job run time 13,041 s, median 1 GPU. A 26-day month at load
    0.7 on 1,080 GPUs is 0.7 x 1,080 x 2,246,400 s = 1.70e9 GPU-seconds; with jobs of mean
    13,000 s that needs ~5 GPUs per job on average, which the demand table gives with median 1
    GPU (8-GPU jobs and the rare 16-32 GPU jobs hold most GPU time). A job asks for at most
    half its VC (:data:`VENUS_MAX_GPUS`) and runs at most 3 days. Loads are per VC
    (:data:`VENUS_VC_LOAD`): three VCs at 0.9-0.95, overloaded at the daily peak (x1.5), the
    rest 0.3-0.7. What seed 0 gives (``Workload.describe``):

    ============================  ==============================================
    jobs                          27,101
    mean / median duration        13,353 s / 1,094 s
    median / mean GPUs            1 / 4.88 (8-GPU jobs 35%, 16-32 GPUs 6%)
    GPU time of jobs >= 8 GPUs    86%
    overall offered load          0.74
    per-VC offered load           0.20 (vcgkz) .. 1.06 (vcvGl); vcKeu 1.05
    ============================  ==============================================

    Small VCs see few jobs, so their realised load strays from the expected.

gavel
    Gavel's (OSDI'20) simulated cluster, 36 V100 + 36 P100 + 36 K80 GPUs (one per node by
    default, as its simulator; ``gpus_per_node``), and its job generator: ``jobs`` (default
    1,000) jobs of its 26 job types (the built-in typed applications, ``docs/heterogeneity.md``)
    arriving at ``jobs_per_hour`` (default 1.0) times ``load_scale``, single-GPU unless
    ``multi_gpu``. :func:`config` is Gavel's simulation setting (360 s rounds, no checkpoint
    or migration cost), and ``analysim run --workload gavel`` starts from it. Sources and
    rules in :mod:`analysim.presets.gavel`; ``days`` is ignored.

large
    For benchmarks: ``gpus`` GPUs (default 10,000; a multiple of 8) on 8-GPU nodes in racks of
    10 nodes, split as evenly as possible among 25 VCs ``vc00`` to ``vc24`` that own whole nodes
    (fewer VCs when there are fewer than 25 nodes). The workload has exactly ``jobs`` jobs
    (default 1,000,000, ids ``j0000001``..) from the same generator, each VC offering load
    0.7 (times ``load_scale``); the trace length follows from the job count, so ``days`` is
    ignored: about 113 days for the defaults. 1,000,000 jobs take about 2 s to generate.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import pandas as pd

from analysim.inputs import generators
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.validation import MAX_DAYS, bounded
from analysim.inputs.workload import Workload
from analysim.presets import acme as acme_presets
from analysim.presets import gavel as gavel_presets
from analysim.presets import helios as helios_presets

# -- toy ---------------------------------------------------------------------------------------
TOY_JOBS = pd.DataFrame(
    [
        ("j1", "a", "alice", 0.0, 600.0, 4),
        ("j2", "b", "bob", 60.0, 900.0, 8),
        ("j3", "a", "alice", 120.0, 300.0, 2),
        ("j4", "a", "carol", 180.0, 1200.0, 8),
        ("j5", "b", "dave", 300.0, 600.0, 1),
        ("j6", "b", "bob", 480.0, 480.0, 2),
        ("j7", "a", "alice", 720.0, 360.0, 1),
        ("j8", "b", "dave", 900.0, 600.0, 4),
    ],
    columns=["job_id", "vc", "user", "submit_time", "duration", "num_gpus"],
)
"""The ``toy`` workload (seconds): 30 GPUs asked for in the first 15 minutes on 16 GPUs."""

TOY_PARTITIONS = (None, "nodes", "quota")

# -- venus -------------------------------------------------------------------------------------
VENUS_DATE = "2020-09-28"
VENUS_VC_GPUS: dict[str, int] = {
    "vcEwI": 72,
    "vcWoR": 40,
    "vcHvQ": 64,
    "vcvGl": 160,
    "vc8Gr": 48,
    "vcKeu": 88,
    "vcKrE": 32,
    "vcYVn": 88,
    "vchbv": 32,
    "vcLTP": 64,
    "vchA3": 24,
    "vcJsw": 256,
    "vcefl": 80,
    "vcvlY": 16,
    "vcgkz": 8,
    "vcEhP": 8,
}
"""GPUs of each Venus VC on 2020-09-28, the last day of the Helios trace (source: HeliosData
``data/Venus/cluster_gpu_number.csv``, CC-BY-4.0): the VCs owning GPUs that day, in the
file's column order. They add up to 1,080 GPUs = 135 nodes of 8 GPUs."""

VENUS_RACK_NODES = 9
VENUS_VC_LOAD: dict[str, float] = {
    "vcEwI": 0.9,
    "vcWoR": 0.6,
    "vcHvQ": 0.7,
    "vcvGl": 0.95,
    "vc8Gr": 0.6,
    "vcKeu": 0.9,
    "vcKrE": 0.5,
    "vcYVn": 0.67,
    "vchbv": 0.5,
    "vcLTP": 0.6,
    "vchA3": 0.5,
    "vcJsw": 0.6,
    "vcefl": 0.7,
    "vcvlY": 0.4,
    "vcgkz": 0.3,
    "vcEhP": 0.3,
}
"""Expected offered load of each Venus VC (offered GPUs / its GPUs), chosen by hand: three
VCs at 0.9-0.95 that the daily cycle overloads at its peak, the rest 0.3-0.7. Weighted by VC
size they average 0.7."""

VENUS_DAYS = 26
VENUS_MAX_GPUS = {vc: max(1, gpus // 2) for vc, gpus in VENUS_VC_GPUS.items()}
"""Largest job of each Venus VC: half its GPUs, so that no single job needs the whole VC
(which under strict FIFO blocks the VC's queue until every job on it has drained)."""
VENUS_MAX_DURATION = 3 * 86_400.0
"""Longest Venus run time (3 days): Helios' long tail is bounded by its clusters' limits."""

# -- large -------------------------------------------------------------------------------------
GPUS_PER_NODE = 8
LARGE_RACK_NODES = 10
LARGE_VCS = 25
LARGE_LOAD = 0.7
LARGE_MEAN_DURATION = 13_000.0


MIN_LOAD_SCALE, MAX_LOAD_SCALE = 1e-3, 1e3
"""Bounds of ``load_scale`` (arrival rate a thousandth to a thousand times the preset's): past
them the times of a preset leave the bounds of :mod:`analysim.inputs.validation`."""


def _check_load_scale(load_scale: float) -> float:
    number = float("nan")
    if not isinstance(load_scale, bool) and isinstance(load_scale, (int, float)):
        number = float(load_scale)
    if not np.isfinite(number) or not MIN_LOAD_SCALE <= number <= MAX_LOAD_SCALE:
        raise ValueError(
            f"load_scale must be a finite number from {MIN_LOAD_SCALE:g} to "
            f"{MAX_LOAD_SCALE:g}, got {load_scale!r}"
        )
    return number


# -- builders ----------------------------------------------------------------------------------
def _toy_cluster(partition: str | None = None) -> Cluster:
    layouts: dict[str | None, dict] = {
        None: {},
        "nodes": {"vc_nodes": {"a": 2, "b": 2}},
        "quota": {"quotas": {"a": 8, "b": 8}},
    }
    if partition not in layouts:
        raise ValueError(f"partition must be one of {list(TOY_PARTITIONS)}, got {partition!r}")
    return Cluster.uniform(2, 2, 4, name="toy", **layouts[partition])


def _toy_workload(seed: int, load_scale: float, days: float) -> Workload:
    del seed, days  # the toy workload is a fixed table
    jobs = TOY_JOBS.assign(submit_time=TOY_JOBS["submit_time"] / _check_load_scale(load_scale))
    return Workload.from_frame(jobs, name="toy")


def _venus_cluster() -> Cluster:
    vc_nodes = {vc: gpus // GPUS_PER_NODE for vc, gpus in VENUS_VC_GPUS.items()}
    racks = sum(vc_nodes.values()) // VENUS_RACK_NODES
    return Cluster.uniform(
        racks, VENUS_RACK_NODES, GPUS_PER_NODE, vc_nodes=vc_nodes, name="venus_overloaded"
    )


def _venus_workload(seed: int, load_scale: float, days: float, **overrides) -> Workload:
    offered = {vc: VENUS_VC_LOAD[vc] * gpus for vc, gpus in VENUS_VC_GPUS.items()}
    return generators.synthetic(
        offered,
        days=days,
        seed=seed,
        load_scale=load_scale,
        name="venus_overloaded",
        **{"max_gpus": VENUS_MAX_GPUS, "max_duration": VENUS_MAX_DURATION, **overrides},
    )


def _large_layout(gpus: int) -> dict[str, int]:
    """Nodes owned by each VC of the ``large`` cluster with ``gpus`` GPUs."""
    whole = not isinstance(gpus, bool) and isinstance(gpus, (int, np.integer))
    if not whole or gpus < GPUS_PER_NODE or gpus % GPUS_PER_NODE:
        raise ValueError(
            f"gpus must be a whole multiple of {GPUS_PER_NODE} (GPUs per node) >= "
            f"{GPUS_PER_NODE}, got {gpus!r}"
        )
    nodes = gpus // GPUS_PER_NODE
    vcs = min(LARGE_VCS, nodes)
    shares = np.full(vcs, nodes // vcs) + (np.arange(vcs) < nodes % vcs)
    return {f"vc{i:02d}": int(n) for i, n in enumerate(shares)}


def _large_cluster(gpus: int = 10_000) -> Cluster:
    owners = [vc for vc, n in _large_layout(gpus).items() for _ in range(n)]
    width = len(str(len(owners) - 1))
    nodes = pd.DataFrame(
        {
            "node": [f"n{i:0{width}d}" for i in range(len(owners))],
            "rack": [f"r{i // LARGE_RACK_NODES}" for i in range(len(owners))],
            "gpus": GPUS_PER_NODE,
            "vc": owners,
        }
    )
    return Cluster.from_frame(nodes, name="large")


def _large_workload(
    seed: int, load_scale: float, days: float, jobs: int = 1_000_000, gpus: int = 10_000
) -> Workload:
    del days  # the span follows from the job count and the load
    capacity = {vc: n * GPUS_PER_NODE for vc, n in _large_layout(gpus).items()}
    offered = {vc: LARGE_LOAD * c for vc, c in capacity.items()}
    rates = generators.arrival_rates(
        offered, mean_duration=LARGE_MEAN_DURATION, max_gpus=capacity, load_scale=load_scale
    )
    span_days = jobs / sum(rates.values()) / generators.DAY if jobs else 1.0
    return generators.synthetic(
        offered,
        days=span_days,
        seed=seed,
        mean_duration=LARGE_MEAN_DURATION,
        max_gpus=capacity,
        load_scale=load_scale,
        jobs=jobs,
        name="large",
    )


# -- registry ----------------------------------------------------------------------------------
_SYNTHETIC_OVERRIDES = tuple(
    name
    for name, parameter in inspect.signature(generators.synthetic).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    and name not in {"max_gpus", "load_scale", "jobs", "name"}
)


@dataclass(frozen=True)
class Preset:
    """How to build a named workload and cluster, and the extra parameters each accepts."""

    description: str
    workload: Callable[..., Workload]
    cluster: Callable[..., Cluster]
    workload_params: tuple[str, ...] = ()
    cluster_params: tuple[str, ...] = ()
    days: float = VENUS_DAYS
    config: SimConfig = SimConfig()
    #: whether ``analysim run`` starts from ``config`` (only ``gavel``: the other presets'
    #: command-line runs keep the defaults, so the numbers printed before stay the same)
    run_config: bool = False


def _calibrated(source: ModuleType, name: str, description: str) -> Preset:
    """The preset of cluster ``name`` of a calibrated source (``helios`` or ``acme``: each has
    ``workload``, ``cluster`` and ``config`` by cluster name), a month by default."""

    def build_workload(seed: int, load_scale: float, days: float) -> Workload:
        return source.workload(name, seed=seed, load_scale=load_scale, days=days)

    return Preset(
        description,
        build_workload,
        lambda: source.cluster(name),
        days=helios_presets.MONTH_DAYS,
        config=source.config(name),
    )


PRESETS: dict[str, Preset] = {
    "toy": Preset(
        "8 hand-checkable jobs on 16 GPUs (2 racks x 2 nodes x 4 GPUs)",
        _toy_workload,
        _toy_cluster,
        cluster_params=("partition",),
    ),
    "venus": _calibrated(
        helios_presets,
        "venus",
        "Helios Venus, calibrated: 1,024 GPUs, 23 node-owning VCs, ~685 GPU jobs a day",
    ),
    "earth": _calibrated(
        helios_presets,
        "earth",
        "Helios Earth, calibrated: 1,000 GPUs, 21 node-owning VCs, ~2,330 GPU jobs a day",
    ),
    "saturn": _calibrated(
        helios_presets,
        "saturn",
        "Helios Saturn, calibrated: 2,080 GPUs, 23 VCs (assumed), ~3,820 GPU jobs a day",
    ),
    "uranus": _calibrated(
        helios_presets,
        "uranus",
        "Helios Uranus, calibrated: 2,120 GPUs, 23 VCs (assumed), ~1,800 GPU jobs a day",
    ),
    "seren": _calibrated(
        acme_presets,
        "seren",
        "Acme Seren (LLM, 2023), calibrated: 2,288 GPUs, no VCs, ~3,600 GPU jobs a day, up to "
        "1,024 GPUs, 43% failed",
    ),
    "kalos": _calibrated(
        acme_presets,
        "kalos",
        "Acme Kalos (LLM, 2023), calibrated: 2,416 GPUs, no VCs, ~160 GPU jobs a day, up to "
        "1,024 GPUs, 40% failed",
    ),
    "venus_overloaded": Preset(
        "Venus before calibration: 1,080 GPUs, 16 VCs; ~27,000 jobs in 26 days, queues of days",
        _venus_workload,
        _venus_cluster,
        workload_params=_SYNTHETIC_OVERRIDES,
    ),
    "gavel": Preset(
        "Gavel's 36 V100 + 36 P100 + 36 K80 GPUs, its 26 job types at 1 job/h (GPU-type speeds)",
        gavel_presets.workload,
        gavel_presets.cluster,
        workload_params=("jobs", "jobs_per_hour", "multi_gpu"),
        cluster_params=("gpus_per_node",),
        config=gavel_presets.config(),
        run_config=True,
    ),
    "large": Preset(
        "benchmark scale: 1,000,000 jobs on 10,000 GPUs in 25 VCs at load 0.7",
        _large_workload,
        _large_cluster,
        workload_params=("jobs", "gpus"),
        cluster_params=("gpus",),
    ),
}


def names() -> list[str]:
    """Names of the presets, sorted."""
    return sorted(PRESETS)


def _lookup(
    name: str,
    params: dict,
    accepted: Callable[[Preset], tuple[str, ...]],
    common: tuple[str, ...] = (),
) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known presets: {names()}")
    preset = PRESETS[name]
    unknown = sorted(set(params) - set(accepted(preset)))
    if unknown:
        valid = [*common, *accepted(preset)]
        raise ValueError(
            f"preset {name!r} does not take parameter(s) {unknown}; it takes {valid or 'none'}"
        )
    return preset


def workload(
    name: str, seed: int = 0, load_scale: float = 1.0, days: float | None = None, **params
) -> Workload:
    """The workload of preset ``name`` (see the module docstring for what each gives).

    ``load_scale`` multiplies the arrival rate; ``days`` is the trace length where the preset
    has one (default: 30 for the Helios presets, 26 for ``venus_overloaded``); ``params`` are
    the preset's own parameters (``large``: ``jobs``, ``gpus``; ``gavel``: ``jobs``,
    ``jobs_per_hour``, ``multi_gpu``; ``venus_overloaded``: generator overrides). ``seed``
    is a whole number from 0 (a bool is refused, and so is ``None``: a seed drawn afresh
    would give another month on every call; the default is 0).
    A workload that would take more than 4 GiB to build (days x load_scale far beyond a
    trace) is refused before it is drawn, with the estimate and what to lower. Raises
    ``ValueError`` for an unknown name or parameter.
    """
    preset = _lookup(name, params, lambda p: p.workload_params, ("seed", "load_scale", "days"))
    seed = generators.check_seed(seed)
    days = preset.days if days is None else days
    if days is not None:
        bounded(days, "days", low=0.0, high=MAX_DAYS, low_open=True)
    return preset.workload(seed=seed, load_scale=load_scale, days=days, **params)


def config(name: str) -> SimConfig:
    """The :class:`SimConfig` of the scheduling preset ``name``'s cluster ran: for the Helios
    presets :func:`analysim.presets.helios.config` (sources and assumptions there), for ``seren``
    and ``kalos`` :func:`analysim.presets.acme.config` (assumed Slurm-like); for
    ``toy``, ``large`` and ``venus_overloaded`` the defaults (strict per-VC FIFO), with which
    their earlier numbers were made; for ``gavel`` :func:`analysim.presets.gavel.config`
    (Gavel's 360 s rounds, no checkpoint or migration cost), which ``analysim run --workload
    gavel`` starts from."""
    return _lookup(name, {}, lambda p: ()).config


def run_config(name: str) -> dict:
    """The config fields ``analysim run --workload name`` starts from: those of
    :func:`config` that differ from the defaults when the preset asks for it (``gavel``),
    else none."""
    preset = _lookup(name, {}, lambda p: ())
    if not preset.run_config:
        return {}
    default = SimConfig().to_dict()
    return {k: v for k, v in preset.config.to_dict().items() if v != default[k]}


def cluster(name: str, **params) -> Cluster:
    """The cluster of preset ``name`` (``toy``: ``partition``; ``large``: ``gpus``;
    ``gavel``: ``gpus_per_node``)."""
    preset = _lookup(name, params, lambda p: p.cluster_params)
    return preset.cluster(**params)
