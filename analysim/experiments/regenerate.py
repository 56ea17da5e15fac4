"""Regenerate the figures: run the parameterised notebooks with papermill.

``analysim figures`` (:func:`run_notebooks`) executes every notebook in ``notebooks/`` (or
those chosen with ``--only``), in parallel on a local Dask cluster when more than one runs,
writes the executed copies to ``build/notebooks/`` (git-ignored) and reports each notebook
that failed with its failing cell while the others finish. The notebooks themselves write the
figures (SVG, PNG and CSV) into ``figures_dir``, with the calls of
:mod:`analysim.experiments.figures`.

Each notebook declares the small parameters ``--quick`` uses (for CI and tests) in its
metadata, ``metadata["analysim"]["quick"]``, and about how many seconds its committed
parameters take, ``metadata["analysim"]["seconds"]``: with no log of an earlier run (a fresh
clone, as in CI) the longest notebooks still start first.

papermill, nbformat and dask are imported only when notebooks are run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysim.engine.progress import progress_bar

log = logging.getLogger(__name__)

KERNEL = "python3"
FIGURES_PARAMETER = "figures_dir"
NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"


# -- the notebooks ----------------------------------------------------------------------------
def repo_root() -> Path:
    """The checkout this package lives in (when it has ``notebooks/``), else the current
    folder."""
    here = Path(__file__).resolve().parents[2]
    return here if (here / "notebooks").is_dir() else Path.cwd()


def find_notebooks(folder: str | Path) -> dict[str, Path]:
    """The figure notebooks in ``folder``, by name (file stem), sorted: the ``NN_name.ipynb``
    files whose metadata has an ``analysim`` entry (where they keep their quick
    parameters); other notebooks, such as the interactive explorer, are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no notebooks folder at {folder}")
    return {
        path.stem: path
        for path in sorted(folder.glob(NOTEBOOK_PATTERN))
        if "analysim" in _read(path).metadata
    }


def select(notebooks: Mapping[str, Path], only: Iterable[str] | None) -> dict[str, Path]:
    """The notebooks named in ``only``: a full name (``02_scheduling_policies``), its number
    (``02``) or the part after it (``scheduling_policies``). Unknown names are an error that
    lists the known ones."""
    if not only:
        return dict(notebooks)
    chosen: dict[str, Path] = {}
    for wanted in only:
        matches = [
            name
            for name in notebooks
            if wanted in (name, name.split("_", 1)[0], name.split("_", 1)[-1])
        ]
        if len(matches) != 1:
            problem = "unknown" if not matches else "ambiguous"
            raise ValueError(
                f"--only: {problem} notebook {wanted!r}; the notebooks are "
                f"{', '.join(notebooks) or '(none)'}"
            )
        chosen[matches[0]] = notebooks[matches[0]]
    return {name: chosen[name] for name in notebooks if name in chosen}


def _read(path: Path) -> Any:
    import nbformat

    return nbformat.read(path, as_version=4)


def notebook_parameters(path: str | Path) -> dict[str, Any]:
    """The parameters a notebook declares in its ``parameters`` cell, with their defaults as
    written there (source text)."""
    import papermill

    return {
        name: info["default"]
        for name, info in papermill.inspect_notebook(str(path)).items()  # type: ignore[union-attr]
    }


def quick_parameters(path: str | Path) -> dict[str, Any]:
    """The small parameters the notebook declares for ``--quick`` (its
    ``metadata["analysim"]["quick"]``)."""
    return dict(_read(Path(path)).metadata.get("analysim", {}).get("quick", {}))


def declared_seconds(notebooks: Mapping[str, Path]) -> dict[str, float]:
    """Seconds each notebook declares its committed parameters take
    (``metadata["analysim"]["seconds"]``; notebooks that declare none are left out): the
    order to start them in when no log of an earlier run says better."""
    declared = {}
    for name, path in notebooks.items():
        seconds = _read(Path(path)).metadata.get("analysim", {}).get("seconds")
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
                raise ValueError(
                    f"{path}: metadata analysim.seconds must be a number >= 0, got {seconds!r}"
                )
            declared[name] = float(seconds)
    return declared


def parse_value(text: str) -> Any:
    """A ``-p name value`` value: YAML (so ``3``, ``-1.5``, ``true``, ``[fifo, sjf]``), or
    the text itself when it is not valid YAML."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


@dataclass
class Outcome:
    """How one notebook run went."""

    name: str
    ok: bool
    seconds: float
    output: Path
    cell: int | None = None
    error: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: ``ok 02_scheduling_policies (34.2 s)`` or what failed and where."""
        if self.ok:
            return f"ok      {self.name} ({self.seconds:.1f} s)"
        where = f" in cell {self.cell}" if self.cell is not None else ""
        return f"FAILED  {self.name}{where}: {self.error} (see {self.output})"


def run_notebook(
    path: str | Path,
    output: str | Path,
    parameters: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = None,
) -> Outcome:
    """Execute one notebook with papermill (working folder: the notebook's own), writing the
    executed copy to ``output``; never raises for a failing cell (see :class:`Outcome`)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    path, output = Path(path), Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    parameters = dict(parameters or {})
    start = time.perf_counter()
    outcome = Outcome(path.stem, True, 0.0, output, parameters=parameters)
    try:
        with _importable_here():
            _execute(papermill, path, output, parameters, timeout)
    except PapermillExecutionError as exc:
        outcome.ok = False
        outcome.cell = exc.cell_index
        outcome.error = f"{exc.ename}: {' '.join(str(exc.evalue).split())}"
    except Exception as exc:  # a kernel that died, a notebook that cannot be read, ...
        outcome.ok = False
        outcome.error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    outcome.seconds = time.perf_counter() - start
    return outcome


def _execute(papermill: Any, path: Path, output: Path, parameters: dict, timeout: Any) -> None:
    papermill.execute_notebook(
        str(path),
        str(output),
        parameters=parameters,
        kernel_name=KERNEL,
        cwd=str(path.parent),
        progress_bar=False,
        execution_timeout=timeout,
        # the kernel's own log lines (a warning that a loopback kernel runs over TCP without
        # encryption, an error when it is interrupted at shutdown) are not the user's
        # business; cell errors still surface in the outcome
        extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
    )


@contextmanager
def _importable_here() -> Iterator[None]:
    """Put the folder holding this ``analysim`` first on the kernels' ``PYTHONPATH``, so the
    notebooks import the same package that runs them (installed or not)."""
    package_parent = str(Path(__file__).resolve().parents[2])
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, before]))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def plan(
    notebooks: Mapping[str, Path],
    *,
    quick: bool = False,
    overrides: Mapping[str, Any] | None = None,
    figures_dir: str | Path | None = None,
) -> dict[str, dict[str, Any]]:
    """The parameters each notebook runs with: its quick ones (with ``quick``), then
    ``figures_dir``, then the ``overrides`` it declares. An override that no chosen notebook
    declares is an error."""
    overrides = dict(overrides or {})
    declared = {name: notebook_parameters(path) for name, path in notebooks.items()}
    unknown = sorted(set(overrides) - {p for params in declared.values() for p in params})
    if unknown:
        raise ValueError(
            f"-p: no chosen notebook has parameter(s) {unknown}; see "
            "'papermill --help-notebook notebooks/NAME.ipynb'"
        )
    plans = {}
    for name, path in notebooks.items():
        params = quick_parameters(path) if quick else {}
        if figures_dir is not None and FIGURES_PARAMETER in declared[name]:
            params[FIGURES_PARAMETER] = str(Path(figures_dir).resolve())
        params.update({k: v for k, v in overrides.items() if k in declared[name]})
        plans[name] = params
    return plans


def run_notebooks(
    notebooks: Mapping[str, Path],
    plans: Mapping[str, Mapping[str, Any]],
    output_dir: str | Path,
    *,
    workers: int = 2,
    progress: bool = True,
    timeout: float | None = None,
    expected: Mapping[str, float] | None = None,
) -> list[Outcome]:
    """Run the notebooks (on a local Dask cluster of ``workers`` processes when there are
    several and ``workers > 1``; else one after another); return their outcomes in
    ``notebooks`` order. ``expected`` (seconds per notebook, e.g. from the last run's log)
    starts the longest first on Dask, so the run ends sooner."""
    output_dir = Path(output_dir)
    jobs = [
        (name, path, output_dir / path.name, plans.get(name, {}))
        for name, path in notebooks.items()
    ]
    bar = progress_bar(total=len(jobs), desc="notebooks", unit="nb", disable=not progress)
    outcomes: dict[str, Outcome] = {}
    try:
        if workers > 1 and len(jobs) > 1:
            for outcome in _run_on_dask(jobs, min(workers, len(jobs)), timeout, expected or {}):
                outcomes[outcome.name] = outcome
                bar.set_postfix_str(outcome.name)
                bar.update()
        else:
            for name, path, output, params in jobs:
                bar.set_postfix_str(name)
                outcomes[name] = run_notebook(path, output, params, timeout=timeout)
                bar.update()
    finally:
        bar.close()
    return [outcomes[name] for name in notebooks]


def longest_first(jobs: list[tuple], expected: Mapping[str, float]) -> list[tuple]:
    """``jobs`` (tuples whose first item is the notebook's name) by ``expected`` seconds,
    longest first; those with equal or no expectation keep their order."""
    return sorted(jobs, key=lambda job: -expected.get(job[0], 0.0))


def _run_on_dask(
    jobs: list[tuple], workers: int, timeout: float | None, expected: Mapping[str, float]
) -> Iterable[Outcome]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError as exc:
        raise RuntimeError(
            "running notebooks in parallel needs dask.distributed "
            "(pip install 'analysim[sweeps]'), or use --workers 1"
        ) from exc
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit=0,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        # longest first: submitted in that order (the scheduler may hand out the first before
        # it sees the rest) and prioritised by it (a worker runs its queued tasks so)
        futures = [
            client.submit(
                run_notebook,
                path,
                output,
                params,
                timeout=timeout,
                key=f"nb-{name}",
                priority=round(expected.get(name, 0.0)),
            )
            for name, path, output, params in longest_first(jobs, expected)
        ]
        for future in as_completed(futures):
            yield future.result()


def read_log(path: str | Path) -> dict[str, float]:
    """Seconds per notebook from a log :func:`write_log` wrote (empty if there is none or it
    cannot be read)."""
    try:
        records = json.loads(Path(path).read_text())
        return {str(r["name"]): float(r["seconds"]) for r in records}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def write_log(outcomes: Sequence[Outcome], path: str | Path) -> Path:
    """A JSON record of the run (name, ok, seconds, failing cell, error, parameters); the
    records of notebooks not run this time are kept from the log already there."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ran = {o.name for o in outcomes}
    try:
        kept = [r for r in json.loads(path.read_text()) if r.get("name") not in ran]
    except (OSError, ValueError, TypeError, AttributeError):
        kept = []
    records = [
        {
            "name": o.name,
            "ok": o.ok,
            "seconds": round(o.seconds, 1),
            "cell": o.cell,
            "error": o.error,
            "parameters": o.parameters,
        }
        for o in outcomes
    ]
    records = sorted([*kept, *records], key=lambda r: str(r.get("name")))
    path.write_text(json.dumps(records, indent=2, default=str) + "\n")
    return path


def default_figures_dir(*, quick: bool, overridden: bool, update: bool) -> str:
    """Where ``analysim figures`` writes, relative to the checkout: the committed
    ``figures/`` only for the committed parameters (or when told to ``update`` them), else a
    folder under the git-ignored ``build/``, so an experiment never overwrites them."""
    if update:
        return "figures"
    if quick:
        return "build/figures-quick"
    return "build/figures" if overridden else "figures"


def default_workers() -> int:
    """Two workers (or the CPUs, if fewer): notebooks mostly wait on one simulation each."""
    return max(1, min(2, os.cpu_count() or 1))


# -- the command ------------------------------------------------------------------------------
def add_figures_command(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``analysim figures`` to the CLI's subcommands."""
    figures = commands.add_parser(
        "figures",
        parents=[common],
        help="regenerate the figures: run the notebooks with papermill",
        description="Run the parameterised notebooks in notebooks/ with papermill (in "
        "parallel on a local Dask cluster), writing the figures (SVG, PNG, CSV) to figures/ "
        "(to build/figures/ when -p changes a parameter, unless --update) and the executed "
        "notebooks to build/notebooks/. Any notebook that fails is "
        "reported with its failing cell while the others finish; the exit code is 1 if any "
        "failed.",
    )
    figures.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this notebook: its name (02_scheduling_policies), number (02) or "
        "topic (scheduling_policies); repeatable",
    )
    figures.add_argument(
        "--quick",
        action="store_true",
        help="small parameters (each notebook's own), for CI; figures go to "
        "build/figures-quick/ unless --figures-dir is given",
    )
    figures.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        default=[],
        help="set a notebook parameter (VALUE as YAML: 3, 0.5, true, [fifo, sjf]); "
        "passed to the notebooks that declare it; repeatable",
    )
    figures.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        metavar="N",
        help="notebooks run at once, each in a Dask worker process; 1 runs them one after "
        "another in this process (default: %(default)s)",
    )
    figures.add_argument(
        "--figures-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the notebooks write figures (default: figures/ of the checkout; "
        "build/figures/ when -p changes a parameter, build/figures-quick/ with --quick)",
    )
    figures.add_argument(
        "--update",
        action="store_true",
        help="write into figures/ of the checkout even with -p or --quick (the committed "
        "figures then show your parameters)",
    )
    figures.add_argument(
        "--notebooks",
        type=Path,
        default=None,
        metavar="DIR",
        help="the notebooks folder (default: notebooks/ of the checkout)",
    )
    figures.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the executed notebooks go (default: build/notebooks/ of the checkout)",
    )
    figures.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fail a notebook cell that runs longer than this (default: no limit)",
    )
    figures.add_argument("--no-progress", action="store_true", help="no progress bar")
    figures.set_defaults(handler=cmd_figures)


def cmd_figures(args: argparse.Namespace) -> int:
    """``analysim figures``: run the notebooks, print one line per notebook."""
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    root = repo_root()
    notebooks = select(find_notebooks(args.notebooks or root / "notebooks"), args.only)
    if not notebooks:
        raise ValueError(f"no notebooks ({NOTEBOOK_PATTERN}) in {args.notebooks or root}")
    overrides = {name: parse_value(value) for name, value in args.parameter}
    figures_dir = args.figures_dir or root / default_figures_dir(
        quick=args.quick, overridden=bool(overrides), update=args.update
    )
    plans = plan(notebooks, quick=args.quick, overrides=overrides, figures_dir=figures_dir)
    out = args.out or root / "build" / "notebooks"
    log.info(
        "running %d notebook(s); figures to %s, executed notebooks to %s",
        len(notebooks),
        figures_dir,
        out,
    )
    log_path = Path(out) / "figures-log.json"
    start = time.perf_counter()
    outcomes = run_notebooks(
        notebooks,
        plans,
        out,
        workers=args.workers,
        progress=not args.no_progress,
        timeout=args.timeout,
        # the last run's seconds where there are any, else what the notebooks declare
        expected={**declared_seconds(notebooks), **read_log(log_path)},
    )
    write_log(outcomes, log_path)
    for outcome in outcomes:
        print(outcome.describe())
    failed = sum(not o.ok for o in outcomes)
    print(
        f"{len(outcomes) - failed} of {len(outcomes)} notebook(s) ran in "
        f"{time.perf_counter() - start:.1f} s" + (f"; {failed} failed" if failed else "")
    )
    return 1 if failed else 0
