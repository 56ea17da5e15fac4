"""Which code is running: analysim's version, and the git commit of its checkout."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path


@functools.cache
def checkout_commit() -> str | None:
    """The git commit of the checkout analysim runs from (``5d0040c``; ``5d0040c.dirty`` when
    the package has uncommitted changes), or None for an installed package (or no git)."""
    package = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=package, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + (".dirty" if dirty else "")


VERSION = "0.1.0"
"""analysim's version (``analysim.__version__``; keep it equal to ``setup.cfg``'s)."""


def code_version() -> str:
    """analysim's version, with the commit of its checkout when it runs from one
    (``0.1.0+5d0040c``, ``0.1.0+5d0040c.dirty``)."""
    commit = checkout_commit()
    return VERSION if commit is None else f"{VERSION}+{commit}"
