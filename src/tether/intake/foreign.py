"""`tether import --from FORMAT PATH`: memory from the tools people come from.

- `claude`: Claude Code's memory notes (`tether.intake.seeds.parse_claude_memory`).
- `basic-memory`: markdown notes with frontmatter `title`, `type`, `permalink`, `tags`, observations
  `- [category] text #tag (context)` and relations `- relation_type [[Target]]`. Each note is one memory
  (summary its title, details its body as written, so relations stay wikilinks that resolve by title), and
  each observation whose category says it is a decision, a gotcha or a preference (`OBSERVATION_CATEGORY`)
  is a memory of its own as well, linking back to its note: those are what recall should find one by one.
- `mcp-memory`: the official MCP memory server's JSON lines: each entity
  (`{"type": "entity", "name", "entityType", "observations"}`) is one memory (summary its name; details its
  type, its observations as a list and its relations as `- relationType [[to]]` wikilinks).
- `claude-mem`: the `observations` table of claude-mem's SQLite database (its schema as of its migration 35:
  `project`, `type`, `title`, `subtitle`, `narrative`, `facts` and `concepts` as JSON lists, `files_modified`
  as a JSON list of paths; older rows may have only `text`), rows of this project only (`parse_claude_mem`).

Parsing writes nothing; `import_memories` stores through `Memories.add` (validation, secret refusal, dedupe
by content, so importing twice writes nothing new), or with `dry_run` only says what it would write.

>>> report = import_memories(ws, parse_basic_memory(Path("notes")), dry_run=True)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import ValidationError
from tether.intake.seeds import split_frontmatter
from tether.memories import Memories
from tether.model import labels
from tether.model.limits import ALIASES_MAX, TAGS_MAX
from tether.model.memory import Memory, content_hash, new_id, validate
from tether.model.text import fit_summary, one_line
from tether.model.timestamps import utcnow

__all__ = [
    "FORMATS",
    "OBSERVATION_CATEGORY",
    "ImportReport",
    "import_memories",
    "parse_basic_memory",
    "parse_claude_mem",
    "parse_mcp_memory",
]

FORMATS = ("claude", "basic-memory", "mcp-memory", "claude-mem")

# basic-memory's observation categories are free text ([tech], [idea], [decision], ...). Only the ones that
# plainly say what tether's categories mean become memories of their own; the rest stay in their note.
OBSERVATION_CATEGORY = {
    "decision": "decision",
    "decisions": "decision",
    "gotcha": "gotcha",
    "pitfall": "gotcha",
    "warning": "gotcha",
    "caveat": "gotcha",
    "bug": "gotcha",
    "issue": "gotcha",
    "preference": "pref",
    "pref": "pref",
    "convention": "pref",
    "rule": "pref",
    "style": "pref",
}

_OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]\[]*[^\]\[\sxX][^\]\[]*)\]\s+(.+?)\s*$")
# (From the start of a run of blanks only: tried inside a long one, `\s*` read to its end from every blank.)
_CONTEXT = re.compile(r"(?<!\s)\s*\(([^()]*)\)\s*$")
_TAG = re.compile(r"(?<![\w&/])#([\w][\w/-]*)")
Log = Callable[[str], None]


@dataclass
class ImportReport:
    """What an import wrote (or, in a dry run, would write)."""

    new: list[Memory] = field(default_factory=list)
    present: int = 0
    skipped: list[str] = field(default_factory=list)  # why, one line each
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "new": [
                {"id": m.id, "summary": m.summary, "category": m.category, "scope": m.scope} for m in self.new
            ],
            "present": self.present,
            "skipped": self.skipped,
        }


# -- basic-memory ---------------------------------------------------------------------------------------


def parse_basic_memory(path: Path, *, log: Log | None = None) -> list[Memory]:
    """Memories from a basic-memory project folder (every `*.md` below it) or one note (module docstring)."""
    if not path.exists():
        raise ValidationError(f"{path}: no such file or directory: give a basic-memory folder or note")
    notes = [path] if path.is_file() else sorted(p for p in path.rglob("*.md") if p.is_file())
    out: list[Memory] = []
    for note in notes:
        try:
            out.extend(_basic_note(note, path if path.is_dir() else note.parent))
        except ValidationError as exc:
            if log is not None:
                log(f"skipped {note}: {exc}")
    return out


def _basic_note(note: Path, base: Path) -> list[Memory]:
    try:
        text = note.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read it: {exc}") from None
    meta, body = split_frontmatter(text)
    title = one_line(str(meta.get("title") or note.relative_to(base).with_suffix("").as_posix()))
    lines = body.strip("\n").splitlines()
    if lines and lines[0].lstrip("#").strip() == title and lines[0].startswith("#"):
        lines = lines[1:]  # the title again, as the first heading
    tags = _labels(labels.tags, _list(meta.get("tags")))
    aliases = _labels(labels.aliases, _list(meta.get("aliases")))
    out = [_memory(title, "\n".join(lines).strip(), "context", tags=tags, aliases=aliases)]
    for line in lines:
        found = _OBSERVATION.match(line)
        if not found:
            continue
        category = OBSERVATION_CATEGORY.get(found.group(1).strip().lower())
        if category is None:
            continue
        observation = found.group(2)
        context = _CONTEXT.search(observation)
        if context:
            observation = observation[: context.start()]
        obs_tags = _TAG.findall(observation)
        summary = " ".join(_TAG.sub("", observation).split())
        parts = [context.group(1).strip() if context else "", f"From [[{title}]]"]
        if summary:
            details = "\n\n".join(p for p in parts if p)
            out.append(_memory(summary, details, category, tags=_labels(labels.tags, obs_tags)))
    return out


def _list(value: object) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.replace(",", " ").split() if part.strip()]
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    return []


# -- the MCP memory server ----------------------------------------------------------------------------


def parse_mcp_memory(path: Path, *, log: Log | None = None) -> list[Memory]:
    """Memories from the MCP memory server's `memory.jsonl` (module docstring). A line that is not JSON
    is an error naming it (nothing is imported); a line of another type is skipped and logged."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path}: not UTF-8 text") from None
    entities: dict[str, dict[str, Any]] = {}
    relations: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValidationError(f"{path}: line {number}: not JSON ({exc}): nothing was imported") from None
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity" and isinstance(item.get("name"), str) and item["name"].strip():
            entities.setdefault(item["name"], item)
        elif kind == "relation" and all(isinstance(item.get(k), str) for k in ("from", "to", "relationType")):
            relations.append((number, item))
        elif log is not None:
            log(f"skipped {path} line {number}: not an entity or relation of the MCP memory server")
    linked: dict[str, list[str]] = {}
    for number, relation in relations:
        if relation["from"] not in entities:
            if log is not None:
                log(f"skipped {path} line {number}: relation from unknown entity {relation['from']!r}")
            continue
        linked.setdefault(relation["from"], []).append(f"- {relation['relationType']} [[{relation['to']}]]")
    out: list[Memory] = []
    for name, entity in entities.items():
        observations = [str(o).strip() for o in entity.get("observations") or [] if str(o).strip()]
        parts = [f"Type: {entity['entityType']}" if entity.get("entityType") else ""]
        parts.append("\n".join(f"- {o}" for o in observations))
        parts.append("\n".join(linked.get(name, [])))
        try:
            out.append(_memory(one_line(name), "\n\n".join(p for p in parts if p), "context"))
        except ValidationError as exc:
            if log is not None:
                log(f"skipped entity {name!r}: {exc}")
    return out


# -- claude-mem ---------------------------------------------------------------------------------------------


def parse_claude_mem(
    rows: list[dict[str, Any]], project: str, *, root: Path | None = None, log: Log | None = None
) -> list[Memory]:
    """Memories from claude-mem observation rows (module docstring) whose `project` is `project`: summary
    its title (else subtitle, else its text's first line), details its subtitle, narrative (or text), facts
    as a list and concepts as tags; `decision` rows are decisions, every other type (bugfix, feature,
    discovery, refactor, change) context. Modified files inside `root` become file references."""
    from tether.model.memory import normalize_path

    out: list[Memory] = []
    others: dict[str, int] = {}
    for row in rows:
        where = str(row.get("project") or "")
        if where != project:
            others[where] = others.get(where, 0) + 1
            continue
        text = str(row.get("narrative") or row.get("text") or "").strip()
        title = one_line(str(row.get("title") or row.get("subtitle") or text.partition("\n")[0]))
        if not title:
            if log is not None:
                log(f"skipped claude-mem observation {row.get('id')}: no title or text")
            continue
        subtitle = one_line(str(row.get("subtitle") or ""))
        facts = _json_list(row.get("facts"))
        concepts = _json_list(row.get("concepts"))
        parts = [subtitle if subtitle != title else "", text, "\n".join(f"- {f}" for f in facts)]
        files: list[str] = []
        for raw in _json_list(row.get("files_modified")):
            try:
                path = normalize_path(raw, root)
            except ValidationError:
                continue
            if root is not None and not path.startswith(("/", "../")):
                files.append(path)
        category = "decision" if str(row.get("type") or "").lower() == "decision" else "context"
        try:
            details = "\n\n".join(p for p in parts if p)
            memory = _memory(title, details, category, tags=_labels(labels.tags, concepts))
            out.append(memory.with_changes(files=tuple(dict.fromkeys(files))))
        except ValidationError as exc:
            if log is not None:
                log(f"skipped claude-mem observation {row.get('id')}: {exc}")
    if not out and others and log is not None:
        log(
            f"no claude-mem observations for project {project!r}; the database has "
            + ", ".join(f"{name!r} ({count})" for name, count in sorted(others.items()))
        )
    return out


def _json_list(value: object) -> list[str]:
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    return []


def _labels(check: Callable[[object], tuple[str, ...]], items: list[str]) -> tuple[str, ...]:
    """The tags (or aliases) of another tool's note that tether's rules accept (`tether.model.labels`): a
    space in a tag becomes `-`, and one that still does not pass is left out, not the whole note."""
    kept: dict[str, str] = {}
    for item in items:
        value = item.strip().replace(" ", "-") if check is labels.tags else item
        try:
            for label in check([value]):
                kept.setdefault(label.casefold(), label)
        except ValidationError:
            continue
    return tuple(kept.values())[: ALIASES_MAX if check is labels.aliases else TAGS_MAX]


def _memory(
    summary: str, details: str, category: str, *, tags: tuple[str, ...] = (), aliases: tuple[str, ...] = ()
) -> Memory:
    summary, overflow = fit_summary(summary)
    if overflow:  # the whole line stays in the details
        details = f"{overflow}\n\n{details}".strip()
    now = utcnow()
    # origin agent: these tools' notes are written by agents (over MCP) as often as by people.
    memory = Memory(
        id=new_id(),
        summary=summary,
        details=details,
        category=category,
        origin="agent",
        created=now,
        updated=now,
        tags=tags,
        aliases=aliases,
    )
    return validate(memory)


# -- storing ----------------------------------------------------------------------------------------------


def import_memories(
    ws: Memories,
    memories: list[Memory],
    *,
    scope: str | None = None,
    dry_run: bool = False,
    allow_secret: bool = False,
) -> ImportReport:
    """Store parsed memories through `Memories.add` (in `scope` when given, else each one's own). A memory
    that fails the write path's checks (a credential, an invalid field) is skipped and reported, the rest
    imported; one whose knowledge the store has in that scope counts as present."""
    report = ImportReport(dry_run=dry_run)
    for memory in memories:
        target = scope or memory.scope
        if target == "project" and ws.root is None:
            report.skipped.append(
                f"{memory.summary}: project memory but no .tether/ here (run `tether init`)"
            )
            continue
        if dry_run:
            try:
                checked = ws.admit(memory.with_changes(scope=target), allow_secret=allow_secret)
            except ValidationError as exc:
                report.skipped.append(f"{memory.summary}: {exc}")
                continue
            digest = content_hash(checked.summary, checked.details)
            if any(m.scope == target for m in ws.store.by_hash(digest)) or any(
                m.content_hash == digest and m.scope == target for m in report.new
            ):
                report.present += 1
            else:
                report.new.append(checked)
            continue
        try:
            added = ws.add(
                memory.summary,
                details=memory.details,
                category=memory.category,
                files=ws.absolute(memory.files, target),
                scope=target,
                priority=memory.priority,
                origin=memory.origin,
                tags=memory.tags,
                aliases=memory.aliases,
                allow_secret=allow_secret,
                approved=True,  # the person ran `tether import` on these
            )
        except ValidationError as exc:
            report.skipped.append(f"{memory.summary}: {exc}")
            continue
        if added.created:
            report.new.append(added.memory)
        else:
            report.present += 1
    return report
