"""Porter stems (tether.model.stem) as the word index makes them, and the query coverage that uses them."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tether.model.stem import stem
from tether.model.text import Vocabulary, terms_in

ROOT = Path(__file__).resolve().parents[1]

# Porter's own examples (the 1980 paper), the edges SQLite takes differently from the paper (a suffix is only
# taken from a longer word), digits, and words too short or too long to stem.
_WORDS = (
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping "
    "tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci "
    "digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator "
    "feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative "
    "formalize electriciti electrical hopeful goodness revival allowance inference airliner gyroscopic "
    "adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate "
    "angulariti homologous effective bowdlerize probate rate cease controll roll ies sses eed is as s ed ing "
    "1900s utf8ing py311s x2es retries retry realize realizing tests testing news generalizations"
)
EDGES = [*_WORDS.split(), "a" * 70 + "s", "x" * 61 + "ing", "x" * 62 + "ing"]


def sqlite_stems(words: list[str]) -> dict[str, str]:
    """What SQLite's porter tokenizer (the word index's) makes of each word, read back with fts5vocab."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE s USING fts5(w, tokenize='porter unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
    db.executemany("INSERT INTO s(rowid, w) VALUES (?, ?)", list(enumerate(words, 1)))
    by_row = {row: term for term, row in db.execute("SELECT term, doc FROM v")}
    return {word: by_row[i] for i, word in enumerate(words, 1)}


def test_stems_are_the_word_index_stems_over_this_projects_own_vocabulary() -> None:
    words: set[str] = set(EDGES)
    for path in [*ROOT.glob("src/tether/**/*.py"), *ROOT.glob("*.md"), *ROOT.glob("benchmarks/**/*.md")]:
        words.update(re.findall(r"[a-z0-9]+", path.read_text(encoding="utf-8").lower()))
    expected = sqlite_stems(sorted(words))
    differ = {w: (expected[w], stem(w)) for w in expected if expected[w] != stem(w)}
    assert len(expected) > 5000  # the vocabulary is big enough to say something
    assert differ == {}


@pytest.mark.parametrize(
    "word, root",
    [("retries", "retri"), ("retry", "retri"), ("realizing", "realiz"), ("ies", "ie"), ("sses", "sse")],
)
def test_a_few_stems(word: str, root: str) -> None:
    assert stem(word) == root


def test_words_outside_the_stemmers_reach_are_their_own_stem() -> None:
    assert stem("parse_header") == "parse_header"  # an identifier: the index splits it, recall keeps it whole
    assert stem("Tests") == "Tests"  # recall's terms are lowercase already
    assert stem("naïveties") == "naïveties"


@pytest.mark.parametrize(
    "text, word",
    [
        ("Run the test suite with `make itest`.", "tests"),  # a plural asked of a singular
        ("Never retry an upload twice.", "retries"),  # y -> i
        ("Ana is realizing how much she likes tea.", "realize"),  # the stem drops the e
        ("Agreed formats live in docs/formats.md.", "agree"),
    ],
)
def test_the_coverage_finds_a_word_of_the_same_stem(text: str, word: str) -> None:
    assert Vocabulary(text).found([word]) == {word}


@pytest.mark.parametrize(
    "text, word",
    [
        ("The network layer retries.", "news"),  # stem `new` starts `network`, but `network` stems apart
        ("The user table is sharded.", "uses"),  # `uses` -> `us`; `user` stays `user`
        # Porter keeps these apart too (`deploy` -> `deploi`, `deployments` -> `deploy`): as the index does.
        ("Deploy on Fridays only with approval.", "deployments"),
    ],
)
def test_a_shared_start_is_not_a_shared_stem(text: str, word: str) -> None:
    assert Vocabulary(text).found([word]) == set()


def test_prefixes_still_count_as_before() -> None:
    assert terms_in("Deployments need a ticket", ["deploy", "ticket", "port"]) == {"deploy", "ticket"}
