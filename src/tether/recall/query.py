"""Query sanitizing (DESIGN §4.1): what a prompt is really asking, without pasted code and traces.

A pasted 3 KB stack trace OR-matches everything in full-text search and dominates an embedding; the
question is usually the last sentence.
"""

from __future__ import annotations

import re

from tether.embed.hashed import identifier_parts

# Prompts shorter than this (after noise is stripped) are kept whole: a task description's first sentence
# matters as much as its last.
KEEP_WHOLE_CHARS = 400
MAX_TERMS = 32

_FENCE_RE = re.compile(r"```.*?(```|\Z)|~~~.*?(~~~|\Z)", re.S)
_TRACE_LINE_RE = re.compile(
    r"""^\s*(
        Traceback\ \(most\ recent\ call\ last\) |
        File\ ".*",\ line\ \d+ |
        at\ [\w$.<>\[\]/]+\s*\(.*\) | at\ [\w$.<>/]+:\d+ |
        [\w.]*(Error|Exception|Warning|Panic)(:|\s*$) |
        panic:\ | goroutine\ \d+ | \s*at\ .*\.(java|kt|scala):\d+ |
        \d{4}-\d\d-\d\d[ T]\d\d:\d\d |
        [\w./-]+:\d+:\d+ |
        \[?(DEBUG|INFO|WARN|WARNING|ERROR|TRACE)\]?\s |
        [|>$#]\s |
        \^+\s*$ |
        \s{4,}\S
    )""",
    re.X,
)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]{2,}")
_SENTENCE_RE = re.compile(r"[^.?!\n]*\?")
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it "
    "its just let me my no not now of on or our please should so some than that the their them then there "
    "these they this to too us was we were what when where which while who why will with would you your "
    "also any all make sure get got want need like use using used via one two new".split()
)


def sanitize(prompt: str) -> str:
    """Strip code fences and trace-like lines; keep short prompts whole, else the last question.

    >>> sanitize("Traceback (most recent call last):\\n  File \\"a.py\\", line 1\\nwhy does login fail?")
    'why does login fail?'
    """
    text = _FENCE_RE.sub("\n", prompt)
    lines = [line for line in text.splitlines() if line.strip() and not _looks_like_noise(line)]
    kept = "\n".join(line.strip() for line in lines)
    if len(kept) <= KEEP_WHOLE_CHARS:
        return kept
    questions = _SENTENCE_RE.findall(kept)
    if questions:
        return str(questions[-1]).strip()
    prose = [line for line in lines if _is_prose(line)]
    if prose:
        tail: list[str] = []
        for line in reversed(prose):
            tail.insert(0, line.strip())
            if sum(len(t) for t in tail) >= KEEP_WHOLE_CHARS:
                break
        return " ".join(tail)[-KEEP_WHOLE_CHARS * 2 :]
    return kept[-KEEP_WHOLE_CHARS:]


def terms(text: str) -> list[str]:
    """Search terms: words and identifier parts, lowercased, without stopwords, in order, unique."""
    out: dict[str, None] = {}
    for word in _WORD_RE.findall(text):
        lower = word.lower()
        if len(lower) >= 2 and lower not in STOPWORDS:
            out.setdefault(lower, None)
        parts = identifier_parts(word)
        if len(parts) > 1:
            for part in parts:
                if len(part) >= 3 and part not in STOPWORDS:
                    out.setdefault(part, None)
    return list(out)[:MAX_TERMS]


_CLAUSE_RE = re.compile(r"[,;:.?!\n]+|\s+(?:and|or|but|then)\s+", re.I)


def clauses(text: str) -> list[list[str]]:
    """The terms of each clause: a compound question asks several things, each may have its own answer.

    >>> clauses("what port does staging use, and which host?")
    [['port', 'staging'], ['host']]
    """
    out = [terms(part) for part in _CLAUSE_RE.split(text)]
    return [c for c in out if c]


# Path components that say where a file is, not what it is about.
_PATH_NOISE = frozenset("src lib app pkg internal packages index main mod init".split())


def path_terms(paths: list[str], depth: int = 3) -> list[str]:
    """Search terms from the last `depth` components of each path, the file name's dotted parts included
    (`hooks/useGitBranch.test.tsx` → hooks, usegitbranch, use, git, branch, test, tsx): a test file is
    about testing, a `.tsx` file about components."""
    text: list[str] = []
    for path in paths:
        parts = path.strip("/").split("/")[-depth:]
        text.extend([*parts[:-1], *(parts[-1].split(".") if parts else [])])
    found = terms(" ".join(re.sub(r"[^A-Za-z0-9_]+", " ", t) for t in text))
    return [t for t in found if t not in _PATH_NOISE and len(t) >= 3 and not t.isdigit()]


def _looks_like_noise(line: str) -> bool:
    if _TRACE_LINE_RE.match(line):
        return True
    letters = sum(ch.isalpha() or ch == " " for ch in line)
    return len(line) > 20 and letters / len(line) < 0.6


def _is_prose(line: str) -> bool:
    words = line.split()
    return len(words) >= 3 and sum(w.isalpha() for w in words) / len(words) >= 0.6
