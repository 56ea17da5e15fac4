"""Every row is counted once: random Helios logs full of faults against a plain reference.

The reference below applies the documented order of drop reasons (docs/traces.md) to one row
at a time, in plain Python; the reader does the same with vectorised masks. Both must agree
on every count and on which jobs are kept.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_samples import HELIOS_HEADER, helios_folder

from analysim.traces import TraceError, read_helios

VC_GPUS = {"vcA": 16, "vcB": 8, "vcC": 0}  # on 2020-09-01; vcZ is not in the file
VCS = "date,vcA,vcB,vcC,total\n2020-09-01,16,8,0,24\n"
START = pd.Timestamp("2020-09-01 06:00:00")
GOOD = "g0,uA,vcA,1,4,1,COMPLETED,2020-09-01 07:00:00,,,100,0"

rows = st.fixed_dictionaries(
    {
        "job_id": st.sampled_from(["j1", "j2", "j3", "j4", ""]),
        "user": st.sampled_from(["uA", "uB", ""]),
        "vc": st.sampled_from(["vcA", "vcB", "vcC", "vcZ", ""]),
        "gpu_num": st.sampled_from(["0", "1", "2", "8", "16", "1.5", "-1", "x", ""]),
        "submit_time": st.sampled_from(
            [
                "2020-09-01 05:00:00",
                "2020-09-01 06:00:00",
                "2020-09-01 12:30:00",
                "2020-09-02 00:00:01",
                "2020-09-31 10:00:00",
                "noon",
                "",
            ]
        ),
        "duration": st.sampled_from(["-5", "0", "10", "3600", "2.5", "x", ""]),
    }
)


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def reference(table: list[dict]) -> tuple[Counter, list[str], Counter]:
    """(dropped per reason, kept job ids, kept-and-flagged per reason), row by row."""
    dropped, flagged, kept, seen = Counter(), Counter(), [], set()
    survivors = []
    for row in table:
        reason = None
        gpus, duration = number(row["gpu_num"]), number(row["duration"])
        try:
            submit = pd.Timestamp(row["submit_time"]) if row["submit_time"] else None
            valid_time = (
                submit is not None and submit.strftime("%Y-%m-%d %H:%M:%S") == row["submit_time"]
            )
        except ValueError:
            valid_time = False
        if not row["job_id"] or not row["user"] or not row["vc"] or row["gpu_num"] == "":
            reason = "missing_value"
        elif gpus is None or gpus < 0 or gpus != math.floor(gpus):
            reason = "bad_value"
        elif row["submit_time"] == "":
            reason = "missing_value"
        elif not valid_time:
            reason = "unparseable_time"
        elif row["duration"] == "":
            reason = "missing_value"
        elif duration is None:
            reason = "bad_value"
        if reason:
            dropped[reason] += 1
        else:
            survivors.append((row, gpus, duration, pd.Timestamp(row["submit_time"])))
    for row, gpus, duration, submit in survivors:
        if row["job_id"] in seen:
            reason = "duplicate_id"
        elif gpus == 0:
            reason = "cpu_only"
        elif submit < START:
            reason = "outside_window"
        elif duration <= 0:
            reason = "nonpositive_duration"
        elif row["vc"] not in VC_GPUS:
            reason = "unknown_vc"
        elif VC_GPUS[row["vc"]] == 0:
            reason = "empty_vc"
        else:
            reason = None
        seen.add(row["job_id"])
        if reason:
            dropped[reason] += 1
            continue
        kept.append(row["job_id"])
        if gpus > VC_GPUS[row["vc"]]:
            flagged["oversized"] += 1
    return dropped, kept, flagged


def log_text(table: list[dict]) -> str:
    lines = [HELIOS_HEADER, GOOD.replace("g0", "j0")]
    for r in table:
        lines.append(
            f"{r['job_id']},{r['user']},{r['vc']},{r['gpu_num']},4,1,COMPLETED,"
            f"{r['submit_time']},,,{r['duration']},0"
        )
    return "\n".join(lines) + "\n"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(table=st.lists(rows, min_size=1, max_size=25))
def test_the_reader_counts_each_row_under_the_first_reason_that_applies(tmp_path_factory, table):
    folder = helios_folder(tmp_path_factory.mktemp("h"), log=log_text(table), vcs=VCS)
    full = [
        dict(
            job_id="j0",
            user="uA",
            vc="vcA",
            gpu_num="1",
            submit_time="2020-09-01 07:00:00",
            duration="100",
        ),
        *table,
    ]
    dropped, kept, flagged = reference(full)
    if not kept:
        with pytest.raises(TraceError, match="no job is left"):
            read_helios(folder, start=START)
        return
    report = read_helios(folder, start=START).report
    got = Counter(
        {e.reason: e.rows for e in report.entries if e.table == "jobs" and e.outcome == "dropped"}
    )
    assert got == dropped
    assert report.read["jobs"] == len(full) == report.kept["jobs"] + sum(got.values())
    assert report.count("oversized", outcome="kept") == flagged["oversized"]
    trace = read_helios(folder, start=START)
    assert sorted(trace.workload.jobs["job_id"]) == sorted(kept)
