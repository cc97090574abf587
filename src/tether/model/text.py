"""Text rules every part of tether shares: words, identifiers, stopwords, one-line summaries.

The same word list decides what full-text search looks for (`terms`) and what the hashed embedder hashes,
so the two channels agree on what a word is.

>>> terms("Why does parse_HTTPHeader fail on upload?")
['parse_httpheader', 'parse', 'http', 'header', 'fail', 'upload']
>>> fit_summary("A short rule.")
('A short rule.', '')
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache

from tether.model.memory import SUMMARY_MAX
from tether.model.stem import stem

# Words too common in prose and code to say anything about a topic.
STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it "
    "its just let me my no not now of on or our please should so some than that the their them then there "
    "these they this to too us was we were what when where which while who why will with would you your "
    "also any all make sure get got want need like use using used via one two new".split()
)
MAX_TERMS = 32

_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]{2,}")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_VOCABULARY_RE = re.compile(r"[a-z0-9_]+")
# Words of a text read for a stem match at most (`Vocabulary._holds_stem`): the ones starting as the stem does.
_STEM_READS = 16
# The characters of `_VOCABULARY_RE`'s words.
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def identifier_parts(word: str) -> list[str]:
    """Split an identifier on underscores and case changes: `parse_HTTPHeader` → parse, http, header."""
    parts: list[str] = []
    for chunk in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL_RE.findall(chunk))
    return [p for p in parts if p]


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


def terms_in(text: str, words: Sequence[str]) -> set[str]:
    """The `words` found in `text`, each as a word or the start of one (`deploy` finds `deployment`), or as a
    word of the same Porter stem, as the word index finds it (`retries` finds `retry`, `tests` finds `test`).

    >>> sorted(terms_in("Deployments need a ticket; retry once", ["deploy", "tickets", "retries", "port"]))
    ['deploy', 'retries', 'tickets']
    """
    return Vocabulary(text).found(words)


class Vocabulary:
    """The lowercased words of one text, for `terms_in` asked again of the same text (recall asks it of every
    candidate memory, a few hundred per prompt, and a warm process keeps each memory's).

    >>> sorted(Vocabulary("Deployments need a ticket").found(["deploy", "port"]))
    ['deploy']
    """

    __slots__ = ("_ordered", "_words", "lowered")

    def __init__(self, text: str) -> None:
        self.lowered = text.lower()
        self._words: set[str] | None = None
        self._ordered: list[str] = []

    def found(self, words: Sequence[str]) -> set[str]:
        """The `words` this text holds, each as a word or the start of one, or as a word of its stem."""
        text = self.lowered
        found: set[str] = set()
        stems: dict[str, tuple[str, str]] | None = None  # read when a word is not found as a start
        for word in words:
            if not word or word.strip(_WORD_CHARS):  # not made only of word characters
                if self._holds(word):
                    found.add(word)
                continue
            # A word of word characters starts a word of the text exactly where it occurs after a character
            # that is not one (or at the start): a substring search, no list of the text's words.
            at = text.find(word)
            while at >= 0:
                if at == 0 or text[at - 1] not in _WORD_CHARS:
                    found.add(word)
                    break
                at = text.find(word, at + 1)
            else:
                if stems is None:
                    stems = _stems_of(tuple(words))
                changed = stems.get(word)
                if changed is not None and self._holds_stem(*changed):
                    found.add(word)
        return found

    def _holds_stem(self, root: str, start: str) -> bool:
        """Whether a word of the text has the Porter stem `root`, reading its words that begin with `start`
        (`_stems_of`), at most `_STEM_READS` of them."""
        if start not in self.lowered:
            return False
        if self._words is None:
            self._index()
        at = bisect_left(self._ordered, start)
        for candidate in self._ordered[at : at + _STEM_READS]:
            if not candidate.startswith(start):
                break
            if stem(candidate) == root:
                return True
        return False

    def _index(self) -> None:
        self._words = set(_VOCABULARY_RE.findall(self.lowered))
        self._ordered = sorted(self._words)

    def _holds(self, word: str) -> bool:
        """Whether a word of the text is or starts with `word`, from the list of its words."""
        if self._words is None:
            self._index()
        assert self._words is not None
        if word in self._words:
            return True
        # The words starting with `word` sort together, from where `word` would go: one look, not a scan.
        at = bisect_left(self._ordered, word)
        return at < len(self._ordered) and self._ordered[at].startswith(word)


@lru_cache(maxsize=256)
def _stems_of(words: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """For each of a query's words that its Porter stem changes (`retries` → `retri`): the stem, and how the
    text's words holding it begin. A stem starts the words it stems from, so a word its stem leaves as it is
    was already looked for as a start; and so does `start`, save where Porter turned a final `y` into `i`
    (`retri` for `retry`): there the words are read from the stem less its last letter. Recall asks this of
    every candidate with the same words, hence the cache."""
    out: dict[str, tuple[str, str]] = {}
    for word in words:
        root = stem(word)
        if root != word:
            start = root[:-1] if root.endswith("i") else root
            if len(start) >= 2:
                out[word] = (root, start)
    return out


def one_line(text: str) -> str:
    """Runs of whitespace, line breaks included, as single spaces."""
    return " ".join(text.split())


def excerpt(text: str, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis (for error messages and logs)."""
    text = one_line(text)
    return text if len(text) <= limit else text[:limit] + "…"


def fit_summary(text: str, limit: int = SUMMARY_MAX) -> tuple[str, str]:
    """A one-line summary of at most `limit` characters, and what did not fit ("" when all of it did).

    An over-long line is cut at a word boundary with an ellipsis; the whole line is returned as the
    overflow, so the caller can keep it in the details and nothing is lost.

    >>> fit_summary("word " * 40, limit=20)
    ('word word word…', 'word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word')
    """
    line = one_line(text)
    if len(line) <= limit:
        return line, ""
    return line[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…", line
