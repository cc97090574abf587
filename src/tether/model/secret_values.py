"""Whether a matched value is really a credential: placeholders, code, masked and documented example values
are not. The checks `tether.model.secrets`' rules accept their matches with (pure; no I/O).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable

# `accept(value, text, match)`: whether a match is really a credential (placeholders, code, documented
# examples are not). `text` is the original text (a rule may have matched its lower-cased copy).
Accept = Callable[[str, str, re.Match[str]], bool]


# Values that sit where a secret would but are not one: placeholders, type names, templating, test words.
_PLACEHOLDERS = frozenset(
    {
        "string", "str", "bytes", "none", "null", "nil", "true", "false", "undefined", "optional",
        "password", "passwd", "secret", "token", "apikey", "api_key", "redacted", "example",
        "placeholder", "your_password", "your-password", "yourpassword", "your_api_key", "your-api-key",
        "changeme_in_prod", "secretstr", "required", "env", "config", "settings", "pass", "pwd", "xxx",
        "changeme", "change_me", "change-me", "changeit", "test", "testing", "dummy", "sample", "foo",
        "bar", "baz", "foobar", "todo", "tbd", "fixme", "hidden", "masked", "omitted", "removed", "n/a",
        "value", "empty", "default", "secretkey", "secret_key", "access_token", "auth_token", "anonymous",
        "guest", "text",
    }
)  # fmt: skip
# A value containing one of these is a placeholder: `YOUR_API_KEY_HERE`, `<token>`, `sk-xxxx…`.
_PLACEHOLDER_PARTS = re.compile(
    r"(?i)your[_-]?|xxxx|placeholder|insert[_-]|(?:replace|change)[_-]?me|<[^>]*>|\*\*\*|\.\.\.|…"
)
# A value made only of these words (and digits, separators) stands in for a secret in tests and docs:
# `secret-key`, `supersecret123`, `password-value`, `my-test-token`.
_STAND_IN_WORDS = frozenset(
    {
        "secret", "secrets", "password", "passwd", "pass", "pwd", "token", "key", "api", "apikey", "value",
        "my", "super", "another", "test", "testing", "dummy", "fake", "sample", "example", "foo", "bar",
        "baz", "demo", "changeme", "default", "some", "the", "access", "auth", "private", "client", "user",
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z]+")
_NOT_LITERAL_START = ("$", "{", "<", "%", "[REDACTED", "os.", "process.env", "env(", "getenv", "#{", "@")
_MASKED = re.compile(r"[*xX.•_#?0-]+")  # "****", "xxxx", "...": masked already
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+/?|[A-Za-z]:\\[\w\\. -]+")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_YAML_TAG = re.compile(r"![A-Za-z]+")  # `password: !vault |`, `!secret db_password`, `!Ref DbPassword`
_DIGIT = re.compile(r"[0-9]")
_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@#%^&*+~?$]")
_SWITCH = re.compile(r"[A-Za-z][0-9]|[0-9][A-Za-z]")
_QUOTES = "\"'`"
# The most of a value any check looks at: enough to judge, and a megabyte-long "token" costs no more.
_JUDGED = 512


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _placeholder(value: str) -> bool:
    """Documented examples (AWS and others mark theirs EXAMPLE), templating, masks and stand-ins."""
    return (
        value.lower() in _PLACEHOLDERS
        or "EXAMPLE" in value
        or value.startswith(_NOT_LITERAL_START)
        or _MASKED.fullmatch(value) is not None
        or _PLACEHOLDER_PARTS.search(value) is not None
        or _YAML_TAG.fullmatch(value) is not None
        or _stand_in(value)
    )


def _stand_in(value: str) -> bool:
    words = _WORD.findall(value[:_JUDGED].lower())
    return bool(words) and all(word in _STAND_IN_WORDS for word in words)


def _randomish(value: str) -> bool:
    """Random tokens switch between letters and digits often, or use many different characters."""
    return len(_SWITCH.findall(value)) >= 2 or (len(value) >= 20 and _entropy(value) >= 4.0)


def _code(value: str, quoted: bool = False) -> bool:
    """Code or a reference rather than a literal: `get_password()`, `settings.SECRET_2`, a URL, a path."""
    if _URL.match(value) or _PATH.fullmatch(value):
        return True
    if quoted:
        return False
    if any(c in value for c in "([{"):  # a call, a subscript, a literal: `sys.argv[1]`, `get_pw()`
        return True
    return "." in value and _IDENTIFIER.fullmatch(value) is not None and not _randomish(value)


def _token_like(value: str, quoted: bool = False) -> bool:
    """A machine-made secret: long enough, no spaces, letters and digits (or high entropy), not a word."""
    if len(value) < 8 or any(c.isspace() for c in value) or _placeholder(value) or _code(value, quoted):
        return False
    if not any(c.isalpha() for c in value):
        return False
    has_digit = any(c.isdigit() for c in value)
    return (has_digit and _entropy(value) >= 2.5) or (len(value) >= 20 and _entropy(value) >= 4.0)


def _literal_password(value: str, quoted: bool) -> bool:
    """A password people chose: may be short or a passphrase, so no entropy test, but not code."""
    if quoted:
        return len(value) >= 4 and not _placeholder(value)
    # Unquoted values are usually code: `password = get_password()`, `token: Optional[str]`,
    # `secret=settings.SECRET_2`. A bare credential has a digit or a symbol in it.
    return (
        len(value) >= 6
        and _DIGIT_OR_SYMBOL.search(value) is not None
        and not _code(value)
        and not _placeholder(value)
    )


_KEY_TAIL = re.compile(r"[A-Za-z0-9_-]{0,64}")
# Keys ending in `key` that name no secret: `primary_key = "id"`, `sortKey`, `public_key`, `cache-key`.
_KEY_NOT_SECRET = re.compile(
    r"(?:primary|foreign|sort|partition|hash|range|cache|public|pub|unique|index|lookup|dict|map|group|row"
    r"|column|object|routing|idempotency|composite|natural|surrogate|sharding|shard|ssh|gpg|pgp|kms|license"
    r"|key)[_-]?$"
)


def _key_start(text: str, start: int) -> int:
    """Where the key that a keyword at `start` ends begins: `DB_PASSWORD` for the keyword `PASSWORD`."""
    tail = _KEY_TAIL.match(text[max(0, start - 64) : start][::-1])
    return start - (tail.end() if tail else 0)


def _literal_context(text: str, match: re.Match[str]) -> bool:
    """Whether an unquoted value is a literal by where it stands, not by how it looks.

    `Server=…;Password=x`, `?user=a&password=x`: a value in a connection string or a query is a literal; so
    is an env file's or a shell's `DB_PASSWORD=x` (an upper-case key, `=` with no spaces).
    """
    key_start = _key_start(text, match.start())
    if key_start and text[key_start - 1] in ";&?":
        return True
    return match.group(2) == "=" and text[key_start : match.end(1)].isupper()


def _assignment(kind: str) -> Accept:
    """The check for `<key> <op> <value>`: `kind` is "password" (people's) or "secret" (machines')."""

    def accept(raw: str, text: str, match: re.Match[str]) -> bool:
        quoted = len(raw) >= 2 and raw[0] in _QUOTES and raw[-1] == raw[0]
        value = raw[1:-1] if quoted else raw.strip(_QUOTES)
        start = match.start()
        head = match.group(1)
        if head == "pass" and start and text[start - 1].isalpha():
            return False  # `bypass = …`, `compass: …`
        if head == "key":
            # `MAPBOX_KEY`, `apiKey`, `signing-key`, but not a bare `key: password` (a Kubernetes
            # secretKeyRef) nor `primary_key = …`.
            prefix = match.string[_key_start(text, start) : start]
            if not prefix.strip("_-") or _KEY_NOT_SECRET.search(prefix):
                return False
        if not quoted and _literal_context(text, match):
            return len(value) >= 4 and not _placeholder(value) and not _code(value)
        if kind == "password":
            return _literal_password(value, quoted)
        return _token_like(value, quoted)

    return accept


# A provider token with these in it is a documentation or test stand-in: `ghp_xxxx…`, `AIzaSy…EXAMPLE`.
_MASKED_TOKEN = re.compile(r"(?i:xxxx|placeholder|your[_-])|\.\.\.|…|EXAMPLE")


def _unmasked(value: str, text: str, match: re.Match[str]) -> bool:
    return _MASKED_TOKEN.search(value) is None


def _not_placeholder(value: str, text: str, match: re.Match[str]) -> bool:
    return not _placeholder(value.strip(_QUOTES))


def _machine_token(value: str, text: str, match: re.Match[str]) -> bool:
    return _token_like(value)


def _random(value: str, text: str, match: re.Match[str]) -> bool:
    """Provider formats whose prefix is short or common: the rest must look random, not like a word."""
    return _unmasked(value, text, match) and not _placeholder(value) and _entropy(value) >= 3.0


def _random_with_digit(value: str, text: str, match: re.Match[str]) -> bool:
    return _DIGIT.search(value) is not None and _random(value, text, match)


def _url_password(value: str, text: str, match: re.Match[str]) -> bool:
    # `postgres://postgres:postgres@`, `amqp://guest:guest@`: a password equal to its user is an image's
    # documented default, not a secret.
    return value != match.group(1) and not _placeholder(value)


def _has_key_body(value: str, text: str, match: re.Match[str]) -> bool:
    """A BEGIN line followed by `...` (documentation, a test's stand-in) holds no key."""
    return re.search(r"[A-Za-z0-9+/]{16}", value[value.find("-----", 5) + 5 :]) is not None


def _b64decode(value: str) -> bytes | None:
    altchars = b"-_" if "-" in value or "_" in value else None
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None


def _user_password(value: str, text: str, match: re.Match[str]) -> bool:
    """Base64 of `user:password` (HTTP Basic, Docker's `auth`): decode it and look."""
    decoded = _b64decode(value)
    try:
        plain = decoded.decode("utf-8") if decoded is not None else ""
    except UnicodeDecodeError:
        return False
    _, colon, password = plain.partition(":")
    return bool(colon) and plain.isprintable() and len(password) >= 3 and not _placeholder(password)


def _discord(value: str, text: str, match: re.Match[str]) -> bool:
    """A Discord bot token starts with the bot's numeric id in base64 (detect-secrets: DiscordBotToken)."""
    decoded = _b64decode(value.split(".", 1)[0])
    return decoded is not None and decoded.isdigit() and len(decoded) >= 17


def _real_webhook(value: str, text: str, match: re.Match[str]) -> bool:
    # Slack's documentation shows T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX.
    return re.search(r"X{6}|0{8}", value) is None


def _on_command_line(program: str) -> Accept:
    """A flag that holds a credential only for `program`: curl's `-u user:pw`, mysql's `-ppw`."""

    def accept(value: str, text: str, match: re.Match[str]) -> bool:
        before = text[max(0, match.start() - 300) : match.start()]
        return program in before[before.rfind("\n") + 1 :].lower() and not _placeholder(value)

    return accept
