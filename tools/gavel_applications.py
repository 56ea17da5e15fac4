"""Build ``analysim/data/gavel/applications.csv`` from Gavel's (OSDI'20) throughput table.

Gavel (stanford-futuredata/gavel, MIT) measured the throughput (training steps per second)
of its 26 job types on V100, P100 and K80 GPUs, alone and co-located with each other job
type, at 1, 2, 4 and 8 GPUs (the "scale factor"), with the GPUs on one server
("consolidated", worker types ``v100``, ``p100``, ``k80``) and spread over servers
("unconsolidated", ``v100_unconsolidated``, ...). ``scheduler/simulation_throughputs.json``
maps worker type -> ``"(job type, scale factor)"`` -> co-located job (``"null"``: alone)
-> steps per second. This script keeps the single-job throughputs (key ``"null"``), one
row per job type, GPU type, GPU count and consolidation; it copies no other data.

Usage (the snapshot is a bare git directory)::

    python tools/gavel_applications.py GIT_DIR > analysim/data/gavel/applications.csv
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pandas as pd

COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
PATH = "scheduler/simulation_throughputs.json"
GPU_TYPES = ("v100", "p100", "k80")


def rows(throughputs: dict) -> pd.DataFrame:
    """One row per (job type, GPU type, GPU count, consolidated): the throughput alone."""
    out = []
    for gpu_type in GPU_TYPES:
        for consolidated, worker in ((True, gpu_type), (False, f"{gpu_type}_unconsolidated")):
            for key, colocated in throughputs[worker].items():
                if key == "null":  # the worker type's own entry, not a job type
                    continue
                job_type, gpus = ast.literal_eval(key)
                out.append((job_type, gpu_type, int(gpus), consolidated, colocated["null"]))
    table = pd.DataFrame(
        out, columns=["job_type", "gpu_type", "gpus", "consolidated", "throughput"]
    )
    order = ["job_type", "gpu_type", "gpus", "consolidated"]
    return table.sort_values(order, ascending=[True, True, True, False]).reset_index(drop=True)


def main(git_dir: str) -> None:
    text = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{COMMIT}:{PATH}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows(json.loads(text)).to_csv(sys.stdout, index=False)


if __name__ == "__main__":
    main(sys.argv[1])
