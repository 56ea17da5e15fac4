"""The documentation site: it builds with every Sphinx warning an error, every internal link
resolves, the gallery shows each notebook and every committed figure, and in Chromium at
1280 px the home page and an API page load without console errors, nothing is wider than
the window or clipped, and the API page shows ``simulate``'s signature.

The site is built once per module into a temporary folder (about 30 s) with
``analysim.faces.docsite.build``, what ``analysim docs`` runs; ``ANALYSIM_DOCS_SITE=DIR`` reuses a
built site instead. The browser tests drive Debian's Chromium (``/usr/bin/chromium``) with
Playwright, as ``tests/test_browser.py`` does, and skip, saying why, without them.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysim.faces import docsite

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("ANALYSIM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WIDTH, HEIGHT = 1280, 800

pytestmark = pytest.mark.timeout(600)

for _module in ("sphinx", "furo", "myst_nb"):
    pytest.importorskip(_module, reason=f"{_module} is not installed (the 'docs' extra)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The built site: ``ANALYSIM_DOCS_SITE``, or a fresh strict build in a temporary folder
    (the gallery is generated into ``docs/gallery/``, git-ignored, as the build does)."""
    given = os.environ.get("ANALYSIM_DOCS_SITE")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("docs") / "html"
    return docsite.build(out=out)  # raises, with Sphinx's warnings above, if it fails


# -- the build --------------------------------------------------------------------------------
def test_the_site_has_every_page(site):
    for page in ("index", "getting-started", "api/index", "api/analysim", "gallery/index"):
        assert (site / f"{page}.html").is_file(), page
    for guide in sorted((REPO / "docs").glob("*.md")):
        if guide.name != "README.md":
            assert (site / f"{guide.stem}.html").is_file(), guide.name


def test_every_internal_link_resolves(site):
    assert docsite.check_links(site) == []


def test_getting_started_has_the_readme_commands(site):
    text = (site / "getting-started.html").read_text()
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"^```bash\n(python3 -m venv .*?)\n```", readme, re.M)
    assert len(commands) == 2
    for command in commands:
        assert _plain(command.split("&&")[-1]) in _plain(text), command


def test_the_gallery_shows_each_notebook_and_every_committed_figure(site):
    notebooks = sorted((REPO / "notebooks").glob(docsite.NOTEBOOKS))
    assert len(notebooks) >= 9
    shown = set()
    for notebook in notebooks:
        page = site / "gallery" / f"{notebook.stem}.html"
        assert page.is_file(), notebook.name
        html = page.read_text()
        code = [
            "".join(cell["source"])
            for cell in json.loads(notebook.read_text())["cells"]
            if cell["cell_type"] == "code"
        ]
        first_line = next(line for cell in code for line in cell.splitlines() if line.strip())
        assert _plain(first_line) in _plain(html), notebook.name  # its cells are on the page
        shown |= set(re.findall(r'src="\.\./_images/([^"]+\.png)"', html))
    committed = {path.name for path in (REPO / "figures").glob("*.png")}
    assert committed and committed <= shown, sorted(committed - shown)


def test_the_gallery_shows_figures_after_the_cell_that_writes_them(tmp_path):
    code = 'plot.save_figure(ax.figure, "99_x", figures_dir)'
    notebook = {
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# 99 · T\n\nIt."},
            {
                "cell_type": "code",
                "id": "b",
                "metadata": {},
                "source": "x = 1",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": "1"}],
                "execution_count": 3,
            },
            {
                "cell_type": "code",
                "id": "c",
                "metadata": {},
                "source": code,
                "outputs": [],
                "execution_count": None,
            },
            {"cell_type": "markdown", "id": "d", "metadata": {}, "source": "The end."},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "99_t.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "figures").mkdir()
    for name in ("99_x.png", "99_x.svg", "99_x.csv", "99_z.png", "98_other.png"):
        (tmp_path / "figures" / name).write_bytes(b"x")
    assert docsite.make_gallery(tmp_path, tmp_path / "docs") == ["99_t"]
    gallery = tmp_path / "docs" / "gallery"
    cells = json.loads((gallery / "99_t.ipynb").read_text())["cells"]
    assert [c.get("id") for c in cells] == [
        "a",
        "analysim-note",
        "b",
        "c",
        "analysim-figure-99_x",
        "d",
        "analysim-figure-99_z",
    ]
    assert cells[2]["outputs"] == [] and cells[2]["execution_count"] is None
    assert "figures/99_x.png" in cells[4]["source"] and "99_x.svg" in cells[4]["source"]
    assert sorted(p.name for p in (gallery / "figures").iterdir()) == [
        "99_x.csv",
        "99_x.png",
        "99_x.svg",
        "99_z.png",
    ]
    assert "[99 · T](99_t.ipynb)" in (gallery / "index.md").read_text()
    assert docsite.figures_written('save_figure(\n    fig,\n    "03_y",\n    folder)') == ["03_y"]


def test_the_docstrings_name_lines_become_parameters():
    lines = ["How it runs.", "", "scheduler: the ranking", "    policy.", "seed: its seed.", ""]
    assert docsite.fields_as_field_list(lines, {"scheduler", "seed"}) == [
        "How it runs.",
        "",
        ":param scheduler: the ranking",
        "    policy.",
        ":param seed: its seed.",
        "",
    ]
    assert docsite.fields_as_field_list(["Note: not a field."], {"seed"}) == ["Note: not a field."]


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="a/b.html#here">ok</a> <a href="https://example.org/x">outside</a>'
        '<img src="missing.png"> <a href="a/b.html#nowhere">bad anchor</a> <a href="#top">t</a>'
        '<p id="top"></p>'
    )
    (tmp_path / "a" / "b.html").write_text('<h1 id="here">b</h1><a href="../index.html">up</a>')
    assert docsite.check_links(tmp_path) == [
        "index.html: a/b.html#nowhere (no #nowhere on that page)",
        "index.html: missing.png (no such file)",
    ]


def test_the_docs_command_says_what_is_wrong(tmp_path, capsys):
    from analysim.faces.cli import main

    with pytest.raises(docsite.DocsError, match="no Sphinx project"):
        docsite.build(source=tmp_path)
    assert main(["docs", "--help"]) == 0
    assert "docs/_build/html" in capsys.readouterr().out


def _plain(text: str) -> str:
    """Text without tags, entities or runs of spaces, to find code in highlighted HTML."""
    import html as html_module

    text = html_module.unescape(re.sub(r"<[^>]+>", "", text))
    return " ".join(text.replace("\u00a0", " ").split())


# -- in the browser ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(site) -> Iterator[str]:
    """The site on http://127.0.0.1:<free port>, from a thread of this process."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # noqa: ARG002
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


OVERFLOW = """
() => {
  // nothing is wider than the window, and nothing cuts its content off sideways; a box that
  // scrolls sideways on purpose (code, wide tables) may hold wider content, and furo's
  // drawers that are hidden at this width are not drawn
  const width = document.documentElement.clientWidth;
  const bad = [];
  if (document.documentElement.scrollWidth > width + 1) {
    bad.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  }
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  // a fixed box wholly beside the window is a drawer its button slides in (furo's table of
  // contents below 1312 px)
  const offCanvas = (el) => {
    if (getComputedStyle(el).position !== 'fixed') return false;
    const r = el.getBoundingClientRect();
    return r.left >= width - 1 || r.right <= 1;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let inScroller = false, hidden = offCanvas(el);
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (scrolls(up)) inScroller = true;
      const s = getComputedStyle(up);
      if (s.visibility === 'hidden' || s.display === 'none' || offCanvas(up)) hidden = true;
    }
    if (hidden) continue;
    const name = `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
    if (!inScroller && (r.right > width + 1 || r.left < -1)) {
      bad.push(`${name} spans ${Math.round(r.left)}-${Math.round(r.right)} of ${width}`);
    }
    if (['hidden', 'clip'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1
        && el.clientWidth > 0 && !['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName)) {
      bad.push(`${name} clips its content (${el.scrollWidth} > ${el.clientWidth})`);
    }
  }
  return bad;
}
"""


def _open(browser, url: str):
    """A 1280x800 page at ``url``, and the list its console errors, page errors and failed
    requests go to."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.on(
        "response",
        lambda r: errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
    )
    page.goto(url, wait_until="load", timeout=60_000)
    page.wait_for_timeout(500)  # the theme's scripts settle
    return page, errors


@pytest.mark.parametrize("path", ["index.html", "api/analysim.html", "gallery/index.html"])
def test_a_page_loads_cleanly_and_fits_1280px(browser, served, path):
    page, errors = _open(browser, f"{served}/{path}")
    try:
        assert page.title(), path
        problems = page.evaluate(OVERFLOW)
        assert problems == [], f"{path} at {WIDTH}px: " + "; ".join(problems[:20])
        assert errors == [], errors
    finally:
        page.close()


def test_the_api_page_shows_simulates_signature(browser, served):
    page, errors = _open(browser, f"{served}/api/analysim.html")
    try:
        signature = page.locator("dt[id='analysim.simulate']")
        signature.wait_for(timeout=10_000)
        text = " ".join(signature.inner_text().split())
        expected = "simulate(workload: Workload | str, cluster: Cluster | str, config"
        assert text.startswith(expected), text
        assert "Result" in text
        assert signature.is_visible()
        link = page.locator("dt[id='analysim.simulate'] a", has_text="Workload").first
        assert link.get_attribute("href").endswith("#analysim.Workload")
        assert errors == [], errors
    finally:
        page.close()
