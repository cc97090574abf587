"""The memory record (DESIGN §1): fields, validation and normalization.

A `Memory` is plain data. Validation happens in `new_memory` / `validate`, so every adapter (CLI, MCP,
hooks, import) gets the same checks and the same messages.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets as _random
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from tether.errors import ValidationError
from tether.model.anchor import Anchor
from tether.model.anchor import check as check_anchor
from tether.model.display import first_control
from tether.model.timestamps import iso, parse_iso, utcnow

CATEGORIES = ("pref", "decision", "gotcha", "context")
SCOPES = ("project", "user", "session")
PRIORITIES = ("normal", "high")
STATUSES = ("active", "archived", "superseded")
ORIGINS = ("user", "agent", "seed", "distilled")  # plus "rules:<path>"

# One line is what gets injected; 160 characters keeps three summaries and their receipts well inside
# the ~2,400-character injection budget.
SUMMARY_MAX = 160

_ID_RE = re.compile(r"^[0-9a-f]{8}$")
_WIKILINK_RE = re.compile(r"\[\[([^\[\]\n|]+?)(?:\|[^\[\]\n]*)?\]\]")


def new_id() -> str:
    return _random.token_hex(4)


@dataclass(frozen=True)
class Memory:
    """One memory. `files` are repo-relative POSIX paths; a trailing `/` marks a directory."""

    id: str
    summary: str
    details: str = ""
    category: str = "context"
    scope: str = "project"
    files: tuple[str, ...] = ()
    priority: str = "normal"
    pinned: bool = False
    origin: str = "user"
    supersedes: str | None = None
    status: str = "active"
    session: str | None = None
    created: datetime = field(default_factory=utcnow)
    updated: datetime = field(default_factory=utcnow)
    # Places inside `files` the memory is about (`tether.model.anchor`); each one's path is among `files`.
    anchors: tuple[Anchor, ...] = ()

    @property
    def links(self) -> tuple[str, ...]:
        """Wikilink targets (`[[id]]` or `[[name]]`) found in the details, in order, without repeats."""
        seen: dict[str, None] = {}
        for match in _WIKILINK_RE.finditer(self.details):
            seen.setdefault(match.group(1).strip(), None)
        return tuple(seen)

    @cached_property
    def content_hash(self) -> str:
        return content_hash(self.summary, self.details)

    @property
    def text(self) -> str:
        """What is embedded and full-text indexed: the summary, then the details."""
        return f"{self.summary}\n{self.details}".strip()

    def with_changes(self, **changes: object) -> Memory:
        return replace(self, **changes)  # type: ignore[arg-type]


def content_hash(summary: str, details: str = "") -> str:
    """Hash of the normalized text, so the same knowledge saved twice is one memory.

    Normalization folds case, Unicode form and runs of whitespace: those differences don't change what a
    memory says.
    """
    text = f"{summary}\n{details}"
    text = unicodedata.normalize("NFKC", text).casefold()
    text = " ".join(text.split())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValidationError(f"invalid {name} {value!r}: use one of {', '.join(choices)}")
    return value


def check_id(value: str) -> str:
    value = value.strip().lower()
    if not _ID_RE.match(value):
        raise ValidationError(
            f"invalid memory id {value!r}: ids are 8 hex characters, as shown by `tether list`"
        )
    return value


def check_origin(value: str) -> str:
    if value in ORIGINS or (value.startswith("rules:") and len(value) > len("rules:")):
        return value
    raise ValidationError(f"invalid origin {value!r}: use one of {', '.join(ORIGINS)} or rules:<path>")


def check_text(name: str, text: str) -> str:
    """Refuse control characters other than tab and line breaks, naming the first and where it is.

    Terminal and bidirectional controls have no place in a memory's text: they would act on whoever reads it
    (`tether.model.display` also escapes them wherever text is shown)."""
    found = first_control(text)
    if found:
        raise ValidationError(
            f"{name} contains the control character U+{ord(found.group()):04X} at position {found.start() + 1}: "
            "remove it (terminal escapes and direction overrides are not allowed in memory text)"
        )
    return text


def check_summary(summary: str) -> str:
    summary = summary.strip()
    if not summary:
        raise ValidationError("summary is empty: give a one-line summary of what to remember")
    if "\n" in summary or "\r" in summary:
        raise ValidationError(
            "summary must be one line: put the rest in --details (or pipe it with --details -)"
        )
    check_text("summary", summary)
    if len(summary) > SUMMARY_MAX:
        raise ValidationError(
            f"summary is {len(summary)} characters, the limit is {SUMMARY_MAX}: "
            "shorten it and put the rest in --details"
        )
    return summary


def normalize_path(path: str, root: Path | None, cwd: Path | None = None) -> str:
    """Turn a user-given path into a repo-relative POSIX path (directories keep a trailing `/`).

    Absolute paths inside `root` are made relative; relative paths are taken from `cwd` (default: root).
    Paths that escape the repository are rejected. Without a root (user scope), paths are kept as given,
    normalized.

    >>> normalize_path("/repo/src/app.py", Path("/repo"))
    'src/app.py'
    """
    raw = path.strip()
    if not raw:
        raise ValidationError("empty file path: give a path relative to the repository root")
    is_dir = raw.endswith(("/", os.sep))
    if root is None:
        parts = PurePosixPath(raw.replace("\\", "/"))
        text = os.path.normpath(str(parts)).replace("\\", "/")
        return text.rstrip("/") + "/" if is_dir else text
    root = root.resolve()
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute():
        candidate = (cwd or root) / candidate
    # normpath, not resolve: a path may name a file that no longer exists, and symlinks inside the repo
    # should keep the name the user gave them.
    absolute = Path(os.path.normpath(candidate))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        resolved = absolute.resolve()
        try:
            relative = resolved.relative_to(root)
        except ValueError:
            raise ValidationError(
                f"path {path!r} is outside the repository {root}: memories can only name files inside it"
            ) from None
    text = relative.as_posix()
    if text in ("", "."):
        return "./" if is_dir else "."
    if not is_dir and (root / text).is_dir():
        is_dir = True
    return text + "/" if is_dir else text


def normalize_files(
    paths: list[str] | tuple[str, ...], root: Path | None, cwd: Path | None = None
) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(normalize_path(path, root, cwd), None)
    return tuple(seen)


def validate(memory: Memory) -> Memory:
    """Check every field; return the memory with its summary stripped. Raises `ValidationError`."""
    check_id(memory.id)
    summary = check_summary(memory.summary)
    check_text("details", memory.details)
    check_choice("category", memory.category, CATEGORIES)
    check_choice("scope", memory.scope, SCOPES)
    check_choice("priority", memory.priority, PRIORITIES)
    check_choice("status", memory.status, STATUSES)
    check_origin(memory.origin)
    if memory.supersedes is not None:
        check_id(memory.supersedes)
        if memory.supersedes == memory.id:
            raise ValidationError("a memory cannot supersede itself")
    if memory.scope == "session" and not memory.session:
        raise ValidationError("session-scoped memory needs a session id (--session)")
    for path in memory.files:
        if path.startswith("/") or path.startswith("../") or "/../" in path or path == "..":
            raise ValidationError(f"file path {path!r} must be relative to the repository root")
    anchors = tuple(dict.fromkeys(check_anchor(anchor) for anchor in memory.anchors))
    # An anchor's file is one of the memory's files: when its code is gone, the memory degrades to it.
    files = memory.files + tuple(dict.fromkeys(a.path for a in anchors if a.path not in memory.files))
    return replace(memory, summary=summary, details=memory.details.strip("\n"), files=files, anchors=anchors)


def to_dict(memory: Memory) -> dict[str, Any]:
    """The memory as JSON-ready data: what `tether export`, `--json` and the MCP tools show."""
    return {
        "id": memory.id,
        "summary": memory.summary,
        "details": memory.details,
        "category": memory.category,
        "scope": memory.scope,
        "files": list(memory.files),
        "anchors": [anchor.to_front() for anchor in memory.anchors],
        "links": list(memory.links),
        "priority": memory.priority,
        "pinned": memory.pinned,
        "origin": memory.origin,
        "supersedes": memory.supersedes,
        "status": memory.status,
        "content_hash": memory.content_hash,
        "created": iso(memory.created),
        "updated": iso(memory.updated),
    }


def from_dict(data: dict[str, Any]) -> Memory:
    """The memory `to_dict` described, validated (`tether import`). Raises `ValidationError`."""
    return validate(
        Memory(
            id=str(data["id"]),
            summary=str(data["summary"]),
            details=str(data.get("details", "")),
            category=str(data.get("category", "context")),
            scope=str(data.get("scope", "project")),
            files=tuple(data.get("files", ())),
            anchors=tuple(Anchor.from_front(a) for a in data.get("anchors") or ()),
            priority=str(data.get("priority", "normal")),
            pinned=bool(data.get("pinned", False)),
            origin=str(data.get("origin", "user")),
            supersedes=data.get("supersedes"),
            status=str(data.get("status", "active")),
            created=parse_iso(str(data["created"])),
            updated=parse_iso(str(data["updated"])),
        )
    )
