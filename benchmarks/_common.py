"""Helpers shared by the benchmark scripts: environment header, core pinning, timing, tables.

Not a benchmark itself. The scripts import it as ``_common`` (they run as
``python benchmarks/bench_X.py``, so this folder is on ``sys.path``). If ``analysim`` is not
installed, the repository root is put on ``sys.path`` so the scripts also run from a checkout.
"""

from __future__ import annotations

import datetime
import gc
import importlib.util
import multiprocessing as mp
import os
import platform
import queue as queue_module
import shlex
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("analysim") is None:  # pragma: no cover - depends on install
    sys.path.insert(0, str(ROOT))

# The configurations the issue names, in the words of SimConfig.
CONFIGS: dict[str, dict[str, Any]] = {
    "fifo": {"scheduler": "fifo"},
    "las+preemption": {"scheduler": "las", "preemption": True},
    "srtf+preemption": {"scheduler": "srtf", "preemption": True},
    "sjf": {"scheduler": "sjf"},
    "fair": {"scheduler": "fair"},
}


def map_in_pool(function: Any, tasks: list, workers: int) -> list:
    """``[function(t) for t in tasks]``, in ``workers`` forked processes when more than one
    (each task a chunk: long ones do not hold up a worker's queue)."""
    if workers == 1:
        return [function(t) for t in tasks]
    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(function, tasks, chunksize=1)


def run_in_fresh_process(function: Any, *args: Any) -> tuple[str, Any]:
    """``function(*args)`` in a fresh interpreter (multiprocessing "spawn"), so that nothing
    this process allocated counts in its memory: ``("ok", its result)``, or ``("error", the
    traceback)`` (also when the child dies without a word, e.g. killed for memory)."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(target=_run_and_report, args=(results, function, *args))
    child.start()
    while True:  # poll, so that a child killed without a word does not hang us
        try:
            status, payload = results.get(timeout=1.0)
            break
        except queue_module.Empty:
            if not child.is_alive():
                status, payload = "error", f"child exited with code {child.exitcode}"
                break
    child.join()
    return status, payload


def _run_and_report(results: Any, function: Any, *args: Any) -> None:
    try:
        results.put(("ok", function(*args)))
    except BaseException as error:  # report, do not hang the parent
        import traceback

        results.put(("error", "".join(traceback.format_exception(error))))


def pin_one_core(enabled: bool = True) -> str:
    """Pin this process (and children started later) to one CPU; say what was done."""
    if not enabled:
        return "not pinned (--no-pin)"
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (os.sched_setaffinity unavailable)"
    try:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
    except OSError as error:
        return f"not pinned ({error})"
    return f"pinned to CPU {cpu} (os.sched_setaffinity)"


def header(title: str, pinning: str) -> dict[str, str]:
    """Print (and return) what the numbers depend on: command, versions, CPUs, commit."""
    import numpy as np
    import pandas as pd

    import analysim
    from analysim.version import checkout_commit

    source = Path(analysim.__file__).resolve().parent
    info = {
        "benchmark": title,
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "git commit": checkout_commit() or "unknown",
        "analysim": f"{getattr(analysim, '__version__', '?')} from {source}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "cpus": f"{os.cpu_count()} ({platform.processor() or platform.machine()})",
        "cpu model": _cpu_model(),
        "pinning": pinning,
        "load average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    width = max(map(len, info))
    for key, value in info.items():
        print(f"{key:<{width}} : {value}")
    print(flush=True)
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timed_simulation(workload, cluster, config: dict[str, Any], progress: bool = False) -> dict:
    """Run ``simulate(workload, cluster, **config)`` in its three parts, timing each.

    ``init`` is ``Simulation(...)`` (policies, partition, numpy state), ``run`` is
    ``sim.run()``, ``result`` is ``sim.result()`` (the DataFrames); ``total`` is their sum,
    i.e. what :func:`analysim.simulate` costs once the workload and cluster exist. ``cpu``
    is the process CPU time of the same span (``time.process_time``): on a busy machine wall
    time grows with the contention, CPU time much less.
    """
    from analysim.engine import Simulation
    from analysim.inputs.config import SimConfig

    cfg = SimConfig.from_dict(config)
    gc.collect()
    c0 = time.process_time()
    t0 = time.perf_counter()
    sim = Simulation(workload, cluster, cfg, progress=progress)
    t1 = time.perf_counter()
    sim.run()
    t2 = time.perf_counter()
    result = sim.result()
    t3 = time.perf_counter()
    c3 = time.process_time()
    return {
        "cpu": c3 - c0,
        "init": t1 - t0,
        "run": t2 - t1,
        "result": t3 - t2,
        "total": t3 - t0,
        "res": result,
    }


def waiting_jobs_mean(result) -> float:
    """Time-averaged number of waiting jobs: mean of the cluster-wide timeline rows."""
    from analysim.results.result import ALL

    timeline = result.timeline
    rows = timeline.loc[timeline["vc"] == ALL, "waiting_jobs"]
    return float(rows.mean()) if len(rows) else float("nan")


def markdown_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A GitHub-flavoured markdown table; numbers right-aligned."""
    cells = [[_fmt(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(row.get(c), (int, float)) for row in rows if row.get(c) != "")
        for c in columns
    ]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |",
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if num else "-" * (w + 2)
            for w, num in zip(widths, numeric, strict=True)
        )
        + "|",
    ]
    for r in cells:
        lines.append(
            "| "
            + " | ".join(
                v.rjust(w) if num else v.ljust(w)
                for v, w, num in zip(r, widths, numeric, strict=True)
            )
            + " |"
        )
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # nan
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 100:
            return f"{value:.1f}"
        if abs(value) >= 10:
            return f"{value:.2f}"
        return f"{value:.3f}"
    return str(value)
