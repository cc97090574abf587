"""`tether.model.text` and `tether.model.prompt`: the word rules search and the embedder share, and what a
prompt is really asking."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.embed.hashed import features
from tether.model.memory import SUMMARY_MAX
from tether.model.prompt import KEEP_WHOLE_CHARS, clauses, path_terms, sanitize
from tether.model.text import (
    STOPWORDS,
    Vocabulary,
    excerpt,
    fit_summary,
    identifier_parts,
    one_line,
    terms,
    terms_in,
)


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("parse_HTTPHeader", ["parse", "http", "header"]),
        ("getUserName", ["get", "user", "name"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ("v2Client", ["v", "2", "client"]),
        ("plain", ["plain"]),
    ],
)
def test_identifier_parts(word: str, parts: list[str]) -> None:
    assert identifier_parts(word) == parts


def test_terms_drop_stopwords_keep_identifier_parts_in_order_unique() -> None:
    assert terms("Why does the uploadRetry fail? The upload retry!") == [
        "uploadretry",
        "upload",
        "retry",
        "fail",
    ]
    assert terms("a an the is of") == []
    assert len(terms(" ".join(f"word{i}" for i in range(100)))) == 32


def test_search_and_the_hashed_embedder_share_one_stopword_list() -> None:
    bag = features("please make sure the deploy uses the new pipeline")
    assert {k for k in bag if k.startswith("w:")} == {"w:deploy", "w:uses", "w:pipeline"}
    assert {"please", "make", "sure", "new"} <= STOPWORDS
    assert terms("please make sure the deploy uses the new pipeline") == ["deploy", "uses", "pipeline"]


def test_terms_in_matches_whole_words_and_prefixes() -> None:
    assert terms_in("Deployments need a ticket", ["deploy", "ticket", "port"]) == {"deploy", "ticket"}
    assert terms_in("report", ["port"]) == set()  # a prefix of a word, not a suffix


@given(
    st.text(alphabet="abcAB_1 \n-éİ", max_size=40),
    st.lists(st.text(alphabet="abc_1-é", max_size=4), max_size=6),
)
def test_terms_in_looks_up_what_a_scan_of_every_word_finds(text: str, words: list[str]) -> None:
    # Any text and any words (empty ones, and characters no word of the text holds, included).
    vocabulary = set(re.findall(r"[a-z0-9_]+", text.lower()))
    want = {w for w in words if any(v.startswith(w) for v in vocabulary)}
    assert terms_in(text, words) == want
    kept = Vocabulary(text)
    assert kept.found(words) == want and kept.found(list(reversed(words))) == want  # asked again


def test_fit_summary_cuts_at_a_word_and_returns_the_whole_line() -> None:
    short, rest = fit_summary("  a  short\nrule ")
    assert (short, rest) == ("a short rule", "")
    line = "word " * 60
    summary, overflow = fit_summary(line)
    assert len(summary) <= SUMMARY_MAX and summary.endswith("word…") and overflow == one_line(line)
    assert fit_summary("x" * 200)[0] == "x" * (SUMMARY_MAX - 1) + "…"  # no space: a hard cut


def test_excerpt() -> None:
    assert excerpt("a\n b") == "a b"
    assert excerpt("y" * 300, 10) == "y" * 10 + "…"


def test_sanitize_strips_fences_and_traces_and_keeps_the_last_question() -> None:
    trace = (
        "Traceback (most recent call last):\n" + '  File "a.py", line 1, in f\n' * 50 + "ValueError: bad\n"
    )
    prompt = "I ran the job.\n```\nprint('x')\n```\n" + trace + "why does the upload job fail on retry?"
    assert sanitize(prompt) == "I ran the job.\nwhy does the upload job fail on retry?"
    long = "context line about many things. " * 30 + "Which port does staging use? And then more text."
    assert len(long) > KEEP_WHOLE_CHARS
    assert sanitize(long) == "Which port does staging use?"
    assert sanitize("short prompt kept whole") == "short prompt kept whole"


def test_sanitize_is_linear_on_a_huge_prompt() -> None:
    """An 80 KB paste took 14 s through a quadratic path (issue 11, item 14): it must stay cheap."""
    import time

    no_question = "word " * 16_000  # 80 KB, no sentence ends: a regex search from every position is n²
    started = time.perf_counter()
    assert sanitize(no_question).endswith("word")
    assert sanitize(no_question + ". what now?") == "what now?"
    assert time.perf_counter() - started < 2.0  # generous: linear work is milliseconds


def test_clauses_and_path_terms() -> None:
    assert clauses("what port does staging use, and which host?") == [["port", "staging"], ["host"]]
    assert path_terms(["src/hooks/useGitBranch.test.tsx"]) == [
        "hooks",
        "usegitbranch",
        "git",
        "branch",
        "test",
        "tsx",
    ]
    assert path_terms(["src/index.ts"]) == []  # where a file is, not what it is about


# Prompts that made a pattern read a run of blanks to its end from each of its blanks (seconds for a few
# KB, hours for a pasted megabyte). The timeout guards against hanging; each takes well under a second.
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "prompt",
    ["a" + " " * 300_000 + "b", " \n" * 200_000, "x" + " " * 300_000 + "\n" + "\t" * 300_000 + "y"],
    ids=["blanks", "blank-lines", "indents"],
)
def test_a_prompt_built_to_be_slow_is_read_in_a_pass(prompt: str) -> None:
    sanitize(prompt)
    assert clauses(prompt) in ([], [["b"]], [["a", "b"]], [["a"], ["b"]], [["x"], ["y"]], [["x", "y"]])
