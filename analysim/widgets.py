"""The interactive explorer: change the policies inline, watch the cluster, ask why a job waits.

This is the only module of AnalySIM that imports ipywidgets (``pip install
analysim[notebooks]``); ``import analysim`` does not import it. In a notebook::

    import analysim as asim
    app = asim.explore(workload="venus")   # the Venus preset, 7 days by default
    app                                    # shows the controls and outputs

Every control change reruns the simulation after a short pause (debounced; a progress bar
shows while it runs) and updates the summary table (beside the previous run's numbers), the
JCT CDF and utilisation / queue / fragmentation over time, a time slider over a node × GPU
occupancy heatmap with the jobs waiting at that moment, and "why is this job waiting?"
(:mod:`analysim.explain`). A bad combination (a cluster too small for the workload's largest
job, a negative cost) shows a message and leaves the previous results in place.

Drive it from code (notebooks, tests)::

    app.controls["scheduler"].value = "sjf"
    app.run_now()                          # or wait for the debounced run
    app.result.summary()

``explore(..., sync=True)`` runs at once in the callback instead of debouncing on a thread.
On the ``toy`` cluster a "step through" panel (:class:`Stepper`) advances one event at a time
with a Gantt chart of jobs on GPUs and the engine's ``sim.state`` tables.
"""

from __future__ import annotations

import html
import io
import json
import logging
import math
import threading
import time as clock
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from analysim import presets
from analysim.cluster import Cluster
from analysim.config import SimConfig
from analysim.domains import build_partition
from analysim.engine import Simulation
from analysim.errors import PolicyError
from analysim.explain import allocations, explain, gpu_snapshot, waiting_jobs
from analysim.plotting.occupancy import gantt, occupancy_heatmap, vc_palette
from analysim.policies import PLACERS, SCHEDULERS
from analysim.workload import Workload

if TYPE_CHECKING:
    from analysim.result import Result

logger = logging.getLogger(__name__)

PRESETS = ("toy", "venus")
"""Workload presets the explorer offers (``large`` is for benchmarks, not for exploring)."""
TRACE = "trace"
DEFAULT_DAYS = 7.0
"""Days of the ``venus`` workload the explorer simulates by default (a month takes longer)."""
CHUNKS = 20  # a run is simulated in this many slices, to move the progress bar
STEPPER_MAX_GPUS = 64  # the step-through panel is offered on clusters up to this size
MAX_LISTED = 200  # waiting jobs listed at one moment
USER_ERRORS = (ValueError, TypeError, KeyError, PolicyError)

__all__ = ["Explorer", "Stepper", "explore", "scale_cluster", "teach"]


def explore(
    workload: str | Path | Workload | Any = "venus",
    cluster: str | Cluster | None = None,
    *,
    days: float = DEFAULT_DAYS,
    config: SimConfig | dict[str, Any] | None = None,
    sync: bool = False,
    debounce: float = 0.4,
    run: bool = True,
) -> Explorer:
    """The explorer app on a preset workload (``"toy"``, ``"venus"``) or a trace: a folder
    of one (read with :func:`analysim.traces.read_folder`), a
    :class:`~analysim.traces.Trace` from a reader (its cluster unless ``cluster`` is given)
    or a :class:`~analysim.workload.Workload` with its ``cluster``.

    ``days``: length of the ``venus`` workload (7 by default, so a run takes about a second
    under ``fifo``). ``config``: the starting :class:`~analysim.config.SimConfig`.
    ``sync=True`` runs each change at once (no thread; for tests); ``debounce`` is the pause
    in seconds after the last change before a run. ``run=False`` skips the first run.
    """
    return Explorer(
        workload, cluster, days=days, config=config, sync=sync, debounce=debounce, run=run
    )


# -- inputs ---------------------------------------------------------------------------------------
def scale_cluster(cluster: Cluster, factor: float) -> Cluster:
    """``cluster`` with each VC's nodes (and the shared pool) scaled by ``factor``.

    Each owner keeps ``round(nodes x factor)`` nodes (at least one): the first ones when it
    shrinks; copies (named ``<node>+k``, in racks ``<rack>+k``) when it grows. Quotas shrink
    or grow with the pool.
    """
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ValueError(f"cluster size must be a number > 0, got {factor!r}")
    if factor == 1:
        return cluster
    nodes = cluster.nodes
    parts = []
    for _, group in nodes.groupby(nodes["vc"].fillna("\0"), sort=False):
        want = max(1, round(len(group) * factor))
        if want <= len(group):
            parts.append(group.iloc[:want])
            continue
        parts.append(group)
        for k in range(want - len(group)):
            row = group.iloc[[k % len(group)]].copy()
            copy = k // len(group) + 1
            row["node"] = row["node"] + f"+{copy}"
            row["rack"] = row["rack"].astype(str) + f"+{copy}"
            parts.append(row)
    scaled = pd.concat(parts).sort_index(kind="stable").reset_index(drop=True)
    quotas = dict(cluster.quotas)
    if quotas:
        pool = int(scaled.loc[scaled["vc"].isna(), "gpus"].sum())
        ratio = pool / max(1, cluster.pool_gpus)
        quotas = {vc: int(q * ratio) for vc, q in quotas.items()}
    return Cluster.from_frame(scaled, quotas or None, name=f"{cluster.name} x{factor:g}")


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


def _cost_text(spec: Any) -> str:
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return f"{spec:g}"
    if isinstance(spec, dict) and spec.get("name") == "constant":
        return f"{spec.get('seconds', 0):g}"
    if isinstance(spec, dict) and set(spec) == {"name"}:
        return str(spec["name"])
    return json.dumps(spec) if isinstance(spec, dict) else str(spec)


def _newly_unschedulable(workload: Workload, base: Cluster, scaled: Cluster) -> str | None:
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


# -- rendering ------------------------------------------------------------------------------------
def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def _number(value: float, metric: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if float(value).is_integer():  # counts, and round numbers
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3f}"


def summary_table(current: pd.Series, previous: pd.Series | None) -> pd.DataFrame:
    """This run's summary beside the previous run's, with the relative change."""
    frame = pd.DataFrame({"this run": current})
    if previous is not None:
        frame["previous run"] = previous.reindex(current.index)
        with np.errstate(divide="ignore", invalid="ignore"):
            change = (frame["this run"] - frame["previous run"]) / frame["previous run"].abs()
        frame["change"] = change.where(np.isfinite(change))
    return frame


def _summary_html(table: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["metric", *table.columns])
    rows = []
    for metric, values in table.iterrows():
        cells = []
        for column, value in values.items():
            if column == "change":
                cells.append("" if pd.isna(value) else f"{value:+.1%}")
            else:
                cells.append(_number(value, str(metric)))
        tds = "".join(f"<td style='text-align:right'>{c}</td>" for c in cells)
        rows.append(f"<tr><td>{html.escape(str(metric))}</td>{tds}</tr>")
    return f"<table class='analysim-table'><tr>{head}</tr>{''.join(rows)}</table>"


def _plot_runs(current: Result, previous: Result | None) -> Figure:
    """JCT CDF, utilisation, queue and fragmentation over time, this run against the last."""
    runs = (
        {"this run": current} if previous is None else {"previous": previous, "this run": current}
    )
    fig = Figure(figsize=(9.0, 5.5))
    axes = fig.subplots(2, 2, gridspec_kw={"hspace": 0.55, "wspace": 0.3})
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.1)
    try:  # the figures engineer's seaborn-style plots, when installed
        from analysim import plotting

        draw_cdf, draw_line = plotting.jct_cdf, plotting.timeline
    except (ImportError, AttributeError):
        draw_cdf = draw_line = None
    _try_plot(axes[0, 0], "JCT CDF", lambda ax: (draw_cdf or _cdf)(runs, ax=ax))
    panels = [("utilization", axes[0, 1]), ("waiting_jobs", axes[1, 0])]
    frag = "fragmented_gpus" if "fragmented_gpus" in current.timeline.columns else None
    panels.append((frag or "pending_gpus", axes[1, 1]))
    for column, ax in panels:
        _try_plot(ax, column, lambda ax, c=column: (draw_line or _line)(runs, c, ax=ax))
    return fig


def _try_plot(ax: Any, title: str, draw: Any) -> None:
    try:
        draw(ax)
    except (ValueError, KeyError) as exc:  # e.g. no finished job yet
        ax.text(0.5, 0.5, str(exc), ha="center", va="center", wrap=True, fontsize=8)
    ax.set_title(title, fontsize=10)


def _cdf(runs: dict[str, Result], ax: Any) -> None:
    for label, result in runs.items():
        jct = np.sort(result.jobs.loc[result.jobs["status"] == "done", "jct"].to_numpy())
        if len(jct):
            ax.plot(jct / 3600, np.arange(1, len(jct) + 1) / len(jct), label=label)
    ax.set_xscale("log")
    ax.set_xlabel("JCT (h)")
    ax.legend()


def _line(runs: dict[str, Result], column: str, ax: Any) -> None:
    for label, result in runs.items():
        rows = result.timeline[result.timeline["vc"] == "(all)"]
        ax.plot(rows["time"] / 3600, rows[column], label=label, linewidth=1)
    ax.set_xlabel("time (h)")
    ax.legend()


# -- the explorer ---------------------------------------------------------------------------------
class Explorer:
    """The explorer app. ``controls``: the input widgets by name; ``outputs``: the output
    widgets by name; ``result`` / ``previous``: the latest and the one before;
    ``message``: the last error or warning (empty if none). Display it in a notebook cell."""

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
    ) -> None:
        self.sync, self.debounce = sync, float(debounce)
        if str(workload) not in PRESETS and isinstance(workload, (str, Path)):
            from analysim.traces import read_folder
            from analysim.traces.bundled import resolve

            if resolve(workload).is_dir():
                workload = read_folder(workload)  # a trace folder: its format told from its files
        if not isinstance(workload, (str, Workload)) and hasattr(workload, "workload"):
            # a trace reader's Trace: its workload, and its cluster unless one is given
            cluster = cluster if cluster is not None else workload.cluster
            workload = workload.workload
        self._clusters, start = self._sources(workload, cluster)
        self._trace = workload if isinstance(workload, Workload) else None
        if isinstance(config, dict):
            config = SimConfig.from_dict(config)
        self.config = config or SimConfig()
        self.result: Result | None = None
        self.previous: Result | None = None
        self.cluster: Cluster | None = None
        self.runs = 0
        self.message = ""
        self._spells: pd.DataFrame | None = None
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._picking = True
        self.controls = self._make_controls(start, days)
        self.outputs = self._make_outputs()
        self.stepper = Stepper()
        self.widget = self._layout()
        for control in self.controls.values():
            control.observe(self._on_control, names="value")
        self.outputs["time"].observe(self._on_time, names="value")
        self.outputs["waiting"].observe(self._on_pick, names="value")
        if run:
            self.run_now()

    def _sources(
        self, workload: str | Workload, cluster: str | Cluster | None
    ) -> tuple[dict[str, Cluster], str]:
        if isinstance(cluster, str):
            cluster = presets.cluster(cluster)
        clusters = {name: presets.cluster(name) for name in PRESETS}
        if isinstance(workload, Workload):
            if cluster is None:
                raise ValueError("explore: a loaded trace needs the cluster it runs on (cluster=)")
            clusters[TRACE] = cluster
            return clusters, TRACE
        if workload not in PRESETS:
            raise ValueError(
                f"explore: workload must be one of {list(PRESETS)}, a trace folder, a Trace or "
                f"a Workload; got {str(workload)!r}"
            )
        if cluster is not None:
            clusters[workload] = cluster
        return clusters, workload

    # -- widgets ----------------------------------------------------------------------------
    def _make_controls(self, start: str, days: float) -> dict[str, widgets.ValueWidget]:
        c = self.config
        style = {"description_width": "110px"}
        layout = widgets.Layout(width="260px")
        fields = set(SimConfig.fields())
        options = [(name, name) for name in PRESETS]
        if self._trace is not None:
            options.append((f"trace: {self._trace.name}", TRACE))

        def box(kind: Any, name: str, description: str, **kw: Any) -> widgets.ValueWidget:
            widget = kind(description=description, style=style, layout=layout, **kw)
            widget.add_class(f"analysim-{name}")
            return widget

        controls = {
            "workload": box(widgets.Dropdown, "workload", "workload", options=options, value=start),
            "days": box(widgets.BoundedFloatText, "days", "days (venus)", value=days, min=0.1),
            "load_scale": box(
                widgets.FloatSlider,
                "load_scale",
                "load scale",
                value=1.0,
                min=0.25,
                max=3.0,
                step=0.05,
                continuous_update=False,
            ),
            "cluster_size": box(
                widgets.FloatSlider,
                "cluster_size",
                "cluster size ×",
                value=1.0,
                min=0.25,
                max=2.0,
                step=0.25,
                continuous_update=False,
            ),
            "scheduler": box(
                widgets.Dropdown,
                "scheduler",
                "scheduler",
                options=SCHEDULERS.names,
                value=_name(c.scheduler),
            ),
            "placement": box(
                widgets.Dropdown,
                "placement",
                "placement",
                options=PLACERS.names,
                value=_name(c.placement),
            ),
            "quantum": box(widgets.FloatText, "quantum", "quantum (s)", value=c.quantum),
            "preemption": box(widgets.Checkbox, "preemption", "preemption", value=c.preemption),
            "checkpoint_cost": box(
                widgets.Text,
                "checkpoint_cost",
                "checkpoint cost",
                value=_cost_text(c.checkpoint_cost),
                continuous_update=False,
            ),
            "migration": box(
                widgets.Checkbox,
                "migration",
                "migration",
                value=bool(getattr(c, "migration", False)),
                disabled="migration" not in fields,
            ),
            "migration_cost": box(
                widgets.Text,
                "migration_cost",
                "migration cost",
                value=_cost_text(getattr(c, "migration_cost", "size_scaled")),
                continuous_update=False,
                disabled="migration_cost" not in fields,
            ),
            "borrowing": box(
                widgets.Checkbox,
                "borrowing",
                "borrowing",
                value=bool(getattr(c, "borrowing", False)),
                disabled="borrowing" not in fields,
            ),
            "seed": box(widgets.BoundedIntText, "seed", "seed", value=c.seed, min=0, max=2**31),
        }
        return controls

    def _make_outputs(self) -> dict[str, widgets.DOMWidget]:
        def tag(widget: widgets.DOMWidget, name: str) -> widgets.DOMWidget:
            widget.add_class(f"analysim-{name}")
            return widget

        return {
            "status": tag(widgets.HTML(value="not run yet"), "status"),
            "progress": tag(
                widgets.FloatProgress(value=0, min=0, max=1, layout={"width": "200px"}),
                "progress",
            ),
            "message": tag(widgets.HTML(value=""), "message"),
            "summary": tag(widgets.HTML(value=""), "summary"),
            "plots": tag(
                widgets.Image(format="png", layout={"width": "720px", "height": "auto"}), "plots"
            ),
            "time": tag(
                widgets.FloatSlider(
                    description="time (s)",
                    min=0,
                    max=1,
                    step=1,
                    continuous_update=False,
                    layout={"width": "720px"},
                    readout_format=".0f",
                ),
                "time",
            ),
            "heatmap": tag(widgets.Image(format="png", layout={"width": "720px"}), "heatmap"),
            "waiting": tag(
                widgets.Select(options=[], rows=10, layout={"width": "300px"}),
                "waiting",
            ),
            "waiting_label": tag(widgets.HTML(value="<b>waiting jobs</b>"), "waiting-label"),
            "why": tag(widgets.HTML(value="", layout={"width": "420px"}), "why"),
        }

    def _layout(self) -> widgets.Widget:
        c, o = self.controls, self.outputs
        columns = widgets.HBox(
            [
                widgets.VBox([c[k] for k in ("workload", "days", "load_scale", "cluster_size")]),
                widgets.VBox([c[k] for k in ("scheduler", "placement", "quantum", "seed")]),
                widgets.VBox(
                    [
                        c[k]
                        for k in (
                            "preemption",
                            "checkpoint_cost",
                            "migration",
                            "migration_cost",
                            "borrowing",
                        )
                    ]
                ),
            ]
        )
        status = widgets.HBox([o["progress"], o["status"]])
        results = widgets.HBox([o["summary"], o["plots"]], layout={"align_items": "flex-start"})
        moment = widgets.VBox(
            [
                widgets.HTML("<b>The cluster at a moment</b> (× = borrowed GPU)"),
                o["time"],
                o["heatmap"],
                widgets.HBox(
                    [
                        widgets.VBox([o["waiting_label"], o["waiting"]]),
                        widgets.VBox([widgets.HTML("<b>why is it waiting?</b>"), o["why"]]),
                    ]
                ),
            ]
        )
        steps = widgets.Accordion(children=[self.stepper.widget], titles=("step through (toy)",))
        steps.selected_index = None
        self._steps = steps
        app = widgets.VBox([columns, status, o["message"], results, moment, steps])
        app.add_class("analysim-explorer")
        return app

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # -- reacting to changes -----------------------------------------------------------------
    def _on_control(self, change: dict[str, Any]) -> None:
        self.request_run()

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

    # -- running -------------------------------------------------------------------------------
    def inputs(self) -> tuple[Workload, Cluster, SimConfig]:
        """The workload, cluster and config the controls describe (``ValueError`` if they are
        not a valid combination)."""
        v = {name: control.value for name, control in self.controls.items()}
        source = v["workload"]
        base = self._clusters[source]
        if source == TRACE:
            workload = _scale_load(self._trace, v["load_scale"])
        else:
            days = float(v["days"])
            if not days > 0:
                raise ValueError(f"days must be > 0, got {days}")
            workload = presets.workload(
                source, seed=v["seed"], load_scale=v["load_scale"], days=days
            )
        cluster = scale_cluster(base, float(v["cluster_size"]))
        problem = _newly_unschedulable(workload, base, cluster)
        if problem:
            raise ValueError(problem)
        changes: dict[str, Any] = {
            "scheduler": v["scheduler"],
            "placement": v["placement"],
            "preemption": bool(v["preemption"]),
            "quantum": float(v["quantum"]),
            "checkpoint_cost": parse_cost(v["checkpoint_cost"], "checkpoint cost"),
            "seed": int(v["seed"]),
        }
        fields = set(SimConfig.fields())
        for name in ("migration", "borrowing"):
            if name in fields:
                changes[name] = bool(v[name])
        if "migration_cost" in fields:
            changes["migration_cost"] = parse_cost(v["migration_cost"], "migration cost")
        config = self.config.replace(**changes)
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
        label = f"running {_name(config.scheduler)} on {workload.name} ({len(jobs):,} jobs)…"
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
        self.previous, self.result, self.cluster = self.result, result, cluster
        self.runs += 1
        unschedulable = int((result.jobs["status"] == "unschedulable").sum())
        self.message = (
            f"{unschedulable} job(s) ask for more GPUs than their VC could ever get; "
            "they never run."
            if unschedulable
            else ""
        )
        self.outputs["message"].value = html.escape(self.message)
        self._spells = None if hasattr(result, "snapshot") else allocations(result, cluster)
        previous = self.previous.summary() if self.previous is not None else None
        self.summary = summary_table(result.summary(), previous)
        self.outputs["summary"].value = _summary_html(self.summary)
        self.outputs["plots"].value = _png(_plot_runs(result, self.previous))
        self._reset_slider(result)
        self._show_moment()
        self.outputs["status"].value = html.escape(
            f"run {self.runs}: {_name(config.scheduler)} on {workload.name}, "
            f"{len(result.jobs):,} jobs, {cluster.total_gpus:,} GPUs — simulated in {seconds:.1f} s"
        )
        if cluster.total_gpus <= STEPPER_MAX_GPUS:
            self.stepper.load(workload, cluster, config)
        else:
            self.stepper.unavailable(cluster.total_gpus)

    def _reset_slider(self, result: Result) -> None:
        slider = self.outputs["time"]
        end = float(result.meta.get("now", 0.0)) or 1.0
        step = max(1.0, float(round(end / 500)))
        value = slider.value
        if self.previous is None or value > end:  # first run: the moment the queue peaks
            rows = result.timeline[result.timeline["vc"] == "(all)"]
            value = float(rows["time"].iloc[rows["waiting_jobs"].to_numpy().argmax()])
        self._picking = False
        try:
            slider.max = max(end, slider.min + step)
            slider.step = step
            slider.value = min(value, slider.max)
        finally:
            self._picking = True

    def _on_time(self, change: dict[str, Any]) -> None:
        if self._picking:  # not while a new result resets the slider
            self._guarded(self._show_moment)

    def _on_pick(self, change: dict[str, Any]) -> None:
        if self._picking:
            self._guarded(self._show_why)

    def _guarded(self, action: Any) -> None:
        try:
            with self._lock:  # not while a run on the debounce thread replaces the result
                action()
        except Exception as exc:  # noqa: BLE001 - a callback must not raise
            logger.exception("explorer: updating the view failed")
            self.outputs["why"].value = html.escape(f"could not update: {exc}")

    def _show_moment(self) -> None:
        """The heatmap and the waiting jobs at the slider's time."""
        if self.result is None:
            return
        t = float(self.outputs["time"].value)
        snap = gpu_snapshot(self.result, t, self.cluster, self._spells)
        palette = vc_palette(self.cluster.vcs or snap["job_vc"].dropna())
        fig = Figure(figsize=(10.0, 3.2))
        fig.subplots_adjust(left=0.07, right=0.8, top=0.9, bottom=0.25)
        occupancy_heatmap(snap, ax=fig.add_subplot(), palette=palette, title=f"t = {t:,.0f} s")
        self.outputs["heatmap"].value = _png(fig)
        waiting = waiting_jobs(self.result, t)
        options = [
            (f"{job} ({vc}, {n} GPU{'s' if n != 1 else ''})", job)
            for job, vc, n in zip(
                waiting["job_id"][:MAX_LISTED],
                waiting["vc"][:MAX_LISTED],
                waiting["num_gpus"][:MAX_LISTED],
                strict=True,
            )
        ]
        select = self.outputs["waiting"]
        keep = select.value if select.value in {job for _, job in options} else None
        self._picking = False  # the options change below is not the user's pick
        try:
            select.options = options
            select.value = keep if keep is not None else (options[0][1] if options else None)
        finally:
            self._picking = True
        self.outputs["waiting_label"].value = (
            f"<b>{len(waiting):,} waiting job{'s' if len(waiting) != 1 else ''}</b> at t={t:,.0f} s"
            + (f" (first {MAX_LISTED} listed)" if len(waiting) > MAX_LISTED else "")
        )
        self._show_why()

    def _show_why(self) -> None:
        if self.result is None:
            return
        job = self.outputs["waiting"].value
        t = float(self.outputs["time"].value)
        if job is None:
            self.outputs["why"].value = f"No job is waiting at t={t:g} s."
            return
        reason = explain(self.result, job, t, self.cluster, self._spells)
        self.outputs["why"].value = html.escape(reason.text)

    def why(self, job_id: str, time: float | None = None) -> str:
        """Why ``job_id`` waits at ``time`` (default: the slider's) in the latest result."""
        if self.result is None:
            raise ValueError("the explorer has no result yet: run it first (app.run_now())")
        t = float(self.outputs["time"].value if time is None else time)
        return explain(self.result, job_id, t, self.cluster, self._spells).text


def _name(spec: Any) -> str:
    return spec if isinstance(spec, str) else dict(spec).get("name", str(spec))


def _scale_load(workload: Workload, load_scale: float) -> Workload:
    if not load_scale > 0:
        raise ValueError(f"load scale must be > 0, got {load_scale}")
    if load_scale == 1:
        return workload
    jobs = workload.jobs.assign(submit_time=workload.jobs["submit_time"] / load_scale)
    return Workload.from_frame(jobs, name=workload.name)


# -- step through ---------------------------------------------------------------------------------
class Stepper:
    """Step a small simulation forward one event at a time: a Gantt chart of jobs on GPUs
    and the engine's ``sim.state`` tables. ``controls``: ``step``, ``run``, ``reset``
    buttons; ``sim``: the :class:`~analysim.engine.Simulation` being stepped."""

    def __init__(self) -> None:
        self.sim: Simulation | None = None
        self._inputs: tuple[Workload, Cluster, SimConfig] | None = None
        self.controls = {
            name: widgets.Button(description=label)
            for name, label in (("step", "step ▶"), ("run", "run to the end"), ("reset", "reset"))
        }
        self.controls["step"].on_click(lambda _: self._guarded(self.step))
        self.controls["run"].on_click(lambda _: self._guarded(self.run))
        self.controls["reset"].on_click(lambda _: self._guarded(self.reset))
        self.outputs = {
            "time": widgets.HTML(value="available on the toy cluster"),
            "events": widgets.HTML(),
            "gantt": widgets.Image(format="png", layout={"width": "720px"}),
            "jobs": widgets.HTML(),
            "nodes": widgets.HTML(),
        }
        self.widget = widgets.VBox(
            [
                widgets.HBox([*self.controls.values(), self.outputs["time"]]),
                self.outputs["events"],
                self.outputs["gantt"],
                widgets.HBox([self.outputs["jobs"], self.outputs["nodes"]]),
            ]
        )
        self.widget.add_class("analysim-stepper")

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def load(self, workload: Workload, cluster: Cluster, config: SimConfig) -> None:
        """Start over on these inputs (the explorer calls this after each run)."""
        self._inputs = (workload, cluster, config)
        self.reset()

    def unavailable(self, gpus: int) -> None:
        self.sim, self._inputs = None, None
        for button in self.controls.values():
            button.disabled = True
        self.outputs["time"].value = (
            f"stepping is offered on clusters of at most {STEPPER_MAX_GPUS} GPUs "
            f"(this one has {gpus:,}): choose the toy workload"
        )
        self.outputs["gantt"].value = b""

    def reset(self) -> None:
        if self._inputs is None:
            return
        self.sim = Simulation(*self._inputs)
        for button in self.controls.values():
            button.disabled = False
        self._show()

    def step(self) -> float:
        """Advance to the next moment anything happens; returns the new time."""
        if self.sim is None:
            raise ValueError("nothing to step: load a small workload first")
        self.sim.step()
        self._show()
        return self.sim.now

    def run(self) -> None:
        if self.sim is not None:
            self.sim.run()
            self._show()

    def _guarded(self, action: Any) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - a button must not raise
            logger.exception("stepper: the step failed")
            self.outputs["time"].value = html.escape(f"could not step: {exc}")

    def _show(self) -> None:
        sim = self.sim
        state = sim.state
        self.outputs["time"].value = html.escape(f"t = {sim.now:g} s — {state!r}")
        result = sim.result()
        self.outputs["events"].value = html.escape(_what_happened(result.events, sim.now))
        fig = Figure(figsize=(9.0, 4.0))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.95, bottom=0.12)
        ax = gantt(result, ax=fig.add_subplot(), cluster=sim.cluster, now=sim.now)
        ax.set_xlim(0, max(sim.now, _end_estimate(sim), 1.0) * 1.02)
        self.outputs["gantt"].value = _png(fig)
        self.outputs["jobs"].value = state.jobs.to_html(index=False, na_rep="")
        self.outputs["nodes"].value = state.nodes.to_html(index=False, na_rep="")


def teach(
    workload: str | Workload = "toy", cluster: str | Cluster | None = None, **config: Any
) -> Stepper:
    """The step-through panel on its own: ``teach()`` steps the toy run under FIFO;
    ``teach(scheduler="sjf", preemption=True)`` under other settings (``SimConfig`` fields)."""
    if isinstance(workload, str):
        cluster = cluster or workload
        workload = presets.workload(workload)
    if cluster is None:
        raise ValueError("teach: a Workload needs the cluster it runs on (cluster=)")
    cluster = presets.cluster(cluster) if isinstance(cluster, str) else cluster
    stepper = Stepper()
    stepper.load(workload, cluster, SimConfig.from_dict(config))
    return stepper


def _what_happened(events: pd.DataFrame, now: float) -> str:
    """The events at ``now`` in words: ``at t=60 s: j2 submitted; j2 started on n2,n3``."""
    verbs = {
        "submit": "submitted",
        "start": "started on",
        "resume": "resumed on",
        "preempt": "preempted from",
        "finish": "finished on",
        "migrate": "migrated to",
        "reclaim": "reclaimed from",
        "unschedulable": "is unschedulable",
    }
    here = events[(events["time"] - now).abs() < 1e-9]
    parts = []
    for kind, job, nodes in zip(
        here["event"].astype(str), here["job_id"], here["nodes"].astype(object), strict=True
    ):
        verb = verbs.get(kind, kind)
        where = f" {nodes}" if verb.endswith((" on", " from", " to")) and pd.notna(nodes) else ""
        parts.append(f"{job} {verb}{where}")
    return f"at t={now:g} s: " + ("; ".join(parts) if parts else "nothing happened")


def _end_estimate(sim: Simulation) -> float:
    """A fixed x range for the Gantt chart while stepping: the run's end, computed once."""
    end = getattr(sim, "_explorer_end", None)
    if end is None:
        end = Simulation(sim.workload, sim.cluster, sim.config).run().now
        sim._explorer_end = end  # noqa: SLF001 - a cache on the stepped simulation
    return end
