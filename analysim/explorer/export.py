"""Export what the explorer shows: figures (PNG, SVG), the summary (CSV), and the run's
configuration as the Python call or JSON that reproduces it."""

from __future__ import annotations

import base64
import html
import json
import pprint
from pathlib import Path
from typing import Any

import pandas as pd

from analysim.explorer.render import image
from analysim.explorer.units import METRICS

MIME = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".csv": "text/csv",
    ".py": "text/x-python",
    ".json": "application/json",
}
RAW_UNITS = {
    "time": "s",
    "fraction": "fraction",
    "gpu_hours": "GPU-h",
    "gpus": "GPUs",
    "milli": "GPU milli",
    "count": "count",
    "ratio": "ratio",
}


def summary_csv(table: pd.DataFrame) -> str:
    """The summary table as CSV: one row per metric, its unit (seconds for times, fractions
    for shares: the values are not rounded or converted) and one column per run."""
    frame = table.copy()
    frame.insert(0, "unit", [RAW_UNITS.get(METRICS.get(str(m), ("",))[0], "") for m in frame.index])
    frame.index.name = "metric"
    return frame.to_csv(float_format="%.10g")


def python_call(recipe: dict[str, Any]) -> str:
    """A script that reproduces the run from ``recipe``
    (:func:`~analysim.explorer.sources.recipe`)."""
    lines = ["import analysim as asim", ""]
    load = recipe["load_scale"]
    if "preset" in recipe:
        name = recipe["preset"]
        lines.append(
            f"workload = asim.presets.workload({name!r}, seed={recipe['seed']}, "
            f"load_scale={load!r}, days={recipe['days']!r})"
        )
        lines.append(f"cluster = asim.presets.cluster({name!r})")
    elif "scenario" in recipe:
        lines[0:0] = ["from analysim.inputs import scenarios"]
        lines.append(f"scenario = scenarios.get({recipe['scenario']!r})")
        lines.append("workload, cluster = scenario.workload(), scenario.cluster()")
        if load != 1:
            lines[0:0] = ["from analysim.explorer.inputs import scale_load"]
            lines.append(f"workload = scale_load(workload, {load!r})")
    elif "folder" in recipe:
        lines[0:0] = ["from analysim.explorer.inputs import scale_load"]
        lines.append(f"trace = asim.traces.read_folder({recipe['folder']!r})")
        lines.append(f"workload, cluster = scale_load(trace.workload, {load!r}), trace.cluster")
    else:
        lines.append(
            f"workload, cluster = ..., ...  # the Workload {recipe['workload']!r} and Cluster "
            "given to explore()"
        )
    if recipe["cluster_size"] != 1:
        lines[0:0] = ["from analysim.explorer.inputs import scale_cluster"]
        lines.append(f"cluster = scale_cluster(cluster, {recipe['cluster_size']!r})")
    config = pprint.pformat(recipe["config"], indent=4, width=88, sort_dicts=False)
    lines += [f"config = {config}", "result = asim.simulate(workload, cluster, config)"]
    lines.append("print(result.summary())")
    return "\n".join(sorted_imports(lines)) + "\n"


def sorted_imports(lines: list[str]) -> list[str]:
    imports = sorted({line for line in lines if line.startswith(("import ", "from "))})
    return [*imports, *[line for line in lines if not line.startswith(("import ", "from "))]]


def config_json(recipe: dict[str, Any]) -> str:
    """The recipe as JSON: the workload's source and parameters and the ``SimConfig``."""
    return json.dumps(recipe, indent=2, sort_keys=True) + "\n"


def write(
    folder: Path,
    figures: dict[str, Any],
    summary: pd.DataFrame,
    python: str,
    config: str,
) -> dict[str, Path]:
    """Write the figures (PNG and SVG), ``summary.csv``, ``run.py`` and ``config.json``
    into ``folder`` (created); returns the paths by file name."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for name, fig in figures.items():
        for fmt in ("png", "svg"):
            path = folder / f"{name}.{fmt}"
            path.write_bytes(image(fig, fmt))
            files[path.name] = path
    for name, text in (
        ("summary.csv", summary_csv(summary)),
        ("run.py", python),
        ("config.json", config),
    ):
        path = folder / name
        path.write_text(text, encoding="utf-8")
        files[name] = path
    return files


def links_html(files: dict[str, Path]) -> str:
    """Download links (the files' bytes inline) and where the files were written."""
    links = []
    for name, path in files.items():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        mime = MIME.get(path.suffix, "application/octet-stream")
        links.append(
            f"<a class='analysim-download' download='{html.escape(name, quote=True)}' "
            f"href='data:{mime};base64,{data}'>{html.escape(name)}</a>"
        )
    folder = next(iter(files.values())).parent if files else Path()
    return (
        f"<div>Exported to <code>{html.escape(str(folder))}</code>: " + " · ".join(links) + "</div>"
    )
