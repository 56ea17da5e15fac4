"""The engine's cost as a count of machine instructions, for comparing two checkouts on a
busy machine (wall seconds vary with the load; instruction counts do not).

Runs one configuration of ``bench_engine.py``'s workload under valgrind's cachegrind
(``--cache-sim=no``), once with one simulation and once with two, and prints the difference:
the instructions of one simulation (building its result included), without Python's start-up
and imports. Needs ``valgrind`` (Debian: ``apt-get install -y valgrind``); each count runs the
simulation about 30 times slower than natively.

    python benchmarks/count_instructions.py --config fifo
    python benchmarks/count_instructions.py --config fifo --checkout /path/to/other/checkout

``--checkout`` runs another checkout's engine (its ``analysim`` first on ``PYTHONPATH``) on the
same workload preset name ``--preset`` (``venus_overloaded``; older checkouts call the same
month ``venus``).

``--first`` counts the first simulation instead (one run less a run that only imports and
builds the workload), as ``--easy`` does: the second simulation's count moved by up to 2 %
between two checkouts of the same code at different paths (``venus_overloaded``,
``las+preemption``, 4 days), so compare checkouts copied to one path, with either count.

``--easy LOAD`` counts ``bench_easy.py``'s run instead: the calibrated ``venus`` preset at that
load scale with the preset's config and EASY backfill, ``--config fifo`` (no preemption) or
``las+preemption``. It subtracts a run that only imports and builds the workload (0
simulations) from one with 1 simulation, which halves the time a count takes:

    python benchmarks/count_instructions.py --easy 2.0 --config las+preemption
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import CONFIGS, ROOT

ONE_RUN = """
import sys
sys.path.insert(0, {benchmarks!r})
import _common
from analysim import presets
workload = presets.workload({preset!r}, seed=0, days={days!r})
cluster = presets.cluster({preset!r})
config = {{**_common.CONFIGS[{config!r}], "placement": "consolidate"}}
for _ in range({runs}):
    _common.timed_simulation(workload, cluster, config)
"""

EASY_RUN = """
from analysim import Simulation, presets
workload = presets.workload("venus", seed=0, load_scale={load!r})
cluster = presets.cluster("venus")
config = presets.config("venus").replace(
    scheduler={scheduler!r}, preemption={preemption!r}, backfill="easy"
)
for _ in range({runs}):
    Simulation(workload, cluster, config).run()
"""


def instructions(
    checkout: Path, preset: str, config: str, days: float, runs: int, easy: float | None = None
) -> int:
    """Instructions executed by a fresh interpreter that runs ``runs`` simulations (of
    ``bench_easy.py``'s run at load ``easy``, if given)."""
    if easy is None:
        script = ONE_RUN.format(
            benchmarks=str(checkout / "benchmarks"),
            preset=preset,
            days=days,
            config=config,
            runs=runs,
        )
    else:
        scheduler = CONFIGS[config]["scheduler"]
        preemption = bool(CONFIGS[config].get("preemption", False))
        script = EASY_RUN.format(load=easy, scheduler=scheduler, preemption=preemption, runs=runs)
    # a fixed hash seed: str hashes (and so dict and set layouts) alike in every count
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                f"--cachegrind-out-file={out}",
                sys.executable,
                "-c",
                script,
            ],
            env=env,
            cwd=checkout,  # ``-c`` puts the working directory first on sys.path
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"count_instructions: the run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="fifo")
    parser.add_argument("--preset", default="venus_overloaded")
    parser.add_argument("--days", type=float, default=26)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="default: this one")
    parser.add_argument("--easy", type=float, metavar="LOAD", help="bench_easy.py's run")
    parser.add_argument(
        "--first",
        action="store_true",
        help="count the first simulation (1 run less 0 runs), not the second (2 less 1)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install -y valgrind)")
    if args.easy is not None:
        none = instructions(args.checkout, "", args.config, 0, 0, args.easy)
        one = instructions(args.checkout, "", args.config, 0, 1, args.easy)
        print(
            f"{args.checkout}: {args.config}, venus at load {args.easy:g}, EASY: "
            f"{one - none:,} instructions per simulation (0 runs: {none:,}; 1 run: {one:,})"
        )
        return
    if args.first:
        none = instructions(args.checkout, args.preset, args.config, args.days, 0)
        one = instructions(args.checkout, args.preset, args.config, args.days, 1)
        print(
            f"{args.checkout}: {args.config}, {args.preset} {args.days:g} days: "
            f"{one - none:,} instructions in the first simulation (0 runs: {none:,}; "
            f"1 run: {one:,})"
        )
        return
    one = instructions(args.checkout, args.preset, args.config, args.days, 1)
    two = instructions(args.checkout, args.preset, args.config, args.days, 2)
    print(
        f"{args.checkout}: {args.config}, {args.preset} {args.days:g} days: "
        f"{two - one:,} instructions per simulation (1 run: {one:,}; 2 runs: {two:,})"
    )


if __name__ == "__main__":
    main()
