"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The property tests draw the same examples on every run of the README's test command (and
# so in CI): a failure there is reproducible and a pass means what the last one meant. To
# hunt for new failures with fresh random draws, run them with ``--hypothesis-profile=hunt``
# (Hypothesis prints the seed of a failing run; ``--hypothesis-seed=N`` replays it).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("hunt", derandomize=False, print_blob=True)
settings.load_profile("repeatable")

REPO_ROOT = Path(__file__).resolve().parents[1]
# The project's shared data: ``../shared/data`` beside the repository, or the folder named by
# ANALYSIM_SHARED_DATA (CI runs the suite in a fresh clone with nothing beside it, then the
# tests that need the data, from that clone, with this variable set).
SHARED_DATA = Path(
    os.environ.get("ANALYSIM_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data"
).resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The project's shared data folder (see ``SHARED_DATA``); skips the test without it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"shared data folder not found at {SHARED_DATA} (expected beside the repo, "
            "or set ANALYSIM_SHARED_DATA)"
        )
    return SHARED_DATA


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "shared_data: needs ../shared/data (set automatically from the fixture)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that asks for ``shared_data`` (directly or through another fixture),
    so ``pytest -m shared_data`` runs exactly the tests a clone without the data skips."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
