"""Rule files (AGENTS.md and kin, DESIGN §6): find them and split them into one unit per rule.

A rule file is markdown that an agent loads for every file under its directory. tether turns each rule
into a memory scoped to that directory, so recall can hand over the two or three rules that matter instead
of the whole file. Splitting is deterministic and line-anchored: the same file always yields the same units
with the same line numbers, which is what lets `rules sync` (and the quality benchmark) follow a rule
across edits.

    >>> [u.text for u in split_rules("AGENTS.md", "# Tests\\n\\n- Use `pytest`.\\n- No mocks.\\n")]
    ['- Use `pytest`.', '- No mocks.']
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tether.errors import ValidationError
from tether.fs import RefusedFile, read_limited
from tether.model.limits import RULE_FILE_MAX_BYTES

RULE_FILE_NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")

# Directories a walk never enters: VCS data, dependencies, virtualenvs, caches and build output. Rule files
# in there belong to someone else's project (a vendored package's AGENTS.md is not this repo's rule).
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".tether",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".next",
        "dist",
        "build",
        "target",
    }
)


@dataclass(frozen=True)
class RuleUnit:
    """One rule of a rule file: a bullet (with its sub-bullets), a paragraph or a table."""

    path: str  # repo-relative POSIX path of the rule file
    line: int  # 1-based first line of the unit
    end_line: int  # 1-based last line (inclusive)
    text: str  # the rule as markdown; a code fence stays with the rule it belongs to
    heading: str  # heading trail, e.g. "Testing > Fixtures" ("" if none)
    scope: str  # directory the rule applies to, repo-relative with trailing "/", "" for the repo root
    globs: tuple[str, ...]  # for .cursor/rules/*.mdc: its `globs` frontmatter; else ()


def is_rule_file(path: str) -> bool:
    """Whether a repo-relative POSIX path names a rule file an agent would load.

    >>> is_rule_file("pkg/AGENTS.md"), is_rule_file(".cursor/rules/style.mdc"), is_rule_file("README.md")
    (True, True, False)
    """
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    name = parts[-1]
    if name in RULE_FILE_NAMES:
        return True
    if name.endswith(".mdc"):
        return any(parts[i] == ".cursor" and parts[i + 1] == "rules" for i in range(len(parts) - 2))
    return name == "copilot-instructions.md" and len(parts) >= 2 and parts[-2] == ".github"


def rule_scope(path: str) -> str:
    """The directory a rule file governs, with a trailing "/" ("" for the repo root).

    `.cursor/rules/*.mdc` and `.github/copilot-instructions.md` govern the directory that holds `.cursor/`
    or `.github/`; every other rule file governs its own directory.

    >>> rule_scope("web/AGENTS.md"), rule_scope("web/.cursor/rules/a/b.mdc"), rule_scope("CLAUDE.md")
    ('web/', 'web/', '')
    """
    parts = PurePosixPath(path).parts[:-1]
    for marker in (".cursor", ".github"):
        if marker in parts and (marker == ".github" or path.endswith(".mdc")):
            parts = parts[: len(parts) - 1 - parts[::-1].index(marker)]
            break
    return "".join(f"{p}/" for p in parts)


def find_rule_files(root: Path, files: Iterable[str] | None = None) -> list[str]:
    """Repo-relative POSIX paths of every rule file under `root`, sorted.

    `files` is the repository's file list when the caller knows it (`git ls-files`); otherwise the tree is
    walked, skipping `.git`, dependency, cache and build directories. A symlink to another rule file of the
    same repository (`CLAUDE.md -> AGENTS.md`) is left out: it is the same rules, not a second copy.

        find_rule_files(Path("."), ["AGENTS.md", "web/CLAUDE.md", "src/app.py"])
    """
    if files is None:
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            rel = Path(dirpath).relative_to(root).as_posix()
            prefix = "" if rel == "." else f"{rel}/"
            found.extend(prefix + name for name in filenames if is_rule_file(prefix + name))
    else:
        found = [f for f in files if is_rule_file(f)]
    candidates = set(found)
    resolved_root = root.resolve()
    kept = []
    for rel in sorted(candidates):
        full = root / rel
        if full.is_symlink():
            target = full.resolve()
            if target.is_relative_to(resolved_root):
                target_rel = target.relative_to(resolved_root).as_posix()
                if target_rel != rel and target_rel in candidates:
                    continue
        kept.append(rel)
    return kept


def read_rule_file(root: Path, path: str) -> list[RuleUnit]:
    """Read and split one rule file; `path` is relative to `root`.

    Raises ValidationError naming the file when it cannot be read or is not UTF-8 text.
    """
    full = root / path
    try:
        # Never a FIFO's wait, a huge file, or a link out of the repository (a committed AGENTS.md ->
        # ~/.bash_history would put private text into every agent's context).
        data = read_limited(full, RULE_FILE_MAX_BYTES, inside=root)
    except RefusedFile as exc:
        raise ValidationError(f"{path}: rule file skipped: {exc}") from exc
    except OSError as exc:
        raise ValidationError(
            f"{path}: cannot read rule file ({exc.strerror}); check that it exists"
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{path}: rule file is not UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8"
        ) from exc
    return split_rules(path, text)


# --- splitting ---------------------------------------------------------------------------------------

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})")
_BULLET_RE = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_HRULE_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEP_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
# A paragraph made only of Claude Code imports (`@AGENTS.md`, `@docs/style.md`) pulls in another file;
# it is not a rule of its own.
_IMPORT_ONLY_RE = re.compile(r"^\s*(@[\w./~-]+\s*)+$")


def _width(line: str) -> int:
    """Leading whitespace width, tabs counted as 4 columns."""
    stripped = line.lstrip(" \t")
    return len(line[: len(line) - len(stripped)].expandtabs(4))


def _fence_end(lines: list[str], start: int) -> int:
    """Index of the line closing the fence opened at `start` (the last line if it never closes)."""
    match = _FENCE_RE.match(lines[start])
    assert match is not None
    marker = match.group(2)
    for i in range(start + 1, len(lines)):
        close = _FENCE_RE.match(lines[i])
        closes = close is not None and close.group(2)[0] == marker[0] and len(close.group(2)) >= len(marker)
        if closes and not lines[i].strip().lstrip(marker[0]).strip():
            return i
    return len(lines) - 1


def _parse_frontmatter(lines: list[str]) -> tuple[int, dict[str, str | list[str]]]:
    """Lines taken by a leading `---` YAML block, and its top-level keys (a tiny subset of YAML).

    Cursor's `.mdc` frontmatter has `description`, `globs` (a comma-separated string or a list) and
    `alwaysApply`; nothing deeper is needed, so no YAML parser is pulled into the core for it.
    """
    if not lines or lines[0].strip() != "---":
        return 0, {}
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return 0, {}
    fields: dict[str, str | list[str]] = {}
    key: str | None = None
    for raw in lines[1:end]:
        item = re.match(r"^\s+-\s*(.*)$", raw)
        if item and key is not None:
            current = fields.get(key)
            values = current if isinstance(current, list) else []
            values.append(_unquote(item.group(1)))
            fields[key] = values
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", raw)
        if pair:
            key, value = pair.group(1), pair.group(2).strip()
            if value.startswith("[") and value.endswith("]"):
                fields[key] = [_unquote(v) for v in value[1:-1].split(",") if v.strip()]
            else:
                fields[key] = _unquote(value)
    return end + 1, fields


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _globs(value: str | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else value.split(",")
    return tuple(g for g in (_unquote(i) for i in items) if g)


@dataclass
class _Block:
    kind: str  # "item", "para", "table", "fence"
    start: int  # 0-based line index
    end: int  # inclusive
    heading: str


def _blocks(lines: list[str], first: int, top_context: str) -> list[_Block]:
    """Split the body into top-level blocks, each with the heading trail in force where it starts."""
    blocks: list[_Block] = []
    trail: list[tuple[int, str]] = []  # (level, title)

    def heading() -> str:
        names = [top_context] if top_context else []
        return " > ".join(names + [t for _, t in trail])

    def set_heading(level: int, title: str) -> None:
        while trail and trail[-1][0] >= level:
            trail.pop()
        if title:
            trail.append((level, title))

    i = first
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith("<!--"):
            while i < n and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        atx = _ATX_RE.match(line)
        if atx:
            set_heading(len(atx.group(1)), (atx.group(2) or "").strip())
            i += 1
            continue
        if _FENCE_RE.match(line) and _width(line) <= 3:
            end = _fence_end(lines, i)
            blocks.append(_Block("fence", i, end, heading()))
            i = end + 1
            continue
        if _HRULE_RE.match(line):
            i += 1
            continue
        bullet = _BULLET_RE.match(line)
        if bullet and _width(line) <= 3:
            end = _item_end(lines, i, _width(line))
            blocks.append(_Block("item", i, end, heading()))
            i = end + 1
            continue
        if (
            stripped.startswith("|")
            and i + 1 < n
            and _TABLE_SEP_RE.match(lines[i + 1])
            and "|" in lines[i + 1]
        ):
            end = i + 1
            while end + 1 < n and lines[end + 1].strip().startswith("|"):
                end += 1
            blocks.append(_Block("table", i, end, heading()))
            i = end + 1
            continue
        # A paragraph: runs until a blank line or the start of another block.
        end = i
        while end + 1 < n:
            nxt = lines[end + 1]
            if not nxt.strip() or _ATX_RE.match(nxt) or _FENCE_RE.match(nxt) or _HRULE_RE.match(nxt):
                break
            if _BULLET_RE.match(nxt) and _width(nxt) <= 3:
                break
            if _SETEXT_RE.match(nxt):
                break
            end += 1
        if end + 1 < n and _SETEXT_RE.match(lines[end + 1]) and lines[end + 1].strip():
            title = " ".join(lines[k].strip() for k in range(i, end + 1))
            set_heading(1 if lines[end + 1].strip()[0] == "=" else 2, title)
            i = end + 2
            continue
        blocks.append(_Block("para", i, end, heading()))
        i = end + 1
    return blocks


def _item_end(lines: list[str], start: int, marker_indent: int) -> int:
    """Last line of the list item starting at `start`: nested items, continuations and fences included."""
    end = start
    i = start + 1
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            # A blank line ends the item unless indented content follows it.
            j = i
            while j < n and not lines[j].strip():
                j += 1
            if j < n and _width(lines[j]) > marker_indent and not _ATX_RE.match(lines[j]):
                i = j
                continue
            return end
        width = _width(line)
        if width <= marker_indent:
            if (
                _BULLET_RE.match(line)
                or _ATX_RE.match(line)
                or _FENCE_RE.match(line)
                or _HRULE_RE.match(line)
            ):
                return end
            if line.strip().startswith("|"):
                return end
            # Lazy continuation: an unindented line right after the item's text still belongs to it.
        if _FENCE_RE.match(line) and width > marker_indent:
            i = _fence_end(lines, i)
        end = i
        i += 1
    return end


def split_rules(path: str, text: str) -> list[RuleUnit]:
    """Split a rule file's text into rules: one unit per top-level bullet, paragraph or table.

    Headings are not units; they become each unit's `heading` trail. A code fence belongs to the rule
    before it in the same section (or stands alone when it opens a section). A paragraph that ends in ":"
    and introduces a list is context for the list's bullets, not a rule. For `.mdc` files the frontmatter's
    `globs` are kept and its `description` heads the trail; any other frontmatter is skipped.

        split_rules("AGENTS.md", "## Style\\n- Use `ruff`.\\n  ```sh\\n  ruff check\\n  ```\\n")
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    body_start, front = _parse_frontmatter(lines)
    description = front.get("description")
    top_context = description.strip() if isinstance(description, str) and path.endswith(".mdc") else ""
    globs = _globs(front.get("globs")) if path.endswith(".mdc") else ()
    scope = rule_scope(path)

    blocks = _blocks(lines, body_start, top_context)
    merged: list[_Block] = []
    for k, block in enumerate(blocks):
        if block.kind == "fence" and merged and merged[-1].heading == block.heading:
            merged[-1].end = block.end
            continue
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        if (
            block.kind == "para"
            and nxt is not None
            and nxt.kind == "item"
            and nxt.heading == block.heading
            and lines[block.end].rstrip().endswith(":")
        ):
            lead = " ".join(lines[j].strip() for j in range(block.start, block.end + 1)).rstrip(":").strip()
            _retitle_list(blocks, k + 1, block.heading, lead)
            continue
        merged.append(block)

    units = []
    for block in merged:
        chunk = "\n".join(line.rstrip() for line in lines[block.start : block.end + 1])
        body = textwrap.dedent(chunk.expandtabs(4)).strip("\n")
        if not body.strip() or (block.kind == "para" and _IMPORT_ONLY_RE.match(body)):
            continue
        units.append(
            RuleUnit(
                path=path,
                line=block.start + 1,
                end_line=block.end + 1,
                text=body,
                heading=block.heading,
                scope=scope,
                globs=globs,
            )
        )
    return units


def _retitle_list(blocks: list[_Block], first: int, heading: str, lead: str) -> None:
    """Put a list's lead-in sentence into the heading trail of every bullet of that list."""
    trail = f"{heading} > {lead}" if heading else lead
    k = first
    while k < len(blocks) and blocks[k].heading == heading and blocks[k].kind in ("item", "fence"):
        blocks[k].heading = trail
        k += 1
