"""``analysim run/study/sweep --jobs FILE --nodes FILE``: one's own tables from the command
line, with column mapping as in ``read_csv_trace``."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from analysim.faces.cli import main
from analysim.results.result import Result

# one node of 4 GPUs; strict FIFO: b waits for a (ends 100), c waits behind b (ends 150)
JOBS = "id,submitted,gpus,runtime,team\na,0,2,100,x\nb,10,4,50,x\nc,20,1,300,x\n"
NODES = "node,rack,gpus,vc\nn0,r0,4,x\n"
MAPPING = [
    "--column", "job_id=id",
    "--column", "submit_time=submitted",
    "--column", "num_gpus=gpus",
    "--column", "duration=runtime",
    "--column", "vc=team",
]  # fmt: skip
EXPECTED_JCT = {"a": 100.0, "b": 140.0, "c": 430.0}


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    jobs, nodes = tmp_path / "jobs.csv", tmp_path / "nodes.csv"
    jobs.write_text(JOBS)
    nodes.write_text(NODES)
    return jobs, nodes


def _error(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_run_simulates_the_tables_with_the_mapped_columns(tables, tmp_path, capsys):
    jobs, nodes = tables
    out = tmp_path / "result"
    argv = ["run", "--jobs", str(jobs), "--nodes", str(nodes), *MAPPING, "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert "223 s (3.7 min)" in printed.out  # avg JCT: (100 + 140 + 430) / 3
    assert "jobs (jobs.csv): 3 read, 3 kept, 0 dropped" in printed.err
    result = Result.load(out)
    assert dict(zip(result.jobs["job_id"], result.jobs["jct"], strict=True)) == EXPECTED_JCT
    assert set(result.jobs["vc"]) == {"x"}


def test_date_times_become_seconds_with_time_format(tmp_path, capsys):
    jobs = tmp_path / "dated.csv"
    jobs.write_text(
        "job_id,submit_time,num_gpus,duration,vc\n"
        "a,2024-01-01 00:00:00,2,100,x\nb,2024-01-01 00:00:10,4,50,x\n"
        "c,2024-01-01 00:00:20,1,300,x\n"
    )
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(NODES)
    out = tmp_path / "result"
    argv = ["run", "--jobs", str(jobs), "--nodes", str(nodes), "--out", str(out), "--quiet"]
    assert main([*argv, "--time-format", "%Y-%m-%d %H:%M:%S", "--no-progress"]) == 0
    result = Result.load(out)
    assert result.jobs["submit_time"].tolist() == [0.0, 10.0, 20.0]
    assert dict(zip(result.jobs["job_id"], result.jobs["jct"], strict=True)) == EXPECTED_JCT


def test_jobs_on_a_preset_cluster(tmp_path, capsys):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,num_gpus,duration,vc\na,0,1,60,vc1\nb,0,1,30,vc2\n")
    out = tmp_path / "r"
    argv = ["run", "--jobs", str(jobs), "--cluster", "toy", "--out", str(out), "--quiet"]
    assert main([*argv, "--no-progress"]) == 0
    assert Result.load(out).jobs["jct"].tolist() == [60.0, 30.0]


def test_load_scale_speeds_up_the_arrivals(tables, tmp_path):
    jobs, nodes = tables
    out = tmp_path / "r"
    argv = ["run", "--jobs", str(jobs), "--nodes", str(nodes), *MAPPING, "--out", str(out)]
    assert main([*argv, "--load-scale", "10", "--quiet", "--no-progress"]) == 0
    assert Result.load(out).jobs["submit_time"].tolist() == [0.0, 1.0, 2.0]


def test_study_runs_the_four_arms_on_the_tables(tables, tmp_path, capsys):
    jobs, nodes = tables
    out = tmp_path / "study.csv"
    argv = ["study", "--jobs", str(jobs), "--nodes", str(nodes), *MAPPING, "--out", str(out)]
    assert main([*argv, "--scheduler", "fifo", "--quiet"]) == 0
    table = pd.read_csv(out, index_col="arm")
    assert list(table.index) == ["baseline", "migration", "preemption", "preemption+migration"]
    assert table.loc["baseline", "avg_jct"] == pytest.approx(670 / 3, rel=1e-5)  # %.6g


def test_sweep_runs_the_file_grid_on_the_tables(tables, tmp_path, capsys):
    jobs, nodes = tables
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid:\n  scheduler: [fifo, sjf]\n")
    out = tmp_path / "sweep"
    argv = ["sweep", str(grid), "--out", str(out), "--jobs", str(jobs), "--nodes", str(nodes)]
    assert main([*argv, *MAPPING, "--workers", "0", "--no-progress", "--quiet"]) == 0
    frame = pd.read_parquet(out / "sweep.parquet")
    assert frame["status"].tolist() == ["ok", "ok"]
    assert frame["avg_jct"].tolist()[0] == pytest.approx(670 / 3)
    assert set(frame["workload"]) == {"jobs"}


def test_a_sweep_file_that_names_a_workload_clashes_with_jobs(tables, tmp_path, capsys):
    jobs, nodes = tables
    grid = tmp_path / "grid.yaml"
    grid.write_text("workload: toy\ngrid:\n  scheduler: [fifo]\n")
    argv = ["sweep", str(grid), "--out", str(tmp_path / "o"), "--jobs", str(jobs)]
    assert main([*argv, "--nodes", str(nodes), *MAPPING]) == 2
    assert _error(capsys) == (
        f"analysim: error: --jobs: the sweep file {grid} names a workload too; give one of them"
    )


# -- refusals ---------------------------------------------------------------------------------
def test_trace_given_a_file_says_to_use_jobs(tables, capsys):
    jobs, _ = tables
    assert main(["run", "--trace", str(jobs)]) == 2
    assert _error(capsys) == (
        f"analysim: error: --trace {jobs}: is a file; --trace reads a downloaded trace folder "
        f"(Helios, Philly, PAI or openb). For your own jobs table give --jobs {jobs} --nodes "
        "NODES.csv (or --cluster NAME), with --column FIELD=THEIRS for columns named otherwise"
    )


def test_trace_dot_names_the_folder(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "my_data"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert main(["run", "--trace", "."]) == 2
    error = _error(capsys)
    assert error.startswith("analysim: error: my_data: holds no trace of a known format;")
    assert "--jobs FILE" in error


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--nodes", "n.csv"], "--nodes needs --jobs FILE (your jobs table)"),
        (["--column", "job_id=id"], "--column needs --jobs FILE (your jobs table)"),
        (
            ["--jobs", "j.csv"],
            "--jobs needs its cluster: --nodes FILE (your nodes table) or --cluster NAME "
            "(a preset), one of them",
        ),
        (
            ["--jobs", "j.csv", "--workload", "toy", "--cluster", "toy"],
            "--jobs and --workload (a preset) both name the jobs; give one",
        ),
        (
            ["--jobs", "j.csv", "--cluster", "toy", "--quota", "a=4"],
            "--quota needs --nodes FILE (a preset cluster has its own quotas)",
        ),
    ],
)
def test_stray_and_clashing_options_are_named(extra, message, capsys):
    assert main(["run", *extra]) == 2
    assert _error(capsys) == f"analysim: error: {message}"


def test_a_reversed_column_mapping_says_which_way_round(tables, capsys):
    jobs, nodes = tables
    assert main(["run", "--jobs", str(jobs), "--nodes", str(nodes), "--column", "id=job_id"]) == 2
    error = _error(capsys)
    assert "'id' is not an AnalySIM jobs field (is job_id=id meant?)" in error


def test_a_bad_nodes_row_names_the_file_and_the_row(tables, capsys):
    jobs, nodes = tables
    nodes.write_text("node,rack,gpus\nn0,r0,4\nn1,r0,0\n")
    assert main(["run", "--jobs", str(jobs), "--nodes", str(nodes), *MAPPING]) == 2
    error = _error(capsys)
    assert error.startswith(
        "analysim: error: nodes.csv: Cluster: column 'gpus' must be a whole number from 1 to"
    )
    assert "row 1 (node='n1'): 0" in error and str(nodes) in error


def test_a_missing_jobs_column_is_named(tables, capsys):
    jobs, nodes = tables
    assert main(["run", "--jobs", str(jobs), "--nodes", str(nodes)]) == 2
    error = _error(capsys)
    assert "jobs.csv" in error and "missing column(s) 'job_id'" in error


# -- the blocks of docs/traces.md, run as written ----------------------------------------------
DOCS = Path(__file__).resolve().parents[1] / "docs" / "traces.md"


def _blocks(section: str, end: str) -> dict[str, list[str]]:
    """The fenced blocks of ``docs/traces.md`` between two headings, by language."""
    text = DOCS.read_text()
    body = text[text.index(section) : text.index(end, text.index(section))]
    found = re.findall(r"```(\w+)\n(.*?)```", body, flags=re.S)
    blocks: dict[str, list[str]] = {}
    for language, block in found:
        blocks.setdefault(language, []).append(block)
    return blocks


def test_the_documented_helios_folder_runs_as_the_docs_say(tmp_path, capsys):
    log, sizes = _blocks("### A Helios folder of your own", "## Philly")["text"]
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "cluster_log.csv").write_text(log)
    (folder / "cluster_gpu_number.csv").write_text(sizes)
    out = tmp_path / "r"
    assert main(["run", "--trace", str(folder), "--out", str(out), "--no-progress"]) == 0
    assert "3,000 s (50.0 min)" in capsys.readouterr().out
    jobs = Result.load(out).jobs.set_index("job_id")
    assert jobs.loc["j2", "jct"] == 4_800.0
    assert Result.load(out).summary()["avg_jct"] == 3_000.0


def test_the_documented_own_tables_run_as_the_docs_say(tmp_path, monkeypatch, capsys):
    blocks = _blocks("## Your own tables on the command line", "## Speed")
    jobs, nodes = blocks["text"]
    (tmp_path / "jobs.csv").write_text(jobs)
    (tmp_path / "nodes.csv").write_text(nodes)
    (command,) = blocks["bash"]
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0] == "analysim"
    monkeypatch.chdir(tmp_path)
    assert main([*argv[1:], "--out", "r", "--no-progress"]) == 0
    assert "223 s (3.7 min)" in capsys.readouterr().out
    result = Result.load(tmp_path / "r")
    assert dict(zip(result.jobs["job_id"], result.jobs["jct"], strict=True)) == EXPECTED_JCT
