"""Run the fuzz corpus of ``tests/fuzz_corpus.py`` and print one row per category: cases
tried, clear error, counted drop, correct, silent, crash, misleading (an error that does not
name its subject); the target: no silent, no crash, no misleading.

    PYTHONPATH=. python benchmarks/fuzz_table.py [--random N] [--show silent,crash]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_corpus import OUTCOMES, all_cases, classify  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=60, help="random generic-CSV cells")
    parser.add_argument(
        "--show", default="silent,crash,misleading", help="outcomes to list case by case"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    shown = set(args.show.split(","))
    counts: dict[str, Counter] = {}
    listed = []
    start = time.process_time()
    for case in all_cases(args.random):
        with tempfile.TemporaryDirectory() as folder:
            outcome, detail = classify(case, Path(folder))
        counts.setdefault(case.category, Counter())[outcome] += 1
        if outcome in shown:
            listed.append(f"{outcome:>8}  {case.category} / {case.name}: {detail[:300]}")
    header = ["category", "cases tried", *OUTCOMES]
    rows = [[c, sum(n.values()), *(n[o] for o in OUTCOMES)] for c, n in counts.items()]
    total = Counter()
    for n in counts.values():
        total.update(n)
    rows.append(["all", sum(total.values()), *(total[o] for o in OUTCOMES)])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "| " + " | ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    print(line.format(*header) + " |")
    print("|" + "|".join(("-" * (w + 2)) for w in widths) + "|")
    for row in rows:
        print(line.format(*row) + " |")
    print(f"\n{time.process_time() - start:.1f} s of CPU")
    for text in listed:
        print(text)
    return 1 if total["silent"] or total["crash"] or total["misleading"] else 0


if __name__ == "__main__":
    sys.exit(main())
