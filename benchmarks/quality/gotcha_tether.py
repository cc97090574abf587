"""tether as a gotcha retriever: the one module of the gotcha evaluation that imports `tether`.

Memories are added the way the product adds them, `Workspace.add(summary, details=..., category="gotcha",
files=[path])`, in a checkout of the repository at C1 (so the repo map, co-change and fan-in see history up
to C1 only). Recall is the library call `tether recall` makes, `Workspace.recall(prompt, files,
record=False)`; the before-edit hook's listing is `hooks.gotchas.gotchas_for`.

Each memory is anchored to its comment's lines as `tether anchors scan` anchors a comment it proposes
(`anchors.resolve.make`: the lines, their fingerprint, the definition holding them). In edit mode the
touched files are put in the work tree as they are at the edit's parent commit (what the agent's checkout
holds when it edits; the hunks are in those lines), anchors are resolved against them the way the hook
resolves them, and recall gets the first hunk of each file as the edit's location (`locations=`):
`tether` is that location-aware recall, `tether:files` the same recall without the locations (as
prompt+files), `tether:before-edit` the hook's listing for the location, `tether:before-edit@file` the
listing without one (every gotcha of the file, as before issue 10).

The same knowledge saved twice is one memory in tether (`content_hash`): when a comment's text already
exists on another file, `Workspace.add` returns the existing memory, and the adapter adds the new file to it
(`Workspace.edit(files=...)`), as a person would. Such a memory maps back to the corpus comment on a touched
file (the first in file order), else to its first comment.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from gotchas_corpus import GotchaCorpus, GotchaView, Hunk

from tether.adapters.hooks.gotchas import gotchas_at, gotchas_for, gotchas_read
from tether.anchors.locations import Location, gap
from tether.anchors.resolve import FileView, make, resolve
from tether.embed import Embedder
from tether.errors import SecretError, ValidationError
from tether.lifecycle.housekeeping import refresh_repo
from tether.model.anchor import Anchor
from tether.model.memory import content_hash
from tether.model.prompt import sanitize
from tether.project import init_project
from tether.recall import scoring
from tether.recall.work import recall_with_work
from tether.workspace import Workspace

RecallFn = Callable[[Workspace, str, Sequence[str], Sequence[Hunk]], list[str]]


def places(hunks: Sequence[Hunk]) -> list[Location]:
    """The edit's location in each file: the first hunk's lines, with the text it writes."""
    return [Location(h.path, lines=h.lines, text=h.new_string) for h in hunks]


def shipped_recall(ws: Workspace, query: str, files: Sequence[str], hunks: Sequence[Hunk]) -> list[str]:
    """What `tether recall` returns for the prompt, the files (with those the prompt names, as the hook takes
    them: `Workspace.recall`) and, in edit mode, the edit's locations."""
    result = ws.recall(query, list(files), record=False, locations=places(hunks))
    return [r.memory.id for r in result.memories]


def files_recall(ws: Workspace, query: str, files: Sequence[str], hunks: Sequence[Hunk]) -> list[str]:
    """The same recall without the locations: what tether gave before issue 10."""
    result = ws.recall(query, list(files), record=False)
    return [r.memory.id for r in result.memories]


def without_recent(recall: RecallFn) -> RecallFn:
    """`recall` with the recent-change channel off (`scoring.RECENT_MAX` 0): what it adds, in the same run."""

    def run(ws: Workspace, query: str, files: Sequence[str], hunks: Sequence[Hunk]) -> list[str]:
        kept = scoring.RECENT_MAX
        scoring.RECENT_MAX = 0.0
        try:
            return recall(ws, query, files, hunks)
        finally:
            scoring.RECENT_MAX = kept

    return run


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
        # tether id -> [(corpus id, path, line, anchor)]
        self.members: dict[str, list[tuple[str, str, int, Anchor | None]]] = {}
        self.refused: dict[str, int] = {"secret": 0, "invalid": 0, "merged": 0, "unanchored": 0}
        self.corpus = corpus
        self.repo = repo
        add_started = time.perf_counter()
        views: dict[str, FileView] = {}
        for m in corpus.memories:
            if m.path not in views:
                views[m.path] = FileView.read(repo, m.path)
            try:
                anchor = make(views[m.path], "", (m.line, m.end_line))
            except ValidationError:
                anchor = None
                self.refused["unanchored"] += 1
            self._add(m.id, m.summary, m.details, m.path, m.line, anchor)
        self.add_seconds = time.perf_counter() - add_started
        self._shown: dict[tuple[str, str], str | None] = {}
        refresh_repo(self.ws)
        self.seconds = time.perf_counter() - started

    def _add(
        self, corpus_id: str, summary: str, details: str, path: str, line: int, anchor: Anchor | None
    ) -> None:
        kwargs = {
            "details": details,
            "category": "gotcha",
            "files": [path],
            "memory_id": content_hash(corpus_id)[:8],
            "anchors": [anchor] if anchor is not None else [],
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
        if not added.created and (
            path not in memory.files or (anchor is not None and anchor not in memory.anchors)
        ):
            # The same text at another place (another file, or the same file twice): one memory anchored at
            # each of its places, as `tether edit --at` would make it.
            anchors = (*memory.anchors, anchor) if anchor is not None else memory.anchors
            files = memory.files if path in memory.files else (*memory.files, path)
            self.ws.edit(memory.id, files=self.ws.absolute(list(files)), anchors=anchors, record_acted=False)
            self.refused["merged"] += 1
        self.members.setdefault(memory.id, []).append((corpus_id, path, line, anchor))

    @contextmanager
    def at_edit(self, view: GotchaView) -> Iterator[None]:
        """The checkout as the agent's is while it works on the task: HEAD at the task's parent commit and the
        touched files as they are there (the rest of the work tree stays at C1: recall reads only the touched
        files), restored after. The repo map stays as built at C1."""
        if not view.parent:
            yield
            return
        kept: dict[str, bytes | None] = {}
        for path in view.files:
            target = self.repo / path
            if target.is_dir() or target.is_symlink():
                continue  # a submodule or a link at C1: not a file to put in place
            text = self._parent_text(view.parent, path)
            if text is None and not target.exists():
                continue
            kept[path] = target.read_bytes() if target.exists() else None
            if text is None:
                target.unlink()  # added by the task: not there yet
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", errors="surrogateescape")
        self._head(view.parent)
        try:
            yield
        finally:
            self._head(self.corpus.c1)
            for path, old in kept.items():
                if old is None:
                    (self.repo / path).unlink(missing_ok=True)
                else:
                    (self.repo / path).write_bytes(old)

    def _head(self, commit: str) -> None:
        """Point the checkout's branch (`c1`, a loose ref) at `commit`, as `git update-ref` would, without
        a git process per task."""
        (self.repo / ".git" / "refs" / "heads" / "c1").write_text(f"{commit}\n", encoding="utf-8")

    def _parent_text(self, parent: str, path: str) -> str | None:
        key = (parent, path)
        if key not in self._shown:
            blob = self.corpus.blob(parent, path)
            self._shown[key] = blob.decode("utf-8", "surrogateescape") if blob is not None else None
        return self._shown[key]

    def corpus_ids(
        self, tether_ids: Sequence[str], files: Sequence[str], hunks: Sequence[Hunk] = ()
    ) -> list[str]:
        """Corpus ids for tether ids, best first; a merged memory maps to its comment on a touched file: with
        the edit's location, the one whose anchor (resolved against the file as the edit sees it) is nearest
        the edit, the place the receipt names; else the first."""
        touched = set(files)
        at = {h.path: h.lines for h in hunks}
        out: list[str] = []
        for tid in tether_ids:
            members = self.members.get(tid, [])
            if not members:
                continue
            on_touched = [m for m in members if m[1] in touched]
            located = [m for m in on_touched if m[1] in at and m[3] is not None]
            if len(on_touched) > 1 and located:
                out.append(min(located, key=lambda m: self._gap(m[3], at[m[1]]))[0])
                continue
            out.append((on_touched or members)[0][0])
        return list(dict.fromkeys(out))

    def _gap(self, anchor: Anchor, edit: tuple[int, int]) -> float:
        now = resolve(anchor, FileView.read(self.repo, anchor.path)).anchor
        return math.inf if now.lost or now.lines is None else gap(now.lines, edit)[0]

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

    def __init__(
        self,
        name: str = "tether",
        recall: RecallFn = shipped_recall,
        modes: tuple[str, ...] = ("prompt", "prompt+files", "edit"),
        embedder: Embedder | None = None,
    ) -> None:
        self.name = name
        self.recall = recall
        self.modes = modes
        self.embedder = embedder
        self.prep: Prepared | None = None

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.prep = prepared(corpus, self.embedder)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        with self.prep.at_edit(view):
            ids = self.recall(self.prep.ws, view.query, view.files, view.hunks)
            located = mode == "edit" and self.recall is not files_recall
            return self.prep.corpus_ids(ids, view.files, view.hunks if located else ())


class TetherBeforeEdit:
    """What the before-edit hook lists for the touched files, in its order, all of them.

    With `located` (the hook since issue 10, `gotchas_at`): the gotchas at the edit's place first, nearest
    first, then those about the whole file; the ones anchored elsewhere are only counted by the hook, and
    are left out here. Without it (`gotchas_for`): every gotcha of the file, by age. Its first three count
    for Recall@3, and the evaluation reports how many it shows in all.
    """

    modes = ("edit",)

    def __init__(self, located: bool = True) -> None:
        self.located = located
        self.name = "tether:before-edit" if located else "tether:before-edit@file"
        self.prep: Prepared | None = None

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.prep = prepared(corpus)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        ids: list[str] = []
        with self.prep.at_edit(view):
            for hunk in view.hunks:  # the hook fires for the file an Edit is about to change
                if not self.located:
                    ids.extend(m.id for m in gotchas_for(self.prep.ws, hunk.path))
                    continue
                found = gotchas_at(self.prep.ws, hunk.path, places([hunk]))
                ids.extend(m.id for m, _ in found.here)
                ids.extend(m.id for m in found.file)
            hunks = view.hunks if self.located else ()
            return self.prep.corpus_ids(list(dict.fromkeys(ids)), view.files, hunks)


class TetherAfterRead:
    """What the read hook lists when the agent reads each touched file whole (in the commit's file order),
    after the task's prompt: `hooks.gotchas.gotchas_read`, the file's gotchas best first by recall's
    ranking for the prompt the session stored (`sanitize`d, as the prompt hook keeps it). `@age` is the
    listing before session 14 (`gotchas_for`: pinned and high priority first, then oldest first). Its first
    three count for Recall@3; the hook shows at most `hints.per_read` of them per file."""

    modes = ("prompt+files",)

    def __init__(self, ranked: bool = True) -> None:
        self.ranked = ranked
        self.name = "tether:after-read" if ranked else "tether:after-read@age"
        self.prep: Prepared | None = None

    def prepare(self, corpus: GotchaCorpus) -> None:
        self.prep = prepared(corpus)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        ws, query = self.prep.ws, sanitize(view.query)
        ids: list[str] = []
        with self.prep.at_edit(view):
            for path in view.files:
                if self.ranked:
                    found = gotchas_read(ws, path, query)
                    ids.extend(m.id for m in found.file)
                else:
                    ids.extend(m.id for m in gotchas_for(ws, path))
            return self.prep.corpus_ids(list(dict.fromkeys(ids)), view.files)


class TetherWork(TetherGotchas):
    """A session's first prompt with work in progress in the tree (`tether.recall.work`), scored in prompt
    mode: the work is the task's own first five files (`own`) or the previous task's (`previous`: work left
    in the tree that the prompt is not about, most of the time). The checkout stays at C1, as in prompt mode."""

    def __init__(self, scenario: str) -> None:
        super().__init__(f"tether:work-{scenario}", modes=("prompt",))
        self.scenario = scenario
        self.work: dict[str, tuple[str, ...]] = {}

    def prepare(self, corpus: GotchaCorpus) -> None:
        super().prepare(corpus)
        before: tuple[str, ...] = ()
        for task in corpus.tasks:  # in the order of history
            self.work.setdefault(task.query, tuple(task.files[:5]) if self.scenario == "own" else before[:5])
            before = tuple(task.files)

    def retrieve(self, view: GotchaView, mode: str) -> list[str]:
        assert self.prep is not None
        work = self.work.get(view.query, ())
        result = recall_with_work(self.prep.ws.recaller(), view.query, list(work), record=False)
        return self.prep.corpus_ids([r.memory.id for r in result.memories], work)


def work_own() -> TetherWork:
    return TetherWork("own")


def work_previous() -> TetherWork:
    return TetherWork("previous")


def after_read() -> TetherAfterRead:
    return TetherAfterRead()


def after_read_age() -> TetherAfterRead:
    return TetherAfterRead(ranked=False)


def tether() -> TetherGotchas:
    return TetherGotchas()


def tether_without_recent() -> TetherGotchas:
    """tether as shipped without the recent-change channel (issue 17, session 7): its share of a result."""
    return TetherGotchas(
        "tether:no-recent", recall=without_recent(shipped_recall), modes=("prompt+files", "edit")
    )


def tether_files() -> TetherGotchas:
    return TetherGotchas("tether:files", recall=files_recall, modes=("edit",))


def before_edit() -> TetherBeforeEdit:
    return TetherBeforeEdit()


def before_edit_file() -> TetherBeforeEdit:
    return TetherBeforeEdit(located=False)


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


def minilm_onnx() -> TetherGotchas:
    from tether_retriever import minilm_onnx_spec

    return with_embedder(minilm_onnx_spec())
