"""Every input at a border ends in a clear error, a counted drop or a correct load.

The corpus (``fuzz_corpus.py``: about 1,000 cases over the readers, ``Workload`` and
``Cluster.from_frame``, ``SimConfig`` and policy parameters, ``explore``'s checks, sweep grids
and the CLI) is run case by case; hypothesis then draws more cells, values and fields with
the same oracles. ``benchmarks/fuzz_table.py`` prints the corpus as a table by category.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fuzz_corpus import (
    CONFIG_RULES,
    CSV_ROWS,
    DROP,
    Case,
    _csv_cell,
    _csv_load,
    _csv_text,
    _jobs,
    _row_judge,
    _workload_judge,
    accept_count,
    accept_seconds,
    all_cases,
    classify,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analysim.inputs.config import SimConfig
from analysim.inputs.validation import MAX_JOB_GPUS, MAX_SECONDS
from analysim.inputs.workload import Workload

CASES = all_cases(random_count=60)
GOOD = ("clear error", "counted drop", "correct")


def test_the_corpus_is_large_and_covers_every_border():
    assert len(CASES) >= 300
    categories = {case.category.split(":")[0] for case in CASES}
    assert categories == {
        "reader",
        "API",
        "sweep grids",
        "CLI",
        "saved results",
        "saturate",
        "presets and Shape",
    }


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category} / {c.name}"[:120] for c in CASES])
def test_an_input_ends_in_a_clear_error_a_counted_drop_or_a_correct_load(case: Case, tmp_path):
    outcome, detail = classify(case, tmp_path)
    assert outcome in GOOD, f"{outcome}: {detail}"


# -- the oracle itself -------------------------------------------------------------------------
def test_the_oracle_calls_a_wrong_answer_silent(tmp_path):
    """A reader that took "0x10" for 16 GPUs would be caught: the judge of that cell says
    silent for a load keeping row j3 with 16 GPUs."""
    header = ["job_id", "submit_time", "num_gpus", "duration", "vc", "user"]
    rows = [list(r) for r in CSV_ROWS]
    rows[2][header.index("num_gpus")] = "16"  # what a hex-reading parser would keep
    load = _csv_load(_csv_text(CSV_ROWS))
    judge = _row_judge("csv", load, "j3", "num_gpus", accept_count("0x10", low=0, whole=False))
    assert judge(_csv_load(_csv_text(rows))(tmp_path)) == "silent"
    rows[2][header.index("num_gpus")] = "2"
    rows[0][header.index("duration")] = "99"  # another row changed
    judge = _row_judge("csv", load, "j3", "num_gpus", {2.0})
    assert judge(_csv_load(_csv_text(rows))(tmp_path / "b")) == "silent"


# -- hypothesis: more cells and values with the same oracles -----------------------------------
CELL_TEXT = st.one_of(
    st.text(alphabet=st.sampled_from(list("0123456789.eE+-x ,\"'\t")), max_size=10),
    st.lists(st.sampled_from(["inf", "nan", "1", "e", "-", "0x", "."]), max_size=4).map("".join),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.text(max_size=6),
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(column=st.sampled_from(["num_gpus", "duration", "submit_time"]), text=CELL_TEXT)
def test_a_generic_csv_cell_is_kept_exactly_or_dropped_and_counted(tmp_path, column, text):
    if "\n" in text or "\r" in text:
        return
    header = ["job_id", "submit_time", "num_gpus", "duration", "vc", "user"]
    rows = [list(r) for r in CSV_ROWS]
    rows[2][header.index(column)] = _csv_cell(text)
    if column == "num_gpus":
        accept = accept_count(text, low=0, whole=False)
        accept = {DROP if v == 0 else (math.ceil(v) if v != DROP else v) for v in accept}
    else:
        accept = accept_seconds(text, positive=column == "duration")
        if column == "duration" and accept != {DROP} and min(a for a in accept if a != DROP) <= 0:
            accept = {DROP}
    load = _csv_load(_csv_text(CSV_ROWS))
    case = Case(
        "hypothesis",
        text,
        _csv_load(_csv_text(rows)),
        _row_judge("csv", load, "j3", column, accept),
        names=("jobs.csv",),
    )
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        outcome, detail = classify(case, Path(folder))
    assert outcome in GOOD, f"{outcome}: {detail}"


VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.sampled_from([np.float64(np.nan), np.int64(3), np.bool_(True), "0x10", " 7 "]),
)


@settings(max_examples=150, deadline=None)
@given(column=st.sampled_from(["num_gpus", "submit_time", "duration"]), value=VALUES)
@example(column="num_gpus", value="1\x1f")  # a control character after the number: refused
@example(column="num_gpus", value="\t2\r\n")  # ASCII blanks around it: read as 2
def test_workload_from_frame_takes_a_value_exactly_or_names_the_column(column, value):
    from fuzz_corpus import _as_number

    number = _as_number(value)
    low, high, whole = {
        "num_gpus": (1, MAX_JOB_GPUS, True),
        "submit_time": (0, MAX_SECONDS, False),
        "duration": (0, MAX_SECONDS, False),
    }[column]
    ok = (
        number is not None
        and math.isfinite(number)
        and low <= number <= high
        and (not whole or number.is_integer())
        and not (column == "duration" and number == 0)
    )
    case = Case(
        "hypothesis",
        repr(value),
        lambda tmp: Workload.from_frame(_jobs(**{column: value})),
        _workload_judge(column, value, ok),
        names=(column,),
        errors_ok=not ok,
    )
    outcome, detail = classify(case, Path("."))
    assert outcome in GOOD, f"{outcome}: {detail}"


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(CONFIG_RULES)), value=VALUES)
def test_a_simconfig_field_takes_a_value_as_given_or_names_itself(name, value):
    valid, _ = CONFIG_RULES[name]
    ok = valid(value)
    extra = {"migration": True} if name == "defrag_every" else {}
    try:
        config = SimConfig(**{name: value}, **extra)
    except ValueError as error:
        assert not ok, f"a valid {name}={value!r} refused: {error}"
        assert name in str(error)
        return
    assert ok, f"{name}={value!r} accepted"
    assert getattr(config, name) == value


def test_bool_and_text_are_never_numbers_in_a_jobs_table():
    frame = pd.DataFrame(
        {
            "job_id": ["a"],
            "vc": ["v"],
            "user": ["u"],
            "submit_time": [0.0],
            "duration": [1.0],
            "num_gpus": [True],
        }
    )
    with pytest.raises(ValueError, match="num_gpus"):
        Workload.from_frame(frame)
    with pytest.raises(ValueError, match="num_gpus"):
        Workload.from_frame(frame.assign(num_gpus=["0x10"]))
    assert Workload.from_frame(frame.assign(num_gpus=["16"])).jobs["num_gpus"].tolist() == [16]
