"""The ``analysim`` command line: options generated from SimConfig, one-line errors, output."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import analysim as asim
from analysim.faces.cli import build_parser, config_values, main
from analysim.inputs.config import SimConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
FAST = ["--workload", "toy", "--no-progress", "--quiet"]


def one_line_error(err: str) -> str:
    """The single error line, asserting that there is exactly one and no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("analysim: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_help_documents_every_simconfig_field(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for f in dataclasses.fields(SimConfig):
        assert "--" + f.name.replace("_", "-") in out, f.name
    for flag in (
        "--workload",
        "--cluster",
        "--seed",
        "--load-scale",
        "--days",
        "--until",
        "--config",
        "--out",
        "--no-progress",
        "--no-preemption",
    ):
        assert flag in out


def test_top_level_help_and_missing_command(capsys):
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert main([]) == 2
    one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("package", "extra"), [("nbformat", "notebooks"), ("dask.distributed", "sweeps"), ("foo", None)]
)
def test_a_missing_optional_package_is_one_line_naming_it_and_its_extra(
    monkeypatch, capsys, package, extra
):
    import analysim.experiments.regenerate

    def missing(args):
        raise ModuleNotFoundError(f"No module named {package!r}", name=package)

    monkeypatch.setattr(analysim.experiments.regenerate, "cmd_figures", missing)
    assert main(["figures", "--quick"]) == 1
    line = one_line_error(capsys.readouterr().err)
    assert repr(package.split(".")[0]) in line
    if extra:
        assert f".[{extra}]" in line
    else:
        assert "extra" not in line


def test_unknown_scheduler_is_one_line_naming_it(capsys):
    assert main(["run", *FAST, "--scheduler", "nosuchpolicy"]) == 2
    captured = capsys.readouterr()
    line = one_line_error(captured.err)
    assert "nosuchpolicy" in line and "fifo" in line
    assert captured.out == ""


def test_bad_quantum_is_one_line_naming_quantum(capsys):
    assert main(["run", *FAST, "--quantum", "-5"]) == 2
    assert "quantum" in one_line_error(capsys.readouterr().err)


def test_non_number_is_one_line(capsys):
    assert main(["run", *FAST, "--step", "fast"]) == 2
    assert "--step" in one_line_error(capsys.readouterr().err)


def test_config_file_unknown_key_is_one_line_naming_it(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"scheduler": "las", "bogus_knob": 3}))
    assert main(["run", *FAST, "--config", str(path)]) == 2
    assert "bogus_knob" in one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_config_file_that_is_not_an_object(tmp_path, capsys, text):
    path = tmp_path / "config.json"
    path.write_text(text)
    assert main(["run", *FAST, "--config", str(path)]) == 2
    assert str(path) in one_line_error(capsys.readouterr().err)


def test_missing_config_file(tmp_path, capsys):
    assert main(["run", *FAST, "--config", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in one_line_error(capsys.readouterr().err)


def test_command_line_overrides_config_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"scheduler": "las", "preemption": True, "quantum": 120}))
    args = build_parser().parse_args(
        ["run", "--config", str(path), "--scheduler", "sjf", "--no-leap", "--checkpoint-cost", "30"]
    )
    values = config_values(args)
    assert values == {
        "scheduler": "sjf",
        "preemption": True,
        "quantum": 120,
        "leap": False,
        "checkpoint_cost": 30.0,
    }
    assert SimConfig.from_dict(values).make_cost_model().spec() == {
        "name": "constant",
        "seconds": 30.0,
    }


def test_policy_given_as_json_spec():
    args = build_parser().parse_args(
        ["run", "--checkpoint-cost", '{"name": "constant", "seconds": 5}', "--placement", "spread"]
    )
    assert config_values(args) == {
        "checkpoint_cost": {"name": "constant", "seconds": 5},
        "placement": "spread",
    }


def test_options_not_written_leave_defaults():
    assert config_values(build_parser().parse_args(["run"])) == {}


def test_run_toy_prints_summary_and_writes_result(tmp_path, capsys):
    out_dir = tmp_path / "toy-sjf"
    assert main(["run", *FAST, "--scheduler", "sjf", "--out", str(out_dir)]) == 0
    captured = capsys.readouterr()
    assert "avg_jct" in captured.out and "gpu_utilization" in captured.out
    assert "Traceback" not in captured.err
    written = [p for p in out_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in written), written
    assert all(p.stat().st_size > 0 for p in written)


def test_run_by_vc_and_preemption(capsys):
    assert main(["run", *FAST, "--scheduler", "las", "--preemption", "--by-vc"]) == 0
    out = capsys.readouterr().out
    assert "avg_jct" in out and "p95_queue_delay" in out


def test_presets_lists_names(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "venus" in out


def test_unknown_workload_preset_is_one_line(capsys):
    assert main(["run", "--workload", "atlantis", "--no-progress", "--quiet"]) == 2
    assert "atlantis" in one_line_error(capsys.readouterr().err)


def test_python_dash_m_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "analysim", "run", *FAST],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "avg_jct" in proc.stdout


def test_study_prints_the_four_arms_and_writes_the_table(tmp_path, capsys):
    out = tmp_path / "study.csv"
    assert main(["study", "--workload", "toy", "--scheduler", "srtf", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for arm in ("baseline", "migration", "preemption", "preemption+migration"):
        assert arm in printed
    table = pd.read_csv(out, index_col="arm")
    assert table.index.tolist() == ["baseline", "migration", "preemption", "preemption+migration"]
    assert table["migration"].tolist() == [False, True, False, True]


def test_migration_and_borrowing_flags_reach_the_config(tmp_path):
    assert (
        main(
            [
                "run",
                *FAST,
                "--migration",
                "--migration-cost",
                "15",
                "--borrowing",
                "--borrow-limit",
                "0.5",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    config = asim.Result.load(tmp_path / "r").config
    assert config["migration"] is True and config["migration_cost"] == 15.0
    assert config["borrowing"] is True and config["borrow_limit"] == 0.5


def test_compat_replay_from_the_command_line(tmp_path, capsys):
    folder = tmp_path / "sjf"
    argv = ["run", "--workload", "venus", "--days", "1", "--compat", "helios"]
    assert main([*argv, "--scheduler", "sjf", "--no-progress", "--out", str(folder)]) == 0
    assert "avg_jct" in capsys.readouterr().out
    assert asim.Result.load(folder).config["compat"] == "helios"
    assert main([*argv, "--preemption"]) == 2
    assert "ignores option(s) ['preemption']" in capsys.readouterr().err
    # a scheduler only the replays know is taken with --compat, and refused without it
    tiresias = tmp_path / "tiresias"
    assert main([*argv, "--scheduler", "tiresias", "--no-progress", "--out", str(tiresias)]) == 0
    assert asim.Result.load(tiresias).config["scheduler"] == "tiresias"
    capsys.readouterr()
    assert main(["run", "--workload", "toy", "--scheduler", "optimus", "--no-progress"]) == 2
    assert "unknown scheduler 'optimus'" in one_line_error(capsys.readouterr().err)


def test_pollux_replay_of_an_artifact_workload_from_the_command_line(tmp_path, capsys):
    # the bundled workload 6 of the Pollux artifact: its published tiresias average JCT
    csv = Path(asim.__file__).parent / "data" / "pollux" / "workloads" / "workload-6.csv"
    folder = tmp_path / "w6"
    argv = ["run", "--trace", str(csv), "--trace-format", "pollux", "--compat", "pollux"]
    assert main([*argv, "--scheduler", "tiresias", "--no-progress", "--out", str(folder)]) == 0
    assert "avg_jct" in capsys.readouterr().out
    result = asim.Result.load(folder)
    assert result.config["compat"] == "pollux" and len(result.jobs) == 160
    assert result.summary()["avg_jct"] == pytest.approx(3469.69375)
    # without --trace-format pollux the file is refused as a trace folder, in one line
    assert main(["run", "--trace", str(csv), "--compat", "pollux", "--no-progress"]) == 2
    assert "is a file" in one_line_error(capsys.readouterr().err)
