"""The explorer in a real browser: JupyterLab on 127.0.0.1 with a one-off token, driven by
Debian's Chromium through Playwright.

The test copies ``notebooks/00_explorer.ipynb`` to a temporary folder, starts JupyterLab there
(and stops it), opens the notebook, runs all cells, waits for the kernel to be idle and the
explorer to show its first run, changes the scheduler, and checks that the summary changes
and the occupancy heatmap renders. The screenshot is saved as ``build/explorer-browser.png``
(and as ``docs/img/explorer.png`` with ``ANALYSIM_UPDATE_SCREENSHOT=1``).

It skips, saying why, when Chromium (``/usr/bin/chromium``; ``.ci/run`` installs it from
Debian), Playwright, JupyterLab or ipywidgets are missing. Playwright's own browser download
does not work here, so the system Chromium is used.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).absolute().parents[1]
NOTEBOOK = REPO / "notebooks" / "00_explorer.ipynb"
CHROMIUM = Path(os.environ.get("ANALYSIM_CHROMIUM", "/usr/bin/chromium"))
ARTIFACT = REPO / "build" / "explorer-browser.png"
FAILURE = REPO / "build" / "explorer-browser-failure.png"
README_IMAGE = REPO / "docs" / "img" / "explorer.png"

pytestmark = pytest.mark.timeout(240)

if not CHROMIUM.exists():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed")
pytest.importorskip("ipywidgets", reason="ipywidgets is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on a copy of the explorer notebook: (base URL, token)."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
        "JUPYTER_DATA_DIR": str(root / ".data"),  # no user kernels: this Python's ipykernel
        "MPLBACKEND": "Agg",
    }
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={root / '.workspaces'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = (root / "server.log").open("w")
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(url, token, server, root / "server.log")
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _wait_for_server(url: str, token: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"jupyter lab did not answer within 60 s:\n{log.read_text()[-3000:]}")


def _kernel_idle(page) -> None:
    page.wait_for_selector(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']",
        timeout=60_000,
    )


def _run_all_cells(page) -> None:
    """Run > Run All Cells once the kernel is up; again if the first cell did not start (a
    click made while the kernel connects can be lost)."""
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    first_prompt = page.locator(".jp-CodeCell .jp-InputPrompt").first
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if first_prompt.inner_text().strip() not in ("[ ]:", ""):
                return
            time.sleep(0.5)
    raise AssertionError("Run All Cells did not start the notebook's cells")


def test_explorer_in_jupyterlab(lab):
    url, token = lab
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1500, "height": 1900})
        try:
            page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}", timeout=60_000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
            _run_all_cells(page)

            summary = page.locator(".analysim-summary")
            summary.locator("table").wait_for(timeout=90_000)
            _kernel_idle(page)
            assert "previous run" not in summary.inner_text()
            first = summary.inner_text()
            assert "avg_jct" in first and "this run" in first

            page.locator(".analysim-scheduler select").select_option("sjf")
            page.wait_for_function(
                "() => document.querySelector('.analysim-summary')"
                ".innerText.includes('previous run')",
                timeout=60_000,
            )
            page.wait_for_function(  # the status line once the whole update is shown
                "() => document.querySelector('.analysim-status').innerText"
                ".startsWith('run 2: sjf')",
                timeout=60_000,
            )
            changed = summary.inner_text()
            assert changed != first and "previous run" in changed

            heatmap = page.locator("img.analysim-heatmap")
            heatmap.scroll_into_view_if_needed()
            size = heatmap.evaluate("img => [img.complete, img.naturalWidth, img.naturalHeight]")
            assert size[0] and size[1] > 200 and size[2] > 100, size
            assert page.locator(".analysim-why").inner_text().strip()
            assert not page.locator(".analysim-error").count()

            # hide JupyterLab's notification toasts ("get notified about news?") in the picture
            page.add_style_tag(content=".Toastify { display: none !important; }")
            page.locator(".analysim-explorer").scroll_into_view_if_needed()
            ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
            page.locator(".analysim-explorer").screenshot(path=str(ARTIFACT))
            if os.environ.get("ANALYSIM_UPDATE_SCREENSHOT") == "1":
                README_IMAGE.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ARTIFACT, README_IMAGE)
        except Exception:
            FAILURE.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(FAILURE), full_page=True)  # to see what went wrong
            raise
        finally:
            browser.close()
