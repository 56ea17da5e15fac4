"""Build ``analysim/data/pollux/applications.csv`` from the Pollux (OSDI'21) artifact.

The artifact is the ``osdi21-artifact`` branch of petuum/adaptdl (Apache-2.0). For each of
its six applications, ``simulator/traces/<app>/placements.csv`` gives the measured step and
sync times of a training step per placement (GPUs per node, e.g. ``22`` = 2 GPUs on each of
2 nodes) and local batch size; ``scalability.csv`` the same for (nodes, replicas) beyond 4
nodes. This script keeps one throughput (samples per second) per GPU count and nodes
spanned, at the batch size a job has before Pollux adapts it: the application's smallest
validated batch size, raised to its smallest local batch size times the GPUs
(``max(init, min_local_bsz * gpus)``, the artifact's rule for a job not yet profiled), split
into gradient-accumulation steps when the local batch exceeds the largest measured one. The
step time at that local batch is interpolated linearly between the measured ones of the
placement; the placements with the same GPU count and node count are averaged.

Usage (the snapshot is a bare git directory)::

    python tools/pollux_applications.py GIT_DIR > analysim/data/pollux/applications.csv
"""

from __future__ import annotations

import io
import math
import subprocess
import sys

import numpy as np
import pandas as pd

BRANCH = "osdi21-artifact"
APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
#: the artifact's own override of the largest local batch size (``applications.py``)
MAX_LOCAL = {"yolov3": 8}


def _read(git_dir: str, path: str) -> pd.DataFrame:
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{BRANCH}:simulator/{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return pd.read_csv(io.StringIO(text))


def _batch_sizes(git_dir: str, app: str) -> list[int]:
    names = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "--name-only", BRANCH, f"simulator/traces/{app}/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return sorted(int(n.rsplit("-", 1)[1].split(".")[0]) for n in names if "validation-" in n)


def _step(rows: pd.DataFrame, gpus: int, batch: int, max_local: int) -> tuple[float, int] | None:
    """Samples per second of one placement at ``batch``, and the batch; None when the local
    batch lies outside the measured ones."""
    local = math.ceil(batch / gpus - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    sizes = rows["local_bsz"].to_numpy(dtype=float)
    if not sizes.min() <= atomic <= sizes.max():
        return None
    order = np.argsort(sizes)
    step = float(np.interp(atomic, sizes[order], rows["step_time"].to_numpy()[order]))
    sync = float(np.interp(atomic, sizes[order], rows["sync_time"].to_numpy()[order]))
    total = step + (step - sync) * accum
    samples = gpus * atomic * (accum + 1)
    return samples / total, samples


def application_table(git_dir: str, app: str) -> pd.DataFrame:
    placements = _read(git_dir, f"traces/{app}/placements.csv")
    scalability = _read(git_dir, f"traces/{app}/scalability.csv")
    init, largest = _batch_sizes(git_dir, app)[0], _batch_sizes(git_dir, app)[-1]
    min_local = int(placements["local_bsz"].min())
    max_local = MAX_LOCAL.get(app, int(placements["local_bsz"].max()))
    placements["placement"] = placements["placement"].astype(str)
    placements["nodes"] = placements["placement"].str.len()
    placements["gpus"] = placements["placement"].map(lambda p: sum(map(int, p)))
    scalability = scalability.rename(columns={"num_nodes": "nodes", "num_replicas": "gpus"})
    scalability["placement"] = scalability["nodes"].astype(str) + "x"
    rows = []
    for source, frame in (("placements", placements), ("scalability", scalability)):
        for (placement, gpus, nodes), measured in frame.groupby(["placement", "gpus", "nodes"]):
            batch = max(init, min_local * int(gpus))
            if batch > largest:
                continue
            got = _step(measured, int(gpus), batch, max_local)
            if got is not None:
                rows.append((source, placement, int(gpus), int(nodes), got[1], got[0]))
    table = pd.DataFrame(
        rows, columns=["source", "placement", "gpus", "nodes", "batch_size", "throughput"]
    )
    # a (gpus, nodes) measured among the placements is not taken from the scalability runs
    packed = table[table.source == "placements"]
    measured = set(zip(packed.gpus, packed.nodes, strict=True))
    extra = [(g, n) not in measured for g, n in zip(table.gpus, table.nodes, strict=True)]
    table = table[(table.source == "placements") | np.array(extra)]
    out = table.groupby(["gpus", "nodes"], as_index=False).agg(
        batch_size=("batch_size", "first"),
        throughput=("throughput", "mean"),
        source=("source", "first"),
    )
    out.insert(0, "application", app)
    return out


def main(git_dir: str) -> None:
    table = pd.concat([application_table(git_dir, app) for app in APPS], ignore_index=True)
    table["throughput"] = table["throughput"].round(6)
    table.to_csv(sys.stdout, index=False, lineterminator="\n")


if __name__ == "__main__":
    main(sys.argv[1])
