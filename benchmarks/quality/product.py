"""tether as a user runs it, on a corpus repository: the benchmark's one way into the product's library.

With `tether_retriever.py` (recall variants for tuning), this is the only module of the benchmark that
imports `tether`: when the package is reorganized, these imports are what moves.

For a repository at C1 (`corpus.checkout_at_c1`) the project is made the way `tether init` and
`tether rules sync` make it (the same library calls: `init_project`, `Workspace.open`, `sync_rules`, then the
repo-map refresh every CLI command runs), and recall is the call `tether recall` makes
(`Workspace.recall`). The product does not record which rule unit a memory came from beyond its origin
(`rules:<path>`), so each memory is mapped back to its units by the product's own rendering: a unit's
memory is the one of that origin whose content hash is that of `rules.render(unit)`.

    project = Project.build(corpus)
    corpus.docs = project.docs
    ranked = project.recall("fix the retry", ["src/upload.py"]).ids
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import shutil
import tempfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from corpus import Corpus, Doc

from tether import memories as memories_module
from tether.embed import Embedder
from tether.intake.rulefiles import is_rule_file, rule_scope, split_rules
from tether.intake.rules import render, sync_rules
from tether.lifecycle import archive_pass
from tether.lifecycle.housekeeping import refresh_repo
from tether.project import init_project
from tether.recall import scoring
from tether.recall.block import FOOTER, HEADER
from tether.recall.evidence import CHANNELS, RecallResult
from tether.recall.named import take_named
from tether.recall.recaller import Recaller
from tether.recall.work import recall_with_work
from tether.store.base import Query
from tether.workspace import Workspace

__all__ = [
    "CHANNELS",
    "FOOTER",
    "HEADER",
    "Clock",
    "Project",
    "Recall",
    "attach",
    "describe",
    "is_rule_file",
    "project_for",
    "render_file",
    "rule_scope",
    "split_rules",
]


class Clock:
    """The workspace's clock, set by the caller (the online replay moves it to each commit's date)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Recall:
    """One recall: the docs it returned (best first) and the lines it would inject for them."""

    ids: list[str]
    memory_ids: list[str]
    lines: list[str]  # `- [pref] id — summary (via receipt)`, as the prompt hook writes them

    def block(self, top: int) -> str:
        """The block the prompt hook injects for the first `top` memories ("" when there are none)."""
        shown = self.lines[:top]
        return "\n".join([HEADER, *shown, FOOTER]) if shown else ""


@dataclass
class Project:
    """A tether project made from one corpus repository at C1."""

    corpus: Corpus
    root: Path
    ws: Workspace
    clock: Clock
    docs: list[Doc]
    by_memory: dict[str, str]  # product memory id -> doc id
    skipped: list[str] = field(default_factory=list)  # the sync's warnings: rules it did not store
    unmapped: list[str] = field(default_factory=list)  # unit ids with no product memory

    @classmethod
    def build(cls, corpus: Corpus, embedder: Embedder | None = None, at: datetime | None = None) -> Project:
        """Check the repository out at C1, `tether init`, `tether rules sync`, and map memories to units.

        The clock starts at C1's commit time (or `at`), so memories are created when the rules were there.
        """
        tmp = Path(tempfile.mkdtemp(prefix=f"tether-quality-{corpus.repo}-"))
        # A checkout at C1 is 20-200 MB: gone when the run ends (570 of them once filled the disk).
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        root, home = tmp / "repo", tmp / "home"
        home.mkdir()
        corpus.checkout_at_c1(root)
        clock = Clock(at or _commit_time(root, "HEAD"))
        init_project(root, home)  # `tether init`
        ws = Workspace.open(root, home=home, embedder=embedder, clock=clock)
        with _repeatable_ids(corpus.repo):
            report = sync_rules(ws)  # `tether rules sync`
        errors = report.errors
        if errors:
            raise SystemExit(f"{corpus.repo}: tether rules sync failed on {errors}")
        refresh_repo(ws)  # every CLI command brings the repo map up to date
        if embedder is not None:
            ws.embed_missing()  # an injected embedder is not the configured one: embed with it
        skipped = [w for f in report.files for w in f.warnings]
        docs, by_memory, unmapped = _map_units(corpus, root, ws)
        return cls(corpus, root, ws, clock, docs, by_memory, skipped, unmapped)

    def recall(
        self,
        query: str,
        files: Sequence[str] = (),
        *,
        recaller: type[Recaller] = Recaller,
        channels: Collection[str] = CHANNELS,
        require_evidence: bool = True,
        record: bool = False,
        session: str | None = None,
        turn: int | None = None,
        limit: int | None = None,
        budget: int | None = None,
    ) -> Recall:
        """`tether recall` (the library call it makes), with the ids mapped to docs. Files the query names count
        as touched, as the prompt hook and `tether recall` count them (`tether.recall.named`)."""
        _, touched = take_named(query, self.root, self.ws.repo_map(), files)
        result = self.ws.recaller(recaller).recall(
            query,
            touched,
            session=session,
            turn=turn,
            limit=limit,
            budget=budget,
            record=record,
            channels=channels,
            require_evidence=require_evidence,
        )
        return self._mapped(result)

    def recall_with_work(self, query: str, work: Sequence[str]) -> Recall:
        """A session's first prompt with `work` changed in the tree, as the prompt hook makes it
        (`tether.recall.work`; files the query names come first, and then the work is not asked), nothing
        recorded."""
        named, touched = take_named(query, self.root, self.ws.repo_map(), ())
        if named:
            return self._mapped(self.ws.recaller().recall(query, touched, record=False))
        return self._mapped(recall_with_work(self.ws.recaller(), query, list(work), record=False))

    def _mapped(self, result: RecallResult) -> Recall:
        memories = [r.memory.id for r in result.memories]
        return Recall(
            [self.by_memory.get(mid, mid) for mid in memories],
            memories,
            [f"- {r.line()}" for r in result.memories],
        )

    def ack(self, doc_id: str, session: str, turn: int | None = None) -> None:
        """What an agent's `memory_get` of the memory records: an "acted" event in its session."""
        memory_id = next(d.memory_id for d in self.docs if d.id == doc_id)
        self.ws.ack(memory_id, session=session, turn=turn, via="memory_get")

    def session_start(self) -> int:
        """The lifecycle pass session start runs on feedback (soft-archive of ignored memories)."""
        return len(archive_pass(self.ws))

    def archived(self) -> int:
        return len(self.ws.find(Query(status=("archived",), origin="rules:", scope="project")))

    def penalized(self) -> int:
        """Memories whose feedback term is negative now: shown often, never used (`scoring.feedback`, at
        the project's pull rate)."""
        telemetry = self.ws.store.telemetry([d.memory_id for d in self.docs])
        rate = self.ws.pull_rate()
        return sum(1 for t in telemetry.values() if scoring.feedback(t.surfaced, t.acted, rate) < 0)

    @property
    def limit(self) -> int:
        return self.ws.config.integer("recall.limit")

    @property
    def budget(self) -> int:
        return self.ws.config.integer("recall.budget")


@contextmanager
def _repeatable_ids(seed: str) -> Iterator[None]:
    """Memory ids drawn from a seeded sequence instead of at random, for the duration of one sync.

    Recall breaks score ties by memory id, and the product draws ids at random, so two builds of the same
    project can order tied memories differently and runs would not repeat. The sync adds rules in a fixed
    order, so numbering them from a seed gives every build the same ids: as arbitrary as random ones,
    but the same every time. Nothing else about the product changes.
    """
    counter = itertools.count()
    original = memories_module.new_id

    def seeded() -> str:
        return hashlib.sha256(f"{seed}:{next(counter)}".encode()).hexdigest()[:8]

    memories_module.new_id = seeded
    try:
        yield
    finally:
        memories_module.new_id = original


def _commit_time(root: Path, rev: str) -> datetime:
    import subprocess

    out = subprocess.run(
        ["git", "-C", str(root), "show", "-s", "--format=%ct", rev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return datetime.fromtimestamp(int(out.strip()), UTC)


def render_file(path: str, text: str, root: Path) -> tuple[list[Any], int]:
    """What the sync makes of one rule file's text: the rendered rules, and how many units it dropped."""
    rendered = [render(unit, root) for unit in split_rules(path, text)]  # None: the unit carries no rule
    kept = [item for item in rendered if item is not None]
    return kept, len(rendered) - len(kept)


def _map_units(corpus: Corpus, root: Path, ws: Workspace) -> tuple[list[Doc], dict[str, str], list[str]]:
    """Docs in the corpus's rule-unit order, one per product memory, each naming the units it stands for.

    The corpus's units are the frozen splitter's (`units.py`); the product splits and renders on its own.
    A unit belongs to the product rule (a memory, found by the content hash of the product's own render)
    that covers most of its lines, the first of equals: a bullet to the lead-in-and-list memory it became
    part of, a whole table to its first row. A product memory no unit maps to is a doc of its own with
    no units (nothing labels it, every system may rank it), so every system ranks the same memories.
    """
    memories = {
        (m.origin, m.content_hash): m
        for m in ws.find(Query(status=("active",), origin="rules:", scope="project"))
    }
    units: dict[str, list[str]] = {}  # memory id -> unit ids, in file order
    placed: dict[str, tuple[str, int]] = {}  # memory id -> (its rule file, first line) for unlabelled docs
    unmapped: list[str] = []
    for path in sorted({m.path for m in corpus.memories}):
        text = (root / path).read_bytes().decode("utf-8-sig")
        spans = []
        for unit in split_rules(path, text):
            item = render(unit, root)
            memory = memories.get((f"rules:{path}", item.content_hash)) if item is not None else None
            if memory is not None:
                spans.append((unit.line, unit.end_line, memory.id))
                placed.setdefault(memory.id, (path, unit.line))
        for old in (m for m in corpus.memories if m.path == path):
            overlaps = [(min(end, old.end_line) - max(line, old.line) + 1, mid) for line, end, mid in spans]
            best = max((o for o in overlaps if o[0] > 0), key=lambda o: o[0], default=None)
            if best is None:
                unmapped.append(old.id)
            else:
                units.setdefault(best[1], []).append(old.id)
    by_id = {m.id: m for m in memories.values()}
    order = {m.id: i for i, m in enumerate(corpus.memories)}
    docs = []
    by_memory = {}
    for mid, memory in by_id.items():
        ids = units.get(mid, [])
        path, line = placed.get(mid, (memory.origin.removeprefix("rules:"), 0))
        doc_id = ids[0] if ids else f"memory:{mid}"
        docs.append(
            Doc(
                id=doc_id,
                units=tuple(ids),
                summary=memory.summary,
                details=memory.details,
                refs=tuple(memory.files),
                path=path,
                line=line,
                memory_id=mid,
            )
        )
        by_memory[mid] = doc_id
    # Rule-file order (recent-3 and native-scope rely on it): by file, then line.
    docs.sort(key=lambda d: (d.path, d.line, order.get(d.id, len(order))))
    return docs, by_memory, unmapped


# One project per (repository, embedder) and process: building it is the slow part of a run, and every
# system (baselines included, through `attach`) reads the same memories from it.
_PROJECTS: dict[tuple[str, str], Project] = {}


def project_for(corpus: Corpus, embedder: Embedder | None = None) -> Project:
    key = (corpus.repo, embedder.id if embedder is not None else "default")
    if key not in _PROJECTS:
        _PROJECTS[key] = Project.build(corpus, embedder)
    return _PROJECTS[key]


def attach(corpus: Corpus) -> Project:
    """Make the product's project for `corpus` and give every system its memories (`corpus.docs`)."""
    project = project_for(corpus)
    corpus.docs = project.docs
    return project


def describe(project: Project) -> dict[str, Any]:
    """How the product's memories relate to the corpus's rule units (for the report)."""
    merged = sum(max(0, len(d.units) - 1) for d in project.docs)
    return {
        "units": len(project.corpus.memories),
        "memories": len(project.docs),
        "skipped": len(project.skipped),
        "unmapped": len(project.unmapped),
        "merged": merged,
        "unitless": sum(1 for d in project.docs if not d.units),
    }
