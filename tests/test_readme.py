"""Every code block of the README runs as pasted, in order, in a fresh interpreter.

The Python blocks run one after another in one fresh ``python`` fed on standard input (as if
pasted into it), the shell blocks each in ``bash -e``, all in a scratch folder, with the
``analysim`` of this checkout. The two install commands at the top are what ``.ci/run`` runs
itself (the test command, then the main job), so they are checked there, not here; and so
is the docs command of the "Documentation" section (``analysim docs``, which builds the site
into the checkout; ``tests/test_docs_site.py`` builds it into a temporary folder).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INSTALL = "pip install"  # the two commands of the README's head, run by .ci/run
DOCS = "analysim docs"  # the README's docs command, run by .ci/run too


def blocks(language: str) -> list[str]:
    """The README's fenced blocks in ``language``, in order."""
    return [code for lang, code in FENCE.findall(README.read_text()) if lang == language]


def is_script(code: str) -> bool:
    """A block written as a whole script (it has the ``__main__`` guard that Dask's worker
    processes need): saved to a file and run on its own."""
    return 'if __name__ == "__main__":' in code


def environment() -> dict[str, str]:
    """This interpreter's ``bin`` first on PATH (the ``analysim`` command), this checkout
    first on PYTHONPATH, and a non-interactive matplotlib."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    return env


def test_the_readme_has_the_blocks_this_test_runs():
    assert len(blocks("python")) >= 5
    assert len(blocks("bash")) >= 4
    assert sum(INSTALL in code for code in blocks("bash")) == 2  # the two commands
    assert sum(DOCS in code for code in blocks("bash")) == 1  # and the docs command


def test_the_python_blocks_run_in_order_in_one_fresh_interpreter(tmp_path):
    session = "\n".join(code for code in blocks("python") if not is_script(code))
    run_python(session + "\nprint('README python blocks: done')\n", tmp_path / "session.py")


@pytest.mark.parametrize("number", [k for k, c in enumerate(blocks("python")) if is_script(c)])
def test_a_script_block_runs_as_a_script(number, tmp_path):
    run_python(
        blocks("python")[number] + "\nprint('README python blocks: done')\n", tmp_path / "s.py"
    )


def run_python(code: str, path: Path) -> None:
    path.write_text(code)
    done = subprocess.run(
        [sys.executable, path.name],
        cwd=path.parent,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "README python blocks: done" in done.stdout
    assert "Traceback" not in done.stderr


SHELL_BLOCKS = [c for c in blocks("bash") if INSTALL not in c and DOCS not in c]


@pytest.mark.parametrize(
    "code", SHELL_BLOCKS, ids=[f"{k}-{' '.join(c.split()[:2])}" for k, c in enumerate(SHELL_BLOCKS)]
)
def test_a_shell_block_runs_as_pasted(code, tmp_path):
    done = subprocess.run(
        ["bash", "-e", "-c", code],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{code}\n--- stderr ---\n{done.stderr[-4000:]}"
    assert "Traceback" not in done.stderr
