"""A saved result is a small format with a manifest: a damaged folder is refused up front, with
one ``ResultFormatError`` naming the file and what is wrong; a result where no job ran saves,
loads and summarises; a folder that cannot be written is named."""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest

import analysim as asim
from analysim import Cluster, Result, ResultFormatError, Workload, simulate
from analysim.results.format import FORMAT_VERSION, MANIFEST

JOBS = pd.DataFrame(
    {
        "job_id": ["a", "b", "c"],
        "vc": ["v", "v", "v"],
        "user": ["u", "u", "w"],
        "submit_time": [0.0, 5.0, 9.0],
        "duration": [10.0, 20.0, 5.0],
        "num_gpus": [1, 2, 2],
    }
)


@pytest.fixture(scope="module")
def result() -> Result:
    return simulate(Workload.from_frame(JOBS), Cluster.uniform(1, 1, 2, vc_nodes={"v": 1}))


@pytest.fixture(scope="module")
def nothing_ran() -> Result:
    # every job asks for more GPUs than the cluster has: none ever starts
    jobs = JOBS.assign(num_gpus=8)
    return simulate(Workload.from_frame(jobs), Cluster.uniform(1, 1, 2, vc_nodes={"v": 1}))


def test_a_saved_folder_has_a_manifest_listing_each_file_and_its_columns(tmp_path, result):
    folder = result.save(tmp_path / "run")
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["format"] == "analysim-result"
    assert manifest["version"] == FORMAT_VERSION
    assert manifest["files"]["jobs.parquet"]["columns"] == list(result.jobs.columns)
    assert manifest["files"]["jobs.parquet"]["rows"] == 3
    listed = set(manifest["files"])
    assert listed == {p.name for p in folder.iterdir()} - {MANIFEST}


def test_a_result_where_no_job_started_saves_loads_summarises_and_decides(tmp_path, nothing_ran):
    assert (nothing_ran.jobs["status"] == "unschedulable").all()
    assert len(nothing_ran.decisions.rounds) == 0
    again = Result.load(nothing_ran.save(tmp_path / "run"))
    assert again.summary()["finished"] == 0
    assert again.summary()["jobs"] == 3
    assert len(again.decisions.rounds) == 0
    pd.testing.assert_frame_equal(again.jobs, nothing_ran.jobs)


def _damage(folder, file, how):
    path = folder / file
    if how == "garbage":
        path.write_bytes(b"\x00\x01 this is not parquet \xff" * 10)
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    elif how == "csv":
        pd.read_parquet(path).to_csv(path, index=False)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "missing":
        path.unlink()
    elif how == "folder":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["garbage", "truncated", "csv", "empty", "missing", "folder"])
@pytest.mark.parametrize(
    "file", ["jobs.parquet", "events.parquet", "timeline.parquet", "decision_tries.parquet"]
)
def test_a_damaged_frame_file_is_named_at_load(tmp_path, result, file, how):
    folder = result.save(tmp_path / "run")
    _damage(folder, file, how)
    with pytest.raises(ResultFormatError, match=file.replace(".", r"\.")):
        Result.load(folder)


@pytest.mark.parametrize("column", ["job_id", "status", "submit_time", "end_time"])
def test_a_missing_column_is_named_at_load_not_at_summary(tmp_path, result, column):
    folder = result.save(tmp_path / "run")
    path = folder / "jobs.parquet"
    pd.read_parquet(path).drop(columns=column).to_parquet(path)
    with pytest.raises(ResultFormatError, match=rf"jobs\.parquet: missing column.*{column}"):
        Result.load(folder)


def test_a_file_with_fewer_rows_than_the_manifest_lists_is_refused(tmp_path, result):
    folder = result.save(tmp_path / "run")
    path = folder / "jobs.parquet"
    pd.read_parquet(path).iloc[:1].to_parquet(path)
    with pytest.raises(ResultFormatError, match=r"jobs\.parquet: has 1 rows, the manifest lists 3"):
        Result.load(folder)


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "",
        "[1, 2]",
        '{"config": {}}',
        '{"config": [], "meta": {}}',
        '{"config": {}, "meta": {"total_gpus": 2}}',
        '{"config": {}, "meta": {"total_gpus": true, "vcs": [], "vc_capacity": []}}',
        '{"config": {}, "meta": {"total_gpus": 2, "vcs": ["v"], "vc_capacity": []}}',
    ],
)
def test_a_broken_or_wrong_shaped_result_json_is_named(tmp_path, result, text):
    folder = result.save(tmp_path / "run")
    (folder / "result.json").write_text(text)
    with pytest.raises(ResultFormatError, match=r"result\.json"):
        Result.load(folder)


@pytest.mark.parametrize(
    "text",
    ["{", "[]", '{"format": "other"}', '{"format": "analysim-result", "version": "1"}',
     '{"format": "analysim-result", "version": 1, "files": []}',
     '{"format": "analysim-result", "version": 1, "files": {"jobs.parquet": {}}}'],
)  # fmt: skip
def test_a_broken_manifest_is_named(tmp_path, result, text):
    folder = result.save(tmp_path / "run")
    (folder / MANIFEST).write_text(text)
    with pytest.raises(ResultFormatError, match=r"manifest\.json"):
        Result.load(folder)


def test_a_newer_format_version_says_to_upgrade(tmp_path, result):
    folder = result.save(tmp_path / "run")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["version"] = FORMAT_VERSION + 1
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ResultFormatError, match="upgrade AnalySIM"):
        Result.load(folder)


def test_an_old_save_without_a_manifest_still_loads(tmp_path, result):
    folder = result.save(tmp_path / "run")
    (folder / MANIFEST).unlink()
    again = Result.load(folder)
    pd.testing.assert_frame_equal(again.jobs, result.jobs)
    assert again.decisions is not None


def test_a_damaged_old_save_says_how_to_save_again(tmp_path, result):
    folder = result.save(tmp_path / "run")
    (folder / MANIFEST).unlink()
    _damage(folder, "events.parquet", "garbage")
    with pytest.raises(ResultFormatError, match=r"events\.parquet.*save it with Result\.save"):
        Result.load(folder)


def test_loading_a_missing_folder_or_a_file_names_it(tmp_path, result):
    with pytest.raises(ResultFormatError, match="no such folder"):
        Result.load(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ResultFormatError, match="is a file"):
        Result.load(tmp_path / "file")


def test_saving_again_without_decisions_does_not_load_the_stale_ones(tmp_path, result):
    folder = result.save(tmp_path / "run")
    bare = Result(result.jobs, result.events, result.timeline, result.config, result.meta)
    bare.save(folder)
    assert Result.load(folder).decisions is None


def test_saving_onto_a_file_names_the_path(tmp_path, result):
    target = tmp_path / "taken"
    target.write_text("x")
    with pytest.raises(ValueError, match=r"Result\.save: .*taken.* is a file"):
        result.save(target)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_saving_into_a_read_only_folder_names_the_path(tmp_path, result):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ValueError, match=r"Result\.save: cannot write to .*locked"):
            result.save(locked / "run")
    finally:
        locked.chmod(0o700)


def test_saving_under_a_file_names_the_path(tmp_path, result):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"Result\.save: cannot write to .*file"):
        result.save(tmp_path / "file" / "run")


def test_a_copied_folder_loads_the_same(tmp_path, result):
    folder = result.save(tmp_path / "run")
    copy = shutil.copytree(folder, tmp_path / "copy")
    pd.testing.assert_series_equal(Result.load(copy).summary(), result.summary())
    assert asim.ResultFormatError is ResultFormatError


# -- exports and --out ----------------------------------------------------------------------
@pytest.mark.parametrize("bad", [5, True, None, 1.5, ["a"]])
def test_explore_refuses_an_export_dir_that_is_not_a_path_naming_it(bad):
    from analysim.explorer import ExploreArgumentError, explore

    with pytest.raises(ExploreArgumentError, match=rf"export_dir.*{type(bad).__name__}"):
        explore("toy", sync=True, run=False, export_dir=bad)


def test_explore_refuses_an_export_dir_that_is_a_file(tmp_path):
    from analysim.explorer import ExploreArgumentError, explore

    (tmp_path / "f").write_text("x")
    with pytest.raises(ExploreArgumentError, match=r"export_dir .*f' is a file"):
        explore("toy", sync=True, run=False, export_dir=tmp_path / "f")


def test_exporting_into_a_file_path_names_it(tmp_path):
    from analysim.explorer import ExploreArgumentError, explore

    app = explore("toy", sync=True, export_dir=tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ExploreArgumentError, match=r"export folder .*f' is a file"):
        app.export(tmp_path / "f")
    with pytest.raises(ExploreArgumentError, match=r"cannot write to .*f/sub"):
        app.export(tmp_path / "f" / "sub")


@pytest.mark.parametrize("command", [["run", "--workload", "toy"], ["saturate"]])
def test_a_cli_out_error_names_the_file(tmp_path, capsys, command):
    from analysim.faces.cli import main

    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" / "curves.csv"
    assert main([*command, "--quiet", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "--out" in err and str(tmp_path / "f") in err and "Traceback" not in err


def test_save_figure_into_a_file_path_names_it(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysim.plotting.save import save_figure

    (tmp_path / "taken").write_text("x")
    fig = plt.figure()
    try:
        with pytest.raises(ValueError, match=r"save_figure: folder: .*taken.* is a file"):
            save_figure(fig, "f", tmp_path / "taken")
        with pytest.raises(ValueError, match=r"save_figure: folder: cannot write to .*taken"):
            save_figure(fig, "f", tmp_path / "taken" / "sub")
    finally:
        plt.close(fig)
