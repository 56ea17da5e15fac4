"""SimConfig: defaults, plain-data round trips, errors that name the field, policy specs."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from analysim import Cluster, SimConfig, Workload, simulate
from analysim.policies import LAS, PLACERS, SCHEDULERS, Constant, FairShare
from analysim.policies.placement import FirstFit


def test_defaults():
    config = SimConfig()
    assert config.scheduler == "fifo"
    assert config.placement == "consolidate"
    assert config.preemption is False
    assert config.quantum == 60.0
    assert config.checkpoint_cost == {"name": "size_scaled"}
    assert config.backfill is False
    assert config.migration is False
    assert config.migration_cost == {"name": "size_scaled"}
    assert config.defrag_every is None
    assert config.borrowing is False
    assert config.borrow_limit == 1.0
    assert config.step == 1.0
    assert config.sample_every == 300.0
    assert config.seed == 0
    assert config.leap is True
    assert SimConfig.fields() == [
        "scheduler",
        "placement",
        "preemption",
        "quantum",
        "checkpoint_cost",
        "backfill",
        "migration",
        "migration_cost",
        "rescale_cost",
        "defrag_every",
        "borrowing",
        "borrow_limit",
        "step",
        "sample_every",
        "seed",
        "leap",
        "node_mtbf",
        "failure_shape",
        "repair_time",
        "checkpoint_every",
        "restart_overhead",
        "failures",
        "job_failure_prob",
        "retry_failed",
        "fates",
        "spare_nodes",
    ]


def test_dict_and_json_round_trip():
    config = SimConfig(
        scheduler={"name": "las", "thresholds": [100, 1000]},
        placement="topology",
        preemption=True,
        quantum=30,
        checkpoint_cost=25,
        backfill=True,
        step=5,
        sample_every=60,
        seed=7,
        leap=False,
    )
    plain = config.to_dict()
    assert SimConfig.from_dict(plain) == config
    assert json.loads(config.to_json()) == plain
    assert SimConfig.from_dict(json.loads(config.to_json())) == config
    assert SimConfig.from_dict(SimConfig().to_dict()) == SimConfig()


def test_from_dict_fills_in_defaults():
    assert SimConfig.from_dict({"scheduler": "sjf"}) == SimConfig(scheduler="sjf")
    assert SimConfig.from_dict({}) == SimConfig()


def test_an_unknown_key_is_named():
    with pytest.raises(ValueError) as info:
        SimConfig.from_dict({"scheduler": "fifo", "quantumm": 5, "preempt": True})
    message = str(info.value)
    assert "'quantumm'" in message and "'preempt'" in message
    assert "quantum" in message  # the options it could have been


def test_replace_changes_fields_and_refuses_unknown_ones():
    config = SimConfig().replace(scheduler="srtf", quantum=5)
    assert (config.scheduler, config.quantum, config.placement) == ("srtf", 5, "consolidate")
    with pytest.raises(ValueError, match="'colour'"):
        SimConfig().replace(colour="red")


@pytest.mark.parametrize("field", ["step", "quantum", "sample_every"])
@pytest.mark.parametrize("value", [0, -1, -0.5, math.inf, math.nan, "5", None, True])
def test_a_bad_duration_names_the_field(field, value):
    values = {"quantum": 60, field: value}
    with pytest.raises(ValueError) as info:
        SimConfig(**values)
    assert field in str(info.value)
    assert repr(value) in str(info.value)


def test_quantum_must_be_a_multiple_of_step():
    with pytest.raises(ValueError) as info:
        SimConfig(step=2, quantum=5)
    message = str(info.value)
    assert "quantum" in message and "step" in message
    assert SimConfig(step=2, quantum=6).quantum == 6
    assert SimConfig(step=0.5, quantum=1.5).quantum == 1.5


@pytest.mark.parametrize("field", ["preemption", "backfill", "leap"])
def test_a_switch_must_be_a_bool(field):
    with pytest.raises(ValueError, match=field):
        SimConfig(**{field: "yes"})


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_a_bad_seed_is_named(seed):
    with pytest.raises(ValueError, match="seed"):
        SimConfig(seed=seed)


@pytest.mark.parametrize(
    ("field", "unknown", "registry", "expected"),
    [
        ("scheduler", "lottery", SCHEDULERS, {"fifo", "sjf", "srtf", "las", "fair"}),
        (
            "placement",
            "best",
            PLACERS,
            {"consolidate", "first_fit", "spread", "random", "topology"},
        ),
    ],
)
def test_an_unknown_policy_lists_the_known_ones(field, unknown, registry, expected):
    with pytest.raises(ValueError) as info:
        SimConfig(**{field: unknown})
    message = str(info.value)
    assert repr(unknown) in message
    for name in registry.names:
        assert repr(name) in message
    assert expected <= set(registry.names)


def test_an_unknown_cost_model_fails():
    with pytest.raises(ValueError, match="'free'"):
        SimConfig(checkpoint_cost={"name": "free"})


def test_policy_dict_specs_with_params():
    config = SimConfig(scheduler={"name": "las", "thresholds": [100, 1000]})
    scheduler = config.make_scheduler()
    assert isinstance(scheduler, LAS)
    assert scheduler.thresholds == [100.0, 1000.0]
    assert config.to_dict()["scheduler"] == {"name": "las", "thresholds": [100, 1000]}
    cost = SimConfig(checkpoint_cost={"name": "size_scaled", "steps": {4: 10, 100: 90}})
    assert cost.make_cost_model().costs(pd.DataFrame({"num_gpus": [1, 4, 5, 64]})).tolist() == [
        10,
        10,
        90,
        90,
    ]


def test_a_number_as_checkpoint_cost_is_a_constant():
    model = SimConfig(checkpoint_cost=30).make_cost_model()
    assert isinstance(model, Constant) and model.seconds == 30.0


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "las", "thresholds": [1000, 100]},  # not increasing
        {"name": "las", "thresholds": [-5]},
        {"name": "las", "starvation_factor": 0},
        {"name": "las", "colour": "red"},
        {"name": "fair", "weights": {"a": -1}},
        {"thresholds": [5]},  # no name
    ],
)
def test_bad_policy_params_fail_at_construction(spec):
    with pytest.raises(ValueError):
        SimConfig(scheduler=spec)


def test_policy_instances_are_accepted_and_serialised_as_specs():
    las = LAS(thresholds=[50, 500], starvation_factor=None)
    config = SimConfig(scheduler=las, placement=FirstFit(), checkpoint_cost=Constant(12))
    made = config.make_scheduler()  # a copy of its own for each simulation, same spec
    assert made is not las and type(made) is LAS and made.spec() == las.spec()
    plain = config.to_dict()
    assert plain["scheduler"] == {
        "name": "las",
        "thresholds": [50.0, 500.0],
        "starvation_factor": None,
    }
    assert plain["placement"] == {"name": "first_fit"}
    assert plain["checkpoint_cost"] == {"name": "constant", "seconds": 12.0}
    json.dumps(plain)  # plain data
    again = SimConfig.from_dict(plain)
    assert again.make_scheduler().spec() == las.spec()
    assert isinstance(again.make_placer(), FirstFit)
    fair = FairShare(weights={"a": 2.0})
    assert SimConfig(scheduler=fair).to_dict()["scheduler"] == {
        "name": "fair",
        "weights": {"a": 2.0},
    }


def _small():
    jobs = pd.DataFrame(
        {
            "job_id": ["long", "short"],
            "vc": "a",
            "user": "u",
            "submit_time": [0.0, 1.0],
            "duration": [100.0, 10.0],
            "num_gpus": [4, 4],
        }
    )
    # both need the whole 4-GPU node: 'long' gets it first, 'short' waits
    return Workload.from_frame(jobs), Cluster.uniform(1, 1, 4)


def test_simulate_keyword_overrides_a_config_dict():
    wl, cluster = _small()
    base = {"scheduler": "fifo", "sample_every": 10, "preemption": True, "quantum": 5}
    fifo = simulate(wl, cluster, base)
    assert fifo.config["scheduler"] == "fifo"
    srtf = simulate(wl, cluster, base, scheduler="srtf")
    assert srtf.config["scheduler"] == "srtf"
    assert srtf.config["sample_every"] == 10 and srtf.config["quantum"] == 5
    # fifo: long runs 0-100, short 100-110. srtf with preemption: short evicts long at t=5
    assert fifo.jobs.set_index("job_id")["end_time"].to_dict() == {"long": 100.0, "short": 110.0}
    srtf_ends = srtf.jobs.set_index("job_id")["end_time"].to_dict()
    assert srtf_ends["short"] == 15.0
    assert srtf.jobs.set_index("job_id").loc["long", "preemptions"] == 1
    # the config object itself is also accepted, and keywords override it too
    same = simulate(wl, cluster, SimConfig.from_dict(base), scheduler="srtf")
    pd.testing.assert_frame_equal(same.jobs, srtf.jobs)


def test_simulate_keywords_alone_build_the_config():
    wl, cluster = _small()
    res = simulate(wl, cluster, scheduler="sjf", sample_every=50)
    assert res.config == SimConfig(scheduler="sjf", sample_every=50).to_dict()
    with pytest.raises(ValueError, match="'schedular'"):
        simulate(wl, cluster, schedular="sjf")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"defrag_every": 600}, "defrag_every needs migration=True"),
        ({"migration": True, "defrag_every": 0}, "defrag_every must be a finite number > 0"),
        ({"migration": True, "defrag_every": 1.5}, "whole multiple of step"),
        ({"migration": True, "defrag_every": "hourly"}, "defrag_every must be seconds"),
        ({"borrow_limit": -0.5}, "borrow_limit must be a finite fraction"),
        ({"borrow_limit": float("inf")}, "borrow_limit must be a finite fraction"),
        ({"borrowing": 1}, "borrowing must be True or False"),
        ({"migration_cost": {"name": "nope"}}, "nope"),
    ],
)
def test_migration_and_borrowing_options_are_checked(values, message):
    with pytest.raises(ValueError, match=message):
        SimConfig(**values)


def test_a_number_is_a_constant_migration_cost():
    model = SimConfig(migration_cost=25).make_migration_cost_model()
    assert model.costs(pd.DataFrame({"num_gpus": [1, 16]})).tolist() == [25.0, 25.0]


@pytest.mark.parametrize("until", [float("nan"), float("inf"), -5, "10", 1e300])
def test_simulation_run_refuses_an_until_that_is_not_seconds(until):
    import analysim as asim

    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    with pytest.raises(ValueError, match="Simulation.run: until"):
        sim.run(until=until)
    assert not sim.started  # refused before anything ran


def test_simulation_run_refuses_a_timeline_too_long_before_running():
    import analysim as asim

    # one job of 100,000 s sampled every millisecond: 10^8 samples
    long_job = pd.DataFrame(
        {
            "job_id": ["j"],
            "vc": ["a"],
            "user": ["u"],
            "submit_time": [0.0],
            "duration": [100_000.0],
            "num_gpus": [1],
        }
    )
    workload = asim.Workload.from_frame(long_job)
    config = asim.SimConfig(sample_every=1e-3)
    sim = asim.Simulation(workload, asim.presets.cluster("toy"), config)
    with pytest.raises(ValueError, match="at most 10,000,000 samples"):
        sim.run()
    assert not sim.started
    assert sim.run(until=60).now == 60  # a short enough span is sampled


def test_a_policy_instance_in_a_config_serves_each_simulation_on_its_own():
    """A scheduler keeps state for the simulation it serves (``bind``): two simulations
    built from one config holding an instance must not share it (before the registries
    copied instances, the second ``bind`` overwrote the first's VC shares and the first
    run ended in an IndexError)."""
    from analysim import Simulation, presets

    instance = SCHEDULERS.make("fair")
    cfg = SimConfig(scheduler=instance, borrowing=True)
    venus = Simulation(presets.workload("venus", seed=0, days=3), presets.cluster("venus"), cfg)
    toy = Simulation(presets.workload("toy"), presets.cluster("toy"), cfg)
    assert venus.scheduler is not toy.scheduler and instance not in (venus.scheduler, toy.scheduler)
    assert len(venus.scheduler._share) == len(venus.partition.vc_names) != len(toy.scheduler._share)
    got = venus.run(until=3 * 86400).result().jobs
    alone = Simulation(
        presets.workload("venus", seed=0, days=3), presets.cluster("venus"), cfg
    ).run(until=3 * 86400)
    pd.testing.assert_frame_equal(got, alone.result().jobs)
