"""The memory record (DESIGN §1): fields, validation and normalization.

A `Memory` is plain data. Validation happens in `new_memory` / `validate`, so every adapter (CLI, MCP,
hooks, import) gets the same checks and the same messages.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from tether.errors import ValidationError
from tether.model import labels, wikilinks
from tether.model.anchor import Anchor
from tether.model.anchor import check as check_anchor
from tether.model.display import first_control, first_line_break
from tether.model.limits import DETAILS_MAX, FILES_MAX, PATH_MAX
from tether.model.limits import SUMMARY_MAX as SUMMARY_MAX  # where it was always imported from
from tether.model.timestamps import iso, parse_iso, utcnow

CATEGORIES = ("pref", "decision", "gotcha", "context")
SCOPES = ("project", "user", "session")
PRIORITIES = ("normal", "high")
STATUSES = ("active", "archived", "superseded")
ORIGINS = ("user", "agent", "seed", "distilled")  # plus "rules:<path>"


_ID_RE = re.compile(r"^[0-9a-f]{8}$")


def new_id() -> str:
    return os.urandom(4).hex()  # what `secrets.token_hex` reads, without its import (6 ms of a hook)


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
    # Obsidian's frontmatter lists (`tether.model.labels`): searchable, and wikilinks resolve by an alias.
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def links(self) -> tuple[str, ...]:
        """Wikilink targets (`[[id]]` or `[[name]]`) found in the details, in order, without repeats."""
        return wikilinks.targets(self.details)

    @property
    def link_keys(self) -> tuple[str, ...]:
        """The links as the index stores and matches them (`wikilinks.link_key`), without repeats or empty ones."""
        return wikilinks.keys(self.links)

    @cached_property
    def content_hash(self) -> str:
        return content_hash(self.summary, self.details)

    @property
    def text(self) -> str:
        """What is embedded and full-text indexed: the summary, the details, then aliases and #tags."""
        return f"{self.summary}\n{self.details}\n{labels.keywords(self.tags, self.aliases)}".strip()

    def with_changes(self, **changes: object) -> Memory:
        return replace(self, **changes)  # type: ignore[arg-type]


def origin_tag(memory: Memory) -> str:
    """`[agent] `, `[distilled] `, `[rules:AGENTS.md] `, `[seed] `: who a memory comes from, shown before its
    id in every injected line (the person's own memories carry no tag). An agent told "[agent]" reads the
    line as another agent's note, not as the user's instruction.

    >>> origin_tag(Memory(id="0a1b2c3d", summary="x", origin="rules:AGENTS.md"))
    '[rules:AGENTS.md] '
    """
    return "" if memory.origin == "user" else f"[{memory.origin}] "


def content_hash(summary: str, details: str = "") -> str:
    """Hash of the normalized text, so the same knowledge saved twice is one memory.

    Normalization folds case, Unicode form and runs of whitespace: those differences don't change what a
    memory says.
    """
    import hashlib  # only a write hashes: a hook that only reads skips its import

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
    if value in ORIGINS:
        return value
    if value.startswith("rules:") and len(value) > len("rules:"):
        # Shown in every injected line (`[rules:AGENTS.md]`): one line, no controls, no brackets.
        if first_control(value) or first_line_break(value) or "[" in value or "]" in value:
            raise ValidationError(
                f"invalid origin {value!r}: a rule file's path may not hold line breaks, controls or brackets"
            )
        return value
    raise ValidationError(f"invalid origin {value!r}: use one of {', '.join(ORIGINS)} or rules:<path>")


def check_text(name: str, text: str) -> str:
    """Refuse control characters other than tab and line breaks, naming the first and where it is.

    Terminal and bidirectional controls have no place in a memory's text: they would act on whoever reads it
    (`tether.model.display` also escapes them wherever text is shown)."""
    found = first_control(text)
    if found and "\ud800" <= found.group() <= "\udfff":
        raise ValidationError(
            f"{name} holds a lone surrogate U+{ord(found.group()):04X} at position {found.start() + 1}: "
            "it is not valid Unicode text (a byte that was not UTF-8?)"
        )
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
    check_text("summary", summary)
    found = first_line_break(summary)
    if found:
        # Any of them (U+2028 too, which is no control) would let one summary forge a line of the block.
        where = (
            ""
            if found.group() in "\n\r"
            else f" (U+{ord(found.group()):04X} at position {found.start() + 1})"
        )
        raise ValidationError(
            f"summary must be one line{where}: put the rest in --details (or pipe it with --details -)"
        )
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
    if len(raw) > PATH_MAX:
        raise ValidationError(f"a file path of {len(raw)} characters, the limit is {PATH_MAX}")
    if first_line_break(raw) or "\x00" in raw:
        raise ValidationError(
            f"file path {path!r} holds a line break or NUL: name a file with a one-line path"
        )
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
    if len(paths) > FILES_MAX:  # before normalizing each: that touches the disk
        raise ValidationError(
            f"{len(paths)} file paths, the limit is {FILES_MAX}: name their directory instead (ending in /)"
        )
    seen: dict[str, None] = {}
    for path in paths:
        seen.setdefault(normalize_path(path, root, cwd), None)
    return tuple(seen)


def validate(memory: Memory) -> Memory:
    """Check every field; return the memory with its summary stripped. Raises `ValidationError`."""
    check_id(memory.id)
    summary = check_summary(memory.summary)
    if len(memory.details) > DETAILS_MAX:
        raise ValidationError(
            f"details are {len(memory.details)} characters, the limit is {DETAILS_MAX}: keep the essentials "
            "and link to the rest (a file in the repository, a URL)"
        )
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
    anchors = tuple(dict.fromkeys(check_anchor(anchor) for anchor in memory.anchors))
    # An anchor's file is one of the memory's files: when its code is gone, the memory degrades to it.
    files = memory.files + tuple(dict.fromkeys(a.path for a in anchors if a.path not in memory.files))
    if len(files) > FILES_MAX:
        raise ValidationError(
            f"{len(files)} file paths, the limit is {FILES_MAX}: name their directory instead (ending in /)"
        )
    for path in files:
        if len(path) > PATH_MAX:
            raise ValidationError(f"a file path of {len(path)} characters, the limit is {PATH_MAX}")
        if path.startswith("/") or path.startswith("../") or "/../" in path or path == "..":
            raise ValidationError(f"file path {path!r} must be relative to the repository root")
        if any("\ud800" <= ch <= "\udfff" for ch in path):
            raise ValidationError(f"file path {path!r} holds a lone surrogate: it is not valid Unicode text")
        if first_line_break(path):
            # A path is shown in receipts (`dir(src/api/)`): it must not forge a line of the injected block
            # (other controls are shown escaped, like every memory text).
            raise ValidationError(f"file path {path!r} holds a line break: name a file with a one-line path")
    memory = replace(memory, tags=labels.tags(memory.tags), aliases=labels.aliases(memory.aliases))
    return replace(memory, summary=summary, details=memory.details.strip("\n"), files=files, anchors=anchors)


def needs_approval(memory: Memory, replaces: Memory | None) -> tuple[str, ...]:
    """Why an agent's `memory` may not be written without the person's approval (empty: it may).

    >>> needs_approval(Memory(id="0a1b2c3d", summary="x", pinned=True, scope="user"), None)
    ('it is pinned', 'it is user memory (it would follow the user into every project)')
    """
    reasons = []
    if memory.pinned:
        reasons.append("it is pinned")
    if memory.scope == "user":
        reasons.append("it is user memory (it would follow the user into every project)")
    if replaces is not None:
        if replaces.origin.startswith("rules:"):
            reasons.append(
                f"it supersedes {replaces.id}, a rule from {replaces.origin.removeprefix('rules:')}"
            )
        elif replaces.origin == "user" or replaces.scope == "user":
            reasons.append(f"it supersedes {replaces.id}, a memory the user wrote")
    return tuple(reasons)


def _anchors(items: list[Any]) -> tuple[Anchor, ...]:
    """`tether import`'s anchors, each read as a note's frontmatter anchor is."""
    return tuple(Anchor.from_front(item) for item in items)


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
        "tags": list(memory.tags),
        "aliases": list(memory.aliases),
        "priority": memory.priority,
        "pinned": memory.pinned,
        "origin": memory.origin,
        "supersedes": memory.supersedes,
        "status": memory.status,
        "content_hash": memory.content_hash,
        "created": iso(memory.created),
        "updated": iso(memory.updated),
    }


def from_dict(data: object) -> Memory:
    """The memory `to_dict` described, validated (`tether import`). Raises `ValidationError`.

    Types are strict: `"pinned": "false"` or `"details": null` is an error naming the field, never a
    guess (`bool("false")` is true, `str(None)` is "None"). Derived fields (`links`, `content_hash`) and
    fields of newer versions are not read."""
    if not isinstance(data, dict):
        raise ValidationError(f"expected a JSON object, got {type(data).__name__}")

    def field(name: str, kind: type | tuple[type, ...], default: Any = _REQUIRED) -> Any:
        if name not in data:
            if default is _REQUIRED:
                raise ValidationError(f"{name}: missing")
            return default
        value = data[name]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            names = " or ".join("null" if k is type(None) else _JSON_TYPES.get(k, k.__name__) for k in kinds)
            shown = "null" if value is None else json_type(value)
            raise ValidationError(f"{name}: expected {names}, got {shown} {value!r}")
        return value

    files = field("files", list, [])
    for position, path in enumerate(files):
        if not isinstance(path, str):
            raise ValidationError(f"files[{position}]: expected a string, got {json_type(path)}")
    try:
        created = parse_iso(field("created", str))
        updated = parse_iso(field("updated", str))
    except ValueError as exc:
        raise ValidationError(f"invalid date ({exc}): use ISO 8601, e.g. 2026-01-31T12:00:00Z") from None
    return validate(
        Memory(
            id=field("id", str),
            summary=field("summary", str),
            details=field("details", str, ""),
            category=field("category", str, "context"),
            scope=field("scope", str, "project"),
            files=tuple(files),
            anchors=_anchors(field("anchors", list, [])),
            tags=tuple(field("tags", list, [])),
            aliases=tuple(field("aliases", list, [])),
            priority=field("priority", str, "normal"),
            pinned=field("pinned", bool, False),
            origin=field("origin", str, "user"),
            supersedes=field("supersedes", (str, type(None)), None),
            status=field("status", str, "active"),
            created=created,
            updated=updated,
        )
    )


_REQUIRED: Any = object()
_JSON_TYPES = {str: "a string", bool: "true or false", list: "a list", dict: "an object", int: "a number"}


def json_type(value: object) -> str:
    """How JSON names the type of a decoded value (`null`, `a string`, ...), for error messages."""
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES.items() if isinstance(value, kind)), type(value).__name__)
