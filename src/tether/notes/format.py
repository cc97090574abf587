"""Markdown notes: one file per memory, YAML frontmatter plus a markdown body (DESIGN §2).

Notes are the source of truth for content. They are written atomically (temp file, fsync, rename) so a
crash never leaves half a note, and they are never rewritten or deleted because they failed to parse.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tether.errors import NoteError, ValidationError
from tether.fs import RefusedFile, read_limited
from tether.model import labels
from tether.model.anchor import Anchor
from tether.model.limits import NOTE_MAX_BYTES
from tether.model.memory import Memory, validate
from tether.model.text import fit_summary
from tether.model.timestamps import iso, parse_iso, utcnow

NOTE_SUFFIX = ".md"
_SLUG_RE = re.compile(r"[^a-z0-9]+")
# Frontmatter keys in the order they are written, so diffs of hand-edited notes stay small.
_KEYS = (
    "id",
    "summary",
    "category",
    "files",
    "anchors",
    "tags",
    "aliases",
    "priority",
    "pinned",
    "origin",
    "supersedes",
    "status",
    "created",
    "updated",
)


# Claude Code's memory notes (`name`, `description`, `type`: user | feedback | project | reference) read as
# memories, so a folder of them copied into `.tether/memories/` is memory rather than a warning per note:
# - user: who the person is and how they like to work → a preference;
# - feedback: corrections and confirmed approaches ("don't mock the DB") → a preference too: it tells the
#   agent how to work here, which is what `pref` means;
# - project: ongoing work, goals, constraints not in the code → context; reference: pointers → context.
# None maps to `decision` or `gotcha`: the notes don't say which they are, and guessing wrong would put a
# "review before editing" warning on a note that is not one.
CLAUDE_TYPE_CATEGORY = {"user": "pref", "feedback": "pref", "project": "context", "reference": "context"}
_CLAUDE_KEYS = {"name", "description", "type", "metadata"}


def slug(summary: str, limit: int = 48) -> str:
    text = _SLUG_RE.sub("-", summary.lower()).strip("-")
    return text[:limit].rstrip("-") or "memory"


def note_name(memory: Memory) -> str:
    """`<id>-<slug>.md`: the id keeps names unique, the slug makes a directory listing readable."""
    return f"{memory.id}-{slug(memory.summary)}{NOTE_SUFFIX}"


def render(memory: Memory) -> str:
    front: dict[str, Any] = {
        "id": memory.id,
        "summary": memory.summary,
        "category": memory.category,
        "files": list(memory.files),
        "anchors": [anchor.to_front() for anchor in memory.anchors],
        "tags": list(memory.tags),
        "aliases": list(memory.aliases),
        "priority": memory.priority,
        "pinned": memory.pinned,
        "origin": memory.origin,
        "supersedes": memory.supersedes,
        "status": memory.status,
        "created": iso(memory.created),
        "updated": iso(memory.updated),
    }
    if memory.supersedes is None:
        del front["supersedes"]
    for optional in ("anchors", "tags", "aliases"):  # written only when set: older notes stay as they were
        if not front[optional]:
            del front[optional]
    import yaml  # lazily: a hook whose notes did not change never parses or writes one

    text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
    body = memory.details.strip("\n")
    return f"---\n{text}---\n" + (f"\n{body}\n" if body else "")


def _frontmatter(text: str, pure: bool) -> Any:
    """`yaml.safe_load`, with libyaml's C loader where PyYAML has it (8-10x faster: `reindex` of 10k notes
        took 15 s in the pure-Python one). On an error the pure loader parses again, so the message a user
        sees does not depend on how PyYAML was built (the C loader words its problems differently). The tests
    compare both on every malformed and hostile note they know."""
    import yaml  # lazily: a hook whose notes did not change never parses one

    loader = getattr(yaml, "CSafeLoader", None)
    # libyaml accepts a tab where PyYAML refuses one (`key:\tvalue`): such rare text goes the pure way.
    if pure or loader is None or "\t" in text:
        return yaml.load(text, Loader=yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError:
        return yaml.load(text, Loader=yaml.SafeLoader)


def parse(text: str, path: str, scope: str, *, pure_yaml: bool = False) -> Memory:
    """Parse a note. Raises `NoteError` naming the file and the problem. `pure_yaml`: never the C loader
    (the tests compare the two)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        raise NoteError(path, "missing YAML frontmatter: the note must start with a '---' line")
    lines = text.splitlines(keepends=True)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if end is None:
        raise NoteError(path, "frontmatter is not closed: add a '---' line after the fields")
    import yaml

    try:
        front = _frontmatter("".join(lines[1:end]), pure_yaml) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise NoteError(
            path, f"frontmatter is not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    except RecursionError:
        raise NoteError(path, "frontmatter nests too deeply to be a note's fields") from None
    except ValueError as exc:  # a YAML date or time that does not exist: `created: 2026-02-30`
        raise NoteError(path, f"frontmatter has an invalid date or time: {exc}") from None
    if not isinstance(front, dict):
        raise NoteError(path, "frontmatter must be a mapping of fields (key: value)")
    body = "".join(lines[end + 1 :]).strip("\n")
    if "summary" not in front and "id" not in front and front.keys() & {"name", "description"}:
        front, body = _from_claude(front, path, scope, body)
    unknown = sorted(set(front) - set(_KEYS) - {"scope", "links", "content_hash"})
    if unknown:
        raise NoteError(
            path, f"unknown field(s) {', '.join(map(str, unknown))}: valid fields are {', '.join(_KEYS)}"
        )
    try:
        files = front.get("files") or []
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValidationError("files must be a list of paths")
        anchors = front.get("anchors") or []
        if not isinstance(anchors, list):
            raise ValidationError("anchors must be a list (- path: ..., symbol: ... or lines: 120-140)")
        memory = Memory(
            id=_text(front, "id", "", numbers=True),
            summary=_text(front, "summary", ""),
            details=body,
            category=_text(front, "category", "context"),
            scope=scope,
            files=tuple(files),
            anchors=tuple(Anchor.from_front(a) for a in anchors),
            tags=labels.tags(front.get("tags")),
            aliases=labels.aliases(front.get("aliases")),
            priority=_text(front, "priority", "normal"),
            pinned=_bool(front.get("pinned", False)),
            origin=_text(front, "origin", "user"),
            supersedes=_text(front, "supersedes", "", numbers=True) or None,
            status=_text(front, "status", "active"),
            created=_datetime(front.get("created")),
            updated=_datetime(front.get("updated") or front.get("created")),
        )
        return validate(memory)
    except ValidationError as exc:
        raise NoteError(path, str(exc)) from None


def _from_claude(front: dict[Any, Any], path: str, scope: str, body: str) -> tuple[dict[str, Any], str]:
    """A Claude Code memory note's fields as tether's: summary from `description` (else `name`), body as
    details, `type` as category (`CLAUDE_TYPE_CATEGORY`), origin agent (Claude wrote it), and an id derived
    from the note's file name and scope, so it is the same memory on every read and in every checkout."""
    unknown = sorted(map(str, set(front) - _CLAUDE_KEYS))
    if unknown:
        raise NoteError(
            path, f"unknown field(s) {', '.join(unknown)} in a Claude-style note (name, description, type)"
        )
    nested = front.get("metadata")
    raw_type = front.get("type") or (nested.get("type") if isinstance(nested, dict) else None)
    note_type = str(raw_type or "").strip().lower()
    summary = " ".join(str(front.get("description") or front.get("name") or "").split())
    summary, overflow = fit_summary(summary)
    if overflow:  # the whole line stays in the body
        body = f"{overflow}\n\n{body}".strip()
    digest = hashlib.sha256(f"claude-note\0{scope}\0{Path(path).name}".encode()).hexdigest()
    fields = {
        "id": digest[:8],
        "summary": summary,
        "category": CLAUDE_TYPE_CATEGORY.get(note_type, "context"),
        "origin": "agent",
    }
    return fields, body


def read(path: Path, scope: str, *, inside: Path | None = None) -> Memory:
    """Read and parse the note at `path`. Raises `NoteError` for anything that is not a readable note:
    a directory, a FIFO (never waited on), a file over `NOTE_MAX_BYTES`, text that is not UTF-8, and
    with `inside` (a project's notes: the repository) a symlink to a file outside it; `OSError` only when
    the file vanished or cannot be opened."""
    try:
        raw = read_limited(path, NOTE_MAX_BYTES, inside=inside)
    except RefusedFile as exc:
        raise NoteError(
            str(path), f"{exc}: a note is a UTF-8 text file of at most {NOTE_MAX_BYTES} bytes"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError(str(path), "not UTF-8 text: re-save the note as UTF-8") from None
    return parse(text, str(path), scope)


def _text(front: dict[Any, Any], key: str, default: str, *, numbers: bool = False) -> str:
    """A frontmatter field that must be text. `numbers`: an id YAML read as a number (`12345678`) is its
    digits. Anything else (a list, a mapping, an alias to either) is a clear error, never its `str()`."""
    value = front.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        return value
    if numbers and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValidationError(f"{key} must be text, not {type(value).__name__}")


def _datetime(value: object) -> datetime:
    if value is None or value == "":
        return utcnow()
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    try:
        return parse_iso(str(value))
    except ValueError:
        raise ValidationError(f"invalid date {value!r}: use ISO 8601, e.g. 2026-01-31T12:00:00Z") from None


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ValidationError(f"pinned must be true or false, not {value!r}")
