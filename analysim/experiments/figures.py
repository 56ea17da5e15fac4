"""The calls the figure notebooks make to run experiments.

:func:`compare` runs a few configurations on one workload, as ``{label: Result}`` for the plot
functions; :func:`sensitivity` varies one parameter, as a tidy table of summaries;
:func:`conditions` words a figure's conditions; :func:`load_trace` reads a trace folder,
faster or on a scaled cluster. Running the notebooks themselves (``analysim figures``) is
:mod:`analysim.experiments.regenerate`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from analysim.engine.progress import progress_bar

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.inputs.config import SimConfig
    from analysim.inputs.workload import Workload
    from analysim.results.result import Result


# -- running experiments from notebooks -------------------------------------------------------
def real_scheduling(preset: str) -> dict[str, Any]:
    """The :class:`~analysim.inputs.config.SimConfig` fields of the scheduling preset ``preset``'s
    cluster ran (``asim.presets.config``), without its seed: the base a notebook puts its
    varied switch on top of (``compare(..., base=real_scheduling("venus"))``)."""
    from analysim import presets

    fields = presets.config(preset).to_dict()
    fields.pop("seed", None)
    return fields


def _base_fields(base: SimConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    if base is None:
        return {}
    if hasattr(base, "to_dict"):
        fields = base.to_dict()
        fields.pop("seed", None)
        return fields
    return dict(base)


def compare(
    workload: Workload,
    cluster: Cluster,
    arms: Mapping[str, Mapping[str, Any]],
    *,
    base: SimConfig | Mapping[str, Any] | None = None,
    progress: bool = True,
    **common: Any,
) -> dict[str, Result]:
    """Run ``workload`` on ``cluster`` once per arm: ``{label: SimConfig fields}``, each
    merged over ``common``, merged over ``base`` (a SimConfig or its fields, e.g.
    :func:`real_scheduling`; a SimConfig's seed is dropped); return ``{label: Result}`` in
    the arms' order."""
    from analysim.simulate import simulate

    if not arms:
        raise ValueError("compare: no arms to run")
    start = _base_fields(base)
    results = {}
    for label, options in progress_bar(
        arms.items(), desc="runs", disable=not progress, leave=False
    ):
        results[str(label)] = simulate(workload, cluster, **{**start, **common, **options})
    return results


def preemption_arms(migration: bool = True) -> dict[str, dict[str, Any]]:
    """The arms of a preemption study for :func:`compare`: ``no preemption``,
    ``preemption`` and, with ``migration``, ``preemption + migration``."""
    arms: dict[str, dict[str, Any]] = {
        "no preemption": {"preemption": False},
        "preemption": {"preemption": True},
    }
    if migration:
        arms["preemption + migration"] = {"preemption": True, "migration": True}
    return arms


def queue_window(results: Mapping[str, Result], margin: float = 1.5) -> float | None:
    """Seconds from 0 to the last timeline sample at which any run had jobs waiting, times
    ``margin``, capped at the longest run: the part of a replay worth plotting when a few
    long jobs run on for weeks after the queue has emptied. None if no job ever waited."""
    last, end = 0.0, 0.0
    for result in results.values():
        rows = result.timeline[result.timeline["vc"] == "(all)"]
        waiting = rows.loc[rows["waiting_jobs"] > 0, "time"]
        if len(waiting):
            last = max(last, float(waiting.max()))
        end = max(end, float(rows["time"].max()) if len(rows) else 0.0)
    return min(last * margin, end) if last > 0 else None


def span_text(results: Mapping[str, Result], until: float | None) -> str:
    """How much of the runs a timeline cut at ``until`` seconds shows, for its title: ``"the
    first 35 h of a 145-day run"``, or ``"the whole run"``."""
    from analysim.results.readable import readable_unit

    end = max(float(r.meta.get("now", r.timeline["time"].max())) for r in results.values())
    if until is None or until >= end:
        return "the whole run"
    unit, size = readable_unit(until)
    whole, whole_size = readable_unit(end)
    return (
        f"the first {until / size:,.3g} {unit} of a {end / whole_size:,.0f}-{whole.rstrip('s')} run"
    )


def conditions(workload: str, **settings: Any) -> str:
    """A figure title's statement of the conditions a result holds under:
    ``conditions("venus", days=26, load_scale=1.0, seed=0)`` is
    ``"venus, 26 days, load x1, seed 0"``; seeds (a list) read ``"seeds 0-2"``."""
    words = {"days": "{:g} days", "load_scale": "load x{:g}", "seed": "seed {}"}
    parts = [str(workload)]
    for name, value in settings.items():
        if name == "seeds":
            seeds = list(value)
            parts.append(f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}")
        elif name in words:
            parts.append(words[name].format(value))
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts)


def sensitivity(
    workload: Workload | Callable[[int], Workload],
    cluster: Cluster,
    parameter: str,
    values: Sequence[Any],
    *,
    seeds: Sequence[int] = (0,),
    base: SimConfig | Mapping[str, Any] | None = None,
    progress: bool = True,
    **common: Any,
) -> pd.DataFrame:
    """Summaries of runs with ``parameter`` set to each of ``values`` (and each seed): one row
    per run, columns ``parameter, seed`` and the summary metrics. Every run's configuration
    is ``base`` (as in :func:`compare`), then ``common``, then the seed and ``parameter``.

    ``workload`` may be a function of the seed, so each seed also draws its own workload
    (called once per seed, not once per run).
    """
    from analysim.simulate import simulate

    start = _base_fields(base)
    rows = []
    runs = [(value, seed) for value in values for seed in seeds]
    traces = {seed: workload(seed) if callable(workload) else workload for seed in seeds}
    for value, seed in progress_bar(runs, desc=parameter, disable=not progress, leave=False):
        trace = traces[seed]
        options = {**start, **common, "seed": seed, parameter: value}
        summary = simulate(trace, cluster, **options).summary()
        rows.append({parameter: value, "seed": seed, **summary.to_dict()})
    return pd.DataFrame(rows)


def load_trace(
    path: str | Path,
    trace_format: str = "openb",
    *,
    speedup: float = 1.0,
    cluster_size: float = 1.0,
) -> Any:
    """Read a trace folder (``openb``: the pod and node lists; ``helios``: a cluster folder;
    ``philly``: ``trace-data``; ``pai``; see :func:`analysim.traces.read_folder`) into an
    :class:`analysim.traces.Trace`, its submit times divided by ``speedup`` (arrivals come
    that many times faster, run times unchanged: a way to load a big cluster with a sampled
    trace) and its cluster scaled by ``cluster_size``
    (:func:`analysim.inputs.scaling.scale_cluster`: 0.1 keeps the first tenth of the nodes of each
    VC and of the pool)."""
    import dataclasses

    from analysim import traces
    from analysim.inputs.scaling import scale_cluster
    from analysim.inputs.workload import Workload

    for name, value in (("speedup", speedup), ("cluster_size", cluster_size)):
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0):
            raise ValueError(f"{name} must be a number > 0, got {value!r}")
    folder = traces.bundled.resolve(path)
    trace = traces.read_folder(folder, trace_format)
    if trace.cluster is None:
        raise ValueError(f"the {trace_format} trace at {folder} defines no cluster")
    if speedup != 1:
        jobs = trace.workload.jobs
        faster = jobs.assign(submit_time=jobs["submit_time"] / speedup)
        workload = Workload.from_frame(faster, name=f"{trace.workload.name} x{speedup:g}")
        trace = dataclasses.replace(trace, workload=workload)
    if cluster_size != 1:
        trace = dataclasses.replace(trace, cluster=scale_cluster(trace.cluster, cluster_size))
    return trace
