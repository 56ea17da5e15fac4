"""Load a generated Helios-format log of 1.7 million rows with ``read_helios``: time and memory.

The log has the Saturn cluster's size (1,753,078 jobs, ``helios_cluster_summary.csv``) and the
documented format (``cluster_log.csv`` columns, ``YYYY-MM-DD HH:MM:SS`` times): 60% GPU jobs
over 25 VCs, 1-64 GPUs, lognormal durations, some zero durations and CPU jobs, over six
months. It is written with a seeded generator to a temporary folder, next to a
``cluster_gpu_number.csv``. The load runs in a fresh Python process (``spawn``) so that the
peak resident memory (``getrusage``) is the reader's alone. Issue 3's target: under 15 s and
under 2 GB.

    python benchmarks/bench_traces.py                 # 1,753,078 rows
    python benchmarks/bench_traces.py --rows 100000   # a quick try
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from _common import header, markdown_table, pin_one_core, run_in_fresh_process

ROWS = 1_753_078
TARGET_SECONDS = 15.0
TARGET_GB = 2.0
GB = 1024**3
VCS = 25
START = "2020-04-01 00:00:00"
DAYS = 183


def write_log(folder: Path, rows: int, seed: int) -> int:
    """Write ``cluster_log.csv`` and ``cluster_gpu_number.csv``; return the log's bytes."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    vcs = np.array([f"vc{i:02d}x" for i in range(VCS)])
    origin = pd.Timestamp(START).value // 10**9
    submit = origin + np.sort(rng.integers(0, DAYS * 86_400, rows))
    queue = np.where(rng.random(rows) < 0.7, 0, rng.integers(0, 3_600, rows))
    duration = np.round(rng.lognormal(5.5, 2.5, rows)).clip(0, 30 * 86_400).astype(np.int64)
    gpus = np.where(rng.random(rows) < 0.4, 0, rng.choice([1, 1, 1, 2, 4, 8, 16, 64], rows))
    start = submit + queue
    end = start + duration

    def stamp(seconds: np.ndarray) -> pa.Array:
        times = pa.array(seconds.astype("datetime64[s]"))
        return pa.compute.strftime(times, format="%Y-%m-%d %H:%M:%S")

    table = pa.table(
        {
            "job_id": np.arange(1, rows + 1),
            "user": pa.array([f"u{i:04d}" for i in range(2_000)]).take(
                rng.integers(0, 2_000, rows)
            ),
            "vc": pa.array(vcs).take(rng.integers(0, VCS, rows)),
            "gpu_num": gpus,
            "cpu_num": np.maximum(gpus * 4, 1),
            "node_num": np.maximum(gpus // 8, 1),
            "state": pa.array(["COMPLETED", "CANCELLED", "FAILED"]).take(
                rng.choice(3, rows, p=[0.6, 0.25, 0.15])
            ),
            "submit_time": stamp(submit),
            "start_time": stamp(start),
            "end_time": stamp(end),
            "duration": duration,
            "queue": queue,
        }
    )
    log = folder / "cluster_log.csv"
    pacsv.write_csv(table, log, pacsv.WriteOptions(quoting_style="none"))
    days = pd.date_range(START, periods=DAYS, freq="D").strftime("%Y-%m-%d")
    owned = {vc: 8 * (2 + i % 15) for i, vc in enumerate(vcs)}  # 16..128 GPUs
    sizes = pd.DataFrame({"date": days, **owned})
    sizes["total"] = sum(owned.values())
    sizes.to_csv(folder / "cluster_gpu_number.csv", index=False)
    return log.stat().st_size


def _peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def measure(folder: str) -> dict:
    """The measured part, in the child: import, read_helios, report."""
    t = time.perf_counter()
    import analysim

    imported = time.perf_counter() - t
    rss_import = _peak_rss()
    t = time.perf_counter()
    c = time.process_time()
    trace = analysim.traces.read_helios(folder)
    seconds = time.perf_counter() - t
    return {
        "import s": imported,
        "read_helios s": seconds,
        "cpu s": time.process_time() - c,
        "peak RSS GB": _peak_rss() / GB,
        "RSS after import GB": rss_import / GB,
        "rows": trace.report.read["jobs"],
        "kept": trace.report.kept["jobs"],
        "dropped": trace.report.dropped("jobs"),
        "summary": trace.report.summary(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--rows", type=int, default=ROWS, help="rows in the generated log")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = parser.parse_args(argv)

    pinning = pin_one_core(not args.no_pin)
    header("bench_traces: read_helios on a generated 1.7M-row log", pinning)
    with tempfile.TemporaryDirectory(prefix="bench_traces_") as tmp:
        folder = Path(tmp) / "Saturn"
        folder.mkdir()
        t = time.perf_counter()
        size = write_log(folder, args.rows, args.seed)
        print(
            f"generated {args.rows:,} rows ({size / 1e6:.0f} MB) in "
            f"{time.perf_counter() - t:.1f} s at {folder}",
            flush=True,
        )
        status, payload = run_in_fresh_process(measure, str(folder))
    if status != "ok":
        print(payload, file=sys.stderr)
        return 1
    print(payload.pop("summary"))
    print()
    full = args.rows == ROWS
    payload["time < 15 s"] = _verdict(payload["read_helios s"] < TARGET_SECONDS, full)
    payload["mem < 2 GB"] = _verdict(payload["peak RSS GB"] < TARGET_GB, full)
    print(markdown_table([payload], list(payload)))
    if not full:
        print(f"\n(verdicts in parentheses: the targets are for {ROWS:,} rows)")
    return 0


def _verdict(ok: bool, full: bool) -> str:
    word = "PASS" if ok else "MISS"
    return word if full else f"({word})"


if __name__ == "__main__":
    raise SystemExit(main())
