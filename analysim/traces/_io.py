"""Reading trace files fast (pyarrow) and turning every malformed input into a ``TraceError``.

Structural problems (a missing file, an empty file, bytes that are not UTF-8, a wrong
delimiter, a missing or misnamed column, a line with the wrong number of fields, a time
column in another format, JSON that does not parse) raise :class:`TraceError` naming the
file, the line, the column and what was expected. Problems of single values (an empty cell,
one unparseable time) are left to the reader, which drops and counts those rows.
"""

from __future__ import annotations

import codecs
import csv
import datetime
import difflib
import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from analysim.inputs.validation import decimal_numbers
from analysim.traces.report import TraceError

CHUNK = 1 << 24
NO_BOOLEANS = {"true_values": ["\0true"], "false_values": ["\0false"]}
"""pyarrow would read a column of ``1``, ``0`` and ``true`` as booleans (so ``true`` GPUs
would count as one): no cell is a boolean, so such a value stays text and is refused."""
DELIMITERS = {";": "';'", "\t": "a tab", "|": "'|'"}


GZIP_MAGIC = b"\x1f\x8b"
COMPRESSED = {GZIP_MAGIC: "gzip", b"BZh": "bzip2", b"\xfd7zXZ": "xz", b"PK\x03\x04": "zip"}


def existing_file(path: str | Path, what: str) -> Path:
    """``path`` as a Path, or a TraceError if it is not a readable, non-empty file."""
    path = Path(path)
    try:
        if not path.exists():
            raise TraceError(path, f"no such file ({what})")
        if path.is_dir():
            raise TraceError(path, f"is a folder, not a file ({what})")
        if path.stat().st_size == 0:
            raise TraceError(path, "the file is empty", expected=what)
        with path.open("rb"):
            pass
    except OSError as error:
        raise unreadable(path, error) from None
    return path


def unreadable(path: Path, error: OSError) -> TraceError:
    """A TraceError for a file or folder the operating system will not let us read."""
    reason = error.strerror or type(error).__name__
    return TraceError(path, f"cannot be read ({reason})", expected="a readable file")


def check_not_compressed(path: Path) -> None:
    """A TraceError if ``path`` starts like a compressed archive (the readers read text)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
    except OSError as error:
        raise unreadable(path, error) from None
    for magic, kind in COMPRESSED.items():
        if head.startswith(magic):
            raise TraceError(
                path,
                f"the file is {kind}-compressed",
                expected=f"plain text; decompress it first (e.g. with {kind})",
            )


BOM = "\ufeff"
"""The byte-order mark some editors write at the start of a UTF-8 file: not part of the
first column's name."""


def without_bom(line: str) -> str:
    """``line`` without a leading byte-order mark (every reader reads headers through this)."""
    return line[len(BOM) :] if line.startswith(BOM) else line


def check_folder(folder: Path, what: str) -> None:
    """A TraceError unless ``folder`` is a folder that can be listed: missing, a file, or
    unreadable (naming the folder and why)."""
    try:
        if not folder.exists():
            raise TraceError(folder, "no such folder", expected=f"a folder holding {what}")
        if not folder.is_dir():
            raise TraceError(folder, "is a file, not a folder", expected=f"a folder holding {what}")
        next(iter(folder.iterdir()), None)
    except OSError as error:
        raise unreadable(folder, error) from None


def find_file(folder: str | Path, names: Sequence[str], what: str) -> Path:
    """The first of ``names`` that exists in ``folder``."""
    folder = Path(folder)
    check_folder(folder, what)
    try:
        for name in names:
            if (folder / name).exists():
                return existing_file(folder / name, what)
    except OSError as error:
        raise unreadable(folder, error) from None
    raise TraceError(
        folder / names[0],
        f"missing in {folder} ({what})",
        expected="one of " + ", ".join(names),
    )


def check_utf8(path: Path, names: Sequence[str] | None = None) -> None:
    """Raise a TraceError at the first byte that is not UTF-8, naming its line and field (or
    if the file is compressed, or cannot be read)."""
    check_not_compressed(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        _utf8_error(path, names)
    except OSError as error:
        raise unreadable(path, error) from None


def _utf8_error(path: Path, names: Sequence[str] | None) -> None:
    """Raise a TraceError about the first byte of ``path`` that is not UTF-8."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        return
    except UnicodeDecodeError as error:
        position = error.start
    line_start = data.rfind(b"\n", 0, position) + 1
    line = data.count(b"\n", 0, position) + 1
    line_end = data.find(b"\n", position)
    line_end = line_end if line_end >= 0 else len(data)
    low, high = max(line_start, position - 40), min(line_end, position + 40)
    text = data[low:high].decode("utf-8", "backslashreplace")
    text = ("..." if low > line_start else "") + text + ("..." if high < line_end else "")
    field_index = data[line_start:position].count(b",")
    column = None
    if names is None and line > 1:
        header_end = data.find(b"\n")
        header = data[:header_end].decode("utf-8", "replace").strip("\r")
        names = next(csv.reader([header]))
    if names is not None and field_index < len(names):
        column = names[field_index]
    raise TraceError(
        path,
        f"byte 0x{data[position]:02x} is not UTF-8",
        line=line,
        column=column,
        expected="UTF-8 text",
        found=text,
    )


def _first_line(path: Path) -> str:
    """The first line as text; a TraceError if the file is compressed, unreadable or not
    UTF-8 there."""
    check_not_compressed(path)
    try:
        with path.open("rb") as handle:
            raw = handle.readline()
    except OSError as error:
        raise unreadable(path, error) from None
    try:
        return without_bom(raw.decode("utf-8").rstrip("\r\n"))
    except UnicodeDecodeError:
        _utf8_error(path, None)
        raise  # pragma: no cover - _utf8_error raises


def _fields(line: str, delimiter: str = ",") -> list[str]:
    try:
        return next(csv.reader([line], delimiter=delimiter), [])
    except csv.Error:  # a field longer than the csv module takes, a NUL byte, ...
        return line.split(delimiter)


def _wrong_delimiter(path: Path, line: str, wanted: int) -> None:
    """Raise if ``line`` looks split by another delimiter than a comma."""
    for delimiter, name in DELIMITERS.items():
        if delimiter in line and len(_fields(line, delimiter)) >= max(wanted, 2):
            raise TraceError(
                path,
                f"the fields are separated by {name}",
                line=1,
                expected="comma-separated values",
                found=line[:80],
            )


def check_header(path: Path, required: Sequence[str]) -> list[str]:
    """The header's column names; a TraceError naming any required column it lacks."""
    line = _first_line(path)
    names = [n.strip() for n in _fields(line)]
    repeated = sorted({n for n in names if n and names.count(n) > 1})
    if repeated:
        raise TraceError(
            path,
            "column name(s) " + ", ".join(map(repr, repeated)) + " appear more than once",
            line=1,
            expected="a header naming each column once",
            found=", ".join(names),
        )
    missing = [c for c in required if c not in names]
    if not missing:
        return names
    _wrong_delimiter(path, line, len(required))
    hints = []
    for column in missing:
        close = difflib.get_close_matches(column, [n for n in names if n not in required], 1, 0.6)
        hints.append(f"{column!r}" + (f" (is {close[0]!r} meant?)" if close else ""))
    raise TraceError(
        path,
        "missing column(s) " + ", ".join(hints),
        line=1,
        expected="a header with " + ", ".join(required),
        found=", ".join(names),
    )


def read_csv(
    path: Path,
    *,
    required: Sequence[str],
    optional: Sequence[str] = (),
    strings: Sequence[str] = (),
    header: bool = True,
) -> tuple[pd.DataFrame, int]:
    """Read the ``required`` and present ``optional`` columns of a CSV with pyarrow.

    ``strings`` are read as text (ids, labels, times); other columns are typed by pyarrow.
    With ``header=False`` the file has no header line and ``required`` names its columns in
    order (a header line equal to those names is skipped). Returns the frame and the line
    number of its first row.
    """
    check_utf8(path, None if header else list(required))
    first = _first_line(path)
    if header:
        names = check_header(path, required)
        columns = list(required) + [c for c in optional if c in names]
        first_line = 2
        read_options = pacsv.ReadOptions(block_size=1 << 24)
        width = len(names)
    else:
        names = list(required)
        fields = [f.strip() for f in _fields(first)]
        skip = 1 if fields == names else 0
        if not skip and len(fields) != len(names):
            _wrong_delimiter(path, first, len(names))
            raise TraceError(
                path,
                f"{len(fields)} field(s) on the first line",
                line=1,
                expected=f"{len(names)} header-less fields: " + ", ".join(names),
                found=first[:120],
            )
        columns = names
        first_line = 1 + skip
        read_options = pacsv.ReadOptions(column_names=names, skip_rows=skip, block_size=1 << 24)
        width = len(names)
    # numbers as float64 (pyarrow's integer parser would read "0x10" as 16); a column with a
    # value that is not a number is read as text, and the reader checks each value
    types = {c: pa.string() if c in strings else pa.float64() for c in columns}
    table = _read_typed(path, read_options, columns, types, names, (width, first_line))
    frame = _whole_numbers_as_int(table.to_pandas(), strings)
    if frame.empty:
        raise TraceError(
            path,
            "no data rows after the header" if header else "no data rows",
            expected="at least one row",
        )
    return frame, first_line


def _read_typed(
    path: Path,
    read_options: pacsv.ReadOptions,
    columns: list[str],
    types: dict[str, pa.DataType],
    names: Sequence[str],
    where: tuple[int, int],
) -> pa.Table:
    """Read with ``types``; a column that fails its number type is read again as text."""
    width, first_line = where
    for _ in range(len(columns) + 1):
        convert = pacsv.ConvertOptions(
            include_columns=columns,
            column_types=types,
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
            **NO_BOOLEANS,
        )
        try:
            return pacsv.read_csv(path, read_options=read_options, convert_options=convert)
        except pa.ArrowInvalid as error:
            failed = _failed_column(str(error), names, types)
            if failed is None:
                _diagnose(path, width, names, first_line, error)
            types = {**types, failed: pa.string()}
        except OSError as error:
            raise unreadable(path, error) from None
    raise TraceError(path, "could not be parsed as CSV")  # pragma: no cover


def _failed_column(message: str, names: Sequence[str], types: dict) -> str | None:
    """The column a pyarrow "conversion error" names, if it is one still read as a number."""
    match = re.search(r"column #(\d+)", message)
    if "conversion error" not in message or match is None:
        return None
    index = int(match.group(1))
    name = names[index] if index < len(names) else None
    return name if name in types and types[name] != pa.string() else None


def _whole_numbers_as_int(frame: pd.DataFrame, strings: Sequence[str]) -> pd.DataFrame:
    """float64 number columns holding only whole numbers (and no missing value) as int64, as
    pyarrow's own typing would give them."""
    for column in frame.columns:
        values = frame[column]
        if column in strings or values.dtype != np.float64 or values.isna().any():
            continue
        array = values.to_numpy()
        if (
            np.all(np.isfinite(array))
            and np.all(array == np.round(array))
            and (np.abs(array).max(initial=0) < 2**53)
        ):
            frame[column] = array.astype(np.int64)
    return frame


def _diagnose(
    path: Path, width: int, names: Sequence[str], first_line: int, error: Exception
) -> None:
    """Find the line pyarrow choked on and raise a TraceError about it."""
    with path.open(encoding="utf-8", newline="") as handle:
        text = handle.read()
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    for number in range(first_line, len(lines) + 1):
        raw = lines[number - 1].rstrip("\r")
        if raw == "":
            continue
        count = len(_fields(raw))
        if count != width:
            last = number == len(lines)
            problem = f"{count} field(s) instead of {width}"
            if last and not ends_with_newline and count < width:
                problem += " (the file seems truncated)"
            raise TraceError(
                path,
                problem,
                line=number,
                expected=f"{width} comma-separated fields: " + ", ".join(names),
                found=raw[:120],
            )
    message = str(error).split("\n")[0]
    raise TraceError(path, f"could not be parsed as CSV ({message})")


# -- values ------------------------------------------------------------------------------------
def parse_times(
    values: pd.Series,
    fmt: str,
    *,
    path: Path,
    column: str,
    first_line: int = 1,
    missing: Sequence[str] = (),
    locate: Callable[[int], str] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seconds since the epoch (float, NaN where not parsed), the missing mask and the
    unparseable mask. A TraceError if no present value parses (times in another format),
    at ``locate(row)`` if given, else at line ``first_line + row``."""
    array = _arrow_strings(values)
    stripped = pc.utf8_trim_whitespace(array)
    absent = pc.is_null(stripped)
    for word in ("", *missing):
        absent = pc.or_(absent, pc.fill_null(pc.equal(stripped, word), False))
    parsed = pc.strptime(stripped, format=fmt, unit="s", error_is_null=True)
    seconds = np.asarray(
        pc.cast(parsed, pa.int64()).to_numpy(zero_copy_only=False), dtype="float64"
    )
    # strptime rolls impossible dates over (2020-02-30 -> 2020-03-01, 2020-09-31 ->
    # 2020-10-01): refuse what does not print back the same. Only a roll-over lands on
    # day 1-3, so only those rows are printed back.
    early = np.flatnonzero(np.asarray(pc.fill_null(pc.less_equal(pc.day(parsed), 3), False)))
    if len(early):
        back = pc.strftime(parsed.take(pa.array(early)), format=fmt)
        same = np.asarray(pc.fill_null(pc.equal(back, stripped.take(pa.array(early))), False))
        differ = early[~same.astype(bool)]
        # a time written without zero padding or with a UTC offset prints back differently
        # but is a real date: only a date Python refuses (2020-02-30) is a roll-over
        texts = stripped.take(pa.array(differ)).to_pylist()
        rolled = np.array([not _real_date(text, fmt) for text in texts], dtype=bool)
        seconds[differ[rolled]] = np.nan
    absent_np = np.asarray(absent.to_numpy(zero_copy_only=False), dtype=bool)
    bad = np.isnan(seconds) & ~absent_np
    if bad.any() and not (~np.isnan(seconds)).any():
        position = int(np.flatnonzero(bad)[0])
        raise TraceError(
            path,
            "no value of this time column parses",
            line=None if locate else first_line + position,
            where=locate(position) if locate else None,
            column=column,
            expected=f"times like {_example(fmt)} (format {fmt!r})",
            found=values.iloc[position],
        )
    return seconds, absent_np, bad


@functools.lru_cache(maxsize=4096)
def _real_date(text: str | None, fmt: str) -> bool:
    """Whether ``text`` is a real date-time in ``fmt`` (Python's strptime refuses Feb 30)."""
    if text is None:
        return False
    try:
        datetime.datetime.strptime(text, fmt)
    except ValueError:
        return False
    return True


def _arrow_strings(values: pd.Series) -> pa.Array:
    """``values`` as an Arrow string array (no copy through Python objects when the column
    is already Arrow-backed)."""
    try:
        array = pa.array(values.array) if hasattr(values.array, "__arrow_array__") else None
    except (pa.ArrowException, TypeError):
        array = None
    if array is None or not pa.types.is_string(array.type):
        array = pa.array(values.astype(object).where(values.notna(), None), type=pa.string())
    return array


def _example(fmt: str) -> str:
    return pd.Timestamp("2020-09-01 08:30:00").strftime(fmt)


def parse_numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float values (NaN where missing or not a number), the missing mask and the mask of
    present values that are not finite numbers."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        numbers = values.to_numpy(dtype="float64", na_value=np.nan)
        missing = np.isnan(numbers)
        return numbers, missing, np.isinf(numbers)
    if _may_hold_booleans(values):  # True/False are not numbers (pandas would take them for 1/0)
        flags = np.array([isinstance(v, (bool, np.bool_)) for v in values], dtype=bool)
        values = values.astype(object).where(~flags, "not-a-number")
    present = values.notna().to_numpy() & (values.astype(str).str.strip() != "").to_numpy()
    numbers = decimal_numbers(values.where(present, None))
    missing = ~present
    bad = present & ~np.isfinite(numbers)
    return numbers, missing, bad


def _may_hold_booleans(values: pd.Series) -> bool:
    """Whether ``values`` may hold True/False (checked in C before any Python loop)."""
    if pd.api.types.is_bool_dtype(values.dtype):
        return True
    if values.dtype != object:
        return False
    kind = pd.api.types.infer_dtype(values, skipna=True)
    return kind == "boolean" or kind.startswith("mixed")


def labels(values: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """Labels as stripped strings and the missing/blank mask."""
    text = values.astype("string").str.strip()
    missing = (text.isna() | (text == "")).to_numpy(dtype=bool, na_value=True)
    return text.astype("str"), missing


def load_json(path: Path) -> Any:
    """Parse a JSON file (a leading byte-order mark skipped, as :func:`without_bom` does for
    CSV headers); a TraceError naming the line and column of a syntax error."""
    check_utf8(path, names=())
    try:
        with path.open(encoding="utf-8-sig") as handle:
            return json.load(handle)
    except RecursionError:
        raise TraceError(
            path, "JSON nested too deeply to read", expected="a JSON list of job objects"
        ) from None
    except OSError as error:
        raise unreadable(path, error) from None
    except json.JSONDecodeError as error:
        raise TraceError(
            path,
            f"not valid JSON ({error.msg}, column {error.colno})",
            line=error.lineno,
            expected="a JSON list of jobs",
        ) from None
