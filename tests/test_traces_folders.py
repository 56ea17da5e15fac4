"""Reading a trace folder by format name or by the files in it, and ``analysim run --trace``."""

from __future__ import annotations

import pandas as pd
import pytest
from test_cli import one_line_error
from trace_samples import (
    OPENB_NODES,
    OPENB_PODS,
    helios_folder,
    pai_folder,
    philly_folder,
    write,
)

from analysim import traces
from analysim.faces.cli import main
from analysim.traces import TraceError, detect_format, read_folder
from analysim.traces.folders import OPENB_FILES


def openb_folder(tmp_path):
    folder = tmp_path / "openb"
    write(folder / OPENB_FILES[0], OPENB_PODS)
    write(folder / OPENB_FILES[1], OPENB_NODES)
    return folder


FOLDERS = {
    "helios": (helios_folder, lambda folder: traces.read_helios(folder)),
    "philly": (philly_folder, lambda folder: traces.read_philly(folder)),
    "pai": (pai_folder, lambda folder: traces.read_pai(folder)),
    "openb": (
        openb_folder,
        lambda folder: traces.read_openb(folder / OPENB_FILES[0], folder / OPENB_FILES[1]),
    ),
}


@pytest.mark.parametrize("trace_format", list(FOLDERS))
def test_a_folder_reads_as_its_reader_reads_it_told_or_named(tmp_path, trace_format):
    make, reader = FOLDERS[trace_format]
    folder = make(tmp_path)
    assert detect_format(folder) == trace_format
    expected = reader(folder)
    for trace in (read_folder(folder), read_folder(folder, trace_format)):
        pd.testing.assert_frame_equal(trace.workload.jobs, expected.workload.jobs)
        pd.testing.assert_frame_equal(trace.cluster.nodes, expected.cluster.nodes)
        pd.testing.assert_frame_equal(trace.report.frame, expected.report.frame)


def test_a_folder_of_no_known_format_is_an_error_listing_what_each_format_needs(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(TraceError, match="holds no trace of a known format") as info:
        detect_format(tmp_path)
    assert "helios: cluster_log.csv" in str(info.value)
    assert "openb: openb_pod_list_default.csv" in str(info.value)


def test_a_folder_that_looks_like_two_formats_must_be_named(tmp_path):
    folder = helios_folder(tmp_path)
    write(folder / OPENB_FILES[0], OPENB_PODS)
    with pytest.raises(TraceError, match="looks like both helios and openb: name its format"):
        read_folder(folder)
    assert read_folder(folder, "helios").workload.name == traces.read_helios(folder).workload.name


def test_a_missing_folder_and_an_unknown_format_are_errors(tmp_path):
    with pytest.raises(TraceError, match="no such folder"):
        read_folder(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="trace format must be one of"):
        read_folder(helios_folder(tmp_path), "csv")


# -- the command line --------------------------------------------------------------------------
def test_run_simulates_a_trace_folder_and_logs_its_report(tmp_path, capsys):
    folder = helios_folder(tmp_path)
    kept = len(traces.read_helios(folder).workload.jobs)
    out = tmp_path / "result"
    assert main(["run", "--trace", str(folder), "--no-progress", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    summary = dict(line.split(maxsplit=1) for line in captured.out.strip().splitlines())
    assert int(summary["jobs"]) == kept == 3  # 101, 104 (kept, too big for vcB) and 106
    assert (int(summary["finished"]), int(summary["unschedulable"])) == (2, 1)
    assert "cluster_log.csv" in captured.err  # the load report: what was read, kept, dropped
    assert "dropped" in captured.err
    saved = pd.read_parquet(out / "jobs.parquet")
    assert len(saved) == kept


def test_run_load_scale_speeds_a_trace_up(tmp_path):
    folder = helios_folder(tmp_path)
    plain, faster = tmp_path / "plain", tmp_path / "faster"
    common = ["run", "--trace", str(folder), "--no-progress", "--quiet", "--out"]
    assert main([*common, str(plain)]) == 0
    assert main([*common, str(faster), "--load-scale", "2"]) == 0
    submit = pd.read_parquet(plain / "jobs.parquet")["submit_time"]
    pd.testing.assert_series_equal(
        pd.read_parquet(faster / "jobs.parquet")["submit_time"], submit / 2
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workload", "toy"], "--trace and --workload both name the jobs"),
        (["--days", "3"], "--days sets a preset's length"),
        (["--trace-format", "philly"], "Philly job log"),
    ],
)
def test_run_trace_mistakes_are_one_line(tmp_path, capsys, extra, message):
    folder = helios_folder(tmp_path)
    code = main(["run", "--trace", str(folder), "--no-progress", "--quiet", *extra])
    assert code == 2
    assert message in one_line_error(capsys.readouterr().err)


def test_run_trace_format_without_a_trace_is_one_line(capsys):
    assert main(["run", "--trace-format", "helios", "--quiet"]) == 2
    assert "--trace-format needs --trace" in one_line_error(capsys.readouterr().err)


def test_study_runs_on_a_trace(tmp_path, capsys):
    folder = helios_folder(tmp_path)
    assert main(["study", "--trace", str(folder), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "preemption+migration" in table and "baseline" in table
