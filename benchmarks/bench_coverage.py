"""What the query coverage's stems cost recall (release 10): `Vocabulary.found` over a prompt's candidates.

Recall asks each candidate it scores which of the prompt's terms it holds (`tether.model.text.Vocabulary`).
Release 10 also counts a word of the same Porter stem (`tether.model.stem`). This times that question over
`--candidates` memories per prompt, with the stems and with prefixes only (the baseline: the same code with the
stem lookup switched off), interleaved round by round: warm (each memory's vocabulary kept, as the recall cache
and a resident process keep it) and cold (a fresh vocabulary per memory, as a hook's first recall makes them).
The memories are this repository's own README and DESIGN lines, the prompts its quality README's sentences:
prose and code names, nothing fetched.

    .venv/bin/python benchmarks/bench_coverage.py [--candidates 300] [--prompts 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tether.model import text
from tether.model.text import Vocabulary, terms

ROOT = Path(__file__).resolve().parents[1]


def lines(path: Path, shortest: int) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip(" -*#>|")
        if len(line) >= shortest and re.search(r"[a-z]{3}", line):
            out.append(line)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=300, help="memories asked per prompt")
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    memories = (lines(ROOT / "README.md", 40) + lines(ROOT / "DESIGN.md", 40))[: args.candidates]
    sentences = re.split(r"(?<=[.?!])\s+", " ".join(lines(ROOT / "benchmarks/quality/README.md", 30)))
    prompts = [terms(s) for s in sentences if len(s) > 30][: args.prompts]
    warm = [Vocabulary(m) for m in memories]

    def timed(vocabularies: Callable[[], list[Vocabulary]]) -> float:
        start = time.perf_counter()
        for words in prompts:
            for vocabulary in vocabularies():
                vocabulary.found(words)
        return (time.perf_counter() - start) / len(prompts) * 1000

    stemmed = text.Vocabulary._holds_stem
    runs: dict[tuple[str, str], list[float]] = {}
    found: dict[str, int] = {}
    for _ in range(args.rounds):
        for label, holds in (("prefixes only", lambda self, root, start: False), ("with stems", stemmed)):
            text.Vocabulary._holds_stem = holds  # type: ignore[method-assign]
            runs.setdefault(("warm", label), []).append(timed(lambda: warm))
            runs.setdefault(("cold", label), []).append(timed(lambda: [Vocabulary(m) for m in memories]))
            found[label] = sum(len(v.found(words)) for words in prompts for v in warm)
    text.Vocabulary._holds_stem = stemmed  # type: ignore[method-assign]
    print(
        f"{len(prompts)} prompts x {len(memories)} candidates, {args.rounds} interleaved rounds; "
        f"terms covered in all: {found['prefixes only']} by prefix, {found['with stems']} with stems"
    )
    print("| vocabularies | prefixes only, ms per prompt | with stems, ms per prompt | ratio |")
    print("|---|---:|---:|---:|")
    for kind in ("warm", "cold"):
        base = statistics.median(runs[(kind, "prefixes only")])
        new = statistics.median(runs[(kind, "with stems")])
        print(f"| {kind} | {base:.3f} | {new:.3f} | {new / base:.2f}x |")


if __name__ == "__main__":
    main()
