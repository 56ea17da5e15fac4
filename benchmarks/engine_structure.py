"""The engine's structure, measured (issue 31): the lines of ``engine/simulation.py``, the
instance attributes of a ``Simulation`` and the attributes of its rounds that are the very
objects another part owns.

Builds the calibrated ``venus`` preset under its own config, runs it for two days, and
prints:

* ``simulation.py lines``: the module's lines;
* ``len(vars(sim))``: the simulation's instance attributes (properties do not count: a
  read-only view of a part's state is not a second owner);
* ``rounds aliases``: attributes of ``sim.decider`` (the rounds) whose value *is* (same
  object, not equal) a container or part held by the simulation, its ledger, its job facts
  or, where the checkout has them, its job table, job state, queues, arrivals or readout
  (numbers, strings, booleans, None and the simulation itself are not counted);
* ``rounds' parts aliases``: the same count over the parts the rounds hold (``ranker``,
  ``starts``, ``easy``, ``evictions``, where the checkout has them), each part's own: an
  alias moved out of the rounds into a part still shows here.

    python benchmarks/engine_structure.py
    python benchmarks/engine_structure.py --checkout /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from _common import ROOT

MEASURE = """
import dataclasses
import analysim as asim

sim = asim.Simulation(
    asim.presets.workload("venus"), asim.presets.cluster("venus"), asim.presets.config("venus")
)
sim.run(until=2 * 86400)
owners = [vars(sim), vars(sim.ledger)]
for part in ("facts", "table"):
    if hasattr(sim, part):
        obj = getattr(sim, part)
        owners.append({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
for part in ("job_state", "queues", "arrivals", "readout"):
    if hasattr(sim, part):
        owners.append(vars(getattr(sim, part)))
held = {id(v) for d in owners for v in d.values()}
plain = (bool, int, float, str, type(None))


def aliases(obj):
    return sorted(
        name
        for name, value in vars(obj).items()
        if value is not sim and not isinstance(value, plain) and id(value) in held
    )


print(f"len(vars(sim)): {len(vars(sim))}")
own = aliases(sim.decider)
print(f"rounds aliases: {len(own)} ({', '.join(own)})")
parts = {
    part: aliases(getattr(sim.decider, part))
    for part in ("ranker", "starts", "easy", "evictions")
    if hasattr(sim.decider, part)
}
listed = "; ".join(f"{part}: {len(names)}" for part, names in parts.items())
print(f"rounds' parts aliases: {sum(map(len, parts.values()))} ({listed})")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="default: this one")
    args = parser.parse_args()
    lines = len((args.checkout / "analysim/engine/simulation.py").read_text().splitlines())
    print(f"{args.checkout}: simulation.py lines: {lines}")
    done = subprocess.run(
        [sys.executable, "-c", MEASURE],
        env={**os.environ, "PYTHONPATH": str(args.checkout)},
        cwd=args.checkout,  # (``-c`` puts the working directory first on the path)
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"engine_structure: the run failed:\n{done.stderr[-2000:]}")
    print(done.stdout, end="")


if __name__ == "__main__":
    main()
