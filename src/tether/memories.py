"""`Memories`: every read and write of one project's memory (and the user's), over the notes and the store.

A write is: validate (the same checks and messages for every adapter), refuse likely credentials, take the
writer lock, read the current record *under the lock* (so two writers never lose each other's change),
write the note atomically, then index it. The note is durable before the index knows of it, and the index
can always be rebuilt from the notes.

    >>> memories.add("Staging API listens on 6443", files=["deploy/staging.yaml"]).memory.id  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tether.config import Config
from tether.embed.base import Embedder
from tether.embed.policy import EmbedderPolicy
from tether.errors import NoProjectError, NoteError, NotFoundError, SecretError, ValidationError
from tether.fs import file_lock, write_atomic
from tether.model.anchor import Anchor
from tether.model.memory import (
    Memory,
    check_choice,
    check_id,
    needs_approval,
    new_id,
    normalize_files,
    validate,
)
from tether.model.wikilinks import link_key
from tether.notes import format as notes
from tether.notes.stamps import kept_in_step
from tether.notes.sync import PENDING_VECTORS
from tether.project import Paths
from tether.repo.map import RepoMap
from tether.store.base import Event, NoteRef, Query, Store, pull_rate

# Like git's short ids: fewer characters than this match too many of a few thousand random ids to be useful.
MIN_PREFIX = 4

# Fields `edit` may change; scope and id never change (a memory moving scope is a new memory).
EDITABLE = frozenset(
    {
        "summary",
        "details",
        "category",
        "files",
        "anchors",
        "tags",
        "aliases",
        "priority",
        "pinned",
        "origin",
        "status",
    }
)


@dataclass(frozen=True)
class Added:
    memory: Memory
    created: bool  # False when the same knowledge already existed and was returned instead
    restored: bool = False  # the existing memory was archived and the person re-adding it restored it
    pending: tuple[str, ...] = ()  # why an agent's write waits for `tether review` (nothing was written)


class Memories:
    """One project's memories plus the user's: reads from the store, writes through notes then the store."""

    def __init__(
        self,
        paths: Paths,
        store: Store,
        embedders: EmbedderPolicy,
        *,
        config: Config,
        cwd: Path,
        clock: Callable[[], datetime],
    ) -> None:
        # Set by the resident process: its quiet moments run the due lifecycle passes
        # (`tether.lifecycle.passes`), so a session start it answers does not.
        self.passes_between_requests = False
        self.paths = paths
        self.store = store
        self.embedders = embedders
        self.config = config
        self.cwd = cwd
        self.clock = clock

    @property
    def root(self) -> Path | None:
        return self.paths.root

    @property
    def embedder(self) -> Embedder:
        """The embedder queries use (`EmbedderPolicy.query_embedder`)."""
        return self.embedders.query_embedder

    def absolute(self, files: Sequence[str], scope: str = "project") -> list[str]:
        """Repo-relative paths made absolute, so `add` and `edit` do not re-base them on the cwd."""
        if scope == "user" or self.root is None:
            return list(files)
        return [str(self.root / path) + ("/" if path.endswith("/") else "") for path in files]

    def repo_map(self) -> RepoMap | None:
        """The project's repo map (cheap: nothing is read until a lookup); None outside a project."""
        return RepoMap(self.root, self.store.repomap()) if self.root is not None else None

    def log(self, message: str, *, exc: bool = False) -> None:
        """One line in `.tether/logs/tether.log` (never raises: logging must not break a hook)."""
        import traceback

        try:
            self.paths.logs.mkdir(parents=True, exist_ok=True)
            detail = ""
            if exc:
                detail = " | " + traceback.format_exc().strip().splitlines()[-1]
            with open(self.paths.logs / "tether.log", "a", encoding="utf-8") as handle:
                handle.write(f"{self.clock():%Y-%m-%dT%H:%M:%S} {message}{detail}\n")
        except OSError:
            pass

    # -- reading ----------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Memory:
        mid = check_id(memory_id)
        memory = self.store.get(mid)
        if memory is None:
            raise NotFoundError(f"no memory {mid}: `tether list --all` shows every id")
        return memory

    def resolve(self, memory_id: str) -> str:
        """The full id for an id or an unambiguous prefix of one, as git takes commits: `3a73` -> `3a73b1c2`.

        A prefix needs MIN_PREFIX characters; several matches raise a ValidationError naming them."""
        text = memory_id.strip().lower()
        if len(text) >= 8 or not text or any(c not in "0123456789abcdef" for c in text):
            return check_id(text if len(text) >= 8 else memory_id)  # its own message for a malformed id
        if len(text) < MIN_PREFIX:
            raise ValidationError(
                f"{text}: an id prefix needs at least {MIN_PREFIX} characters; give more of the id "
                "(`tether list --all` shows every id)"
            )
        matches = sorted(m.id for m in self.store.find(Query(status=None)) if m.id.startswith(text))
        if not matches:
            raise NotFoundError(f"no memory id starts with {text}: `tether list --all` shows every id")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise ValidationError(
                f"{text} is ambiguous: {len(matches)} ids start with it ({shown}); give more of it"
            )
        return matches[0]

    def find(self, query: Query | None = None) -> list[Memory]:
        return self.store.find(query or Query())

    def chain(self, memory: Memory) -> list[Memory]:
        """What `memory` replaced, oldest last, and what replaced it, newest first."""
        out: list[Memory] = []
        seen = {memory.id}
        # The store finds the replacements: reading every memory to look was 180-300 ms at 10k (memory_get).
        for newer in self.store.find(Query(status=None, supersedes=memory.id)):
            if newer.id not in seen:
                out.append(newer)
                seen.add(newer.id)
        current = memory
        while current.supersedes and current.supersedes not in seen:
            older = self.store.get(current.supersedes)
            if older is None:
                break
            out.append(older)
            seen.add(older.id)
            current = older
        return out

    def links(self, memory: Memory) -> tuple[list[Memory], list[Memory]]:
        """Memories this one links to, and memories linking to it (by id or by note name)."""
        outgoing: dict[str, Memory] = {}  # two spellings of one link name one memory
        for target in memory.links:
            found = self._resolve_link(target)
            if found is not None and found.id != memory.id:
                outgoing.setdefault(found.id, found)
        path = self._note_path(memory)
        # Obsidian and basic-memory link by title: `[[Deploy checklist]]` names the memory with that summary.
        names = [memory.id, notes.slug(memory.summary), memory.summary, *memory.aliases]
        if path is not None:
            names.append(path.stem)
        incoming = [m for mid in self.store.linking(names) if mid != memory.id and (m := self.store.get(mid))]
        return list(outgoing.values()), incoming

    def _resolve_link(self, target: str) -> Memory | None:
        """A wikilink's memory: by id, by note file name (with or without its id prefix), else by title
        (the summary, then an alias), each compared as `link_key` (case, spacing and `#heading` aside, as
        Obsidian resolves `[[Note title]]`)."""
        key = link_key(target)
        if len(key) == 8:
            found = self.store.get(key)
            if found:
                return found
        for path, (mid, _) in self.store.note_refs().items():
            stem = Path(path).stem
            if key in (link_key(stem), link_key(stem.split("-", 1)[-1])):
                return self.store.get(mid)
        every = self.store.find(Query())
        for memory in every:
            if link_key(memory.summary) == key:
                return memory
        # An alias after every title: a note's own title wins over another note's alias.
        return next((m for m in every if key in (link_key(a) for a in m.aliases)), None)

    # -- writing ----------------------------------------------------------------------------------

    def admit(self, memory: Memory, *, allow_secret: bool = False, before: Memory | None = None) -> Memory:
        """The one check every new or changed memory passes, whichever adapter or intake it came from
        (CLI, MCP, UI, import, seeds, Claude's notes, rules, distill): every field validated, and text that
        looks like a credential refused unless `allow_secret` (an edit that leaves the text as it was,
        `before`, is not re-checked). Returns the memory as it will be stored."""
        checked = validate(memory)
        if not allow_secret and (before is None or checked.text != before.text):
            check_secret(checked.text)
        return checked

    def add(
        self,
        summary: str,
        *,
        details: str = "",
        category: str = "context",
        files: Sequence[str] = (),
        scope: str = "project",
        pinned: bool = False,
        priority: str = "normal",
        origin: str = "user",
        supersedes: str | None = None,
        session: str | None = None,
        allow_secret: bool = False,
        memory_id: str | None = None,
        approved: bool = False,
        at: Sequence[str] = (),
        anchors: Sequence[Anchor] = (),
        tags: Sequence[str] = (),
        aliases: Sequence[str] = (),
    ) -> Added:
        """Add a memory, or return the existing one holding the same knowledge in the same scope.

        An agent's memory (`origin="agent"`) that pins, writes user scope or supersedes a rule file's or the
        person's own memory is not written: it waits for the person (`tether review`), unless `approved`
        (the person ran the command that brought it in, or approved it).

        `at` anchors it inside files: `src/billing/charge.py::charge_card` or `src/billing/charge.py:120-140`
        (`anchors`: ones already made, as `tether anchors scan` proposes them)."""
        check_choice("scope", scope, ("project", "user", "session"))
        root = self.root if scope != "user" else None
        now = self.clock()
        anchors = (*anchors, *self.anchors_at(at, scope))
        memory = Memory(
            id=memory_id or new_id(),
            summary=summary,
            details=details,
            category=category,
            scope=scope,
            files=normalize_files(list(files), root, self.cwd),
            anchors=tuple(anchors),
            tags=tuple(tags),
            aliases=tuple(aliases),
            priority=priority,
            pinned=pinned,
            origin=origin,
            supersedes=check_id(supersedes) if supersedes else None,
            session=session,
            created=now,
            updated=now,
        )
        memory = self.admit(memory, allow_secret=allow_secret)
        if scope == "project":
            self.notes_dir(scope)
        with self.lock():
            for existing in self.store.by_hash(memory.content_hash):
                if existing.scope == memory.scope and (scope != "session" or existing.session == session):
                    if existing.status == "archived" and origin == "user":
                        # The person saying it again is the person restoring it. Anyone else (an agent,
                        # distill, a seed) gets it back as it is: an archive is someone's decision, and
                        # the answer says the memory is archived rather than "already saved".
                        back = self.write(existing.with_changes(status="active", updated=now))
                        self.store.record(
                            [Event(existing.id, "restored", now, receipts={"reason": "re-added"})]
                        )
                        return Added(back, created=False, restored=True)
                    return Added(existing, created=False)
            old = self.get(memory.supersedes) if memory.supersedes else None
            reasons = () if approved or origin != "agent" else needs_approval(memory, old)
            if reasons:
                from tether.notes.pending import Pending, Request

                Pending(self.paths.pending).put(Request(memory.id, "add", reasons, now, memory, session))
                return Added(memory, created=False, pending=reasons)
            self.write(memory)
            if old is not None:
                self._supersede(old, memory)
        return Added(memory, created=True)

    def edit(
        self,
        memory_id: str,
        *,
        allow_secret: bool = False,
        record_acted: bool = True,
        at: Sequence[str] | None = None,
        **changes: object,
    ) -> Memory:
        """Change fields of a memory (summary, details, category, files, priority, pinned, ...; not scope).
        `at` replaces its anchors (`path::Symbol`, `path:120-140`; empty: none)."""
        unknown = set(changes) - EDITABLE
        if unknown:
            raise ValidationError(
                f"cannot edit {', '.join(sorted(unknown))}: editable are {', '.join(sorted(EDITABLE))}"
            )
        with self.lock():
            memory = self.get(memory_id)  # under the lock: a concurrent edit is never lost
            if at is not None:
                changes["anchors"] = self.anchors_at(at, memory.scope)
            if "files" in changes:
                root = self.root if memory.scope != "user" else None
                changes["files"] = normalize_files(list(changes["files"]), root, self.cwd)  # type: ignore[call-overload]
                if "anchors" not in changes:  # anchors in files no longer named go with them
                    kept = set(changes["files"])  # type: ignore[call-overload]
                    changes["anchors"] = tuple(a for a in memory.anchors if a.path in kept)
            updated = self.admit(
                memory.with_changes(**changes, updated=self.clock()), allow_secret=allow_secret, before=memory
            )
            if updated == memory.with_changes(updated=updated.updated):
                return memory
            self.write(updated)
            if record_acted:
                self.store.record([Event(memory.id, "acted", self.clock(), receipts={"via": "edit"})])
        return updated

    def anchors_at(self, specs: Sequence[str], scope: str = "project") -> tuple[Anchor, ...]:
        """Anchors made from `--at` specs against the files as they are now (`tether.anchors.resolve`)."""
        if not specs:
            return ()
        from tether.anchors.resolve import anchors_at

        return anchors_at(specs, None if scope == "user" else self.root, self.cwd)

    def set_status(self, memory_id: str, status: str, reason: str = "") -> Memory:
        with self.lock():
            memory = self.get(memory_id)
            if memory.status == status:
                return memory
            updated = self.write(memory.with_changes(status=status, updated=self.clock()))
            event = {"archived": "archived", "active": "restored"}.get(status, status)
            self.store.record(
                [Event(memory.id, event, self.clock(), receipts={"reason": reason} if reason else {})]
            )
        return updated

    def archive(self, memory_id: str, reason: str = "") -> Memory:
        return self.set_status(memory_id, "archived", reason)

    def restore(self, memory_id: str) -> Memory:
        return self.set_status(memory_id, "active")

    def delete(self, memory_id: str) -> Memory:
        """Delete a memory for good: its note file too."""
        with self.lock():
            memory = self.get(memory_id)
            path = self._note_path(memory)
            with kept_in_step(self.store, self.note_dirs()):
                if path is not None:
                    path.unlink(missing_ok=True)
                self.store.remove(memory.id)
        return memory

    def pin(self, memory_id: str, pinned: bool = True) -> Memory:
        with self.lock():
            memory = self.get(memory_id)
            if memory.pinned == pinned:
                return memory
            updated = self.write(memory.with_changes(pinned=pinned, updated=self.clock()))
            self.store.record(
                [Event(memory.id, "acted", self.clock(), receipts={"via": "pin" if pinned else "unpin"})]
            )
        return updated

    def supersede(self, old_id: str, new_id_: str) -> Memory:
        with self.lock():
            old, new = self.get(old_id), self.get(new_id_)
            if old.id == new.id:
                raise ValidationError("a memory cannot supersede itself")
            updated = self.write(new.with_changes(supersedes=old.id, updated=self.clock()))
            self._supersede(old, updated)
        return updated

    def ack(
        self, memory_id: str, session: str | None = None, turn: int | None = None, via: str = "ack"
    ) -> Memory:
        memory = self.get(memory_id)
        self.store.record([Event(memory.id, "acted", self.clock(), session, turn, {"via": via})])
        return memory

    def pull_rate(self) -> float:
        """Acted-on events per showing over every memory (`store.base.pull_rate`)."""
        return pull_rate(*self.store.feedback_totals())

    def _supersede(self, old: Memory, new: Memory) -> None:
        self.write(old.with_changes(status="superseded", updated=self.clock()))
        now = self.clock()
        self.store.record(
            [
                Event(old.id, "superseded", now, receipts={"by": new.id}),
                Event(old.id, "acted", now, receipts={"via": "supersede"}),
            ]
        )

    def write(self, memory: Memory, path: Path | None = None) -> Memory:
        """Write the note (atomically) and index it: the note is durable before the index knows of it.
        Callers hold the writer lock (`lock()`)."""
        vector, embedder_id = self._vector(memory.text)
        target = path if path is not None else self._note_path(memory)
        if target is None:
            self.store.put(memory, None, vector, embedder_id)
            return memory
        problem = self.store.note_problems().get(str(target))
        if problem is not None:
            # The note was broken by hand after it was indexed: writing the indexed version would throw
            # the hand edit away. Notes that fail to parse are never overwritten.
            raise NoteError(
                str(target), f"{problem[1]}; fix the note by hand (or delete it) before changing this memory"
            )
        with kept_in_step(self.store, self.note_dirs()):
            write_atomic(target, notes.render(memory))
            stat = target.stat()
            self.store.put(memory, NoteRef(str(target), stat.st_mtime_ns, stat.st_size), vector, embedder_id)
        return memory

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialize writers across processes, so a read, its checks and its write are one step."""
        with file_lock(self.paths.tether_dir / ".lock"):
            yield

    def sources(self) -> list[tuple[Path | None, str]]:
        """The note directories with their scope, in the order their stamps are recorded."""
        return [(self.paths.project_notes, "project"), (self.paths.user_notes, "user")]

    def note_dirs(self) -> list[Path | None]:
        return [directory for directory, _ in self.sources()]

    def notes_dir(self, scope: str) -> Path:
        if scope == "project":
            if self.paths.project_notes is None:
                raise NoProjectError(
                    "no .tether/ here for project memory: run `tether init`, or use --scope user"
                )
            return self.paths.project_notes
        return self.paths.user_notes

    def _note_path(self, memory: Memory) -> Path | None:
        if memory.scope == "session":
            return None
        known = self.store.note_path(memory.id)
        if known is not None:
            return Path(known)
        return self.notes_dir(memory.scope) / notes.note_name(memory)

    def _vector(self, text: str) -> tuple[list[float] | None, str | None]:
        """A memory's vector and its embedder's id; none in a hook that cannot reach the model."""
        embedder = self.embedders.writer()
        if embedder is not None:
            try:
                return embedder.embed([text])[0], embedder.id
            except self.embedders.failures() as exc:
                self.log(f"indexed without a vector: {exc}")
        self.store.set_meta(PENDING_VECTORS, "1")
        return None, None


def check_secret(text: str) -> None:
    from tether.model.secrets import find_secret  # a write's check: a hook that only reads skips it

    found = find_secret(text)
    if found:
        raise SecretError(
            f"refused: the text looks like a credential ({found}); remove it, or pass --allow-secret "
            "if it is not a real secret"
        )
