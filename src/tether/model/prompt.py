"""What a prompt is really asking (DESIGN §4.1): pasted code and traces stripped, the question kept.

A pasted 3 KB stack trace OR-matches everything in full-text search and dominates an embedding; the
question is usually the last sentence.
"""

from __future__ import annotations

import re

from tether.model.text import terms

# Prompts shorter than this (after noise is stripped) are kept whole: a task description's first sentence
# matters as much as its last.
KEEP_WHOLE_CHARS = 400

_FENCE_RE = re.compile(r"```.*?(```|\Z)|~~~.*?(~~~|\Z)", re.S)
_TRACE_LINE_RE = re.compile(
    r"""(
        Traceback\ \(most\ recent\ call\ last\) |
        File\ ".*",\ line\ \d+ |
        at\ [\w$.<>\[\]/]+\s*\(.*\) | at\ [\w$.<>/]+:\d+ |
        [\w.]*(Error|Exception|Warning|Panic)(:|\s*$) |
        panic:\ | goroutine\ \d+ | at\ .*\.(java|kt|scala):\d+ |
        \d{4}-\d\d-\d\d[ T]\d\d:\d\d |
        [\w./-]+:\d+:\d+ |
        \[?(DEBUG|INFO|WARN|WARNING|ERROR|TRACE)\]?\s |
        [|>$#]\s |
        \^+\s*$
    )""",
    re.X,
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
    question = last_question(kept)
    if question:
        return question
    prose = [line for line in lines if _is_prose(line)]
    if prose:
        tail: list[str] = []
        for line in reversed(prose):
            tail.insert(0, line.strip())
            if sum(len(t) for t in tail) >= KEEP_WHOLE_CHARS:
                break
        return " ".join(tail)[-KEEP_WHOLE_CHARS * 2 :]
    return kept[-KEEP_WHOLE_CHARS:]


# Clauses end at punctuation and newlines, then at a joining word inside a line (from the start of its run of
# blanks only: `\s+` tried from inside a long run read to its end again from every blank, and a prompt of
# blanks took minutes; one pattern for both did the same over blank lines).
_CLAUSE_END = re.compile(r"[,;:.?!\n]+")
_CLAUSE_JOIN = re.compile(r"(?<!\s)\s+(?:and|or|but|then)\s+", re.I)


def clauses(text: str) -> list[list[str]]:
    """The terms of each clause: a compound question asks several things, each may have its own answer.

    >>> clauses("what port does staging use, and which host?")
    [['port', 'staging'], ['host']]
    """
    out = [terms(part) for line in _CLAUSE_END.split(text) for part in _CLAUSE_JOIN.split(line)]
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


def last_question(text: str) -> str:
    """The last sentence of `text` that ends in `?` ("" when none does), in linear time.

    >>> last_question("It fails. Why does it fail? Logs below.")
    'Why does it fail?'
    """
    end = text.rfind("?")
    if end < 0:
        return ""
    start = max(text.rfind(mark, 0, end) for mark in ".?!\n") + 1
    return text[start : end + 1].strip()


def _looks_like_noise(line: str) -> bool:
    # The indentation apart, not a leading `\s*` in the pattern: with one, a line of blanks made each of its
    # alternatives read them again from every point the `\s*` gave back.
    body = line.lstrip()
    if (body and len(line) - len(body) >= 4) or _TRACE_LINE_RE.match(body):
        return True
    letters = sum(ch.isalpha() or ch == " " for ch in line)
    return len(line) > 20 and letters / len(line) < 0.6


def _is_prose(line: str) -> bool:
    words = line.split()
    return len(words) >= 3 and sum(w.isalpha() for w in words) / len(words) >= 0.6


# A token that could be a key: letters and digits mixed over 8 characters or more, or any run of 20 (key
# alphabets include `-_+/=.~`); or a word that the detector's context rules start from (assignments, URLs
# with a user, headers, PEM blocks, curl's -u, netrc, kubeconfig).
_MAYBE_KEY = re.compile(
    r"(?=[\w+/=.~-]*\d)(?=[\w+/=.~-]*[A-Za-z])[\w+/=.~-]{8,}|[\w+/=.~-]{20,}"
    r"|pass|pwd|secret|token|key|auth|bearer|basic|cred|private|begin|://|@|\s-u\s|login|machine",
    re.I,
)


def may_hold_secret(text: str) -> bool:
    """Whether `text` could hold a credential, cheaply: False only for text that `secrets.find_secret` (which
    takes tens of milliseconds to import) could not flag, so a hook imports it only when this is True.

    >>> may_hold_secret("why do uploads retry twice?"), may_hold_secret("deploy with ghp_" + "x1" * 18)
    (False, True)
    """
    return _MAYBE_KEY.search(text) is not None
