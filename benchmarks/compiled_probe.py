"""What compiling the engine unchanged would give: the ``easy_run.py hash`` run of a Cython
build of this commit's engine beside the plain one (a probe for a design decision, not a
build the project uses).

    pip install cython            # not a dependency of analysim
    python benchmarks/compiled_probe.py                 # LAS + preemption + EASY, venus 2x
    python benchmarks/compiled_probe.py --scheduler fifo --repeat 3

It extracts this checkout's ``HEAD`` (``git archive``) into a temporary folder, compiles every
module of ``analysim/engine`` and ``analysim/policies/placement.py`` there with Cython (plain
Python source, no type declarations; ``build_ext --inplace``, a few minutes of CPU), then runs
``benchmarks/easy_run.py hash`` in the plain and the compiled tree in turn and prints each
run's fingerprint and CPU seconds. The fingerprints must be the same (the same code,
compiled); the CPU seconds tell what compilation alone buys.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_BUILD = """
import glob
from Cython.Build import cythonize
from setuptools import setup
modules = [f for f in glob.glob("analysim/engine/*.py") if not f.endswith("__init__.py")]
modules.append("analysim/policies/placement.py")
setup(
    ext_modules=cythonize(modules, compiler_directives={"language_level": 3}, nthreads=2,
                          quiet=True),
    script_args=["build_ext", "--inplace"],
)
"""


def _extract(target: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


def _hash_run(tree: Path, scheduler: str) -> str:
    env_path = {"PYTHONPATH": str(tree)}
    out = subprocess.run(
        [
            sys.executable,
            str(tree / "benchmarks" / "easy_run.py"),
            "hash",
            "--scheduler",
            scheduler,
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env={**_environment(), **env_path},
    ).stdout
    return out.strip().splitlines()[-1]


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scheduler", choices=["las", "fifo"], default="las")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each tree, alternated")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="analysim-probe-") as folder:
        plain, compiled = Path(folder, "plain"), Path(folder, "compiled")
        for tree in (plain, compiled):
            tree.mkdir()
            _extract(tree)
        (compiled / "probe_build.py").write_text(_BUILD)
        subprocess.run(
            [sys.executable, "probe_build.py"], cwd=compiled, check=True, capture_output=True
        )
        for _ in range(args.repeat):
            for name, tree in (("plain", plain), ("compiled", compiled)):
                print(f"{name:9s}", _hash_run(tree, args.scheduler), flush=True)


if __name__ == "__main__":
    main()
