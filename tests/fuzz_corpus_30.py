"""Round two of the fuzz corpus (issue 30): saved results, ``saturate``, presets and
``Shape``, readers (byte-order marks, time zones, openb rows that contradict themselves,
parquet lists, numeric ``start=``), objects edited after validation, ``explain``'s time.

Each case says what a careful user expects, with the oracles of :mod:`fuzz_corpus`: a clear
error names its subject (the file, the argument, the column); a drop is counted; a load or
a run is what the unmutated input gives.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from fuzz_corpus import Case, _cli_case
from trace_samples import HELIOS_HEADER, HELIOS_ROWS, helios_folder, openb_files, write

import analysim as asim
from analysim import Result, Workload, presets, simulate

_CACHE: dict[str, Any] = {}


def _toy_result() -> Result:
    if "toy" not in _CACHE:
        _CACHE["toy"] = simulate(presets.workload("toy"), presets.cluster("toy"))
    return _CACHE["toy"]


def _correct_if(check: Callable[[Any], bool]) -> Callable[[Any], str]:
    return lambda result: "correct" if check(result) else "silent"


def _refused(result: Any) -> str:
    return "silent"  # the case should have raised


# -- saved results -------------------------------------------------------------------------------
def _damage(folder: Path, file: str, how: str) -> None:
    path = folder / file
    if how == "garbage":
        path.write_bytes(b"\x00\x01 not what it should be \xff" * 8)
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[: max(1, len(path.read_bytes()) // 2)])
    elif how == "CSV named .parquet":
        pd.read_parquet(path).to_csv(path, index=False)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "missing":
        path.unlink()
    elif how == "a folder":
        path.unlink()
        path.mkdir()


def _saved_results_cases() -> list[Case]:
    cases = []
    files = ["jobs.parquet", "events.parquet", "timeline.parquet", "decision_tries.parquet"]
    for file in files:
        for how in ("garbage", "truncated", "CSV named .parquet", "empty", "missing", "a folder"):

            def call(tmp: Path, file: str = file, how: str = how) -> Any:
                folder = _toy_result().save(tmp / "run")
                _damage(folder, file, how)
                return Result.load(folder)

            cases.append(Case("saved results", f"{file}: {how}", call, _refused, names=(file,)))
    for file in ("result.json", "manifest.json"):
        for text in ("{broken", "", "[1, 2]", '{"config": {}}', "null"):

            def call(tmp: Path, file: str = file, text: str = text) -> Any:
                folder = _toy_result().save(tmp / "run")
                (folder / file).write_text(text)
                return Result.load(folder)

            cases.append(Case("saved results", f"{file} = {text!r}", call, _refused, names=(file,)))
    for column in ("job_id", "status", "submit_time", "end_time", "vc"):

        def call(tmp: Path, column: str = column) -> Any:
            folder = _toy_result().save(tmp / "run")
            path = folder / "jobs.parquet"
            pd.read_parquet(path).drop(columns=column).to_parquet(path)
            return Result.load(folder)

        cases.append(
            Case(
                "saved results",
                f"no column {column}",
                call,
                _refused,
                names=("jobs.parquet", column),
            )
        )

    def no_manifest(tmp: Path) -> Any:
        folder = _toy_result().save(tmp / "run")
        (folder / "manifest.json").unlink()
        return Result.load(folder)

    cases.append(
        Case(
            "saved results",
            "an old save without a manifest",
            no_manifest,
            _correct_if(lambda r: r.jobs.equals(_toy_result().jobs)),
            errors_ok=False,
        )
    )

    def nothing_ran(tmp: Path) -> Any:
        jobs = presets.TOY_JOBS.assign(num_gpus=64)
        result = simulate(Workload.from_frame(jobs), presets.cluster("toy"))
        again = Result.load(result.save(tmp / "run"))
        return again.summary()["finished"], len(again.decisions.rounds), len(again.jobs)

    cases.append(
        Case(
            "saved results",
            "no job ever started: save, load, summary, decisions",
            nothing_ran,
            _correct_if(lambda r: r == (0, 0, 8)),
            errors_ok=False,
        )
    )

    def onto_a_file(tmp: Path) -> Any:
        (tmp / "taken").write_text("x")
        return _toy_result().save(tmp / "taken")

    def under_a_file(tmp: Path) -> Any:
        (tmp / "taken").write_text("x")
        return _toy_result().save(tmp / "taken" / "run")

    cases.append(Case("saved results", "save onto a file", onto_a_file, _refused, names=("taken",)))
    cases.append(
        Case("saved results", "save under a file", under_a_file, _refused, names=("taken",))
    )
    for value in (5, True, None, ["a"]):
        cases.append(
            Case(
                "saved results",
                f"explore(export_dir={value!r})",
                lambda tmp, v=value: asim.explore("toy", sync=True, run=False, export_dir=v),
                _refused,
                names=("export_dir",),
            )
        )

    def export_into_a_file(tmp: Path) -> Any:
        app = asim.explore("toy", sync=True, export_dir=tmp)
        (tmp / "taken").write_text("x")
        return app.export(tmp / "taken")

    cases.append(
        Case(
            "saved results",
            "export into a file path",
            export_into_a_file,
            _refused,
            names=("taken",),
        )
    )
    from analysim.faces.cli import main

    for command in (["run", "--workload", "toy", "--no-progress"], ["saturate"]):

        def args(tmp: Path, command: list[str] = command) -> list[str]:
            (tmp / "afile").write_text("x")
            return [*command, "--quiet", "--out", str(tmp / "afile" / "out")]

        args.__name__ = f"{command[0]} --out under a file"
        cases.append(_cli_case(main, args, "afile", False))
    for case in cases[-2:]:
        case.category = "saved results"
    return cases


# -- saturate ------------------------------------------------------------------------------------
TASKS = pd.DataFrame(
    {
        "name": ["t0", "t1", "t2"],
        "cpu_milli": [1000, 2000, 500],
        "memory_mib": [100, 100, 50],
        "num_gpus": [1, 0, 2],
        "gpu_milli": [500, 0, 1000],
        "gpu_type": ["", "", ""],
    }
)
NODES = pd.DataFrame(
    {
        "node": ["n0", "n1"],
        "cpu_milli": [8000, 8000],
        "memory_mib": [1000, 1000],
        "gpus": [2, 2],
        "gpu_type": ["V100", "V100"],
    }
)


def _with(frame: pd.DataFrame, column: str, value: Any) -> pd.DataFrame:
    out = frame.copy()
    out[column] = out[column].astype(object)
    out.loc[0, column] = value
    return out


def _saturate_cases() -> list[Case]:
    cases = []
    for inflate in (math.inf, math.nan, 1e300, 101.0, 0.0, -1.0, "1.3", None, True):
        cases.append(
            Case(
                "saturate",
                f"inflate={inflate!r}",
                lambda tmp, x=inflate: asim.saturate(TASKS, NODES, inflate=x),
                _refused,
                names=("inflate",),
            )
        )
    cases.append(
        Case(
            "saturate",
            "inflate=1.3",
            lambda tmp: asim.saturate(TASKS, NODES, inflate=1.3),
            _correct_if(lambda c: c["arrived_pct"].tolist() == list(range(131))),
            errors_ok=False,
        )
    )
    for seed in (True, -1, "0", None, 1.5):
        cases.append(
            Case(
                "saturate",
                f"seed={seed!r}",
                lambda tmp, s=seed: asim.saturate(TASKS, NODES, seed=s),
                _refused,
                names=("seed",),
            )
        )
    for table in ("tasks", "nodes"):
        for value in (math.inf, 1e30, 2.0**63, -1, math.nan, True):

            def call(tmp: Path, table: str = table, value: Any = value) -> Any:
                tasks = _with(TASKS, "cpu_milli", value) if table == "tasks" else TASKS
                nodes = _with(NODES, "cpu_milli", value) if table == "nodes" else NODES
                return asim.saturate(tasks, nodes)

            cases.append(
                Case(
                    "saturate",
                    f"{table} cpu_milli={value!r}",
                    call,
                    _refused,
                    names=(table, "cpu_milli"),
                )
            )
    big = NODES.assign(gpus=10_000_000, node=["a", "b"])
    shapes = {
        "duplicate node names": (TASKS, NODES.assign(node=["n0", "n0"]), ("node", "n0")),
        "a cluster without GPUs": (TASKS, NODES.assign(gpus=0), ("gpus",)),
        "tasks that never add GPU demand": (TASKS.assign(num_gpus=0), NODES, ("GPU",)),
        "a run beyond memory": (TASKS, big, ("inflate", "GiB")),
    }
    for name, (tasks, nodes, needles) in shapes.items():
        cases.append(
            Case(
                "saturate",
                name,
                lambda tmp, t=tasks, n=nodes: asim.saturate(t, n),
                _refused,
                names=needles,
            )
        )
    from analysim.faces.cli import main

    for value in ("inf", "1e300", "nan", "0"):
        case = _cli_case(main, ["saturate", "--quiet", "--inflate", value], "inflate", False)
        case.category = "saturate"
        cases.append(case)
    return cases


# -- presets and Shape ---------------------------------------------------------------------------
def _preset_cases() -> list[Case]:
    from analysim.presets.calibrated import Shape

    cases = []
    for name in ("toy", "venus", "venus_overloaded"):
        for seed in (True, np.bool_(False), None, -1, "0", 1.5, 2**64):
            cases.append(
                Case(
                    "presets and Shape",
                    f"{name} seed={seed!r}",
                    lambda tmp, n=name, s=seed: presets.workload(n, seed=s, days=0.5),
                    _refused,
                    names=("seed",),
                )
            )
    same = presets.workload("venus", seed=3, days=0.5).jobs
    cases.append(
        Case(
            "presets and Shape",
            "venus seed=np.int64(3)",
            lambda tmp: presets.workload("venus", seed=np.int64(3), days=0.5),
            _correct_if(lambda w: w.jobs.equals(same)),
            errors_ok=False,
        )
    )
    for name, days, load in (
        ("saturn", 3650, 1000),
        ("venus", 3650, 10),
        ("venus_overloaded", 3650, 1000),
    ):
        cases.append(
            Case(
                "presets and Shape",
                f"{name} days={days} load_scale={load}",
                lambda tmp, n=name, d=days, x=load: presets.workload(n, days=d, load_scale=x),
                _refused,
                names=("days", "GiB", "limit"),
            )
        )
    cases.append(
        Case(
            "presets and Shape",
            "large jobs=10**12",
            lambda tmp: presets.workload("large", jobs=10**12),
            _refused,
            names=("jobs", "GiB"),
        )
    )
    fields = {
        "one_gpu_share": (-0.1, 1.5, math.nan),
        "max_job_fraction": (2.0, 0.0, math.inf),
        "size_growth": (math.nan, math.inf, "1"),
        "load_skew": (math.nan, 1e9, True),
        "min_duration": (-1.0, 0.0, math.nan),
        "max_duration": (math.inf, -5.0, None),
        "daily_amplitude": (1.5, -0.1, math.nan),
        "peak_hour": (24.0, -1.0, math.nan),
        "users_per_vc": (0, True, 2.5),
        "user_zipf": (-1.0, math.nan, 1e9),
        "max_gpu_days": (-1.0, 0.0, math.nan),
    }
    for name, values in fields.items():
        for value in values:
            cases.append(
                Case(
                    "presets and Shape",
                    f"Shape({name}={value!r})",
                    lambda tmp, n=name, v=value: Shape(**{n: v}),
                    _refused,
                    names=(name,),
                )
            )
    cases.append(
        Case(
            "presets and Shape",
            "Shape(min_duration=100, max_duration=10)",
            lambda tmp: Shape(min_duration=100.0, max_duration=10.0),
            _refused,
            names=("min_duration", "max_duration"),
        )
    )
    from analysim.faces.cli import main

    case = _cli_case(main, ["presets", "--check", "--days", "1e9", "--seeds", "0"], "days", False)
    case.category = "presets and Shape"
    cases.append(case)
    return cases


# -- readers, round two --------------------------------------------------------------------------
CSV = "job_id,submit_time,num_gpus,duration\nj1,0,1,10\nj2,5,2,20\n"
DATED = (
    "job_id,submit_time,num_gpus,duration\n"
    "j1,2020-01-01 08:00:00,1,10\nj2,2020-01-01 09:00:00,2,20\n"
)
FORMAT = "%Y-%m-%d %H:%M:%S"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p0,12000,16384,1,1000,,LS,Succeeded,0,500,10\n"
    "p1,6000,12288,1,460,,BE,Succeeded,100,400,150\n"
)


def _same_jobs(a: Any, b: Any) -> bool:
    return a.workload.jobs.equals(b.workload.jobs)


def _pods_with(row: int, column: str, value: Any) -> str:
    frame = pd.read_csv(io.StringIO(PODS))
    frame[column] = frame[column].astype(object)
    frame.loc[row, column] = value
    return frame.to_csv(index=False)


def _one_counted(reason: str, kept: str = "p0") -> Callable[[Any], str]:
    def judge(trace: Any) -> str:
        frame = trace.workload.jobs if hasattr(trace, "workload") else trace.tasks
        ids = frame["job_id" if "job_id" in frame.columns else "name"].tolist()
        if ids == [kept] and trace.report.count(reason) == 1:
            return "counted drop"
        return "silent"

    return judge


def _reader_cases() -> list[Case]:
    from analysim.traces import (
        read_csv_trace,
        read_folder,
        read_helios,
        read_openb,
        read_openb_tasks,
    )

    cases = []
    bom = "\ufeff"

    def bom_csv(tmp: Path) -> Any:
        plain = read_csv_trace(write(tmp / "a.csv", CSV))
        return plain, read_csv_trace(write(tmp / "b.csv", bom + CSV))

    def bom_helios(tmp: Path) -> Any:
        log = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"
        return read_helios(helios_folder(tmp / "a", log=log)), read_helios(
            helios_folder(tmp / "b", log=bom + log)
        )

    def bom_openb(tmp: Path) -> Any:
        return read_openb(*openb_files(tmp / "a", pods=PODS)), read_openb(
            *openb_files(tmp / "b", pods=bom + PODS)
        )

    for name, call in (
        ("generic CSV", bom_csv),
        ("Helios log", bom_helios),
        ("openb pods", bom_openb),
    ):
        cases.append(
            Case(
                "reader: round two",
                f"{name} with a byte-order mark",
                call,
                _correct_if(lambda pair: _same_jobs(*pair)),
                errors_ok=False,
            )
        )
    for start, first in (
        ("2020-01-01 00:00:00+08:00", 16 * 3600.0),
        ("2019-12-31 16:00:00Z", 16 * 3600.0),
        ("2020-01-01 00:00:00", 8 * 3600.0),
    ):
        cases.append(
            Case(
                "reader: round two",
                f"start={start!r} (naive times are UTC)",
                lambda tmp, s=start: read_csv_trace(
                    write(tmp / "d.csv", DATED), time_format=FORMAT, start=s
                ),
                _correct_if(
                    lambda t, f=first: t.workload.jobs["submit_time"].tolist() == [f, f + 3600]
                ),
                errors_ok=False,
            )
        )
    cases.append(
        Case(
            "reader: round two",
            "start= with numeric times",
            lambda tmp: read_csv_trace(write(tmp / "n.csv", CSV), start="2020-01-01"),
            _refused,
            names=("start",),
        )
    )
    for column in ("num_gpus", "job_id", "submit_time"):

        def lists(tmp: Path, column: str = column) -> Any:
            frame = pd.DataFrame(
                {
                    "job_id": ["j1", "j2"],
                    "submit_time": [0.0, 5.0],
                    "num_gpus": [1, 2],
                    "duration": [1.0, 2.0],
                }
            )
            frame[column] = [[frame[column][0]], [frame[column][1]] * 2]
            frame.to_parquet(tmp / "l.parquet")
            return read_csv_trace(tmp / "l.parquet")

        cases.append(
            Case(
                "reader: round two", f"parquet {column} of lists", lists, _refused, names=(column,)
            )
        )

    def timedeltas(tmp: Path) -> Any:
        frame = pd.DataFrame(
            {
                "job_id": ["j1", "j2"],
                "submit_time": [0.0, 5.0],
                "num_gpus": [1, 2],
                "duration": pd.to_timedelta([10, 20], unit="s"),
            }
        )
        frame.to_parquet(tmp / "t.parquet")
        return read_csv_trace(tmp / "t.parquet")

    cases.append(
        Case(
            "reader: round two",
            "parquet durations as timedeltas",
            timedeltas,
            _correct_if(lambda t: t.workload.jobs["duration"].tolist() == [10.0, 20.0]),
            errors_ok=False,
        )
    )
    for reader in (read_folder, read_helios):
        cases.append(
            Case(
                "reader: round two",
                f"{reader.__name__} given a file",
                lambda tmp, r=reader: r(write(tmp / "jobs.csv", CSV)),
                _refused,
                names=("jobs.csv", "file"),
            )
        )
    contradictions = {
        "scheduled before created": (1, "scheduled_time", 50, "bad_value"),
        "negative creation time": (1, "creation_time", -5, "bad_value"),
        "negative scheduled time": (1, "scheduled_time", -5, "bad_value"),
        "negative deletion time": (1, "deletion_time", -5, "bad_value"),
        "share over 1000 milli": (1, "gpu_milli", 1001, "bad_value"),
        "duplicated name": (1, "name", "p0", "duplicate_id"),
        "empty cpu_milli": (1, "cpu_milli", None, "missing_value"),
        "empty memory_mib": (1, "memory_mib", None, "missing_value"),
    }
    for name, (row, column, value, reason) in contradictions.items():
        text = _pods_with(row, column, value)
        readers = [("read_openb", read_openb)]
        if "time" not in column:
            readers.append(("read_openb_tasks", read_openb_tasks))
        for label, reader in readers:
            cases.append(
                Case(
                    "reader: round two",
                    f"openb {name} ({label})",
                    lambda tmp, t=text, r=reader: r(*openb_files(tmp, pods=t)),
                    _one_counted(reason),
                    errors_ok=False,
                )
            )
    return cases


# -- objects edited after validation, explain's time ---------------------------------------------
def _frozen_cases() -> list[Case]:
    cases = []
    before = _toy_result().summary()
    edits: dict[str, Callable[[pd.DataFrame], None]] = {
        "negative duration": lambda j: j.__setitem__("duration", -1.0),
        "NaN submit times": lambda j: j.__setitem__("submit_time", np.nan),
        "a billion GPUs on one job": lambda j: j.loc.__setitem__((0, "num_gpus"), 10**9),
        "a column deleted": lambda j: j.__delitem__("user"),
    }
    for name, edit in edits.items():

        def call(tmp: Path, edit: Callable = edit) -> Any:
            workload = presets.workload("toy")
            edit(workload.jobs)
            return simulate(workload, presets.cluster("toy")).summary()

        cases.append(
            Case(
                "API: objects edited after validation",
                f"jobs frame: {name}",
                call,
                _correct_if(lambda s: s.equals(before)),
                errors_ok=False,
            )
        )

    def edit_nodes(tmp: Path) -> Any:
        cluster = presets.cluster("toy")
        nodes, quotas = cluster.nodes, cluster.quotas
        nodes.loc[0, "gpus"] = 10**6
        quotas["x"] = 5
        return simulate(presets.workload("toy"), cluster).summary()

    cases.append(
        Case(
            "API: objects edited after validation",
            "nodes frame and quotas edited",
            edit_nodes,
            _correct_if(lambda s: s.equals(before)),
            errors_ok=False,
        )
    )

    def set_jobs(tmp: Path) -> Any:
        workload = presets.workload("toy")
        try:
            workload.jobs = pd.DataFrame()
        except FrozenInstanceError as error:
            raise ValueError(f"jobs: {error}") from None
        return workload

    cases.append(
        Case(
            "API: objects edited after validation",
            "assign a new jobs frame",
            set_jobs,
            _refused,
            names=("read-only",),
        )
    )
    from analysim.results.explain import explain, waiting_jobs

    for time in (math.nan, math.inf, -1.0, "10", None):
        cases.append(
            Case(
                "API: objects edited after validation",
                f"explain at time={time!r}",
                lambda tmp, t=time: explain(_toy_result(), "j4", t),
                _refused,
                names=("time",),
            )
        )
        cases.append(
            Case(
                "API: objects edited after validation",
                f"waiting_jobs at time={time!r}",
                lambda tmp, t=time: waiting_jobs(_toy_result(), t),
                _refused,
                names=("time",),
            )
        )
    return cases


def round_two_cases() -> list[Case]:
    """Every case of issue 30's categories."""
    with contextlib.redirect_stderr(io.StringIO()):
        return (
            _saved_results_cases()
            + _saturate_cases()
            + _preset_cases()
            + _reader_cases()
            + _frozen_cases()
        )
