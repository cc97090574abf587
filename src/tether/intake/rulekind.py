"""What kind of knowledge a rule is (DESIGN §1 categories), from what the rule file says and how it is worded.

The category decides delivery: a `gotcha` is what lands at the point of action (the Read hint, the
deny-once before a first edit), so a rule file's "never ..." must not arrive as a mere preference. In order:

1. the rule file says it: a `<!-- tether: gotcha -->` marker (see `rulefiles`), or a section titled with a
   category's name ("## Gotchas", "## Decisions", "## Preferences", "## Context"; "Don'ts" and "Commands"
   too), nearest heading first;
2. a prohibition or an obligation (never, don't, must, avoid, "is required", "important:") → `gotcha`;
3. a choice between alternatives (we decided, "use X, not Y", "prefer X over Y", "instead of") → `decision`;
4. how to run things, or where things are (run/build/install commands, a shell block, "lives in") → `context`;
5. anything else (a convention of style or practice) → `pref`.

Measured on hand-labelled rules of the quality benchmark's repositories (benchmarks/quality/README.md,
"Rule kinds"). Wording is a heuristic: when it is wrong, the marker is the fix, and it survives edits.

    >>> from tether.intake.rulefiles import split_rules
    >>> [classify(u, u.text) for u in split_rules("AGENTS.md", "- Never push to main.\\n- Run `make test`.\\n")]
    ['gotcha', 'context']
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tether.intake.rulefiles import RuleUnit

__all__ = ["CATEGORIES", "classify"]

CATEGORIES = ("pref", "decision", "gotcha", "context")

# Section titles that say what their rules are ("## Gotchas", "### Don'ts"): a heading convention a rule
# file can use instead of markers. Compared on the whole title, lower-cased, so "Common gotchas in tests"
# is wording, not a convention.
_TITLES = {
    "gotcha": "gotcha",
    "gotchas": "gotcha",
    "pitfalls": "gotcha",
    "don'ts": "gotcha",
    "donts": "gotcha",
    "do not": "gotcha",
    "warnings": "gotcha",
    "decision": "decision",
    "decisions": "decision",
    "preferences": "pref",
    "context": "context",
    "commands": "context",
}
# A line that starts with a code fence (`_fenced`). Indentation is `[ \t]*`, not `\s*`: from every line start
# `\s*` ran over all the blank lines after it, and a rule file of blank lines took minutes; the prose is the same.
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})", re.MULTILINE)
_MARKUP = re.compile(r"[*_>#|]+|^[ \t]*(?:[-+]|\d{1,9}[.)])\s+", re.MULTILINE)
# A prohibition or an obligation anywhere in the rule's prose: breaking it breaks something.
_GOTCHA = re.compile(
    r"\b(?:never|must|mustn't|shall not|do not|don't|dont|does not work|doesn't work|cannot|can't|"
    r"should not|shouldn't|avoid|forbidden|prohibited|not allowed|is required|are required|required to|"
    r"needs? to|make sure|ensure|remember to|mandatory|critical|important|warning|careful|beware|"
    r"will (?:break|fail)|breaks|under no circumstances|only ever|no exceptions)\b",
    re.IGNORECASE,
)
# Imperatives whose object is an invariant: "Preserve X", "Keep X in sync", "Only define X in Y".
_GUARD = re.compile(r"^(?:preserve|only\b|keep\b.*\bin sync\b)", re.IGNORECASE)
# "When changing X, check Y": a change that needs a second one is a trap.
_CONDITIONAL_CHECK = re.compile(
    r"^(?:when|if|after|before|whenever)\b[^.]*?,\s*(?:also\s+)?(?:check|update|verify|regenerate|rerun|re-run)\b",
    re.IGNORECASE,
)
# "No mocks.", "No `print` in library code": a leading "No" is a prohibition.
_LEADING_NO = re.compile(r"^(?:no|not)\s+[\w`]", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(?:we (?:decided|chose|picked|settled on|use|went with)|decided to|instead of|rather than|"
    r"in favou?r of|prefer(?:red|s)?\b.*?\b(?:over|to)\b|over\s+`|not\s+`[^`]+`|, not\b|"
    r"is (?:deprecated|preferred|the standard)|(?:replaced|superseded) by)",
    re.IGNORECASE,
)
_RUN = re.compile(
    r"^(?:to (?:run|build|test|install|start|lint|format|deploy|debug|regenerate|generate|check)\b|"
    r"(?:run|execute|invoke|install|launch|see|refer to)\b|(?:commands?|scripts?|usage|setup|installation)\s*:)",
    re.IGNORECASE,
)
# Verbs that name a command only when a command follows ("Build with `make`", not "Build a map once").
_RUN_WITH_COMMAND = re.compile(
    r"^(?:build|start|compile|lint|format|deploy|regenerate|test|typecheck)\b", re.I
)
_COMMAND_SPAN = re.compile(
    r"`(?:\$ )?(?:npm|pnpm|yarn|npx|bun|uv|uvx|pip|python|pytest|make|cargo|go|just|docker|git|poetry|tox|"
    r"nox|hatch|ruff|mypy|node|deno|bash|sh|\./)\b[^`]*`"
)
_SHELL_INFO = ("", "sh", "bash", "shell", "console", "zsh")
# "Linux: Install ...", "**Build All:** `npm run build`": a label before what the rule says.
_LABEL = re.compile(r"^[^:`]{1,40}:\s+(?=\S)")
_EXAMPLE_LABEL = re.compile(r"^(?:in)?correct\b|^(?:good|bad|wrong|right|example)\b", re.IGNORECASE)
# What an instruction starts with: an imperative verb, a condition, or a person. A rule starting with
# anything else (a path, "The UI uses ...", "Providers own ...", a noun phrase) states a fact.
_IMPERATIVE = frozenset(
    """add adopt align allow always annotate apply ask assert attach batch be build bump call cache catch centralize
    check choose clean close coerce combine comment commit configure confirm consider convert copy create
    declare default defer define delete derive describe design detect disable document don't do drop emit
    enable encode ensure escape expose extract favor favour fetch fix flag focus follow format gate generate
    give group guard handle hide hoist implement import include inline isolate keep label leave limit link
    list load lock log look make mark match memoize merge migrate minimize mirror mock move name never note
    open order parse pass pin place populate prefer prefix prepend preserve prevent print profile prompt
    propagate prune push put raise read rebase record reduce refactor reference register reject release
    remember remove rename render reorder replace report request require reset resolve respect restrict
    return reuse review rewrite run save scope select send separate serialize set share show skip sort split
    start state stick store stream strip structure submit suggest support switch sync tag take test throw
    track treat trim try type update upgrade use validate verify wait warn wrap write yield""".split()
)
_CONDITION = frozenset("when if whenever before after while for in on to unless once".split())
_PEOPLE = frozenset("we you agents contributors maintainers".split())
_NUMBERING = re.compile(r"^\s*(?:\d+[.)]?)+\s*")  # "5.12 Use useRef ..." -> "Use useRef ..."
_WILL = re.compile(r"\b(?:will|shall)\b", re.IGNORECASE)


def classify(unit: RuleUnit, summary: str) -> str:
    """The category of a rule: what its file says, else what its wording says (module docstring)."""
    for mark in unit.marks:
        if mark in CATEGORIES:
            return mark
    titles = unit.heading.split(" > ") if unit.heading else []
    for title in reversed(titles):
        named = _TITLES.get(" ".join(title.lower().replace("’", "'").split()).rstrip(":"))
        if named:
            return named
    if unit.kind == "row":  # a table row is reference data unless it forbids something
        return "gotcha" if _LEADING_NO.match(summary) or _GOTCHA.match(summary) else "context"
    if _EXAMPLE_LABEL.match(summary) and titles:  # "Correct: ..." + code illustrates its section's rule
        title = _NUMBERING.sub("", titles[-1])
        return by_wording(title, title)
    return by_wording(unit.text, summary, lead=unit.lead)


def by_wording(text: str, summary: str, *, lead: str = "") -> str:
    """The category the words of a rule (its markdown, the summary made of it, a list's lead-in) suggest.

    >>> by_wording("Use `uv`, not `pip`.", "Use `uv`, not `pip`.")
    'decision'
    """
    prose = _flat(_without_fenced(text))
    opening = _flat(summary)
    said = _LABEL.sub("", opening, count=1)  # "Linux: Install ..." says "Install ..."
    if (
        _GOTCHA.search(prose)
        or _GOTCHA.search(lead)
        or _LEADING_NO.match(said)
        or _GUARD.match(said)
        or _CONDITIONAL_CHECK.match(said)
    ):
        return "gotcha"
    if _DECISION.search(opening):
        return "decision"
    commands = _COMMAND_SPAN.search(opening) is not None
    if _RUN.match(said) or _RUN.match(lead) or _shell_block(text) or commands:
        return "context"
    if _RUN_WITH_COMMAND.match(said) and "`" in said:
        return "context"
    first = said.split(maxsplit=1)[0].lower().strip("`*_\"'(") if said.split() else ""
    if said.startswith(("`", "[", "http")) or (
        first not in _IMPERATIVE and first not in _CONDITION and first not in _PEOPLE
    ):
        # A statement, not an instruction: a fact about the project, or its design when it says what a
        # part will do ("API handlers will be thin functions").
        return "decision" if _WILL.search(said) else "context"
    return "pref"


def _flat(markdown: str) -> str:
    return " ".join(_MARKUP.sub(" ", markdown).replace("’", "'").split())


def _shell_block(text: str) -> bool:
    return any(info.strip().lower() in _SHELL_INFO for _, _, info in _fenced(text))


def _without_fenced(text: str) -> str:
    kept, pos = [], 0
    for start, end, _ in _fenced(text):
        kept += [text[pos:start], " "]
        pos = end
    kept.append(text[pos:])
    return "".join(kept)


def _fenced(text: str) -> Iterator[tuple[int, int, str]]:
    r"""The fenced code blocks of `text` as (start, end, info string): the blocks the regex
    `^\s*(`{3,}|~{3,})(.*?)$.*?^\s*\1` (MULTILINE, DOTALL) finds, each from its opening line's start (where
    that regex began at the blank lines before it), in one pass over the fence lines: that regex read from
    every fence that never closes to the end of the text again, and a rule file of them took minutes.
    As its backtracking does, an opening run of R characters closes at the first later line opening with
    L of them, L the most up to R that some later line has (a fence with nothing after it of its
    character opens nothing)."""
    lines = [(m.start(), m.start(1), m.group(1)) for m in _FENCE_LINE.finditer(text)]
    most: dict[str, int] = {}  # per character, the longest run on the lines after the one looked at
    after: list[dict[str, int]] = []
    for _, _, run in reversed(lines):
        after.append(dict(most))
        most[run[0]] = max(most.get(run[0], 0), len(run))
    after.reverse()
    i = 0
    while i < len(lines):
        start, at, run = lines[i]
        length = min(len(run), after[i].get(run[0], 0))
        if length < 3:
            i += 1
            continue
        fence = run[:length]
        j = i + 1
        while not lines[j][2].startswith(fence):
            j += 1
        line_end = text.find("\n", at)
        info = text[at + length : len(text) if line_end < 0 else line_end]
        yield start, lines[j][1] + length, info
        i = j + 1
