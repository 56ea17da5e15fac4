"""The explorer's view of one moment: the time slider (and the click overlay on the
timelines that mirrors it), the node × GPU heatmap, the jobs waiting then, and why the one
picked waits."""

from __future__ import annotations

import html
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from analysim.explorer import render
from analysim.explorer.units import duration, moment
from analysim.results.explain import explain, waiting_jobs
from analysim.results.spells import allocations, gpu_snapshot

if TYPE_CHECKING:
    from analysim.inputs.cluster import Cluster
    from analysim.results.result import Result

logger = logging.getLogger(__name__)

MAX_LISTED = 200  # waiting jobs listed at one moment


def run_guarded(lock: threading.RLock, action: Callable[[], Any], out: widgets.HTML) -> None:
    """Run a widget callback's ``action`` under ``lock`` (not while a run on the debounce
    thread replaces the result); an error is logged and shown in ``out``, never raised."""
    try:
        with lock:
            action()
    except Exception as exc:  # noqa: BLE001 - a callback must not raise
        logger.exception("explorer: updating the view failed")
        out.value = html.escape(f"could not update: {exc}")


class MomentView:
    """The moment the slider ``outputs["time"]`` points at, in the runs shown.

    ``show(result, cluster, labelled)`` takes a new run (``labelled``: the runs shown side by
    side, by label); ``compare(labelled)`` a new set of runs shown with the same latest run.
    """

    def __init__(
        self, outputs: dict[str, widgets.Widget], overlay: widgets.Widget, lock: threading.RLock
    ) -> None:
        self.outputs, self.overlay, self._lock = outputs, overlay, lock
        self.result: Result | None = None
        self.cluster: Cluster | None = None
        self.spells: pd.DataFrame | None = None
        self.labelled: dict[str, Result] = {}
        self._picking = True  # False while the view itself moves the slider or the list
        outputs["time"].observe(self._on_time, names="value")
        overlay.observe(self._on_overlay, names="value")
        outputs["waiting"].observe(self._on_pick, names="value")

    # -- what is shown ----------------------------------------------------------------------
    def show(self, result: Result, cluster: Cluster, moved: bool) -> None:
        """A new latest run: its spells, the slider's range (at the moment worth seeing when
        ``moved``, a new workload), the heatmap and the waiting jobs."""
        self.result, self.cluster = result, cluster
        self.spells = None if hasattr(result, "snapshot") else allocations(result, cluster)
        self._reset_slider(result, moved)
        self.show_moment()

    def compare(self, labelled: dict[str, Result]) -> None:
        """New runs shown side by side: the timelines are drawn again."""
        self.labelled = labelled
        self.draw_timelines()

    def timeline_end(self) -> float:
        """The end of the timelines' time axis: the latest end of the runs shown."""
        return max(float(r.meta.get("now", 0.0)) for r in self.labelled.values()) or 1.0

    def timeline_figure(self) -> Any:
        t = float(self.outputs["time"].value)
        return render.timeline_figure(self.labelled, t, self.timeline_end())

    def draw_timelines(self) -> None:
        if self.result is not None:
            self.outputs["plots"].value = render.image(self.timeline_figure())

    def heatmap_figure(self) -> Any:
        t = float(self.outputs["time"].value)
        snap = gpu_snapshot(self.result, t, self.cluster, self.spells)
        vcs = self.cluster.vcs or snap["job_vc"].dropna().unique()
        title = f"t = {moment(t)}"
        if "job_ids" in snap.columns:  # resource mode: how many GPUs are shared, by whom
            held = snap["job_ids"].dropna()
            shared = int(held.str.contains(",", regex=False).sum())
            title += f"; {shared:,} GPU{'s' if shared != 1 else ''} held by several shares"
        return render.heatmap_figure(snap, vcs, title)

    def show_moment(self) -> None:
        """The moment's line on the timelines, the heatmap and the jobs waiting then."""
        if self.result is None:
            return
        t = float(self.outputs["time"].value)
        self.outputs["moment"].value = (
            f"<b>moment shown: t = {html.escape(moment(t))}</b> of "
            f"{html.escape(duration(float(self.outputs['time'].max)))}"
        )
        self.draw_timelines()
        self.outputs["heatmap"].value = render.image(self.heatmap_figure())
        waiting = waiting_jobs(self.result, t)
        self._list_waiting(waiting)
        self.outputs["waiting_label"].value = (
            f"<b>{len(waiting):,} waiting job{'s' if len(waiting) != 1 else ''}</b> at "
            f"t = {html.escape(moment(t))}"
            + (f" (first {MAX_LISTED} listed)" if len(waiting) > MAX_LISTED else "")
        )
        self.show_why()

    def _list_waiting(self, waiting: pd.DataFrame) -> None:
        """The first ``MAX_LISTED`` waiting jobs to pick from; the pick stays if listed."""
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

    def show_why(self) -> None:
        if self.result is None:
            return
        job = self.outputs["waiting"].value
        t = float(self.outputs["time"].value)
        if job is None:
            self.outputs["why"].value = f"No job is waiting at t = {html.escape(moment(t))}."
            return
        reason = explain(self.result, job, t, self.cluster, self.spells)
        self.outputs["why"].value = html.escape(reason.text)

    def why(self, job_id: str, time: float | None = None) -> str:
        """Why ``job_id`` waits at ``time`` (default: the slider's) in the latest result."""
        if self.result is None:
            raise ValueError("the explorer has no result yet: run it first (app.run_now())")
        t = float(self.outputs["time"].value if time is None else time)
        return explain(self.result, job_id, t, self.cluster, self.spells).text

    # -- the slider -------------------------------------------------------------------------
    def _reset_slider(self, result: Result, moved: bool) -> None:
        slider = self.outputs["time"]
        end = self.timeline_end()  # the slider spans the timelines' time axis
        step = max(1.0, float(round(end / 500)))
        value = slider.value
        if moved or value > end:  # a new workload: the moment the queue peaks
            value = worth_seeing(result)
        self._picking = False
        try:
            slider.max = max(end, slider.min + step)
            slider.step = step
            slider.value = min(value, slider.max)
            self._mirror()
        finally:
            self._picking = True

    def _on_time(self, change: dict[str, Any]) -> None:
        self._mirror()
        if self._picking:  # not while a new result resets the slider
            run_guarded(self._lock, self.show_moment, self.outputs["why"])

    def _on_overlay(self, change: dict[str, Any]) -> None:
        """A click on the timelines: the slider goes there (and the view follows)."""
        slider = self.outputs["time"]
        if abs(float(change["new"]) - float(slider.value)) > 1e-9:
            slider.value = min(max(float(change["new"]), slider.min), slider.max)

    def _mirror(self) -> None:
        """The overlay on the timelines spans the slider's range and sits at its value."""
        slider, overlay = self.outputs["time"], self.overlay
        with overlay.hold_trait_notifications():
            if overlay.max != slider.max:
                overlay.max = slider.max
            overlay.step = slider.step
        if overlay.value != slider.value:
            overlay.value = slider.value

    def _on_pick(self, change: dict[str, Any]) -> None:
        if self._picking:
            run_guarded(self._lock, self.show_why, self.outputs["why"])


def worth_seeing(result: Result) -> float:
    """A moment worth seeing: when the queue is longest (the first such moment); when no job
    ever waits, when the most GPUs are in use."""
    rows = result.timeline[result.timeline["vc"] == "(all)"]
    if not len(rows):
        return 0.0
    waiting = rows["waiting_jobs"].to_numpy()
    column = rows["waiting_jobs"] if waiting.max() > 0 else rows["used_gpus"]
    return float(rows["time"].iloc[column.to_numpy().argmax()])
