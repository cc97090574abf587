"""BERT's WordPiece tokenizer in plain Python: what a static embedding model needs to find its rows.

It reproduces the `tokenizers` library's `BertNormalizer` (clean text, CJK characters apart, lowercase,
accents stripped), `BertPreTokenizer` (split on whitespace and punctuation) and the greedy longest-match
`WordPiece` model, read from a Hugging Face `tokenizer.json`; `tests/test_static.py` checks it against
that library. Special tokens are never added: a static model embeds the words alone.

    >>> WordPiece({"tool": 0, "run": 1, "##tool": 2, "[UNK]": 3}).tokens("runTool")
    ['run', '##tool']
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from tether.errors import ConfigError

# Printable ASCII that is neither a letter, a digit nor a space is punctuation for BERT (`$`, `+`, `^`...),
# as is every Unicode character of a P* category; each one is a token of its own.
_ASCII_PIECE = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_ASCII_CASED_PIECE = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")
# Control characters are dropped (the library's `clean_text`); tab and newlines are whitespace.
_ASCII_CONTROL = dict.fromkeys([*range(9), 11, 12, *range(14, 32), 127])
# Words seen often (identifiers, stopwords) are looked up once per tokenizer: a bounded cache.
_CACHE_SIZE = 50_000


class WordPiece:
    """Text to vocabulary ids the way `BertTokenizer(do_lower_case=True)` splits it, without special tokens.

    `vocab` maps a token (`run`, `##tool`) to its id. Unknown words become `unk` (callers may drop it).
    """

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk: str = "[UNK]",
        prefix: str = "##",
        max_word_chars: int = 100,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self.vocab = vocab
        self.skip = skip  # normalized words left out entirely (a static model's stopwords)
        self.unk = unk
        self.unk_id = vocab.get(unk)
        self.prefix = prefix
        self.max_word_chars = max_word_chars
        self.lowercase = lowercase
        # The library's rule: accents are stripped when asked, or by default when lowercasing.
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_file(cls, path: Path, *, skip: frozenset[str] = frozenset()) -> WordPiece:
        """The WordPiece tokenizer of a Hugging Face `tokenizer.json`; ConfigError for any other kind."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            model = data["model"]
            normalizer = data.get("normalizer") or {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"cannot read the tokenizer {path}: {exc}") from exc
        if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
            raise ConfigError(
                f"{path}: tether's static models read WordPiece (BERT-style) tokenizers only, "
                f"not {model.get('type')!r}; distil the model from a BERT-family model"
            )
        return cls(
            model["vocab"],
            unk=model.get("unk_token", "[UNK]"),
            prefix=model.get("continuing_subword_prefix", "##"),
            max_word_chars=int(model.get("max_input_chars_per_word", 100)),
            lowercase=bool(normalizer.get("lowercase", True)),
            strip_accents=normalizer.get("strip_accents"),
            skip=skip,
        )

    def tokens(self, text: str) -> list[str]:
        """The tokens of `text` (for tests and explanations; `ids` is what embedding uses)."""
        names = {i: t for t, i in self.vocab.items()}
        return [names[i] for i in self.ids(text)]

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        for word in self.words(text):
            if word in self.skip:
                continue
            known = self._cache.get(word)
            if known is None:
                known = self._word_ids(word)
                if len(self._cache) < _CACHE_SIZE:
                    self._cache[word] = known
            out.extend(known)
        return out

    def words(self, text: str) -> list[str]:
        """Normalized and pre-tokenized: lowercased words and single punctuation characters."""
        if text.isascii():
            text = text.translate(_ASCII_CONTROL)
            if self.lowercase:
                return _ASCII_PIECE.findall(text.lower())
            return _ASCII_CASED_PIECE.findall(text)
        return self._words_unicode(text)

    def _words_unicode(self, text: str) -> list[str]:
        cleaned: list[str] = []
        for ch in text:
            code = ord(ch)
            if code == 0 or code == 0xFFFD or (_is_control(ch)):
                continue
            if _is_cjk(code):
                cleaned.append(f" {ch} ")
            elif ch.isspace():
                cleaned.append(" ")
            else:
                cleaned.append(ch)
        normalized = "".join(cleaned)
        if self.lowercase:
            normalized = normalized.lower()
        if self.strip_accents:
            normalized = "".join(
                c for c in unicodedata.normalize("NFD", normalized) if unicodedata.category(c) != "Mn"
            )
        words: list[str] = []
        for chunk in normalized.split():
            start = 0
            for i, ch in enumerate(chunk):
                if _is_punctuation(ch):
                    if start < i:
                        words.append(chunk[start:i])
                    words.append(ch)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def _word_ids(self, word: str) -> list[int]:
        if len(word) > self.max_word_chars:
            return [self.unk_id] if self.unk_id is not None else []
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found: int | None = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                # One unknown piece makes the whole word unknown, as in BERT.
                return [self.unk_id] if self.unk_id is not None else []
            ids.append(found)
            start = end
        return ids


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_punctuation(ch: str) -> bool:
    code = ord(ch)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )
