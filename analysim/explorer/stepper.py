"""Step a small simulation one event at a time: the Gantt chart (coloured by VC like the
heatmap, waiting jobs shown), the engine's ``sim.state`` tables, and why each waiting job
waits at every step."""

from __future__ import annotations

import html
import logging
from typing import Any

import ipywidgets as widgets
import pandas as pd

from analysim import presets
from analysim.engine import Simulation
from analysim.explorer.render import gantt_figure, image
from analysim.explorer.units import moment
from analysim.inputs.cluster import Cluster
from analysim.inputs.config import SimConfig
from analysim.inputs.workload import Workload
from analysim.results.explain import explain, waiting_jobs
from analysim.results.spells import allocations

logger = logging.getLogger(__name__)

STEPPER_MAX_GPUS = 64  # the step-through panel is offered on clusters up to this size


class Stepper:
    """Step a small simulation forward one event at a time. ``controls``: ``step``,
    ``run``, ``reset`` buttons; ``sim``: the :class:`~analysim.engine.Simulation` being
    stepped; ``outputs``: ``time``, ``events``, ``gantt``, ``why``, ``jobs``, ``nodes``."""

    def __init__(self) -> None:
        self.sim: Simulation | None = None
        self._inputs: tuple[Workload, Cluster, SimConfig] | None = None
        self._end: float | None = None
        self.controls = {
            name: widgets.Button(description=label, layout={"width": "auto"})
            for name, label in (("step", "step ▶"), ("run", "run to the end"), ("reset", "reset"))
        }
        self.controls["step"].on_click(lambda _: self._guarded(self.step))
        self.controls["run"].on_click(lambda _: self._guarded(self.run))
        self.controls["reset"].on_click(lambda _: self._guarded(self.reset))
        self.outputs = {
            "time": widgets.HTML(value="available on small clusters (toy, scenarios)"),
            "events": widgets.HTML(),
            "gantt": widgets.Image(format="png", layout={"width": "100%", "max_width": "1100px"}),
            "why": widgets.HTML(),
            "jobs": widgets.HTML(),
            "nodes": widgets.HTML(),
        }
        for name, widget in self.outputs.items():
            widget.add_class(f"analysim-step-{name}")
        tables = widgets.VBox(
            [
                widgets.HTML("<b>sim.state.jobs</b>"),
                self.outputs["jobs"],
                widgets.HTML("<b>sim.state.nodes</b>"),
                self.outputs["nodes"],
            ],
            layout={"max_width": "100%"},
        )
        self.widget = widgets.VBox(
            [
                widgets.HBox([*self.controls.values(), self.outputs["time"]]),
                self.outputs["events"],
                self.outputs["gantt"],
                widgets.HTML("<b>why is it waiting?</b> (every job waiting now)"),
                self.outputs["why"],
                tables,
            ],
            layout={"max_width": "100%"},
        )
        self.widget.add_class("analysim-stepper")

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def load(self, workload: Workload, cluster: Cluster, config: SimConfig) -> None:
        """Start over on these inputs (the explorer calls this after each run)."""
        self._inputs = (workload, cluster, config)
        self._end = None
        self.reset()

    def unavailable(self, gpus: int) -> None:
        self.sim, self._inputs = None, None
        for button in self.controls.values():
            button.disabled = True
        self.outputs["time"].value = (
            f"stepping is offered on clusters of at most {STEPPER_MAX_GPUS} GPUs "
            f"(this one has {gpus:,}): choose the toy workload or a scenario"
        )
        self.outputs["gantt"].value = b""
        for name in ("events", "why", "jobs", "nodes"):
            self.outputs[name].value = ""

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

    def end(self) -> float:
        """The run's end, computed once per loaded inputs (the Gantt chart's fixed x range)."""
        if self._end is None:
            self._end = float(Simulation(*self._inputs).run().now) if self._inputs else 1.0
        return self._end

    def _show(self) -> None:
        sim = self.sim
        state = sim.state
        now = float(sim.now)
        self.outputs["time"].value = html.escape(f"t = {moment(now)} — {state!r}")
        result = sim.result()
        self.outputs["events"].value = html.escape(_what_happened(result.events, now))
        spells = allocations(result, sim.cluster)
        fig = gantt_figure(result, spells, sim.cluster, now, max(now, self.end(), 1.0))
        self.outputs["gantt"].value = image(fig)
        self.outputs["why"].value = why_list(result, now, sim.cluster, spells)
        self.outputs["jobs"].value = _scroll(state.jobs.to_html(index=False, na_rep=""))
        self.outputs["nodes"].value = _scroll(state.nodes.to_html(index=False, na_rep=""))


def why_list(result: Any, now: float, cluster: Cluster, spells: pd.DataFrame) -> str:
    """Why each job waiting at ``now`` waits, one line each (HTML)."""
    waiting = waiting_jobs(result, now)
    if not len(waiting):
        return f"<i>No job is waiting at t = {html.escape(moment(now))}.</i>"
    lines = []
    for job in waiting["job_id"]:
        try:
            text = explain(result, job, now, cluster, spells).text
        except Exception as exc:  # noqa: BLE001 - one unexplained job must not hide the rest
            logger.exception("stepper: explaining %s failed", job)
            text = f"{job}: could not be explained ({exc})"
        lines.append(f"<li>{html.escape(text)}</li>")
    return f"<ul class='analysim-why-list'>{''.join(lines)}</ul>"


def _scroll(table: str) -> str:
    """A table in a box that scrolls sideways instead of overflowing the page."""
    return f"<div class='analysim-scroll'>{table}</div>"


def teach(
    workload: str | Workload = "toy", cluster: str | Cluster | None = None, **config: Any
) -> Stepper:
    """The step-through panel on its own: ``teach()`` steps the toy run under FIFO;
    ``teach(scheduler="sjf", preemption=True)`` under other settings (``SimConfig`` fields);
    ``teach("preemption")`` a teaching scenario (:mod:`analysim.inputs.scenarios`) with its
    settings."""
    from analysim.inputs import scenarios

    if isinstance(workload, str) and workload in scenarios.names():
        scenario = scenarios.get(workload)
        stepper = Stepper()
        stepper.load(scenario.workload(), scenario.cluster(), scenario.config(**config))
        return stepper
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
        "resize": "resized onto",
        "reclaim": "reclaimed from",
        "unschedulable": "is unschedulable",
        "fail": "killed by a failure on",
        "failed": "failed for good on",
    }
    here = events[(events["time"] - now).abs() < 1e-9]
    parts = []
    for kind, job, nodes in zip(
        here["event"].astype(str), here["job_id"], here["nodes"].astype(object), strict=True
    ):
        if kind in ("node_down", "node_up"):  # failures: no job
            parts.append(f"node {nodes} {'went down' if kind == 'node_down' else 'came back up'}")
            continue
        verb = verbs.get(kind, kind)
        where = f" {nodes}" if verb.endswith((" on", " from", " to")) and pd.notna(nodes) else ""
        parts.append(f"{job} {verb}{where}")
    return f"at t={now:g} s: " + ("; ".join(parts) if parts else "nothing happened")
