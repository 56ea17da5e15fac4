"""The explorer's workload choices (presets, scenarios, a trace) and what each is made of."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from analysim import presets
from analysim.explorer import layout
from analysim.explorer.inputs import (
    MissingFolderError,
    check_control,
    cost_text,
    looks_like_path,
    name_of,
    scale_load,
    thresholds_text,
)
from analysim.inputs import scenarios
from analysim.inputs.cluster import Cluster
from analysim.inputs.workload import Workload, uses_resources

PRESETS = ("toy", "venus")
"""Workload presets the explorer offers (``large`` is for benchmarks, not for exploring)."""
TRACE = "trace"
SCENARIO = "scenario: "


def read_folder(workload: Any) -> tuple[Any, str | None]:
    """``workload`` as given to ``explore()``, with a trace folder read (its format told from
    its files), and the folder's name (None when it is no folder)."""
    if not isinstance(workload, (str, Path)):
        return workload, None
    text = str(workload)
    if text in PRESETS or text in scenarios.names() or text.startswith(SCENARIO):
        return text, None
    from analysim.traces import read_folder as read_trace_folder
    from analysim.traces.bundled import resolve

    try:
        folder = resolve(workload)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"explore: {exc}") from None
    if folder.is_dir():
        return read_trace_folder(workload), text
    if isinstance(workload, Path) or looks_like_path(text):
        raise MissingFolderError(f"explore: no such folder: {text}")
    raise ValueError(
        f"explore: workload must be one of {list(PRESETS)}, a scenario "
        f"({', '.join(scenarios.names())}), a trace folder, a Trace or a Workload; "
        f"got {text!r}"
    )


def clusters_of(
    workload: str | Workload, cluster: str | Cluster | None
) -> tuple[dict[str, Cluster], str]:
    """The cluster of each workload choice (``cluster``, when given, for the one chosen
    first), and that first choice."""
    if isinstance(cluster, str):
        cluster = presets.cluster(cluster)
    clusters = {name: presets.cluster(name) for name in PRESETS}
    for name in scenarios.names():
        clusters[SCENARIO + name] = scenarios.get(name).cluster()
    if isinstance(workload, Workload):
        if cluster is None:
            raise ValueError("explore: a loaded trace needs the cluster it runs on (cluster=)")
        clusters[TRACE] = cluster
        return clusters, TRACE
    start = SCENARIO + workload if workload in scenarios.names() else workload
    if cluster is not None:
        clusters[start] = cluster
    return clusters, start


def asks_for_shares(trace: Workload | None) -> dict[str, bool]:
    """Which workload choices ask for GPU shares, CPU or memory (resource mode)."""
    shares = {name: False for name in PRESETS}
    for name in scenarios.names():
        shares[SCENARIO + name] = uses_resources(scenarios.get(name).workload().jobs)
    if trace is not None:
        shares[TRACE] = uses_resources(trace.jobs)
    return shares


def choices(trace: Workload | None) -> list[tuple[str, str]]:
    """The workload control's options: the presets, the scenarios, the trace if one is given."""
    options = [(name, name) for name in PRESETS]
    options += [(SCENARIO + name, SCENARIO + name) for name in scenarios.names()]
    if trace is not None:
        options.append((f"trace: {trace.name}", TRACE))
    return options


def scenario_settings(choice: str) -> tuple[dict[str, Any], str]:
    """The control values of the scenario ``choice`` (``"scenario: <name>"``) and the
    lesson shown with it (HTML)."""
    scenario = scenarios.get(choice[len(SCENARIO) :])
    config = scenario.config()
    values = {
        "scheduler": name_of(config.scheduler),
        "placement": name_of(config.placement),
        "preemption": config.preemption,
        "quantum": config.quantum,
        "checkpoint_cost": cost_text(config.checkpoint_cost),
        "migration": config.migration,
        "migration_cost": cost_text(config.migration_cost),
        "borrowing": config.borrowing,
        "backfill": config.backfill,
        "load_scale": 1.0,
        "cluster_size": 1.0,
    }
    las = dict(config.scheduler) if isinstance(config.scheduler, dict) else {}
    values["las_thresholds"] = (
        thresholds_text(las.get("thresholds", [])) or layout.LAS_DEFAULT_HOURS
    )
    factor = las.get("starvation_factor", 4.0)
    values["las_starvation"] = "off" if factor is None else f"{factor:g}"
    off = scenario.off
    flip = (
        f"set the LAS queues to {thresholds_text(off['thresholds'])} GPU-h"
        if isinstance(off, dict)
        else f"set {scenario.lesson} to {off}"
        if not isinstance(off, bool)
        else f"turn {scenario.lesson} {'on' if off else 'off'}"
    )
    lesson = (
        f"<div class='analysim-lesson'><b>Scenario {html.escape(scenario.name)}</b>: "
        f"{html.escape(scenario.description)} <b>Try it</b>: pin this run as the "
        f"baseline, then {html.escape(flip)}; open <i>step through</i> to watch it "
        "event by event.</div>"
    )
    return values, lesson


def workload_of(values: dict[str, Any], trace: Workload | None) -> Workload:
    """The workload the control ``values`` describe, its load scaled."""
    source = values["workload"]
    load = float(values["load_scale"])
    check_control("seed", values["seed"])
    if source == TRACE:
        return scale_load(trace, load)
    if source.startswith(SCENARIO):
        return scale_load(scenarios.get(source[len(SCENARIO) :]).workload(), load)
    days = float(values["days"])
    check_control("days", days)
    return presets.workload(source, seed=values["seed"], load_scale=load, days=days)


def workload_key(values: dict[str, Any]) -> tuple:
    """What the workload of the control ``values`` depends on: runs with different keys are
    never compared."""
    source = values["workload"]
    key: tuple = (source, round(float(values["load_scale"]), 6))
    if source == "venus":
        key += (float(values["days"]), int(values["seed"]))
    return key


def recipe(
    values: dict[str, Any], workload: Workload, config: Any, folder: str | None
) -> dict[str, Any]:
    """What reproduces a run of the control ``values`` (see
    :func:`analysim.explorer.export.python_call`): the workload's source and parameters and
    the ``SimConfig`` as a dict."""
    source = values["workload"]
    out: dict[str, Any] = {
        "load_scale": float(values["load_scale"]),
        "cluster_size": float(values["cluster_size"]),
        "config": config.to_dict(),
    }
    if source in PRESETS:
        out["preset"] = source
        out["seed"] = int(values["seed"])
        out["days"] = float(values["days"])
    elif source.startswith(SCENARIO):
        out["scenario"] = source[len(SCENARIO) :]
    elif folder is not None:
        out["folder"] = folder
    else:
        out["workload"] = workload.name  # a Workload object: not reproducible by name
    return out
