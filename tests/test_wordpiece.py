"""The plain-Python WordPiece tokenizer: checked against the `tokenizers` library on the shipped vocabulary,
and on a small vocabulary for the rules it must keep without that library."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tether.embed.static import PACKAGED_DIR
from tether.embed.wordpiece import WordPiece
from tether.errors import ConfigError

TOKENIZER = PACKAGED_DIR / "tokenizer.json"

# What a memory or a question holds: prose, identifiers, paths, code, accents, CJK, emoji, controls.
TEXTS = [
    "Tool execution uses runTool",
    "how does tool execution work?",
    "src/tether/embed/hashed.py: def _embed_one(self) -> Vector:",
    "snake_case_name and camelCaseName42 $x+=1 ",
    "Café naïve résumé — über 東京 tést\x07 ok",
    "Ünïcödé ℌ ﬁ ½ émoji 🎉 (done)",
    "tab\tnew\nline\r\nfeed\x0bvertical\x0c",
    "A" * 120,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Use `pnpm install --frozen-lockfile`; never npm!!",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_same_ids_as_the_tokenizers_library(text: str) -> None:
    tokenizers = pytest.importorskip("tokenizers", reason="the reference library comes with transformers")
    reference = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    reference.no_padding()
    reference.no_truncation()
    expected = reference.encode(text, add_special_tokens=False).ids
    assert WordPiece.from_file(TOKENIZER).ids(text) == expected


SMALL = {"[UNK]": 0, "run": 1, "##tool": 2, "tool": 3, "cafe": 4, ",": 5, "##s": 6, "東": 7}


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("runTool", ["run", "##tool"]),  # lowercased, then the longest piece first
        ("tools, TOOL", ["tool", "##s", ",", "tool"]),  # punctuation is a token of its own
        ("Café", ["cafe"]),  # accents stripped
        ("東京", ["東", "[UNK]"]),  # each CJK character is a word
        ("runx", ["[UNK]"]),  # one unknown piece makes the whole word unknown
    ],
)
def test_greedy_longest_match(text: str, tokens: list[str]) -> None:
    assert WordPiece(SMALL).tokens(text) == tokens


def test_skipped_words_give_no_ids() -> None:
    # Whole words only: "tools" is not the skipped "tool".
    assert WordPiece(SMALL, skip=frozenset({"tool"})).tokens("run Tool tools") == ["run", "tool", "##s"]


def test_a_word_past_the_length_limit_is_unknown() -> None:
    assert WordPiece(SMALL, max_word_chars=5).tokens("runtool run") == ["[UNK]", "run"]


def test_cased_vocabulary_keeps_case_and_accents() -> None:
    tokenizer = WordPiece({"Run": 0, "##Tool": 1, "Café": 2, "[UNK]": 3}, lowercase=False)
    assert tokenizer.tokens("RunTool Café") == ["Run", "##Tool", "Café"]


def test_repeated_words_are_cached_and_give_the_same_ids() -> None:
    tokenizer = WordPiece(SMALL)
    first = tokenizer.ids("runTool runTool")
    assert first == [1, 2, 1, 2] and tokenizer.ids("runtool") == [1, 2]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read the tokenizer"),
        (json.dumps({"model": {"type": "BPE", "vocab": {}}}), "WordPiece (BERT-style) tokenizers only"),
    ],
)
def test_other_tokenizers_are_a_config_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        WordPiece.from_file(path)
