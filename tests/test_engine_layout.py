"""The engine's layout: no import loop, each module importable alone, no module outside the
engine reading its private attributes, and the ledger checking every change it makes."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysim.engine.ledger import Ledger
from analysim.errors import PolicyError

PACKAGE = Path(__file__).resolve().parents[1] / "analysim"
ENGINE = PACKAGE / "engine"
# modules outside the engine allowed to read a private attribute of a simulation, until the
# explorer uses Simulation.projected_end() (then empty this)
TOLERATED: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_import_module(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")


def _imports(path: Path, own: str | None = None) -> set[str]:
    """The analysim modules ``path`` imports, at module level or inside functions (imports
    under ``if TYPE_CHECKING:`` are for type checkers only and do not count), and those it
    may import through ``importlib``: in a module that calls ``import_module``, every string
    naming an analysim module that it passes to ``import_module`` or holds in a dict, tuple
    or list (a table of submodules loaded on first use)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    if any(_is_import_module(node) for node in ast.walk(tree)):
        for node in ast.walk(tree):
            if _is_import_module(node):
                named = node.args[:1]  # type: ignore[attr-defined]
            elif isinstance(node, ast.Dict):
                named = node.values  # a table of lazy submodules
            elif isinstance(node, ast.Tuple | ast.List | ast.Set):
                named = node.elts
            else:
                continue
            found.update(
                c.value for c in named if isinstance(c, ast.Constant) and c.value in MODULES
            )

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    sub = f"{child.module}.{alias.name}"
                    found.add(sub if sub in MODULES else child.module)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            visit(child)

    visit(tree)
    # importing a module runs its packages' __init__ first: those are imported too (but a
    # module's own packages are under way already when it is imported)
    own = own or _module_name(path)
    parents = {".".join(m.split(".")[:k]) for m in found for k in range(1, m.count(".") + 1)}
    parents = {p for p in parents if not own.startswith(p + ".")}
    return {m for m in found | parents if m in MODULES and m != own}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import loops of ``graph`` (its strongly connected parts of more than one module,
    or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph[v]:
                loops.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return loops


def test_the_cycle_finder_finds_a_loop():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_loop_among_analysims_modules():
    graph = {name: _imports(path) for name, path in MODULES.items()}
    assert "analysim.engine.simulation" in graph["analysim.engine"]
    assert "analysim.engine.setup" in graph["analysim.engine.simulation"]
    assert "analysim.engine.ledger" in graph["analysim.engine.setup"]
    assert "analysim.sweep" in graph["analysim"]  # a lazy import, through importlib
    assert _cycles(graph) == []


def test_the_import_scan_follows_importlib(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n"
        "LAZY = {'sweep': 'analysim.sweep'}\n"
        "def f():\n    return importlib.import_module(LAZY['sweep'])\n"
    )
    assert "analysim.sweep" in _imports(probe, "analysim.probe")
    probe.write_text(  # a logger's name, never imported
        "import importlib, logging\nlog = logging.getLogger('analysim.sweep')\n"
        "importlib.import_module('analysim.engine')\n"
    )
    assert _imports(probe, "analysim.probe") == {"analysim.engine"}


ALONE = sorted(
    [_module_name(p) for p in ENGINE.glob("*.py")]
    + [
        "analysim.results.result",
        "analysim.results.state",
        "analysim.results.fragmentation",
        "analysim.results.explain",
        "analysim.results.wait_reason",
    ]
)


# One fresh interpreter imports the third-party packages analysim uses (no analysim module),
# then forks once per module, each child importing that module first: as many fresh starts
# of analysim as modules, for the price of one start of Python, numpy, pandas and scipy
# (about 0.15 s of CPU per module instead of 0.8 s in an interpreter of its own).
ALONE_SCRIPT = """
import json, os, sys, traceback
import numpy, pandas, scipy.optimize  # noqa: F401  (what analysim pulls in; not analysim)
assert not [m for m in sys.modules if m.split(".")[0] == "analysim"]
errors = {}
for module in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            __import__(module)
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    status = os.waitpid(pid, 0)[1]
    errors[module] = "" if os.waitstatus_to_exitcode(status) == 0 else (text or "failed")
print(json.dumps(errors))
"""
NOT_A_MODULE = "analysim.engine.no_such_module"  # must fail: the harness reports failures
SINGLE_THREADED = {
    name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
}


@pytest.fixture(scope="module")
def alone_imports() -> dict[str, str]:
    """Each module of ``ALONE`` (and ``NOT_A_MODULE``) imported first in a fresh analysim:
    the error, or "" for none."""
    if not hasattr(os, "fork"):  # one interpreter per module
        errors = {}
        for module in [*ALONE, NOT_A_MODULE]:
            done = subprocess.run(
                [sys.executable, "-c", f"import {module}"], capture_output=True, text=True
            )
            errors[module] = "" if done.returncode == 0 else (done.stderr or "failed")
        return errors
    done = subprocess.run(
        [sys.executable, "-c", ALONE_SCRIPT, *ALONE, NOT_A_MODULE],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **SINGLE_THREADED},  # no BLAS threads to fork across
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", ALONE)
def test_the_module_imports_alone_in_a_fresh_interpreter(module, alone_imports):
    assert alone_imports[module] == ""


def test_the_import_alone_check_reports_a_failed_import(alone_imports):
    assert "ModuleNotFoundError" in alone_imports[NOT_A_MODULE]


def _private_reads(path: Path) -> set[tuple[str, str]]:
    """(file, attribute) of each ``sim._x`` / ``simulation._x`` / ``self.sim._x`` read or
    written in ``path``, and of each ``getattr(sim, "_x", ...)``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = ast.unparse(node.value)
            if owner in {"sim", "simulation", "self.sim", "self._sim", "self.simulation"}:
                if not node.attr.startswith("__"):
                    found.add((path.name, node.attr))
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in {"getattr", "setattr", "hasattr"}
            and len(node.args) >= 2
            and ast.unparse(node.args[0]) in {"sim", "simulation"}
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            found.add((path.name, node.args[1].value))
    return found


def test_no_module_outside_the_engine_reads_its_private_attributes(tmp_path):
    outside = [p for p in PACKAGE.rglob("*.py") if ENGINE not in p.parents]
    found = set().union(*(_private_reads(p) for p in outside))
    assert found <= TOLERATED, sorted(found - TOLERATED)
    # the scan sees what it looks for
    probe = tmp_path / "probe.py"
    probe.write_text("def f(sim):\n    return sim._gpus, getattr(sim, '_las', None), sim.now\n")
    assert _private_reads(probe) == {("probe.py", "_gpus"), ("probe.py", "_las")}


_TRIALS = "the trial classes (_Trial and its kinds) are the evictions' own helpers, in its module"
#: (engine file, owner) allowed to read an underscore attribute of an object other than
#: ``self``, and why
ENGINE_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("evictions.py", "evictions"): _TRIALS,
    ("evictions.py", "self.evictions"): _TRIALS,
    ("book.py", "other"): "ResourceBook.clone sets up its own copy (the same class)",
}


def _foreign_private_reads(source: str, name: str) -> set[tuple[str, str, str]]:
    """(file, owner, attribute) of each ``owner._x`` in ``source`` whose owner is not
    ``self``, ``cls`` or ``super()`` (``sim._x``, ``self.sim._x``, ``rounds._x``), and of each
    ``getattr(owner, "_x")``; dunder names (``__class__``) do not count."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        attr, owner = None, None
        if isinstance(node, ast.Attribute):
            attr, owner = node.attr, ast.unparse(node.value)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in {"getattr", "setattr", "hasattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            attr, owner = node.args[1].value, ast.unparse(node.args[0])
        if (
            attr is not None
            and attr.startswith("_")
            and not attr.startswith("__")
            and owner not in {"self", "cls", "super()"}
        ):
            found.add((name, owner, attr))
    return found


def test_no_engine_part_reads_an_underscore_attribute_of_another_object():
    found: set[tuple[str, str, str]] = set()
    for path in sorted(ENGINE.glob("*.py")):
        found |= _foreign_private_reads(path.read_text(), path.name)
    unexplained = sorted(f for f in found if f[:2] not in ENGINE_EXCEPTIONS)
    assert not unexplained, unexplained
    # every exception is still needed (drop it when it is not)
    assert set(ENGINE_EXCEPTIONS) == {f[:2] for f in found}


def test_the_engine_scan_catches_a_private_read():
    probe = (
        "class Tenancy:\n"
        "    def f(self, sim):\n"
        "        sim._preempt(1)\n"
        "        self.sim._migrate(2)\n"
        "        n = getattr(sim, '_las') or self._own or super()._init() or self.__class__\n"
        "        return sim.facts.gpus[0] + self.sim.now + n\n"
    )
    assert _foreign_private_reads(probe, "probe.py") == {
        ("probe.py", "sim", "_preempt"),
        ("probe.py", "self.sim", "_migrate"),
        ("probe.py", "sim", "_las"),
    }


def test_the_parts_get_the_jobs_and_the_set_up_through_public_objects():
    import dataclasses

    import analysim as asim
    from analysim.engine.flags import Flags
    from analysim.engine.jobs import JobFacts
    from analysim.engine.resource_placement import ResourcePlacement

    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    assert type(sim.facts) is JobFacts and type(sim.flags) is Flags
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.facts.gpus = []  # type: ignore[misc]
    assert sim.facts.gpus == sim.gpus.tolist() and sim.facts.vc == sim.job_vc.tolist()
    assert sim.facts.group == sim.job_group.tolist() and sim.facts.usage is sim.facts.gpus
    assert sim.decider._gpus is sim.facts.gpus  # the rounds' local name for the same list
    assert sim.tenancy.borrowing == sim.flags.borrowing
    # the state changes the rounds and tenancy call are public and documented
    for name in ("start_running", "preempt", "migrate"):
        assert getattr(sim, name).__doc__, name
    shares = asim.Simulation(sim.workload, sim.cluster, asim.SimConfig(placement="fgd"))
    assert type(shares) is asim.Simulation and type(shares.facts) is JobFacts
    assert shares.facts.usage == [g * 1000 for g in shares.facts.gpus]  # GPU milli
    assert shares.facts.milli == sim.facts.milli == [1000] * sim.n_jobs  # whole GPUs either way
    assert type(shares.placement) is ResourcePlacement
    assert shares.decider._book_fit.placement is shares.placement
    assert shares.placement.book is shares.book is shares.ledger.book
    assert sim.ledger.book is None and sim.decider._book_fit is None


# -- the ledger -------------------------------------------------------------------------------
def _ledger(quota: int | None = None) -> Ledger:
    """Two nodes of 4 GPUs, VC 0; jobs of 3, 2 and 4 GPUs, all in group 0."""
    ledger = Ledger(
        np.array([4, 4]),
        np.array(["n0", "n1"], dtype=object),
        np.array(["j0", "j1", "j2"], dtype=object),
        ["a"],
        [3, 2, 4],
        [0, 0, 0],
        [quota] * 3,
    )
    ledger.set_groups([0, 0, 0], [np.array([0, 1])])
    return ledger


def test_the_ledger_takes_and_releases_lowest_gpus_first():
    ledger = _ledger()
    assert ledger.take(0, np.array([0]), np.array([3]), False, now=0.0) == ((0, 1, 2),)
    assert ledger.take(1, np.array([0, 1]), np.array([1, 1]), True, now=10.0) == ((3,), (4,))
    assert ledger.free.tolist() == [0, 3] and ledger.group_free == [3]
    assert (ledger.vc_used, ledger.vc_borrowed, ledger.vc_running_jobs) == ([3], [2], [2])
    assert ledger.gpu_owner().tolist() == [0, 0, 0, 1, 1, -1, -1, -1]
    ledger.release(0, at=20.0, elapsed=20.0)
    ledger.release(1, at=30.0, elapsed=20.0)
    assert ledger.free.tolist() == [4, 4] and ledger.free_slots == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ledger.borrowed_gpu_seconds.tolist() == [0.0, 40.0, 0.0]
    # 3 GPUs over 0-20 and 2 borrowed over 10-30: 60 + 40 GPU-seconds
    assert ledger.busy_gpu_seconds(now=100.0).tolist() == [100.0]
    assert ledger.borrowers == {} and ledger.alloc_nodes == {}


def test_the_ledger_refuses_a_double_booking_and_a_vc_over_its_quota():
    ledger = _ledger()
    ledger.take(0, np.array([0]), np.array([3]), False, now=0.0)
    with pytest.raises(PolicyError, match="job 'j1' would double-book a GPU on node n0"):
        ledger.take(1, np.array([0]), np.array([2]), False, now=0.0)
    ledger = _ledger(quota=6)
    ledger.take(0, np.array([0]), np.array([3]), False, now=0.0)
    with pytest.raises(PolicyError, match="VC 'a' over its quota"):
        ledger.take(2, np.array([1]), np.array([4]), False, now=0.0)


def test_projected_end_runs_a_copy_once_and_leaves_the_simulation_where_it_is():
    import analysim as asim

    workload = asim.presets.workload("toy")
    cluster = asim.presets.cluster("toy")
    sim = asim.Simulation(workload, cluster)
    sim.step()
    now, events = sim.now, len(sim.records)
    end = asim.Simulation(workload, cluster).run().now
    assert sim.projected_end() == end and sim.now == now and len(sim.records) == events
    assert sim.projected_end() == end  # remembered
    assert sim.run().now == end


@pytest.mark.parametrize("reference", [False, True])
def test_projected_end_copy_takes_the_same_shortcuts(reference, monkeypatch):
    import analysim as asim
    from analysim.engine import simulation

    made = []
    init = simulation.Simulation.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self.shortcuts)

    monkeypatch.setattr(simulation.Simulation, "__init__", recording)
    sim = asim.Simulation(
        asim.presets.workload("toy"), asim.presets.cluster("toy"), reference=reference
    )
    sim.projected_end()
    assert made[1] == made[0] and (made[0] == simulation.Shortcuts.none()) is reference


# -- the parts: collaborators, each with its own state --------------------------------------
def test_tenancy_is_a_collaborator_of_the_simulation_not_a_mixin():
    import analysim as asim
    from analysim.engine import Simulation
    from analysim.engine.book_moves import BookMoves
    from analysim.engine.gpu_moves import GpuMoves
    from analysim.engine.tenancy import Tenancy

    assert not issubclass(Simulation, Tenancy)
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    assert type(sim.tenancy) is Tenancy and sim.tenancy.sim is sim
    assert type(sim.tenancy.moves) is GpuMoves
    # one tenancy in both modes; in resource mode it plans moves on the book
    shares = asim.Simulation(sim.workload, sim.cluster, asim.SimConfig(placement="fgd"))
    assert type(shares.tenancy) is Tenancy and type(shares.tenancy.moves) is BookMoves
    # its state is its own: none of it lives on the simulation
    for name in ("_borrow_failed_at", "_migrate_failed_at", "_borrow_cap"):
        assert hasattr(sim.tenancy, name) and not hasattr(sim, name)


def test_the_clock_owns_the_present_and_the_next_timeline_sample():
    from analysim.engine.clock import Clock
    from analysim.engine.simulation import Simulation

    clock = Clock(1.0, 60.0, 300.0)
    assert (clock.now, clock.advances, clock.next_sample) == (0.0, 0, 0.0)
    assert clock.samples_before(0.0) is None
    assert clock.samples_before(1.0) == (0.0, 1) and clock.next_sample == 300.0
    assert clock.samples_before(900.0) == (300.0, 2) and clock.next_sample == 900.0
    assert clock.samples_before(901.0) == (900.0, 1) and clock.next_sample == 1200.0
    clock.advance_to(120.0)
    clock.stop_at(150.0)
    assert (clock.now, clock.advances) == (150.0, 1)
    # Simulation.now, .rounds and .next_sample only read the clock's
    for name in ("now", "rounds", "next_sample"):
        attribute = Simulation.__dict__[name]
        assert isinstance(attribute, property) and attribute.fset is None


def test_a_run_stopped_between_steps_reads_the_present_off_the_clock():
    import analysim as asim

    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    sim.run(until=100.0)
    assert sim.now == sim.clock.now == 100.0
    assert sim.rounds == sim.clock.advances > 0
    assert sim.next_sample == sim.clock.next_sample


def test_the_rounds_are_a_collaborator_of_the_simulation_not_a_mixin():
    import analysim as asim
    from analysim.engine import Simulation
    from analysim.engine.book_fit import BookFit
    from analysim.engine.rounds import Rounds

    assert Simulation.__bases__ == (object,)  # no mixins: its parts are objects it holds
    assert Simulation.__subclasses__() == []  # one engine: no family of mode classes
    assert Rounds.__subclasses__() == []
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    assert type(sim.decider) is Rounds and sim.decider.sim is sim
    assert sim.tenancy.decider is sim.decider
    shares = asim.Simulation(sim.workload, sim.cluster, asim.SimConfig(placement="fgd"))
    assert type(shares) is Simulation and type(shares.decider) is Rounds
    assert type(shares.decider._book_fit) is BookFit
    # its state is its own: none of it lives on the simulation
    for name in (
        "epoch",
        "events_since_round",
        "changed_since_full",
        "ranking_valid_until",
        "protected_until",
        "wake_at",
    ):
        assert hasattr(sim.decider, name) and not hasattr(sim, name), name
    # and its parts' state is theirs: the kept rankings, the start tries' memos, EASY
    # backfill's reservations, the evictions' memos
    for part, name in (
        (sim.decider.ranker, "kept_ranking"),
        (sim.decider.starts, "_failed_at"),
        (sim.decider.starts, "_reserved_seen"),
        (sim.decider.easy, "reservations"),
        (sim.decider.evictions, "_preempt_failed_at"),
    ):
        assert hasattr(part, name) and not hasattr(sim.decider, name), name


def test_no_engine_class_has_a_base_class_but_object():
    """The engine's classes are built of parts they hold (``sim.decider``,
    ``decider.ranker``, ``decider.starts``, ``decider.easy``, ``decider.evictions``,
    ``sim.tenancy``), never of mixins."""
    import analysim as asim
    from analysim.engine.easy import EasyBackfill
    from analysim.engine.evictions import Evictions
    from analysim.engine.ranker import Ranker
    from analysim.engine.rounds import Rounds
    from analysim.engine.simulation import Simulation
    from analysim.engine.starts import StartTries
    from analysim.engine.tenancy import Tenancy

    for cls in (Simulation, Rounds, Tenancy, EasyBackfill, Evictions, Ranker, StartTries):
        assert cls.__bases__ == (object,), (cls.__name__, cls.__bases__)
    sim = asim.Simulation(
        asim.presets.workload("toy"), asim.presets.cluster("toy"), asim.SimConfig(backfill="easy")
    )
    decider = sim.decider
    assert type(decider.easy) is EasyBackfill and type(decider.evictions) is Evictions
    assert type(decider.ranker) is Ranker and type(decider.starts) is StartTries
    assert not isinstance(decider, EasyBackfill | Evictions | Ranker | StartTries)


#: the ledger's arrays and lists (only Ledger.take and Ledger.release write them)
LEDGER_STATE = {
    "free",
    "free_slots",
    "group_free",
    "gpu_offset",
    "vc_used",
    "vc_borrowed",
    "vc_running_jobs",
    "borrowed",
    "borrowers",
    "alloc_nodes",
    "alloc_counts",
    "alloc_pairs",
    "_alloc_pairs",
    "alloc_gpus",
    "last_nodes",
}
OWNERS = {"self", "sim", "self.sim", "ledger", "self.ledger"}
#: methods that change a list, dict or set in place
MUTATORS = {
    "append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault",
    "add", "discard", "popitem", "sort", "reverse", "fill", "put", "itemset",
}  # fmt: skip


def _ledger_owned(node: ast.expr) -> str | None:
    """``node`` unparsed if it is the ledger's state (through an alias of its arrays, or
    anything of the ledger itself), items of it included; else None."""
    base = node
    while isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Attribute):
        owner, name = ast.unparse(base.value), base.attr
        # the ledger's state seen through an alias, or anything of the ledger itself (a
        # mailbox such as ``ledger.plans[j] = claims`` included)
        if (owner in OWNERS and name in LEDGER_STATE) or owner.endswith("ledger"):
            return ast.unparse(node)
    return None


def _ledger_writes(path: Path, classes: set[str]) -> set[str]:
    """Writes to the ledger's state in the methods of ``classes`` in ``path``: item
    assignment or deletion, an attribute set on the ledger (a new mailbox), a call of a
    mutating method on it (``ledger.plans.update(...)``), and calls of the ledger's take
    and release."""
    found = set()
    for cls in ast.walk(ast.parse(path.read_text())):
        if not isinstance(cls, ast.ClassDef) or cls.name not in classes:
            continue
        for node in ast.walk(cls):
            targets = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and _ledger_owned(target):
                    found.add(f"{cls.name}: {ast.unparse(target)}")
                elif isinstance(target, ast.Attribute) and (
                    ast.unparse(target.value).endswith("ledger") or _ledger_owned(target.value)
                ):
                    found.add(f"{cls.name}: {ast.unparse(target)}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in {"take", "release"} and "ledger" in ast.unparse(node.func):
                    found.add(f"{cls.name}: {ast.unparse(node.func)}")
                elif node.func.attr in MUTATORS and _ledger_owned(node.func.value):
                    found.add(f"{cls.name}: {ast.unparse(node.func)}")
    return found


def test_the_rounds_and_tenancy_never_write_cluster_state(tmp_path):
    parts = {
        "rounds.py": {"Rounds"},
        # the rounds' own methods kept in other modules (its base classes there), not their
        # trials, which change copies of their own
        "easy.py": {"EasyBackfill"},
        "evictions.py": {"Evictions"},
        "starts.py": {"StartTries"},
        "reservations.py": {"Reservation"},
        "tails.py": {"Tail"},
        "known_runs.py": {"KnownRuns"},
        "book_fit.py": {"BookFit", "BookTrial"},
        "tenancy.py": {"Tenancy"},
        "gpu_moves.py": {"GpuMoves"},
        "book_moves.py": {"BookMoves"},
    }
    for name, classes in parts.items():
        assert _ledger_writes(ENGINE / name, classes) == set(), name
    # the check sees what it looks for: item writes through an alias, the ledger's changes,
    # and a mailbox written by item, by attribute, or by a mutating method
    probe = tmp_path / "probe.py"
    probe.write_text(
        "class Rounds:\n    def f(self):\n        self.free[0] -= 1\n        self.ledger.take(1)\n"
        "        self.ledger.plans[2] = []\n        self.sim.ledger.next = 3\n"
        "        self.ledger.plans.update({4: []})\n        self.free_slots[5].append(6)\n"
        "        self.ledger.claims.get(7)\n        mine = self.free.copy()\n"
        "        mine[0] -= 1\n"
    )
    assert _ledger_writes(probe, {"Rounds"}) == {
        "Rounds: self.free[0]",
        "Rounds: self.ledger.take",
        "Rounds: self.ledger.plans[2]",
        "Rounds: self.sim.ledger.next",
        "Rounds: self.ledger.plans.update",
        "Rounds: self.free_slots[5].append",
    }


#: the modules outside the engine that import ``Simulation``: the front door re-exports it
#: (``asim.Simulation``) and these build simulations; nothing imports it to read one
BUILDERS = {"analysim", "analysim.simulate", "analysim.explorer.stepper", "analysim.explorer.app"}


def _imports_simulation(path: Path) -> tuple[bool, bool, bool]:
    """Whether ``path`` imports ``Simulation``, whether only for type checkers (under
    ``if TYPE_CHECKING:``), and whether it calls ``Simulation(...)``."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    imports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and any(a.name == "Simulation" for a in node.names)
    ]
    calls = any(
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Simulation")
        for node in ast.walk(tree)
    )
    return bool(imports), any(id(i) in typing_only for i in imports), calls


def test_no_module_outside_the_engine_imports_simulation_but_to_build_one(tmp_path):
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if ENGINE not in path.parents:
            imported, typing_only, calls = _imports_simulation(path)
            if imported:
                found[_module_name(path)] = (typing_only, calls)
    assert set(found) == BUILDERS, sorted(found)
    assert not any(typing_only for typing_only, _ in found.values())  # not even for types
    assert all(calls for name, (_, calls) in found.items() if name != "analysim")
    # the scan sees an import for type checkers
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from analysim.engine import Simulation\n"
    )
    assert _imports_simulation(probe) == (True, True, False)


def test_results_and_state_read_a_frozen_record_never_the_live_simulation():
    import pandas as pd

    import analysim as asim

    for path in sorted((PACKAGE / "results").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analysim")
            for alias in node.names
        }
        assert "Simulation" not in imported, path.name  # not even for types
    sim = asim.Simulation(asim.presets.workload("toy"), asim.presets.cluster("toy"))
    sim.run(until=300)
    state, result = sim.state, sim.result()
    jobs, gpus = state.jobs.copy(), state.gpus.copy()
    sim.run()  # the run goes on: what was handed out stays as it was at t=300
    assert state.time == 300 and sim.now > 300
    pd.testing.assert_frame_equal(state.jobs, jobs)
    pd.testing.assert_frame_equal(state.gpus, gpus)
    assert result.events["time"].max() <= 300  # built only now, from the record's events
    assert result.timeline["time"].max() <= 300
    assert sim.result().events["time"].max() > 300
