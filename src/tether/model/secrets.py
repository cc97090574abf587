"""Likely credentials in text: find them (to refuse a memory) or redact them (in distilled facts).

DESIGN §8: no secrets in memory. Patterns are specific on purpose: a memory that *talks about*
passwords ("password hashing uses bcrypt", `password: str`, `OPENAI_API_KEY` with no value) must pass;
a memory that *contains* one must not. Recall of the generic rules is traded for precision: a false alarm
on every third note would teach people to pass `--allow-secrets` by reflex.

>>> find_secret("deploy with AKIAIOSFODNN7EXAMPLE")
'AWS access key'
>>> redact("token=ghp_0123456789abcdefghijABCDEFGHIJ012345")
'token=[REDACTED:GitHub token]'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["find_secret", "redact"]


@dataclass(frozen=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    # The group holding the secret itself (0: the whole match); only that part is redacted, so
    # `password = "x"` keeps its key and reads `password = [REDACTED:…]`.
    group: int = 0
    accept: Callable[[str], bool] | None = None


# Values that sit where a secret would but are not one: placeholders, type names, templating.
_PLACEHOLDERS = frozenset(
    {
        "string", "str", "bytes", "none", "null", "nil", "true", "false", "undefined", "optional",
        "password", "passwd", "secret", "token", "apikey", "api_key", "redacted", "example",
        "placeholder", "your_password", "your-password", "yourpassword", "your_api_key", "your-api-key",
        "changeme_in_prod", "secretstr", "required", "env", "config", "settings",
    }
)  # fmt: skip

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _literal_value(value: str) -> bool:
    """True when an assigned value looks like a literal credential rather than code or a placeholder."""
    raw = value
    quoted = raw[:1] in "\"'`"
    value = raw.strip("\"'`")
    lowered = value.lower()
    if len(value) < (4 if quoted else 6) or lowered in _PLACEHOLDERS:
        return False
    if value.startswith(("$", "{", "<", "%", "[REDACTED", "os.", "process.env", "env(", "getenv")):
        return False
    if set(value) <= set("*x.•-_#?"):  # "****", "xxxx", "...": masked already
        return False
    if not quoted:
        # Unquoted values are usually code: `password = get_password()`, `token: Optional[str]`,
        # `secret=settings.SECRET_2`. A bare credential has a digit or a symbol in it.
        if "(" in value or ("." in value and _IDENTIFIER.fullmatch(value)):
            return False
        return any(c.isdigit() or c in "!@#%^&*+~?" for c in value)
    return True


def _url_password(value: str) -> bool:
    return value.lower() not in _PLACEHOLDERS | {"pass", "pwd", "xxx", "****"} and not value.startswith(
        ("$", "{", "<", "%")
    )


_KEY_WORDS_PASSWORD = r"(?:password|passwd|passphrase|pwd)"
_KEY_WORDS_SECRET = (
    r"(?:secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|secret[_-]?key|client[_-]?secret"
    r"|private[_-]?key)"
)
# key (possibly prefixed, e.g. DB_PASSWORD, "password"), then `=` or `:` (not `==`), then a value that
# is a quoted string or a run of non-space characters.
_ASSIGN = (
    r"(?i)(?<![A-Za-z0-9])[\w.-]*?{words}[\"']?[ \t]*(?::=|:|=(?!=))[ \t]*"
    r"(\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|[^\s,;)\]}}]+)"
)

# Ordered: specific token formats first, so the name says what it is; generic assignments last.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private key block",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
    ),
    _Rule("AWS access key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    _Rule("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b")),
    _Rule("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    _Rule("Slack token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    _Rule(
        "Slack webhook",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+"),
    ),
    # Anthropic (sk-ant-…) and OpenAI (sk-…, sk-proj-…) keys; a digit is required so that prose like
    # "sk-learn-style-pipeline-with-steps" does not match.
    _Rule(
        "OpenAI/Anthropic API key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    ),
    _Rule("Stripe key", re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{20,}")),
    _Rule("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    _Rule("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    _Rule("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    _Rule("PyPI token", re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}")),
    _Rule("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    _Rule(
        "credentials in URL",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{3,})@[^\s/]+", re.IGNORECASE),
        group=1,
        accept=_url_password,
    ),
    _Rule(
        "bearer token",
        re.compile(r"(?i)\bBearer\s+([A-Za-z0-9._~+/-]{20,}=*)"),
        group=1,
        accept=lambda v: any(c.isdigit() for c in v),
    ),
    _Rule(
        "password assignment",
        re.compile(_ASSIGN.format(words=_KEY_WORDS_PASSWORD)),
        group=1,
        accept=_literal_value,
    ),
    _Rule(
        "api key assignment",
        re.compile(_ASSIGN.format(words=_KEY_WORDS_SECRET)),
        group=1,
        accept=_literal_value,
    ),
)


def _matches(rule: _Rule, text: str) -> list[tuple[int, int]]:
    spans = []
    for match in rule.pattern.finditer(text):
        value = match.group(rule.group)
        if rule.accept is None or rule.accept(value):
            spans.append(match.span(rule.group))
    return spans


def find_secret(text: str) -> str | None:
    """Name of the first kind of credential found in `text` (e.g. "GitHub token"), or None.

    >>> find_secret("password hashing uses bcrypt") is None
    True
    """
    for rule in _RULES:
        if _matches(rule, text):
            return rule.name
    return None


def redact(text: str) -> str:
    """`text` with every likely credential replaced by `[REDACTED:<kind>]`.

    >>> redact('DB_PASSWORD="hunter2!x" in .env')
    'DB_PASSWORD=[REDACTED:password assignment] in .env'
    """
    for rule in _RULES:
        spans = _matches(rule, text)
        for start, end in reversed(spans):
            text = f"{text[:start]}[REDACTED:{rule.name}]{text[end:]}"
    return text
