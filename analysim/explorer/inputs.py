"""What the explorer's controls and ``explore()`` arguments mean: checked, never clamped."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.domains import build_partition
from analysim.inputs.scaling import scale_cluster, scale_load
from analysim.inputs.validation import MAX_SEED
from analysim.inputs.workload import Workload

DEFAULT_DAYS = 7.0
"""Days of the ``venus`` workload the explorer simulates by default (a month takes longer)."""
MAX_DAYS = 400.0
LOAD_STEPS = (
    0.05, 0.1, 0.2, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0
)  # fmt: skip
"""The load scales the slider stops at: readable values, 1 (the trace as recorded) among them,
so the slider can always return to exactly 1."""
LOAD_RANGE = (LOAD_STEPS[0], LOAD_STEPS[-1])
"""Load scales the control offers: from a sparse trace to a queue that never empties (the
bundled openb trace queues at 200x on a tenth of its cluster)."""
CLUSTER_STEPS = (0.05, 0.1, 0.2, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
"""The cluster sizes the slider stops at (1: the workload's own cluster)."""
CLUSTER_RANGE = (CLUSTER_STEPS[0], CLUSTER_STEPS[-1])
"""Cluster sizes the control offers, as factors of the workload's own cluster."""
SEED_RANGE = (0, MAX_SEED)
"""Seeds the seed control takes (as ``SimConfig.seed``)."""


__all__ = [
    "ExploreArgumentError",
    "MissingFolderError",
    "check_control",
    "check_explore_args",
    "check_export_folder",
    "cost_text",
    "looks_like_path",
    "name_of",
    "newly_unschedulable",
    "parse_cost",
    "parse_thresholds",
    "thresholds_text",
    "scale_cluster",  # from analysim.inputs.scaling, where it lives
    "scale_load",
]


class ExploreArgumentError(ValueError):
    """A bad argument to ``explore()``; its message is one line naming the argument."""


class MissingFolderError(ExploreArgumentError, FileNotFoundError):
    """``explore()`` was given the path of a trace folder that does not exist."""


def check_explore_args(
    workload: Any, cluster: Any, days: Any, config: Any, debounce: Any, sync: Any, run: Any
) -> None:
    """Refuse (never clamp) arguments ``explore()`` cannot use, with a one-line reason."""
    for name, value, call in (("workload", workload, "Workload"), ("cluster", cluster, "Cluster")):
        if isinstance(value, pd.DataFrame):
            raise ExploreArgumentError(
                f"explore: {name} is a DataFrame: use asim.{call}.from_frame(df)"
            )
    if not isinstance(workload, (str, Path, Workload)) and not hasattr(workload, "workload"):
        raise ExploreArgumentError(
            "explore: workload must be a preset or scenario name, a trace folder, a Trace or a "
            f"Workload, got {type(workload).__name__}"
        )
    if cluster is not None and not isinstance(cluster, (str, Cluster)):
        raise ExploreArgumentError(
            f"explore: cluster must be a preset name or a Cluster, got {type(cluster).__name__}"
        )
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise ExploreArgumentError(f"explore: days must be a number of days, got {days!r}")
    if not (math.isfinite(days) and 0 < days <= MAX_DAYS):
        raise ExploreArgumentError(f"explore: days must be > 0 and <= {MAX_DAYS:g}, got {days!r}")
    if config is not None and not isinstance(config, (SimConfig, dict)):
        raise ExploreArgumentError(
            f"explore: config must be a SimConfig or a dict of its fields, got "
            f"{type(config).__name__}"
        )
    if isinstance(debounce, bool) or not isinstance(debounce, (int, float)):
        raise ExploreArgumentError(f"explore: debounce must be seconds, got {debounce!r}")
    if not (math.isfinite(debounce) and 0 <= debounce <= 60):
        raise ExploreArgumentError(
            f"explore: debounce must be between 0 and 60 seconds, got {debounce!r}"
        )
    for name, value in (("sync", sync), ("run", run)):
        if not isinstance(value, bool):
            raise ExploreArgumentError(f"explore: {name} must be True or False, got {value!r}")


def check_export_folder(folder: Any, name: str) -> Path:
    """``folder`` as a Path, refused (naming ``name`` and the path) unless it is text or a
    path and not a file."""
    if isinstance(folder, bool) or not isinstance(folder, (str, Path)):
        raise ExploreArgumentError(
            f"explore: {name} must be a folder path (text or a Path), got {folder!r} "
            f"({type(folder).__name__})"
        )
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise ExploreArgumentError(f"explore: {name} {str(path)!r} is a file; give a folder")
    return path


def check_export_target(folder: Path, name: str) -> None:
    """Before an export writes: ``folder`` can be created and written to (a ValueError naming
    ``name`` and the path otherwise, not a raw OSError)."""
    from analysim.inputs.validation import writable_output

    try:
        writable_output(folder, f"explore: {name}", folder=True)
    except ValueError as error:
        raise ExploreArgumentError(str(error)) from None


def check_control(name: str, value: Any) -> None:
    """Refuse (never clamp) a value typed into the ``days`` or ``seed`` control, naming the
    control and the range it takes."""
    if name == "days":
        if not (math.isfinite(float(value)) and 0 < float(value) <= MAX_DAYS):
            raise ValueError(f"days must be > 0 and <= {MAX_DAYS:g}, got {value:g}")
    elif name == "seed":
        low, high = SEED_RANGE
        if not (float(value).is_integer() and low <= int(value) <= high):
            raise ValueError(f"seed must be a whole number from {low} to 2**63 - 1, got {value}")
    else:
        raise KeyError(f"check_control: no range for the control {name!r}")


def looks_like_path(text: str) -> bool:
    """Whether a workload string names a folder rather than a preset."""
    return text.startswith(("bundled:", ".", "~")) or "/" in text or "\\" in text


def parse_cost(text: str, what: str) -> Any:
    """A cost model from a control's text: a number of seconds, a model name, or JSON."""
    value = str(text).strip()
    if value in ("", "size_scaled"):
        return {"name": "size_scaled"}
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"{what} must be a number of seconds >= 0, got {value}")
        return {"name": "constant", "seconds": seconds}
    if value.startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what}: not valid JSON ({exc.msg}): {value}") from None
    return {"name": value}


def cost_text(spec: Any) -> str:
    """The control's text for a cost spec (the inverse of :func:`parse_cost`)."""
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return f"{spec:g}"
    if isinstance(spec, dict) and spec.get("name") == "constant":
        return f"{spec.get('seconds', 0):g}"
    if isinstance(spec, dict) and set(spec) == {"name"}:
        return str(spec["name"])
    return json.dumps(spec) if isinstance(spec, dict) else str(spec)


GPU_SECONDS_PER_GPU_HOUR = 3600.0
"""The explorer shows LAS's thresholds in GPU-hours; the API takes GPU-seconds. Every
conversion between the two goes through :func:`parse_thresholds` and
:func:`thresholds_text`."""


def thresholds_text(seconds: Any) -> str:
    """LAS's thresholds (GPU-seconds, as the API takes them) as the control shows them:
    GPU-hours, comma-separated (``[1800, 7200]`` → ``"0.5, 2"``)."""
    return ", ".join(f"{float(t) / GPU_SECONDS_PER_GPU_HOUR:g}" for t in seconds)


def parse_thresholds(text: str) -> list[float]:
    """LAS's queue thresholds from a control's text, GPU-hours comma-separated (``5, 20``),
    as the GPU-seconds the API takes (``[18000.0, 72000.0]``)."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise ValueError("LAS thresholds: give at least one number of GPU-hours, e.g. 5")
    try:
        hours = [float(p) for p in parts]
    except ValueError:
        raise ValueError(
            f"LAS thresholds must be GPU-hours separated by commas, got {text!r}"
        ) from None
    if any(not math.isfinite(h) or h <= 0 for h in hours) or hours != sorted(set(hours)):
        raise ValueError(f"LAS thresholds must be increasing and > 0 GPU-hours, got {text!r}")
    return [h * GPU_SECONDS_PER_GPU_HOUR for h in hours]


def name_of(spec: Any) -> str:
    """A policy spec's name (``"las"`` for ``{"name": "las", ...}``)."""
    return spec if isinstance(spec, str) else dict(spec).get("name", str(spec))


def newly_unschedulable(workload: Workload, base: Cluster, scaled: Cluster) -> str | None:
    """A message if jobs that fit on ``base`` could never run on ``scaled``, else None."""
    if scaled is base:
        return None

    def too_big(cluster: Cluster) -> tuple[np.ndarray, Any, np.ndarray]:
        part = build_partition(workload.jobs, cluster)
        most = np.array([d.max_gpus for d in part.domains], dtype=np.int64)
        return workload.jobs["num_gpus"].to_numpy() > most[part.job_domain], part, most

    before, _, _ = too_big(base)
    after, part, most = too_big(scaled)
    new = np.flatnonzero(after & ~before)
    if not len(new):
        return None
    jobs = workload.jobs
    largest = new[np.argmax(jobs["num_gpus"].to_numpy()[new])]
    vc = part.vc_names[part.job_vc[largest]]
    cap = int(most[part.job_domain[largest]])
    return (
        f"the cluster is too small for this workload: job {jobs['job_id'].iloc[largest]} asks "
        f"for {int(jobs['num_gpus'].iloc[largest])} GPUs but VC {vc} can get at most {cap} on "
        f"{scaled.total_gpus} GPUs; {len(new)} job(s) could never run. Choose a larger "
        f"cluster size."
    )
