"""The explorer in a real browser: JupyterLab on 127.0.0.1 with a one-off token, driven by
Debian's Chromium through Playwright.

The tests copy ``notebooks/00_explorer.ipynb`` to a temporary folder, start JupyterLab there
(and stop it), open the notebook in a 1280x800 window, run all cells and wait for the
explorer's first run. Then, in order, on the same page: nothing in the explorer overflows
sideways or is clipped at 1280x800 and 1366x768 (the results row, the heatmap, the stepper's
tables); a run pinned as the baseline stays in the summary and the plots' legends when the
scheduler changes, columns named by what differs; export writes the files and its download
links give the summary CSV; a teaching scenario sets its controls, shows its lesson, and the
step-through panel says why each job waits. Screenshots go to ``build/explorer-*.png``
(and the ones docs use to ``docs/img/`` with ``ANALYSIM_UPDATE_SCREENSHOT=1``).

It skips, saying why, when Chromium (``/usr/bin/chromium``; ``.ci/run`` installs it from
Debian), Playwright, JupyterLab or ipywidgets are missing. Playwright's own browser download
does not work here, so the system Chromium is used.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).absolute().parents[1]
NOTEBOOK = REPO / "notebooks" / "00_explorer.ipynb"
CHROMIUM = Path(os.environ.get("ANALYSIM_CHROMIUM", "/usr/bin/chromium"))
BUILD = REPO / "build"
FAILURE = BUILD / "explorer-browser-failure.png"
DOCS_IMAGES = REPO / "docs" / "img"
SIZES = ((1280, 800), (1366, 768))

pytestmark = pytest.mark.timeout(300)

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


OVERFLOW = """
(root) => {
  // everything the explorer draws stays inside it, and it inside the window; text and
  // tables are not cut off (a box marked analysim-scroll may scroll sideways on purpose)
  const box = root.getBoundingClientRect();
  const bad = [];
  if (box.right > window.innerWidth + 1) bad.push(`explorer right ${box.right} > window`);
  for (const el of root.querySelectorAll('*')) {
    if (el.closest('.analysim-scroll')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const name = `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
    if (r.right > box.right + 1 || r.left < box.left - 1) {
      bad.push(`${name} spans ${Math.round(r.left)}-${Math.round(r.right)} outside ` +
               `${Math.round(box.left)}-${Math.round(box.right)}`);
    }
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth && el.clientWidth > 0 &&
        ['hidden', 'clip'].includes(style.overflowX) && el.tagName !== 'SELECT' &&
        !['INPUT', 'OPTION'].includes(el.tagName) && !el.closest('.noUi-target')) {
      bad.push(`${name} clips its content (${el.scrollWidth} > ${el.clientWidth})`);
    }
  }
  for (const out of document.querySelectorAll('.jp-OutputArea-output')) {
    if (out.scrollWidth > out.clientWidth + 1) bad.push('an output area scrolls sideways');
  }
  return bad;
}
"""


def _status_starts(page, prefix: str) -> None:
    page.wait_for_function(
        "(prefix) => document.querySelector('.analysim-status').innerText.startsWith(prefix)",
        arg=prefix,
        timeout=90_000,
    )


def _shot(page, name: str, docs: bool = False, top: str | None = None) -> Path:
    """A 1280x800 screenshot in build/ (with ``top``, that element at the top of the view);
    ``docs``: also in docs/img/ when ANALYSIM_UPDATE_SCREENSHOT=1."""
    if top is not None:
        page.locator(top).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
    BUILD.mkdir(parents=True, exist_ok=True)
    path = BUILD / f"explorer-{name}.png"
    page.screenshot(path=str(path))
    if docs and os.environ.get("ANALYSIM_UPDATE_SCREENSHOT") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMAGES / path.name)
    return path


@pytest.fixture(scope="module")
def page(lab):
    """The explorer notebook, all cells run, in Chromium at 1280x800."""
    url, token = lab
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        try:
            page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}", timeout=60_000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
            _run_all_cells(page)
            page.locator(".analysim-summary table").wait_for(timeout=90_000)
            _status_starts(page, "run 1: fifo")
            _kernel_idle(page)
            # hide JupyterLab's notification toasts ("get notified about news?") in pictures
            page.add_style_tag(content=".Toastify { display: none !important; }")
            yield page
        except Exception:
            FAILURE.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(FAILURE), full_page=True)  # to see what went wrong
            raise
        finally:
            browser.close()


@pytest.fixture
def failure_shot(page, request):
    """A screenshot of the page when a test fails, in build/."""
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed > failed:
        BUILD.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(FAILURE))


def test_nothing_overflows_at_1280_and_1366(page, failure_shot):
    explorer = page.locator(".analysim-explorer")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(500)  # the layout settles
        problems = explorer.evaluate(OVERFLOW)
        assert problems == [], f"at {width}x{height}: " + "; ".join(problems)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.wait_for_timeout(300)
    heatmap = page.locator("img.analysim-heatmap")
    size = heatmap.evaluate("img => [img.complete, img.naturalWidth, img.naturalHeight]")
    assert size[0] and size[1] > 200 and size[2] > 100, size
    assert page.locator(".analysim-why").inner_text().strip()
    assert not page.locator(".analysim-error").count()
    _shot(page, "controls", top=".analysim-workload")
    _shot(page, "moment", docs=True, top=".analysim-plots")


def _moment_seconds(page) -> int:
    text = page.locator(".analysim-moment").inner_text()
    return int(re.search(r"\(([0-9,]+) s\)", text).group(1).replace(",", ""))


def test_a_click_on_a_timeline_moves_the_moment(page, failure_shot):
    plots = page.locator("img.analysim-plots")
    plots.evaluate("e => e.scrollIntoView({block: 'start'})")
    box = plots.bounding_box()
    seconds = []
    for fraction in (0.25, 0.75):  # of the time axis, which spans 7% to 98% of the figure
        before = page.locator(".analysim-moment").inner_text()
        x = box["x"] + box["width"] * (0.07 + 0.91 * fraction)
        page.mouse.click(x, box["y"] + box["height"] * 0.5)
        page.wait_for_function(
            "(b) => document.querySelector('.analysim-moment').innerText !== b",
            arg=before,
            timeout=30_000,
        )
        seconds.append(_moment_seconds(page))
        _kernel_idle(page)
        page.wait_for_timeout(500)
    assert seconds[1] == pytest.approx(3 * seconds[0], rel=0.05), seconds
    _kernel_idle(page)


def _timed(name: str, page, change: Any, prefix: str) -> None:
    """Make ``change`` in the page and wait until the status says ``prefix`` and the kernel
    is idle (everything shown); with ANALYSIM_BROWSER_TIMES, add the seconds it took to
    that JSON file under ``name`` (``benchmarks/screenshots.py`` reports them)."""
    started = time.perf_counter()
    change()
    _status_starts(page, prefix)
    _kernel_idle(page)
    seconds = time.perf_counter() - started
    out = os.environ.get("ANALYSIM_BROWSER_TIMES")
    if out:
        path = Path(out)
        times = json.loads(path.read_text()) if path.exists() else {}
        times[name] = round(seconds, 2)
        path.write_text(json.dumps(times, indent=1) + "\n")


def test_pinning_a_baseline(page, failure_shot):
    page.locator(".analysim-pin").click()
    page.wait_for_function(
        "() => document.querySelector('.analysim-summary').innerText.includes('baseline')",
        timeout=30_000,
    )
    scheduler = page.locator(".analysim-scheduler select")
    _timed("venus 7 days: fifo -> sjf", page, lambda: scheduler.select_option("sjf"), "run 2: sjf")
    head = page.locator(".analysim-summary tr").first.inner_text()
    # named by what differs; the baseline first, the change against it last
    assert head.split() == "metric unit fifo baseline sjf this run change vs fifo".split(), head

    def las_with_preemption() -> None:
        scheduler.select_option("las")
        page.locator(".analysim-preemption input").check()

    _timed("venus 7 days: sjf -> las + preemption", page, las_with_preemption, "run 3: las")
    head = page.locator(".analysim-summary tr").first.inner_text()
    assert head.split()[:5] == ["metric", "unit", "fifo", "baseline", "las"], head
    assert "las + preemption" in head
    assert explorer_overflow(page) == ""
    _shot(page, "compare", docs=True, top=".analysim-pin")


def explorer_overflow(page) -> str:
    return "; ".join(page.locator(".analysim-explorer").evaluate(OVERFLOW))


def test_export(page, failure_shot):
    page.locator(".analysim-export").click()
    link = page.locator("a.analysim-download", has_text="summary.csv")
    link.wait_for(timeout=60_000)
    names = page.locator("a.analysim-download").all_inner_texts()
    for kind in ("timelines", "jct_cdf", "heatmap"):
        assert f"{kind}.png" in names and f"{kind}.svg" in names, names
    assert "run.py" in names and "config.json" in names
    with page.expect_download() as info:
        link.click()
    text = Path(info.value.path()).read_text()
    lines = text.splitlines()
    assert lines[0] == "metric,unit,fifo,las + preemption,change vs fifo", lines[0]
    assert any(line.startswith("avg_jct,s,") for line in lines)
    with page.expect_download() as info:
        page.locator("a.analysim-download", has_text="run.py").click()
    code = Path(info.value.path()).read_text()
    assert "asim.presets.workload('venus', seed=0, load_scale=1.0, days=7.0)" in code
    assert "'preemption': True" in code and "'scheduler': 'las'" in code


def test_a_teaching_scenario(page, failure_shot):
    page.locator(".analysim-workload select").select_option("scenario: preemption")
    _status_starts(page, "run 4: srtf on preemption")
    _kernel_idle(page)
    lesson = page.locator(".analysim-lesson").inner_text()
    assert lesson.startswith("Scenario preemption:") and "turn preemption off" in lesson
    note = page.locator(".analysim-note").inner_text()
    assert "comparison was reset" in note, note
    assert page.locator(".analysim-days input").is_disabled()  # days are for venus only
    assert page.locator(".analysim-las_thresholds input").is_disabled()  # not LAS
    page.locator(".analysim-pin").click()
    page.locator(".analysim-preemption input").uncheck()
    _status_starts(page, "run 5: srtf")
    _kernel_idle(page)
    head = page.locator(".analysim-summary tr").first.inner_text()
    assert head.split("\n")[0:1] and "preemption" in head and "no preemption" in head, head
    page.get_by_text("step through (toy and scenarios)").click()
    step = page.locator(".analysim-stepper button", has_text="step")
    for _ in range(2):  # to t=0 (long starts), then to t=120 s (short arrives and waits)
        step.first.click()
        page.wait_for_timeout(1000)
    page.wait_for_function(
        "() => document.querySelector('.analysim-step-time').innerText.startsWith('t = 2 min')",
        timeout=30_000,
    )
    why = page.locator(".analysim-step-why").inner_text()
    assert why.startswith("short at t=120 s: it waits because"), why
    assert explorer_overflow(page) == ""
    _shot(page, "lesson", top=".analysim-lesson")
    _shot(page, "stepper", docs=True, top=".analysim-stepper")
