"""The resource model of GPU sharing, the FGD fragmentation measure, the six placers of the
FGD study and the saturation experiment: hand cases, invariants, bad input, and exact
replays of the FGD simulator's runs on the real openb trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.experiments.saturation import read_peer_arrivals, saturation_log
from analysim.sharing import (
    SHARE_PLACERS,
    Context,
    FragMeter,
    NodeState,
    Request,
    ResourceError,
    Tasks,
    typical_shapes,
)
from analysim.sharing.placers import best_fit_gpus, packing_score
from analysim.sharing.resources import Nodes, task_kind

POLICIES = ["fgd", "best_fit", "dot_product", "gpu_packing", "gpu_clustering", "random"]
PEER_NAMES = {
    "fgd": "FGD",
    "best_fit": "BestFit",
    "dot_product": "DotProd",
    "gpu_packing": "GpuPacking",
    "gpu_clustering": "GpuClustering",
    "random": "Random",
}


def nodes_frame(*specs) -> pd.DataFrame:
    """Nodes from (name, cpu_milli, gpus, model); memory 1,000,000 MiB each."""
    return pd.DataFrame(
        [
            {"node": n, "cpu_milli": c, "memory_mib": 1_000_000, "gpus": g, "gpu_type": m}
            for n, c, g, m in specs
        ]
    )


def tasks_frame(*specs) -> pd.DataFrame:
    """Tasks from (name, cpu_milli, num_gpus, gpu_milli); memory 0, no model constraint."""
    return pd.DataFrame(
        [
            {"name": n, "cpu_milli": c, "memory_mib": 0, "num_gpus": k, "gpu_milli": m}
            for n, c, k, m in specs
        ]
    )


def request(cpu: int, num: int, milli: int) -> Request:
    return Request(cpu, 0, num, milli, task_kind(num, milli))


def context(nodes: pd.DataFrame, shapes_from: pd.DataFrame) -> Context:
    state = NodeState(Nodes.from_frame(nodes))
    meter = FragMeter(typical_shapes(Tasks.from_frame(shapes_from)), state.models)
    return Context(state, meter, np.random.default_rng(0))


# -- fragmentation: hand-computed node examples -----------------------------------------------


def three_shapes() -> pd.DataFrame:
    """Shapes with weights 0.5 (a 500-milli share, 4 CPUs), 0.3 (two whole GPUs, 2 CPUs)
    and 0.2 (CPU-only, 1 CPU)."""
    rows = [(f"s{i}", 4000, 1, 500) for i in range(5)]
    rows += [(f"w{i}", 2000, 2, 1000) for i in range(3)]
    rows += [(f"c{i}", 1000, 0, 0) for i in range(2)]
    return tasks_frame(*rows)


def test_typical_shapes_are_the_common_shapes_with_their_frequencies():
    shapes = typical_shapes(Tasks.from_frame(three_shapes()))
    assert [(s.cpu, s.milli, s.num_gpus, s.weight) for s in shapes] == [
        (4000, 500, 1, 0.5),
        (2000, 1000, 2, 0.3),
        (1000, 0, 0, 0.2),
    ]


def test_typical_shapes_stop_at_95_percent_and_renormalise():
    rows = [(f"a{i}", 1000, 1, 500) for i in range(19)] + [("b", 2000, 1, 1000)]
    shapes = typical_shapes(Tasks.from_frame(tasks_frame(*rows)))
    assert [(s.milli, s.weight) for s in shapes] == [(500, 1.0)]  # 19 of 20 = 95 %


def test_node_fragmentation_by_hand():
    # GPUs left [1000, 300] (idle 1300), 8 CPUs left:
    #   share 500 fits: only the 300-milli GPU is too small -> 0.5 * 300 = 150
    #   two whole GPUs: only one is free -> all idle 0.3 * 1300 = 390
    #   CPU-only shape: all idle GPU milli counts (the peer's rule) -> 0.2 * 1300 = 260
    ctx = context(nodes_frame(("n", 8000, 2, "A")), three_shapes())
    ctx.state.place(0, [1], 0, 0, 700, "share-gpu")
    key = ctx.state.key(0)
    assert key == (0, 8000, (1000, 300))
    assert ctx.meter.frag(key) == pytest.approx(800.0)
    buckets = ctx.meter.buckets(key)
    assert buckets[2] == pytest.approx(500.0)  # satisfied part: 0.5 * 1000
    assert sum(buckets) == pytest.approx(1300.0)


def test_a_node_short_of_cpu_is_fragmented_for_every_shape_it_cannot_take():
    # 3 CPUs left: the share (4 CPUs) lacks CPU -> all idle; two whole GPUs fit -> 0;
    # CPU-only fits but counts all idle: 0.5*2000 + 0 + 0.2*2000 = 1400
    ctx = context(nodes_frame(("n", 3000, 2, "A")), three_shapes())
    assert ctx.meter.frag(ctx.state.key(0)) == pytest.approx(1400.0)


def test_a_gpu_model_the_shape_may_not_use_is_fragmented():
    shapes = tasks_frame(("a", 1000, 1, 500))
    shapes["gpu_type"] = ["B|C"]
    ctx = context(nodes_frame(("n", 8000, 1, "A"), ("m", 8000, 1, "B")), shapes)
    assert ctx.meter.frag(ctx.state.key(0)) == 1000.0
    assert ctx.meter.frag(ctx.state.key(1)) == 0.0


# -- the placers: hand cases ------------------------------------------------------------------


def scores(policy: str, ctx: Context, task: Request) -> list[int]:
    nodes = np.arange(len(ctx.state.nodes))
    return SHARE_PLACERS.make(policy).scores(ctx, nodes, task).tolist()


def test_best_fit_scores_the_least_cpu_and_gpu_left_after_placing():
    # (64000 - 8000) / 128000 * 0.5 + (2000 - 500) / 8000 * 0.5 = 0.3125 -> 68
    # (32000 - 8000) / 128000 * 0.5 + (1000 - 500) / 8000 * 0.5 = 0.125 -> 87
    ctx = context(nodes_frame(("a", 64000, 2, "A"), ("b", 32000, 1, "A")), three_shapes())
    assert scores("best_fit", ctx, request(8000, 1, 500)) == [68, 87]


def test_dot_product_scores_one_minus_half_the_normalised_dot_product():
    # (0.5 * 0.0625 + 0.25 * 0.0625) / 2 = 0.0234375 -> 97; (0.25*0.0625 + 0.125*0.0625)/2 -> 98
    ctx = context(nodes_frame(("a", 64000, 2, "A"), ("b", 32000, 1, "A")), three_shapes())
    assert scores("dot_product", ctx, request(8000, 1, 500)) == [97, 98]


def test_gpu_packing_prefers_shared_gpus_then_used_nodes_then_small_idle_nodes():
    ctx = context(
        nodes_frame(("a", 64000, 2, "A"), ("b", 64000, 2, "A"), ("c", 64000, 8, "A")),
        three_shapes(),
    )
    ctx.state.place(1, [1], 0, 0, 600, "share-gpu")  # b: GPUs left [1000, 400]
    # a idle with 2 GPUs: 33 - 2 = 31; b: the 400-milli GPU holds 300: 100 - 40 // 10 = 96;
    # c idle with 8 GPUs: 33 - 8 = 25
    assert scores("gpu_packing", ctx, request(1000, 1, 300)) == [31, 96, 25]
    # 500 milli needs b's free GPU: 50 - 1 = 49
    assert scores("gpu_packing", ctx, request(1000, 1, 500)) == [31, 49, 25]
    assert scores("gpu_packing", ctx, request(1000, 0, 0)) == [0, 0, 0]
    assert packing_score([1000] * 8, request(0, 1, 500)) == 25
    assert packing_score([0, 0, 0, 1000], request(0, 1, 1000)) == 49


def test_gpu_clustering_bands_by_the_kinds_of_tasks_on_the_node():
    ctx = context(nodes_frame(*[(n, 64000, 2, "A") for n in "abcd"]), three_shapes())
    ctx.state.place(1, [0], 0, 0, 500, "share-gpu")  # b: only shares, 1500 left
    ctx.state.place(2, [0], 0, 0, 500, "share-gpu")  # c: shares and a whole GPU, 500 left
    ctx.state.place(2, [1], 0, 0, 1000, "1-gpu")
    ctx.state.place(3, [0], 0, 0, 1000, "1-gpu")  # d: only whole GPUs, 1000 left
    # base 25 * (8000 - left) // 8000: a 18, b 20, c 23, d 21; bands +25, +75, +50, +0
    assert scores("gpu_clustering", ctx, request(1000, 1, 300)) == [43, 95, 73, 21]
    assert scores("gpu_clustering", ctx, request(1000, 0, 0)) == [0, 0, 0, 0]


def test_fgd_prefers_the_placement_that_adds_least_fragmentation():
    # one target shape: a 600-milli share. Node a (one free GPU): placing 500 leaves 500,
    # too small for 600: fragmentation 0 -> 500, score int(sigmoid(-0.5) * 100) = 37.
    # Node b (GPU with 500 left, already fragmented): 500 -> 0, score sigmoid(0.5) -> 62.
    shapes = tasks_frame(("s", 0, 1, 600))
    ctx = context(nodes_frame(("a", 8000, 1, "A"), ("b", 8000, 1, "A")), shapes)
    ctx.state.place(1, [0], 0, 0, 500, "share-gpu")
    assert scores("fgd", ctx, request(0, 1, 500)) == [37, 62]


def test_fgd_picks_the_gpu_whose_use_fragments_least_inside_a_node():
    # GPUs left [1000, 700, 600]: a 600 share on GPU 2 empties it (no new fragment); on
    # GPU 1 it leaves 100, on GPU 0 400: both below 600.
    shapes = tasks_frame(("s", 0, 1, 600))
    ctx = context(nodes_frame(("a", 8000, 3, "A")), shapes)
    ctx.state.place(0, [1], 0, 0, 300, "share-gpu")
    ctx.state.place(0, [2], 0, 0, 400, "share-gpu")
    fgd = SHARE_PLACERS.make("fgd")
    assert fgd.choose_gpus(ctx, 0, request(0, 1, 600)) == [2]
    twin = context(nodes_frame(("b", 8000, 2, "A")), shapes)
    assert fgd.choose_gpus(twin, 0, request(0, 1, 300)) == [0]  # equal scores: first GPU


def test_gpu_choice_best_fit_share_and_first_free_whole_gpus():
    assert best_fit_gpus([1000, 600, 700, 600], request(0, 1, 500)) == [1]
    assert best_fit_gpus([300, 1000, 0, 1000, 1000], request(0, 2, 1000)) == [1, 3]
    assert best_fit_gpus([300, 1000], request(0, 0, 0)) == []


def test_random_places_on_a_node_that_fits_and_repeats_with_the_seed():
    nodes = nodes_frame(("a", 1000, 1, "A"), ("b", 8000, 1, "A"), ("c", 8000, 1, "A"))
    tasks = tasks_frame(*[(f"t{i}", 2000, 1, 100) for i in range(6)])
    one = saturation_log(tasks, nodes, placement="random", seed=3, arrivals=tasks["name"])
    two = saturation_log(tasks, nodes, placement="random", seed=3, arrivals=tasks["name"])
    assert one["node"].tolist() == two["node"].tolist()
    assert set(one["node"]) <= {"b", "c"}  # a lacks the CPU


def test_ties_go_to_the_smallest_tie_break_prefix():
    nodes = nodes_frame(("a", 8000, 1, "A"), ("b", 8000, 1, "A"))
    tasks = tasks_frame(("t", 1000, 1, 1000))
    plain = saturation_log(tasks, nodes, placement="best_fit", arrivals=["t"], tie_break="name")
    swapped = saturation_log(
        tasks, nodes, placement="best_fit", arrivals=["t"], tie_break={"a": "0002", "b": "0001"}
    )
    assert plain["node"].tolist() == ["a"] and swapped["node"].tolist() == ["b"]


def test_a_small_saturation_run_by_hand():
    # two nodes of 2 GPUs; best_fit packs shares onto the same GPU, whole GPUs on free ones
    nodes = nodes_frame(("a", 16000, 2, "A"), ("b", 16000, 2, "A"))
    tasks = tasks_frame(
        ("s1", 1000, 1, 600),
        ("s2", 1000, 1, 400),
        ("w", 1000, 2, 1000),
        ("big", 1000, 2, 1000),
        ("c", 1000, 0, 0),
    )
    log = saturation_log(
        tasks, nodes, placement="best_fit", arrivals=tasks["name"], tie_break="name"
    )
    # the CPU task: a keeps 14 CPUs and a free GPU (score 88), b 15 CPUs and none (94)
    assert log["node"].tolist() == ["a", "a", "b", "", "b"]
    assert log["gpu_index"].tolist() == ["0", "0", "0-1", "", ""]
    assert log["arrived_gpu_milli"].tolist() == [600, 1000, 3000, 5000, 5000]
    assert log["used_gpu_milli"].tolist() == [600, 1000, 3000, 3000, 3000]
    assert log["failed"].tolist() == [0, 0, 0, 1, 1]


def test_a_custom_placer_plugs_in():
    class MostCpuLeft(asim.sharing.SharePlacer):
        name = "most_cpu_left"

        def scores(self, ctx, nodes, task):
            return ctx.state.cpu_left[nodes]

    nodes = nodes_frame(("a", 8000, 1, "A"), ("b", 16000, 1, "A"))
    tasks = tasks_frame(("t", 1000, 1, 500))
    log = saturation_log(tasks, nodes, placement=MostCpuLeft(), arrivals=["t"])
    assert log["node"].tolist() == ["b"]


# -- invariants -------------------------------------------------------------------------------


@st.composite
def small_cases(draw):
    n_nodes = draw(st.integers(1, 4))
    nodes = nodes_frame(
        *[
            (
                f"n{i}",
                draw(st.sampled_from([4000, 8000, 16000])),
                draw(st.sampled_from([1, 2, 4])),
                draw(st.sampled_from(["A", "B"])),
            )
            for i in range(n_nodes)
        ]
    )
    nodes["memory_mib"] = [draw(st.sampled_from([4000, 16000])) for _ in range(n_nodes)]
    rows = []
    for i in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["share", "whole", "cpu"]))
        num = 0 if kind == "cpu" else 1 if kind == "share" else draw(st.sampled_from([1, 2, 4]))
        milli = draw(st.integers(1, 999)) if kind == "share" else 1000 if num else 0
        rows.append(
            {
                "name": f"t{i}",
                "cpu_milli": draw(st.sampled_from([0, 1000, 3000])),
                "memory_mib": draw(st.sampled_from([0, 2000, 4000])),
                "num_gpus": num,
                "gpu_milli": milli,
                "gpu_type": draw(st.sampled_from(["", "A", "A|B"])),
            }
        )
    tasks = pd.DataFrame(rows)
    tasks["num_gpus"] = tasks["num_gpus"].clip(upper=nodes["gpus"].max())
    tasks["cpu_milli"] = tasks["cpu_milli"].clip(upper=nodes["cpu_milli"].max())
    tasks["memory_mib"] = tasks["memory_mib"].clip(upper=nodes["memory_mib"].max())
    return nodes, tasks, draw(st.sampled_from(POLICIES))


@settings(max_examples=60, deadline=None)
@given(small_cases())
def test_no_gpu_over_1000_milli_no_node_over_cpu_or_memory_and_failures_had_no_room(case):
    nodes, tasks, policy = case
    log = saturation_log(tasks, nodes, placement=policy, arrivals=tasks["name"])
    cpu = dict(zip(nodes["node"], nodes["cpu_milli"], strict=True))
    mem = dict(zip(nodes["node"], nodes["memory_mib"], strict=True))
    gpus = {n: [1000] * g for n, g in zip(nodes["node"], nodes["gpus"], strict=True)}
    model = dict(zip(nodes["node"], nodes["gpu_type"], strict=True))
    spec = tasks.set_index("name")
    for row in log.itertuples():
        t = spec.loc[row.task]
        if row.node == "":  # it failed: no node had room
            for n in cpu:
                allowed = not t.gpu_type or model[n] in t.gpu_type.split("|")
                room = sum(g >= t.gpu_milli for g in gpus[n]) >= t.num_gpus
                assert not (
                    cpu[n] >= t.cpu_milli
                    and mem[n] >= t.memory_mib
                    and (t.num_gpus == 0 or (allowed and room))
                )
            continue
        cpu[row.node] -= t.cpu_milli
        mem[row.node] -= t.memory_mib
        taken = [int(g) for g in row.gpu_index.split("-")] if row.gpu_index else []
        assert len(taken) == t.num_gpus and len(set(taken)) == len(taken)
        for g in taken:
            gpus[row.node][g] -= t.gpu_milli
        if t.num_gpus:
            assert not t.gpu_type or model[row.node] in t.gpu_type.split("|")
        assert cpu[row.node] >= 0 and mem[row.node] >= 0
        assert all(0 <= g <= 1000 for g in gpus[row.node])
    assert (log["used_gpu_milli"] <= log["arrived_gpu_milli"]).all()
    plain = saturation_log(tasks, nodes, placement=policy, arrivals=tasks["name"], reference=True)
    pd.testing.assert_frame_equal(log, plain)  # the shortcuts change nothing


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("gpu_milli", 1500, "between 1 and 1000"),
        ("gpu_milli", -5, ">= 0"),
        ("cpu_milli", 2.5, "whole number"),
    ],
)
def test_bad_task_values_name_column_and_row(column, value, words):
    tasks = tasks_frame(("a", 1000, 1, 500), ("b", 1000, 1, 500)).astype({column: float})
    tasks.loc[1, column] = value
    with pytest.raises(ResourceError, match=rf"{column}.*{words}.*row 1"):
        Tasks.from_frame(tasks)


def test_a_share_of_several_gpus_is_refused():
    with pytest.raises(ResourceError, match=r"num_gpus.*share.*row 0"):
        Tasks.from_frame(tasks_frame(("a", 1000, 2, 500)))


def test_a_task_larger_than_every_node_is_refused_by_name():
    nodes = nodes_frame(("a", 8000, 2, "A"))
    with pytest.raises(ResourceError, match=r"cpu_milli.*'big'.*9000"):
        asim.saturate(tasks_frame(("ok", 1000, 1, 500), ("big", 9000, 1, 500)), nodes)
    with pytest.raises(ResourceError, match=r"num_gpus.*'wide'"):
        asim.saturate(tasks_frame(("wide", 1000, 4, 1000)), nodes)


def test_negative_node_capacity_is_refused():
    nodes = nodes_frame(("a", -8000, 2, "A"))
    with pytest.raises(ResourceError, match=r"nodes: column 'cpu_milli'.*>= 0.*row 0"):
        asim.saturate(tasks_frame(("t", 1000, 1, 500)), nodes)


def test_unknown_placement_and_unknown_arrival_names():
    nodes = nodes_frame(("a", 8000, 2, "A"))
    tasks = tasks_frame(("t", 1000, 1, 500))
    with pytest.raises(ValueError, match="unknown share placement 'consolidate'"):
        asim.saturate(tasks, nodes, placement="consolidate")
    with pytest.raises(ResourceError, match="'nope'"):
        asim.saturate(tasks, nodes, arrivals=["t", "nope"])


def test_read_openb_tasks_counts_bad_rows(tmp_path):
    pods = tmp_path / "openb_pod_list_x.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        "p0,1000,100,1,500,\n"
        "p1,1000,100,0,0,\n"
        "p2,1000,100,1,1500,\n"
        "p3,1000,100,2,500,\n"
        "p4,99000,100,1,1000,\n"
        "p5,-1,100,1,1000,\n"
        "p0,1000,100,1,1000,\n"
    )
    nodes = tmp_path / "openb_node_list_x.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1000,2,P100\n")
    trace = asim.traces.read_openb_tasks(tmp_path)
    assert trace.tasks["name"].tolist() == ["p0", "p1"]
    report = trace.report
    assert report.count("bad_value") == 3 and report.count("oversized") == 1
    assert report.count("duplicate_id") == 1 and report.count("cpu_task") == 1
    assert trace.nodes.to_dict("records") == [
        {"node": "n0", "cpu_milli": 64000, "memory_mib": 1000, "gpus": 2, "gpu_type": "P100"}
    ]


# -- the real openb trace against the FGD simulator -------------------------------------------


def peer_files(shared: Path, seed: int) -> tuple:
    data = shared / "fgd" / "seed_orders"
    return (
        data / f"openb_pod_list_default_tune1.3_seed{seed}_arrivals.csv",
        data / f"openb_pod_list_default_seed{seed}_node_prefix.csv",
    )


@pytest.fixture(scope="module")
def openb():
    return asim.traces.read_openb_tasks("bundled:openb")


@pytest.mark.parametrize(("policy", "peer"), [("fgd", "06-FGD"), ("best_fit", "05-BestFit")])
def test_every_placement_of_the_peers_seed_42_runs_is_replayed_exactly(
    openb, shared_data, policy, peer
):
    arrivals, prefixes = peer_files(shared_data, 42)
    golden = pd.read_csv(
        shared_data / "fgd" / f"trace_openb_pod_list_default_{peer}_tune1.3_seed42.csv",
        dtype={"gpu_index": str},
    )
    log = saturation_log(openb, placement=policy, arrivals=arrivals, tie_break=prefixes)
    node = golden["node"].fillna("").str.replace(r"^\d+-", "", regex=True)
    assert len(log) == len(golden) == 10866
    assert (log["node"].to_numpy() == node.to_numpy()).sum() == 10866
    assert (log["gpu_index"].to_numpy() == golden["gpu_index"].fillna("").to_numpy()).all()
    assert (log["used_gpu_milli"].to_numpy() == golden["used_gpu_milli"].to_numpy()).all()
    assert np.abs(log["frag_milli"] - golden["frag_milli_origin"]).max() < 0.006
    assert (log["frag_ratio"].round(2) == golden["frag_ratio_origin"]).all()
    curve = asim.saturation.saturation_curve(log, total_gpus=int(openb.nodes["gpus"].sum()))
    expected = pd.read_csv(shared_data / "fgd" / "fgd_expected_default.csv")
    expected = expected[(expected["policy"] == PEER_NAMES[policy]) & (expected["seed"] == 42)]
    expected = expected.set_index("arrived_pct").loc[curve["arrived_pct"]]
    assert (curve["allocated_pct"].to_numpy() == expected["alloc_pct"].to_numpy()).all()
    assert np.allclose(curve["frag_ratio_pct"], expected["frag_ratio_pct"], atol=1e-9)
    assert np.allclose(curve["frag_amount_pct"], expected["frag_amount_pct"], atol=0.011)


def curves(openb, shared: Path, seeds, own: bool) -> pd.DataFrame:
    frames = []
    for policy in POLICIES:
        for seed in seeds:
            if own:
                curve = asim.saturate(openb, placement=policy, seed=seed)
            else:
                arrivals, prefixes = peer_files(shared, seed)
                curve = asim.saturate(
                    openb, placement=policy, seed=seed, arrivals=arrivals, tie_break=prefixes
                )
            frames.append(curve.assign(policy=PEER_NAMES[policy], seed=seed))
    return pd.concat(frames)


def assert_close_to_peer(ours: pd.DataFrame, shared_data: Path, peer_seeds) -> None:
    expected = pd.read_csv(shared_data / "fgd" / "fgd_expected_default.csv")
    expected = expected[expected["seed"].isin(peer_seeds)]
    peer = expected.groupby(["policy", "arrived_pct"])[["alloc_pct", "frag_ratio_pct"]].mean()
    mine = ours.groupby(["policy", "arrived_pct"])[["allocated_pct", "frag_ratio_pct"]].mean()
    for pct in (100, 110, 120, 130):
        gap = mine.xs(pct, level=1)["allocated_pct"] - peer.xs(pct, level=1)["alloc_pct"]
        assert gap.abs().max() <= 1.0, (pct, gap)
    for pct in (50, 80):
        gap = mine.xs(pct, level=1)["frag_ratio_pct"] - peer.xs(pct, level=1)["frag_ratio_pct"]
        assert gap.abs().max() <= 3.0, (pct, gap)
    final = mine.xs(130, level=1)["allocated_pct"]
    assert final.idxmax() == "FGD" and final.idxmin() == "Random"


def test_with_the_peers_arrival_orders_the_six_policies_match_its_means(openb, shared_data):
    seeds = [43]
    assert_close_to_peer(curves(openb, shared_data, seeds, own=False), shared_data, seeds)


def test_with_our_own_sampling_the_six_policies_match_the_peers_means(openb, shared_data):
    ours = curves(openb, shared_data, [0, 1], own=True)
    assert_close_to_peer(ours, shared_data, range(42, 52))


# -- sweep and command line -------------------------------------------------------------------


def tiny_folder(tmp_path: Path) -> Path:
    (tmp_path / "openb_pod_list_t.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        + "".join(f"p{i},1000,100,1,{300 + 100 * (i % 5)},\n" for i in range(12))
        + "w0,2000,100,2,1000,\nc0,500,100,0,0,\n"
    )
    (tmp_path / "openb_node_list_t.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,1000,2,A\nn1,8000,1000,4,B\n"
    )
    return tmp_path


def test_saturate_sweep_gives_one_curve_per_placement_and_seed(tmp_path):
    from analysim.experiments.saturation.sweep import saturate_sweep

    frame = saturate_sweep(
        str(tiny_folder(tmp_path)), placements=["fgd", "random"], seeds=[0, 1], inflate=1.0
    )
    assert sorted(set(zip(frame["placement"], frame["seed"], strict=False))) == [
        ("fgd", 0),
        ("fgd", 1),
        ("random", 0),
        ("random", 1),
    ]
    assert frame.groupby(["placement", "seed"]).size().eq(101).all()
    one = asim.saturate(str(tmp_path), placement="random", seed=1, inflate=1.0)
    mine = frame[(frame["placement"] == "random") & (frame["seed"] == 1)]
    assert mine["allocated_pct"].fillna(-1).tolist() == one["allocated_pct"].fillna(-1).tolist()


def test_the_saturate_command_prints_the_mean_curve(tmp_path, capsys):
    from analysim.faces.cli import main

    out = tmp_path / "curves.csv"
    code = main(
        [
            "saturate",
            "--trace",
            str(tiny_folder(tmp_path)),
            "--placement",
            "best_fit",
            "gpu_packing",
            "--seeds",
            "0",
            "1",
            "--inflate",
            "1.0",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "best_fit" in printed and "gpu_packing" in printed and "alloc@100" in printed
    assert len(pd.read_csv(out)) == 2 * 2 * 101
    assert main(["saturate", "--trace", str(tmp_path), "--placement", "consolidate"]) == 2


def test_one_fgd_instance_reused_on_another_workload_scores_afresh():
    fgd = SHARE_PLACERS.make("fgd")
    nodes = nodes_frame(("a", 8000, 1, "A"), ("b", 8000, 1, "A"))
    first = context(nodes, tasks_frame(("s", 0, 1, 600)))
    first.state.place(1, [0], 0, 0, 500, "share-gpu")
    assert fgd.scores(first, np.arange(2), request(0, 1, 500)).tolist() == [37, 62]
    # same node states, but the target workload is now a 300 share: a 500 share on the idle
    # node leaves 500 (fits 300): no fragment; on b it leaves 0: no change either
    second = context(nodes, tasks_frame(("s", 0, 1, 300)))
    second.state.place(1, [0], 0, 0, 500, "share-gpu")
    assert fgd.scores(second, np.arange(2), request(0, 1, 500)).tolist() == [50, 50]


def test_read_openb_tasks_can_round_shares_up_to_whole_gpus(tmp_path):
    folder = tiny_folder(tmp_path)
    kept = asim.traces.read_openb_tasks(folder)
    whole = asim.traces.read_openb_tasks(folder, round_up_shares=True)
    assert kept.tasks["gpu_milli"].tolist()[:5] == [300, 400, 500, 600, 700]
    assert whole.tasks["gpu_milli"].tolist() == [1000] * 13 + [0]
    assert whole.report.count("rounded_up_gpu") == 12 and kept.report.count("gpu_share") == 12


def test_saturate_sweep_on_dask_gives_the_same_curves(tmp_path):
    pytest.importorskip("distributed")
    from analysim.sweep.runner import local_cluster

    folder = str(tiny_folder(tmp_path))
    here = asim.saturation.saturate_sweep(
        folder, placements=["fgd", "random"], seeds=[0, 1], inflate=1.0
    )
    with local_cluster(1) as client:
        there = asim.saturation.saturate_sweep(
            folder, placements=["fgd", "random"], seeds=[0, 1], inflate=1.0, client=client
        )
    pd.testing.assert_frame_equal(here, there)


def test_a_custom_placer_that_breaks_the_rules_is_stopped():
    class Greedy(asim.sharing.SharePlacer):
        name = "greedy"

        def scores(self, ctx, nodes, task):
            return np.zeros(len(nodes), dtype=np.int64)

        def choose_gpus(self, ctx, node, task):
            return [0] * task.num_gpus  # the same GPU twice

    nodes = nodes_frame(("a", 8000, 2, "A"))
    tasks = tasks_frame(("t", 1000, 2, 1000))
    with pytest.raises(AssertionError, match="'greedy' gave task 't' GPUs"):
        saturation_log(tasks, nodes, placement=Greedy(), arrivals=["t"])
    tasks = tasks_frame(("s", 1000, 1, 600), ("u", 1000, 1, 600))

    class SameGpu(Greedy):
        name = "same_gpu"

    with pytest.raises(AssertionError, match="over 1000 milli"):
        saturation_log(tasks, nodes, placement=SameGpu(), arrivals=["s", "u"])


def test_the_shortcuts_change_no_placement_of_a_real_run(openb, shared_data):
    arrivals, prefixes = peer_files(shared_data, 42)
    names = read_peer_arrivals(arrivals)[:3000]
    fast = saturation_log(openb, placement="fgd", arrivals=names, tie_break=prefixes)
    plain = saturation_log(
        openb, placement="fgd", arrivals=names, tie_break=prefixes, reference=True
    )
    pd.testing.assert_frame_equal(fast, plain)
