"""Running a sweep: in this process, on a local Dask cluster, or on the user's Dask cluster.

Where runs go:

* ``client=`` or ``scheduler_address=``: on that cluster.
* ``workers=0`` or ``1`` (or Dask not installed): one after another in this process (a
  cluster of one worker would run them one after another too, after seconds of start-up).
* ``workers=N`` (N >= 2): a ``dask.distributed.LocalCluster`` of ``N`` worker processes of
  one thread each, bound to 127.0.0.1, started for the call and closed after it. It speaks TLS with
  temporary credentials made for it (``Security.temporary()``; clients and workers must show
  them), so no other local process can submit work to it; it serves no dashboard unless
  ``dashboard=True``.
* ``workers=None`` (default): runs start in this process; as soon as the runs left look
  longer than :data:`IN_PROCESS_BUDGET` seconds (from the mean time of those done), a
  LocalCluster with one worker per core starts in a thread, runs go on here until it is up,
  and the rest go to it. So a tiny sweep never pays for a cluster, and a large one does not
  wait for it.

Workloads and clusters named by preset are built where a run executes, from the preset's
parameters and the run's seed; objects given by the user are scattered to the cluster once.
Dask imports happen only when a cluster is used (``import analysim`` never imports Dask).

With ``out``, each run is claimed before it is computed (:class:`~analysim.sweep.store.RunStore`)
so two sweeps on one folder never compute a run twice, and a Dask worker that can see the
folder saves its run's file itself, so a run finished before a worker died is not computed
again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import logging
import multiprocessing
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from analysim import presets
from analysim.engine.progress import progress_bar
from analysim.faces.extras import missing_package
from analysim.inputs.config import SimConfig
from analysim.inputs.elastic import with_elastic_jobs
from analysim.simulate import simulate
from analysim.sweep.grid import ELASTIC_SHARE, Run, expand
from analysim.sweep.store import OUTCOME, RunStore, row, save_where_seen, saved_outcome
from analysim.version import code_version

log = logging.getLogger("analysim.sweep")

IN_PROCESS_BUDGET = 10.0
"""Seconds of estimated remaining work up to which an automatic sweep stays in-process."""
RETRIES = 2
"""Dask ``retries=`` of each run: re-runs after an exception escaping the run itself. A run
whose worker dies is re-run by the scheduler (up to ``distributed.scheduler.allowed-failures``
times, default 3) before its row says ``KilledWorker``."""

GUARD = (
    "A script that calls analysim.sweep must call it under 'if __name__ == \"__main__\":' "
    "(worker processes import the script again; see docs/sweeps.md)."
)

QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,  # a stack sample every 10 ms
    "distributed.admin.tick.interval": "1s",  # an event-loop health tick, every 20 ms
    "distributed.admin.system-monitor.interval": "5s",  # dashboard figures, every 0.5 s
    "distributed.worker.memory.monitor-interval": "1s",  # memory limit check, every 0.1 s
}
"""Dask settings of the local cluster: fewer background wake-ups, which take the GIL from the
run (about 10% less CPU per run on 4-day venus runs)."""

CLAIM_POLL = 0.5
"""Seconds between looks at a run another sweep has claimed."""

NO_HTTP = {
    "distributed.scheduler.http.routes": ["distributed.http.health"],
    "distributed.worker.http.routes": ["distributed.http.health"],
}
"""Without ``dashboard=True``: the scheduler and workers serve no dashboard, no JSON state and
no proxy over HTTP (only the health check Dask always answers, on loopback)."""

Outcome = dict[str, Any]
Finish = Callable[[Run, Outcome, bool], None]


# -- one run (executes on a worker) ------------------------------------------------------------
def _error(message: str, seconds: float = 0.0) -> Outcome:
    return {"metrics": {}, "status": "error", "error": message, "seconds": seconds}


def execute(
    run: Run, workload: Any = None, cluster: Any = None, modules: Sequence[str] = ()
) -> Outcome:
    """Build the run's workload and cluster (unless given), simulate, and summarise.

    An exception becomes an error outcome carrying its message; the sweep goes on.
    """
    start = time.perf_counter()
    try:
        for module in modules:
            importlib.import_module(module)
        params = dict(run.workload_params)
        share = params.pop(ELASTIC_SHARE, None)
        if workload is None:
            workload = presets.workload(run.workload.preset, seed=run.seed, **params)
        if share is not None:
            workload = with_elastic_jobs(workload, share, seed=run.seed)
        if cluster is None:
            cluster = presets.cluster(run.cluster.preset, **run.cluster_params)
        config = SimConfig.from_dict({**run.options, "seed": run.seed})
        summary = simulate(workload, cluster, config).summary()
    except Exception as exc:
        return _error(f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    return {
        "metrics": {str(name): float(value) for name, value in summary.items()},
        "status": "ok",
        "error": None,
        "seconds": time.perf_counter() - start,
    }


def execute_and_save(
    run: Run,
    workload: Any = None,
    cluster: Any = None,
    modules: Sequence[str] = (),
    folder: str | None = None,
    retry_errors: bool = False,
) -> Outcome:
    """:func:`execute` on a worker that saves the run's file itself when it can see the out
    ``folder``; a run whose file is already there (computed before its worker died) is
    returned from it, not computed again."""
    if folder is not None:
        stored = saved_outcome(folder, run)
        if stored is not None and (stored["status"] == "ok" or not retry_errors):
            return {**stored, "saved": True}
    outcome = execute(run, workload, cluster, modules)
    saved = folder is not None and save_where_seen(folder, run, outcome)
    return {**outcome, "saved": saved}


def _portable(run: Run) -> Run:
    """The run without the user's objects (they travel once, scattered)."""
    return dataclasses.replace(
        run,
        workload=dataclasses.replace(run.workload, obj=None),
        cluster=dataclasses.replace(run.cluster, obj=None),
    )


# -- backends ----------------------------------------------------------------------------------
def _in_process(
    runs: Sequence[Run], finish: Finish, modules: Sequence[str], budget: float | None
) -> list[Run]:
    """Run in this process; with a ``budget``, stop when the runs left look longer than it and
    return them."""
    spent = 0.0
    for done, run in enumerate(runs):
        left = len(runs) - done
        if budget is not None and done and spent / done * left > budget:
            return list(runs[done:])
        start = time.perf_counter()
        finish(run, execute(run, run.workload.obj, run.cluster.obj, modules), True)
        spent += time.perf_counter() - start
    return []


def _on_dask(
    client: Any,
    runs: Sequence[Run],
    finish: Finish,
    modules: Sequence[str],
    folder: str | None = None,
    retry_errors: bool = False,
) -> None:
    from dask.distributed import as_completed

    first = runs[0]
    shipped = [
        client.scatter(source.obj, hash=False) if source.obj is not None else None
        for source in (first.workload, first.cluster)
    ]
    token = uuid.uuid4().hex[:8]
    futures = {
        client.submit(
            execute_and_save,
            _portable(run),
            *shipped,
            tuple(modules),
            folder,
            retry_errors,
            key=f"analysim-run-{run.key}-{token}",
            retries=RETRIES,
        ): run
        for run in runs
    }
    try:
        for future in as_completed(futures):
            run = futures.pop(future)  # released once read: a later worker death cannot
            try:  # make the scheduler compute it again
                finish(run, future.result(), True)
            except Exception as exc:  # the run never returned: its workers died, ...
                finish(run, _error(f"{type(exc).__name__}: {exc}"), False)
            future.release()
    finally:
        client.cancel([f for f in futures if not f.done()])


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def local_cluster(workers: int, dashboard: bool = False) -> Iterator[Any]:
    """A LocalCluster on loopback that only holders of its temporary TLS credentials can use
    (and a client of it); a dashboard on a free loopback port only if ``dashboard``."""
    import dask
    from dask.distributed import Client, LocalCluster

    log.info("sweep: starting a local Dask cluster of %d worker processes", workers)
    security = _temporary_security()
    try:
        with dask.config.set({**QUIET_WORKERS, **({} if dashboard else NO_HTTP)}):
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                security=security,  # TLS, client certificates required
                dashboard_address="127.0.0.1:0",  # loopback, any free port
                scheduler_kwargs={"dashboard": dashboard},
                # distributed's own log (in this process and the workers) only for what is
                # critical: under load, closing the cluster can race a worker's heartbeat or a
                # nanny's close, and it logs an ERROR with a traceback although nothing went
                # wrong; a run's own errors reach the client and are raised here
                silence_logs=logging.CRITICAL,
            )
    except RuntimeError as exc:
        raise RuntimeError(
            f"sweep: the local Dask cluster did not start ({exc}). If run from a script: {GUARD}"
        ) from exc
    try:
        client = Client(cluster, security=security)  # not "with": that ties the client to
        # this thread's context
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _temporary_security() -> Any:
    """``Security.temporary()``: TLS credentials made for one cluster, held in memory."""
    from distributed.security import Security

    try:
        return Security.temporary()
    except ImportError as exc:
        raise missing_package("cryptography", "sweep on a local Dask cluster") from exc


@contextlib.contextmanager
def _remote(address: str) -> Iterator[Any]:
    from dask.distributed import Client

    try:
        client = Client(address, timeout="20s")
    except OSError as exc:
        raise OSError(f"sweep: cannot reach the Dask scheduler at {address}: {exc}") from None
    with client:
        yield client


def _have_dask() -> bool:
    return importlib.util.find_spec("distributed") is not None


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where and how the runs of one sweep call execute (the arguments of :func:`sweep`)."""

    client: Any = None
    scheduler_address: str | None = None
    workers: int | None = None
    modules: Sequence[str] = ()
    folder: str | None = None  # the out folder, where workers save runs they can see it
    retry_errors: bool = False
    dashboard: bool = False

    def on_dask(self, client: Any, runs: Sequence[Run], finish: Finish) -> None:
        _on_dask(client, runs, finish, self.modules, self.folder, self.retry_errors)


def _dispatch(runs: list[Run], finish: Finish, where: Placement) -> str:
    """Run ``runs`` where ``where`` says; return a description of where."""
    modules = where.modules
    if where.client is not None:
        where.on_dask(where.client, runs, finish)
        return f"Dask client {where.client.scheduler.address}"
    if where.scheduler_address is not None:
        with _remote(where.scheduler_address) as remote:
            where.on_dask(remote, runs, finish)
        return f"Dask scheduler {where.scheduler_address}"
    auto = where.workers is None
    count = _cores() if auto else where.workers
    # one worker process would run the runs one after another, as here, after its start-up
    if count <= 1 or len(runs) <= 1:
        _in_process(runs, finish, modules, None)
        return "in-process"
    if not _have_dask():
        if not auto:
            raise missing_package("distributed", "sweep with workers=")
        log.warning("sweep: dask.distributed is not installed; running in this process")
        _in_process(runs, finish, modules, None)
        return "in-process"
    size = min(count, len(runs))
    if not auto:
        with local_cluster(size, where.dashboard) as local:
            where.on_dask(local, runs, finish)
        return f"local Dask cluster ({size} workers)"
    left = _in_process(runs, finish, modules, IN_PROCESS_BUDGET)
    if not left:
        return "in-process"
    size = min(count, len(left))
    here = _overlapped(left, finish, where, size)
    return f"local Dask cluster ({size} workers; {here} runs in-process while it started)"


def _overlapped(runs: Sequence[Run], finish: Finish, where: Placement, size: int) -> int:
    """Start a LocalCluster in a thread, run runs here until it is up and the rest on it;
    return how many ran here. The cluster is closed however this ends."""
    left = list(runs)
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(1) as pool:
        starting = pool.submit(stack.enter_context, local_cluster(size, where.dashboard))
        try:
            while left and not starting.done():
                run = left.pop(0)
                outcome = execute(run, run.workload.obj, run.cluster.obj, where.modules)
                finish(run, outcome, True)
        finally:
            client = starting.result()  # the stack closes the cluster even after an error
        if left:
            where.on_dask(client, left, finish)
    return len(runs) - len(left)


def _claim(store: RunStore | None, runs: list[Run], mine: list[Run]) -> list[Run]:
    """Claim ``runs`` into ``mine`` (to compute); return those another sweep holds (to wait
    for)."""
    if store is None:
        mine.extend(runs)
        return []
    theirs = []
    for run in runs:
        (mine if store.claim(run.key) else theirs).append(run)
    if theirs:
        log.warning(
            "sweep: %d run(s) are being computed by another sweep on %s; waiting for them",
            len(theirs),
            store.folder,
        )
    return theirs


def _await_others(
    store: RunStore, runs: list[Run], finish: Finish, where: Placement, claimed: list[Run]
) -> None:
    """Wait for the runs another sweep claimed: reuse each file when it appears; compute
    (here) those whose claim goes stale."""
    waiting = list(runs)
    while waiting:
        left = []
        for run in waiting:
            stored = store.load(run)
            if stored is not None and (stored["status"] == "ok" or not where.retry_errors):
                finish(run, {**stored, "saved": True, "elsewhere": True}, True)
            elif store.claim(run.key):
                claimed.append(run)
                _in_process([run], finish, where.modules, None)
            else:
                left.append(run)
        waiting = left
        if waiting:
            time.sleep(CLAIM_POLL)


# -- the sweep ---------------------------------------------------------------------------------
def sweep(
    grid: Any,
    *,
    workload: Any,
    cluster: Any = None,
    seeds: Sequence[int] = (0,),
    client: Any = None,
    scheduler_address: str | None = None,
    out: str | Path | None = None,
    workers: int | None = None,
    modules: Sequence[str] = (),
    retry_errors: bool = False,
    progress: bool = True,
    dashboard: bool = False,
) -> pd.DataFrame:
    """Run every configuration of ``grid`` with every seed; one tidy row per run.

    ``grid``: a dict of value lists, its cartesian product swept (``{"scheduler": ["fifo",
    "las"], "workload.load_scale": [0.6, 1.0]}``), or a list of configurations (dicts or
    SimConfigs). Keys are SimConfig fields and preset parameters prefixed ``workload.`` /
    ``cluster.``. ``workload`` / ``cluster``: preset names (``cluster`` defaults to the
    workload's preset) or Workload / Cluster objects. Each seed seeds both the preset workload
    and the run.

    ``client`` / ``scheduler_address`` run on that Dask cluster; otherwise ``workers`` (None:
    automatic, 0 or 1: this process, N >= 2: a local cluster of N processes; see the module
    docstring).
    ``out``: a folder where each finished run is saved at once; calling the same sweep again
    returns the runs saved there instead of running them (``retry_errors=True`` re-runs the
    failed ones); runs are claimed there first, so two sweeps on one folder share the work
    instead of computing a run twice. ``modules``: modules to import where runs execute, e.g.
    ones registering custom policies by name. ``dashboard``: serve the local Dask cluster's
    dashboard (on loopback; off by default).

    Returns the frame: ``workload``, ``cluster``, the grid's parameters, ``seed``, the
    summary metrics (:meth:`Result.summary`), ``status`` (``ok`` / ``error``), ``error`` (the
    message), ``seconds`` (the run's time) and ``run_id`` (its key). ``frame.attrs`` holds
    the counts (``runs``, ``failed``, ``computed``, ``reused``, ``reused_other_version``:
    reused runs that other code made, which a warning reports). In a script, call it under
    ``if __name__ == "__main__":`` (worker processes re-import the main module).
    """
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(f"sweep: called while a worker process was starting. {GUARD}")
    if client is not None and scheduler_address is not None:
        raise ValueError("sweep: give client= or scheduler_address=, not both")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 0
    ):
        raise ValueError(f"sweep: workers must be a whole number >= 0 or None, got {workers!r}")
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(
                f"sweep: cannot import module {module!r} from modules=: {exc}"
            ) from None
    runs = expand(grid, workload=workload, cluster=cluster, seeds=seeds)
    store = RunStore(out) if out is not None else None
    started = time.perf_counter()
    outcomes: dict[str, Outcome] = {}
    if store is not None:
        for run in runs:
            stored = store.load(run)
            if stored is not None and (stored["status"] == "ok" or not retry_errors):
                outcomes[run.key] = stored
    reused = len(outcomes)
    reused_other = _report_other_versions(outcomes, store)
    elsewhere = []
    with progress_bar(
        total=len(runs), initial=reused, unit="run", desc="sweep", disable=not progress
    ) as bar:

        def finish(run: Run, outcome: Outcome, durable: bool) -> None:
            outcome = dict(outcome)
            saved = outcome.pop("saved", False)
            if outcome.pop("elsewhere", False):
                elsewhere.append(run.key)
            outcomes[run.key] = outcome
            if store is not None and durable and not saved:
                store.save(run, outcome)
            bar.update(1)

        pending = [run for run in runs if run.key not in outcomes]
        for run in pending:
            if run.invalid is not None:
                finish(run, _error(run.invalid), True)
        pending = [run for run in pending if run.invalid is None]
        where = "none run: all finished before" if reused else "none run: all invalid"
        placement = Placement(
            client,
            scheduler_address,
            workers,
            tuple(modules),
            None if store is None else str(store.folder),
            retry_errors,
            dashboard,
        )
        claimed: list[Run] = []  # filled as runs are claimed, so the finally releases them
        try:
            theirs = _claim(store, pending, claimed)
            if theirs and not claimed:
                where = "another sweep on the same folder"
            if claimed:
                where = _dispatch(claimed, finish, placement)
            if theirs:
                _await_others(store, theirs, finish, placement, claimed)
        finally:
            for run in claimed if store is not None else ():
                store.release(run.key)
            if store is not None:
                store.close()
    reused += len(elsewhere)
    frame = assemble(runs, outcomes)
    frame.attrs.update(
        runs=len(runs),
        failed=int((frame["status"] != "ok").sum()),
        computed=len(runs) - reused,
        reused=reused,
        reused_other_version=reused_other,
        where=where,
        out=None if store is None else str(store.folder),
        elapsed=time.perf_counter() - started,
    )
    if store is not None:
        store.save_frame(frame)
    _log_summary(frame)
    return frame


def _report_other_versions(outcomes: dict[str, Outcome], store: RunStore | None) -> int:
    """Warn about reused runs that other code made (they are reused as they are); how many."""
    current = code_version()
    other = Counter(
        str(o.get("version") or "unknown") for o in outcomes.values() if o.get("version") != current
    )
    if other:
        versions = ", ".join(f"{n} by {version}" for version, n in other.most_common())
        log.warning(
            "sweep: %d of the %d runs reused from %s were made by other analysim code (%s), "
            "not by this code (%s); they are reused as they are. To run them with this "
            "code, sweep into a new folder.",
            sum(other.values()),
            len(outcomes),
            store.folder if store is not None else None,
            versions,
            current,
        )
    return sum(other.values())


def assemble(runs: Sequence[Run], outcomes: dict[str, Outcome]) -> pd.DataFrame:
    """The tidy frame of ``runs`` in their order: parameters, seed, metrics, outcome."""
    rows = [row(run, outcomes[run.key]) for run in runs]
    metric_names = list(dict.fromkeys(m for run in runs for m in outcomes[run.key]["metrics"]))
    params = list(runs[0].params) if runs else []
    columns = ["workload", "cluster", *params, "seed", *metric_names, *OUTCOME]
    return pd.DataFrame.from_records(rows, columns=columns)


def _log_summary(frame: pd.DataFrame) -> None:
    attrs = frame.attrs
    log.info(
        "sweep: %d runs, %d failed; %d computed (%s), %d reused from %s; %.1f s",
        attrs["runs"],
        attrs["failed"],
        attrs["computed"],
        attrs["where"],
        attrs["reused"],
        attrs["out"],
        attrs["elapsed"],
    )
    if attrs["failed"]:
        errors = frame.loc[frame["status"] != "ok", "error"].value_counts()
        shown = "; ".join(f"{n} x {message}" for message, n in errors.head(3).items())
        log.warning("sweep: %d of %d runs failed: %s", attrs["failed"], attrs["runs"], shown)
