"""Summaries shown with units and readable numbers, values unchanged underneath."""

from __future__ import annotations

import io

import pytest

from analysim.faces.cli import main
from analysim.results import fairness, readable
from analysim.results.metrics import FAILURE_FIELDS, RESOURCE_FIELDS, SUMMARY_FIELDS


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (119, ""),  # seconds read well below 2 minutes
        (120, "2.0 min"),
        (7_199, "120.0 min"),
        (7_200, "2.0 h"),
        (21_645.1, "6.0 h"),
        (172_799, "48.0 h"),
        (172_800, "2.0 days"),
        (float("nan"), ""),
    ],
)
def test_a_duration_is_shown_in_the_unit_that_reads_best(seconds, text):
    assert readable.duration(seconds) == text


@pytest.mark.parametrize(
    ("metric", "value", "text"),
    [
        ("avg_jct", 21_645.1, "21,645 s (6.0 h)"),
        ("avg_jct", 95.5, "95.5 s"),
        ("gpu_utilization", 0.8381, "0.838 fraction"),
        ("preemptions", 21_761, "21,761"),
        ("borrowed_gpu_hours", 1234.5, "1,234 GPU-h"),
        ("share_gpu_hours", float("nan"), "-"),
        ("share_gpu_hours", 512.25, "512 GPU-h"),  # GPU-hours, not a fraction
        ("avg_jct", 2.164513e04, "21,645 s (6.0 h)"),  # never 2.164513e+04
    ],
)
def test_a_metric_is_shown_with_its_unit(metric, value, text):
    assert readable.readable(metric, value) == text


def test_every_summary_metric_has_a_unit_or_is_a_count():
    counts = {
        "jobs",
        "finished",
        "unschedulable",
        "preemptions",
        "preempted_jobs",
        "migrations",
        "migrated_jobs",
        "reclaims",
        "avg_blocked_jobs",
        "restarts",
        "failed_jobs",
    }
    # resource mode adds FGD's fragmentation (docs/semantics.md), failures what they cost
    # (docs/failures.md), typed applications finish-time fairness (docs/heterogeneity.md)
    extra = set(RESOURCE_FIELDS) | set(FAILURE_FIELDS) | set(fairness.SUMMARY_FIELDS)
    assert set(SUMMARY_FIELDS) | extra == set(readable.UNITS) | counts


def test_the_cli_summary_shows_units_and_readable_numbers(capsys):
    assert main(["run", "--workload", "toy", "--by-vc", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "862 s (14.4 min)" in out  # the toy's mean JCT under FIFO, 862.5 s
    assert "avg_jct (h)" in out and "e+0" not in out


def test_a_results_summary_displays_units_and_keeps_plain_numbers():
    import analysim as asim

    result = asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    summary = result.summary()
    assert summary["avg_jct"] == 862.5  # seconds, a plain number underneath
    assert "862 s (14.4 min)" in repr(summary) and "0.838 fraction" in repr(summary)
    assert "<table" in summary._repr_html_() and "862 s (14.4 min)" in summary._repr_html_()
    per_vc = result.summary(by="vc")
    assert per_vc.loc["b", "avg_jct"] == 945.0
    assert "avg_jct (h)" in repr(per_vc) and "avg_jct (h)" in per_vc._repr_html_()
    assert type(summary * 2) is not type(summary)  # computed Series display as usual


def test_a_sub_second_run_draws_no_progress_bar(capsys):
    # the toy run ends long before the bars' 1 s delay: nothing reaches the log
    assert main(["run", "--workload", "toy"]) == 0
    err = capsys.readouterr().err
    assert "simulating workload 'toy'" in err  # the log line, and no bar after it
    assert "job/s" not in err and "%|" not in err


def test_progress_bars_wait_a_second_before_drawing():
    from analysim.engine.progress import DELAY, progress_bar

    quiet = io.StringIO()
    bar = progress_bar(total=3, file=quiet)
    bar.update(3)
    bar.close()
    assert DELAY == 1.0 and bar.delay == DELAY
    assert quiet.getvalue() == ""  # finished before the delay: never drawn


def test_per_vc_share_of_gpu_hours_is_labelled_in_gpu_hours():
    import analysim as asim

    table = asim.simulate("toy", "toy").summary(by="vc")
    shown = readable.table_text(table)
    assert "share_gpu_hours (GPU-h)" in shown.columns
    assert "share_gpu_hours (fraction)" not in shown.columns
