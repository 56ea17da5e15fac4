"""Grid search of the calibrated presets' tuned shape parameters (issues 14 and 28,
``docs/calibration.md``): the Helios ones and the Acme ones (``seren``, ``kalos``).

For each cluster, each setting of the tuned knobs (``max_job_fraction`` x ``size_growth``,
the rest of the preset's ``SHAPES`` entry unchanged) and each seed, generate the month (30
days; Kalos: 123, :func:`analysim.presets.calibration.check_days`) and simulate it under the
preset's own config (``presets.config(name)``: FIFO, EASY backfill) with
:func:`analysim.presets.calibration.run_month`, then run every criterion of the calibration
check (``analysim.presets.calibration``). Randomness:
only the month generator's ``np.random.default_rng(seed)`` for the given ``--seeds``.

Prints one row per setting: the mean queueing delay per seed and its relative error, the
worst absolute error over the seeds, the number of MISSes over all criteria (every seed),
sorted best first (fewest misses, then smallest worst error). Tune on seeds 0-2 only; seeds
3-9 are the out-of-sample check (``analysim presets --check --seeds 3 4 5 6 7 8 9``). The
preset's own ``max_gpu_days`` (:data:`analysim.presets.helios.SHAPES`) stays unless
``--extra`` changes it.

    python benchmarks/tune_presets.py --presets earth --workers 1
    python benchmarks/tune_presets.py --presets venus --fractions 0.34 \
        --growths -0.2 -0.175 -0.15 --seeds 0 1 2 --workers 2
    python benchmarks/tune_presets.py --presets venus --extra one_gpu_share=0.55
    python benchmarks/tune_presets.py --presets seren --fractions 0.45 --growths 0.5 \
        --extra max_gpu_days=1536 arrivals=dealt --workers 2

A setting whose GPU demand cannot reach the published mean (a cap too small for its VCs)
is listed as ``unreachable``.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import time

from _common import map_in_pool

PRESETS = ("venus", "earth", "saturn", "uranus", "seren", "kalos")
DEFAULT_GRID = {
    # a first round around the tuned values (docs/calibration.md: finer rounds with
    # --fractions / --growths); a cap matters only where it changes a VC's largest
    # power-of-two job (Earth: 0.1875 and 0.21875 give the same caps)
    "venus": ([0.3, 0.34, 0.4], [-0.25, -0.2, -0.175, -0.15, -0.1]),
    "earth": ([0.125, 0.1875, 0.25], [0.8, 0.85, 0.89, 0.9, 0.95]),
    "saturn": ([0.125, 0.1875, 0.25], [0.15, 0.25, 0.35]),
    "uranus": ([0.1875, 0.25, 0.3], [0.35, 0.40, 0.45, 0.5]),
    # Acme: one pool, the largest job fixed at 1,024 GPUs (0.45 of the cluster)
    "seren": ([0.45], [0.45, 0.5, 0.55]),
    "kalos": ([0.45], [0.8, 0.85, 0.86]),
}


def evaluate(task: tuple[str, float, float, tuple[tuple[str, float], ...], int]) -> dict:
    """One month: ``(name, max_job_fraction, size_growth, extra fields, seed)`` -> the check's
    rows summarised (mean delay, its relative error, the metrics that MISS)."""
    from analysim.presets import calibration

    name, fraction, growth, extra, seed = task
    shape = dataclasses.replace(
        calibration.SOURCES[name].SHAPES[name],
        max_job_fraction=fraction,
        size_growth=growth,
        **dict(extra),
    )
    out = {"name": name, "fraction": fraction, "growth": growth, "extra": extra, "seed": seed}
    try:
        measured = calibration.run_month(name, seed, shape=shape)
    except ValueError as error:  # GPU demand out of reach of these caps
        return {**out, "error": str(error)}
    rows = calibration.compare(name, seed, measured).set_index("metric")
    return {
        **out,
        "mean_queue": rows.loc["mean_queue", "simulated"],
        "error_queue": rows.loc["mean_queue", "rel_error"],
        "mean_gpus": rows.loc["mean_gpus", "simulated"],
        "misses": [m for m in rows.index if rows.loc[m, "verdict"] == "MISS"],
    }


def summarise(results: list[dict], seeds: list[int]) -> list[dict]:
    """One row per setting, best first."""
    table: dict[tuple, dict] = {}
    for r in results:
        key = (r["name"], r["fraction"], r["growth"], r["extra"])
        row = table.setdefault(
            key,
            {
                "name": r["name"],
                "fraction": r["fraction"],
                "growth": r["growth"],
                "extra": r["extra"],
                "by_seed": {},
                "misses": [],
                "error": None,
            },
        )
        if "error" in r:
            row["error"] = r["error"]
            continue
        row["by_seed"][r["seed"]] = r
        row["misses"] += [f"s{r['seed']}:{m}" for m in r["misses"]]
    rows = []
    for row in table.values():
        done = [row["by_seed"][s] for s in seeds if s in row["by_seed"]]
        row["worst"] = max((abs(r["error_queue"]) for r in done), default=float("inf"))
        rows.append(row)
    rows.sort(key=lambda r: (r["error"] is not None, r["name"], len(r["misses"]), r["worst"]))
    return rows


def format_rows(rows: list[dict], seeds: list[int]) -> str:
    head = ["preset", "max_job_fraction", "size_growth", "extra"]
    head += [f"seed {s}" for s in seeds] + ["worst |err|", "misses"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        extra = ",".join(f"{k}={v}" for k, v in row["extra"]) or "-"
        cells = [row["name"], f"{row['fraction']:g}", f"{row['growth']:g}", extra]
        if row["error"] is not None:
            cells += ["unreachable"] * len(seeds) + ["-", "-"]
        else:
            for s in seeds:
                r = row["by_seed"][s]
                cells.append(f"{r['mean_queue']:,.0f} ({r['error_queue']:+.1%})")
            cells += [
                f"{row['worst']:.1%}",
                str(len(row["misses"]))
                + (
                    " " + " ".join(m for m in row["misses"] if "mean_queue" not in m)
                    if any("mean_queue" not in m for m in row["misses"])
                    else ""
                ),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parse_extra(items: list[str]) -> tuple[tuple[str, float | str], ...]:
    pairs = []
    from analysim.presets.calibrated import Shape

    fields = {f.name for f in dataclasses.fields(Shape)}
    for item in items:
        key, _, value = item.partition("=")
        if key not in fields or not value:
            raise SystemExit(
                f"--extra {item!r}: expected FIELD=NUMBER with FIELD in {sorted(fields)}"
            )
        try:
            pairs.append((key, float(value)))
        except ValueError:  # a word: arrivals=dealt
            pairs.append((key, value))
    return tuple(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--fractions", nargs="+", type=float, help="max_job_fraction values")
    parser.add_argument("--growths", nargs="+", type=float, help="size_growth values")
    parser.add_argument(
        "--extra",
        nargs="*",
        default=[],
        help="other Shape fields, FIELD=VALUE (one setting for the whole grid)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        choices=(1, 2),
        help="processes (the machine is shared: at most 2)",
    )
    args = parser.parse_args(argv)
    extra = _parse_extra(args.extra)
    tasks = []
    for name in args.presets:
        fractions, growths = DEFAULT_GRID[name]
        for fraction, growth, seed in itertools.product(
            args.fractions or fractions, args.growths or growths, args.seeds
        ):
            tasks.append((name, fraction, growth, extra, seed))
    start = time.perf_counter()
    results = map_in_pool(evaluate, tasks, args.workers)
    print(format_rows(summarise(results, args.seeds), args.seeds))
    print(f"\n{len(tasks)} months in {time.perf_counter() - start:.0f} s ({args.workers} workers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
