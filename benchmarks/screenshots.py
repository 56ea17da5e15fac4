"""Regenerate the explorer's screenshots in ``docs/img`` and time changes in the browser.

Runs ``tests/test_browser.py`` (JupyterLab on 127.0.0.1, the explorer notebook run in
Debian's Chromium at 1280x800 through Playwright) with ``ANALYSIM_UPDATE_SCREENSHOT=1``, so
the pictures the docs use (``explorer-moment.png``, ``explorer-compare.png``,
``explorer-stepper.png``) are written to ``docs/img/``, and with ``ANALYSIM_BROWSER_TIMES``,
so the test records how long each change on the ``venus`` preset (7 days) takes in the
browser: from the click to the status line naming the new run with the kernel idle again
(the simulation, the images drawn and sent, the page updated). Prints those times as a
Markdown table.

    python benchmarks/screenshots.py            # needs /usr/bin/chromium, playwright, jupyterlab
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import header, markdown_table

REPO = Path(__file__).absolute().parents[1]
PICTURES = ("explorer-moment.png", "explorer-compare.png", "explorer-stepper.png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    header(
        "screenshots: the explorer in Chromium at 1280x800",
        "none (JupyterLab, its kernel and Chromium share the machine)",
    )
    with tempfile.TemporaryDirectory() as folder:
        times = Path(folder) / "times.json"
        env = {
            **os.environ,
            "ANALYSIM_UPDATE_SCREENSHOT": "1",
            "ANALYSIM_BROWSER_TIMES": str(times),
        }
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        done = subprocess.run([*command, "tests/test_browser.py"], cwd=REPO, env=env, check=False)
        if done.returncode != 0:
            print("the browser test failed or was skipped: no screenshots written", file=sys.stderr)
            return done.returncode
        measured = json.loads(times.read_text()) if times.exists() else {}
    for name in PICTURES:
        print(f"written: docs/img/{name}")
    rows = [{"change": name, "in the browser s": seconds} for name, seconds in measured.items()]
    print(markdown_table(rows, ["change", "in the browser s"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
