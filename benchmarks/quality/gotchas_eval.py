"""Score retrievers on the gotcha corpus against the frozen labels: baselines, metrics, paired differences.

A retriever sees the task's query (mode `prompt`), the query and the touched files (`prompt+files`), or
those and the first changed hunk of each modified source file (`edit`), and returns memory ids, best first.
Quality is over tasks with at least one relevant memory: Recall@3, Precision@3 (hits in the first three / 3)
and MRR (over the whole list), each with a 95% bootstrap interval; `inj/neg` is how many memories the first
three hold on tasks with none relevant (an empty answer is right there).
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from evaluate import bootstrap_ci, path_words
from gotchas_build import BIG_POOL, load_labels
from gotchas_comments import Gotcha
from gotchas_corpus import MODES, GotchaCorpus, GotchaView, distance, follow, view_of

TOP_K = 3
BUCKETS = ("all", f"{BIG_POOL}+")


class GotchaRetriever(Protocol):
    """What the evaluation asks of a system. `modes`: the modes it runs in (edit-only systems exist)."""

    name: str
    modes: tuple[str, ...]

    def prepare(self, corpus: GotchaCorpus) -> None: ...

    def retrieve(self, view: GotchaView, mode: str) -> list[str]: ...


# --- baselines ----------------------------------------------------------------------------------------


class _Pool:
    """The memories of a corpus by file, and a porter-stemmed FTS5 index over their text."""

    def __init__(self) -> None:
        self.by_file: dict[str, list[Gotcha]] = {}
        self.ids: list[str] = []
        self.db = sqlite3.connect(":memory:")

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.by_file = corpus.by_file()
        self.ids = [m.id for m in corpus.memories]
        self.db.execute("DROP TABLE IF EXISTS notes")
        self.db.execute(
            "CREATE VIRTUAL TABLE notes USING fts5(id UNINDEXED, path UNINDEXED, body, "
            "tokenize='porter unicode61')"
        )
        self.db.executemany(
            "INSERT INTO notes VALUES (?, ?, ?)",
            [(m.id, m.path, f"{m.summary}\n{m.details}") for m in corpus.memories],
        )

    def touched(self, files: Sequence[str]) -> list[Gotcha]:
        return [m for p in files for m in self.by_file.get(p, ())]

    def bm25(self, text: str, paths: Sequence[str] | None = None, limit: int = 50) -> list[str]:
        """Memory ids by bm25 of `text`, best first; restricted to `paths` when given."""
        query = _fts_query(text)
        if not query:
            return []
        if paths is None:
            rows = self.db.execute(
                "SELECT id FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT ?", (query, limit)
            ).fetchall()
        else:
            if not paths:
                return []
            marks = ",".join("?" * len(paths))
            rows = self.db.execute(
                f"SELECT id FROM notes WHERE notes MATCH ? AND path IN ({marks}) ORDER BY bm25(notes)",
                (query, *paths),
            ).fetchall()
        return [r[0] for r in rows]


_WORD_RE = re.compile(r"[A-Za-z0-9_]{2,}")
# FTS5 queries longer than this many terms are slow and say no more (an edit's text can be thousands).
MAX_QUERY_TERMS = 200


def _fts_query(text: str) -> str:
    words = list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(text)))[:MAX_QUERY_TERMS]
    return " OR ".join(f'"{w}"' for w in words)


def _query_text(view: GotchaView, mode: str) -> str:
    return view.query if mode == "prompt" else f"{view.query} {path_words(view.files)}"


class RandomAll:
    """Three memories of the repository at random (seeded per task and mode)."""

    name = "random-3"
    modes = MODES

    def __init__(self) -> None:
        self.pool = _Pool()

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.pool.prepare(corpus)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        rng = random.Random(f"{view.query}:{mode}")
        return rng.sample(self.pool.ids, min(TOP_K, len(self.pool.ids)))


class RandomFiles(RandomAll):
    """Three of the touched files' memories at random: the floor a file-restricted system must beat."""

    name = "random-3:files"
    modes = ("prompt+files", "edit")

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        ids = [m.id for m in self.pool.touched(view.files)]
        rng = random.Random(f"{view.query}:{mode}")
        return rng.sample(ids, min(TOP_K, len(ids)))


class BM25All:
    """Porter-stemmed FTS5 bm25 over every memory's text; with files, their path words join the query."""

    name = "bm25"
    modes = MODES

    def __init__(self) -> None:
        self.pool = _Pool()

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.pool.prepare(corpus)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        return self.pool.bm25(_query_text(view, mode))


class BM25Files(BM25All):
    """bm25 restricted to the touched files' memories; the ones the query misses follow in file order.

    The key baseline here: it knows what a file-tied store knows (which memories sit on the touched files)
    and orders them by the prompt alone.
    """

    name = "bm25:files"
    modes = ("prompt+files", "edit")

    def text(self, view: GotchaView, mode: str) -> str:
        return _query_text(view, mode)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        ranked = self.pool.bm25(self.text(view, mode), list(view.files))
        rest = [m.id for m in self.pool.touched(view.files)]
        return list(dict.fromkeys([*ranked, *rest]))


# Lines of code either side of a comment that `bm25:files+code` indexes with it (3, 5 and 8 score alike on
# the dev window: 0.542 / 0.536 / 0.532; 15 0.513, 40 0.501).
CODE_LINES = 5


class BM25FilesCode(BM25Files):
    """bm25:files over each memory's text and the code around its comment at C1 (`CODE_LINES` either side).

    A stronger simple baseline than bm25:files (issue 17, session 5): the prompt often names the code a
    warning sits beside rather than the warning's own words. Files are read from the mirror at C1, which
    is what a file-tied store holds when the memories are made.
    """

    name = "bm25:files+code"
    modes = ("prompt+files",)

    def prepare(self, corpus: GotchaCorpus) -> None:
        super().prepare(corpus)
        texts: dict[str, list[str]] = {}
        rows = []
        for m in corpus.memories:
            if m.path not in texts:
                texts[m.path] = (
                    (corpus.blob(corpus.c1, m.path) or b"").decode("utf-8", "replace").splitlines()
                )
            rows.append((m.id, m.path, f"{m.summary}\n{m.details}\n{self.code(texts[m.path], m)}"))
        self.pool.db.execute("DELETE FROM notes")
        self.pool.db.executemany("INSERT INTO notes VALUES (?, ?, ?)", rows)

    def code(self, lines: list[str], m: Gotcha) -> str:
        return "\n".join(lines[max(0, m.line - 1 - CODE_LINES) : m.end_line + CODE_LINES])


class BM25FilesCodeDef(BM25FilesCode):
    """bm25:files+code with the line git names as the comment's enclosing definition (`enclosing_line`).

    Made the session tether's place words learned the definition's name (issue 17, session 6), so that the
    strongest simple baseline knows it too: on the dev window it beats bm25:files+code by a little (0.548 vs
    0.541; 25+ 0.413 vs 0.399).
    """

    name = "bm25:files+code+def"

    def code(self, lines: list[str], m: Gotcha) -> str:
        return f"{super().code(lines, m)}\n{enclosing_line(lines, m.line)}"


def enclosing_line(lines: list[str], line: int) -> str:
    """git's default hunk-header rule: the nearest line above `line` (1-based) starting with a letter, `_`
    or `$` (a `func`, `def`, `class`, `fn`, `export function` at the left margin), or "".

    >>> enclosing_line(["func Upload() {", "  x := 1", "  // never retry", "}"], 3)
    'func Upload() {'
    """
    for text in reversed(lines[: max(0, line - 1)]):
        if text and (text[0].isalpha() or text[0] in "_$"):
            return text
    return ""


class BM25FilesEdit(BM25Files):
    """bm25:files whose query also holds the edit's old and new text (edit mode)."""

    name = "bm25:files+edit"
    modes = ("edit",)

    def text(self, view: GotchaView, mode: str) -> str:
        edits = " ".join(f"{h.old_string} {h.new_string}" for h in view.hunks)
        return f"{_query_text(view, mode)} {edits}"


class NearestToEdit(BM25All):
    """The touched files' memories by line distance to the first changed hunk of their file, ties by bm25.

    A memory's line is the one it was stored with (C1); memories on files without a hunk come last. The
    `@tracked` variant first follows each memory's lines from C1 to the file the edit sees (what an
    anchored memory would know); a memory whose comment changed since is placed after the located ones.
    """

    name = "nearest-to-edit"
    modes = ("edit",)
    tracked = False

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        order = {mid: i for i, mid in enumerate(self.pool.bm25(_query_text(view, mode), list(view.files)))}
        hunks = {h.path: h for h in view.hunks}
        scored = []
        for index, m in enumerate(self.pool.touched(view.files)):
            hunk = hunks.get(m.path)
            lines: tuple[int, int] | None = (m.line, m.end_line)
            if self.tracked and hunk is not None:
                lines = follow((m.line, m.end_line), view.drift.get(m.path, []))
            gap = math.inf if hunk is None or lines is None else distance(lines, hunk.start, hunk.count)
            scored.append((gap, order.get(m.id, len(order)), index, m.id))
        return [mid for *_, mid in sorted(scored)]


class NearestToEditTracked(NearestToEdit):
    name = "nearest-to-edit@tracked"
    tracked = True


BASELINES: dict[str, Callable[[], GotchaRetriever]] = {
    "random-3": RandomAll,
    "random-3:files": RandomFiles,
    "bm25": BM25All,
    "bm25:files": BM25Files,
    "bm25:files+code": BM25FilesCode,
    "bm25:files+code+def": BM25FilesCodeDef,
    "bm25:files+edit": BM25FilesEdit,
    "nearest-to-edit": NearestToEdit,
    "nearest-to-edit@tracked": NearestToEditTracked,
}


# --- scoring ------------------------------------------------------------------------------------------


@dataclass
class Result:
    """Per-task scores of one system in one mode on one repository and bucket (tasks in label order)."""

    repo: str
    system: str
    mode: str
    bucket: str
    tasks: list[str] = field(default_factory=list)  # commit ids of the tasks with a positive, in order
    recall: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    injected_on_negatives: list[int] = field(default_factory=list)
    shown: list[int] = field(default_factory=list)  # how many memories the system returned (all tasks)
    latency_ms: list[float] = field(default_factory=list)


def evaluate(
    corpus: GotchaCorpus, retriever: GotchaRetriever, window: str, modes: Sequence[str]
) -> list[Result]:
    labels = load_labels(corpus)
    retriever.prepare(corpus)
    results = []
    for mode in modes:
        if mode not in retriever.modes:
            continue
        per_bucket = {b: Result(corpus.repo, retriever.name, mode, b) for b in BUCKETS}
        for task in corpus.tasks:
            split, pool, relevant = labels.get(task.commit, ("", 0, set()))
            if not split or (window != "all" and split != window):
                continue
            view = view_of(task, mode)
            start = time.perf_counter()
            ranked = list(dict.fromkeys(retriever.retrieve(view, mode)))
            elapsed = (time.perf_counter() - start) * 1000
            buckets = ["all"] + ([f"{BIG_POOL}+"] if pool >= BIG_POOL else [])
            for b in buckets:
                _score(per_bucket[b], task.commit, ranked, relevant, elapsed)
        results.extend(per_bucket.values())
    return results


def _score(res: Result, commit: str, ranked: list[str], relevant: set[str], elapsed: float) -> None:
    res.latency_ms.append(elapsed)
    res.shown.append(len(ranked))
    top = ranked[:TOP_K]
    if not relevant:
        res.injected_on_negatives.append(len(top))
        return
    hits = len(set(top) & relevant)
    res.tasks.append(commit)
    res.recall.append(hits / len(relevant))
    res.precision.append(hits / TOP_K)
    rank = next((i for i, mid in enumerate(ranked, 1) if mid in relevant), None)
    res.rr.append(1 / rank if rank else 0.0)


def pooled(results: Iterable[Result]) -> list[Result]:
    """One row per system, mode and bucket over every repository's tasks together."""
    out: dict[tuple[str, str, str], Result] = {}
    for r in results:
        p = out.setdefault((r.system, r.mode, r.bucket), Result("all", r.system, r.mode, r.bucket))
        for name in ("tasks", "recall", "precision", "rr", "injected_on_negatives", "shown", "latency_ms"):
            getattr(p, name).extend(getattr(r, name))
    return list(out.values())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _metric(values: Sequence[float]) -> str:
    if not values:
        return "—"
    low, high = bootstrap_ci(values)
    return f"{_mean(values):.3f} [{low:.2f}, {high:.2f}]"


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def markdown_table(results: Sequence[Result], title: str) -> str:
    rows = [
        title,
        "",
        "| repo | bucket | mode | system | n | Recall@3 | Precision@3 | MRR | inj/neg | shown | p50 ms |",
        "|---|---|---|---|---:|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.repo} | {r.bucket} | {r.mode} | {r.system} | {len(r.recall)} | {_metric(r.recall)} | "
            f"{_metric(r.precision)} | {_metric(r.rr)} | {_mean(r.injected_on_negatives):.2f} | "
            f"{_mean(r.shown):.1f} | {_pct(r.latency_ms, 0.5):.1f} |"
        )
    return "\n".join(rows)


# The columns of the at-a-glance table: the systems each mode is about (tether's edit row equals its
# prompt+files row today, as it takes no location yet).
GLANCE = (
    ("prompt", "bm25"),
    ("prompt", "tether"),
    ("prompt+files", "random-3:files"),
    ("prompt+files", "bm25:files"),
    ("prompt+files", "bm25:files+code+def"),
    ("prompt+files", "tether"),
    ("edit", "bm25:files+edit"),
    ("edit", "nearest-to-edit"),
    ("edit", "nearest-to-edit@tracked"),
    ("edit", "tether"),
    ("edit", "tether:before-edit"),
)


def glance(results: Sequence[Result]) -> str:
    """Recall@3 of the main systems, one row per repository and bucket."""
    index = {(r.repo, r.bucket, r.mode, r.system): r for r in results}
    columns = [(m, s) for m, s in GLANCE if any(k[2:] == (m, s) for k in index)]
    head = " | ".join(f"{s} ({m})" for m, s in columns)
    rows = [
        "Recall@3 at a glance:",
        "",
        f"| repo | bucket | n | {head} |",
        "|---|---|---:|" + "---|" * len(columns),
    ]
    for repo, bucket in dict.fromkeys((r.repo, r.bucket) for r in results):
        cells = []
        n = 0
        for mode, system in columns:
            r = index.get((repo, bucket, mode, system))
            n = max(n, len(r.recall)) if r else n
            cells.append(f"{_mean(r.recall):.3f}" if r and r.recall else "—")
        rows.append(f"| {repo} | {bucket} | {n} | {' | '.join(cells)} |")
    return "\n".join(rows)


def strongest(results: Sequence[Result], mode: str, exclude: str = "tether") -> str | None:
    """The baseline with the best pooled Recall@3 (all tasks) in `mode`; ties go to the higher MRR."""
    scope = "all" if any(r.repo == "all" for r in results) else None
    rows = [
        r
        for r in results
        if r.mode == mode
        and r.bucket == "all"
        and (scope is None or r.repo == scope)
        and not r.system.startswith(exclude)
        and r.recall
    ]
    if not rows:
        return None
    best = max(rows, key=lambda r: (_mean(r.recall), _mean(r.rr)))
    return best.system


def paired(results: Sequence[Result], system: str, against: Iterable[tuple[str, Sequence[str]]]) -> str:
    """`system` minus each baseline on the same tasks (Recall@3 and MRR), with paired bootstrap intervals.

    `against`: (baseline, the modes to compare it in).
    """
    rows = [
        f"Paired differences, {system} minus the baseline on the same tasks (95% paired bootstrap intervals):",
        "",
        "| repo | bucket | mode | against | n | ΔRecall@3 | ΔMRR |",
        "|---|---|---|---|---:|---|---|",
    ]
    index = {(r.repo, r.bucket, r.mode, r.system): r for r in results}
    repos = list(dict.fromkeys(r.repo for r in results))
    repos = ["all", *[x for x in repos if x != "all"]] if "all" in repos else repos
    for base, modes in against:
        for repo in repos:
            for bucket in BUCKETS:
                for mode in modes:
                    a = index.get((repo, bucket, mode, system))
                    b = index.get((repo, bucket, mode, base))
                    if a is None or b is None or a.tasks != b.tasks or not a.tasks:
                        continue
                    dr = [x - y for x, y in zip(a.recall, b.recall, strict=True)]
                    dm = [x - y for x, y in zip(a.rr, b.rr, strict=True)]
                    rows.append(
                        f"| {repo} | {bucket} | {mode} | {base} | {len(dr)} | {_diff(dr)} | {_diff(dm)} |"
                    )
    return "\n".join(rows)


def _diff(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{_mean(values):+.3f} [{low:+.2f}, {high:+.2f}]"
