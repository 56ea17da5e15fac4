"""The documentation site: ``analysim docs`` builds it with Sphinx into ``docs/_build/html``.

:func:`build` runs ``sphinx-build -W --keep-going -n`` (every warning an error, every
cross-reference checked) on ``docs/`` of this checkout, then :func:`check_links` walks the
HTML it wrote and checks that every relative ``href`` and ``src`` names a file of the site
(and every ``#anchor`` an id on that page). Nothing reaches the network.

The gallery (:func:`make_gallery`, run by ``docs/conf.py`` when the build starts) copies each
notebook of ``notebooks/`` into ``docs/gallery/`` (git-ignored) as it is committed, without
outputs and without running it, and puts the figures it writes, as committed in ``figures/``,
after the cell that writes them (the cell's ``save_figure(..., "NAME", ...)``).

It needs the ``docs`` extra (Sphinx, furo, MyST-NB): ``pip install -e '.[docs]'``.
"""

from __future__ import annotations

import html.parser
import json
import logging
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
GALLERY = "gallery"
"""The folder of ``docs/`` the gallery is generated into (git-ignored)."""
NOTEBOOKS = "[0-9][0-9]_*.ipynb"
SCREENSHOTS = {"00_explorer": "img/explorer-compare.png"}
"""The picture of a notebook whose output is interactive (no figure), under ``docs/``."""
FIGURE_CALL = re.compile(r"""save_figure\([^)]*?["']([A-Za-z0-9][A-Za-z0-9_.-]*)["']""", re.S)

# Names of other projects that docstrings and signatures mention: there is no network for
# intersphinx, so they stay plain text; everything of analysim's own must resolve.
NITPICK_IGNORE = [
    (r"py:.*", r"(pd|pandas|np|numpy|mpl|matplotlib|plt|sns|seaborn|widgets|ipywidgets)\..*"),
    (r"py:.*", r"(dask|distributed|papermill|nbformat|pyarrow|tqdm|yaml|argparse)(\..*)?"),
    (r"py:.*", r"(Figure|Axes|DataFrame|Series|Index|Timestamp|Timedelta|ndarray|Generator)"),
    (r"py:.*", r"(Path|PathLike|Callable|Iterable|Iterator|Sequence|Mapping|MutableMapping)"),
    (r"py:.*", r"(Any|Literal|TypeVar|Self|NoReturn|Hashable|ClassVar|Protocol|T|P)"),
    (r"py:.*", r"(collections\.abc|typing|pathlib|os|datetime|numbers|random|logging)\..*"),
    (r"py:.*", r"(ArrayLike|DTypeLike|Dtype|NDArray|Client|Future|LocalCluster)"),
    # the engine's internal types, named only by the annotations of documented objects
    (
        r"py:.*",
        r"(analysim\.)?((engine|results)\.\w+\.)?"
        r"(State|Capture|Rounds|Tenancy|RunRecord|ResourcePlacement|LASRanking)",
    ),
    (r"py:.*", r"(analysim\.(inputs\.)?domains\.)?Domain|analysim\.policies\.registry\.T"),
    (r"py:.*", r"analysim\.sweep\.grid\.Source|analysim\.traces\.report\.(_Entry|SharedTrace)"),
]


# -- building ---------------------------------------------------------------------------------
class DocsError(RuntimeError):
    """The site could not be built, or a link in it is broken."""


def build(
    source: Path = DOCS,
    out: Path | None = None,
    *,
    builder: str = "html",
    strict: bool = True,
    quiet: bool = True,
    jobs: str | int = 1,
) -> Path:
    """Build the site of ``source`` (``docs/`` of this checkout) into ``out`` (default
    ``source/_build/html``) and check its internal links; return ``out``.

    ``strict``: warnings are errors (``-W --keep-going``) and every cross-reference must
    resolve (``-n``). Raises :class:`DocsError` when Sphinx fails or a link is broken."""
    source = Path(source).resolve()
    if not (source / "conf.py").is_file():
        raise DocsError(
            f"no Sphinx project at {source} (docs/conf.py): 'analysim docs' builds the site "
            "of a checkout of the repository"
        )
    _require_sphinx()
    out = Path(out).resolve() if out is not None else source / "_build" / builder
    doctrees = out.parent / f".doctrees-{out.name}"
    command = [sys.executable, "-m", "sphinx", "-b", builder, "-d", str(doctrees)]
    if strict:
        command += ["-W", "--keep-going", "-n"]
    if quiet:
        command.append("-q")
    command += ["-j", str(jobs), str(source), str(out)]
    log.info("building the documentation: %s", " ".join(command[2:]))
    started = time.monotonic()
    done = subprocess.run(command, cwd=source.parent)
    if done.returncode != 0:
        raise DocsError(
            f"sphinx-build failed (exit {done.returncode}); the warnings above say where"
        )
    if builder == "html":
        problems = check_links(out)
        if problems:
            shown = "\n  ".join(problems[:40])
            more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
            raise DocsError(f"{len(problems)} broken internal link(s) in {out}:\n  {shown}{more}")
    log.info("wrote the site to %s in %.0f s", out / "index.html", time.monotonic() - started)
    return out


def _require_sphinx() -> None:
    from analysim.faces.extras import missing_package

    for module in ("sphinx", "furo", "myst_nb"):
        try:
            __import__(module)
        except ModuleNotFoundError as exc:
            raise missing_package(module, "analysim docs") from exc


# -- the internal link check ------------------------------------------------------------------
class _Links(html.parser.HTMLParser):
    """The ids of a page and the URLs it points at (``href``, ``src``, ``srcset``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.ids.add(value)
            elif name in ("href", "src"):
                self.urls.append((tag, value))
            elif name == "srcset":
                self.urls += [(tag, part.split()[0]) for part in value.split(",") if part.strip()]


def _is_internal(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return not (parts.scheme or parts.netloc or url.startswith(("//", "mailto:", "data:")))


def check_links(site: Path) -> list[str]:
    """Every relative ``href``/``src`` of every HTML page under ``site`` that names no file
    of the site, or an ``#anchor`` missing from its page: ``"page: url (why)"``, sorted."""
    site = Path(site)
    pages: dict[Path, _Links] = {}
    for page in sorted(site.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        pages[page.resolve()] = parser
    if not pages:
        return [f"{site}: no HTML pages"]
    problems = []
    for page, links in pages.items():
        for tag, url in links.urls:
            if not _is_internal(url) or (tag == "link" and url.startswith("#")):
                continue
            parts = urllib.parse.urlsplit(url)
            path = urllib.parse.unquote(parts.path)
            target = page if not path else (page.parent / path).resolve()
            name = page.relative_to(site.resolve())
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{name}: {url} (no such file)")
            elif site.resolve() not in target.parents:
                problems.append(f"{name}: {url} (outside the site)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if urllib.parse.unquote(parts.fragment) not in ids:
                    problems.append(f"{name}: {url} (no #{parts.fragment} on that page)")
    return sorted(set(problems))


# -- the gallery ------------------------------------------------------------------------------
def figures_written(cell_source: str) -> list[str]:
    """The figure names a code cell saves (``save_figure(fig, "NAME", ...)``), in order."""
    return FIGURE_CALL.findall(cell_source)


def _title_and_intro(notebook: dict[str, Any]) -> tuple[str, str]:
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"]).strip()
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            title = lines[0][2:].strip()
            rest = "\n".join(lines[1:]).strip().split("\n\n")[0]
            return title, " ".join(rest.split())
    return "", ""


def _figure_cell(name: str, figures: Path) -> dict[str, Any]:
    links = [
        f"{{download}}`{kind} <figures/{name}.{kind.lower()}>`"
        for kind in ("SVG", "CSV")
        if (figures / f"{name}.{kind.lower()}").is_file()
    ]
    caption = f"`figures/{name}.png`, as committed"
    if links:
        caption += f" ({', '.join(links)})"
    text = (
        f":::{{figure}} figures/{name}.png\n:alt: {name}\n:class: analysim-output\n\n"
        f"{caption}\n:::\n"
    )
    cell_id = "analysim-figure-" + name.replace(".", "-")
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def _note_cell(
    notebook_name: str, figure_names: Sequence[str], screenshot: str | None = None
) -> dict[str, Any]:
    if figure_names:
        shown = (
            "The figures below each cell that saves one are the files committed in "
            "`figures/`, which `analysim figures` regenerates from this notebook byte for "
            "byte; the notebook itself is stored without outputs and is not run to build "
            "this page."
        )
    else:
        shown = (
            "The notebook is stored without outputs and is not run to build this page; "
            "its output is interactive: see [the explorer](../explorer.md)."
        )
    if screenshot:
        shown += f"\n\n![{notebook_name} in JupyterLab](../{screenshot})\n"
    text = (
        f":::{{note}}\n`notebooks/{notebook_name}`: {shown} Run it yourself in JupyterLab "
        "(`pip install -e '.[notebooks]'`, then `jupyter lab notebooks/`).\n:::\n"
    )
    return {"cell_type": "markdown", "id": "analysim-note", "metadata": {}, "source": text}


def make_gallery(repo: Path = REPO, docs: Path | None = None) -> list[str]:
    """Write ``docs/gallery/``: each notebook with the committed figures it writes after the
    cell that writes them, the figures they show, and ``index.md``; return the page names.

    Files are rewritten only when their content changes (Sphinx then rereads only those)."""
    repo = Path(repo)
    docs = Path(docs) if docs is not None else repo / "docs"
    figures = repo / "figures"
    gallery = docs / GALLERY
    (gallery / "figures").mkdir(parents=True, exist_ok=True)
    wanted: set[Path] = set()
    entries = []
    for path in sorted((repo / "notebooks").glob(NOTEBOOKS)):
        notebook = json.loads(path.read_text())
        names: list[str] = []
        cells = []
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                cell = {**cell, "outputs": [], "execution_count": None}
            cells.append(cell)
            if cell["cell_type"] == "code":
                for name in figures_written("".join(cell["source"])):
                    if (figures / f"{name}.png").is_file():
                        cells.append(_figure_cell(name, figures))
                        names.append(name)
        # figures with the notebook's prefix that no cell names literally go at the end
        prefix = path.name[:3]
        for png in sorted(figures.glob(f"{prefix}*.png")):
            if png.stem not in names:
                cells.append(_figure_cell(png.stem, figures))
                names.append(png.stem)
        first_heading = next((k for k, c in enumerate(cells) if c["cell_type"] == "markdown"), -1)
        screenshot = SCREENSHOTS.get(path.stem)
        if screenshot and not (docs / screenshot).is_file():
            screenshot = None
        cells.insert(first_heading + 1, _note_cell(path.name, names, screenshot))
        copy = {**notebook, "cells": cells}
        target = gallery / path.name
        _write_if_changed(target, json.dumps(copy, indent=1, ensure_ascii=False) + "\n")
        wanted.add(target)
        for name in names:
            for suffix in (".png", ".svg", ".csv"):
                source = figures / f"{name}{suffix}"
                if source.is_file():
                    _copy_if_changed(source, gallery / "figures" / source.name)
                    wanted.add(gallery / "figures" / source.name)
        title, intro = _title_and_intro(notebook)
        thumb = f"figures/{names[0]}.png" if names else f"../{screenshot}" if screenshot else ""
        entries.append((path.stem, title or path.stem, intro, thumb))
    index = [
        "# Gallery: the notebooks",
        "",
        "Each notebook of `notebooks/` as committed (without outputs; nothing is run to build",
        "these pages), with the figures it writes shown after the cell that writes them: the",
        "files in `figures/`, which `analysim figures` regenerates byte for byte (CI checks",
        "it). [Figures](../figures.md) says what each figure shows.",
        "",
        "```{toctree}",
        ":hidden:",
        "",
        *[stem for stem, *_ in entries],
        "```",
        "",
    ]
    for stem, title, intro, thumb in entries:
        index += [f"## [{title}]({stem}.ipynb)", ""]
        if thumb:
            index += [
                f":::{{image}} {thumb}",
                f":alt: {Path(thumb).stem}",
                ":width: 360px",
                f":target: {stem}.html",
                ":class: analysim-thumb",
                ":::",
                "",
            ]
        if intro:
            index += [intro, ""]
    target = gallery / "index.md"
    _write_if_changed(target, "\n".join(index))
    wanted.add(target)
    for stale in gallery.rglob("*"):
        if stale.is_file() and stale not in wanted:
            stale.unlink()
    return [stem for stem, *_ in entries]


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _copy_if_changed(source: Path, target: Path) -> None:
    if not target.is_file() or target.read_bytes() != source.read_bytes():
        shutil.copyfile(source, target)


# -- reading the docstrings' own style --------------------------------------------------------
_FIELD_LINE = re.compile(r"^(\w+): (\S.*)$")


def _field_names(obj: Any) -> set[str]:
    import dataclasses
    import inspect

    names: set[str] = set()
    if dataclasses.is_dataclass(obj):
        names |= {f.name for f in dataclasses.fields(obj)}
    try:
        names |= set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        pass
    return names - {"self", "cls", "args", "kwargs"}


def fields_as_field_list(lines: list[str], names: Iterable[str]) -> list[str]:
    """Docstring lines ``name: text`` (continued on indented lines) where ``name`` is one of
    ``names`` (the object's fields or parameters) as a reST field list (``:param name:``)."""
    names = set(names)
    out: list[str] = []
    in_field = False
    for line in lines:
        match = _FIELD_LINE.match(line)
        if match and match.group(1) in names:
            if out and out[-1].strip() and not in_field:
                out.append("")
            out.append(f":param {match.group(1)}: {match.group(2)}")
            in_field = True
        elif in_field and line.startswith(" ") and line.strip():
            out.append("    " + line.strip())
        else:
            if in_field and line.strip():
                out.append("")
            in_field = False
            out.append(line)
    return out


def _process_docstring(app, what, name, obj, options, lines) -> None:  # noqa: ARG001
    if what in ("class", "function", "method", "exception"):
        names = _field_names(obj)
        if names:
            lines[:] = fields_as_field_list(lines, names)


# -- cross-references to objects documented under a shorter name ------------------------------
def _resolve_shorter(app, env, node, contnode):
    """``analysim.results.result.Result`` is documented as ``analysim.Result``, and a docstring's
    ``:class:`SharedTrace``` names ``analysim.sharing.SharedTrace``: resolve a Python
    reference to the one documented object whose name it ends (or shortens) to."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"].lstrip(".~")
    objects = domain.objects
    candidates: list[str] = []
    parts = target.split(".")
    for k in range(1, len(parts) - 1):  # analysim.a.b.Name -> analysim.b.Name, analysim.Name
        shorter = ".".join(parts[:1] + parts[k + 1 :])
        if shorter in objects:
            candidates = [shorter]
            break
    if not candidates:
        suffix = "." + target
        found = {}
        for name, entry in objects.items():
            if name.endswith(suffix) and not entry.aliased:
                found.setdefault((entry.docname, entry.node_id), name)
        candidates = list(found.values())
    if len(candidates) != 1:
        return None
    from sphinx.util.nodes import make_refnode

    entry = objects[candidates[0]]
    return make_refnode(
        app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, candidates[0]
    )


def _plain_defaults(app, what, name, obj, options, signature, return_annotation):  # noqa: ARG001
    """A dataclass field's ``default_factory`` shows as ``<factory>``, which is no Python
    and makes Sphinx split the signature at every comma: show it as ``...``."""
    if signature and "<factory>" in signature:
        return signature.replace("<factory>", "..."), return_annotation
    return None


def setup_sphinx(app, repo: Path = REPO) -> None:
    """Hook the gallery, the docstring reader and the reference resolver into Sphinx."""

    def gallery(app) -> None:
        make_gallery(repo, Path(app.srcdir))

    app.connect("builder-inited", gallery)
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("autodoc-process-signature", _plain_defaults)
    app.connect("missing-reference", _resolve_shorter)
