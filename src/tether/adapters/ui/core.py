"""The web UI's one seam to the library: every call the UI makes into tether's core is in this module.

The pages and the HTTP layer only call `UICore` and use the names it re-exports, so a change of the core's
signatures is absorbed here. What the core does not offer as one call (filtered, sorted pages with
telemetry; the event log bucketed over time; the memory graph; the recall playground with every score
broken down; the diff of an edit) is built here on top of `Workspace`, `Store`, `tether.lifecycle` and
`Recaller`, without changing them.

Writes go through `Workspace` (the CLI's validation, secret refusal and note format); nothing is recorded
as a surfacing by reading or by the recall playground.

>>> core = UICore.open(Path("."))  # doctest: +SKIP
>>> core.listing(Filters(q="deploy")).rows[0].memory.summary  # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tether.adapters.ui.shapes import (
    AnchorState,
    Change,
    Detail,
    Explained,
    Filters,
    Listing,
    Playground,
    Row,
    Waiting,
    diff,
    origin_matches,
    sort_rows,
)
from tether.adapters.ui.timeline import timeline
from tether.errors import NotFoundError, TetherError, ValidationError
from tether.model.display import printable
from tether.model.memory import (
    CATEGORIES,
    ORIGINS,
    PRIORITIES,
    SCOPES,
    SUMMARY_MAX,
    Memory,
    check_id,
    normalize_path,
)
from tether.model.wikilinks import link_key
from tether.notes.pending import Request
from tether.recall.block import block
from tether.store.base import Event, Query, Telemetry
from tether.workspace import Workspace

__all__ = [
    "CATEGORIES",
    "ORIGINS",
    "PRIORITIES",
    "SCOPES",
    "STATES",
    "STATE_LABELS",
    "SUMMARY_MAX",
    "AnchorState",
    "Change",
    "Detail",
    "Event",
    "Filters",
    "Listing",
    "Memory",
    "NotFoundError",
    "Playground",
    "Request",
    "Row",
    "Telemetry",
    "TetherError",
    "UICore",
    "ValidationError",
    "Waiting",
    "printable",
]

STATES = ("active", "archived", "superseded", "dead", "lost", "pending", "all")
# `lost`: `tether list --dead-anchors`; `pending`: `tether review` (requests, not memories).
STATE_LABELS = {"dead": "dead refs", "lost": "dead anchors", "pending": "pending review"}
SORTS = ("relevance", "created", "updated", "surfaced", "acted", "follow", "age")
EDITABLE = ("summary", "details", "category", "files", "priority")
# Search results considered before the other filters apply: far more than a person pages through.
SEARCH_POOL = 2000
# The repo map and renames are refreshed at most this often (git runs each time): the UI is long-lived.
REPO_REFRESH_SECONDS = 30.0
# The playground shows the injected memories and this many runners-up with their breakdown.
RUNNERS_UP = 7
# A request re-reads the note directories when their mtimes moved (tether's own writes, new or deleted
# notes), and at least this often otherwise: a note an editor saved in place shows on the next page load
# after 2 s. A full scan is ~80 ms at 10,000 notes, too much for every request.
FULL_SYNC_SECONDS = 2.0


class UICore:
    """The workspace behind one `tether ui` server: kept open, re-synced from the notes on every request,
    one request at a time (the SQLite connection is one per process)."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._lock = threading.RLock()
        self._refreshed = 0.0
        self._files: tuple[float, list[str]] | None = None
        self._synced = (-FULL_SYNC_SECONDS, "")  # (monotonic time, directory stamps)
        self._memo: tuple[str | None, list[Memory]] | None = None

    @classmethod
    def open(cls, cwd: Path, *, home: Path | None = None, clock: Any = None) -> UICore:
        """The memory of the project at or above `cwd` (user memory only outside one). Paths typed in
        the UI are taken from the repository root, wherever the server was started."""
        from tether.project import find_project_root

        root = find_project_root(cwd.resolve())
        ws = Workspace.open(
            root or cwd, home=home, require_project=False, recover=True, clock=clock, warm=True
        )
        return cls(ws)

    def close(self) -> None:
        with self._lock:
            self._ws.close()

    @contextmanager
    def _use(self, *, sync: bool = True) -> Iterator[Workspace]:
        with self._lock:
            ws = self._ws
            if sync:
                now, stamps = time.monotonic(), self._stamps(ws)
                if stamps != self._synced[1] or now - self._synced[0] >= FULL_SYNC_SECONDS:
                    ws.sync()
                    self._synced = (now, stamps)
                self._refresh_repo(ws)
            yield ws

    @staticmethod
    def _stamps(ws: Workspace) -> str:
        return ws.index.dir_stamps()

    def _all(self, ws: Workspace) -> list[Memory]:
        """Every memory, any status and scope, read again only after a write (`Store.version`)."""
        version = ws.store.version()
        if self._memo is None or self._memo[0] != version:
            self._memo = (version, ws.find(Query(status=None)))
        return self._memo[1]

    def _refresh_repo(self, ws: Workspace) -> None:
        """Memories follow renamed files, as every syncing CLI command does (at most every 30 s here)."""
        now = time.monotonic()
        if ws.root is None or now - self._refreshed < REPO_REFRESH_SECONDS:
            return
        self._refreshed = now
        from tether.lifecycle.housekeeping import refresh_repo

        try:
            refresh_repo(ws)
        except TetherError as exc:
            ws.log(f"ui: could not refresh the repo map: {exc}")

    # -- about ------------------------------------------------------------------------------------

    @property
    def root(self) -> Path | None:
        return self._ws.root

    @property
    def title(self) -> str:
        return self._ws.root.name if self._ws.root else "user memory"

    # -- browse -----------------------------------------------------------------------------------

    def listing(self, f: Filters) -> Listing:
        """One page of memories: filtered, searched with `Workspace.search` (as `tether search`), sorted."""
        with self._use() as ws:
            status: tuple[str, ...] | None = {
                "active": ("active",),
                "archived": ("archived",),
                "superseded": ("superseded",),
                "dead": ("active",),
                "lost": ("active",),
                "pending": (),  # the queue holds requests, not memories: `pending()`
            }.get(f.state)
            file = normalize_path(f.file, ws.root, ws.root) if f.file.strip() else None
            pool = [
                m
                for m in self._all(ws)
                if (status is None or m.status in status)
                and (m.category == f.category if f.category else True)
                and (m.scope == f.scope if f.scope else m.scope != "session")
                and (origin_matches(m.origin, f.origin) if f.origin else True)
                and (file in m.files if file else True)
            ]
            if f.state == "dead":
                dead = {m.id for m, _ in ws.dead_refs()}
                pool = [m for m in pool if m.id in dead]
            elif f.state == "lost":
                from tether.lifecycle.reanchor import dead_anchors

                lost = {m.id for m, _ in dead_anchors(ws)}
                pool = [m for m in pool if m.id in lost]
            scores: dict[str, float] = {}
            notice = ""
            words = f.q.strip()
            if words:
                allowed = {m.id: m for m in pool}
                if f.state in ("active", "dead", "lost", "all"):
                    # A filter keeps what matches: the strong matches, not search's nearest weak ones.
                    for hit in ws.search(words, limit=SEARCH_POOL, category=f.category or None, weak=False):
                        if hit.memory.id in allowed:
                            scores[hit.memory.id] = hit.score
                if f.state not in ("active", "dead", "lost"):
                    # Search ranks active memories only (recall never offers the others): archived and
                    # superseded ones are matched by their words.
                    needles = words.lower().split()
                    for m in pool:
                        if m.status != "active" and m.id not in scores:
                            text = f"{m.summary}\n{m.details}\n{' '.join(m.files)}".lower()
                            if all(n in text for n in needles):
                                scores[m.id] = 0.0
                    notice = "archived and superseded memories are matched by words; search ranks active ones"
                pool = [allowed[mid] for mid in scores]
            telemetry = ws.store.telemetry([m.id for m in pool]) if pool else {}
        sort = f.sort if f.sort in SORTS else ("relevance" if words else "created")
        if sort == "relevance" and not words:
            sort = "created"
        rows = [Row(m, telemetry.get(m.id) or Telemetry(), scores.get(m.id)) for m in pool]
        rows = sort_rows(rows, sort, f.desc)
        per = max(1, min(f.per_page, 500))
        pages = max(1, -(-len(rows) // per))
        page = max(1, min(f.page, pages))
        return Listing(rows[(page - 1) * per : page * per], len(rows), page, pages, sort, notice)

    def origins(self) -> list[str]:
        """The origins in use, with every rule file folded into `rules:`."""
        with self._use(sync=False) as ws:
            found = {m.origin for m in self._all(ws)}
        return sorted({("rules:" if o.startswith("rules:") else o) for o in found} | set(ORIGINS))

    # -- one memory -------------------------------------------------------------------------------

    def memory(self, memory_id: str) -> Memory:
        with self._use() as ws:
            return ws.get(memory_id)

    def detail(self, memory_id: str, events: int = 200) -> Detail:
        """Everything the detail page shows: files with existence, links both ways, chain, telemetry, log."""
        with self._use() as ws:
            memory = ws.get(memory_id)
            tel = ws.store.telemetry([memory.id]).get(memory.id) or Telemetry()
            outgoing, incoming = ws.links(memory)
            targets = _link_index(ws)
            resolved: dict[str, str] = {}
            unresolved: list[str] = []
            for target in memory.links:
                mid = _resolve(targets, target)
                if mid is not None and mid != memory.id:
                    resolved[target] = mid
                elif mid is None:
                    unresolved.append(target)
            chain = [
                ("replaced by" if other.supersedes == memory.id else "replaces", other)
                for other in ws.chain(memory)
            ]
            return Detail(
                memory=memory,
                telemetry=tel,
                note_path=ws.store.note_path(memory.id),
                files=[(path, self._exists(ws, path)) for path in memory.files],
                links_out=outgoing,
                links_in=incoming,
                unresolved=unresolved,
                chain=chain,
                events=list(ws.store.events(memory.id, limit=events)),
                link_targets=resolved,
                anchors=self._anchors(ws, memory),
            )

    @staticmethod
    def _anchors(ws: Workspace, memory: Memory) -> list[AnchorState]:
        """Each anchor resolved against its file as it is now, as `tether.anchors` resolves it (the
        reanchor pass writes the result to the note after a refresh; showing it writes nothing)."""
        if not memory.anchors or ws.root is None or memory.scope == "user":
            return [AnchorState(a, None) for a in memory.anchors]
        from tether.anchors.resolve import FileView, resolve

        views: dict[str, FileView] = {}
        out = []
        for anchor in memory.anchors:
            view = views.get(anchor.path) or views.setdefault(
                anchor.path, FileView.read(ws.root, anchor.path)
            )
            found = resolve(anchor, view)
            out.append(AnchorState(anchor, found.anchor, found.how))
        return out

    @staticmethod
    def _exists(ws: Workspace, path: str) -> bool:
        if ws.root is None:
            return False
        repo = ws.repo_map()
        return (repo is not None and repo.exists(path)) or (ws.root / path).exists()

    # -- acting -----------------------------------------------------------------------------------

    def add(
        self,
        summary: str,
        *,
        details: str = "",
        category: str = "context",
        files: Sequence[str] = (),
        scope: str = "project",
        priority: str = "normal",
        supersedes: str | None = None,
        allow_secret: bool = False,
    ) -> Change:
        """A new memory written by the person at the UI (origin `user`), as `tether add` writes it."""
        with self._use() as ws:
            result = ws.add(
                summary,
                details=details,
                category=category,
                files=[_rooted(ws, p) for p in files] if scope != "user" else list(files),
                scope=scope,
                priority=priority,
                supersedes=supersedes or None,
                allow_secret=allow_secret,
            )
        verb = (
            "added"
            if result.created
            else "restored (same content)"
            if result.restored
            else "already known (same content)"
        )
        return Change(verb, result.memory)

    def edit(self, memory_id: str, changes: dict[str, Any], *, allow_secret: bool = False) -> Change:
        """`tether edit` with the fields given (summary, details, category, files, priority)."""
        unknown = set(changes) - set(EDITABLE)
        if unknown:
            raise ValidationError(f"cannot edit {', '.join(sorted(unknown))}: use {', '.join(EDITABLE)}")
        with self._use() as ws:
            before = ws.get(memory_id)
            if "files" in changes and before.scope != "user":
                changes = {**changes, "files": [_rooted(ws, p) for p in changes["files"]]}
            after = ws.edit(before.id, allow_secret=allow_secret, **changes)
        changed = diff(before, after)
        return Change("edited" if changed else "unchanged", after, changed)

    def pin(self, memory_id: str, pinned: bool) -> Change:
        with self._use() as ws:
            before = ws.get(memory_id)
            after = ws.pin(before.id, pinned)
        return Change("pinned" if pinned else "unpinned", after, diff(before, after))

    def archive(self, memory_id: str) -> Change:
        with self._use() as ws:
            before = ws.get(memory_id)
            after = ws.archive(before.id, reason="ui")
        return Change("archived", after, diff(before, after))

    def restore(self, memory_id: str) -> Change:
        with self._use() as ws:
            before = ws.get(memory_id)
            after = ws.restore(before.id)
        return Change("restored", after, diff(before, after))

    def supersede(self, old_id: str, new_id: str) -> Change:
        """`tether supersede OLD NEW`: the change reported is the old memory's."""
        with self._use() as ws:
            before = ws.get(old_id)
            ws.supersede(before.id, check_id(new_id))
            after = ws.get(before.id)
        return Change(f"superseded by {check_id(new_id)}", after, diff(before, after))

    def delete(self, memory_id: str) -> Change:
        """`tether rm --hard`: the note is deleted for good."""
        with self._use() as ws:
            gone = ws.delete(memory_id)
        return Change("deleted", gone)

    # -- the pending review queue -----------------------------------------------------------------

    def pending(self) -> list[Waiting]:
        """`tether review`: what agents asked to write and only the person may allow, oldest first."""
        from tether.lifecycle.review import pending_requests

        with self._use() as ws:
            return [
                Waiting(r, r.memory if r.kind == "add" else ws.store.get(r.id)) for r in pending_requests(ws)
            ]

    def approve(self, request_id: str) -> Memory:
        """`tether review approve ID`: the request carried out as asked; the memory as written."""
        from tether.lifecycle.review import approve

        with self._use() as ws:
            return approve(ws, request_id)

    def reject(self, request_id: str) -> Request:
        """`tether review reject ID`: the request dropped, nothing written."""
        from tether.lifecycle.review import reject

        with self._use() as ws:
            return reject(ws, request_id)

    # -- stats ------------------------------------------------------------------------------------

    def stats(self, top: int = 10) -> dict[str, Any]:
        """`tether stats` plus the event log over time: surfaced and acted per bucket, overall and per
        category (`timeline`), with the bucket size chosen from the span of the log."""
        from tether.lifecycle import stats

        with self._use() as ws:
            data = stats(ws, top=top)
            categories = {m.id: m.category for m in self._all(ws)}
            events = [e for e in ws.store.events(None, limit=1_000_000) if e.event in ("surfaced", "acted")]
            now = ws.clock()
        data["timeline"] = timeline(events, categories, now)
        return data

    # -- cleanup ----------------------------------------------------------------------------------

    def cleanup_candidates(self) -> list[Any]:
        """`lifecycle.cleanup_candidates`: stale memories, worst first (pinned never)."""
        from tether.lifecycle import cleanup_candidates

        with self._use() as ws:
            return cleanup_candidates(ws)

    def cleanup(self, ids: Sequence[str]) -> list[Memory]:
        """Archive the chosen candidates and mark a cleanup pass (as `tether cleanup` does)."""
        from tether.lifecycle import cleanup

        checked = [check_id(mid) for mid in ids]
        with self._use() as ws:
            for mid in checked:
                ws.get(mid)  # every id exists before anything is archived
            return cleanup(ws, checked)

    # -- recall playground ------------------------------------------------------------------------

    def playground(self, prompt: str, files: Sequence[str], work: bool = False) -> Playground:
        """What the prompt hook would inject for `prompt` and `files`, and why, recording nothing. Files the
        prompt names count as touched (`tether.recall.named`). `work` (without files): as a session's first
        prompt, the work in progress in the tree standing for the touched files when the prompt is about it
        (`tether.recall.work`).

        The injected memories come from `Recaller.recall(record=False)`; the runners-up from the same
        ranking without the evidence gate and budget; each with `Recaller.explain`."""
        from tether.recall.named import take_named
        from tether.recall.work import recall_with_work
        from tether.repo.worktree import in_progress

        with self._use() as ws:
            before = _surfacings(ws)
            recaller = ws.recaller()
            _, files = take_named(prompt, ws.root, ws.repo_map(), files)  # as the prompt hook takes them
            changed = in_progress(ws.root) if work and not files and ws.root is not None else None
            if changed is not None:
                result = recall_with_work(recaller, prompt, changed, record=False)
                files = result.files  # the touched files it took: the work's, or none
            else:
                result = recaller.recall(prompt, list(files), record=False)
            injected = [r.memory.id for r in result.memories]
            wider = recaller.recall(
                prompt,
                list(files),
                record=False,
                limit=len(injected) + RUNNERS_UP,
                budget=10**9,
                require_evidence=False,
            )
            ids = list(dict.fromkeys([*injected, *(r.memory.id for r in wider.memories)]))
            explained = [
                Explained.of(*recaller.explain(mid, prompt, list(files)), injected=mid in injected)
                for mid in ids
            ]
            after = _surfacings(ws)
        injected_block = block([r.line() for r in result.memories])
        return Playground(
            result.query, result.files, injected_block, explained, result.candidates, before, after, changed
        )

    def repo_files(self, limit: int = 5000) -> list[str]:
        """Files of the work tree, for picking touched files (cached for 30 s)."""
        now = time.monotonic()
        if self._files is not None and now - self._files[0] < REPO_REFRESH_SECONDS:
            return self._files[1][:limit]
        with self._use(sync=False) as ws:
            if ws.root is None:
                return []
            from tether.repo.git import list_files

            repo = ws.repo_map()
            try:
                files = list_files(ws.root, repo is not None and repo.is_git())
            except (OSError, TetherError):
                files = []
        self._files = (now, files)
        return files[:limit]

    # -- graph ------------------------------------------------------------------------------------

    def graph_data(self) -> dict[str, Any]:
        """Memories (project and user, every status), the files they name and the links between them.

        Nodes: `{"id", "kind": "memory"|"file", ...}`; edges: `(source index, target index, kind)` with kind
        `file` (a memory names it), `wikilink` (a `[[link]]` in the details) or `supersedes`."""
        with self._use() as ws:
            memories = [m for m in self._all(ws) if m.scope != "session"]
            targets = _link_index(ws)
            repo_exists = self._exists_many(ws, {p for m in memories for p in m.files})
        nodes: list[dict[str, Any]] = []
        index: dict[str, int] = {}
        for m in memories:
            index[m.id] = len(nodes)
            nodes.append(
                {
                    "id": m.id,
                    "kind": "memory",
                    "label": m.summary,
                    "category": m.category,
                    "origin": "rules:" if m.origin.startswith("rules:") else m.origin,
                    "status": m.status,
                    "pinned": m.pinned,
                }
            )
        edges: list[tuple[int, int, str]] = []
        files: dict[str, int] = {}
        for m in memories:
            for path in m.files:
                if path not in files:
                    files[path] = len(nodes)
                    nodes.append({"id": path, "kind": "file", "label": path, "exists": repo_exists[path]})
                edges.append((index[m.id], files[path], "file"))
            for target in m.links:
                mid = _resolve(targets, target)
                if mid is not None and mid in index and mid != m.id:
                    edges.append((index[m.id], index[mid], "wikilink"))
            if m.supersedes and m.supersedes in index:
                edges.append((index[m.id], index[m.supersedes], "supersedes"))
        return {"nodes": nodes, "edges": edges}

    @staticmethod
    def _exists_many(ws: Workspace, paths: set[str]) -> dict[str, bool]:
        if ws.root is None:
            return dict.fromkeys(paths, False)
        repo = ws.repo_map()
        return {p: repo is not None and repo.exists(p) for p in paths}


# -- helpers (no core calls of their own beyond what they are handed) -----------------------------------


def _rooted(ws: Workspace, path: str) -> str:
    """A path typed in the UI, taken from the repository root (not the server's working directory)."""
    if ws.root is None or Path(path).is_absolute():
        return path
    return str(ws.root / path) + ("/" if path.endswith("/") else "")


def _link_index(ws: Workspace) -> dict[str, str]:
    """Wikilink key (`link_key`) → memory id, resolved as `Workspace.links` resolves them (id, note name,
    title, then alias), built once so a page or the graph does not scan every note per link."""
    out: dict[str, str] = {}
    notes = ws.store.note_refs()
    for mid, _ in notes.values():
        out[mid] = mid
    for path, (mid, _) in notes.items():
        stem = Path(path).stem
        out.setdefault(link_key(stem), mid)
        out.setdefault(link_key(stem.split("-", 1)[-1]), mid)
    every = ws.find(Query())
    for memory in every:
        out.setdefault(link_key(memory.summary), memory.id)
    for memory in every:  # a note's own title wins over another note's alias
        for alias in memory.aliases:
            out.setdefault(link_key(alias), memory.id)
    return out


def _resolve(targets: dict[str, str], target: str) -> str | None:
    return targets.get(link_key(target))


def _surfacings(ws: Workspace) -> int:
    return sum(t.surfaced for t in ws.store.telemetry(None).values())
