"""Sweeps that are safe to share a folder and a machine: mixed-type grid values store and
reload, a run file that belongs to another run is recomputed, runs are claimed so two sweeps
on one folder compute each run once, a worker death recomputes only the run that killed it,
the local Dask cluster admits only holders of its TLS credentials and serves no dashboard
unless asked, and a missing optional package gives one sentence naming its extra."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

import analysim as asim
from analysim.faces.cli import main
from analysim.faces.extras import MissingPackage
from analysim.policies import SCHEDULERS
from analysim.sweep import runner
from analysim.sweep.store import RunStore

REPO_ROOT = Path(__file__).resolve().parents[1]
MIXED = {"checkpoint_cost": [40, "size_scaled"], "preemption": [True]}


def quiet(grid, **kwargs) -> pd.DataFrame:
    return asim.sweep(grid, workload="toy", workers=0, progress=False, **kwargs)


# -- stored files --------------------------------------------------------------------------------
def test_a_grid_mixing_a_number_and_a_name_stores_and_reloads(tmp_path):
    frame = quiet(MIXED, out=tmp_path)
    assert frame["checkpoint_cost"].tolist() == ["40", "size_scaled"]
    assert (frame["status"] == "ok").all()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "sweep.parquet"), frame)
    again = quiet(MIXED, out=tmp_path)
    assert again.attrs["reused"] == 2 and again.attrs["computed"] == 0
    pd.testing.assert_frame_equal(again, frame)


def test_a_run_file_copied_over_another_runs_name_is_recomputed_with_a_warning(
    tmp_path, caplog, monkeypatch
):
    grid = {"scheduler": ["fifo", "sjf"], "preemption": [True]}
    first = quiet(grid, out=tmp_path)
    fifo, sjf = (tmp_path / "runs" / f"{key}.parquet" for key in first["run_id"])
    shutil.copy(fifo, sjf)  # a valid file, of another run
    calls = []
    real = runner.execute
    monkeypatch.setattr(runner, "execute", lambda run, *a: calls.append(run.key) or real(run, *a))
    again = quiet(grid, out=tmp_path)
    assert calls == [first.loc[1, "run_id"]]
    assert f"{sjf} holds another run (run_id {first.loc[0, 'run_id']!r}" in caplog.text
    assert again.attrs["reused"] == 1 and again.attrs["computed"] == 1
    pd.testing.assert_frame_equal(again.drop(columns="seconds"), first.drop(columns="seconds"))
    stored = pd.read_parquet(sjf)
    assert stored.loc[0, "run_id"] == first.loc[1, "run_id"]


# -- claims --------------------------------------------------------------------------------------
def test_two_sweeps_on_one_folder_compute_each_run_once(tmp_path, monkeypatch):
    grid = {"scheduler": ["fifo", "sjf", "srtf", "las"], "preemption": [False, True]}
    calls: list[str] = []
    lock = threading.Lock()
    real = runner.execute

    def counted(run, *args):
        with lock:
            calls.append(run.key)
        return real(run, *args)

    monkeypatch.setattr(runner, "execute", counted)
    monkeypatch.setattr(runner, "CLAIM_POLL", 0.01)
    frames: list[pd.DataFrame] = []
    threads = [
        threading.Thread(target=lambda: frames.append(quiet(grid, out=tmp_path))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(frames) == 2
    assert sorted(calls) == sorted(frames[0]["run_id"])  # 8 runs, each computed once
    pd.testing.assert_frame_equal(
        frames[0].drop(columns="seconds"), frames[1].drop(columns="seconds")
    )
    assert frames[0].attrs["computed"] + frames[1].attrs["computed"] == 8
    assert not list((tmp_path / "runs").glob("*.claim"))  # every claim released


def test_a_claim_of_a_live_process_is_respected_and_of_a_dead_one_taken_over(tmp_path):
    store = RunStore(tmp_path)
    path = store.claim_path("k")
    host = __import__("socket").gethostname()
    path.write_text(json.dumps({"host": host, "pid": os.getppid()}))  # alive: our parent
    assert not store.claim("k") and store.claimed_elsewhere("k")
    path.write_text(json.dumps({"host": host, "pid": 2**22 + 12345}))  # no such process
    assert not store.claimed_elsewhere("k")
    assert store.claim("k")
    assert json.loads(path.read_text()) == {"host": host, "pid": os.getpid(), "token": store.token}
    assert not RunStore(tmp_path).claim("k")  # another call of this process waits for it
    store.release("k")
    assert not path.exists()
    assert store.claim("k")
    store.close()  # the call ended without releasing (an interrupt): the claim is stale
    assert RunStore(tmp_path).claim("k")


def test_two_sweep_processes_on_one_folder_compute_each_run_once(tmp_path, counting):
    log = tmp_path / "executions.log"
    specs = [{"name": "counted", "log": str(log), "tag": t, "pause": 0.3} for t in range(10)]
    grid, out = {"scheduler": specs}, tmp_path / "out"
    script = (
        "import analysim\n"
        f"analysim.sweep({grid!r}, workload='toy', workers=0, progress=False, "
        f"out={str(out)!r}, modules=[{counting!r}])\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    other = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.monotonic() + 60
        while not list((out / "runs").glob("*.claim")):  # the other sweep has begun
            assert other.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        here = asim.sweep(
            grid, workload="toy", workers=0, progress=False, out=out, modules=[counting]
        )
    finally:
        assert other.wait(timeout=120) == 0
    executions = sorted(int(line) for line in log.read_text().split())
    assert executions == list(range(10))  # each run executed once, by one of the two
    assert (here["status"] == "ok").all() and here.attrs["computed"] < 10
    stored = pd.read_parquet(out / "sweep.parquet")  # written by whichever ended last
    assert sorted(stored["run_id"]) == sorted(here["run_id"])


# -- the local Dask cluster ----------------------------------------------------------------------
distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

COUNTING_SOURCE = '''
"""Schedulers that log each execution of a run, and one that kills its worker once."""
import os
import time

from analysim.policies import SCHEDULERS
from analysim.policies.scheduling import FIFO


@SCHEDULERS.register("counted")
class Counted(FIFO):
    """FIFO that appends ``tag`` to ``log`` the first time it ranks (once per execution)."""

    def __init__(self, log: str = "", tag: int = 0, pause: float = 0.0) -> None:
        self.log, self.tag, self.pause = log, tag, pause
        self._seen = False

    def priority(self, jobs):
        if not self._seen:
            self._seen = True
            time.sleep(self.pause)
            with open(self.log, "a") as handle:
                handle.write(f"{self.tag}\\n")
        return super().priority(jobs)


@SCHEDULERS.register("kill_once")
class KillOnce(Counted):
    """Kills its process the first time it ranks (leaving ``marker``), then is Counted."""

    def __init__(self, log: str = "", tag: int = 0, marker: str = "") -> None:
        super().__init__(log, tag)
        self.marker = marker

    def priority(self, jobs):
        if not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return super().priority(jobs)
'''
COUNTING_MODULE = "sweep_counting_policies"


@pytest.fixture
def counting(tmp_path, monkeypatch):
    (tmp_path / f"{COUNTING_MODULE}.py").write_text(COUNTING_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield COUNTING_MODULE
    for name in ("counted", "kill_once"):
        SCHEDULERS._classes.pop(name, None)
    sys.modules.pop(COUNTING_MODULE, None)


def test_a_worker_death_recomputes_only_the_run_that_killed_it(tmp_path, counting):
    log, marker = tmp_path / "executions.log", tmp_path / "died"
    specs = [{"name": "counted", "log": str(log), "tag": tag} for tag in range(1, 7)]
    specs.insert(3, {"name": "kill_once", "log": str(log), "tag": 0, "marker": str(marker)})
    frame = asim.sweep(
        {"scheduler": specs},
        workload="toy",
        workers=2,
        modules=[counting],
        out=tmp_path / "out",
        progress=False,
    )
    assert marker.exists()  # the killer ran, and its worker died
    assert (frame["status"] == "ok").all()
    assert frame["avg_jct"].tolist() == [862.5] * 7  # all FIFO
    executions = sorted(int(line) for line in log.read_text().split())
    assert executions == [0, 1, 2, 3, 4, 5, 6]  # each run executed to the end exactly once
    assert len(list((tmp_path / "out" / "runs").glob("*.parquet"))) == 7


def _refused(address: str, **kwargs) -> bool:
    try:
        client = distributed.Client(address, timeout="3s", **kwargs)
    except Exception:  # noqa: BLE001 - any failure to connect is a refusal
        return True
    try:
        client.submit(sum, [1, 2]).result(timeout=5)
    except Exception:  # noqa: BLE001
        return True
    finally:
        client.close()
    return False


def test_the_local_cluster_admits_only_its_credentials_and_serves_no_dashboard():
    from distributed.security import Security

    with runner.local_cluster(1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3  # the sweep's own client
        assert _refused(address)  # no credentials
        assert _refused(address.replace("tls://", "tcp://"))  # plain TCP
        assert _refused(address, security=Security.temporary())  # someone else's
        port = client.scheduler_info()["services"]["dashboard"]
        with pytest.raises(urllib.error.HTTPError) as status:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5)
        assert status.value.code == 404
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/json/identity.json", timeout=5)


# -- missing optional packages -------------------------------------------------------------------
SENTENCE = "needs the Python package {!r}, which is not installed; install the {!r} extra: "


def test_sweep_workers_without_dask_names_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(runner, "_have_dask", lambda: False)
    with pytest.raises(MissingPackage) as error:
        asim.sweep({"scheduler": ["fifo", "sjf"]}, workload="toy", workers=2, progress=False)
    expected = "sweep with workers= " + SENTENCE.format("distributed", "sweeps")
    assert str(error.value).startswith(expected)
    assert "pip install 'analysim[sweeps]'" in str(error.value)
    file = tmp_path / "s.json"
    file.write_text(json.dumps({"workload": "toy", "grid": {"scheduler": ["fifo", "sjf"]}}))
    code = main(
        ["sweep", str(file), "--out", str(tmp_path / "o"), "--workers", "2", "--no-progress"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and err == f"analysim: error: {error.value}" and "\n" not in err


def test_explore_and_figures_without_their_packages_name_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    for name in [m for m in sys.modules if m.startswith(("analysim.widgets", "analysim.explorer"))]:
        monkeypatch.delitem(sys.modules, name)  # imported again, without ipywidgets
    with pytest.raises(MissingPackage) as error:
        asim.explore("toy")
    assert str(error.value).startswith("explore " + SENTENCE.format("ipywidgets", "notebooks"))
    monkeypatch.setitem(sys.modules, "papermill", None)
    code = main(
        ["figures", "--only", "02", "--quick", "--workers", "1", "--no-progress"]
        + ["--out", str(tmp_path / "nb"), "--figures-dir", str(tmp_path / "fig")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 1 and "\n" not in err
    assert err.startswith(
        "analysim: error: this command " + SENTENCE.format("papermill", "notebooks")
    )
    assert not (tmp_path / "fig").exists() or not any((tmp_path / "fig").iterdir())
