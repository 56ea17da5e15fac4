"""Golden values of realistic runs: four days of ``venus`` at load 1.3, seed 1 (5,382 jobs).

The hand-worked scenarios pin the rules on a few jobs; these pin what thousands of decisions
add up to, under each family of options (preemption, migration, borrowing, quotas, a shared
pool, random placement with backfill). A change of behaviour anywhere in the engine moves at
least one of these numbers. If a change is meant to alter behaviour, work out why each
number moved, then update it here; a speed change must leave them all as they are (see also
``benchmarks/same_results.py``).
"""

from __future__ import annotations

import pytest

from analysim import Cluster, presets, simulate
from analysim.presets import VENUS_VC_GPUS


@pytest.fixture(scope="module")
def workload():
    return presets.workload("venus_overloaded", seed=1, days=4, load_scale=1.3)


CLUSTERS = {
    "venus": lambda: presets.cluster("venus_overloaded"),  # VCs own nodes
    "quotas": lambda: Cluster.uniform(9, 15, 8, quotas=dict(VENUS_VC_GPUS), name="quotas"),
    "pool": lambda: Cluster.uniform(9, 15, 8, name="pool"),
}

# name: (cluster, options, avg_jct, preemptions, migrations, reclaims, makespan)
GOLDEN = {
    "fifo": ("venus", {"scheduler": "fifo"}, 50660.390561129694, 0, 0, 0, 761657.0),
    "las_preemption": (
        "venus",
        {"scheduler": "las", "preemption": True},
        16701.31772575251,
        2995,
        0,
        0,
        672324.0,
    ),
    "sjf_preemption": (
        "venus",
        {"scheduler": "sjf", "preemption": True},
        14061.241360089187,
        1028,
        0,
        0,
        670117.0,
    ),
    "las_preemption_migration_borrowing": (
        "venus",
        {"scheduler": "las", "preemption": True, "migration": True, "borrowing": True},
        12764.609438870308,
        630,
        63,
        794,
        604329.0,
    ),
    "fair_preemption_quotas": (
        "quotas",
        {"scheduler": "fair", "preemption": True},
        42343.071534745446,
        0,
        0,
        0,
        723433.0,
    ),
    "fair_preemption_pool": (
        "pool",
        {"scheduler": "fair", "preemption": True},
        13008.555555555555,
        139,
        0,
        0,
        604329.0,
    ),
    "srtf_preemption_pool": (
        "pool",
        {"scheduler": "srtf", "preemption": True},
        12669.758825715347,
        257,
        0,
        0,
        604329.0,
    ),
    "fifo_backfill_random_migration_pool": (
        "pool",
        {"scheduler": "fifo", "placement": "random", "backfill": True, "migration": True},
        12678.25176514307,
        0,
        226,
        0,
        604329.0,
    ),
}


@pytest.mark.parametrize("name", list(GOLDEN))
def test_a_realistic_run_gives_its_golden_values(workload, name):
    cluster, options, avg_jct, preemptions, migrations, reclaims, makespan = GOLDEN[name]
    summary = simulate(workload, CLUSTERS[cluster](), seed=3, **options).summary()
    assert len(workload.jobs) == 5_382
    assert summary["avg_jct"] == pytest.approx(avg_jct, rel=1e-12)
    assert (summary["preemptions"], summary["migrations"], summary["reclaims"]) == (
        preemptions,
        migrations,
        reclaims,
    )
    assert summary["makespan"] == makespan
