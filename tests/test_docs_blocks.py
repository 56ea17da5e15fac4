"""Every code block of the guide pages (``docs/*.md``) runs as written, or is marked.

Each fenced block is tagged with its language: ``python``, ``bash`` and ``yaml`` blocks are
code, ``text`` blocks are output or notation (a fence of the site's directives, such as
``{toctree}``, is neither). A page's ``python`` blocks run one after another in one fresh
interpreter (as pasted into a notebook: the code is given to ``python -c``, so Dask's worker
processes do not import it again), a block written as a whole script (with the ``__main__``
guard) is saved to a file and run on its own, each ``bash`` block runs in ``bash -e``, and a
``yaml`` sweep file is read by ``analysim.sweep.files.load_sweep_file``; all in a scratch
folder (with ``benchmarks/`` of this checkout linked into it), with the ``analysim`` of this
checkout.

An HTML comment on the line before a block marks it (the site does not show it):

* ``<!-- needs: WHAT, from WHERE -->``: it needs something from outside (a downloaded trace,
  a checkout of another project, several machines) and is not run; WHERE is a URL or a page
  section, and a URL must also be in the page's own text, so the reader learns where to get
  the data;
* ``<!-- test with: "OLD" -> "NEW"; ... -->``: it is slow as written and runs with these
  replacements (smaller parameters), each of which must change the block;
* ``<!-- run elsewhere: WHERE -->``: it is run as written by another test or by ``.ci/run``
  (the README's main job), which WHERE names;
* before a ``text`` block, ``<!-- output of the block above -->``: that block's output is
  what the ``python`` block above it prints, number for number;
* before a ``text`` block that is a data file the page's commands read,
  ``<!-- file: NAME -->``: it is written to NAME in the scratch folder before the page's
  code runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
MARK = re.compile(
    r"<!--\s*(needs|test with|run elsewhere|output of the block above|file)\s*:?\s*(.*?)\s*-->\s*$",
    re.DOTALL,
)
REPLACEMENT = re.compile(r'"((?:[^"\\]|\\.)*)"\s*->\s*"((?:[^"\\]|\\.)*)"')
CODE = ("python", "bash", "yaml")
DATA = ("text",)  # output, notation, or (marked "file") a file the page's commands read
GUARD = 'if __name__ == "__main__":'
END = "docs blocks: done"
TIMEOUT = 600


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    mark: str = ""  # "needs", "test with", "run elsewhere", "output of the block above"
    detail: str = ""
    replacements: list[tuple[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.page.name}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in CODE and self.mark not in ("needs", "run elsewhere")

    def runnable(self) -> str:
        """The code as the test runs it (with the replacements of ``test with``)."""
        code = self.code
        for old, new in self.replacements:
            code = code.replace(old, new)
        return code


def blocks(page: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` (or of ``text``, as if it were that page), in order."""
    text = page.read_text() if text is None else text
    found = []
    for match in FENCE.finditer(text):
        language = match.group(1).strip()
        if language.startswith("{"):
            continue  # a directive of the site (toctree, include, ...)
        before = text[: match.start()].rstrip("\n")
        mark = MARK.search(before.split("\n\n")[-1]) if before else None
        block = Block(page, text[: match.start()].count("\n") + 1, language, match.group(2))
        if mark and before.endswith("-->"):
            block.mark, block.detail = mark.group(1), " ".join(mark.group(2).split())
            if block.mark == "test with":
                block.replacements = [
                    (old.replace('\\"', '"'), new.replace('\\"', '"'))
                    for old, new in REPLACEMENT.findall(mark.group(2))
                ]
        found.append(block)
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def environment() -> dict[str, str]:
    """This interpreter's ``bin`` first on PATH (``python``, ``analysim``), this checkout
    first on PYTHONPATH, a non-interactive matplotlib."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    return env


def scratch(tmp_path: Path, page: Path) -> Path:
    """``tmp_path`` with ``benchmarks/`` linked in and ``page``'s data files written."""
    (tmp_path / "benchmarks").symlink_to(REPO / "benchmarks", target_is_directory=True)
    for block in blocks(page):
        if block.mark == "file":
            path = tmp_path / block.detail
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.code)
    return tmp_path


def run(command: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        command, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"{what}\n--- stderr ---\n{done.stderr[-4000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    return done


# -- what the pages hold ----------------------------------------------------------------------
def test_the_pages_have_blocks_to_run():
    assert len(PAGES) >= 9
    assert sum(block.runs for block in ALL) >= 20
    assert {block.language for block in ALL} <= {*CODE, *DATA}


@pytest.mark.parametrize("block", ALL, ids=[b.name for b in ALL])
def test_every_block_is_tagged_and_run_or_marked(block):
    assert block.language in (*CODE, *DATA), (
        f"{block.name}: tag the block with its language (python, bash, yaml; text for output "
        "or a data file)"
    )
    if block.mark == "file":
        assert block.language == "text" and block.detail, f"{block.name}: a named text block"
    if block.mark == "needs":
        assert re.search(r"https?://|\.md#|from ", block.detail), (
            f"{block.name}: say where to get what it needs ({block.detail!r})"
        )
    if block.mark == "run elsewhere":
        assert block.detail, f"{block.name}: say which test or CI step runs it"
    if block.mark == "test with":
        assert block.replacements, f'{block.name}: no \'"old" -> "new"\' in {block.detail!r}'
        for old, _ in block.replacements:
            assert old in block.code, f"{block.name}: {old!r} is not in the block"
    if block.mark == "output of the block above":
        assert block.language == "text", f"{block.name}: an output block is tagged text"


NEEDS_URL = [b for b in ALL if b.mark == "needs" and "http" in b.detail]


@pytest.mark.parametrize("block", NEEDS_URL, ids=[b.name for b in NEEDS_URL])
def test_the_page_says_where_to_get_what_a_block_needs(block):
    shown = re.sub(r"<!--.*?-->", "", block.page.read_text(), flags=re.DOTALL)
    for url in re.findall(r"https?://[^\s,;)>]+", block.detail):
        assert url.rstrip(".") in shown, f"{block.name}: {url} is only in the comment"


def test_the_marks_are_read():
    page = "\n".join(
        [
            "Text.",
            "",
            "<!-- needs: a downloaded Helios trace, from https://example.org/helios -->",
            "```python",
            "t = read()",
            "```",
            "",
            '<!-- test with: "days=183" -> "days=30"; "range(5)" -> "range(1)" -->',
            "```bash",
            "python - days=183 range(5)",
            "```",
            "",
            "```{toctree}",
            "```",
        ]
    )
    found = blocks(DOCS / "example.md", page + "\n")
    assert [(b.line, b.language, b.mark) for b in found] == [
        (4, "python", "needs"),
        (9, "bash", "test with"),
    ]
    assert not found[0].runs and found[1].runs
    assert found[1].runnable() == "python - days=30 range(1)\n"


# -- running them, a class per page so that pytest-xdist spreads the pages over workers -------
def _python_session(page: Path, tmp_path: Path) -> None:
    ran = [b for b in blocks(page) if b.language == "python" and b.runs and GUARD not in b.code]
    every = blocks(page)
    parts = []
    for block in ran:
        parts += [f"print({f'--- {block.name} ---'!r})", block.runnable()]
    session = "\n".join([*parts, f"print({END!r})", ""])
    (tmp_path / "session.py").write_text(session)
    command = [
        sys.executable,
        "-c",
        "exec(compile(open('session.py').read(), 'session.py', 'exec'))",
    ]
    done = run(command, scratch(tmp_path, page), f"the python blocks of {page.name}")
    assert END in done.stdout
    printed = dict(
        re.findall(r"^--- (\S+) ---\n(.*?)(?=^--- \S+ ---$|\Z)", done.stdout, re.M | re.S)
    )
    for k, block in enumerate(every):
        if block.mark == "output of the block above":
            above = next(b for b in reversed(every[:k]) if b.language == "python")
            assert above in ran, f"{block.name}: the block above it is not run"
            got = printed[above.name].replace(END, "").strip()
            assert _lines(got) == _lines(block.code), f"{above.name} printed:\n{got}"


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def _script(block: Block, tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(block.runnable() + f"\nprint({END!r})\n")
    done = run([sys.executable, "script.py"], scratch(tmp_path, block.page), block.name)
    assert END in done.stdout


def _bash(block: Block, tmp_path: Path) -> None:
    cwd = scratch(tmp_path, block.page)
    run(["bash", "-e", "-c", block.runnable()], cwd, f"{block.name}:\n{block.code}")


def _yaml(block: Block, tmp_path: Path) -> None:
    import yaml

    values = yaml.safe_load(block.runnable())
    assert isinstance(values, dict), block.name
    if "grid" in values:
        from analysim.sweep.files import load_sweep_file

        path = tmp_path / "grid.yaml"
        path.write_text(block.runnable())
        assert load_sweep_file(path)["grid"], block.name


RUNNERS = {"bash": _bash, "yaml": _yaml}


def _page_class(page: Path) -> type:
    own = blocks(page)
    single = [b for b in own if b.runs and (b.language != "python" or GUARD in b.code)]
    session = any(b.runs and b.language == "python" and GUARD not in b.code for b in own)

    class Page:
        if session:

            def test_the_python_blocks_run_in_order(self, tmp_path):
                _python_session(page, tmp_path)

        if single:

            @pytest.mark.parametrize("block", single, ids=[b.name for b in single])
            def test_a_block_runs_on_its_own(self, block, tmp_path):
                RUNNERS.get(block.language, _script)(block, tmp_path)

    Page.__name__ = Page.__qualname__ = f"TestPage_{page.stem}"
    return Page


for _page in PAGES:
    _cls = _page_class(_page)
    globals()[_cls.__name__] = _cls
