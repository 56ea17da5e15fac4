"""Readers, round two: one reading of byte-order marks and time zones for every reader; the
openb readers agree on empty CPU or memory (dropped and counted) and drop rows that contradict
themselves; parquet cells with lists, numeric times with a ``start=``, and a folder that is a
file are refused naming what is wrong."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from fuzz_corpus_30 import CSV, DATED, FORMAT, PODS
from trace_samples import (
    HELIOS_HEADER,
    HELIOS_ROWS,
    OPENB_NODES,
    PHILLY_JOBS,
    helios_folder,
    openb_files,
    philly_folder,
    write,
)

from analysim.traces import (
    read_csv_trace,
    read_folder,
    read_helios,
    read_openb,
    read_openb_tasks,
    read_philly,
)
from analysim.traces._common import moment

BOM = "\ufeff"


# -- byte-order marks ----------------------------------------------------------------------
def test_a_generic_csv_with_a_bom_reads_as_without(tmp_path):
    plain = read_csv_trace(write(tmp_path / "a.csv", CSV))
    marked = read_csv_trace(write(tmp_path / "b.csv", BOM + CSV))
    pd.testing.assert_frame_equal(marked.workload.jobs, plain.workload.jobs)


def test_a_helios_log_with_a_bom_reads_as_without(tmp_path):
    log = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"
    plain = read_helios(helios_folder(tmp_path / "a", log=log))
    marked = read_helios(helios_folder(tmp_path / "b", log=BOM + log))
    pd.testing.assert_frame_equal(marked.workload.jobs, plain.workload.jobs)


def test_openb_lists_with_a_bom_read_as_without(tmp_path):
    plain = read_openb(*openb_files(tmp_path / "a", pods=PODS))
    marked = read_openb(*openb_files(tmp_path / "b", pods=BOM + PODS, nodes=BOM + OPENB_NODES))
    pd.testing.assert_frame_equal(marked.workload.jobs, plain.workload.jobs)


def test_a_philly_log_with_a_bom_reads_as_without(tmp_path):
    text = json.dumps(PHILLY_JOBS)
    plain = read_philly(philly_folder(tmp_path / "a", jobs=text))
    marked = read_philly(philly_folder(tmp_path / "b", jobs=BOM + text))
    pd.testing.assert_frame_equal(marked.workload.jobs, plain.workload.jobs)


# -- time zones ----------------------------------------------------------------------------
def test_a_window_with_a_time_zone_is_the_same_instant_in_utc():
    assert moment("2020-01-01 08:00:00+08:00", "start") == pd.Timestamp("2020-01-01 00:00:00")
    assert moment(pd.Timestamp("2020-01-01", tz="UTC"), "start") == pd.Timestamp("2020-01-01")
    assert moment("2020-01-01 00:00:00", "start") == pd.Timestamp("2020-01-01")


def test_a_start_with_a_zone_shifts_naive_file_times_as_utc(tmp_path):
    path = write(tmp_path / "d.csv", DATED)
    utc = read_csv_trace(path, time_format=FORMAT, start="2020-01-01 00:00:00")
    east = read_csv_trace(path, time_format=FORMAT, start="2020-01-01 00:00:00+08:00")
    assert utc.workload.jobs["submit_time"].tolist() == [8 * 3600.0, 9 * 3600.0]
    assert east.workload.jobs["submit_time"].tolist() == [16 * 3600.0, 17 * 3600.0]


def test_a_helios_window_with_a_zone_is_read_in_utc(tmp_path):
    folder = helios_folder(tmp_path)
    naive = read_helios(folder, start="2020-09-01 00:00:30")
    zoned = read_helios(folder, start="2020-09-01 08:00:30+08:00")
    pd.testing.assert_frame_equal(zoned.workload.jobs, naive.workload.jobs)


def test_a_start_with_numeric_times_is_refused_not_ignored(tmp_path):
    with pytest.raises(ValueError, match=r"start='2020-01-01'.*numbers"):
        read_csv_trace(write(tmp_path / "n.csv", CSV), start="2020-01-01")


# -- parquet cells -------------------------------------------------------------------------
def test_durations_given_as_timedeltas_are_seconds(tmp_path):
    frame = pd.DataFrame(
        {"job_id": ["j1", "j2"], "submit_time": [0.0, 5.0], "num_gpus": [1, 2],
         "duration": pd.to_timedelta([10, 20], unit="s")}
    )  # fmt: skip
    frame.to_parquet(tmp_path / "t.parquet")
    trace = read_csv_trace(tmp_path / "t.parquet")
    assert trace.workload.jobs["duration"].tolist() == [10.0, 20.0]


@pytest.mark.parametrize("column", ["num_gpus", "job_id", "vc"])
def test_a_parquet_column_of_lists_is_refused_naming_the_column(tmp_path, column):
    frame = pd.DataFrame(
        {"job_id": ["j1", "j2"], "submit_time": [0.0, 5.0], "num_gpus": [1, 2],
         "duration": [1.0, 2.0], "vc": ["a", "b"]}
    )  # fmt: skip
    frame[column] = [[frame[column][0]], [frame[column][1], frame[column][1]]]
    frame.to_parquet(tmp_path / "l.parquet")
    with pytest.raises(ValueError, match=rf"column '{column}'.*one value per cell"):
        read_csv_trace(tmp_path / "l.parquet")


# -- folders -------------------------------------------------------------------------------
def test_a_file_given_as_a_trace_folder_is_named_as_a_file(tmp_path):
    path = write(tmp_path / "jobs.csv", CSV)
    for read in (read_folder, read_helios):
        with pytest.raises(ValueError, match="is a file, not a folder"):
            read(path)


# -- openb: the two readers agree ------------------------------------------------------------
@pytest.mark.parametrize("column", ["cpu_milli", "memory_mib"])
def test_an_empty_cpu_or_memory_cell_is_dropped_and_counted_by_both_readers(tmp_path, column):
    frame = pd.read_csv(pd.io.common.StringIO(PODS))
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = None
    pods, nodes = openb_files(tmp_path, pods=frame.to_csv(index=False))
    jobs = read_openb(pods, nodes)
    tasks = read_openb_tasks(pods, nodes)
    assert jobs.workload.jobs["job_id"].tolist() == ["p0"]
    assert tasks.tasks["name"].tolist() == ["p0"]
    assert jobs.report.count("missing_value") == 1
    assert tasks.report.count("missing_value") == 1


def _openb(tmp_path, changes):
    frame = pd.read_csv(pd.io.common.StringIO(PODS))
    for (row, column), value in changes.items():
        frame.loc[row, column] = value
    return openb_files(tmp_path, pods=frame.to_csv(index=False))


@pytest.mark.parametrize(
    "change, reason",
    [
        ({(1, "scheduled_time"): 50}, "bad_value"),  # scheduled before it was created
        ({(1, "creation_time"): -5}, "bad_value"),
        ({(1, "scheduled_time"): -5}, "bad_value"),
        ({(1, "deletion_time"): -5}, "bad_value"),
        ({(1, "gpu_milli"): 1001}, "bad_value"),
        ({(1, "name"): "p0"}, "duplicate_id"),
    ],
)
def test_an_openb_row_that_contradicts_itself_is_dropped_and_counted(tmp_path, change, reason):
    trace = read_openb(*_openb(tmp_path, change))
    assert trace.workload.jobs["job_id"].tolist() == ["p0"]
    assert trace.report.count(reason) == 1


@pytest.mark.parametrize(
    "change, reason",
    [({(1, "gpu_milli"): 1001}, "bad_value"), ({(1, "name"): "p0"}, "duplicate_id")],
)
def test_the_task_reader_drops_the_same_rows(tmp_path, change, reason):
    trace = read_openb_tasks(*_openb(tmp_path, change))
    assert trace.tasks["name"].tolist() == ["p0"]
    assert trace.report.count(reason) == 1


def test_a_folder_that_cannot_be_listed_is_named(tmp_path, monkeypatch):
    from pathlib import Path

    folder = helios_folder(tmp_path)
    real = Path.iterdir

    def refuse(self):
        if self == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", refuse)
    for read in (read_folder, read_helios):
        with pytest.raises(ValueError, match=r"Venus.*cannot be read \(Permission denied\)"):
            read(folder)
