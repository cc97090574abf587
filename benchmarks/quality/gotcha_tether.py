"""tether as a gotcha retriever: the one module of the gotcha evaluation that imports `tether`.

Memories are added the way the product adds them, `Workspace.add(summary, details=..., category="gotcha",
files=[path])`, in a checkout of the repository at C1 (so the repo map, co-change and fan-in see history up
to C1 only). Recall is the library call `tether recall` makes, `Workspace.recall(prompt, files,
record=False)`; the before-edit hook's listing is `hooks.behaviour.gotchas_for`.

tether does not take an edit's location yet (issue 10). The retriever passes the edit hunks to its
`recall` function anyway, which ignores them today: a location-aware recall plugs in as

    TetherGotchas("tether+edit", recall=lambda ws, query, files, hunks: ...)   # returns tether memory ids

The same knowledge saved twice is one memory in tether (`content_hash`): when a comment's text already
exists on another file, `Workspace.add` returns the existing memory, and the adapter adds the new file to it
(`Workspace.edit(files=...)`), as a person would. Such a memory maps back to the corpus comment on a touched
file (the first in file order), else to its first comment.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from gotchas_corpus import GotchaCorpus, GotchaView, Hunk

from tether.adapters.hooks.behaviour import gotchas_for
from tether.embed import Embedder
from tether.errors import SecretError, ValidationError
from tether.lifecycle.housekeeping import refresh_repo
from tether.model.memory import content_hash
from tether.project import init_project
from tether.workspace import Workspace

RecallFn = Callable[[Workspace, str, Sequence[str], Sequence[Hunk]], list[str]]


def shipped_recall(ws: Workspace, query: str, files: Sequence[str], hunks: Sequence[Hunk]) -> list[str]:
    """What `tether recall` returns for the prompt and files; `hunks` is ignored (no location support yet)."""
    result = ws.recall(query, list(files), record=False)
    return [r.memory.id for r in result.memories]


class Prepared:
    """A workspace at C1 holding the corpus's memories, and the map from tether ids to corpus ids."""

    def __init__(self, corpus: GotchaCorpus, embedder: Embedder | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=f"tether-gotchas-{corpus.repo}-"))
        repo, home = self.tmp / "repo", self.tmp / "home"
        home.mkdir()
        started = time.perf_counter()
        corpus.checkout_at_c1(repo)
        init_project(repo, home)
        # Every memory is stamped with C1's commit time: notes keep whole seconds and equal stamps are
        # ordered by id, so a wall clock would make the order of same-age memories (the hook lists by
        # age) depend on where the second boundaries fell during the adds. A fixed clock repeats.
        stamp = subprocess.run(
            ["git", "-C", str(repo), "log", "-1", "--format=%ct", corpus.c1],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        moment = datetime.fromtimestamp(int(stamp), tz=UTC)
        self.ws = Workspace.open(repo, home=home, embedder=embedder, clock=lambda: moment)
        self.members: dict[str, list[tuple[str, str, int]]] = {}  # tether id -> [(corpus id, path, line)]
        self.refused: dict[str, int] = {"secret": 0, "invalid": 0, "merged": 0}
        add_started = time.perf_counter()
        for m in corpus.memories:
            self._add(m.id, m.summary, m.details, m.path, m.line)
        self.add_seconds = time.perf_counter() - add_started
        refresh_repo(self.ws)
        self.seconds = time.perf_counter() - started

    def _add(self, corpus_id: str, summary: str, details: str, path: str, line: int) -> None:
        kwargs = {
            "details": details,
            "category": "gotcha",
            "files": [path],
            "memory_id": content_hash(corpus_id)[:8],
        }
        try:
            added = self.ws.add(summary, **kwargs)  # type: ignore[arg-type]
        except SecretError:
            # A code comment that looks like a credential (a test fixture's fake key): an importer of comments
            # would pass --allow-secret; counted, and added so every system sees the same memories.
            self.refused["secret"] += 1
            added = self.ws.add(summary, allow_secret=True, **kwargs)  # type: ignore[arg-type]
        except ValidationError:
            self.refused["invalid"] += 1
            return
        memory = added.memory
        if not added.created and path not in memory.files:
            self.ws.edit(memory.id, files=[*memory.files, path], record_acted=False)
            self.refused["merged"] += 1
        self.members.setdefault(memory.id, []).append((corpus_id, path, line))

    def corpus_ids(self, tether_ids: Sequence[str], files: Sequence[str]) -> list[str]:
        """Corpus ids for tether ids, best first; a merged memory maps to its comment on a touched file."""
        touched = set(files)
        out: list[str] = []
        for tid in tether_ids:
            members = self.members.get(tid, [])
            if not members:
                continue
            on_touched = [m for m in members if m[1] in touched]
            out.append((on_touched or members)[0][0])
        return list(dict.fromkeys(out))

    def close(self) -> None:
        self.ws.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# One workspace per repository and embedder, shared by every tether system of a run (building it is the
# slow part). None is the embedder the default configuration chooses.
_PREPARED: dict[str, Prepared] = {}


def prepared(corpus: GotchaCorpus, embedder: Embedder | None = None) -> Prepared:
    key = f"{corpus.repo}:{corpus.c1}:{embedder.id if embedder is not None else 'default'}"
    if key not in _PREPARED:
        _PREPARED[key] = Prepared(corpus, embedder)
    return _PREPARED[key]


def close_all() -> None:
    for p in _PREPARED.values():
        p.close()
    _PREPARED.clear()


class TetherGotchas:
    """tether's recall over the corpus. In edit mode the hunks go to `recall`, which today ignores them."""

    modes = ("prompt", "prompt+files", "edit")

    def __init__(
        self, name: str = "tether", recall: RecallFn = shipped_recall, embedder: Embedder | None = None
    ) -> None:
        self.name = name
        self.recall = recall
        self.embedder = embedder
        self.prep: Prepared | None = None

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.prep = prepared(corpus, self.embedder)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        ids = self.recall(self.prep.ws, view.query, view.files, view.hunks)
        return self.prep.corpus_ids(ids, view.files)


class TetherBeforeEdit:
    """What the before-edit hook lists for the touched files (`gotchas_for`), in its order, all of them.

    The hook shows every unseen gotcha of the file being edited; its first three count for Recall@3, and
    the evaluation reports how many it shows in all.
    """

    name = "tether:before-edit"
    modes = ("edit",)

    def __init__(self) -> None:
        self.prep: Prepared | None = None

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.prep = prepared(corpus)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        ids: list[str] = []
        for hunk in view.hunks:  # the hook fires for the file an Edit is about to change
            ids.extend(m.id for m in gotchas_for(self.prep.ws, hunk.path))
        return self.prep.corpus_ids(list(dict.fromkeys(ids)), view.files)


def tether() -> TetherGotchas:
    return TetherGotchas()


def before_edit() -> TetherBeforeEdit:
    return TetherBeforeEdit()


def with_embedder(spec: str) -> TetherGotchas:
    """tether as shipped with the embedder `spec` instead of the default (README "Choosing the embedder")."""
    from tether.embed.providers import make_embedder

    embedder = make_embedder(spec)
    return TetherGotchas(f"tether+{embedder.id}", embedder=embedder)


def hashed() -> TetherGotchas:
    return with_embedder("hashed")


def static() -> TetherGotchas:
    return with_embedder("static")


def minilm() -> TetherGotchas:
    return with_embedder("sentence-transformers:all-MiniLM-L6-v2")
