"""Bringing outside knowledge in: seed files (`tether seed FILE.json`) and Claude Code's memory notes.

The parsers return validated `Memory` candidates and write nothing; `tether.intake.seedsync.seed` stores a
seed file (as a sync: edited entries update their memory, removed ones archive it) and
`tether.intake.foreign.import_memories` Claude's notes (skipping what the store already has).

>>> memories = parse_seed_file(Path("seeds.json"))  # doctest: +SKIP
>>> notes = parse_claude_memory(claude_memory_dir(Path.cwd()))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from tether.errors import SecretError, ValidationError
from tether.model.display import first_control
from tether.model.memory import (
    CATEGORIES,
    PRIORITIES,
    Memory,
    check_choice,
    check_summary,
    new_id,
    normalize_path,
    validate,
)
from tether.model.secrets import find_secret
from tether.model.text import fit_summary
from tether.model.timestamps import utcnow
from tether.notes.format import CLAUDE_TYPE_CATEGORY

__all__ = [
    "claude_memory_dir",
    "parse_claude_memory",
    "parse_seed_file",
    "read_seed_file",
]

_SEED_FIELDS = ("id", "key", "summary", "details", "category", "files", "priority", "pinned", "scope")
# What a seed file's top level may hold besides its entries: a version the file's authors keep (any
# number or text; tether records nothing from it, it is for the people reviewing the file's history).
_SEED_TOP = {"memories", "version"}
# A seed has no session to belong to, so session scope is not offered.
_SEED_SCOPES = ("project", "user")

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_INDEX_NAME = "memory.md"


def parse_seed_file(path: Path, *, root: Path | None = None, allow_secrets: bool = False) -> list[Memory]:
    """Validate a seed file and return one `Memory` (origin "seed") per entry; the whole file or nothing.

    The file is a JSON list, or `{"memories": [...], "version": ...}`, of objects with `summary` and
    optionally `id` or `key` (the entry's stable name, see `read_seed_file`), `details`, `category`,
    `files`, `priority`, `pinned`, `scope`. Errors name the file, the entry and the field:
    `seeds.json: memories[2].category: invalid category 'tip': use one of ...`.

    >>> parse_seed_file(Path("seeds.json"))[0].origin  # doctest: +SKIP
    'seed'
    """
    return [memory for _, memory in read_seed_file(path, root=root, allow_secrets=allow_secrets)]


def read_seed_file(
    path: Path, *, root: Path | None = None, allow_secrets: bool = False
) -> list[tuple[str, Memory]]:
    """Each entry of a seed file as (its key, its memory): the key is `key <id or key field>` when the
    entry names itself, else `text <hash of its summary and details>`. Two entries with one key are an
    error naming both."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read seed file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path}: not UTF-8 text: save the seed file as UTF-8 JSON") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if (
        isinstance(data, dict)
        and "memories" in data
        and set(data) <= _SEED_TOP
        and isinstance(data["memories"], list)
    ):
        version = data.get("version")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int | str)):
            raise ValidationError(f"{path}: version: expected a number or text, got {type(version).__name__}")
        entries, prefix = data["memories"], "memories"
    elif isinstance(data, list):
        entries, prefix = data, ""
    else:
        raise ValidationError(
            f'{path}: expected a JSON list of memories or {{"memories": [...], "version": ...}}, '
            f"got {type(data).__name__}"
            + (f" with keys {', '.join(sorted(data))}" if isinstance(data, dict) else "")
        )
    now = utcnow()
    out: list[tuple[str, Memory]] = []
    seen: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: {prefix}[{index}]"
        memory = _seed_entry(entry, where, root=root, allow_secrets=allow_secrets, now=now)
        assert isinstance(entry, dict)  # _seed_entry refused anything else
        key = _entry_key(entry, memory, where)
        if key in seen:
            raise ValidationError(
                f"{where}: the same {key.split()[0]} as {seen[key]}: give each entry its own id or key"
            )
        seen[key] = f"{prefix}[{index}]"
        out.append((key, memory))
    return out


def _entry_key(entry: dict[str, Any], memory: Memory, where: str) -> str:
    """An entry's stable name: its `id`/`key` field, else its text (so editing it is remove + add)."""
    if "id" in entry and "key" in entry:
        raise ValidationError(f"{where}.key: give an entry an id or a key, not both")
    name = entry.get("id", entry.get("key"))
    if name is None:
        return f"text {memory.content_hash[:12]}"
    field = "id" if "id" in entry else "key"
    if isinstance(name, bool) or not isinstance(name, str | int):
        raise ValidationError(f"{where}.{field}: expected text or a number, got {type(name).__name__}")
    name = str(name).strip()
    if not name or len(name) > 100 or "\n" in name or first_control(name):
        raise ValidationError(f"{where}.{field}: one line of at most 100 characters, no control characters")
    return f"key {name}"


def _seed_entry(
    entry: object, where: str, *, root: Path | None, allow_secrets: bool, now: datetime
) -> Memory:
    if not isinstance(entry, dict):
        raise ValidationError(f"{where}: expected an object with a summary, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(_SEED_FIELDS))
    if unknown:
        raise ValidationError(
            f"{where}.{unknown[0]}: unknown field: a seed entry has {', '.join(_SEED_FIELDS)}"
        )

    def field(name: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = entry.get(name, default)
        if not isinstance(value, kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise ValidationError(f"{where}.{name}: expected {names}, got {type(value).__name__}")
        return value

    if "summary" not in entry:
        raise ValidationError(f"{where}.summary: missing: every seed entry needs a one-line summary")
    summary: str = field("summary", str, "")
    details: str = field("details", str, "")
    category: str = field("category", str, "context")
    priority: str = field("priority", str, "normal")
    scope: str = field("scope", str, "project")
    pinned: bool = field("pinned", bool, False)
    raw_files: list[Any] = field("files", list, [])
    checks: list[tuple[str, Callable[[], object]]] = [
        ("summary", lambda: check_summary(summary)),
        ("category", lambda: check_choice("category", category, CATEGORIES)),
        ("priority", lambda: check_choice("priority", priority, PRIORITIES)),
        ("scope", lambda: check_choice("scope", scope, _SEED_SCOPES)),
    ]
    for name, check in checks:
        try:
            check()
        except ValidationError as exc:
            raise ValidationError(f"{where}.{name}: {exc}") from None
    files: list[str] = []
    for position, item in enumerate(raw_files):
        if not isinstance(item, str):
            raise ValidationError(
                f"{where}.files[{position}]: expected a path string, got {type(item).__name__}"
            )
        try:
            path = normalize_path(item, root if scope == "project" else None)
        except ValidationError as exc:
            raise ValidationError(f"{where}.files[{position}]: {exc}") from None
        if path.startswith(("/", "../")) or path == "..":
            raise ValidationError(
                f"{where}.files[{position}]: {item!r} must be relative to the repository root"
            )
        files.append(path)
    if not allow_secrets:
        kind = find_secret(f"{summary}\n{details}")
        if kind:
            raise SecretError(
                f"{where}: looks like it contains a credential ({kind}): "
                "remove it, or allow secrets explicitly"
            )
    memory = Memory(
        id=new_id(),
        summary=summary,
        details=details,
        category=category,
        scope=scope,
        files=tuple(dict.fromkeys(files)),
        priority=priority,
        pinned=pinned,
        origin="seed",
        created=now,
        updated=now,
    )
    try:
        return validate(memory)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None


def claude_memory_dir(repo: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps its auto-memory notes for the repository at `repo`.

    `~/.claude/projects/<repo path with every non-alphanumeric character as '-'>/memory`
    (`$CLAUDE_CONFIG_DIR` replaces `~/.claude`).

    >>> claude_memory_dir(Path("/home/u/my.repo"), {"CLAUDE_CONFIG_DIR": "/c"}).as_posix()
    '/c/projects/-home-u-my-repo/memory'
    """
    env = os.environ if env is None else env
    base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude"
    encoded = re.sub(r"[^A-Za-z0-9]", "-", repo.as_posix())
    return base / "projects" / encoded / "memory"


def parse_claude_memory(
    directory: Path,
    *,
    origin: str = "agent",
    allow_secrets: bool = False,
    log: Callable[[str], None] | None = None,
) -> list[Memory]:
    """One `Memory` per Claude Code memory note in `directory` (the MEMORY.md index is skipped).

    A note is markdown with frontmatter `name`, `description` and `type` (user | feedback | project |
    reference); the description becomes the summary, the body the details, the type a category
    (`CLAUDE_TYPE_CATEGORY`). `origin` is "agent" by default because Claude wrote these notes, not the
    person. Notes that cannot be used (empty, credentials) are skipped and reported through `log`.
    """
    if not directory.is_dir():
        raise ValidationError(f"{directory} is not a directory: give Claude Code's memory directory")
    if not any(directory.glob("*.md")) and (directory / "memory").is_dir():
        directory = directory / "memory"  # given the project directory instead
    now = utcnow()
    out: list[Memory] = []
    for note in sorted(directory.glob("*.md")):
        if note.name.lower() == _INDEX_NAME:
            continue  # the index only points at the notes
        try:
            memory = _claude_note(note, origin=origin, allow_secrets=allow_secrets, now=now)
        except ValidationError as exc:
            if log is not None:
                log(f"skipped {note}: {exc}")
            continue
        out.append(memory)
    return out


def _claude_note(note: Path, *, origin: str, allow_secrets: bool, now: datetime) -> Memory:
    try:
        text = note.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read it: {exc}") from None
    meta, body = split_frontmatter(text)
    raw_type = meta.get("type")
    nested = meta.get("metadata")
    if raw_type is None and isinstance(nested, dict):
        raw_type = nested.get("type")
    note_type = str(raw_type or "").strip().lower()
    # An unknown or missing type is still a note worth keeping; context claims the least about it.
    category = CLAUDE_TYPE_CATEGORY.get(note_type, "context")
    description = " ".join(str(meta.get("description") or "").split())
    name = " ".join(str(meta.get("name") or "").split())
    body = body.strip()
    summary = description or name or _first_line(body)
    if not summary:
        raise ValidationError("no description, name or text")
    summary, overflow = fit_summary(summary)
    if overflow:  # the whole line stays in the body
        body = f"{overflow}\n\n{body}".strip()
    if not allow_secrets:
        kind = find_secret(f"{summary}\n{body}")
        if kind:
            raise SecretError(f"looks like it contains a credential ({kind})")
    return validate(
        Memory(
            id=new_id(),
            summary=summary,
            details=body,
            category=category,
            # A `user` note is about the person, not the repository: it follows them (DESIGN §1 scopes).
            scope="user" if note_type == "user" else "project",
            origin=origin,
            created=now,
            updated=now,
        )
    )


def _first_line(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter fields, body) of a markdown note written by another tool: YAML, or `key: value` lines
    when it is not valid YAML; ({}, text) without frontmatter."""
    text = text.lstrip("\ufeff")
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text
    return _frontmatter_fields(match.group(1)), text[match.end() :]


def _frontmatter_fields(block: str) -> dict[str, Any]:
    import yaml  # lazy: only imports need it

    try:
        data = yaml.safe_load(block)
    except yaml.YAMLError:
        data = None
    if isinstance(data, dict):
        return {str(k): v for k, v in data.items()}
    # Claude writes frontmatter by hand and an unquoted "description: a: b" is not valid YAML; read
    # `key: value` lines literally instead of losing the note.
    fields: dict[str, Any] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip("\"'")
    return fields
