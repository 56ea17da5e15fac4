"""Sweeps run in this process: grid expansion and validation, the tidy frame, error rows, the
durable ``out`` folder and resuming after a kill, the CLI and the plot helpers.

The Dask side (LocalCluster, a killed worker, a real scheduler/worker pair) is in
``test_sweep_dask.py``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import analysim as asim
from analysim.faces.cli import main
from analysim.policies import SCHEDULERS, Scheduler
from analysim.sweep import runner
from analysim.sweep.files import load_sweep_file
from analysim.sweep.grid import expand
from analysim.sweep.plots import jct_vs_load, metric_bars
from analysim.sweep.report import overview
from analysim.version import code_version

matplotlib.use("Agg")

REPO_ROOT = Path(__file__).resolve().parents[1]
TINY_VENUS = {"workload.days": [0.25]}  # ~500 jobs: a run takes about 0.1 s
OUTCOME = ["status", "error", "seconds", "run_id"]

POLICIES_SOURCE = '''
"""Custom schedulers for the sweep tests, registered by name when imported."""
import os

from analysim.policies import SCHEDULERS, Scheduler
from analysim.policies.scheduling import FIFO


@SCHEDULERS.register("boom")
class Boom(FIFO):
    """Fails as soon as it is asked to rank."""

    def priority(self, jobs):
        raise RuntimeError("boom: this scheduler always fails")


@SCHEDULERS.register("die_once")
class DieOnce(FIFO):
    """Kills its process the first time it ranks (leaving ``marker`` behind), then is FIFO."""

    def __init__(self, marker: str = "") -> None:
        self.marker = marker

    def priority(self, jobs):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return super().priority(jobs)
'''
POLICIES_MODULE = "sweep_test_policies"


def write_policies(folder: Path) -> None:
    """Write the custom policies module into ``folder`` (put it on sys.path to import it)."""
    (folder / f"{POLICIES_MODULE}.py").write_text(POLICIES_SOURCE)


def forget_policies() -> None:
    """Undo the module's registrations, so that other tests see the built-in registry."""
    for name in ("boom", "die_once"):
        SCHEDULERS._classes.pop(name, None)
    sys.modules.pop(POLICIES_MODULE, None)


@pytest.fixture
def policies(tmp_path, monkeypatch):
    write_policies(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield POLICIES_MODULE
    forget_policies()


def quiet_sweep(grid, **kwargs) -> pd.DataFrame:
    return asim.sweep(grid, workers=0, progress=False, **kwargs)


# -- the grid ----------------------------------------------------------------------------------
def test_a_grid_expands_to_its_product_with_seeds_innermost():
    runs = expand(
        {"scheduler": ["fifo", "las"], "preemption": [False, True]},
        workload="toy",
        cluster=None,
        seeds=[0, 1],
    )
    got = [(r.params["scheduler"], r.params["preemption"], r.seed) for r in runs]
    assert got == [(s, p, seed) for s in ("fifo", "las") for p in (False, True) for seed in (0, 1)]
    assert len({r.key for r in runs}) == 8
    assert runs[0].cluster.preset == "toy"  # the cluster defaults to the workload's preset


def test_run_keys_golden_and_insensitive_to_spelling():
    # Keys name the files of an out folder: a change here orphans every saved sweep.
    (fifo,) = expand({"scheduler": ["fifo"]}, workload="toy", cluster="toy", seeds=[0])
    assert fifo.key == "fbd67c7cc4297b0110dd"
    (plain,) = expand([{}], workload="toy", cluster=None, seeds=[0])
    assert plain.key == fifo.key  # fifo is the default
    spelled = expand(
        {"quantum": [60], "workload.load_scale": [1]}, workload="toy", cluster=None, seeds=[0]
    )
    assert spelled[0].key == fifo.key  # defaults, 60 == 60.0, load_scale 1 == 1.0
    other = expand({"quantum": [30]}, workload="toy", cluster=None, seeds=[0, 1])
    assert len({fifo.key, *(r.key for r in other)}) == 3


def test_every_simconfig_field_is_a_grid_parameter_and_its_default_is_the_plain_run():
    defaults = asim.SimConfig()
    grid = {name: [getattr(defaults, name)] for name in asim.SimConfig.fields() if name != "seed"}
    (run,) = expand(grid, workload="toy", cluster=None, seeds=[0])
    assert run.invalid is None and list(run.params) == list(grid)
    assert run.key == expand([{}], workload="toy", cluster=None, seeds=[0])[0].key


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["quantum", "sample_every", "step"]),
        st.integers(1, 4).map(lambda k: 60 * k),
        min_size=1,
    ),
    st.integers(0, 5),
)
def test_a_key_depends_on_values_not_on_their_order_or_number_type(options, seed):
    forward = expand([options], workload="toy", cluster=None, seeds=[seed])[0]
    floats = {k: float(v) for k, v in reversed(list(options.items()))}
    backward = expand([floats], workload="toy", cluster=None, seeds=[seed])[0]
    assert forward.key == backward.key
    assert expand([options], workload="toy", cluster=None, seeds=[seed + 1])[0].key != forward.key


BAD_GRIDS = [
    ({"schedular": ["fifo"]}, {}, "unknown parameter 'schedular'.*did you mean 'scheduler'"),
    ({"scheduler": []}, {}, r"grid\['scheduler'\] is an empty list"),
    ({"scheduler": "fifo"}, {}, r"grid\['scheduler'\] must be a list of values"),
    ({"scheduler": ["fifo", "fifo"]}, {}, "more than once"),
    ({"seed": [1, 2]}, {}, "seeds="),
    ({"workload.nope": [1]}, {}, "unknown parameter 'workload.nope'"),
    ({"cluster.partition": ["nodes"]}, {"workload": "venus_overloaded"}, "'cluster.partition'"),
    ({"scheduler": ["fifo"]}, {"seeds": []}, "seeds is empty"),
    ({"scheduler": ["fifo"]}, {"seeds": 3}, "seeds must be a list"),
    ({"scheduler": ["fifo"]}, {"seeds": [0, -1]}, "seed must be a whole number >= 0"),
    ({"scheduler": ["fifo"]}, {"workload": "nowhere"}, "unknown workload preset 'nowhere'"),
    (42, {}, "grid must be a dict of parameter lists or a list of configurations"),
    ([], {}, "list of configurations is empty"),
    ([{"scheduler": "las"}, {"scheduler": "las"}], {}, "configurations 0 and 1 are the same"),
    ([asim.SimConfig(seed=3)], {}, "configuration 0 sets seed=3"),
]


@pytest.mark.parametrize(("grid", "kwargs", "message"), BAD_GRIDS)
def test_a_bad_grid_is_refused_before_any_run(grid, kwargs, message, tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "execute", lambda *a: pytest.fail("a run started"))
    kwargs = {"workload": "toy", **kwargs}
    with pytest.raises(ValueError, match=message):
        quiet_sweep(grid, out=tmp_path / "out", **kwargs)
    assert not list((tmp_path).rglob("*.parquet"))


def test_preset_parameters_on_an_object_workload_are_refused():
    workload = asim.presets.workload("toy")
    with pytest.raises(ValueError, match="unknown parameter 'workload.load_scale'"):
        quiet_sweep({"workload.load_scale": [2.0]}, workload=workload, cluster="toy")
    with pytest.raises(ValueError, match="give cluster="):
        quiet_sweep({"scheduler": ["fifo"]}, workload=workload)


# -- the frame ---------------------------------------------------------------------------------
def test_the_frame_has_a_row_per_run_with_parameters_metrics_and_outcome():
    frame = quiet_sweep(
        {"scheduler": ["fifo", "sjf"], "preemption": [False]}, workload="toy", seeds=[0]
    )
    metrics = list(
        asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy")).summary().index
    )
    expected = ["workload", "cluster", "scheduler", "preemption", "seed", *metrics, *OUTCOME]
    assert list(frame.columns) == expected
    assert frame["scheduler"].tolist() == ["fifo", "sjf"]
    assert frame["status"].tolist() == ["ok", "ok"]
    assert frame["error"].isna().all()
    assert frame.loc[0, "avg_jct"] == 862.5  # docs/semantics.md, worked by hand
    sjf = asim.simulate(asim.presets.workload("toy"), asim.presets.cluster("toy"), scheduler="sjf")
    np.testing.assert_array_equal(  # NaN where a metric is undefined, in both
        frame.loc[1, metrics].to_numpy(float), sjf.summary().to_numpy(float)
    )
    assert frame.attrs["runs"] == 2 and frame.attrs["failed"] == 0
    assert frame.attrs["where"] == "in-process"


def test_an_explicit_list_of_configurations_fills_unnamed_parameters_with_defaults():
    frame = quiet_sweep(
        [{"scheduler": "fifo"}, {"scheduler": "las", "preemption": True, "workload.load_scale": 2}],
        workload="toy",
    )
    assert frame["preemption"].tolist() == [False, True]
    assert frame["workload.load_scale"].tolist() == [1.0, 2]
    spec = {"name": "las", "thresholds": [600]}
    frame = quiet_sweep([asim.SimConfig(scheduler=spec)], workload="toy")
    assert frame.loc[0, "scheduler"] == '{"name": "las", "thresholds": [600]}'


class Newest(Scheduler):
    """Last come, first served: an unregistered scheduler, passed as an instance."""

    def priority(self, jobs):
        return (-jobs.submit_time,)


class Oldest(Scheduler):
    def priority(self, jobs):
        return (jobs.submit_time,)


def test_policy_instances_run_and_are_told_apart_by_class():
    runs = expand(
        {"scheduler": [Newest(), Oldest(), "fifo"]}, workload="toy", cluster=None, seeds=[0]
    )
    assert len({run.key for run in runs}) == 3  # same (empty) parameters, different classes
    frame = quiet_sweep({"scheduler": [Newest(), Oldest()]}, workload="toy")
    assert frame["scheduler"].tolist() == ["Newest()", "Oldest()"]
    assert (frame["status"] == "ok").all()
    assert frame.loc[1, "avg_jct"] == 862.5  # Oldest is FIFO
    assert frame.loc[0, "avg_jct"] != 862.5


def test_seeds_give_different_workloads_and_the_same_seed_the_same_result():
    frame = quiet_sweep(
        {"scheduler": ["fifo"], **TINY_VENUS}, workload="venus_overloaded", seeds=[0, 1]
    )
    first, second = frame.to_dict("records")
    assert first["jobs"] != second["jobs"] and first["avg_jct"] != second["avg_jct"]
    again = quiet_sweep(
        {"scheduler": ["fifo"], **TINY_VENUS}, workload="venus_overloaded", seeds=[1]
    )
    pd.testing.assert_frame_equal(
        again.drop(columns="seconds"),
        frame.iloc[[1]].reset_index(drop=True).drop(columns="seconds"),
    )


def test_objects_give_the_same_rows_as_the_presets_they_came_from():
    by_name = quiet_sweep({"scheduler": ["fifo", "sjf"]}, workload="toy")
    by_object = quiet_sweep(
        {"scheduler": ["fifo", "sjf"]},
        workload=asim.presets.workload("toy"),
        cluster=asim.presets.cluster("toy"),
    )
    metrics = by_name.columns[by_name.columns.get_loc("seed") + 1 : -len(OUTCOME)]
    pd.testing.assert_frame_equal(by_name[metrics], by_object[metrics])


# -- failures ----------------------------------------------------------------------------------
def test_an_invalid_value_gives_an_error_row_and_the_rest_runs(caplog):
    frame = quiet_sweep({"quantum": [60, -5], "scheduler": ["fifo"]}, workload="toy", seeds=[0, 1])
    bad = frame[frame["quantum"] == -5]
    assert bad["status"].tolist() == ["error", "error"]
    assert bad["error"].str.contains("quantum must be a finite number > 0").all()
    assert bad["avg_jct"].isna().all()
    assert (frame.loc[frame["quantum"] == 60, "status"] == "ok").all()
    assert frame.attrs["failed"] == 2
    assert "2 of 4 runs failed" in caplog.text


def test_a_scheduler_that_raises_gives_an_error_row(policies):
    frame = quiet_sweep({"scheduler": ["fifo", "boom"]}, workload="toy", modules=[policies])
    assert frame["status"].tolist() == ["ok", "error"]
    assert frame.loc[1, "error"] == "RuntimeError: boom: this scheduler always fails"


def test_a_module_that_cannot_be_imported_is_named():
    with pytest.raises(ValueError, match="cannot import module 'no_such_module_xyz'"):
        quiet_sweep({"scheduler": ["fifo"]}, workload="toy", modules=["no_such_module_xyz"])


# -- the out folder ----------------------------------------------------------------------------
def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in (folder / "runs").glob("*")}


def test_out_holds_a_file_per_run_and_a_rerun_computes_nothing(tmp_path, monkeypatch):
    grid = {"scheduler": ["fifo", "sjf"], "quantum": [60, -5]}
    first = quiet_sweep(grid, workload="toy", seeds=[0, 1], out=tmp_path)
    assert sorted(_stamps(tmp_path)) == sorted(f"{key}.parquet" for key in first["run_id"])
    stamps = _stamps(tmp_path)
    monkeypatch.setattr(runner, "execute", lambda *a: pytest.fail("a finished run ran again"))
    again = quiet_sweep(grid, workload="toy", seeds=[0, 1], out=tmp_path)
    pd.testing.assert_frame_equal(again, first)
    assert again.attrs["reused"] == 8 and again.attrs["computed"] == 0
    assert _stamps(tmp_path) == stamps
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "sweep.parquet"), first)


def test_a_run_saved_by_another_grid_is_reused_with_this_grids_columns(tmp_path):
    # quantum 60 is the default: the same run as the one that does not name it
    quiet_sweep({"quantum": [60], "scheduler": ["fifo"]}, workload="toy", out=tmp_path)
    reused = quiet_sweep({"scheduler": ["fifo"]}, workload="toy", out=tmp_path)
    fresh = quiet_sweep({"scheduler": ["fifo"]}, workload="toy")
    assert reused.attrs["reused"] == 1
    pd.testing.assert_frame_equal(reused.drop(columns="seconds"), fresh.drop(columns="seconds"))


def test_a_run_file_records_the_code_that_made_it(tmp_path):
    frame = quiet_sweep({"scheduler": ["fifo"]}, workload="toy", out=tmp_path)
    stored = pd.read_parquet(tmp_path / "runs" / f"{frame.loc[0, 'run_id']}.parquet")
    assert stored.loc[0, "analysim_version"] == code_version()
    assert code_version().startswith(asim.__version__)
    if (REPO_ROOT / ".git").exists():  # a checkout: the commit is part of it
        assert "+" in code_version()


def test_runs_reused_from_other_code_are_reported_and_counted(tmp_path, monkeypatch, caplog):
    grid = {"scheduler": ["fifo", "sjf"]}
    first = quiet_sweep(grid, workload="toy", out=tmp_path)
    assert first.attrs["reused_other_version"] == 0
    monkeypatch.setattr(runner, "code_version", lambda: "9.9.9+later")
    monkeypatch.setattr(runner, "execute", lambda *a: pytest.fail("a finished run ran again"))
    again = quiet_sweep(grid, workload="toy", out=tmp_path)
    pd.testing.assert_frame_equal(again, first)  # reused as they are
    assert again.attrs["reused_other_version"] == 2
    warning = f"2 of the 2 runs reused from {tmp_path} were made by other analysim code"
    assert warning in caplog.text
    assert f"2 by {code_version()}" in caplog.text and "9.9.9+later" in caplog.text


def test_retry_errors_reruns_only_the_failed_runs(tmp_path, monkeypatch):
    grid = {"quantum": [60, -5]}
    quiet_sweep(grid, workload="toy", out=tmp_path)
    calls = []
    real = runner.execute
    monkeypatch.setattr(runner, "execute", lambda run, *a: calls.append(run.key) or real(run, *a))
    frame = quiet_sweep(grid, workload="toy", out=tmp_path, retry_errors=True)
    assert frame.attrs["reused"] == 1 and frame.attrs["computed"] == 1
    assert frame["status"].tolist() == ["ok", "error"]
    assert calls == []  # the invalid value is refused again without building anything


def test_a_damaged_run_file_is_run_again(tmp_path, caplog):
    grid = {"scheduler": ["fifo", "sjf"]}
    first = quiet_sweep(grid, workload="toy", out=tmp_path)
    damaged = tmp_path / "runs" / f"{first.loc[1, 'run_id']}.parquet"
    damaged.write_bytes(b"not parquet")
    again = quiet_sweep(grid, workload="toy", out=tmp_path)
    assert again.attrs["reused"] == 1 and again.attrs["computed"] == 1
    assert f"cannot read {damaged}" in caplog.text
    pd.testing.assert_frame_equal(again.drop(columns="seconds"), first.drop(columns="seconds"))


RESUME_GRID = {
    "scheduler": ["fifo", "sjf"],
    "workload.load_scale": [0.8, 1.0],
    "workload.days": [0.5],
}
RESUME_SEEDS = [0, 1, 2]


def test_a_killed_sweep_resumes_without_recomputing_finished_runs(tmp_path, monkeypatch):
    out = tmp_path / "out"
    script = textwrap.dedent(
        f"""
        import analysim
        analysim.sweep({RESUME_GRID!r}, workload="venus_overloaded", seeds={RESUME_SEEDS!r},
                       out={str(out)!r}, workers=0, progress=False)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list((out / "runs").glob("*.parquet"))) < 3:
            assert process.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "no runs finished within 60 s"
            time.sleep(0.01)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    stamps = _stamps(tmp_path / "out")
    finished = {name for name in stamps if name.endswith(".parquet")}
    total = len(RESUME_SEEDS) * 4
    assert 3 <= len(finished) < total

    calls = []
    real = runner.execute
    monkeypatch.setattr(runner, "execute", lambda run, *a: calls.append(run.key) or real(run, *a))
    resumed = quiet_sweep(RESUME_GRID, workload="venus_overloaded", seeds=RESUME_SEEDS, out=out)
    assert len(calls) == total - len(finished)
    assert not {f"{key}.parquet" for key in calls} & finished
    assert {name: _stamps(out)[name] for name in finished} == {n: stamps[n] for n in finished}
    assert resumed.attrs["reused"] == len(finished)

    monkeypatch.setattr(runner, "execute", real)
    whole = quiet_sweep(RESUME_GRID, workload="venus_overloaded", seeds=RESUME_SEEDS)
    assert (resumed["status"] == "ok").all() and len(resumed) == total
    pd.testing.assert_frame_equal(resumed.drop(columns="seconds"), whole.drop(columns="seconds"))


# -- sweep files and the CLI -------------------------------------------------------------------
SWEEP_FILE = """\
workload: toy
seeds: [0, 1]
grid:
  scheduler: [fifo, sjf]
  preemption: [false, true]
"""


def test_cli_sweep_runs_a_file_prints_an_overview_and_resumes(tmp_path, capsys):
    path = tmp_path / "grid.yaml"
    path.write_text(SWEEP_FILE)
    argv = ["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "0", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "avg_jct" in out and "sjf" in out
    frame = pd.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert len(frame) == 8 and (frame["status"] == "ok").all()
    assert main([*argv, "--quiet"]) == 0
    assert len(list((tmp_path / "out" / "runs").glob("*.parquet"))) == 8


def test_cli_sweep_exits_1_when_a_run_failed(tmp_path, capsys):
    path = tmp_path / "grid.yaml"
    path.write_text("workload: toy\ngrid:\n  quantum: [60, -1]\n")
    assert (
        main(
            [
                "sweep",
                str(path),
                "--out",
                str(tmp_path / "o"),
                "--workers",
                "0",
                "--no-progress",
                "--quiet",
            ]
        )
        == 1
    )
    assert "1 of 2 runs failed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("workload: toy\ngrid: {scheduler: [fifo]}\nsede: [1]\n", r"unknown key\(s\) \['sede'\]"),
        ("grid: {scheduler: [fifo]}\n", r"give workload \(a preset\) or trace \(a folder\)"),
        ("workload: toy\ntrace: t\ngrid: {scheduler: [fifo]}\n", "give workload or trace, not"),
        ("workload: toy\ntrace_format: pai\ngrid: {x: [1]}\n", "trace_format needs trace"),
        ("trace: nowhere\ngrid: {scheduler: [fifo]}\n", "nowhere: no such folder"),
        ("- 1\n- 2\n", "must hold a mapping"),
        ("workload: toy\ngrid: {scheduler: [fifo\n", "not valid YAML"),
        ("workload: toy\ngrid: {schedular: [fifo]}\n", "unknown parameter 'schedular'"),
    ],
)
def test_cli_sweep_file_errors_are_one_line_naming_the_problem(tmp_path, capsys, text, message):
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("analysim: error: ")
    assert re.search(message, err), err
    if "sweep file" in err:
        assert str(path) in err


def test_a_sweep_file_gives_the_arguments_of_sweep(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text(SWEEP_FILE)
    assert load_sweep_file(path) == {
        "workload": "toy",
        "seeds": [0, 1],
        "grid": {"scheduler": ["fifo", "sjf"], "preemption": [False, True]},
    }


def test_a_sweep_file_may_name_a_trace_folder_beside_it(tmp_path, capsys):
    from trace_samples import helios_folder

    from analysim.traces import read_helios

    trace = read_helios(helios_folder(tmp_path))  # tmp_path / "Venus"
    path = tmp_path / "grid.yaml"
    path.write_text("trace: Venus\ngrid: {scheduler: [fifo, sjf]}\n")
    loaded = load_sweep_file(path)
    pd.testing.assert_frame_equal(loaded["workload"].jobs, trace.workload.jobs)
    pd.testing.assert_frame_equal(loaded["cluster"].nodes, trace.cluster.nodes)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    frame = pd.read_parquet(out / "sweep.parquet")
    assert frame["scheduler"].tolist() == ["fifo", "sjf"]
    assert (frame["jobs"] == len(trace.workload.jobs)).all()
    assert "cluster_log.csv" in capsys.readouterr().err  # the load report, logged


def test_importing_analysim_does_not_import_dask():
    code = (
        "import sys, analysim; analysim.sweep; import analysim.sweep.plots; "
        "assert callable(analysim.sweep); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- overview and plots ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def load_frame() -> pd.DataFrame:
    grid = {"scheduler": ["fifo", "sjf"], "workload.load_scale": [1.0, 2.0]}
    frame = asim.sweep(grid, workload="toy", seeds=[0, 1, 2], workers=0, progress=False)
    failed = frame.iloc[[0]].assign(status="error", error="x", avg_jct=1e9)
    return pd.concat([frame, failed], ignore_index=True)


def test_overview_averages_the_finished_seeds_of_each_configuration(load_frame):
    table = overview(load_frame)
    assert table.index.names == ["workload", "cluster", "scheduler", "workload.load_scale"]
    first = table.loc[("toy", "toy", "fifo", 1.0)]
    assert first["runs"] == 4 and first["failed"] == 1
    assert first["avg_jct"] == 862.5  # the failed row (avg_jct 1e9) is left out


def test_jct_vs_load_draws_a_line_and_a_band_per_scheduler(load_frame):
    ax = jct_vs_load(load_frame)
    assert [t.get_text() for t in ax.get_legend().texts] == ["fifo", "sjf"]
    fifo = ax.get_lines()[0]
    assert fifo.get_xdata().tolist() == [1.0, 2.0]
    ok = load_frame[load_frame["status"] == "ok"]
    expected = ok[ok["scheduler"] == "fifo"].groupby("workload.load_scale")["avg_jct"].mean()
    np.testing.assert_allclose(fifo.get_ydata(), expected.to_numpy())
    assert ax.get_xlabel().startswith("load scale") and ax.get_ylabel() == "average JCT (s)"
    matplotlib.pyplot.close(ax.figure)


def test_metric_bars_uses_the_given_axes_and_names_a_missing_column(load_frame):
    fig, ax = matplotlib.pyplot.subplots()
    assert metric_bars(load_frame, x="scheduler", y="p95_jct", ax=ax) is ax
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        metric_bars(load_frame, y="nope")
    with pytest.raises(ValueError, match="no finished"):
        metric_bars(load_frame.assign(status="error"))
    matplotlib.pyplot.close(fig)


def test_plots_never_pool_runs_across_a_parameter_they_do_not_show(load_frame):
    both = pd.concat(
        [load_frame.assign(preemption=False), load_frame.assign(preemption=True, avg_jct=1.0)],
        ignore_index=True,
    )
    both.insert(list(both.columns).index("seed"), "preemption", both.pop("preemption"))
    ax = jct_vs_load(both)  # preemption becomes the line style: four lines, none pooled
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == 2]  # not legend keys
    assert len(curves) == 4
    flat = [line for line in curves if set(line.get_ydata()) == {1.0}]  # the preempting runs
    assert len(flat) == 2
    assert len({line.get_linestyle() for line in curves}) == 2
    one_load = both[both["workload.load_scale"] == 1.0]
    ax = metric_bars(one_load, x="scheduler")  # preemption becomes the hue
    assert ax.get_legend().get_title().get_text() == "preemption"
    three = both.assign(quantum=np.where(both.index % 2 == 0, 60, 300))
    three.insert(list(three.columns).index("seed"), "quantum", three.pop("quantum"))
    with pytest.raises(ValueError, match=r"also differ in \{'preemption'.*'quantum'"):
        jct_vs_load(three)
    with pytest.raises(ValueError, match="give it as hue="):
        metric_bars(three, x="scheduler")
    matplotlib.pyplot.close("all")


def test_one_worker_runs_in_this_process(tmp_path):
    """``workers=1`` would start a cluster of one process that runs the runs one after
    another, as this process does, after seconds of start-up: it runs here."""
    frame = asim.sweep({"scheduler": ["fifo", "sjf"]}, workload="toy", workers=1, progress=False)
    assert frame.attrs["where"] == "in-process"
    assert frame["status"].tolist() == ["ok", "ok"]
