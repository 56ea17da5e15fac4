"""The Helios presets over the published span (183 days) and over a month, for generator
variants (issue 14, ``docs/calibration.md``, "Over the published span").

For each preset, each variant (fields of :class:`analysim.presets.calibrated.Shape` replaced in the
preset's :data:`analysim.presets.helios.SHAPES` entry) and each seed: generate the workload
with :func:`analysim.presets.calibrated.calibrated_workload`, simulate it under the preset's own
config (``presets.config(name)``: per-VC FIFO, EASY backfill, VCs own their nodes) and run
every criterion of the calibration check (``analysim.presets.calibration``). Randomness: only the
generator's ``np.random.default_rng(seed)``.

Prints one row per preset and variant: the long-run mean queueing delay of each
``--long-seeds`` seed over ``--long-days`` days (relative error against the published
mean), the range of its 30-day block means, the month's (``--month-seeds``, 30 days) mean
delays, and the criteria other than the mean delay that MISS anywhere.

    python benchmarks/longrun_presets.py                         # the presets as they are
    python benchmarks/longrun_presets.py --presets venus earth \\
        --variant capped:max_gpu_days=32 --variant capped64:max_gpu_days=64
    python benchmarks/longrun_presets.py --variant 'x:venus.size_growth=-0.4,max_gpu_days=16'

A variant is ``LABEL:FIELD=VALUE,...``; ``PRESET.FIELD=VALUE`` applies to one preset only;
``LABEL`` alone (or ``base``) is the presets unchanged; a variant whose every change names
other presets is not run.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from _common import map_in_pool

PRESETS = ("venus", "earth", "saturn", "uranus")
BLOCK_DAYS = 30.0


def _value(text: str) -> object:
    if text in ("None", "none"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def parse_variant(text: str) -> tuple[str, tuple[tuple[str, str, object], ...]]:
    """``LABEL:FIELD=VALUE,PRESET.FIELD=VALUE`` -> (label, ((preset or '', field, value)))."""
    from analysim.presets.calibrated import Shape

    fields = {f.name for f in dataclasses.fields(Shape)}
    label, _, rest = text.partition(":")
    items = []
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        preset, _, field = key.rpartition(".")
        if field not in fields or not value or (preset and preset not in PRESETS):
            raise SystemExit(
                f"--variant {text!r}: {item!r} is not [PRESET.]FIELD=VALUE with FIELD in "
                f"{sorted(fields)} and PRESET in {list(PRESETS)}"
            )
        items.append((preset, field, _value(value)))
    return label or "base", tuple(items)


def shape_of(name: str, changes: tuple[tuple[str, str, object], ...]):
    from analysim.presets import helios as helios_presets

    updates = {field: value for preset, field, value in changes if preset in ("", name)}
    return dataclasses.replace(helios_presets.SHAPES[name], **updates)


def evaluate(task: tuple) -> dict:
    """One run: ``(name, label, changes, seed, days)`` -> mean delay, block means, misses."""
    from analysim.presets import calibration
    from analysim.presets import helios as helios_presets
    from analysim.presets.calibrated import calibrated_workload
    from analysim.simulate import simulate

    name, label, changes, seed, days = task
    out = {"name": name, "label": label, "seed": seed, "days": days}
    cluster = helios_presets.cluster(name)
    start = time.process_time()
    try:
        jobs = calibrated_workload(
            helios_presets.PUBLISHED[name].targets(),
            helios_presets.vc_gpus(name),
            days=days,
            seed=seed,
            shape=shape_of(name, changes),
            name=name,
        )
    except ValueError as error:
        return {**out, "error": str(error)}
    done = simulate(jobs, cluster, helios_presets.config(name)).jobs
    measured = calibration.measure(done, cluster.total_gpus, days)
    rows = calibration.compare(name, seed, measured).set_index("metric")
    block = (done["submit_time"] // (BLOCK_DAYS * 86400)).astype(int)
    full = block < int(days // BLOCK_DAYS)
    blocks = done[full].groupby(block[full])["queue_delay"].mean()
    return {
        **out,
        "mean_queue": float(rows.loc["mean_queue", "simulated"]),
        "error_queue": float(rows.loc["mean_queue", "rel_error"]),
        "blocks": [float(b) for b in blocks],
        "misses": [m for m in rows.index if rows.loc[m, "verdict"] == "MISS"],
        "cpu": time.process_time() - start,
    }


def format_table(results: list[dict], long_seeds: list[int], month_seeds: list[int]) -> str:
    head = ["preset", "variant"]
    head += [f"long s{s}" for s in long_seeds] + ["30-day blocks (min-max)"]
    head += [f"month s{s}" for s in month_seeds] + ["months in 25%", "other misses"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    keys = list(dict.fromkeys((r["name"], r["label"]) for r in results))
    for name, label in keys:
        mine = [r for r in results if (r["name"], r["label"]) == (name, label)]
        if any("error" in r for r in mine):
            lines.append(f"| {name} | {label} | unreachable: {mine[0].get('error', '')} |")
            continue
        long_runs = {r["seed"]: r for r in mine if r["days"] != BLOCK_DAYS}
        months = {r["seed"]: r for r in mine if r["days"] == BLOCK_DAYS}
        cells = [name, label]
        for s in long_seeds:
            r = long_runs.get(s)
            cells.append("-" if r is None else f"{r['mean_queue']:,.0f} ({r['error_queue']:+.0%})")
        blocks = [b for r in long_runs.values() for b in r["blocks"]]
        cells.append(f"{min(blocks):,.0f}-{max(blocks):,.0f}" if blocks else "-")
        for s in month_seeds:
            r = months.get(s)
            cells.append("-" if r is None else f"{r['mean_queue']:,.0f} ({r['error_queue']:+.0%})")
        within = sum(abs(r["error_queue"]) <= 0.25 for r in months.values())
        cells.append(f"{within}/{len(months)}")
        other = sorted(
            {f"s{r['seed']}/{r['days']:g}d:{m}" for r in mine for m in r["misses"]}
            - {f"s{r['seed']}/{r['days']:g}d:mean_queue" for r in mine}
        )
        cells.append(" ".join(other) or "none")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--variant", action="append", default=[], help="LABEL:FIELD=VALUE,...")
    parser.add_argument("--long-seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--long-days", type=float, default=183.0)
    parser.add_argument("--month-seeds", nargs="*", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--workers", type=int, default=1, choices=(1, 2))
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in args.variant] or [("base", ())]
    tasks = [
        (name, label, changes, seed, days)
        for name in args.presets
        for label, changes in variants
        if not changes or any(preset in ("", name) for preset, _, _ in changes)
        for seeds, days in ((args.long_seeds, args.long_days), (args.month_seeds, BLOCK_DAYS))
        for seed in seeds
    ]
    tasks.sort(key=lambda t: -t[4])  # long runs first: better packing on two workers
    start = time.perf_counter()
    results = map_in_pool(evaluate, tasks, args.workers)
    labels = [label for label, _ in variants]
    results.sort(key=lambda r: (PRESETS.index(r["name"]), labels.index(r["label"])))
    print(format_table(results, args.long_seeds, args.month_seeds))
    months = [r for r in results if "cpu" in r and r["days"] == BLOCK_DAYS]
    if months:
        slowest = max(months, key=lambda r: r["cpu"])
        print(
            f"\nslowest month: {slowest['name']} {slowest['label']} seed {slowest['seed']} "
            f"{slowest['cpu']:.1f} s cpu (generate + simulate, in a shared pool worker)"
        )
    print(f"{len(tasks)} runs in {time.perf_counter() - start:.0f} s ({args.workers} workers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
