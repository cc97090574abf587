"""Score retrievers on the recall-quality corpus against the frozen labels.

A retriever gets each task's query (mode "prompt") or query and touched files (mode "prompt+files") and
returns memory ids, best first. Only its first three count for Recall@3 / Precision@3 and for the tokens it
would inject (DESIGN §5: top 3, one-line summaries); MRR uses its whole list. Tasks without any relevant
rule are left out of the quality metrics; on them we count how many memories a system would still inject
(an empty block is the right answer there).

tether's own retriever plugs in through `Retriever` (see `run.py --retriever module:factory`).
"""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from corpus import Corpus, MemoryItem, TaskView, labels_path

from tether.intake.rulefiles import rule_scope

MODES = ("prompt", "prompt+files")
TOP_K = 3
BOOTSTRAP_SAMPLES = 1000


class Retriever(Protocol):
    """What the evaluation asks of a recall system.

    `prepare` sees the memories (rule units at C1) and may build indexes; `corpus.checkout_at_c1(dir)`
    gives it the repository at C1 with no later history, for a repo map or co-change. `retrieve` must not
    look at anything but the task view it is given.
    """

    name: str

    def prepare(self, corpus: Corpus) -> None: ...

    def retrieve(self, task: TaskView, mode: str) -> list[str]: ...


# --- baselines ----------------------------------------------------------------------------------------


class RandomRetriever:
    """Three memories drawn at random (seeded per task, so runs repeat)."""

    name = "random-3"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.ids: list[str] = []

    def prepare(self, corpus: Corpus) -> None:
        self.ids = [m.id for m in corpus.memories]

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        rng = random.Random(f"{self.seed}:{task.query}:{mode}")
        return rng.sample(self.ids, min(TOP_K, len(self.ids)))


_WORD_RE = re.compile(r"[A-Za-z0-9_]{2,}")


def fts_query(text: str) -> str:
    """An FTS5 OR-query of the words of `text`, each quoted so no word is read as an operator."""
    words = dict.fromkeys(w.lower() for w in _WORD_RE.findall(text))
    return " OR ".join(f'"{w}"' for w in words)


def path_words(files: Sequence[str]) -> str:
    """Words of the touched paths (directories and file stems), for text search in prompt+files mode."""
    parts = []
    for f in files:
        for piece in f.split("/"):
            parts.append(piece.rsplit(".", 1)[0])
    return " ".join(parts)


class BM25Retriever:
    """SQLite FTS5 bm25 over the rule text, in its own in-memory database. No scope, no files beyond words."""

    name = "bm25"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")

    def prepare(self, corpus: Corpus) -> None:
        self.db.execute("DROP TABLE IF EXISTS units")
        self.db.execute("CREATE VIRTUAL TABLE units USING fts5(id UNINDEXED, body, tokenize='unicode61')")
        self.db.executemany("INSERT INTO units VALUES (?, ?)", [(m.id, m.text) for m in corpus.memories])

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        text = task.query if mode == "prompt" else f"{task.query} {path_words(task.files)}"
        query = fts_query(text)
        if not query:
            return []
        rows = self.db.execute(
            "SELECT id FROM units WHERE units MATCH ? ORDER BY bm25(units) LIMIT 20", (query,)
        ).fetchall()
        return [r[0] for r in rows]


def ancestor_scopes(files: Sequence[str]) -> set[str]:
    """Every directory containing a touched file, as scopes ("" for the root, else "dir/")."""
    scopes = {""}
    for f in files:
        parts = f.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            scopes.add("/".join(parts[:i]) + "/")
    return scopes


def native_files(corpus: Corpus, files: Sequence[str]) -> list[str]:
    """Rule files an agent loads by itself for these touched files: the root's, then deeper ones."""
    scopes = ancestor_scopes(files)
    chosen = [p for p in corpus.rule_files if rule_scope(p) in scopes]
    return sorted(chosen, key=lambda p: (rule_scope(p).count("/"), p))


class NativeScopeRetriever:
    """What agents do today: load every rule file in the touched files' ancestor directories, whole.

    Its ranking is file order (root first, then deeper, each top to bottom), so Recall@3 is about its first
    three rules, while its token cost is that of the whole files. In prompt mode nothing is touched yet, so
    only root rule files load.
    """

    name = "native-scope"

    def __init__(self) -> None:
        self.corpus: Corpus | None = None
        self.by_file: dict[str, list[MemoryItem]] = {}

    def prepare(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.by_file = {}
        for m in corpus.memories:
            self.by_file.setdefault(m.path, []).append(m)

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        assert self.corpus is not None
        files = task.files if mode == "prompt+files" else ()
        return [m.id for p in native_files(self.corpus, files) for m in self.by_file.get(p, [])]

    def tokens(self, task: TaskView, mode: str) -> float:
        assert self.corpus is not None
        files = task.files if mode == "prompt+files" else ()
        return sum(self.corpus.rule_files[p] for p in native_files(self.corpus, files)) / 4


BASELINES: dict[str, Callable[[], Retriever]] = {
    "random-3": RandomRetriever,
    "bm25": BM25Retriever,
    "native-scope": NativeScopeRetriever,
}


# --- scoring ------------------------------------------------------------------------------------------


@dataclass
class Result:
    repo: str
    system: str
    mode: str
    recall: list[float] = field(default_factory=list)  # per task with positives
    precision: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    tokens: list[float] = field(default_factory=list)  # per task (all tasks)
    native_tokens: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    injected_on_negatives: list[int] = field(default_factory=list)


def load_labels(corpus: Corpus) -> dict[str, tuple[str, set[str]]]:
    """commit -> (split, relevant memory ids), from the frozen labels; checks they fit this corpus."""
    doc = json.loads(labels_path(corpus.repo).read_text(encoding="utf-8"))
    if doc["c1"] != corpus.c1 or doc["c2"] != corpus.c2:
        raise SystemExit(
            f"{corpus.repo}: corpus cut-offs differ from the frozen labels; rebuild with build.py"
        )
    ids = {m.id for m in corpus.memories}
    out = {}
    for task in doc["tasks"]:
        rel = {r[2] for r in task["relevant"]}
        if rel - ids:
            raise SystemExit(f"{corpus.repo}: labels name rule units missing from the corpus; rebuild it")
        out[task["commit"]] = (task["split"], rel)
    return out


def evaluate(corpus: Corpus, retriever: Retriever, window: str) -> list[Result]:
    labels = load_labels(corpus)
    summaries = {m.id: m.summary for m in corpus.memories}
    native = NativeScopeRetriever()
    native.prepare(corpus)
    retriever.prepare(corpus)
    results = []
    for mode in MODES:
        res = Result(corpus.repo, retriever.name, mode)
        for task in corpus.tasks:
            split, relevant = labels.get(task.commit, ("", set()))
            if split != window:
                continue
            view = TaskView(query=task.query, files=task.files if mode == "prompt+files" else ())
            start = time.perf_counter()
            ranked = list(dict.fromkeys(retriever.retrieve(view, mode)))
            res.latency_ms.append((time.perf_counter() - start) * 1000)
            top = ranked[:TOP_K]
            # A retriever that knows what it really injects (header, receipts, whole files) says so.
            tokens = getattr(retriever, "tokens", None)
            if tokens is not None:
                res.tokens.append(tokens(view, mode))
            else:
                res.tokens.append(sum(len(summaries.get(i, "")) for i in top) / 4)
            res.native_tokens.append(native.tokens(TaskView(task.query, task.files), "prompt+files"))
            if not relevant:
                res.injected_on_negatives.append(len(top))
                continue
            hits = len(set(top) & relevant)
            res.recall.append(hits / len(relevant))
            res.precision.append(hits / TOP_K)
            rank = next((i for i, mid in enumerate(ranked, 1) if mid in relevant), None)
            res.rr.append(1 / rank if rank else 0.0)
        results.append(res)
    return results


def bootstrap_ci(values: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean over tasks."""
    if not values:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    return means[int(0.025 * BOOTSTRAP_SAMPLES)], means[int(0.975 * BOOTSTRAP_SAMPLES) - 1]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _metric(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{_mean(values):.3f} [{low:.2f}, {high:.2f}]"


def markdown_table(results: Sequence[Result], window: str) -> str:
    head = (
        f"Window: **{window}**. Quality over tasks with at least one relevant rule (n); 95% bootstrap CIs.\n\n"
        "| repo | system | mode | n | Recall@3 | Precision@3 | MRR | tok/task | native tok/task "
        "| inj/neg | p50 ms | p95 ms |\n"
        "|---|---|---|---:|---|---|---|---:|---:|---:|---:|---:|"
    )
    rows = [head]
    for r in results:
        rows.append(
            f"| {r.repo} | {r.system} | {r.mode} | {len(r.recall)} | {_metric(r.recall)} | "
            f"{_metric(r.precision)} | {_metric(r.rr)} | {_mean(r.tokens):.0f} | {_mean(r.native_tokens):.0f} | "
            f"{_mean(r.injected_on_negatives):.2f} | {_pct(r.latency_ms, 0.5):.2f} | {_pct(r.latency_ms, 0.95):.2f} |"
        )
    return "\n".join(rows)


def paired_differences(results: Sequence[Result], baseline: str = "bm25") -> str:
    """Each system's Recall@3 minus the baseline's, task by task, with a paired bootstrap 95% interval.

    The per-system intervals of the table overlap easily; the difference on the same tasks is what says
    whether one system beats the other. Rows for the pooled repository (`all`) only, when there is one.
    """
    scope = "all" if any(r.repo == "all" for r in results) else results[0].repo if results else ""
    base = {r.mode: r.recall for r in results if r.repo == scope and r.system == baseline}
    rows = [
        f"Recall@3 minus {baseline}'s on the same tasks ({scope}; paired bootstrap 95% interval):\n",
        "| system | mode | n | difference |",
        "|---|---|---:|---|",
    ]
    for r in results:
        if r.repo != scope or r.system == baseline or r.mode not in base:
            continue
        if len(base[r.mode]) != len(r.recall):
            continue  # not the same tasks: no pairing
        diffs = [a - b for a, b in zip(r.recall, base[r.mode], strict=True)]
        low, high = bootstrap_ci(diffs)
        rows.append(
            f"| {r.system} | {r.mode} | {len(diffs)} | {_mean(diffs):+.3f} [{low:+.2f}, {high:+.2f}] |"
        )
    return "\n".join(rows)


def pooled(results: Sequence[Result]) -> list[Result]:
    """One row per system and mode over every repository's tasks together."""
    out: dict[tuple[str, str], Result] = {}
    for r in results:
        p = out.setdefault((r.system, r.mode), Result("all", r.system, r.mode))
        for name in (
            "recall",
            "precision",
            "rr",
            "tokens",
            "native_tokens",
            "latency_ms",
            "injected_on_negatives",
        ):
            getattr(p, name).extend(getattr(r, name))
    return list(out.values())
