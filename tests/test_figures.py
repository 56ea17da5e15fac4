"""``analysim figures``: choosing notebooks, parameters, failure reports, parallel runs; and the
one-line parameter checks the notebooks call."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysim.experiments import figures as notebook_calls
from analysim.experiments import regenerate as figures
from analysim.faces.cli import main
from analysim.faces.notebook_params import ParameterError, check_parameters

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("papermill")

NOTEBOOKS = {
    "01_alpha": Path("01_alpha.ipynb"),
    "02_beta_gamma": Path("02_beta_gamma.ipynb"),
    "03_delta": Path("03_delta.ipynb"),
}


@pytest.mark.parametrize(
    "wanted, chosen",
    [
        (["02"], ["02_beta_gamma"]),
        (["beta_gamma"], ["02_beta_gamma"]),
        (["03_delta", "01"], ["01_alpha", "03_delta"]),  # notebook order, not argument order
        (None, ["01_alpha", "02_beta_gamma", "03_delta"]),
    ],
)
def test_select_by_name_number_or_topic(wanted, chosen):
    assert list(figures.select(NOTEBOOKS, wanted)) == chosen


def test_select_unknown_name_lists_the_notebooks():
    with pytest.raises(ValueError, match="unknown notebook 'nope'; the notebooks are 01_alpha"):
        figures.select(NOTEBOOKS, ["nope"])


def test_cli_only_unknown_errors_in_one_line(capsys):
    assert main(["figures", "--only", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("analysim: error: --only: unknown notebook 'nope'")
    assert "02_scheduling_policies" in err and "\n" not in err


def test_cli_rejects_parameters_no_notebook_declares(capsys):
    assert main(["figures", "--only", "01", "-p", "nope", "1", "--no-progress"]) == 2
    assert "no chosen notebook has parameter(s) ['nope']" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, value",
    [
        ("3", 3),
        ("-1.5", -1.5),
        ("true", True),
        ("[fifo, sjf]", ["fifo", "sjf"]),
        ("a: b: c", "a: b: c"),
    ],
)
def test_parse_value_reads_yaml(text, value):
    assert figures.parse_value(text) == value


# -- checks of notebook parameters -----------------------------------------------------------
@pytest.mark.parametrize(
    "values, message",
    [
        ({"scheduler": "nope"}, "parameter scheduler = 'nope': unknown scheduler; choose one of"),
        ({"schedulers": ["fifo", 3]}, "parameter schedulers = ['fifo', 3]: item 1 (3): unknown"),
        ({"schedulers": []}, "parameter schedulers = []: must not be empty"),
        ({"load_scale": -1}, "parameter load_scale = -1: must be a number > 0"),
        ({"load_scale": True}, "parameter load_scale = True: must be a number > 0"),
        ({"seeds": [0, -1]}, "parameter seeds = [0, -1]: item 1 (-1): must be a whole number"),
        ({"checkpoint_costs": [0, float("nan")]}, "item 1 (nan): must be a number >= 0"),
        ({"trace_path": "/no/such/dir"}, "parameter trace_path = '/no/such/dir': no such file"),
        ({"trace_format": "csv"}, "unknown trace format; choose one of helios, philly, pai, openb"),
        ({"partition": "racks"}, "parameter partition = 'racks': must be one of"),
    ],
)
def test_bad_parameters_fail_in_one_line_naming_them(values, message):
    with pytest.raises(ParameterError) as info:
        check_parameters(**values)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert info.value._render_traceback_() == [f"ParameterError: {text}"]


def test_good_parameters_pass(tmp_path):
    check_parameters(
        schedulers=["fifo", "las"],
        load_scale=0.5,
        seeds=[0, 1],
        trace_path=str(tmp_path),
        partition=None,
        preemption=True,
        days=1,
    )


def test_a_parameter_without_a_rule_is_a_programming_error():
    with pytest.raises(TypeError, match="no rule for parameter"):
        check_parameters(colour="red")


# -- running notebooks ------------------------------------------------------------------------
def _notebook(path: Path, *sources: str) -> Path:
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "analysim": {"quick": {"n": 1}},
        }
    )
    cells = [new_code_cell(source, id=f"c{k}") for k, source in enumerate(sources)]
    cells[0].metadata["tags"] = ["parameters"]
    nb.cells = cells
    nbformat.write(nb, path)
    return path


@pytest.fixture
def two_notebooks(tmp_path):
    folder = tmp_path / "nbs"
    folder.mkdir()
    _notebook(folder / "01_ok.ipynb", "n = 2  # type: int  how many", "assert n >= 1")
    _notebook(
        folder / "02_bad.ipynb",
        "n = 2  # type: int  how many",
        "x = n",
        "raise ValueError(f'bad n {n}')",
    )
    _notebook(folder / "00_other.ipynb", "n = 2")  # no analysim metadata: not a figure notebook
    nb = nbformat.read(folder / "00_other.ipynb", 4)
    del nb.metadata["analysim"]
    nbformat.write(nb, folder / "00_other.ipynb")
    return folder


def test_find_notebooks_takes_the_figure_notebooks(two_notebooks):
    assert list(figures.find_notebooks(two_notebooks)) == ["01_ok", "02_bad"]


def test_plan_merges_quick_figures_dir_and_overrides(two_notebooks, tmp_path):
    found = figures.find_notebooks(two_notebooks)
    plans = figures.plan(found, quick=True, overrides={"n": 5}, figures_dir=tmp_path)
    assert plans == {"01_ok": {"n": 5}, "02_bad": {"n": 5}}  # no figures_dir parameter there
    assert figures.plan(found, quick=True)["01_ok"] == {"n": 1}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_notebook_is_reported_with_its_cell_while_others_finish(
    two_notebooks, tmp_path, workers
):
    found = figures.find_notebooks(two_notebooks)
    outcomes = figures.run_notebooks(
        found,
        {"01_ok": {"n": 3}, "02_bad": {"n": 4}},
        tmp_path / "out",
        workers=workers,
        progress=False,
    )
    ok, bad = outcomes
    assert ok.name == "01_ok" and ok.ok and ok.error is None
    assert (tmp_path / "out" / "01_ok.ipynb").exists()
    assert bad.name == "02_bad" and not bad.ok
    # papermill inserts the injected-parameters cell after the parameters cell: cell 3
    assert bad.cell == 3 and bad.error == "ValueError: bad n 4"
    assert bad.describe().startswith("FAILED  02_bad in cell 3: ValueError: bad n 4")


def test_the_log_records_each_notebook_and_gives_back_its_seconds(tmp_path):
    outcomes = [
        figures.Outcome("01_a", True, 12.34, tmp_path / "01_a.ipynb"),
        figures.Outcome("02_b", False, 3.0, tmp_path / "02_b.ipynb", cell=4, error="E: x"),
    ]
    path = figures.write_log(outcomes, tmp_path / "log.json")
    assert figures.read_log(path) == {"01_a": 12.3, "02_b": 3.0}
    assert figures.read_log(tmp_path / "missing.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert figures.read_log(tmp_path / "bad.json") == {}
    # a run of one notebook keeps the other's record
    figures.write_log([figures.Outcome("02_b", True, 5.0, tmp_path / "02_b.ipynb")], path)
    assert figures.read_log(path) == {"01_a": 12.3, "02_b": 5.0}


def test_declared_seconds_order_a_fresh_clone_longest_first(two_notebooks):
    found = figures.find_notebooks(two_notebooks)
    assert figures.declared_seconds(found) == {}  # none declared: notebook order kept
    nb = nbformat.read(found["02_bad"], 4)
    nb.metadata["analysim"]["seconds"] = 300
    nbformat.write(nb, found["02_bad"])
    assert figures.declared_seconds(found) == {"02_bad": 300.0}
    jobs = [("01_ok", 1), ("02_bad", 2), ("03_c", 3), ("04_d", 4)]
    order = figures.longest_first(jobs, {"02_bad": 300.0, "04_d": 20.0})
    assert [name for name, _ in order] == ["02_bad", "04_d", "01_ok", "03_c"]
    assert figures.longest_first(jobs, {}) == jobs
    nb.metadata["analysim"]["seconds"] = "long"
    nbformat.write(nb, found["02_bad"])
    with pytest.raises(ValueError, match=r"02_bad.ipynb: metadata analysim.seconds .* 'long'"):
        figures.declared_seconds(found)


def test_the_committed_notebooks_declare_their_seconds():
    found = figures.find_notebooks(figures.repo_root() / "notebooks")
    declared = figures.declared_seconds(found)
    assert set(declared) == set(found)
    # notebook 04 is the longest: it must start first in a fresh clone
    assert max(declared, key=declared.__getitem__) == "04_preemption"


@pytest.mark.parametrize(
    ("quick", "overridden", "update", "folder"),
    [
        (False, False, False, "figures"),  # the main job: the committed parameters
        (False, True, False, "build/figures"),  # -p: never over the committed figures
        (True, False, False, "build/figures-quick"),
        (True, True, False, "build/figures-quick"),
        (False, True, True, "figures"),  # --update: asked for
        (True, False, True, "figures"),
    ],
)
def test_only_the_committed_parameters_write_into_figures(quick, overridden, update, folder):
    assert figures.default_figures_dir(quick=quick, overridden=overridden, update=update) == folder


def test_sensitivity_draws_each_seeds_workload_once():
    from analysim import presets

    cluster = presets.cluster("toy")
    calls = []

    def seeded(seed):
        calls.append(seed)
        return presets.workload("toy")

    rows = notebook_calls.sensitivity(
        seeded, cluster, "quantum", [1.0, 2.0, 5.0], seeds=[0, 1], progress=False
    )
    assert calls == [0, 1]
    assert list(zip(rows["quantum"], rows["seed"], strict=True)) == [
        (1.0, 0),
        (1.0, 1),
        (2.0, 0),
        (2.0, 1),
        (5.0, 0),
        (5.0, 1),
    ]
    again = notebook_calls.sensitivity(
        presets.workload("toy"),
        cluster,
        "quantum",
        [1.0, 2.0, 5.0],
        seeds=[0, 1],
        progress=False,
    )
    pd.testing.assert_frame_equal(rows, again)


def test_the_checkout_and_the_kernels_path_are_found_from_any_folder(tmp_path, monkeypatch):
    """The package's own checkout is found wherever the command runs, and the kernels import
    this very package (not another one on the path)."""
    import os

    repo = Path(figures.__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    assert figures.repo_root() == repo
    with figures._importable_here():
        first = os.environ["PYTHONPATH"].split(os.pathsep)[0]
    assert (Path(first) / "analysim" / "__init__.py").is_file()
