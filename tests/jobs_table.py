"""A tiny helper the hand-worked scenario tests share: a workload from short rows."""

from __future__ import annotations

import pandas as pd

import analysim as asim


def make_jobs(rows: list[tuple]) -> asim.Workload:
    """Rows of (job_id, vc, submit_time, duration, num_gpus); every job's user is ``u``."""
    frame = pd.DataFrame(rows, columns=["job_id", "vc", "submit_time", "duration", "num_gpus"])
    frame["user"] = "u"
    return asim.Workload.from_frame(frame)
