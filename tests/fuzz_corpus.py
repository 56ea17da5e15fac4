"""A corpus of malformed (and well-formed) inputs at every border, each with its oracle.

Every case runs one call (a reader on generated files, ``Workload.from_frame``,
``Cluster.from_frame``, ``SimConfig``, a policy, ``simulate``, ``explore``'s checks, a sweep
grid, the CLI) and is classified:

* ``clear error``: a ``ValueError`` (``TraceError`` is one) whose message holds what the case
  says it must name (the file, the column, the parameter);
* ``counted drop``: a reader dropped the mutated row and counted it, the oracle allowing it,
  and every other row is as in the unmutated load;
* ``correct``: the value was loaded (or the run went) exactly as the oracle says;
* ``silent``: a wrong answer: a value loaded that the oracle refuses or loaded differently,
  another row changed, a row lost without a count, a valid value refused;
* ``crash``: any other exception, or a hang;
* ``misleading``: a ValueError that does not name its subject (the file, the argument).

``tests/test_fuzz_borders.py`` asserts no case is silent or a crash; ``benchmarks/
fuzz_table.py`` prints the table by category.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import io
import json
import math
import re
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from trace_samples import (
    HELIOS_HEADER,
    HELIOS_ROWS,
    HELIOS_VCS,
    PAI_JOBS,
    PAI_MACHINES,
    PAI_TASKS,
    PHILLY_JOBS,
    PHILLY_MACHINES,
    helios_folder,
    pai_folder,
    philly_folder,
    write,
)

from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_SECONDS
from analysim.inputs.workload import Workload
from analysim.traces import read_csv_trace, read_helios, read_pai, read_philly

OUTCOMES = ("clear error", "counted drop", "correct", "silent", "crash", "misleading")
DROP = "drop"
TIMEOUT = 60


@dataclass
class Case:
    """One input: ``call(tmp)`` does it; ``judge(result)`` returns an outcome for a return;
    an error is clear when it is a ValueError naming every one of ``names``."""

    category: str
    name: str
    call: Callable[[Path], Any]
    judge: Callable[[Any], str]
    names: tuple[str, ...] = ()
    errors_ok: bool = True
    detail: str = field(default="", repr=False)


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def hang(*_: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def classify(case: Case, tmp: Path) -> tuple[str, str]:
    """The case's outcome and a word on why."""
    try:
        with _deadline(TIMEOUT):
            result = case.call(tmp)
    except TimeoutError as error:
        return "crash", str(error)
    except ValueError as error:
        message = str(error)
        missing = [n for n in case.names if n not in message]
        if missing:
            return "misleading", f"error does not name {missing}: {message}"
        if not case.errors_ok:
            return "silent", f"a valid input refused: {message}"
        return "clear error", message
    except Exception as error:  # noqa: BLE001 - the point is to catch any other
        return "crash", f"{type(error).__name__}: {error}"
    try:
        return case.judge(result), ""
    except Exception as error:  # noqa: BLE001 - a judge that cannot read the result
        return "crash", f"judging failed: {type(error).__name__}: {error}"


# -- oracles for one cell ----------------------------------------------------------------------
ASCII_BLANKS = " \t\n\r\f"
NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def strict_number(text: str) -> float | None:
    """The number ``text`` writes in plain ASCII decimal (nothing around it), or None."""
    if not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def maybe_number(text: str) -> bool:
    """Text some parsers read as a number and others refuse (`` 3 ``, ``1_0``, full-width
    digits): either answer is right."""
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and not NUMBER.fullmatch(text)


def accept_count(text: str, *, low: float = 1, whole: bool = True, high: float = MAX_JOB_GPUS):
    """Acceptable outcomes of a GPU-count cell: the value, or DROP."""
    value = strict_number(text)
    if value is None:
        return {DROP} | (
            {float(text)} if maybe_number(text) and _in(float(text), low, high, whole) else set()
        )
    return {value} if _in(value, low, high, whole) else {DROP}


def _in(value: float, low: float, high: float, whole: bool) -> bool:
    return low <= value <= high and (not whole or value.is_integer())


def accept_seconds(text: str, *, positive: bool) -> set:
    value = strict_number(text)
    if value is None:
        return {DROP} | ({float(text)} if maybe_number(text) else set())
    ok = (0 < value if positive else 0 <= value) and value <= MAX_SECONDS
    return {value} if ok else {DROP}


def accept_date(text: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> set:
    try:
        stamp = dt.datetime.strptime(text.strip(), fmt)
    except ValueError:
        return {DROP}
    if not 1970 <= stamp.year < 2100:
        return {DROP}
    seconds = (stamp - dt.datetime(1970, 1, 1)).total_seconds()
    canonical = stamp.strftime(fmt) == text.strip()
    return {seconds} if canonical else {seconds, DROP}


# -- reader cases: mutate one cell of a kept row -----------------------------------------------
NUMERIC_CELLS = [
    "",
    " ",
    "abc",
    "-1",
    "0",
    "1",
    "1.5",
    "2.0",
    "7",
    "1e20",
    "99999999999999999999",
    "1e300",
    "-1e300",
    "inf",
    "-inf",
    "nan",
    "NaN",
    "true",
    "false",
    "0x10",
    " 3 ",
    "+2",
    "１",
    "1_0",
    "1e-300",
    "4e9",
    "3600",
    "NULL",
    "None",
    "1,5",
]
TIME_CELLS = [
    "",
    "garbage",
    "2020-09-02 10:00:00",
    "2020-9-2 10:00:00",
    "2020-02-30 00:00:00",
    "2020-13-01 00:00:00",
    "1020-09-02 10:00:00",
    "1969-12-31 23:59:59",
    "2100-01-01 00:00:00",
    "2099-12-31 23:59:59",
    "2020-09-02T10:00:00",
    "2020-09-02",
    "0",
    "1e300",
    "2020-09-02 10:00:00+01:00",
    "2020-09-31 10:00:00",
    "2021-02-29 00:00:00",
    "2020-02-29 00:00:00",
    " 2020-09-03 10:00:00 ",
    "2020-09-02 25:00:00",
]
LABEL_CELLS = ["", " ", "x", "vcA", " vcB ", "vcB", "101", "é✓", "a" * 300, "None", "nan"]
NULL_WORDS = ("", "NULL", "null", "NaN", "nan", "NA", "N/A", "n/a", "#N/A", "-nan", "-NaN")
"""Cells pyarrow reads as missing: a reader may count them as missing or keep the text."""


def accept_label(text: str, known: tuple[str, ...] | None = None) -> set:
    value = text.strip()
    if not value or (known is not None and value not in known):
        return {DROP}
    return {value, DROP} if text in NULL_WORDS else {value}


def _csv_cell(text: str) -> str:
    """``text`` as one CSV field (quoted when it holds a comma, quote or blank edge)."""
    if any(c in text for c in ',"\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _frame_of(trace: Any) -> pd.DataFrame:
    return trace.workload.jobs.set_index("job_id")


_BASELINES: dict[str, Any] = {}


def _baseline(key: str, load: Callable[[Path], Any]) -> Any:
    if key not in _BASELINES:
        _BASELINES[key] = load(Path(tempfile.mkdtemp(prefix=f"fuzz-{key}-")))
    return _BASELINES[key]


def _row_judge(
    key: str,
    load: Callable[[Path], Any],
    row: str,
    column: str,
    accept: set,
    *,
    relative_to: str | None = None,
) -> Callable[[Any], str]:
    """Judge a load where ``row``'s ``column`` was mutated: dropped (and counted) if
    ``accept`` allows it, or kept with an accepted value; other rows as in the baseline.
    Times compared ``relative_to`` another row absorb a moved time origin."""

    def judge(trace: Any) -> str:
        base = _baseline(key, load)
        before, after = _frame_of(base), _frame_of(trace)
        others = [j for j in before.index if j != row]
        report, base_report = trace.report, base.report
        for table in report.tables:
            dropped = report.dropped(table)
            if report.read[table] != report.kept[table] + dropped:
                return "silent"
        columns = [c for c in before.columns if c != "submit_time"]
        kept_others = [j for j in others if j in after.index]
        if len(kept_others) != len(others):
            return "silent"  # another row lost
        if not before.loc[others, columns].equals(after.loc[others, columns]):
            return "silent"
        submits = after.loc[others, "submit_time"] - before.loc[others, "submit_time"]
        if submits.nunique() > 1:
            return "silent"  # the other rows moved apart
        if row not in after.index:
            counted = report.dropped() == base_report.dropped() + 1
            return "counted drop" if counted and DROP in accept else "silent"
        got = after.loc[row, column]
        if relative_to is not None:
            got = got - after.loc[relative_to, column] + REFERENCE_TIMES[key][relative_to]
        values = {v for v in accept if v != DROP}
        return "correct" if any(_close(got, v) for v in values) else "silent"

    return judge


REFERENCE_TIMES = {
    "helios": {
        "101": (dt.datetime(2020, 9, 1, 0, 0, 10) - dt.datetime(1970, 1, 1)).total_seconds()
    },
    "csv_dated": {"j1": (dt.datetime(2020, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds()},
}


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, str) or isinstance(a, str):
        return str(a) == str(b)
    return bool(np.isclose(float(a), float(b), rtol=1e-12, atol=1e-6))


def _helios_load(log: str) -> Callable[[Path], Any]:
    return lambda tmp: read_helios(helios_folder(tmp, log))


def _helios_cases() -> list[Case]:
    header = HELIOS_HEADER.split(",")
    rows = [r.split(",") for r in HELIOS_ROWS]
    base_log = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"
    load = _helios_load(base_log)
    target = 5  # job 106: vcB, 4 GPUs, 7200 s, submitted 2020-09-02 10:00:00 (kept)
    cases = []

    def mutated(column: str, text: str) -> str:
        fields = list(rows[target])
        fields[header.index(column)] = _csv_cell(text)
        lines = [",".join(r) for r in rows[:target]] + [",".join(fields)]
        lines += [",".join(r) for r in rows[target + 1 :]]
        return HELIOS_HEADER + "\n" + "\n".join(lines) + "\n"

    for text in NUMERIC_CELLS:
        accept = accept_count(text, low=0)
        accept = {DROP if v == 0 else v for v in accept}
        cases.append(_reader_case("helios", "gpu_num", text, mutated, accept, load, "num_gpus"))
        accept = accept_seconds(text, positive=True)
        if strict_number(text) is not None and strict_number(text) <= 0:
            accept = {DROP}
        cases.append(_reader_case("helios", "duration", text, mutated, accept, load, "duration"))
    for text in TIME_CELLS:
        accept = accept_date(text)
        cases.append(
            _reader_case("helios", "submit_time", text, mutated, accept, load, "submit_time", "101")
        )
    for text in LABEL_CELLS:
        vc = accept_label(text, ("vcA", "vcB"))
        cases.append(_reader_case("helios", "vc", text, mutated, vc, load, "vc"))
        cases.append(
            _reader_case("helios", "user", text, mutated, accept_label(text), load, "user")
        )
    return cases


def _reader_case(
    reader: str,
    column: str,
    text: str,
    mutated: Callable[[str, str], str],
    accept: set,
    load: Callable[[Path], Any],
    ours: str,
    relative_to: str | None = None,
) -> Case:
    log = mutated(column, text)
    row = "106"
    return Case(
        f"reader: {reader} cells",
        f"{column}={text!r}",
        _helios_load(log),
        _row_judge(reader, load, row, ours, accept, relative_to=relative_to),
        names=("cluster_log.csv",),
    )


# -- generic CSV --------------------------------------------------------------------------------
CSV_HEADER = "job_id,submit_time,num_gpus,duration,vc,user"
CSV_ROWS = [
    ["j1", "0", "1", "100", "a", "u1"],
    ["j2", "10", "4", "50", "a", "u2"],
    ["j3", "20", "2", "100", "b", "u1"],
    ["j4", "30", "8", "10", "b", "u3"],
]
DATED_ROWS = [
    ["j1", "2020-01-01 00:00:00", "1", "100", "a", "u1"],
    ["j2", "2020-01-01 00:00:10", "4", "50", "a", "u2"],
    ["j3", "2020-01-02 00:00:20", "2", "100", "b", "u1"],
    ["j4", "2020-01-02 00:00:30", "8", "10", "b", "u3"],
]
FORMAT = "%Y-%m-%d %H:%M:%S"


def _csv_text(rows: list[list[str]]) -> str:
    return CSV_HEADER + "\n" + "\n".join(",".join(r) for r in rows) + "\n"


def _csv_load(text: str | bytes, name: str = "jobs.csv", **kwargs: Any) -> Callable[[Path], Any]:
    return lambda tmp: read_csv_trace(write(tmp / name, text), **kwargs)


def _csv_cases() -> list[Case]:
    header = CSV_HEADER.split(",")
    cases = []
    for dated, rows, key in ((False, CSV_ROWS, "csv"), (True, DATED_ROWS, "csv_dated")):
        kwargs = {"time_format": FORMAT} if dated else {}
        load = _csv_load(_csv_text(rows), **kwargs)

        def mutated(column: str, text: str, rows: list[list[str]] = rows) -> str:
            copy = [list(r) for r in rows]
            copy[2][header.index(column)] = _csv_cell(text)
            return _csv_text(copy)

        columns = ["num_gpus", "duration"] if dated else ["num_gpus", "duration", "submit_time"]
        for column in columns:
            for text in NUMERIC_CELLS:
                if column == "num_gpus":
                    accept = accept_count(text, low=0, whole=False)
                    accept = {
                        DROP if v == 0 else (math.ceil(v) if v != DROP else v) for v in accept
                    }
                else:
                    accept = accept_seconds(text, positive=column == "duration")
                    number = strict_number(text)
                    if column == "duration" and number is not None and number <= 0:
                        accept = {DROP}
                cases.append(
                    Case(
                        "reader: generic CSV cells",
                        f"{'dated ' if dated else ''}{column}={text!r}",
                        _csv_load(mutated(column, text), **kwargs),
                        _row_judge(key, load, "j3", column, accept),
                        names=("jobs.csv",),
                    )
                )
        if dated:
            for text in TIME_CELLS:
                accept = accept_date(text)
                cases.append(
                    Case(
                        "reader: generic CSV cells",
                        f"dated submit_time={text!r}",
                        _csv_load(mutated("submit_time", text), **kwargs),
                        _row_judge(key, load, "j3", "submit_time", accept, relative_to="j1"),
                        names=("jobs.csv",),
                    )
                )
        for text in LABEL_CELLS:
            accept = accept_label(text)
            cases.append(
                Case(
                    "reader: generic CSV cells",
                    f"{'dated ' if dated else ''}user={text!r}",
                    _csv_load(mutated("user", text), **kwargs),
                    _row_judge(key, load, "j3", "user", accept),
                    names=("jobs.csv",),
                )
            )
    return cases


# -- whole files ----------------------------------------------------------------------------------
def _loads(trace: Any) -> str:
    """A load of an unchanged or harmlessly changed file: every kept job valid, every table's
    rows accounted for."""
    jobs = trace.workload.jobs
    ok = (
        (jobs["submit_time"].between(0, MAX_SECONDS)).all()
        and (jobs["duration"] > 0).all()
        and (jobs["duration"] <= MAX_SECONDS).all()
        and jobs["num_gpus"].between(1, MAX_JOB_GPUS).all()
    )
    for table in trace.report.tables:
        if trace.report.read[table] != trace.report.kept[table] + trace.report.dropped(table):
            ok = False
    return "correct" if ok else "silent"


def _never_loads(_: Any) -> str:
    return "silent"


def _same_as(key: str, load: Callable[[Path], Any]) -> Callable[[Any], str]:
    def judge(trace: Any) -> str:
        base = _baseline(key, load)
        same = _frame_of(base).equals(_frame_of(trace))
        return "correct" if same else "silent"

    return judge


def _file_cases() -> list[Case]:
    """Corruptions of whole files, for every reader and each of its files."""
    base_csv = _csv_text(CSV_ROWS)
    log = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"
    philly_text = json.dumps(PHILLY_JOBS)
    files = {
        "helios log": (log, lambda tmp, t: read_helios(helios_folder(tmp, t)), "cluster_log.csv"),
        "helios vcs": (
            HELIOS_VCS,
            lambda tmp, t: read_helios(helios_folder(tmp, None, t)),
            "cluster_gpu_number.csv",
        ),
        "philly jobs": (
            philly_text,
            lambda tmp, t: read_philly(philly_folder(tmp, t)),
            "cluster_job_log",
        ),
        "philly machines": (
            PHILLY_MACHINES,
            lambda tmp, t: read_philly(philly_folder(tmp, None, t)),
            "cluster_machine_list",
        ),
        "pai jobs": (PAI_JOBS, lambda tmp, t: read_pai(pai_folder(tmp, t)), "pai_job_table.csv"),
        "pai tasks": (
            PAI_TASKS,
            lambda tmp, t: read_pai(pai_folder(tmp, None, t)),
            "pai_task_table.csv",
        ),
        "pai machines": (
            PAI_MACHINES,
            lambda tmp, t: read_pai(pai_folder(tmp, None, None, t)),
            "pai_machine_spec.csv",
        ),
        "csv": (base_csv, lambda tmp, t: read_csv_trace(write(tmp / "jobs.csv", t)), "jobs.csv"),
    }
    corruptions: dict[str, tuple[Callable[[str], str | bytes], Callable[[Any], str]]] = {
        "empty": (lambda t: "", _never_loads),
        "gzip": (lambda t: gzip.compress(t.encode()), _never_loads),
        "latin-1 byte in the middle": (
            lambda t: t[: len(t) // 2].encode() + b"\xe9" + t[len(t) // 2 :].encode(),
            _never_loads,
        ),
        "binary garbage": (lambda t: bytes(range(256)) * 4, _never_loads),
        "truncated mid-line": (lambda t: t[: int(len(t) * 0.7)], _loads),
        "CRLF line ends": (lambda t: t.replace("\n", "\r\n"), _loads),
        "UTF-8 BOM": (lambda t: "\ufeff" + t, _loads),
        "semicolons": (lambda t: t.replace(",", ";"), _never_loads),
        "header only": (lambda t: t.split("\n")[0] + "\n", _loads),
        "extra field on a line": (
            lambda t: "\n".join(
                line + (",x" if i == 2 else "") for i, line in enumerate(t.split("\n"))
            ),
            _loads,
        ),
        "blank lines": (lambda t: t.replace("\n", "\n\n"), _loads),
        "NUL bytes": (lambda t: t.replace(",", ",\x00", 3), _loads),
        "a million-character line": (lambda t: t + "x" * 1_000_000 + "\n", _loads),
    }
    cases = []
    for file, (text, read, filename) in files.items():
        for corruption, (change, judge) in corruptions.items():
            changed = change(text)
            cases.append(
                Case(
                    "reader: corrupted files",
                    f"{file}: {corruption}",
                    lambda tmp, read=read, changed=changed: read(tmp, changed),
                    judge,
                    names=(filename,),
                )
            )
    deep = "[" * 200_000 + "]" * 200_000
    cases.append(
        Case(
            "reader: corrupted files",
            "philly jobs: nested 200,000 deep",
            lambda tmp: read_philly(philly_folder(tmp, deep)),
            _never_loads,
            names=("cluster_job_log",),
        )
    )
    cases += _permission_cases()
    cases += _csv_structure_cases()
    cases += _json_cases()
    return cases


def _permission_cases() -> list[Case]:
    """A file the system will not open (PermissionError, as for another user's file)."""

    def denied(setup: Callable[[Path], Path], read: Callable[[Path], Any], name: str):
        def call(tmp: Path) -> Any:
            where = setup(tmp)
            original = Path.open

            def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
                if self.name == name:
                    raise PermissionError(13, "Permission denied", str(self))
                return original(self, *args, **kwargs)

            Path.open = refuse  # type: ignore[method-assign]
            try:
                return read(where)
            finally:
                Path.open = original  # type: ignore[method-assign]

        return call

    readers = {
        "cluster_log.csv": (helios_folder, read_helios),
        "cluster_gpu_number.csv": (helios_folder, read_helios),
        "cluster_job_log": (philly_folder, read_philly),
        "cluster_machine_list": (philly_folder, read_philly),
        "pai_job_table.csv": (pai_folder, read_pai),
        "jobs.csv": (lambda tmp: write(tmp / "jobs.csv", _csv_text(CSV_ROWS)), read_csv_trace),
    }
    return [
        Case(
            "reader: corrupted files",
            f"{name}: permission denied",
            denied(setup, read, name),
            _never_loads,
            names=(name,),
        )
        for name, (setup, read) in readers.items()
    ]


def _csv_structure_cases() -> list[Case]:
    """read_csv_trace's own inputs: mappings, duplicated headers, parquet column types."""
    text = _csv_text(CSV_ROWS)
    load = _csv_load(text)
    cases = []

    def case(
        name: str,
        call: Callable[[Path], Any],
        judge: Callable[[Any], str],
        names: tuple[str, ...] = ("jobs.csv",),
        errors_ok: bool = True,
    ) -> None:
        cases.append(Case("reader: read_csv_trace mapping", name, call, judge, names, errors_ok))

    case("duplicated header", _csv_load(text.replace("vc,user", "vc,vc")), _never_loads)
    case(
        "mapped optional column missing",
        _csv_load(text, columns={"gpu_type": "model"}),
        _never_loads,
        ("jobs.csv", "model"),
    )
    case(
        "one column mapped to two fields",
        _csv_load(text, columns={"duration": "num_gpus"}),
        _never_loads,
        ("num_gpus",),
    )
    case(
        "two fields mapped to one column",
        _csv_load(text, columns={"duration": "vc", "user": "vc"}),
        _never_loads,
        ("vc",),
    )
    case("unknown field", _csv_load(text, columns={"gpus": "num_gpus"}), _never_loads, ("gpus",))
    case("mapping to a non-text name", _csv_load(text, columns={"vc": 3}), _never_loads, ("vc",))
    case(
        "renamed columns mapped",
        _csv_load(
            text.replace("num_gpus", "gpus").replace("job_id", "id"),
            columns={"num_gpus": "gpus", "job_id": "id"},
        ),
        _same_as("csv", load),
        errors_ok=False,
    )
    case(
        "mapping naming its own default",
        _csv_load(text, columns={"vc": "vc"}),
        _same_as("csv", load),
        errors_ok=False,
    )
    case(
        "ids 1 and '1'",
        _csv_load(text.replace("j1,", "1,").replace("j2,", '"1",')),
        lambda trace: "counted drop" if trace.report.count("duplicate_id") == 1 else "silent",
    )
    case("a folder, not a file", lambda tmp: read_csv_trace(tmp), _never_loads, (" ",))
    case("no such file", lambda tmp: read_csv_trace(tmp / "nope.csv"), _never_loads, ("nope.csv",))
    case(
        "start not a date",
        _csv_load(
            text.replace(",0,", ",2020-01-01 00:00:00,"), time_format=FORMAT, start="yesterday-ish"
        ),
        _never_loads,
        ("start",),
    )

    frame = pd.DataFrame(
        {
            "job_id": ["j1", "j2", "j3"],
            "submit_time": pd.to_datetime(
                ["2020-01-01 00:00:00", "2020-01-01 00:01:00", "2020-01-01 00:03:00"]
            ),
            "num_gpus": [1, 2, 4],
            "duration": pd.to_timedelta([60, 120.5, 30], unit="s"),
        }
    )
    expected = {"j1": (0.0, 60.0), "j2": (60.0, 120.5), "j3": (180.0, 30.0)}

    def parquet(frame: pd.DataFrame) -> Callable[[Path], Any]:
        def call(tmp: Path) -> Any:
            path = tmp / "jobs.parquet"
            frame.to_parquet(path)
            return read_csv_trace(path)

        return call

    def exact(trace: Any) -> str:
        jobs = trace.workload.jobs.set_index("job_id")
        got = {j: (jobs.loc[j, "submit_time"], jobs.loc[j, "duration"]) for j in expected}
        return "correct" if got == expected else "silent"

    case(
        "parquet datetime and timedelta columns",
        parquet(frame),
        exact,
        ("jobs.parquet",),
        errors_ok=False,
    )
    aware = frame.assign(submit_time=frame["submit_time"].dt.tz_localize("Europe/Paris"))
    case("parquet zone-aware datetimes", parquet(aware), exact, ("jobs.parquet",), errors_ok=False)
    early = np.array(
        ["1020-01-01T00:00:00", "2020-01-01T00:01:00", "2020-01-01T00:03:00"], dtype="datetime64[s]"
    )
    old = frame.assign(submit_time=pd.Series(early))
    case(
        "parquet year-1020 datetime",
        parquet(old),
        lambda t: (
            "counted drop"
            if t.report.count("out_of_range") == 1
            and t.workload.jobs["submit_time"].tolist() == [0.0, 120.0]
            else "silent"
        ),
        ("jobs.parquet",),
    )
    mixed = frame.assign(submit_time=[0.0, 60.0, 180.0]).assign(
        start_time=frame["submit_time"], end_time=frame["submit_time"]
    )
    case(
        "parquet times of two kinds",
        parquet(mixed.drop(columns="duration")),
        _never_loads,
        ("jobs.parquet",),
    )
    case(
        "parquet duration as a date",
        parquet(frame.assign(duration=frame["submit_time"])),
        _never_loads,
        ("jobs.parquet", "duration"),
    )
    case(
        "parquet bool GPU counts",
        parquet(frame.assign(num_gpus=[True, True, False])),
        lambda t: "counted drop" if len(t.workload.jobs) == 0 else "silent",
        ("jobs.parquet",),
    )
    case(
        "not parquet",
        lambda tmp: read_csv_trace(write(tmp / "jobs.parquet", b"PAR1 no")),
        _never_loads,
        ("jobs.parquet",),
    )
    for text_time, accept in (
        ("2020-09-02 08:00:00+01:00", 0.0),
        ("2020-09-15 08:00:00+01:00", 0.0),
    ):
        rows = f"{CSV_HEADER}\nj1,{text_time},1,5,a,u\nj2,{text_time},1,5,a,u\n"
        case(
            f"UTC offset {text_time}",
            _csv_load(rows, time_format="%Y-%m-%d %H:%M:%S%z"),
            lambda t, a=accept: (
                "correct" if t.workload.jobs["submit_time"].tolist() == [a, a] else "silent"
            ),
            errors_ok=False,
        )
    for day in ("2", "15"):
        rows = f"{CSV_HEADER}\nj1,2020-9-{day} 8:00:00,1,5,a,u\nj2,2020-9-{day} 8:00:10,1,5,a,u\n"
        case(
            f"unpadded date, day {day}",
            _csv_load(rows, time_format=FORMAT),
            lambda t: (
                "correct" if t.workload.jobs["submit_time"].tolist() == [0.0, 10.0] else "silent"
            ),
            errors_ok=False,
        )
    return cases


def _json_cases() -> list[Case]:
    """Philly job objects with fields of every JSON type."""
    cases = []
    values: list[Any] = [None, True, 1, 1.5, "", "x", [], {}, [1], {"a": 1}, 1e300, "None"]
    for key in ("jobid", "vc", "user", "submitted_time", "status"):
        for value in values:
            jobs = json.loads(json.dumps(PHILLY_JOBS))
            jobs[0][key] = value
            cases.append(
                Case(
                    "reader: philly JSON fields",
                    f"{key}={value!r}",
                    lambda tmp, jobs=jobs: read_philly(philly_folder(tmp, jobs)),
                    _loads,
                    names=("cluster_job_log",),
                )
            )
    for value in values + [[{"start_time": None}], [None], [{"ip": "m", "gpus": 3}]]:
        jobs = json.loads(json.dumps(PHILLY_JOBS))
        jobs[0]["attempts"] = value
        cases.append(
            Case(
                "reader: philly JSON fields",
                f"attempts={value!r}",
                lambda tmp, jobs=jobs: read_philly(philly_folder(tmp, jobs)),
                _loads,
                names=("cluster_job_log",),
            )
        )
    for column, index in (("start_time", 4), ("end_time", 5)):
        for text in ("inf", "-1", "1e300", "nan", "x", "", "1e12", "4000"):
            lines = PAI_JOBS.splitlines()
            fields = lines[4].split(",")  # j5: ran 3,010-3,100 s
            fields[index] = text
            lines[4] = ",".join(fields)
            jobs = "\n".join(lines) + "\n"
            cases.append(
                Case(
                    "reader: pai cells",
                    f"job {column}={text!r}",
                    lambda tmp, jobs=jobs: read_pai(pai_folder(tmp, jobs)),
                    _pai_judge(text),
                    names=("pai_job_table.csv",),
                )
            )
    for index, column in ((2, "inst_num"), (8, "plan_gpu"), (4, "start_time"), (5, "end_time")):
        for text in ("inf", "-1", "1e300", "nan", "x", "", "1e20", "50"):
            lines = PAI_TASKS.splitlines()
            fields = lines[5].split(",")  # j5's task
            fields[index] = text
            lines[5] = ",".join(fields)
            tasks = "\n".join(lines) + "\n"
            cases.append(
                Case(
                    "reader: pai cells",
                    f"task {column}={text!r}",
                    lambda tmp, tasks=tasks: read_pai(pai_folder(tmp, None, tasks)),
                    _loads,
                    names=("pai_task_table.csv",),
                )
            )
    return cases


def _pai_judge(text: str) -> Callable[[Any], str]:
    """A bad time on j5's job row drops j5 (counted); a good one keeps every job valid."""

    def judge(trace: Any) -> str:
        if _loads(trace) != "correct":
            return "silent"
        value = strict_number(text)
        bad = value is None or value < 0 or value > MAX_SECONDS
        if bad and text not in NULL_WORDS:
            kept = "j5" in set(trace.workload.jobs["job_id"])
            return "silent" if kept else "counted drop"
        return "correct"

    return judge


# -- the API --------------------------------------------------------------------------------------
BAD_NUMBERS: list[Any] = [
    float("nan"),
    float("inf"),
    -float("inf"),
    -1,
    1e300,
    1e-300,
    "a",
    "1",
    True,
    None,
    [1],
    np.float64("nan"),
    2**70,
    1e20,
    1e12,
    np.int64(2**62),
]


def _jobs(**changes: Any) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "vc": ["v", "v", "w"],
            "user": ["u", "u", "u"],
            "submit_time": [0.0, 10.0, 20.0],
            "duration": [5.0, 6.0, 7.0],
            "num_gpus": [1, 2, 4],
        }
    )
    for column, value in changes.items():
        frame[column] = frame[column].astype(object)
        frame.at[1, column] = value
    return frame


def _api_cases() -> list[Case]:
    cases = []

    def within(low: float, high: float, whole: bool = False, low_open: bool = False):
        def valid(v: Any) -> bool:
            number = _as_number(v)
            if number is None or not math.isfinite(number) or number > high:
                return False
            if number < low or (low_open and number == low):
                return False
            return not whole or number.is_integer()

        return valid

    checks = {
        "num_gpus": within(1, MAX_JOB_GPUS, whole=True),
        "submit_time": within(0, MAX_SECONDS),
        "duration": within(0, MAX_SECONDS, low_open=True),
    }
    for column, valid in checks.items():
        for value in [*BAD_NUMBERS, 3, 3.0, 0, 0.5, np.int64(8), np.bool_(True), "3"]:
            ok = valid(value)
            cases.append(
                Case(
                    "API: Workload.from_frame",
                    f"{column}={value!r}",
                    lambda tmp, c=column, v=value: Workload.from_frame(_jobs(**{c: v})),
                    _workload_judge(column, value, ok),
                    names=(column,),
                    errors_ok=not ok,
                )
            )
    for value in [1, "a", None, float("nan"), True, "", " ", ("t",), "z"]:
        ok = value == "z"
        cases.append(
            Case(
                "API: Workload.from_frame",
                f"job_id={value!r}",
                lambda tmp, v=value: Workload.from_frame(_jobs(job_id=v)),
                _workload_judge("job_id", value, ok),
                names=("job_id",),
                errors_ok=not ok,
            )
        )
    mixed = pd.DataFrame(
        {
            "job_id": [1, "1"],
            "vc": "v",
            "user": "u",
            "submit_time": 0.0,
            "duration": 1.0,
            "num_gpus": 1,
        }
    )
    cases.append(
        Case(
            "API: Workload.from_frame",
            "ids 1 and '1'",
            lambda tmp: Workload.from_frame(mixed),
            _never_loads,
            names=("job_id",),
        )
    )
    cases.append(
        Case(
            "API: Workload.from_frame",
            "not a frame",
            lambda tmp: Workload.from_frame([1, 2]),
            _never_loads,
            names=("Workload",),
        )
    )
    cases += _cluster_cases()
    cases += _config_cases()
    cases += _policy_cases()
    return cases


def _as_number(value: Any) -> float | None:
    """A real number's value (text written as a plain decimal too); None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        # the readers allow ASCII blanks around a number, not the control characters that
        # Python's str.strip() also removes ("1\x1f" is refused, and rightly)
        return strict_number(value.strip(ASCII_BLANKS))
    return None


def _workload_judge(column: str, value: Any, ok: bool) -> Callable[[Any], str]:
    def judge(workload: Any) -> str:
        if not ok:
            return "silent"
        got = workload.jobs.set_index("job_id").loc[value if column == "job_id" else "b"]
        if column == "job_id":
            return "correct"
        return "correct" if float(got[column]) == _as_number(value) else "silent"

    return judge


def _nodes(**changes: Any) -> pd.DataFrame:
    frame = pd.DataFrame({"node": ["n0", "n1"], "rack": ["r0", "r0"], "gpus": [8, 8]})
    for column, value in changes.items():
        frame[column] = frame[column].astype(object)
        frame.at[1, column] = value
    return frame


def _cluster_cases() -> list[Case]:
    cases = []
    for value in [*BAD_NUMBERS, 4, 4.0, 0, np.bool_(True), 1e7]:
        number = _as_number(value)
        ok = (
            number is not None
            and math.isfinite(number)
            and 1 <= number <= 10_000_000 - 8
            and number.is_integer()
        )
        cases.append(
            Case(
                "API: Cluster.from_frame",
                f"gpus={value!r}",
                lambda tmp, v=value: Cluster.from_frame(_nodes(gpus=v)),
                lambda c, v=value, ok=ok: (
                    "correct"
                    if ok and c.nodes["gpus"].tolist() == [8, int(_as_number(v))]
                    else "silent"
                ),
                names=("gpus",),
                errors_ok=not ok,
            )
        )
    for column in ("node", "rack"):
        for value in [None, float("nan"), "", " ", "n0" if column == "node" else "r1", "x"]:
            ok = value == "x" or (column == "rack" and value == "r1")
            cases.append(
                Case(
                    "API: Cluster.from_frame",
                    f"{column}={value!r}",
                    lambda tmp, c=column, v=value: Cluster.from_frame(_nodes(**{c: v})),
                    lambda cl, ok=ok: "correct" if ok else "silent",
                    names=(column,),
                    errors_ok=not ok,
                )
            )
    for shape in [
        (10**6, 10**6, 8),
        (2, 2, 8),
        (0, 2, 8),
        (2.5, 2, 8),
        (True, 2, 8),
        (2, float("nan"), 8),
        (2, 2, "8"),
        (1, 1, 10**7),
    ]:
        ok = shape in ((2, 2, 8), (1, 1, 10**7)) and shape[0] is not True
        cases.append(
            Case(
                "API: Cluster.from_frame",
                f"uniform{shape!r}",
                lambda tmp, sh=shape: Cluster.uniform(*sh),
                lambda c, sh=shape, ok=ok: (
                    "correct" if ok and c.total_gpus == sh[0] * sh[1] * sh[2] else "silent"
                ),
                names=("Cluster",),
                errors_ok=not ok,
            )
        )
    for quota in [float("nan"), -1, 1.5, True, "3", 2**40, 4]:
        ok = quota == 4 and not isinstance(quota, bool)
        cases.append(
            Case(
                "API: Cluster.from_frame",
                f"quota={quota!r}",
                lambda tmp, q=quota: Cluster.from_frame(_nodes(), quotas={"a": q}),
                lambda c, ok=ok: "correct" if ok and c.quotas == {"a": 4} else "silent",
                names=("quota",) if not ok else (),
                errors_ok=not ok,
            )
        )
    return cases


def _real(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def _multiple(value: Any, of: float) -> bool:
    ratio = float(value) / of
    return abs(ratio - round(ratio)) <= 1e-9


CONFIG_RULES: dict[str, tuple[Callable[[Any], bool], tuple[Any, ...]]] = {
    "step": (
        lambda v: _real(v) and 1e-3 <= v <= MAX_SECONDS and _multiple(60.0, v),
        (1.0, 0.5),
    ),
    "quantum": (lambda v: _real(v) and 1 <= v <= MAX_SECONDS and _multiple(v, 1.0), (60.0, 1.0)),
    "sample_every": (lambda v: _real(v) and 1e-3 <= v <= MAX_SECONDS, (300.0, 0.5)),
    "defrag_every": (
        lambda v: v is None or (_real(v) and 1 <= v <= MAX_SECONDS and _multiple(v, 1.0)),
        (600.0,),
    ),
    "borrow_limit": (lambda v: _real(v) and v >= 0, (0.5, 2.0)),
    "seed": (
        lambda v: (
            isinstance(v, (int, np.integer))
            and not isinstance(v, (bool, np.bool_))
            and 0 <= v < 2**63
        ),
        (3,),
    ),
}
"""Which values each numeric SimConfig field takes (step 1 s: a quantum or defrag period is
a whole number of seconds)."""


def _config_cases() -> list[Case]:
    cases = []
    for name, (valid, good) in CONFIG_RULES.items():
        for value in [*BAD_NUMBERS, *good]:
            extra = {"migration": True} if name == "defrag_every" else {}
            ok = valid(value)

            def call(tmp: Path, n: str = name, v: Any = value, e: dict = extra) -> Any:
                return SimConfig(**{n: v}, **e)

            cases.append(
                Case(
                    "API: SimConfig",
                    f"{name}={value!r}",
                    call,
                    lambda c, n=name, v=value, ok=ok: (
                        "correct" if ok and getattr(c, n) == v else "silent"
                    ),
                    names=(name,),
                    errors_ok=not ok,
                )
            )

    def fine_samples(tmp: Path) -> Any:
        from analysim import presets, simulate

        venus = presets.workload("venus", days=2)
        return simulate(venus, presets.cluster("venus"), sample_every=1e-3)

    cases.append(
        Case(
            "API: SimConfig",
            "simulate sample_every=1e-3 on 2 days of venus",
            fine_samples,
            _never_loads,
            names=("sample_every",),
        )
    )
    for value in [*BAD_NUMBERS, 600.0]:
        ok = (
            value is None
            or (_real(value) and 0 <= value <= MAX_SECONDS)
            or (isinstance(value, np.integer) and 0 <= value <= MAX_SECONDS)
        )

        def until(tmp: Path, v: Any = value) -> Any:
            from analysim import presets, simulate

            return simulate(presets.workload("toy"), presets.cluster("toy"), until=v)

        cases.append(
            Case(
                "API: SimConfig",
                f"simulate until={value!r}",
                until,
                lambda r, ok=ok: "correct" if ok and len(r.jobs) else "silent",
                names=("until",),
                errors_ok=not ok,
            )
        )
    return cases


def _policy_cases() -> list[Case]:
    specs: list[tuple[str, Any, str, bool]] = []
    for value in [float("nan"), float("inf"), -1, 0, "a", True, [1]]:
        specs.append(("checkpoint_cost", {"name": "constant", "seconds": value}, "seconds", False))
        specs.append(("checkpoint_cost", value, "cost", False))
        specs.append(
            ("checkpoint_cost", {"name": "size_scaled", "steps": {8: value}}, "steps", False)
        )
        if not isinstance(value, list):
            specs.append(
                ("checkpoint_cost", {"name": "size_scaled", "steps": {value: 5}}, "steps", False)
            )
        specs.append(("scheduler", {"name": "las", "thresholds": [value]}, "thresholds", False))
        specs.append(
            ("scheduler", {"name": "las", "starvation_factor": value}, "starvation_factor", False)
        )
        specs.append(("scheduler", {"name": "fair", "weights": {"a": value}}, "weights", False))
        specs.append(("migration_cost", {"name": "constant", "seconds": value}, "seconds", False))
    zero_cost = ({"name": "constant", "seconds": 0}, 0)
    specs = [
        (f, s, n, ok)
        for f, s, n, ok in specs
        if not (s in zero_cost or (isinstance(s, dict) and s.get("steps") == {8: 0}))
    ]
    specs += [
        ("checkpoint_cost", 40, "", True),
        ("checkpoint_cost", {"name": "size_scaled", "steps": {"8": 40, "16": 60}}, "", True),
        ("scheduler", {"name": "las", "thresholds": [100, 200]}, "", True),
        ("scheduler", {"name": "las", "thresholds": [200, 100]}, "thresholds", False),
        ("scheduler", {"name": "las", "thresholds": "100"}, "thresholds", False),
        ("scheduler", {"name": "fair", "weights": {"a": 2}}, "", True),
        ("scheduler", {"name": "fair", "weights": [1]}, "weights", False),
        ("scheduler", {"name": "nope"}, "nope", False),
        ("scheduler", {"name": "las", "bogus": 1}, "bogus", False),
    ]
    cases = []
    for field_name, spec, needle, ok in specs:
        cases.append(
            Case(
                "API: policy parameters",
                f"{field_name}={spec!r}",
                lambda tmp, f=field_name, s=spec: SimConfig(**{f: s}),
                lambda c, ok=ok: "correct" if ok else "silent",
                names=(needle,) if needle else (),
                errors_ok=not ok,
            )
        )
    return cases


def _explorer_cases() -> list[Case]:
    import analysim as asim
    from analysim.explorer.inputs import check_explore_args

    def days_checked(days: Any) -> str:
        check_explore_args("venus", None, days, None, 0.4, False, True)
        return "checked"

    cases = []
    for days in [-1, 0, float("nan"), float("inf"), "7", True, 1e9, 7, 0.5]:
        ok = days in (7, 0.5) and not isinstance(days, bool)
        cases.append(
            Case(
                "API: explore arguments",
                f"days={days!r}",
                lambda tmp, d=days: days_checked(d),
                lambda r, ok=ok: "correct" if ok else "silent",
                names=("days",),
                errors_ok=not ok,
            )
        )
    for workload in ["./missing-folder", "no_such_preset", "venus", "bundled:openb"]:
        ok = workload in ("venus", "bundled:openb")
        cases.append(
            Case(
                "API: explore arguments",
                f"workload={workload!r}",
                lambda tmp, w=workload: asim.explore(w, run=False, sync=True) and "checked",
                lambda r, ok=ok: "correct" if ok else "silent",
                names=(workload,) if not ok else (),
                errors_ok=not ok,
            )
        )
    return cases


def _sweep_cases() -> list[Case]:
    import analysim as asim

    grids: list[tuple[str, dict, str, bool]] = [
        ("mixed number and name", {"checkpoint_cost": [40, "size_scaled"]}, "", True),
        ("NaN quantum", {"quantum": [float("nan")]}, "quantum", False),
        ("inf sample_every", {"sample_every": [float("inf")]}, "sample_every", False),
        ("tiny sample_every", {"sample_every": [1e-300]}, "sample_every", False),
        ("text seed-like value", {"quantum": ["a"]}, "quantum", False),
        ("bool step", {"step": [True]}, "step", False),
        ("negative days", {"workload.days": [-1]}, "days", False),
        ("NaN load_scale", {"workload.load_scale": [float("nan")]}, "load_scale", False),
    ]
    cases = []
    for name, grid, needle, ok in grids:

        def call(tmp: Path, g: dict = grid) -> Any:
            return asim.sweep(g, workload="toy", workers=0, progress=False, out=tmp / "out")

        def judge(frame: Any, needle: str = needle, ok: bool = ok, tmp_grid: dict = grid) -> str:
            if ok:
                stored = pd.read_parquet(Path(frame.attrs["out"]) / "sweep.parquet")
                same = stored.equals(frame) and (frame["status"] == "ok").all()
                return "correct" if same else "silent"
            errors = frame["error"].dropna().tolist()
            clear = frame["status"].eq("error").all() and all(needle in e for e in errors)
            return "clear error" if clear else "silent"

        cases.append(Case("sweep grids", name, call, judge, names=(needle,) if needle else ()))
    return cases


# -- the CLI ------------------------------------------------------------------------------------
def _cli_cases() -> list[Case]:
    from analysim.faces.cli import main

    runs: list[tuple[list[str], str, bool]] = []
    valid = {
        ("--until", "0"),
        ("--until", "1e-300"),
        ("--borrow-limit", "0"),
        ("--borrow-limit", "1e300"),
        ("--borrow-limit", "1e-300"),
        ("--seed", "0"),
        ("--days", "1e-300"),
    }
    for option in (
        "--until",
        "--quantum",
        "--sample-every",
        "--step",
        "--borrow-limit",
        "--load-scale",
        "--days",
        "--seed",
    ):
        for value in ("nan", "inf", "-1", "1e300", "1e-300", "a", "0"):
            runs.append(
                ([option, value], option.lstrip("-").replace("-", "_"), (option, value) in valid)
            )
    for cost in (
        "nan",
        "-5",
        '{"name": "constant", "seconds": "x"}',
        "{bad json",
        '{"name": "size_scaled", "steps": {"8": NaN}}',
    ):
        runs.append((["--checkpoint-cost", cost], "cost", False))
    runs.append((["--scheduler", '{"name": "las", "thresholds": ["a"]}'], "thresholds", False))
    runs.append((["--scheduler", '{"name": "fair", "weights": {"a": Infinity}}'], "weights", False))
    runs.append((["--workload", "./no/such/folder"], "no/such/folder", False))
    runs.append((["--trace", "/no/such/folder"], "folder", False))
    runs.append((["--config", "/no/such/config.json"], "config", False))
    runs.append((["--days", "1"], "", True))
    cases = []
    for args, needle, ok in runs:
        full = ["run", "--workload", "toy", "--no-progress", "--quiet", *args]
        if args[0] in ("--workload", "--trace"):
            full = ["run", "--no-progress", "--quiet", *args]
        cases.append(_cli_case(main, full, needle, ok))

    def out_file(tmp: Path) -> list[str]:
        (tmp / "afile").write_text("x")
        return ["run", "--workload", "toy", "--no-progress", "--quiet", "--out", str(tmp / "afile")]

    def out_unwritable(tmp: Path) -> list[str]:
        (tmp / "afile").write_text("x")
        return [
            "run",
            "--workload",
            "toy",
            "--no-progress",
            "--quiet",
            "--out",
            str(tmp / "afile" / "sub"),
        ]

    def study_out_dir(tmp: Path) -> list[str]:
        return ["study", "--workload", "toy", "--quiet", "--out", str(tmp)]

    for build in (out_file, out_unwritable, study_out_dir):
        cases.append(_cli_case(main, build, "--out", False))
    return cases


def _cli_case(main: Callable, args: Any, needle: str, ok: bool) -> Case:
    def call(tmp: Path) -> tuple[int, str]:
        argv = args(tmp) if callable(args) else args
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(argv)
        return code, err.getvalue()

    def judge(result: tuple[int, str]) -> str:
        code, err = result
        lines = [line for line in err.splitlines() if line.strip()]
        if ok:
            return "correct" if code == 0 else "silent"
        if code == 0:
            return "silent"
        one_line = len(lines) == 1 and lines[0].startswith("analysim: error:")
        named = needle in err or needle.replace("_", "-") in err
        if not one_line or "Traceback" in err or not named:
            return "crash"
        return "clear error"

    name = " ".join(args) if not callable(args) else args.__name__
    return Case("CLI", name, call, judge)


# -- all of them ----------------------------------------------------------------------------------
def random_cells(seed: int, count: int) -> list[Case]:
    """``count`` extra generic-CSV cases with random cells (a seeded generator)."""
    rng = np.random.default_rng(seed)
    alphabet = list("0123456789.eE+-, xinfa\t") + ["1e", "nan", "inf", "١", "\u00a0"]
    cases = []
    header = CSV_HEADER.split(",")
    load = _csv_load(_csv_text(CSV_ROWS))
    for k in range(count):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 8))))
        column = ["num_gpus", "duration", "submit_time"][k % 3]
        copy = [list(r) for r in CSV_ROWS]
        copy[2][header.index(column)] = _csv_cell(text)
        if column == "num_gpus":
            accept = accept_count(text, low=0, whole=False)
            accept = {DROP if v == 0 else (math.ceil(v) if v != DROP else v) for v in accept}
        else:
            accept = accept_seconds(text, positive=column == "duration")
            number = strict_number(text)
            if column == "duration" and number is not None and number <= 0:
                accept = {DROP}
        cases.append(
            Case(
                "reader: generic CSV random cells",
                f"{column}={text!r}",
                _csv_load(_csv_text(copy)),
                _row_judge("csv", load, "j3", column, accept),
                names=("jobs.csv",),
            )
        )
    return cases


def all_cases(random_count: int = 60) -> list[Case]:
    from fuzz_corpus_30 import round_two_cases

    return (
        _helios_cases()
        + _csv_cases()
        + random_cells(0, random_count)
        + _file_cases()
        + _api_cases()
        + _explorer_cases()
        + _sweep_cases()
        + _cli_cases()
        + round_two_cases()
    )
