"""The explorer app: controls, a debounced run, comparisons, the cluster at a moment, export."""

from __future__ import annotations

import html
import logging
import math
import threading
import time as clock
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from analysim.engine import Simulation
from analysim.errors import PolicyError
from analysim.explorer import compare, export, layout, render, sources
from analysim.explorer.inputs import (
    DEFAULT_DAYS,
    check_explore_args,
    check_export_folder,
    check_export_target,
    name_of,
    newly_unschedulable,
    parse_cost,
    parse_thresholds,
    scale_cluster,
)
from analysim.explorer.moment import MomentView, run_guarded
from analysim.explorer.sources import PRESETS as PRESETS
from analysim.explorer.sources import SCENARIO
from analysim.explorer.stepper import STEPPER_MAX_GPUS, Stepper
from analysim.explorer.units import KEY_METRICS, summary_html
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload

if TYPE_CHECKING:
    from analysim.results.result import Result

logger = logging.getLogger(__name__)

CHUNKS = 20  # a run is simulated in this many slices, to move the progress bar
USER_ERRORS = (ValueError, TypeError, KeyError, PolicyError)

__all__ = ["Explorer"]


class Explorer:
    """The explorer app. ``controls``: the input widgets by name; ``outputs``: the output
    widgets by name; ``buttons``: pin, keep, clear, export; ``result`` / ``previous``: the
    latest and the one before; ``baseline`` and ``kept``: the pinned and kept runs
    (:class:`~analysim.explorer.compare.Run`); ``message``: the last error or warning (empty
    if none); ``note``: the comparison's note. Display it in a notebook cell."""

    def __init__(
        self,
        workload: str | Path | Workload | Any = "venus",
        cluster: str | Cluster | None = None,
        *,
        days: float = DEFAULT_DAYS,
        config: SimConfig | dict[str, Any] | None = None,
        sync: bool = False,
        debounce: float = 0.4,
        run: bool = True,
        export_dir: str | Path = "analysim-export",
    ) -> None:
        check_explore_args(workload, cluster, days, config, debounce, sync, run)
        self.sync, self.debounce = sync, float(debounce)
        self.export_dir = check_export_folder(export_dir, "export_dir")
        workload, self._folder = sources.read_folder(workload)
        if not isinstance(workload, (str, Workload)) and hasattr(workload, "workload"):
            # a trace reader's Trace: its workload, and its cluster unless one is given
            cluster = cluster if cluster is not None else workload.cluster
            workload = workload.workload
        self._clusters, start = sources.clusters_of(workload, cluster)
        self._trace = workload if isinstance(workload, Workload) else None
        if isinstance(config, dict):
            config = SimConfig.from_dict(config)
        self.config = config or SimConfig()
        self.result: Result | None = None
        self.previous: Result | None = None
        self.cluster: Cluster | None = None
        self.current: compare.Run | None = None
        self.last: compare.Run | None = None
        self.baseline: compare.Run | None = None
        self.kept: list[compare.Run] = []
        self.runs = 0
        self.message = ""
        self.note = ""
        self.summary: pd.DataFrame | None = None
        self.exported: dict[str, Path] = {}
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._holding = False
        options = sources.choices(self._trace)
        self._shares = sources.asks_for_shares(self._trace)
        placers = layout.placer_options(
            self._shares.get(start, False), name_of(self.config.placement)
        )
        self.controls = layout.make_controls(self.config, options, start, days, placers)
        self.outputs = layout.make_outputs()
        self.buttons = self._make_buttons()
        self.stepper = Stepper()
        self.widget, self._overlay, self._steps = layout.arrange(
            self.controls, self.outputs, self.buttons, self.stepper.widget
        )
        for control in self.controls.values():
            control.observe(self._on_control, names="value")
        self.moment = MomentView(self.outputs, self._overlay, self._lock)
        if start.startswith(SCENARIO):
            self._apply_scenario(start)
        self._enable()
        if run:
            self.run_now()

    # -- widgets ------------------------------------------------------------------------------
    def _make_buttons(self) -> dict[str, widgets.Widget]:
        buttons = {
            "pin": widgets.Button(description="pin as baseline", icon="thumb-tack"),
            "keep": widgets.Button(description="keep this run", icon="plus"),
            "clear": widgets.Button(description="clear comparison", icon="times"),
            "export": widgets.Button(description="export", icon="download"),
        }
        for name, button in buttons.items():
            button.add_class(f"analysim-{name}")
            button.layout = widgets.Layout(width="auto")
        buttons["all_metrics"] = layout.tag(
            widgets.Checkbox(
                value=False,
                description="all metrics",
                indent=False,
                layout=widgets.Layout(width="auto"),
            ),
            "all-metrics",
        )
        buttons["all_metrics"].observe(lambda _: self._guarded(self._show_summary), names="value")
        buttons["name"] = layout.tag(
            widgets.Text(placeholder="name (optional)", layout=widgets.Layout(width="180px")),
            "keep-name",
        )
        buttons["pin"].on_click(lambda _: self._guarded(self.pin))
        buttons["keep"].on_click(lambda _: self._guarded(lambda: self.keep(buttons["name"].value)))
        buttons["clear"].on_click(lambda _: self._guarded(self.clear))
        buttons["export"].on_click(lambda _: self._guarded(self.export))
        return buttons

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # -- reacting to changes ------------------------------------------------------------------
    def _on_control(self, change: dict[str, Any]) -> None:
        if self._holding:
            return
        if change["owner"] is self.controls["workload"] and change["new"].startswith(SCENARIO):
            self._apply_scenario(change["new"])
        self._enable()
        self.request_run()

    def _apply_scenario(self, choice: str) -> None:
        """Set the controls to the scenario's settings (one run follows, not one per control)."""
        values, lesson = sources.scenario_settings(choice)
        self._set_controls(values)
        self.outputs["lesson"].value = lesson

    def _set_controls(self, values: dict[str, Any]) -> None:
        self._holding = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False

    def _enable(self) -> None:
        """Disable the controls that do nothing for the chosen workload and settings."""
        v = {name: control.value for name, control in self.controls.items()}
        base = self._clusters[v["workload"]]
        las = v["scheduler"] == "las"
        off = {
            "days": v["workload"] != "venus",
            "seed": v["workload"] not in ("venus",) and not v["placement"] == "random",
            "las_thresholds": not las,
            "las_starvation": not las,
            "checkpoint_cost": not (v["preemption"] or v["borrowing"]),
            "migration_cost": not v["migration"],
            # borrowing needs VCs that own nodes or have quotas
            "borrowing": not (base.vcs or base.quotas),
        }
        for name, disabled in off.items():
            self.controls[name].disabled = disabled
        self._offer_placers(v["workload"])
        if not v["workload"].startswith(SCENARIO):
            self.outputs["lesson"].value = ""

    def _offer_placers(self, source: str) -> None:
        """The placement list for ``source``: the FGD study's placers too when it asks for
        shares, CPU or memory, or when the config given to ``explore()`` names one (a placer
        no longer offered falls back to ``consolidate``); the control's tooltip, and the
        line saying what the chosen placer does."""
        placement = self.controls["placement"]
        offered = self._shares.get(source, False)
        names = layout.placer_options(offered, name_of(self.config.placement))
        if list(placement.options) != names:
            self._holding = True  # the run this change asks for follows; not one more
            try:
                keep = placement.value if placement.value in names else "consolidate"
                placement.options = names
                placement.value = keep
            finally:
                self._holding = False
        placement.tooltip = layout.placer_tooltip(placement.value)
        help_ = self.outputs["placer_help"]
        offered = any(n in layout.SHARE_PLACERS for n in names)
        help_.layout.display = "" if offered else "none"
        help_.value = (
            f"<b>placement {html.escape(placement.value)}</b>: "
            f"{html.escape(layout.PLACER_HELP.get(placement.value, ''))}. "
            "<i>fgd, best_fit, dot_product, gpu_packing, gpu_clustering</i> are the placers "
            "of the FGD study (GPU shares, CPU and memory; they run the engine in resource "
            "mode). On the heatmap a shared GPU is filled to its milli in use."
            if offered
            else ""
        )

    def request_run(self) -> None:
        """Run soon: at once with ``sync``, else after ``debounce`` seconds without changes."""
        if self.sync:
            self.run_now()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self.debounce, self._run_latest)
        self._timer.daemon = True
        self._timer.start()

    def _run_latest(self) -> None:
        """The debounced run. A change made while a run is going on has started a timer of
        its own, which waits for that run to end (``run_now`` holds a lock) and runs again."""
        self.run_now()

    def wait(self, timeout: float = 60.0) -> None:
        """Block until a pending debounced run has finished (for scripts and tests)."""
        deadline = clock.monotonic() + timeout
        timer = self._timer
        if timer is not None:
            timer.join(max(0.0, deadline - clock.monotonic()))
        if self._lock.acquire(timeout=max(0.0, deadline - clock.monotonic())):
            self._lock.release()

    # -- running ------------------------------------------------------------------------------
    def workload_key(self) -> tuple:
        """What the workload depends on: runs with different keys are never compared."""
        return sources.workload_key({name: c.value for name, c in self.controls.items()})

    def scheduler_spec(self) -> Any:
        """The scheduler the controls describe: its name, or LAS with its parameters."""
        name = self.controls["scheduler"].value
        if name != "las":
            return name
        hours = str(self.controls["las_thresholds"].value).strip()
        starving = str(self.controls["las_starvation"].value).strip().lower()
        if hours == layout.LAS_DEFAULT_HOURS and starving == layout.LAS_DEFAULT_STARVATION:
            return "las"  # LAS's own defaults: the same spec as before these controls
        if starving in ("off", "none", ""):
            factor = None
        else:
            try:
                factor = float(starving)
            except ValueError:
                raise ValueError(
                    f"LAS starvation must be a number > 0 or 'off', got {starving!r}"
                ) from None
            if not (math.isfinite(factor) and factor > 0):
                raise ValueError(f"LAS starvation must be a number > 0 or 'off', got {starving!r}")
        return {"name": "las", "thresholds": parse_thresholds(hours), "starvation_factor": factor}

    def inputs(self) -> tuple[Workload, Cluster, SimConfig]:
        """The workload, cluster and config the controls describe (``ValueError`` if they are
        not a valid combination)."""
        v = {name: control.value for name, control in self.controls.items()}
        base = self._clusters[v["workload"]]
        workload = sources.workload_of(v, self._trace)
        cluster = scale_cluster(base, float(v["cluster_size"]))
        problem = newly_unschedulable(workload, base, cluster)
        if problem:
            raise ValueError(problem)
        config = self.config.replace(
            scheduler=self.scheduler_spec(),
            placement=v["placement"],
            preemption=bool(v["preemption"]),
            quantum=float(v["quantum"]),
            checkpoint_cost=parse_cost(v["checkpoint_cost"], "checkpoint cost"),
            migration=bool(v["migration"]),
            migration_cost=parse_cost(v["migration_cost"], "migration cost"),
            borrowing=bool(v["borrowing"]),
            backfill=v["backfill"],
            seed=int(v["seed"]),
        )
        return workload, cluster, config

    def run_now(self) -> Result | None:
        """Run the simulation the controls describe and show it; returns the new result, or
        None (with ``message`` set) when the controls are not a valid combination. Never
        raises: a callback must not break the notebook."""
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()  # this run covers the changes it was waiting for
        with self._lock:
            self._set_busy(True, "checking the inputs…")
            try:
                workload, cluster, config = self.inputs()
                started = clock.perf_counter()
                result = self._simulate(workload, cluster, config)
                seconds = clock.perf_counter() - started
            except USER_ERRORS as exc:
                return self._fail(f"Not run: {exc}")
            except Exception as exc:  # noqa: BLE001 - shown in the app, logged with traceback
                logger.exception("explorer: the run failed")
                return self._fail(f"Not run (internal error): {type(exc).__name__}: {exc}")
            finally:
                self._set_busy(False)
            try:
                self._show(result, cluster, workload, config, seconds)
            except Exception as exc:  # noqa: BLE001
                logger.exception("explorer: showing the result failed")
                self._fail(f"The run finished but could not be shown: {exc}")
            return result

    def _simulate(self, workload: Workload, cluster: Cluster, config: SimConfig) -> Result:
        sim = Simulation(workload, cluster, config)
        jobs = workload.jobs
        span = float(jobs["submit_time"].max()) if len(jobs) else 0.0
        label = f"running {name_of(config.scheduler)} on {workload.name} ({len(jobs):,} jobs)…"
        for k in range(1, CHUNKS + 1):
            until = math.ceil(span * k / CHUNKS / config.step) * config.step
            sim.run(until=until)
            self._progress(k / (CHUNKS + 1), label)
        sim.run()
        self._progress(1.0, label)
        return sim.result()

    def _set_busy(self, busy: bool, text: str = "") -> None:
        progress = self.outputs["progress"]
        progress.value = 0.0
        progress.bar_style = "info" if busy else ""
        if busy:
            self.outputs["status"].value = html.escape(text)

    def _progress(self, fraction: float, text: str) -> None:
        self.outputs["progress"].value = fraction
        self.outputs["status"].value = f"{html.escape(text)} {fraction:.0%}"

    def _fail(self, text: str) -> None:
        self.message = text
        self.outputs["message"].value = (
            f"<div class='analysim-error' style='color:#b00020'>{html.escape(text)}"
            " — the results below are from the previous run.</div>"
            if self.result is not None
            else f"<div class='analysim-error' style='color:#b00020'>{html.escape(text)}</div>"
        )
        self.outputs["status"].value = "not run: see the message"
        return None

    def _show(
        self,
        result: Result,
        cluster: Cluster,
        workload: Workload,
        config: SimConfig,
        seconds: float,
    ) -> None:
        run = compare.Run(
            result,
            compare.settings_of(config, float(self.controls["cluster_size"].value)),
            self.workload_key(),
        )
        new_workload = self.current is not None and run.workload_key != self.current.workload_key
        self.last, self.current = self.current, run
        self.previous, self.result, self.cluster = self.result, result, cluster
        self._inputs = (workload, cluster, config)
        self.runs += 1
        unschedulable = int((result.jobs["status"] == "unschedulable").sum())
        self.message = (
            f"{unschedulable} job(s) ask for more GPUs than their VC could ever get; "
            "they never run."
            if unschedulable
            else ""
        )
        self.outputs["message"].value = html.escape(self.message)
        notes = []
        if new_workload:
            dropped = bool(self.baseline or self.kept)
            self.baseline, self.kept, self.last = None, [], None
            self.previous = None
            if dropped:
                notes.append(
                    "The workload changed: the comparison was reset (runs on different "
                    "workloads are not compared). Pin a new baseline."
                )
        notes += compare.same_results_note(self.baseline, self.last, self.current)
        self.note = " ".join(notes)
        self.outputs["note"].value = (
            f"<div class='analysim-note'>{html.escape(self.note)}</div>" if self.note else ""
        )
        self._show_comparison()
        self.moment.show(result, cluster, moved=new_workload or self.runs == 1)
        self.outputs["status"].value = html.escape(
            f"run {self.runs}: {name_of(config.scheduler)} on {workload.name}, "
            f"{len(result.jobs):,} jobs, {cluster.total_gpus:,} GPUs — simulated in {seconds:.1f} s"
        )
        if cluster.total_gpus <= STEPPER_MAX_GPUS:
            self.stepper.load(workload, cluster, config)
        else:
            self.stepper.unavailable(cluster.total_gpus)

    # -- comparisons --------------------------------------------------------------------------
    def shown_runs(self) -> tuple[list[compare.Run], list[str], list[str]]:
        """The runs shown side by side, their labels (by what differs) and roles."""
        return compare.shown_runs(self.baseline, self.kept, self.last, self.current)

    def _show_comparison(self) -> None:
        runs, names, roles = self.shown_runs()
        self.summary = compare.comparison_table(runs, names)
        change = "change" if len(runs) > 1 else None
        if change:
            self.summary = self.summary.rename(columns={"change": f"change vs {names[0]}"})
            change = f"change vs {names[0]}"
        self._roles = roles
        self._show_summary()
        labelled = {name: run.result for run, name in zip(runs, names, strict=True)}
        self.outputs["cdf"].value = render.image(render.cdf_figure(labelled))
        self.moment.compare(labelled)

    def _show_summary(self) -> None:
        """The summary table: the key metrics, or all with the *all metrics* box ticked."""
        if self.summary is None:
            return
        table = self.summary
        if not self.buttons["all_metrics"].value:
            table = table.loc[[m for m in KEY_METRICS if m in table.index]]
        change = next((c for c in table.columns if str(c).startswith("change vs ")), None)
        self.outputs["summary"].value = summary_html(table, change, self._roles)

    def pin(self) -> None:
        """Pin the current run as the baseline every later run is compared with."""
        if self.current is None:
            raise ValueError("nothing to pin: no run yet")
        self.baseline = self.current
        self._show_comparison()
        self.note = ""
        self.outputs["note"].value = ""

    def keep(self, name: str = "") -> None:
        """Keep the current run side by side (at most ``compare.MAX_KEPT``), named ``name`` or
        by what differs."""
        if self.current is None:
            raise ValueError("nothing to keep: no run yet")
        if self.current is self.baseline or any(r is self.current for r in self.kept):
            return
        self.current.name = str(name).strip()
        self.kept = [*self.kept, self.current][-compare.MAX_KEPT :]
        self.buttons["name"].value = ""
        self._show_comparison()

    def clear(self) -> None:
        """Drop the baseline and the kept runs."""
        self.baseline, self.kept = None, []
        self._show_comparison()

    # -- export -------------------------------------------------------------------------------
    def export(self, folder: str | Path | None = None) -> dict[str, Path]:
        """Save the current plots and heatmap (PNG and SVG), the summary (CSV) and the
        configuration (``run.py``, the Python call; ``config.json``) under ``folder``
        (default ``export_dir/run-<n>``); shows download links. Returns the files by name."""
        if self.result is None:
            raise ValueError("nothing to export: no run yet")
        if folder is None:
            folder = self.export_dir / f"run-{self.runs}"
        folder = check_export_folder(folder, "export folder")
        check_export_target(folder, "export folder")
        figures = {
            "timelines": self.moment.timeline_figure(),
            "jct_cdf": render.cdf_figure(self.moment.labelled),
            "heatmap": self.moment.heatmap_figure(),
        }
        files = export.write(
            folder,
            figures,
            self.summary,
            export.python_call(self._recipe()),
            export.config_json(self._recipe()),
        )
        self.exported = files
        self.outputs["exported"].value = export.links_html(files)
        return files

    def _recipe(self) -> dict[str, Any]:
        values = {name: control.value for name, control in self.controls.items()}
        workload, _, config = self._inputs
        return sources.recipe(values, workload, config, self._folder)

    # -- the moment ---------------------------------------------------------------------------
    def _guarded(self, action: Any) -> None:
        run_guarded(self._lock, action, self.outputs["why"])

    def why(self, job_id: str, time: float | None = None) -> str:
        """Why ``job_id`` waits at ``time`` (default: the slider's) in the latest result."""
        return self.moment.why(job_id, time)
