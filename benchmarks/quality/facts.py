"""A third evaluation, of the prompt alone on prose memories: LoCoMo's conversational facts.

The rule and gotcha evaluations score "prompt only" on about 200 tasks a window, where Recall@3 is near 0.1:
a few tasks decide a paired difference. This one has eight times as many. LoCoMo (snap-research/locomo, ACL
2024) holds ten long conversations; for each session it lists "observations", one-line facts each tied to the
dialogue turn it came from, and questions whose evidence names those turns. Here a fact is a memory made the
way `tether add` makes it (the summary fitted by the product's `fit_summary`, category `context`, no files:
a project preference or decision has the same shape), a question is the prompt, and the relevant memories
are the facts of the question's evidence turns. Questions of category 5 (adversarial: asked of the wrong
speaker) and questions whose evidence has no fact are left out.

Conversations 26, 30, 41, 42 and 43 are the dev window; 44, 47, 48, 49 and 50 the test window, run once per
set of constants. Each conversation is one project (its memories only). The data is read from the fetched
mirror (`snap-research+locomo`, `data/locomo10.zip`) at run time and never committed.

    python benchmarks/quality/facts.py                 # dev window
    python benchmarks/quality/facts.py --window test   # held out: once per set of constants

Systems: `tether` (recall as the prompt hook injects it, read past the limit for MRR), `tether:search` (what
`memory_search` returns: ungated, ten), porter and unstemmed BM25 over summary and details (the rule
evaluation's baselines), random-3. Metrics: Recall@3 (share of the relevant memories in the first three),
hit@5 (any in the first five), MRR; 95% bootstrap intervals, and paired differences against the strongest
baseline.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import mirror_root
from evaluate import BM25Retriever, diff_cell, mean, metric

from tether.embed import Embedder
from tether.embed.providers import make_embedder
from tether.errors import ConfigError
from tether.model.text import fit_summary
from tether.project import init_project
from tether.workspace import Workspace

MIRROR = "snap-research+locomo"
ARCHIVE = "data/locomo10.zip"
WINDOWS = {"dev": ("26", "30", "41", "42", "43"), "test": ("44", "47", "48", "49", "50")}
ADVERSARIAL = 5
DEPTH = 50
MOMENT = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass
class Fact:
    summary: str  # also the fact's key: systems rank summaries (`Project.by_memory` maps memories to them)
    details: str
    turns: set[str] = field(default_factory=set)  # dialogue turns it was observed in


@dataclass
class Question:
    text: str
    category: int
    relevant: set[str]  # fact ids


@dataclass
class Conversation:
    name: str
    facts: list[Fact]
    questions: list[Question]


def load(root: Path, names: Sequence[str]) -> list[Conversation]:
    """The conversations `names` from the mirror's archive, as facts and the questions they answer."""
    gdir = root / MIRROR / "repo"
    if not gdir.exists():
        raise SystemExit(f"no mirror at {gdir}: fetch github:snap-research/locomo first")
    blob = subprocess.run(
        ["git", "--git-dir", str(gdir), "show", f"HEAD:{ARCHIVE}"], capture_output=True, check=True
    ).stdout
    archive = zipfile.ZipFile(io.BytesIO(blob))
    out = []
    for name in names:
        raw = json.loads(archive.read(f"data/multimodal_dialog/locomo10_v2/{name}.json"))
        out.append(conversation(name, raw))
    return out


def _turns(evidence: object) -> list[str]:
    """Turn ids of an evidence field, which is a list of ids, sometimes nested or joined by ';' or ','."""
    if isinstance(evidence, list):
        return [t for e in evidence for t in _turns(e)]
    return [t.strip() for t in str(evidence).replace(",", ";").split(";") if t.strip()]


def conversation(name: str, raw: dict) -> Conversation:
    by_text: dict[str, Fact] = {}
    for key in sorted(k for k in raw if k.endswith("_observation")):
        for entries in raw[key].values():
            for text, *turn in entries:
                summary, details = fit_summary(str(text))
                fact = by_text.setdefault(summary, Fact(summary, details))
                fact.turns.update(_turns(turn))
    facts = list(by_text.values())
    questions = []
    for qa in raw["qa"]:
        turns = set(_turns(qa.get("evidence", [])))
        relevant = {f.summary for f in facts if f.turns & turns}
        if qa.get("category") == ADVERSARIAL or not relevant:
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), relevant))
    return Conversation(name, facts, questions)


class Project:
    """One conversation's facts in a fresh tether project, added as `tether add` adds them."""

    def __init__(self, conv: Conversation, embedder: Embedder | None = None) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix=f"tether-facts-{conv.name}-")
        root, home = Path(self.tmp.name) / "repo", Path(self.tmp.name) / "home"
        root.mkdir()
        home.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        init_project(root, home)
        self.ws = Workspace.open(root, home=home, embedder=embedder, clock=lambda: MOMENT)
        self.by_memory: dict[str, str] = {}  # memory id -> fact summary (the fact's key)
        for fact in conv.facts:
            added = self.ws.add(fact.summary, details=fact.details, category="context", allow_secret=True)
            self.by_memory[added.memory.id] = fact.summary
        if embedder is not None:
            self.ws.embed_missing()  # an injected embedder is not the configured one: embed with it

    def recall(self, question: str) -> list[str]:
        result = self.ws.recall(question, [], limit=DEPTH, budget=10**9, record=False)
        return [self.by_memory[r.memory.id] for r in result.memories]

    def search(self, question: str) -> list[str]:
        return [self.by_memory[r.memory.id] for r in self.ws.search(question, limit=10)]

    def close(self) -> None:
        self.ws.close()
        self.tmp.cleanup()


def bm25(facts: Sequence[Fact], tokenizer: str) -> Callable[[str], list[str]]:
    """The rule evaluation's BM25 (`evaluate.BM25Retriever`) over the facts' summary and details."""
    retriever = BM25Retriever(tokenizer=tokenizer)
    retriever.index((f.summary, f"{f.summary}\n{f.details}") for f in facts)
    return lambda question: retriever.search(question, DEPTH)


def random3(facts: Sequence[Fact], seed: str) -> Callable[[str], list[str]]:
    ids = [f.summary for f in facts]

    def pick(question: str) -> list[str]:
        return random.Random(f"{seed}:{question}").sample(ids, min(3, len(ids)))

    return pick


@dataclass
class Scores:
    recall3: list[float] = field(default_factory=list)
    hit5: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    shown: list[float] = field(default_factory=list)  # how many of the first three exist (the gate)
    ms: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], relevant: set[str], ms: float) -> None:
        self.recall3.append(len(set(ranked[:3]) & relevant) / len(relevant))
        self.hit5.append(1.0 if set(ranked[:5]) & relevant else 0.0)
        first = next((i for i, r in enumerate(ranked) if r in relevant), None)
        self.rr.append(0.0 if first is None else 1.0 / (first + 1))
        self.shown.append(min(3, len(ranked)))
        self.ms.append(ms)


BASELINES = ("bm25-porter", "bm25-unstemmed", "random-3")


def systems(conv: Conversation, project: Project, extra: dict[str, Callable]) -> dict[str, Callable]:
    out: dict[str, Callable[[str], list[str]]] = {
        "bm25-porter": bm25(conv.facts, "porter unicode61"),
        "bm25-unstemmed": bm25(conv.facts, "unicode61"),
        "random-3": random3(conv.facts, conv.name),
        "tether": project.recall,
        "tether:search": project.search,
    }
    for name, make in extra.items():
        out[name] = make(project)
    return out


def run(
    window: str,
    extra: dict[str, Callable] | None = None,
    root: Path | None = None,
    embedder: Embedder | None = None,
) -> dict:
    """Scores per system, per conversation and pooled ("all"); tether's projects embed with `embedder`
    (the configured default when None)."""
    convs = load(root or mirror_root(None), WINDOWS[window])
    scores: dict[str, dict[str, Scores]] = {}
    for conv in convs:
        started = time.perf_counter()
        project = Project(conv, embedder)
        made = time.perf_counter() - started
        try:
            for name, system in systems(conv, project, extra or {}).items():
                for q in conv.questions:
                    t0 = time.perf_counter()
                    ranked = list(dict.fromkeys(system(q.text)))
                    ms = (time.perf_counter() - t0) * 1000
                    for key in (conv.name, "all"):
                        scores.setdefault(name, {}).setdefault(key, Scores()).add(ranked, q.relevant, ms)
        finally:
            project.close()
        print(
            f"conversation {conv.name}: {len(conv.facts)} facts, {len(conv.questions)} questions; "
            f"project made in {made:.0f} s",
            file=sys.stderr,
        )
    return {"window": window, "conversations": [c.name for c in convs], "scores": scores}


def report(result: dict) -> str:
    scores: dict[str, dict[str, Scores]] = result["scores"]
    keys = [*result["conversations"], "all"]
    lines = [
        f"Window **{result['window']}**: LoCoMo facts, prompt only; 95% bootstrap intervals.",
        "",
        "| system | n | Recall@3 | hit@5 | MRR | shown of 3 | p50 ms |",
        "|---|---:|---|---|---|---:|---:|",
    ]
    for name, per in scores.items():
        s = per["all"]
        ms = sorted(s.ms)[len(s.ms) // 2]
        lines.append(
            f"| {name} | {len(s.recall3)} | {metric(s.recall3)} | {metric(s.hit5)} | {metric(s.rr)} | "
            f"{mean(s.shown):.2f} | {ms:.2f} |"
        )
    lines += ["", "Recall@3 per conversation:", "", "| system | " + " | ".join(keys) + " |"]
    lines.append("|---|" + "---:|" * len(keys))
    for name, per in scores.items():
        lines.append(f"| {name} | " + " | ".join(f"{mean(per[k].recall3):.3f}" for k in keys) + " |")
    baselines = [b for b in BASELINES if b in scores]
    systems = [name for name in scores if name not in BASELINES]

    def diff(a: list[float], b: list[float]) -> str:
        return diff_cell([x - y for x, y in zip(a, b, strict=True)])

    def against(name: str, b: str, key: str) -> str:  # Recall@3 / hit@5 of `name` minus baseline `b`'s
        mine, theirs = scores[name][key], scores[b][key]
        return f"{diff(mine.recall3, theirs.recall3)} / {diff(mine.hit5, theirs.hit5)}"

    def strongest(key: str) -> str:
        return max(baselines, key=lambda b: mean(scores[b][key].recall3))

    lines += _table(
        "Paired differences (Recall@3 / hit@5) against each baseline, pooled:",
        baselines,
        {name: [against(name, b, "all") for b in baselines] for name in systems},
    )
    lines += _table(
        f"Strongest baseline by Recall@3, pooled: **{strongest('all')}**; Recall@3 / hit@5 against each "
        "conversation's strongest:",
        keys,
        {name: [f"{against(name, strongest(k), k)} ({strongest(k)})" for k in keys] for name in systems},
    )
    return "\n".join(lines)


def _table(title: str, columns: Sequence[str], rows: dict[str, list[str]]) -> list[str]:
    out = ["", title, "", "| system | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    return out + [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", choices=sorted(WINDOWS), default="dev")
    parser.add_argument("--mirrors", help="directory holding the fetched mirrors")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument(
        "--embedder", help="an embedder spec for tether's projects (default: the configured one)"
    )
    args = parser.parse_args(argv)
    if args.window == "test":
        print("test window: held out, run once per set of constants", file=sys.stderr)
    started = time.perf_counter()
    try:
        embedder = make_embedder(args.embedder) if args.embedder else None
    except ConfigError as exc:
        parser.error(str(exc))
    text = report(run(args.window, root=mirror_root(args.mirrors), embedder=embedder))
    text += f"\n\nwall time: {time.perf_counter() - started:.0f} s"
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
