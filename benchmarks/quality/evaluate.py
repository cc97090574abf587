"""Score retrievers on the recall-quality corpus: the baselines, the runs, and the metrics over any labels.

A retriever gets each task's query (mode "prompt") or query and touched files (mode "prompt+files") and
returns doc ids (the product's memories, `corpus.docs_of`), best first. Every system ranks the same memory
texts: the ones `tether rules sync` made (`product.attach`). A run keeps each task's ranked list (its first
`RANK_DEPTH`), so the metrics can be taken against the mechanical labels, the hand-judged ones, or at a token
budget, without running anything again. Only the first three count for Recall@3 / Precision@3 and for the
tokens injected (DESIGN §5: top 3, one-line summaries); MRR uses the ranked list. Tasks without any
relevant rule are left out of the quality metrics; on them we count how many memories a system would
still inject (an empty block is the right answer there).
"""

from __future__ import annotations

import json
import math
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from corpus import Corpus, Doc, TaskView, docs_of, labels_path, unit_times
from product import rule_scope

MODES = ("prompt", "prompt+files")
TOP_K = 3
RANK_DEPTH = 50  # ranked items kept per task: MRR and the budget view look this deep
BOOTSTRAP_SAMPLES = 1000
BUDGETS = (100, 250, 500, 1000)  # tokens, for the recall-at-equal-budget view
# What one injected memory costs besides its summary: the line tether's prompt hook writes is
# `- [pref] 1a2b3c4d — <summary>`; receipts are left out so that systems are compared on what they choose.
LINE_OVERHEAD_CHARS = len("- [pref] 1a2b3c4d — ")
CHARS_PER_TOKEN = 4


class Retriever(Protocol):
    """What the evaluation asks of a recall system.

    `prepare` sees the corpus (its memories: `corpus.docs_of`) and may build indexes;
    `corpus.checkout_at_c1(dir)` gives it the repository at C1 with no later history. `retrieve` must not
    look at anything but the task view it is given.
    """

    name: str

    def prepare(self, corpus: Corpus) -> None: ...

    def retrieve(self, task: TaskView, mode: str) -> list[str]: ...


# --- baselines ----------------------------------------------------------------------------------------


class RandomRetriever:
    """Memories in a random order (seeded per task, so runs repeat); its first three are `random-3`."""

    name = "random-3"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.ids: list[str] = []

    def prepare(self, corpus: Corpus) -> None:
        self.ids = [d.id for d in docs_of(corpus)]

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        rng = random.Random(f"{self.seed}:{task.query}:{mode}")
        return rng.sample(self.ids, min(RANK_DEPTH, len(self.ids)))


class RecentRetriever:
    """The most recently added or changed memories first, the same list for every task.

    A memory's time is the newest commit (up to C1) among its rule's lines (`git blame`), so one edited line
    does not make every rule of its file "recent"; ties keep rule-file order (path, then line).
    """

    name = "recent-3"

    def __init__(self) -> None:
        self.ids: list[str] = []

    def prepare(self, corpus: Corpus) -> None:
        docs = docs_of(corpus)
        times = unit_times(corpus) if corpus.git_dir else {}
        order = {d.id: i for i, d in enumerate(docs)}
        newest = {d.id: max((times.get(u, 0) for u in d.units), default=0) for d in docs}
        self.ids = sorted(order, key=lambda i: (-newest[i], order[i]))

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        return self.ids[:RANK_DEPTH]


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
    """SQLite FTS5 bm25 over the memories' text (summary and details), in its own in-memory database.

    `tokenizer` is `porter unicode61` (stemmed: `retries` finds `retry`) or `unicode61` (the first
    baseline's, unstemmed). In prompt+files mode the words of the touched paths join the query.
    """

    def __init__(self, name: str = "bm25-porter", tokenizer: str = "porter unicode61") -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.db = sqlite3.connect(":memory:")

    def prepare(self, corpus: Corpus) -> None:
        self.index((d.id, d.text) for d in docs_of(corpus))

    def index(self, docs: Iterable[tuple[str, str]]) -> None:
        """Index (id, text) pairs in place of whatever was indexed before."""
        self.db.execute("DROP TABLE IF EXISTS docs")
        self.db.execute(
            f"CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, body, tokenize='{self.tokenizer}')"
        )
        self.db.executemany("INSERT INTO docs VALUES (?, ?)", list(docs))

    def search(self, text: str, limit: int = RANK_DEPTH) -> list[str]:
        query = fts_query(text)
        if not query:
            return []
        rows = self.db.execute(
            "SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?", (query, limit)
        ).fetchall()
        return [r[0] for r in rows]

    def query_text(self, task: TaskView, mode: str) -> str:
        return task.query if mode == "prompt" else f"{task.query} {path_words(task.files)}"

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        return self.search(self.query_text(task, mode))


class ScopeBM25Retriever(BM25Retriever):
    """Porter bm25 where the memories that apply to a touched file come first (scope-aware BM25).

    A memory applies when one of its file references is a touched file or a directory above one; a memory
    without references (a root rule) applies everywhere. In prompt+files mode the applicable memories come
    first, in bm25 order, then those of them the query does not match at all (rule-file order), then the
    other matches in bm25 order. `only_in_scope` drops the others (BM25 restricted to the memories on the
    touched files); with nothing touched (prompt mode) that leaves the memories that apply everywhere,
    as an agent loads only root rule files then. Without `only_in_scope`, prompt mode is plain porter bm25.
    """

    def __init__(self, name: str = "scope-bm25", only_in_scope: bool = False, with_path_words: bool = True):
        super().__init__(name, "porter unicode61")
        self.only_in_scope = only_in_scope
        self.with_path_words = with_path_words
        self.docs: list[Doc] = []

    def prepare(self, corpus: Corpus) -> None:
        super().prepare(corpus)
        self.docs = docs_of(corpus)

    def query_text(self, task: TaskView, mode: str) -> str:
        return super().query_text(task, mode) if self.with_path_words else task.query

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        files = task.files if mode == "prompt+files" else ()
        if not files and not self.only_in_scope:
            return self.search(task.query)
        applies = [d.id for d in self.docs if (any(d.covers(f) for f in files) if files else not d.refs)]
        inside = set(applies)
        matched = self.search(self.query_text(task, mode), limit=len(self.docs))
        first = [i for i in matched if i in inside]
        seen = set(first)
        ranked = first + [i for i in applies if i not in seen]
        if not self.only_in_scope:
            ranked += [i for i in matched if i not in inside]
        return ranked[:RANK_DEPTH]


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
        self.by_file: dict[str, list[Doc]] = {}

    def prepare(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.by_file = {}
        for d in docs_of(corpus):
            self.by_file.setdefault(d.path, []).append(d)

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        assert self.corpus is not None
        files = task.files if mode == "prompt+files" else ()
        return [d.id for p in native_files(self.corpus, files) for d in self.by_file.get(p, [])]

    def tokens(self, task: TaskView, mode: str) -> float:
        assert self.corpus is not None
        files = task.files if mode == "prompt+files" else ()
        return sum(self.corpus.rule_files[p] for p in native_files(self.corpus, files)) / CHARS_PER_TOKEN


BASELINES: dict[str, Callable[[], Retriever]] = {
    "bm25-unstemmed": lambda: BM25Retriever("bm25-unstemmed", "unicode61"),
    "bm25-porter": BM25Retriever,
    "scope-bm25": ScopeBM25Retriever,
    "in-scope-bm25": lambda: ScopeBM25Retriever("in-scope-bm25", only_in_scope=True),
    "random-3": RandomRetriever,
    "recent-3": RecentRetriever,
    "native-scope": NativeScopeRetriever,
}


# --- runs and labels ----------------------------------------------------------------------------------


@dataclass
class Run:
    """One system in one mode over one repository's window: what it returned for each task."""

    repo: str
    system: str
    mode: str
    commits: list[str] = field(default_factory=list)
    ranked: list[list[str]] = field(default_factory=list)  # first RANK_DEPTH ids per task
    tokens: list[float] = field(default_factory=list)  # what it injects per task
    added: list[dict[str, float]] = field(default_factory=list)  # tether: header+footer / lines split
    native_tokens: list[float] = field(default_factory=list)  # what the agent loads by itself per task
    latency_ms: list[float] = field(default_factory=list)
    cost: dict[str, float] = field(default_factory=dict)  # doc id -> tokens of its injected line


Labels = dict[str, set[str]]  # commit -> relevant doc ids


def load_labels(corpus: Corpus, window: str) -> Labels:
    """Relevant docs per task of `window`, from the frozen labels; checks they fit this corpus.

    A label names a rule unit; it becomes the doc (product memory) standing for that unit. A unit the
    product did not store (a skipped rule) keeps its own id, which no system can return: a miss for all.
    """
    doc = json.loads(labels_path(corpus.repo).read_text(encoding="utf-8"))
    if doc["c1"] != corpus.c1 or doc["c2"] != corpus.c2:
        raise SystemExit(
            f"{corpus.repo}: corpus cut-offs differ from the frozen labels; rebuild with build.py"
        )
    unit_ids = {m.id for m in corpus.memories}
    to_doc = {u: d.id for d in docs_of(corpus) for u in d.units}
    out: Labels = {}
    for task in doc["tasks"]:
        rel = {r[2] for r in task["relevant"]}
        if rel - unit_ids:
            raise SystemExit(f"{corpus.repo}: labels name rule units missing from the corpus; rebuild it")
        if task["split"] == window:
            out[task["commit"]] = {to_doc.get(u, u) for u in rel}
    return out


def window_tasks(corpus: Corpus, window: str) -> list[str]:
    doc = json.loads(labels_path(corpus.repo).read_text(encoding="utf-8"))
    split = {t["commit"]: t["split"] for t in doc["tasks"]}
    return [t.commit for t in corpus.tasks if split.get(t.commit) == window]


def line_cost(doc: Doc) -> float:
    return (len(doc.summary) + LINE_OVERHEAD_CHARS) / CHARS_PER_TOKEN


def evaluate(
    corpus: Corpus,
    retriever: Retriever,
    window: str,
    modes: Sequence[str] = MODES,
    only: set[str] | None = None,
) -> list[Run]:
    """Run `retriever` on every task of `window` (or only the commits in `only`), in each mode."""
    commits = set(window_tasks(corpus, window))
    docs = docs_of(corpus)
    summaries = {d.id: d.summary for d in docs}
    cost = {d.id: line_cost(d) for d in docs}
    native = NativeScopeRetriever()
    native.prepare(corpus)
    retriever.prepare(corpus)
    runs = []
    for mode in modes:
        run = Run(corpus.repo, retriever.name, mode, cost=cost)
        for task in corpus.tasks:
            if task.commit not in commits or (only is not None and task.commit not in only):
                continue
            view = TaskView(query=task.query, files=task.files if mode == "prompt+files" else ())
            start = time.perf_counter()
            ranked = list(dict.fromkeys(retriever.retrieve(view, mode)))[:RANK_DEPTH]
            run.latency_ms.append((time.perf_counter() - start) * 1000)
            run.commits.append(task.commit)
            run.ranked.append(ranked)
            # A retriever that knows what it really injects (header, receipts, whole files) says so.
            tokens = getattr(retriever, "tokens", None)
            if tokens is not None:
                run.tokens.append(tokens(view, mode))
            else:
                run.tokens.append(sum(len(summaries.get(i, "")) for i in ranked[:TOP_K]) / CHARS_PER_TOKEN)
            parts = getattr(retriever, "token_parts", None)
            if parts is not None:
                run.added.append(parts())
            run.native_tokens.append(native.tokens(TaskView(task.query, task.files), "prompt+files"))
        runs.append(run)
    return runs


def pooled(runs: Sequence[Run]) -> list[Run]:
    """One run per system and mode over every repository's tasks together (repository order kept)."""
    out: dict[tuple[str, str], Run] = {}
    for r in runs:
        if r.repo == "all":
            continue
        p = out.setdefault((r.system, r.mode), Run("all", r.system, r.mode))
        for name in ("commits", "ranked", "tokens", "added", "native_tokens", "latency_ms"):
            getattr(p, name).extend(getattr(r, name))
        p.cost.update(r.cost)
    return list(out.values())


# --- metrics ------------------------------------------------------------------------------------------


@dataclass
class Result:
    """Metrics of one run against one set of labels; per-task lists are keyed by `commits` for pairing."""

    repo: str
    system: str
    mode: str
    commits: list[str] = field(default_factory=list)  # tasks with at least one relevant doc
    recall: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    tokens: list[float] = field(default_factory=list)  # per task (all tasks)
    native_tokens: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    injected_on_negatives: list[int] = field(default_factory=list)


def score(run: Run, labels: Labels, top: int = TOP_K) -> Result:
    res = Result(run.repo, run.system, run.mode)
    res.tokens, res.native_tokens, res.latency_ms = run.tokens, run.native_tokens, run.latency_ms
    for commit, ranked in zip(run.commits, run.ranked, strict=True):
        relevant = labels.get(commit, set())
        head = ranked[:top]
        if not relevant:
            res.injected_on_negatives.append(len(head))
            continue
        hits = len(set(head) & relevant)
        res.commits.append(commit)
        res.recall.append(hits / len(relevant))
        res.precision.append(hits / top)
        rank = next((i for i, mid in enumerate(ranked, 1) if mid in relevant), None)
        res.rr.append(1 / rank if rank else 0.0)
    return res


def budget_recall(run: Run, labels: Labels, budget: float) -> list[float]:
    """Recall per task (with positives) when the system injects the longest head of its ranking that fits
    `budget` tokens. A head, not a knapsack: a larger budget never shows less, so the curve is monotone."""
    out = []
    for commit, ranked in zip(run.commits, run.ranked, strict=True):
        relevant = labels.get(commit, set())
        if not relevant:
            continue
        used = 0.0
        shown = set()
        for mid in ranked:
            used += run.cost.get(mid, 0.0)
            if used > budget:
                break
            shown.add(mid)
        out.append(len(shown & relevant) / len(relevant))
    return out


def bootstrap_ci(values: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean over tasks."""
    if not values:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    return means[int(0.025 * BOOTSTRAP_SAMPLES)], means[int(0.975 * BOOTSTRAP_SAMPLES) - 1]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def metric(values: Sequence[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{mean(values):.3f} [{low:.2f}, {high:.2f}]"


def paired(a: Result, b: Result) -> list[float]:
    """Per-task Recall@3 of `a` minus `b`'s, over the tasks both were scored on (matched by commit)."""
    other = dict(zip(b.commits, b.recall, strict=True))
    return [x - other[c] for c, x in zip(a.commits, a.recall, strict=True) if c in other]


def diff_cell(diffs: Sequence[float]) -> str:
    if not diffs:
        return "—"
    low, high = bootstrap_ci(diffs)
    return f"{mean(diffs):+.3f} [{low:+.2f}, {high:+.2f}]"


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
            f"| {r.repo} | {r.system} | {r.mode} | {len(r.recall)} | {metric(r.recall)} | "
            f"{metric(r.precision)} | {metric(r.rr)} | {mean(r.tokens):.0f} | {mean(r.native_tokens):.0f} | "
            f"{mean(r.injected_on_negatives):.2f} | {_pct(r.latency_ms, 0.5):.2f} | {_pct(r.latency_ms, 0.95):.2f} |"
        )
    return "\n".join(rows)


def paired_differences(results: Sequence[Result], baseline: str = "bm25-porter") -> str:
    """Each system's Recall@3 minus the baseline's, task by task, with a paired bootstrap 95% interval.

    The per-system intervals of the table overlap easily; the difference on the same tasks is what says
    whether one system beats the other. Rows for the pooled repository (`all`) only, when there is one.
    """
    scope = "all" if any(r.repo == "all" for r in results) else results[0].repo if results else ""
    base = {r.mode: r for r in results if r.repo == scope and r.system == baseline}
    rows = [
        f"Recall@3 minus {baseline}'s on the same tasks ({scope}; paired bootstrap 95% interval):\n",
        "| system | mode | n | difference |",
        "|---|---|---:|---|",
    ]
    for r in results:
        if r.repo != scope or r.system == baseline or r.mode not in base:
            continue
        diffs = paired(r, base[r.mode])
        if len(diffs) != len(r.recall):
            continue  # not the same tasks: no pairing
        rows.append(f"| {r.system} | {r.mode} | {len(diffs)} | {diff_cell(diffs)} |")
    return "\n".join(rows)


def strongest(results: Iterable[Result], baselines: Iterable[str], repo: str, mode: str) -> Result | None:
    """The baseline with the highest mean Recall@3 for this repository (or "all") and mode.

    Ties go to the higher MRR, then to the earlier baseline in `baselines` order. Picking the best of several
    on the same tasks flatters the baseline a little, which only makes a win against it harder to get.
    """
    order = {name: i for i, name in enumerate(baselines)}
    pool = [r for r in results if r.repo == repo and r.mode == mode and r.system in order and r.recall]
    if not pool:
        return None
    return max(pool, key=lambda r: (round(mean(r.recall), 12), round(mean(r.rr), 12), -order[r.system]))


def against_strongest(results: Sequence[Result], baselines: Sequence[str], systems: Sequence[str]) -> str:
    """Per repository (and pooled) and mode: the strongest baseline, and each system's paired difference."""
    repos = list(dict.fromkeys(r.repo for r in results))
    rows = [
        "Strongest baseline by Recall@3 (per repository: that repository's strongest; `all`: pooled) and each "
        "system's paired Recall@3 difference against it (95% paired bootstrap interval):\n",
        "| repo | mode | strongest baseline | its Recall@3 | system | system's Recall@3 | difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for repo in repos:
        for mode in MODES:
            best = strongest(results, baselines, repo, mode)
            if best is None:
                continue
            for name in systems:
                mine = next((r for r in results if (r.repo, r.system, r.mode) == (repo, name, mode)), None)
                if mine is None:
                    continue
                rows.append(
                    f"| {repo} | {mode} | {best.system} | {mean(best.recall):.3f} | {name} | "
                    f"{mean(mine.recall):.3f} | {diff_cell(paired(mine, best))} |"
                )
    return "\n".join(rows)


def against_each(
    results: Sequence[Result], baselines: Sequence[str], systems: Sequence[str], repo: str = "all"
) -> str:
    """A compact table: each system's paired Recall@3 difference against every baseline (one repository)."""
    present = [b for b in baselines if any(r.system == b and r.repo == repo for r in results)]
    rows = [
        f"Paired Recall@3 difference against each baseline ({repo}; 95% paired bootstrap interval):\n",
        "| system | mode | " + " | ".join(present) + " |",
        "|---|---|" + "---|" * len(present),
    ]
    for name in systems:
        for mode in MODES:
            mine = next((r for r in results if (r.repo, r.system, r.mode) == (repo, name, mode)), None)
            if mine is None:
                continue
            cells = []
            for b in present:
                base = next(r for r in results if (r.repo, r.system, r.mode) == (repo, b, mode))
                cells.append(diff_cell(paired(mine, base)))
            rows.append(f"| {name} | {mode} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def budget_table(runs: Sequence[Run], labels: Labels, budgets: Sequence[int] = BUDGETS) -> str:
    """Recall when each system may inject as many of its ranked memories as fit a token budget."""
    repos = ", ".join(dict.fromkeys(r.repo for r in runs))
    rows = [
        f"Recall at equal token budgets ({repos}; each memory costs its injected line, summary plus "
        f"`- [pref] id — `, {CHARS_PER_TOKEN} characters a token; header, footer and receipts left out):\n",
        "| system | mode | n | " + " | ".join(f"{b} tok" for b in budgets) + " |",
        "|---|---|---:|" + "---|" * len(budgets),
    ]
    for run in runs:
        cells = [metric(budget_recall(run, labels, b)) for b in budgets]
        n = len(budget_recall(run, labels, budgets[0]))
        rows.append(f"| {run.system} | {run.mode} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def token_table(runs: Sequence[Run], systems: Sequence[str]) -> str:
    """What tether adds to the agent's context per task, beside what the agent already loads natively."""
    rows = [
        "Tokens per task (all tasks of the window; characters / 4). tether's block is *added* to the rule files "
        "the agent loads by itself (native), it does not replace them:\n",
        "| repo | system | mode | added: header+footer | added: lines | added in all | tasks with a block "
        "| native (rule files of the touched directories) | native + added |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        if run.system not in systems or not run.added:
            continue
        fixed = [a.get("header+footer", 0.0) for a in run.added]
        lines = [a.get("lines", 0.0) for a in run.added]
        shown = sum(1 for t in run.tokens if t > 0) / len(run.tokens)
        rows.append(
            f"| {run.repo} | {run.system} | {run.mode} | {mean(fixed):.0f} | {mean(lines):.0f} | "
            f"{mean(run.tokens):.0f} | {shown:.0%} | {mean(run.native_tokens):.0f} | "
            f"{mean(run.native_tokens) + mean(run.tokens):.0f} |"
        )
    return "\n".join(rows)
