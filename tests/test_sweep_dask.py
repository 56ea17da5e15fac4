"""Sweeps on Dask: a LocalCluster gives the in-process frame, a failing configuration gives an
error row, a worker killed mid-run has its run retried, and a real ``dask scheduler`` /
``dask worker`` pair on loopback runs a sweep given by its address."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import analysim as asim
from analysim.sweep import runner

distributed = pytest.importorskip("distributed")

from test_sweep import POLICIES_MODULE, TINY_VENUS, forget_policies, write_policies  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
GRID = {"scheduler": ["fifo", "las"], "preemption": [False, True], **TINY_VENUS}


@pytest.fixture(scope="module")
def policies_dir(tmp_path_factory) -> Path:
    """The custom policies module, on sys.path before the workers start (they inherit it)."""
    folder = tmp_path_factory.mktemp("policies")
    write_policies(folder)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    forget_policies()


@pytest.fixture(scope="module")
def client(policies_dir):
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    )
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


def without_timing(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns="seconds")


def test_a_local_cluster_gives_the_in_process_frame():
    kwargs = {"workload": "venus_overloaded", "seeds": [0, 1], "progress": False}
    here = asim.sweep(GRID, workers=0, **kwargs)
    there = asim.sweep(GRID, workers=2, **kwargs)
    assert there.attrs["where"] == "local Dask cluster (2 workers)"
    assert (here["status"] == "ok").all() and len(here) == 8
    pd.testing.assert_frame_equal(without_timing(there), without_timing(here))


def test_the_automatic_mode_runs_here_while_a_cluster_starts_then_there(monkeypatch):
    monkeypatch.setattr(runner, "IN_PROCESS_BUDGET", 0.0)  # any sweep looks long
    monkeypatch.setattr(runner, "_cores", lambda: 2)
    kwargs = {"workload": "venus_overloaded", "seeds": [0, 1], "progress": False}
    auto = asim.sweep(GRID, **kwargs)
    here = asim.sweep(GRID, workers=0, **kwargs)
    where = re.fullmatch(
        r"local Dask cluster \(2 workers; (\d+) runs in-process while it started\)",
        auto.attrs["where"],
    )
    assert where, auto.attrs["where"]
    assert 0 <= int(where.group(1)) <= 7  # the first run probes, in-process, before
    pd.testing.assert_frame_equal(without_timing(auto), without_timing(here))


def test_objects_are_shipped_to_the_cluster(client):
    workload, cluster = asim.presets.workload("toy"), asim.presets.cluster("toy")
    kwargs = {"workload": workload, "cluster": cluster, "progress": False}
    there = asim.sweep({"scheduler": ["fifo", "sjf"]}, client=client, **kwargs)
    here = asim.sweep({"scheduler": ["fifo", "sjf"]}, workers=0, **kwargs)
    assert there.attrs["where"].startswith("Dask client")
    pd.testing.assert_frame_equal(without_timing(there), without_timing(here))
    assert there.loc[0, "avg_jct"] == 862.5


def test_a_failing_configuration_gives_an_error_row_on_the_cluster(client, tmp_path):
    frame = asim.sweep(
        {"scheduler": ["fifo", "boom", "sjf"]},
        workload="toy",
        client=client,
        modules=[POLICIES_MODULE],
        out=tmp_path,
        progress=False,
    )
    assert frame["status"].tolist() == ["ok", "error", "ok"]
    assert frame.loc[1, "error"] == "RuntimeError: boom: this scheduler always fails"
    assert frame.attrs["failed"] == 1
    assert len(list((tmp_path / "runs").glob("*.parquet"))) == 3


def test_a_run_whose_worker_dies_is_retried(client, tmp_path):
    marker = tmp_path / "died"
    spec = {"name": "die_once", "marker": str(marker)}
    frame = asim.sweep(
        {"scheduler": [spec, "fifo"]},
        workload="toy",
        client=client,
        modules=[POLICIES_MODULE],
        out=tmp_path / "out",
        progress=False,
    )
    assert marker.exists()  # a worker process ran it and exited
    assert frame["status"].tolist() == ["ok", "ok"]
    assert frame.loc[0, "avg_jct"] == frame.loc[1, "avg_jct"] == 862.5  # die_once is FIFO
    assert len(list((tmp_path / "out" / "runs").glob("*.parquet"))) == 2


def test_a_script_without_the_main_guard_gets_a_clear_error(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import analysim\n"
        "analysim.sweep({'scheduler': ['fifo', 'sjf']}, workload='toy', workers=2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: sweep: the local Dask cluster did not start"), last
    assert 'if __name__ == "__main__":' in last


def _read_when_written(path: Path, process: subprocess.Popen, seconds: float) -> dict:
    """The JSON object ``process`` writes to ``path``, once it is there and complete."""
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, f"{process.args[:3]} exited with {process.returncode}"
        assert time.monotonic() < deadline, f"{path} was not written in {seconds} s"
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.05)


@pytest.mark.timeout(120)
def test_a_real_scheduler_and_worker_on_loopback_run_a_sweep(tmp_path):
    dask = Path(sys.executable).with_name("dask")
    command = [str(dask)] if dask.exists() else [sys.executable, "-m", "distributed.cli.dask"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    address_file = tmp_path / "scheduler.json"
    common = {"env": env, "cwd": tmp_path, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [*command, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
         "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(address_file)],
        **common,
    )  # fmt: skip
    worker = subprocess.Popen(  # started at once: it waits for the scheduler file
        [*command, "worker", "--scheduler-file", str(address_file), "--host", "127.0.0.1",
         "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
        **common,
    )  # fmt: skip
    try:
        address = _read_when_written(address_file, scheduler, 60)["address"]
        assert address.startswith("tcp://127.0.0.1:")
        frame = asim.sweep(
            {"scheduler": ["fifo", "sjf"]},
            workload="toy",
            seeds=[0, 1],
            scheduler_address=address,
            progress=False,
        )
        assert frame.attrs["where"] == f"Dask scheduler {address}"
        assert (frame["status"] == "ok").all() and len(frame) == 4
        assert frame["avg_jct"].tolist()[:2] == [862.5, 862.5]
    finally:
        for process in (worker, scheduler):
            process.terminate()
        for process in (worker, scheduler):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
