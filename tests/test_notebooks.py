"""The committed notebooks: their form, a quick run of every one, byte-stable figures, and
one-line errors for bad parameters.

The quick run executes every notebook once (``analysim figures --quick --workers 1``), which
takes a few minutes on a 2-core machine; the other tests here are fast.
"""

from __future__ import annotations

import ast
import filecmp
import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
papermill = pytest.importorskip("papermill")

from analysim.experiments import regenerate as figures  # noqa: E402
from analysim.faces.cli import main  # noqa: E402
from analysim.faces.notebook_params import RULES  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
EXPECTED = [
    "01_quickstart",
    "02_scheduling_policies",
    "03_placement_and_fragmentation",
    "04_preemption",
    "05_migration",
    "06_multi_tenancy",
    "07_real_traces",
    "08_calibration",
    "09_elastic_jobs",
    "10_heterogeneity",
    "11_failures",
]
FOUND = figures.find_notebooks(NOTEBOOKS)


def _read(name: str):
    return nbformat.read(FOUND[name], as_version=4)


def _parameters_cell(nb):
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    return tagged[0]


def test_the_notebooks_are_there():
    # every expected notebook is committed: a missing one fails here, it is never skipped
    assert set(FOUND) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(FOUND))
def test_notebook_is_stored_without_outputs(name):
    nb = _read(name)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
    assert nb.metadata.kernelspec.name == "python3"
    nbformat.validate(nb)


@pytest.mark.parametrize("name", sorted(FOUND))
def test_parameters_are_documented_and_checked(name):
    nb = _read(name)
    cell = _parameters_cell(nb)
    declared = papermill.inspect_notebook(str(FOUND[name]))
    assert declared, "no parameters"
    for parameter, info in declared.items():
        assert info["inferred_type_name"] not in (None, "None"), f"{parameter}: no '# type:'"
        assert info["help"].strip(), f"{parameter}: no description"
    # every parameter goes through check_parameters in the cell after the parameters
    after = nb.cells[nb.cells.index(cell) + 1].source
    call = ast.parse(after).body[0].value
    assert call.func.id == "check_parameters"
    assert {k.arg for k in call.keywords} == set(declared)
    assert set(declared) <= set(RULES)
    # the quick parameters are parameters of the notebook
    assert set(figures.quick_parameters(FOUND[name])) <= set(declared)
    # a markdown cell opens the notebook and explains it
    assert nb.cells[0].cell_type == "markdown" and len(nb.cells[0].source) > 100


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """Every notebook with its quick parameters, one after another."""
    base = tmp_path_factory.mktemp("quick")
    argv = ["figures", "--quick", "--workers", "1", "--no-progress"]
    argv += ["--figures-dir", str(base / "figures"), "--out", str(base / "executed")]
    code = main(argv)
    return code, base


@pytest.mark.timeout(1800)  # it pays for the quick run of every notebook (the fixture)
def test_every_notebook_runs_with_quick_parameters(quick_run, capsys):
    code, base = quick_run
    log = (base / "executed" / "figures-log.json").read_text()
    # every notebook reads only what ships with the package (07: the bundled openb trace), so
    # every one runs whether or not ../shared is beside the clone; a missing external trace is
    # refused in one line (test_bad_parameter_fails_fast_in_one_line)
    assert code == 0, log
    assert all(entry["ok"] for entry in json.loads(log)), log
    names = list(FOUND)
    for name in names:
        assert (base / "executed" / f"{name}.ipynb").exists()
        written = sorted(p.name for p in (base / "figures").glob(f"{name[:2]}_*"))
        stems = {Path(p).stem for p in written}
        assert stems, f"{name} wrote no figure"
        for stem in stems:  # each figure as SVG and PNG, with its numbers as CSV
            assert {f"{stem}.svg", f"{stem}.png", f"{stem}.csv"} <= set(written), stem


def test_notebook_figures_are_byte_stable(quick_run, tmp_path):
    """The quickstart run again, into another folder: the same bytes."""
    _, base = quick_run
    again = tmp_path / "figures"
    argv = ["figures", "--only", "01", "--quick", "--workers", "1", "--no-progress"]
    argv += ["--figures-dir", str(again), "--out", str(tmp_path / "executed")]
    assert main(argv) == 0
    names = sorted(p.name for p in again.iterdir())
    assert names and all(n.startswith("01_") for n in names)
    match, mismatch, errors = filecmp.cmpfiles(base / "figures", again, names, shallow=False)
    assert mismatch == [] and errors == [] and match == names


@pytest.mark.parametrize(
    "name, parameter, value, message",
    [
        ("02", "schedulers", "[fifo, nope]", "parameter schedulers = ['fifo', 'nope']: item 1"),
        ("01", "load_scale", "-1", "parameter load_scale = -1: must be a number > 0"),
        ("07", "trace_path", "/no/such/trace", "parameter trace_path = '/no/such/trace': no such"),
    ],
)
def test_bad_parameter_fails_fast_in_one_line(name, parameter, value, message, tmp_path, capsys):
    assert name in {n[:2] for n in FOUND}, f"notebook {name} is missing"
    argv = ["figures", "--only", name, "--workers", "1", "--no-progress", "-p", parameter, value]
    argv += ["--figures-dir", str(tmp_path / "figures"), "--out", str(tmp_path / "executed")]
    assert main(argv) == 1
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and f"ParameterError: {message}" in failed[0]
    # it failed at the check, before any simulation, and wrote no figure
    nb = nbformat.read(
        tmp_path / "executed" / FOUND[next(n for n in FOUND if n[:2] == name)].name, 4
    )
    error_cells = [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]
    assert len(error_cells) == 1 and "check_parameters(" in error_cells[0].source
    assert not (tmp_path / "figures").exists()


@pytest.mark.skipif(
    not os.environ.get("ANALYSIM_FULL_FIGURES"),
    reason="the full regeneration takes 5-8 minutes; run with ANALYSIM_FULL_FIGURES=1",
)
@pytest.mark.timeout(3600)  # beyond the default per-test timeout (setup.cfg)
def test_full_regeneration_matches_the_committed_figures(tmp_path):
    """Every notebook with its defaults, into a temporary folder: the same bytes as the
    committed figures/ (what `analysim figures && git status` checks in place)."""
    committed = NOTEBOOKS.parent / "figures"
    fresh = tmp_path / "figures"
    argv = ["figures", "--no-progress", "--figures-dir", str(fresh)]
    assert main([*argv, "--out", str(tmp_path / "executed")]) == 0
    names = sorted(p.name for p in committed.iterdir() if p.name != "README.md")
    assert sorted(p.name for p in fresh.iterdir()) == names
    match, mismatch, errors = filecmp.cmpfiles(committed, fresh, names, shallow=False)
    assert mismatch == [] and errors == []
