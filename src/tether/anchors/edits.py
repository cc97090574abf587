"""Edit locations out of each agent's before-edit payload, located in the file as it is on disk.

What each agent sends (`../shared/reference/agent-integrations.md`):
- Claude Code `Edit` (`old_string`, `new_string`, `replace_all`), `MultiEdit` (`edits: [...]`), `Write`
  (`content`: the whole new file); Gemini `replace` (`old_string`, `new_string`) and `write_file`
  (`content`); Cursor `preToolUse` with the same fields, `afterFileEdit` with `edits`;
- Codex `apply_patch`: patch text (`*** Update File: path`, hunks after `@@ [context]`, lines marked ` `,
  `-`, `+`).

An `Edit` is located in the current text: an `old_string` where it occurs (the lines that differ from the
new text, not the context the agent repeated around them), a hunk at its old lines (after its `@@` context
line), a whole-file write where its text first differs from the file's.

>>> edit = Edit("a.py", old="def f():\\n    return 1\\n", new="def f():\\n    return 2\\n")
>>> locate(edit, "import os\\n\\ndef f():\\n    return 1\\n")
[(4, 4)]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tether.anchors.locations import Location

# Locations kept per edit (`replace_all` over many occurrences, a Write changing many places): the
# warnings of the first few places are what an agent can take in before one edit.
MAX_PER_EDIT = 5
# The most of an edit's new text kept for the identifier evidence (a Write of a large file).
MAX_TEXT = 4000

_PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_PATCH_MOVE_RE = re.compile(r"^\*\*\* Move to: (.+)$")


@dataclass(frozen=True)
class Edit:
    """One change an agent is about to make to `path` (as the agent named it)."""

    path: str
    old: str = ""  # the text replaced; "" with `whole` (a write) or for a hunk that only inserts
    new: str = ""
    whole: bool = False  # `new` is the file's whole new content
    all: bool = False  # every occurrence of `old` (`replace_all`)
    hint: str = ""  # a patch hunk's `@@` context line: the old text is searched after it
    changed: tuple[int, int] | None = None  # a hunk's changed lines, as offsets into `old`'s lines


def from_payload(tool: str, tool_input: dict[str, Any], payload: dict[str, Any] | None = None) -> list[Edit]:
    """The edits of one tool call (any agent's). Unknown shapes give none: a hook must not guess."""
    payload = payload or {}
    path = next(
        (
            str(v)
            for v in (tool_input.get("file_path"), tool_input.get("path"), payload.get("file_path"))
            if isinstance(v, str) and v
        ),
        "",
    )
    patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
    if tool == "apply_patch" and isinstance(patch, str):
        return parse_patch(patch)
    if not path:
        return []
    items = tool_input.get("edits") if isinstance(tool_input.get("edits"), list) else payload.get("edits")
    if isinstance(items, list):
        return [
            Edit(
                path,
                old=str(e.get("old_string") or ""),
                new=str(e.get("new_string") or ""),
                all=bool(e.get("replace_all")),
            )
            for e in items
            if isinstance(e, dict) and e.get("old_string")
        ]
    old = tool_input.get("old_string")
    if isinstance(old, str) and old:
        new = tool_input.get("new_string")
        all_ = bool(tool_input.get("replace_all") or tool_input.get("allow_multiple"))
        return [Edit(path, old=old, new=new if isinstance(new, str) else "", all=all_)]
    content = tool_input.get("content")
    if isinstance(content, str):
        return [Edit(path, new=content, whole=True)]
    return []


def parse_patch(patch: str) -> list[Edit]:
    """The hunks of a Codex patch that change existing files (added files have no place to warn about)."""
    edits: list[Edit] = []
    path = ""
    hunk: list[str] = []
    hint = ""

    def flush() -> None:
        if path and hunk:
            edits.extend(_hunk_edit(path, hunk, hint))

    for line in patch.splitlines():
        header = _PATCH_FILE_RE.match(line)
        if header or _PATCH_MOVE_RE.match(line) or line.startswith("*** End"):
            flush()
            hunk, hint = [], ""
            if header:
                path = header.group(2).strip() if header.group(1) == "Update" else ""
            continue
        if line.startswith("@@"):
            flush()
            hunk, hint = [], line[2:].strip()
            continue
        if path and line[:1] in (" ", "-", "+"):
            hunk.append(line)
        elif path and line == "":
            hunk.append(" ")  # an empty context line whose space was trimmed
    flush()
    return edits


def _hunk_edit(path: str, hunk: list[str], hint: str) -> list[Edit]:
    old = [line[1:] for line in hunk if line[0] in (" ", "-")]
    new = [line[1:] for line in hunk if line[0] in (" ", "+")]
    changed: tuple[int, int] | None = None
    index = 0  # position in `old`
    first = last = -1
    for line in hunk:
        if line[0] == "-":
            first = index if first < 0 else first
            last = index
            index += 1
        elif line[0] == "+":
            if first < 0:
                first = max(0, index - 1)
            last = max(last, min(index, len(old) - 1), first)
        else:
            index += 1
    if first >= 0 and old:
        changed = (first, max(first, min(last, len(old) - 1)))
    return [Edit(path, old="\n".join(old), new="\n".join(new), hint=hint, changed=changed)]


def locate(edit: Edit, text: str) -> list[tuple[int, int]]:
    """The lines of `text` (the file now) that `edit` changes, best first; [] when it cannot be placed."""
    lines = text.splitlines()
    if edit.whole:
        return _diff_places(lines, edit.new.splitlines())
    if not edit.old.strip():
        hinted = _find(lines, [edit.hint], 0) if edit.hint else []
        return [(hinted[0], hinted[0] + 1)] if hinted else []
    old = edit.old.splitlines()
    start_at = 0
    if edit.hint:
        hinted = _find(lines, [edit.hint], 0)
        start_at = hinted[0] - 1 if hinted else 0
    starts = _find(lines, old, start_at) or (_find(lines, old, 0) if start_at else [])
    if not starts:
        return []
    if not edit.all:
        starts = starts[:1]
    first_off, last_off = edit.changed if edit.changed is not None else _differing(old, edit.new.splitlines())
    return [(s + first_off, s + last_off) for s in starts[:MAX_PER_EDIT]]


def locations(edits: list[Edit], read: Callable[[str], str | None]) -> list[Location]:
    """Each edit located in its file as `read(path)` returns it (None: no such file, nothing to place)."""
    out: list[Location] = []
    texts: dict[str, str | None] = {}
    for edit in edits:
        if edit.path not in texts:
            texts[edit.path] = read(edit.path)
        text = texts[edit.path]
        if text is None:
            continue
        for lines in locate(edit, text):
            out.append(Location(edit.path, lines=lines, text=edit.new[:MAX_TEXT]))
    return out


def _find(lines: list[str], block: list[str], start: int) -> list[int]:
    """1-based lines where `block` starts in `lines` at or after `start` (0-based), trailing whitespace
    ignored; then, when that finds nothing, all whitespace (patches and models re-indent)."""
    if not block:
        return []
    for norm in (str.rstrip, lambda s: " ".join(s.split())):
        wanted = [norm(b) for b in block]
        head = wanted[0]
        found = [
            i + 1
            for i in range(start, len(lines) - len(block) + 1)
            if norm(lines[i]) == head and [norm(x) for x in lines[i : i + len(block)]] == wanted
        ]
        if found:
            return found
    # An old_string may start or end mid-line: match its first line as a suffix, its last as a prefix.
    if len(block) == 1:
        needle = block[0].strip()
        return [i + 1 for i in range(start, len(lines)) if needle and needle in lines[i]]
    return []


def _differing(old: list[str], new: list[str]) -> tuple[int, int]:
    """Offsets (into `old`) of the lines that differ from `new`: the context both share is left out."""
    if not old:
        return 0, 0
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    first, last = prefix, len(old) - 1 - suffix
    if last < first:  # pure insertion between old[prefix - 1] and old[prefix]
        first, last = max(0, prefix - 1), min(len(old) - 1, prefix)
    return first, last


def _diff_places(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    places: list[tuple[int, int]] = []
    import difflib  # an edit hook's only: other hooks skip its import

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            places.append((i1 + 1, i2))
        elif old:
            places.append((max(1, i1), min(len(old), i1 + 1)))
        if len(places) >= MAX_PER_EDIT:
            break
    return places
