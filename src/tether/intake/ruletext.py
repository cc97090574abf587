"""What one rule of a rule file becomes as memory text: a whole-sentence summary, details, category.

The summary is what recall injects, so it has to stand on its own: the rule's first sentence (a
hard-wrapped line is joined first), a lead-in with what it leads in ("Before pushing, run: `make lint`,
`make test`"), a table row with its lead-in. Units that carry no rule are dropped (`render` returns None):
nothing but links (a table of contents), a directory tree, an empty section's code.

Provenance stays out of the searchable text: the memory's origin (`rules:<path>`) names the file, and the
details end with the rule's section as `§ Testing > Fixtures` (a mark no word search matches), plus
`Applies to: <globs>` for `.mdc` rules. Render version 1 wrote a "Rule from <file> › <heading>" trailer
that every query containing "rules" or "agents" matched; `body_of` and `heading_of` still read it, so a
re-sync pairs those memories with their rules and rewrites them in place.

    >>> from tether.intake.rulefiles import split_rules
    >>> unit = split_rules("AGENTS.md", "## Tests\\n- Never mock the store in tests. Use a real\\n  SQLite file.\\n")[0]
    >>> item = render(unit, Path("."))
    >>> item.summary, item.category, item.details
    ('Never mock the store in tests.', 'gotcha', 'Never mock the store in tests. Use a real\\nSQLite file.\\n\\n§ Tests')
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from tether.errors import ValidationError
from tether.intake.rulefiles import MARKER_RE, RuleUnit, markdown_tokens
from tether.intake.rulekind import classify
from tether.model.memory import SUMMARY_MAX, content_hash, normalize_path

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = ["SECTION", "Rendered", "body_of", "heading_of", "render"]

SECTION = "§ "  # the details' last line names the rule's section: a sign, so no query word matches it
APPLIES = "Applies to: "
LEGACY_TRAILER = "Rule from "  # render version 1

_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_WILDCARD = re.compile(r"[*?\[\]{}!]")
_LINKISH = re.compile(r"\[[^\]]*\]\([^)]*\)|<?https?://\S+>?|@[\w./~-]+")
_WORD = re.compile(r"[^\W_]{2,}|`[^`]+`")
# Where a sentence may end: ., ! or ? (outside code), then space and a capital, digit, quote or code.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[)\"'*_]*\s+(?=[A-Z0-9`\"'(*\[])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp|Mr|Ms|Dr|St|No|Fig)|\b[A-Z])\.$")
# An over-long first sentence is cut at the last clause boundary that keeps at least this much of it. A
# dash or semicolon closes a clause that stands alone ("Order required fields first — Python requires
# ..." → "Order required fields first."); a comma or a parenthesis does not, so that cut gets an ellipsis.
MIN_CLAUSE = 40
_WHOLE_CLAUSE_BREAKS = (" — ", " – ", " -- ", "; ")
_CLAUSE_BREAKS = (*_WHOLE_CLAUSE_BREAKS, ": ", ", ", " (")
_TREE = re.compile(r"[├└│]|^\s*[\w.@-]+/\s*(#.*)?$")
_DIAGRAM = re.compile(r"[│├└┌┐┘┬┴┼─▼▲►◄→←↓↑]")
_SHELL_INFO = ("", "sh", "bash", "shell", "console", "zsh", "fish", "powershell", "ps1", "cmd", "bat")
_COMMENT_LINE = re.compile(r"^\s*(#|//|::|rem\s)", re.IGNORECASE)
# A summary of this few words is a fragment ("Next.js", "Bad:") that needs its section's title.
SHORT_WORDS = 4
# A lead-in of more words than this is a rule of its own, not a label worth prefixing to every item.
LEAD_WORDS = 12


@dataclass(frozen=True)
class Rendered:
    """What one rule unit becomes: the memory's text, category and file references (repo-relative)."""

    unit: RuleUnit
    summary: str
    details: str
    files: tuple[str, ...]
    category: str = "pref"

    @property
    def core(self) -> bool:
        """Marked `core`: kept pinned when the agent no longer loads the rule file (`rules adopt`)."""
        return "core" in self.unit.marks

    @property
    def body(self) -> str:
        return body_of(self.summary, self.details)

    @property
    def content_hash(self) -> str:
        return content_hash(self.summary, self.details)


def render(unit: RuleUnit, root: Path) -> Rendered | None:
    """A rule unit as memory text, or None when it carries no rule (only links, a directory tree)."""
    tokens = markdown_tokens(MARKER_RE.sub("", unit.text))
    summary = _summary(unit, tokens)
    if summary is None:
        return None
    summary = _fit(summary)
    rest = _details(unit, summary)
    trailer = [f"{SECTION}{unit.heading}"] if unit.heading else []
    if unit.globs:
        trailer.append(APPLIES + ", ".join(unit.globs))
    details = "\n\n".join(part for part in (rest, "\n".join(trailer)) if part.strip())
    category = classify(unit, summary)
    return Rendered(unit, summary, details, _files(unit, root), category)


# -- the summary ---------------------------------------------------------------------------------------


def _summary(unit: RuleUnit, tokens: list[Token]) -> str | None:
    summary = _own_summary(unit, tokens)
    if summary is None or not unit.heading or len(_WORD.findall(summary)) > SHORT_WORDS:
        return summary
    title = unit.heading.split(" > ")[-1]
    # "Next.js" under "## Framework" says something only with its section: "Framework: Next.js".
    return summary if title.lower() in summary.lower() else f"{title}: {summary}"


def _own_summary(unit: RuleUnit, tokens: list[Token]) -> str | None:
    if unit.kind == "row":
        return _row_summary(unit, tokens)
    prose = _first_inline(tokens)
    if prose is None:  # only code: the section says what it is for
        fence = _first_fence(tokens)
        if fence is None or _is_tree(fence.content) or _DIAGRAM.search(fence.content) or not unit.heading:
            return None
        title = unit.heading.split(" > ")[-1]
        if not _is_shell(fence):
            return f"{title} (example)."
        return _joined(f"{title}: ", [f"`{c}`" for c in _commands(fence)])
    text = _plain(prose)
    if not _has_words(text):
        return None
    if text.rstrip().endswith(":"):  # a lead-in: what it leads in completes it
        lead = text.rstrip().rstrip(":").rstrip()
        follows = _following(tokens, prose)
        if follows and follows[0] == "list":
            return _joined(f"{lead}: ", follows[1])
        if follows and follows[0] == "commands":
            return _joined(f"{lead}: ", [f"`{c}`" for c in follows[1]])
        if len(lead.split()) <= 5 and _first_fence(tokens) is not None:
            return f"{lead} (example)."
        return lead + ("" if lead.endswith((".", "!", "?")) else ".")
    sentence = _first_sentence(text)
    if _only_links(unit.text):
        return None  # a bare link or a table of contents entry: where to look, not what to do
    if unit.lead and len(unit.lead.split()) <= LEAD_WORDS:
        combined = f"{unit.lead}: {_lower_first(sentence)}"
        if len(combined) <= SUMMARY_MAX:
            return combined
    return sentence


def _row_summary(unit: RuleUnit, tokens: list[Token]) -> str | None:
    rows: list[list[str]] = []
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows and tokens[i - 1].type in ("td_open", "th_open"):
            rows[-1].append(_plain(token))
    cells = [c for c in (rows[-1] if len(rows) > 1 else []) if c]
    if not cells or not any(_has_words(c) for c in cells):
        return None
    text = cells[0] if len(cells) == 1 else f"{cells[0]}: " + "; ".join(cells[1:])
    if unit.lead and len(unit.lead.split()) <= LEAD_WORDS and len(unit.lead) + len(text) + 2 <= SUMMARY_MAX:
        return f"{unit.lead}: {text}"
    return text


def _first_inline(tokens: list[Token]) -> Token | None:
    for i, token in enumerate(tokens):
        if token.type == "inline" and i > 0 and tokens[i - 1].type in ("paragraph_open", "heading_open"):
            return token
        if token.type in ("fence", "code_block"):
            return None
    return None


def _first_fence(tokens: list[Token]) -> Token | None:
    return next((t for t in tokens if t.type in ("fence", "code_block")), None)


def _following(tokens: list[Token], prose: Token) -> tuple[str, list[str]] | None:
    """What comes right after the lead-in paragraph `prose`: a list's items or a shell block's commands."""
    index = tokens.index(prose) + 2  # past paragraph_close
    if index >= len(tokens):
        return None
    token = tokens[index]
    if token.type in ("bullet_list_open", "ordered_list_open"):
        items = []
        depth = token.level
        for j in range(index + 1, len(tokens)):
            inner = tokens[j]
            if inner.type.endswith("_list_close") and inner.level == depth:
                break
            if inner.type == "inline" and inner.level == depth + 3:  # an item's own paragraph
                items.append(_plain(inner))
        return "list", items
    if token.type in ("fence", "code_block") and _is_shell(token):
        commands = _commands(token)
        return ("commands", commands) if commands else None
    return None


def _plain(token: Token, *, links: bool = True) -> str:
    """An inline token as one line of text: code spans kept in backticks, links as their text (or left
    out), markup and HTML dropped."""
    out: list[str] = []
    in_link = False
    for child in token.children or []:
        if child.type in ("link_open", "link_close"):
            in_link = child.type == "link_open"
        elif in_link and not links:
            continue
        elif child.type == "text":
            out.append(child.content)
        elif child.type == "code_inline":
            out.append(f"{child.markup}{child.content}{child.markup}")
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type == "image":
            out.append(child.content)
    return " ".join("".join(out).split())


def _only_links(markdown: str) -> bool:
    return not _has_words(_plain_markdown(markdown))


def _plain_markdown(markdown: str) -> str:
    tokens = markdown_tokens(markdown)
    return " ".join(_plain(t, links=False) for t in tokens if t.type == "inline")


def _has_words(text: str) -> bool:
    return bool(_WORD.search(_LINKISH.sub(" ", text)))


def _first_sentence(text: str) -> str:
    """The first sentence of `text` (at least four words of it: "Important. Never ..." stays whole)."""
    spans = _code_spans(text)
    start = 0
    for match in _SENTENCE_BREAK.finditer(text):
        end = match.start()
        if any(a < end < b for a, b in spans) or _ABBREVIATION.search(text[:end]):
            continue
        candidate = text[start:end].strip()
        if len(candidate.split()) >= 4 or len(text[:end].split()) >= 4:
            return text[:end].strip()
    return text.strip()


def _code_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"(`+)[^`]*?\1", text)]


def _fit(summary: str) -> str:
    """At most SUMMARY_MAX characters: an over-long sentence is cut at its last clause boundary that keeps
    MIN_CLAUSE characters (else at a word), with an ellipsis. The whole rule is in the details."""
    summary = " ".join(summary.split())
    if len(summary) <= SUMMARY_MAX:
        return summary
    head = summary[: SUMMARY_MAX - 1]
    spans = _code_spans(summary)
    cuts = [
        i
        for brk in _CLAUSE_BREAKS
        for i in [head.rfind(brk)]
        if i >= MIN_CLAUSE and not any(a < i < b for a, b in spans)
    ]
    whole = [
        i
        for brk in _WHOLE_CLAUSE_BREAKS
        for i in [head.find(brk)]
        if i >= MIN_CLAUSE and not any(a < i < b for a, b in spans)
    ]
    if whole:  # the first clause that stands alone is a whole sentence
        clause = head[: min(whole)].rstrip(" ,;:—–-(")
        return clause + ("" if clause.endswith((".", "!", "?")) else ".")
    cut = max(cuts) if cuts else len(head.rsplit(" ", 1)[0])
    # Never inside code: an unclosed backtick would make the rest of any block it is shown in code.
    cut = next((a for a, b in spans if a < cut < b), cut)
    return head[:cut].rstrip(" ,;:—–-(") + "…"


def _joined(lead: str, items: list[str]) -> str:
    """`lead` followed by as many of `items` as fit in a summary, comma-separated."""
    kept: list[str] = []
    for item in items:
        if len(lead) + len(", ".join([*kept, item])) > SUMMARY_MAX:
            break
        kept.append(item)
    if not kept:
        return lead + (items[0] if items else "")
    return lead + ", ".join(kept)


def _lower_first(sentence: str) -> str:
    first, _, rest = sentence.partition(" ")
    if first[:1].isupper() and first[1:].islower() and first != "I":
        return first.lower() + (f" {rest}" if rest else "")
    return sentence


def _is_shell(token: Token) -> bool:
    """A block of commands: marked as shell, or unmarked and a few lines with no diagram in them."""
    info = token.info.strip().split(maxsplit=1)[0].lower() if token.info.strip() else ""
    if info not in _SHELL_INFO or _DIAGRAM.search(token.content):
        return False
    return bool(info) or len(_commands(token)) <= 5


def _commands(token: Token) -> list[str]:
    return [
        line.strip().removeprefix("$ ")
        for line in token.content.splitlines()
        if line.strip() and not _COMMENT_LINE.match(line)
    ]


def _is_tree(code: str) -> bool:
    lines = [line for line in code.splitlines() if line.strip()]
    return bool(lines) and sum(bool(_TREE.search(line)) for line in lines) * 2 >= len(lines)


# -- details, files, and reading them back -----------------------------------------------------------------


def _details(unit: RuleUnit, summary: str) -> str:
    """The rule as written (list marker dropped), unless the summary already says all of it."""
    lines = unit.text.splitlines()
    if unit.kind == "item" and lines:
        lines[0] = _MARKER.sub("", lines[0])
        lines = [lines[0], *textwrap.dedent("\n".join(lines[1:])).splitlines()] if len(lines) > 1 else lines
    text = MARKER_RE.sub("", "\n".join(lines)).strip()
    if unit.lead and unit.kind in ("item", "row") and not summary.startswith(unit.lead):
        return f"{unit.lead}:\n\n{text}"  # the item needs its lead-in, which the summary left out
    if " ".join(text.split()) == summary or not text:
        return ""
    return text


def body_of(summary: str, details: str) -> str:
    """The memory's text without the lines naming where the rule came from (both render versions)."""
    lines = details.rstrip().splitlines()
    while lines and lines[-1].startswith((SECTION, APPLIES)):
        lines.pop()
    details = "\n".join(lines)
    head, sep, last = details.rpartition("\n\n")
    if sep and last.startswith(LEGACY_TRAILER):
        details = head
    elif details.startswith(LEGACY_TRAILER):
        details = ""
    return f"{summary}\n{details}".strip()


def heading_of(details: str) -> str:
    """The heading trail a rule memory's details name ("" if none), in either render version."""
    for line in reversed(details.rstrip().splitlines()):
        if line.startswith(SECTION):
            return line.removeprefix(SECTION)
        if line.startswith(LEGACY_TRAILER):
            return line.partition(" › ")[2]
        if not line.startswith(APPLIES):
            break
    return ""


def _files(unit: RuleUnit, root: Path) -> tuple[str, ...]:
    """File references: the rule file's directory, or for `.mdc` rules their globs.

    A plain glob (`src/api`, `docs/guide.md`) is a path relative to the directory holding `.cursor/`:
    a directory ref when it is a directory, else a file ref. A wildcard glob (`src/**/*.ts`) becomes its
    literal leading directory (`src/`) as a directory ref, since recall matches paths, not patterns; a
    wildcard with no literal directory (`**/*.ts`) narrows nothing, so the rule falls back to its scope.
    The glob text itself stays in the details ("Applies to: …").
    """
    refs: dict[str, None] = {}
    for glob in unit.globs:
        glob = glob.strip().removeprefix("./")
        if not glob or glob.startswith("/"):
            continue
        parts = PurePosixPath(glob).parts
        if _WILDCARD.search(glob):
            literal = []
            for part in parts:
                if _WILDCARD.search(part):
                    break
                literal.append(part)
            if not literal:
                continue
            raw = unit.scope + "/".join(literal) + "/"
        else:
            raw = unit.scope + "/".join(parts) + ("/" if glob.endswith("/") else "")
        try:
            refs.setdefault(normalize_path(str(root / raw) + ("/" if raw.endswith("/") else ""), root), None)
        except ValidationError:
            continue  # a glob reaching outside the repository names nothing tether can tie to
    if not refs and unit.scope:
        refs[unit.scope] = None
    return tuple(refs)
