"""The Acme presets (seren, kalos): their published facts, clusters, generated months with a
final state per job, and the calibration check that covers them (issue 28)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysim import presets
from analysim.faces.cli import main
from analysim.inputs.workload import FAILED_STATES
from analysim.presets import acme, calibrated, calibration

ACME = ["seren", "kalos"]


# -- facts -------------------------------------------------------------------------------------
def test_published_numbers_are_the_summary_rows(shared_data):
    summary = pd.read_csv(shared_data / "acme" / "acme_cluster_summary.csv").set_index("id")
    for name, facts in acme.PUBLISHED.items():
        row = summary.loc[name.capitalize()]
        assert facts.gpu_jobs == row["gpu_job_num"]
        assert facts.mean_run == row["avg_run_time_gpu"]
        assert facts.median_run == row["med_run_time_gpu"]
        assert facts.mean_queue == row["avg_que_time_gpu"]
        assert facts.median_queue == row["med_que_time_gpu"]
        assert facts.mean_gpus == row["avg_gpu_num"]
        assert facts.median_gpus == row["med_gpu_num"] == 1
        assert facts.max_gpus == row["max_gpu"] == 1024
        assert facts.max_run == row["max_run_time_gpu"]
        assert facts.completed_share == row["complete_rate_gpu"]
        assert facts.cancelled_share == row["cancel_rate_gpu"]
        assert facts.failed_share == row["fail_rate_gpu"]
        gpu_time = row[["complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"]].sum()
        assert facts.gpu_seconds == pytest.approx(gpu_time)


def test_clusters_are_the_papers_4704_gpus_on_8_gpu_nodes_without_vcs():
    seren, kalos = presets.cluster("seren"), presets.cluster("kalos")
    assert (seren.total_gpus, len(seren.nodes)) == (2288, 286)
    assert (kalos.total_gpus, len(kalos.nodes)) == (2416, 302)
    assert seren.total_gpus + kalos.total_gpus == 4704  # the paper's A100 count
    assert not seren.partitioned and not kalos.partitioned
    assert set(seren.nodes["gpus"]) == {8} and acme.NODES == {"seren": 286, "kalos": 302}
    # 0.45 of the cluster holds 1,024 GPUs but not 2,048
    for cluster in (seren, kalos):
        assert calibrated.largest_job(cluster.total_gpus, acme.MAX_JOB_FRACTION) in range(
            1024, 2048
        )


def test_per_day_rates_use_each_traces_window():
    assert acme.TRACE_DAYS == {"seren": 184, "kalos": 123}
    assert acme.PUBLISHED["seren"].jobs_per_day == pytest.approx(3607.68, abs=0.01)
    assert acme.PUBLISHED["kalos"].jobs_per_day == pytest.approx(161.85, abs=0.01)
    assert acme.LAUNCH_DELAY == {"seren": 1.0, "kalos": 17.0}


def test_configs_are_slurm_like():
    for name in ACME:
        config = presets.config(name)
        assert (config.scheduler, config.backfill, config.placement) == (
            "fifo",
            "easy",
            "consolidate",
        )


# -- the generator's sizes up to 1,024 GPUs ---------------------------------------------------
def test_job_sizes_are_powers_of_two_up_to_the_largest():
    assert calibrated.job_sizes() == calibrated.JOB_SIZES
    assert calibrated.job_sizes(1024) == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert calibrated.job_sizes(100) == (1, 2, 4, 8, 16, 32, 64)
    table = calibrated.tilted_table(0.0, 0.6, largest=1024)
    assert list(table) == list(calibrated.job_sizes(1024))
    assert table[1024] == pytest.approx(0.4 / 10)
    assert calibrated.tilted_table(0.0, 0.6, cap=300, largest=1024)[256] == pytest.approx(0.4 / 8)
    with pytest.raises(ValueError, match="largest_size"):
        calibrated.Shape(largest_size=1)


# -- workloads ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "days"), [("seren", 3.0), ("kalos", 30.0)])
def test_short_months_match_the_published_job_mix(name, days):
    facts = acme.PUBLISHED[name]
    jobs = presets.workload(name, seed=0, days=days).jobs
    assert len(jobs) / days == pytest.approx(facts.jobs_per_day, rel=0.05)
    assert jobs["duration"].mean() == pytest.approx(facts.mean_run, rel=0.10)
    assert jobs["duration"].median() == pytest.approx(facts.median_run, rel=0.05)
    assert jobs["num_gpus"].mean() == pytest.approx(facts.mean_gpus, rel=0.05)
    assert jobs["num_gpus"].median() == 1 and jobs["num_gpus"].max() == 1024
    assert jobs["duration"].max() <= facts.max_run
    failed = jobs["state"].isin(FAILED_STATES).mean()
    # the three published shares add up to 1.001 (Seren) / 1.0 (Kalos): drawn normalised
    total = facts.completed_share + facts.cancelled_share + facts.failed_share
    assert failed == pytest.approx(facts.failed_share / total, abs=1 / len(jobs))
    assert set(jobs["state"]) == {"COMPLETED", "CANCELLED", "FAILED"}
    assert set(jobs["vc"]) == {"default"}


def test_draw_states_gives_each_share_within_one_job():
    facts = acme.PUBLISHED["seren"]
    states = acme.draw_states(5, 1000, facts)
    counts = pd.Series(states).value_counts()
    total = facts.completed_share + facts.cancelled_share + facts.failed_share  # 1.001
    for state, share in zip(
        acme.FINAL_STATES,
        (facts.completed_share, facts.cancelled_share, facts.failed_share),
        strict=True,
    ):
        assert abs(counts[state] - 1000 * share / total) <= 1
    np.testing.assert_array_equal(states, acme.draw_states(5, 1000, facts))
    assert not np.array_equal(states, acme.draw_states(6, 1000, facts))


def test_the_states_leave_the_jobs_as_the_generator_draws_them():
    facts = acme.PUBLISHED["kalos"]
    drawn = calibrated.calibrated_workload(
        facts.targets(), {"default": 2416}, days=3, seed=4, shape=acme.SHAPES["kalos"]
    )
    jobs = presets.workload("kalos", seed=4, days=3).jobs
    pd.testing.assert_frame_equal(jobs.drop(columns="state"), drawn.jobs)


def test_acme_workloads_are_seeded_and_scale_with_load():
    first = presets.workload("seren", seed=3, days=0.5).jobs
    pd.testing.assert_frame_equal(first, presets.workload("seren", seed=3, days=0.5).jobs)
    assert not first.equals(presets.workload("seren", seed=4, days=0.5).jobs)
    busier = presets.workload("seren", seed=3, days=0.5, load_scale=2.0).jobs
    assert len(busier) / len(first) == pytest.approx(2.0, rel=0.05)


# -- the check ---------------------------------------------------------------------------------
def test_acme_criteria_add_the_largest_job_and_the_failed_share():
    metrics = [c.metric for c in calibration.criteria("seren")]
    assert metrics[-3:] == ["max_gpus", "failed_share", "gpu_seconds_per_job"]
    assert [c.metric for c in calibration.criteria("venus")] == [
        c.metric for c in calibration.CRITERIA
    ]
    assert calibration.check_days("kalos") == 123 and calibration.check_days("seren") == 30


def test_compare_takes_the_failed_share_in_points():
    reference = calibration.published("kalos")
    assert reference["failed_share"] == 0.397 and reference["max_gpus"] == 1024
    near = calibration.compare("kalos", 0, {**reference, "failed_share": 0.397 + 0.049})
    far = calibration.compare("kalos", 0, {**reference, "failed_share": 0.397 - 0.051})
    assert near.set_index("metric").loc["failed_share", "verdict"] == "PASS"
    row = far.set_index("metric").loc["failed_share"]
    assert row["verdict"] == "MISS" and row["rel_error"] == pytest.approx(-0.051)
    smaller = calibration.compare("kalos", 0, {**reference, "max_gpus": 512.0})
    assert smaller.set_index("metric").loc["max_gpus", "verdict"] == "MISS"


def test_measure_adds_the_launch_delay_and_counts_failed_gpu_jobs():
    jobs = pd.DataFrame(
        {
            "num_gpus": [1, 8, 64, 0],
            "run_time": [10.0, 20.0, 30.0, 5.0],
            "queue_delay": [0.0, 0.0, 100.0, 0.0],
        }
    )
    states = pd.Series(["FAILED", "COMPLETED", "NODE_FAIL", "FAILED"])
    got = calibration.measure(jobs, 2416, 1.0, launch=17.0, states=states)
    # GPU jobs only: delays 17, 17, 117; two of three failed (the CPU job is left out)
    assert got["mean_queue"] == pytest.approx(151 / 3)
    assert got["median_queue"] == 17.0
    assert got["failed_share"] == pytest.approx(2 / 3)
    assert got["max_gpus"] == 64.0 and got["jobs_per_day"] == 3.0


MONTH_MEAN_QUEUE = {  # seed 0, check_days(name), presets.config(name): docs/calibration.md
    "seren": 376.5,  # as the check prints it (4 digits)
    "kalos": 222.22286229524622,
}


@pytest.mark.parametrize("name", ACME)
def test_a_preset_month_keeps_its_documented_queueing_delay_and_passes(name):
    """Seed 0 over the check's span gives docs/calibration.md's mean queueing delay, and every
    criterion passes (Kalos: about 1 s of CPU; Seren: 12-22 s)."""
    simulated = calibration.run_month(name, seed=0)
    assert simulated["mean_queue"] == pytest.approx(MONTH_MEAN_QUEUE[name], rel=1e-9, abs=0.05)
    rows = calibration.compare(name, 0, simulated)
    missed = rows[rows["verdict"] == "MISS"]
    assert missed.empty, missed


def test_cli_check_covers_kalos(capsys):
    code = main(["presets", "--check", "kalos", "--days", "5", "--seeds", "0"])
    out = capsys.readouterr().out
    assert code in (0, 1) and out.startswith("5 days, seeds [0]")
    assert "kalos:" in out and "failed share of GPU jobs" in out and "largest job" in out
