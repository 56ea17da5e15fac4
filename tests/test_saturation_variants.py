"""The saturation experiment on the openb variants of the FGD study (more multi-GPU tasks,
GPU-model constraints, more sharing, more CPU tasks) against the FGD simulator's cached
curves, point by point, with the peer's arrival orders (tests/data/fgd_variants/README.md);
and the two rules these variants need: tune-down of an over-demanding trace and the peer's
curve roundings, on hand cases."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import analysim as asim
from analysim.experiments.saturation.peer import compare_with_peer, count_matching
from analysim.experiments.saturation.run import sample_arrivals, saturation_curve
from analysim.sharing.resources import Tasks

DATA = Path(__file__).parent / "data" / "fgd_variants"
NODES = Path(asim.__file__).parent / "data" / "openb" / "openb_node_list_gpu_node.csv"
RUNS = [
    ("multigpu50", 42, "fgd"),
    ("multigpu50", 42, "gpu_packing"),
    ("gpuspec33", 43, "fgd"),
    ("gpuspec33", 43, "best_fit"),
    ("gpushare100", 51, "dot_product"),
    ("gpushare100", 51, "gpu_clustering"),
    ("cpu250", 42, "gpu_clustering"),
    ("cpu250", 42, "best_fit"),
]

needs_data = pytest.mark.skipif(
    not (DATA / "peer_curves.csv").is_file(),
    reason="tests/data/fgd_variants/ is absent (the openb variants of the FGD simulator)",
)


def gunzip(path: Path, folder: Path) -> Path:
    out = folder / path.name.removesuffix(".gz")
    if not out.exists():
        with gzip.open(path, "rb") as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return out


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fgd_variants")
    for path in DATA.glob("*.gz"):
        gunzip(path, folder)
    return folder


@needs_data
@pytest.mark.parametrize(("workload", "seed", "policy"), RUNS)
def test_variant_curves_equal_the_peers_at_every_point(unpacked, workload, seed, policy):
    trace = asim.traces.read_openb_tasks(unpacked / f"openb_pod_list_{workload}.csv", NODES)
    stem = f"openb_pod_list_{workload}"
    curve = asim.saturate(
        trace,
        placement=policy,
        arrivals=unpacked / f"{stem}_tune1.3_seed{seed}_arrivals.csv",
        tie_break=unpacked / f"{stem}_seed{seed}_node_prefix.csv",
    )
    peer = pd.read_csv(DATA / "peer_curves.csv")
    peer = peer.query("workload == @workload and seed == @seed and policy == @policy")
    assert len(peer) == 131
    counts = count_matching(compare_with_peer(curve, peer))
    assert counts == {
        "allocated_pct": (131, 131, 0.0),
        "frag_ratio_pct": (131, 131, counts["frag_ratio_pct"][2]),
        "frag_amount_pct": (131, 131, counts["frag_amount_pct"][2]),
    }
    assert counts["frag_ratio_pct"][2] < 1e-9 and counts["frag_amount_pct"][2] <= 0.011


@needs_data
def test_multigpu50_is_tuned_down_to_the_target(unpacked):
    """multigpu50 asks for more than 1.3 x the 6,212 GPUs: the peer drops tasks, it adds no
    clone, and what is left is within the target while one more task would not be."""
    trace = asim.traces.read_openb_tasks(unpacked / "openb_pod_list_multigpu50.csv", NODES)
    tasks = Tasks.from_frame(trace.tasks)
    total = tasks.total_gpu_milli()
    target = 1.3 * 6212 * 1000
    assert total.sum() > target
    names = asim.saturation.read_peer_arrivals(
        unpacked / "openb_pod_list_multigpu50_tune1.3_seed42_arrivals.csv"
    )
    assert not any("-tuned-" in n for n in names) and len(set(names)) == len(names) == 6361
    by_name = dict(zip(tasks.names.tolist(), total.tolist(), strict=True))
    peer_demand = sum(by_name[n] for n in names)
    assert peer_demand <= target
    for seed in (0, 1):
        order = sample_arrivals(tasks, 6212 * 1000, 1.3, np.random.default_rng(seed))
        assert len(np.unique(order)) == len(order) < len(tasks)
        assert total[order].sum() <= target


# -- the rules on hand cases --------------------------------------------------------------


def tiny_tasks(gpus: list[tuple[int, int]]) -> Tasks:
    return Tasks.from_frame(
        pd.DataFrame(
            {
                "name": [f"t{i}" for i in range(len(gpus))],
                "cpu_milli": 1000,
                "memory_mib": 10,
                "num_gpus": [n for n, _ in gpus],
                "gpu_milli": [m for _, m in gpus],
                "gpu_type": "",
            }
        )
    )


def test_tune_down_removes_uniformly_drawn_tasks_until_within_the_target():
    """Tasks t0 (2 GPUs), t1, t2 (1 GPU each), t3 (share 500): demand 4,500 milli against a
    target of 1.0 x 2,000. Each step draws one of the tasks left (in the shuffled order) and
    removes it, subtracting its total; the others keep their order."""
    tasks = tiny_tasks([(2, 1000), (1, 1000), (1, 1000), (1, 500)])
    total = [2000, 1000, 1000, 500]
    for seed in range(20):
        got = sample_arrivals(tasks, 2000, 1.0, np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        kept = rng.permutation(4).tolist()  # names sort as t0..t3
        demand = 4500
        while demand > 2000:
            demand -= total[kept.pop(int(rng.integers(len(kept))))]
        assert got.tolist() == kept
        assert sum(total[i] for i in got) <= 2000


def test_demand_equal_to_the_target_is_left_as_it_is():
    tasks = tiny_tasks([(1, 1000), (1, 500), (1, 500)])
    order = sample_arrivals(tasks, 1000, 2.0, np.random.default_rng(3))
    assert sorted(order.tolist()) == [0, 1, 2]


def test_tune_up_is_unchanged_below_the_target():
    """Below the target the clones are appended while the demand plus the drawn task's
    per-GPU milli stays within it (a 2-GPU task counts 1,000 in the test, 2,000 in the sum)."""
    tasks = tiny_tasks([(2, 1000)])
    order = sample_arrivals(tasks, 1000, 3.5, np.random.default_rng(0))
    # 2,000 + 1,000 <= 3,500: clone (4,000); 4,000 + 1,000 > 3,500: stop
    assert order.tolist() == [0, 0]


def log_of(used: list[int], arrived: list[int]) -> pd.DataFrame:
    n = len(used)
    return pd.DataFrame(
        {
            "arrived_gpu_milli": arrived,
            "used_gpu_milli": used,
            "frag_milli": np.zeros(n),
            "frag_ratio": np.zeros(n),
            "failed": np.zeros(n, dtype=int),
        }
    )


def test_curve_rounds_per_arrival_with_python_and_the_mean_with_numpy():
    """100 GPUs: 15 milli used is 0.015 % (Python rounds the binary 0.015 down: 0.01; numpy
    would give 0.02). Two arrivals at 10 and 20 milli average 0.015, which numpy rounds to
    0.02 (Python's round would give 0.01): the peer's pandas code does exactly this."""
    one = saturation_curve(log_of([15], [15]), total_gpus=100, top_pct=0)
    assert one["allocated_pct"].tolist() == [0.01]
    two = saturation_curve(log_of([10, 20], [10, 20]), total_gpus=100, top_pct=0)
    assert two["allocated_pct"].tolist() == [0.02]
    assert round(0.015, 2) == 0.01 and float(np.round(np.float64(0.015), 2)) == 0.02


def test_default_dot_product_seed_51_needs_the_peers_roundings(shared_data):
    """openb default, `dot_product`, the peer's seed-51 order: every point equals the peer's;
    one of them (a mean ending in exactly 5 at the third decimal) only with numpy's rounding
    of the mean, as in the peer's pandas scripts."""
    folder = shared_data / "fgd" / "seed_orders"
    trace = asim.traces.read_openb_tasks("bundled:openb")
    log = asim.saturation.saturation_log(
        trace,
        placement="dot_product",
        arrivals=folder / "openb_pod_list_default_tune1.3_seed51_arrivals.csv",
        tie_break=folder / "openb_pod_list_default_seed51_node_prefix.csv",
    )
    curve = saturation_curve(log, 6212)
    peer = pd.read_csv(shared_data / "fgd" / "fgd_expected_default.csv")
    peer = peer.query("policy == 'DotProd' and seed == 51").set_index("arrived_pct")
    ours = curve.set_index("arrived_pct")["allocated_pct"]
    assert (ours == peer["alloc_pct"].loc[ours.index]).all()
    alloc = np.array([round(x, 2) for x in (log["used_gpu_milli"] / 6212 / 10).tolist()])
    arrive = np.array([round(x, 0) for x in (log["arrived_gpu_milli"] / 6212 / 10).tolist()])
    means = [pd.Series(alloc[arrive == p]).mean() for p in range(131)]
    python_round = np.array([round(float(m), 2) for m in means])
    assert (python_round != ours.to_numpy()).sum() == 1


def write_peer_folder(
    folder: Path, allo_header: str = "workload,sc_policy,tune,seed,total_gpus"
) -> None:
    rows = {
        "analysis_allo_discrete.csv": (allo_header, "openb_pod_list_x,06-FGD,1.3,42,2,0.5,1.0"),
        "analysis_frag_ratio_discrete.csv": (
            "workload,sc_policy,tune,seed",
            "openb_pod_list_x,06-FGD,1.3,42,10.0,20.0",
        ),
        "analysis_frag_discrete.csv": (
            "workload,sc_policy,tune,seed",
            "openb_pod_list_x,06-FGD,1.3,42,3.0,4.0",
        ),
    }
    for name, (header, row) in rows.items():
        (folder / name).write_text(f"{header},0,1\n{row}\n")


def test_read_peer_curves_makes_one_tidy_row_per_point(tmp_path):
    write_peer_folder(tmp_path)
    table = asim.saturation.read_peer_curves(tmp_path)
    assert table.to_dict("records") == [
        {"workload": "x", "policy": "fgd", "tune": 1.3, "seed": 42, "arrived_pct": 0,
         "alloc_pct": 0.5, "frag_ratio_pct": 10.0, "frag_amount_pct": 3.0},
        {"workload": "x", "policy": "fgd", "tune": 1.3, "seed": 42, "arrived_pct": 1,
         "alloc_pct": 1.0, "frag_ratio_pct": 20.0, "frag_amount_pct": 4.0},
    ]  # fmt: skip
    curve = pd.DataFrame(
        {"arrived_pct": [0, 1], "allocated_pct": [0.5, 1.01], "frag_ratio_pct": [10.0, 20.0],
         "frag_amount_pct": [3.0, 4.02]}
    )  # fmt: skip
    counts = count_matching(compare_with_peer(curve, table))
    assert counts["allocated_pct"][:2] == (1, 2) and counts["frag_ratio_pct"] == (2, 2, 0.0)
    assert counts["frag_amount_pct"][:2] == (1, 2)


def test_read_peer_curves_names_the_file_and_the_missing_column(tmp_path):
    write_peer_folder(tmp_path, allo_header="workload,policy,tune,seed,total_gpus")
    with pytest.raises(
        asim.sharing.ResourceError, match="analysis_allo_discrete.csv: no column 'sc_policy'"
    ):
        asim.saturation.read_peer_curves(tmp_path)
    write_peer_folder(tmp_path)
    (tmp_path / "analysis_frag_discrete.csv").unlink()
    with pytest.raises(asim.sharing.ResourceError, match="analysis_frag_discrete.csv is missing"):
        asim.saturation.read_peer_curves(tmp_path)
