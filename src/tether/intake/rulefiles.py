"""Rule files (AGENTS.md and kin, DESIGN §6): find them and split them into one unit per rule.

A rule file is markdown that an agent loads for every file under its directory. tether turns each rule
into a memory scoped to that directory, so recall can hand over the two or three rules that matter instead
of the whole file. The markdown is parsed (CommonMark and tables, by markdown-it-py) and split on its
block structure: one unit per top-level bullet, paragraph, block quote or table row, each with the heading
trail in force. Splitting is deterministic and line-anchored: the same file always yields the same units
with the same line numbers, which is what lets `rules sync` follow a rule across edits.

A rule file can say what its rules are with an HTML comment, which agents do not show (Claude Code strips
block comments before loading a file): `<!-- tether: gotcha -->` (or `decision`, `pref`, `context`) on a
line of its own marks the next rule, inside a rule's text marks that rule, and in a heading marks every
rule of the section. `core` marks a rule to keep pinned when the agent no longer loads the file
(`tether rules adopt`), and `skip` leaves a rule out of memory.

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
from typing import TYPE_CHECKING

from tether.errors import ValidationError
from tether.fs import RefusedFile, read_limited
from tether.model.limits import RULE_FILE_MAX_BYTES

if TYPE_CHECKING:
    from markdown_it.token import Token

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
    """One rule of a rule file: a bullet (with its sub-bullets), a paragraph, a block quote or a table row."""

    path: str  # repo-relative POSIX path of the rule file
    line: int  # 1-based first line of the unit
    end_line: int  # 1-based last line (inclusive)
    text: str  # the rule as markdown; a code fence stays with the rule it belongs to
    heading: str  # heading trail, e.g. "Testing > Fixtures" ("" if none)
    scope: str  # directory the rule applies to, repo-relative with trailing "/", "" for the repo root
    globs: tuple[str, ...]  # for .cursor/rules/*.mdc: its `globs` frontmatter; else ()
    kind: str = "para"  # para, item, list (a lead-in with its short list), row, quote, fence, html
    lead: str = ""  # the lead-in sentence of the list or table the unit is part of, without its colon
    marks: tuple[str, ...] = ()  # `<!-- tether: ... -->` words in force: a category, "core", "skip"


def is_rule_file(path: str) -> bool:
    """Whether a repo-relative POSIX path names a rule file an agent would load.

    >>> is_rule_file("pkg/AGENTS.md"), is_rule_file(".cursor/rules/style.mdc"), is_rule_file("README.md")
    (True, True, False)
    """
    # The name alone settles most paths, without a PurePosixPath (a session start asks of every file).
    name = path.rstrip("/").rpartition("/")[2]
    if name in RULE_FILE_NAMES:
        return True
    if not (name.endswith(".mdc") or name == "copilot-instructions.md"):
        return False
    parts = PurePosixPath(path).parts
    if name.endswith(".mdc"):
        return any(parts[i] == ".cursor" and parts[i + 1] == "rules" for i in range(len(parts) - 2))
    return name == "copilot-instructions.md" and len(parts) >= 2 and parts[-2] == ".github"


def rule_scope(path: str) -> str:
    """The directory a rule file governs, with a trailing "/" ("" for the repo root).

    Every rule file governs its own directory, except where the agent reads it on behalf of another:
    `.cursor/rules/**/*.mdc` governs the directory holding `.cursor/`, `.github/copilot-instructions.md`
    the one holding `.github/`, and `.claude/CLAUDE.md` (Claude Code's other place for a project's
    CLAUDE.md) the one holding `.claude/`. Any other file under `.github/` or `.cursor/` (an AGENTS.md
    in `.github/workflows/`) governs its own directory.

    >>> rule_scope("web/AGENTS.md"), rule_scope("web/.cursor/rules/a/b.mdc"), rule_scope("CLAUDE.md")
    ('web/', 'web/', '')
    >>> rule_scope(".github/copilot-instructions.md"), rule_scope(".github/workflows/AGENTS.md")
    ('', '.github/workflows/')
    """
    parts = PurePosixPath(path).parts
    directory = parts[:-1]
    name = parts[-1] if parts else ""
    if name.endswith(".mdc"):
        cursor = [i for i in range(len(parts) - 2) if parts[i] == ".cursor" and parts[i + 1] == "rules"]
        if cursor:
            directory = parts[: cursor[-1]]
    elif (name, directory[-1:]) in (("copilot-instructions.md", (".github",)), ("CLAUDE.md", (".claude",))):
        directory = directory[:-1]
    return "".join(f"{p}/" for p in directory)


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

# `<!-- tether: gotcha -->`, `<!-- tether: decision, core -->`: what a rule file says about its rules.
MARKER_RE = re.compile(r"<!--\s*tether\s*:\s*([^>]*?)\s*-->", re.IGNORECASE)
MARK_WORDS = ("pref", "decision", "gotcha", "context", "core", "skip")
# A paragraph made only of Claude Code imports (`@AGENTS.md`, `@docs/style.md`) pulls in another file;
# it is not a rule of its own.
_IMPORT_ONLY_RE = re.compile(r"^\s*(@[\w./~-]+\s*)+$")
_PIPE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# Matched against the stripped line: a long run of blanks at either end made `\s*` beside `\s*` try every split.
_TABLE_SEPARATOR = re.compile(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?")
_EMPHASIZED = re.compile(r"^\s*(\*\*|__|\*|_)[^*_]+\1\s*:?\s*$")
# A list whose every item is this short is one thought with its lead-in ("Before pushing run: - `lint`
# - `test`"): items of four words stand for nothing alone. Longer items are rules of their own, each
# keeping the lead-in as its context.
SHORT_ITEM_WORDS = 8
# A lead-in this short in front of a code block is a label on an example of the rule before it
# ("Correct:", "**Incorrect: oversized types**", "Example:"), not a rule of its own.
LABEL_WORDS = 5


def _marks(text: str) -> set[str]:
    """The marker words in `text` (unknown words are ignored: a marker is a hint, not a format)."""
    found: set[str] = set()
    for match in MARKER_RE.finditer(text):
        found.update(w for w in re.split(r"[\s,]+", match.group(1).lower()) if w in MARK_WORDS)
    return found


def _parse_frontmatter(lines: list[str]) -> tuple[int, dict[str, str | list[str]]]:
    """Lines taken by a leading `---` YAML block, and its top-level keys (a tiny subset of YAML).

    Cursor's `.mdc` frontmatter has `description`, `globs` (a comma-separated string or a list) and
    `alwaysApply`; nothing deeper is needed, so no YAML parser is pulled in for it.
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
    """A top-level markdown block: where it is (0-based, end exclusive) and what is in force there."""

    kind: str  # para, item, fence, table, quote, html
    start: int
    end: int
    heading: str
    marks: set[str]
    text: str = ""  # a paragraph's inline text
    group: int = -1  # list items: which list; table: which table
    rows: tuple[int, ...] = ()  # tables: each body row's line
    header: str = ""  # tables: the header row and its separator
    lead: str = ""
    merged: bool = False  # a lead-in folded into the block after it


def markdown_tokens(text: str) -> list[Token]:
    """The block and inline tokens of a markdown text (CommonMark with tables and raw HTML), lines mapped."""
    from markdown_it import MarkdownIt  # lazy: ~30 ms to import, and only a rule sync needs it

    return MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)


def _blocks(lines: list[str], first: int, top_context: str) -> list[_Block]:
    """The body's top-level blocks in order, each with the heading trail and section markers in force."""
    source = "\n".join([""] * first + lines[first:])  # frontmatter blanked: line numbers stay put
    tokens = markdown_tokens(source)
    blocks: list[_Block] = []
    trail: list[tuple[int, str, set[str]]] = []  # (level, title, the heading's markers)
    pending: set[str] = set()  # markers of a comment line, for the next block

    # A file's one H1, when it comes first, is the document's title ("Codex Guidelines for Langfuse",
    # "Project rules"): it names the file, not a topic, and in every rule's trail it would make a query
    # for "rules" or "guidelines" match all of them. Its markers still apply.
    headings = [t for t in tokens if t.type == "heading_open" and t.level == 0 and t.map]
    one_title = bool(headings) and [t.tag for t in headings].count("h1") == 1 and headings[0].tag == "h1"
    title_line = headings[0].map[0] if one_title and headings[0].map else None

    def heading() -> str:
        names = [top_context] if top_context else []
        return " > ".join(names + [t for level, t, _ in trail if t and level])

    def section_marks() -> set[str]:
        return set().union(*(m for _, _, m in trail)) if trail else set()

    def own(start: int, end: int) -> set[str]:
        return section_marks() | _marks("\n".join(lines[start:end]))

    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.level != 0 or token.map is None:
            i += 1
            continue
        start, end = token.map
        if token.type == "heading_open":
            level = int(token.tag[1:])
            content = tokens[i + 1].content
            while trail and trail[-1][0] >= level:
                trail.pop()
            title = MARKER_RE.sub("", content).strip()
            # level 0 marks the document title: kept for its markers, left out of the trail's text
            trail.append((0 if start == title_line else level, title, _marks(content)))
            pending = set()
        elif token.type == "html_block" and _comment_only(token.content):
            pending |= _marks(token.content)
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            depth = 0
            j = i
            while j < len(tokens):
                inner = tokens[j]
                depth += inner.nesting if inner.type.endswith(("_list_open", "_list_close")) else 0
                if inner.type == "list_item_open" and inner.level == 1 and inner.map is not None:
                    a, b = inner.map
                    blocks.append(_Block("item", a, b, heading(), own(a, b) | pending, group=i))
                    pending = set()
                if depth == 0 and j > i:
                    break
                j += 1
            i = j
        elif token.type == "table_open":
            rows = []
            j = i
            while tokens[j].type != "table_close":
                row_map = tokens[j].map
                if tokens[j].type == "tr_open" and row_map is not None and row_map[0] > start:
                    rows.append(row_map[0])
                j += 1
            table = _Block("table", start, end, heading(), own(start, end) | pending, group=i)
            table.rows = tuple(rows)
            table.header = "\n".join(line.strip() for line in lines[start : start + 2])
            blocks.append(table)
            pending = set()
            i = j
        elif token.type in ("paragraph_open", "fence", "code_block", "blockquote_open", "html_block"):
            kind = {"paragraph_open": "para", "blockquote_open": "quote", "html_block": "html"}
            text = tokens[i + 1].content if token.type == "paragraph_open" else ""
            if not (token.type == "paragraph_open" and _IMPORT_ONLY_RE.match(text)):
                block = _Block(
                    kind.get(token.type, "fence"), start, end, heading(), own(start, end) | pending
                )
                block.text = text
                blocks.append(block)
            pending = set()
        i += 1
    return _loose_tables(blocks, lines)


def _pipe_row(block: _Block, lines: list[str]) -> bool:
    return block.kind == "para" and block.end - block.start == 1 and bool(_PIPE_ROW.match(lines[block.start]))


def _loose_tables(blocks: list[_Block], lines: list[str]) -> list[_Block]:
    """Tables written with a blank line between rows (generated files do this) are paragraphs to a
    markdown parser; consecutive one-line `| a | b |` paragraphs of one section become a table again."""
    out: list[_Block] = []
    k = 0
    while k < len(blocks):
        run = [blocks[k]]
        while (
            _pipe_row(run[0], lines)
            and k + len(run) < len(blocks)
            and _pipe_row(blocks[k + len(run)], lines)
            and blocks[k + len(run)].heading == run[0].heading
        ):
            run.append(blocks[k + len(run)])
        if len(run) < 2:
            out.append(blocks[k])
            k += 1
            continue
        head = lines[run[0].start].strip()
        body = run[1:]
        separator = "|" + "---|" * max(1, head.count("|") - 1)
        if _TABLE_SEPARATOR.fullmatch(lines[body[0].start].strip()):
            separator, body = lines[body[0].start].strip(), body[1:]
        table = _Block(
            "table", run[0].start, run[-1].end, run[0].heading, set().union(*(b.marks for b in run))
        )
        table.rows = tuple(b.start for b in body)
        table.header = f"{head}\n{separator}"
        out.append(table)
        k += len(run)
    return out


def _is_lead_in(block: _Block) -> bool:
    return block.kind == "para" and _without_trailing_markup(MARKER_RE.sub("", block.text)).endswith(":")


def _words(text: str) -> int:
    return len(re.findall(r"[\w`]+", text))


def _lead_text(block: _Block) -> str:
    text = _without_trailing_markup(MARKER_RE.sub("", block.text)).rstrip(":")
    return " ".join(re.sub(r"\*\*|__", "", text).strip("*_ ").split())


def _merge(blocks: list[_Block], lines: list[str]) -> list[_Block]:
    """Fold what belongs together: a code block into the rule before it, a lead-in into its list or
    table, a labelled example ("Correct:" + code) into the rule it illustrates."""
    out: list[_Block] = []
    k = 0
    while k < len(blocks):
        block = blocks[k]
        nxt = blocks[k + 1] if k + 1 < len(blocks) and blocks[k + 1].heading == block.heading else None
        prev = out[-1] if out and out[-1].heading == block.heading else None
        attachable = prev is not None and prev.kind in ("para", "item", "list", "quote")
        if block.kind == "fence" and prev is not None and attachable:
            prev.end = block.end
            k += 1
            continue
        labelled = _is_lead_in(block) or (block.kind == "para" and bool(_EMPHASIZED.match(block.text)))
        example = labelled and _words(block.text) <= LABEL_WORDS and nxt is not None and nxt.kind == "fence"
        if example and prev is not None and attachable and nxt is not None:
            prev.end = nxt.end
            k += 2
            continue
        if _is_lead_in(block) and nxt is not None:
            if nxt.kind == "item":
                items = [b for b in blocks[k + 1 :] if b.kind == "item" and b.group == nxt.group]
                if all(_short_item(lines, b) for b in items):
                    block.kind, block.end = "list", items[-1].end
                    block.marks |= set().union(*(b.marks for b in items))
                    out.append(block)
                    k += 1 + len(items)
                    continue
                for item in items:
                    item.lead = _lead_text(block)
                    item.marks |= block.marks
                k += 1
                continue
            if nxt.kind == "table":
                nxt.lead = _lead_text(block)
                nxt.marks |= block.marks
                k += 1
                continue
        out.append(block)
        k += 1
    return out


def _short_item(lines: list[str], block: _Block) -> bool:
    body = [line for line in lines[block.start : block.end] if line.strip()]
    return len(body) == 1 and _words(body[0]) <= SHORT_ITEM_WORDS


def _chunk(lines: list[str], start: int, end: int) -> tuple[str, int]:
    """The dedented markdown of lines [start, end) without trailing blank lines, and its last line index."""
    while end > start and not lines[end - 1].strip():
        end -= 1
    chunk = "\n".join(line.rstrip() for line in lines[start:end])
    return textwrap.dedent(chunk.expandtabs(4)).strip("\n"), end - 1


def _comment_only(text: str) -> bool:
    """Whether `text` is HTML comments and blanks only: what `^\\s*(<!--.*?-->\\s*)+$` (DOTALL) matched, a
    `<!--` first and a `-->` last (its `.*?` could span every comment between), without that pattern's
    backtracking: "<!-- --><!-- -->...x" made it try every way to split the comments, and a rule file of
    them never finished."""
    core = text.strip()
    return len(core) >= 7 and core.startswith("<!--") and core.endswith("-->")


def _without_trailing_markup(text: str) -> str:
    """`text` without the blanks and `*`, `_` or backquotes it ends with (the regex that did it tried every
    point of a long run of them, each reading it to its end: a rule file of one took minutes)."""
    end = len(text)
    while end and (text[end - 1].isspace() or text[end - 1] in "*_`"):
        end -= 1
    return text[:end]


def split_rules(path: str, text: str) -> list[RuleUnit]:
    """Split a rule file's text into rules: one unit per top-level bullet, paragraph, quote or table row.

    Headings are not units; they become each unit's `heading` trail. A code block belongs to the rule
    before it in the same section (or stands alone when it opens a section). A paragraph ending in ":"
    that introduces a list is kept with the list when every item is short, and is every item's `lead`
    otherwise; before a table, it is every row's `lead`. A table row's text is the header and that row.
    For `.mdc` files the frontmatter's `globs` are kept and its `description` heads the trail; any other
    frontmatter is skipped. Rules marked `skip` are left out.

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

    units = []
    for block in _merge(_blocks(lines, body_start, top_context), lines):
        if "skip" in block.marks:
            continue
        marks = tuple(w for w in MARK_WORDS if w in block.marks)
        spans = [(block.start, block.end)]
        if block.kind == "table":
            spans = [(row, row + 1) for row in block.rows]
        for start, end in spans:
            body, last = _chunk(lines, start, end)
            if block.kind == "table":
                body = f"{block.header}\n{body.strip()}"
            if not body.strip() or _comment_only(body):
                continue
            units.append(
                RuleUnit(
                    path=path,
                    line=start + 1,
                    end_line=last + 1,
                    text=body,
                    heading=block.heading,
                    scope=scope,
                    globs=globs,
                    kind="row" if block.kind == "table" else block.kind,
                    lead=block.lead,
                    marks=marks,
                )
            )
    return units
