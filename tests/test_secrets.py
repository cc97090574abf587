from __future__ import annotations

import time

import pytest

from secret_samples import CREDENTIALS, LOOKALIKES, Sample, b64, fake, fake_bytes, pem_body, rates
from tether.model.secrets import find_secret, redact

# Built from parts so this file does not itself look like it leaks credentials to scanners.
GITHUB = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
AWS = "AKIA" + "Q3EGRWJ5XN2PZT7H"
AWS_DOCS_EXAMPLE = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-abcdefABCDEF"
OPENAI = "sk-proj-" + "abc123DEF456ghi789JKL0"
ANTHROPIC = "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"

# The table's floor (see tests/secret_samples.py and the README's "No secrets in memory").
MIN_FORMATS, MIN_LOOKALIKES = 60, 25
MIN_DETECTION, MAX_FALSE_POSITIVES = 0.95, 0.05


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"deploy key is {AWS} for the bucket", "AWS access key"),
        (f"export GH_TOKEN={GITHUB}", "GitHub token"),
        (f"slack bot uses {SLACK}", "Slack token"),
        (f"client = OpenAI(api_key='{OPENAI}')", "OpenAI API key"),
        (f"ANTHROPIC_API_KEY={ANTHROPIC}", "Anthropic API key"),
        (f"maps key {GOOGLE}", "Google API key"),
        (f"Authorization: Bearer {JWT}", "JWT"),
        (f"the signing key:\n{PEM}\n", "private key block"),
        ('DB_PASSWORD="hunter2!x"', "password assignment"),
        ("password: hunter22", "password assignment"),
        ('{"password": "correct horse battery staple"}', "password assignment"),
        ("login with password = `s3cr3t-pw`", "password assignment"),
        ("api_key=abcd1234efgh5678", "api key assignment"),
        ('client_secret: "f00b4rb4z"', "api key assignment"),
        ("DATABASE_URL=postgres://app:s3cretpw@db.internal:5432/app", "credentials in URL"),
        ("curl -H 'Authorization: Bearer abcdef0123456789abcdef01'", "bearer token"),
    ],
)
def test_finds_credentials(text: str, kind: str) -> None:
    assert find_secret(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "password hashing uses bcrypt with cost 12",
        "def login(user: str, password: str) -> bool:",
        "def connect(token: Optional[str] = None) -> Client:",
        "set OPENAI_API_KEY in your shell before running distill",
        "export OPENAI_API_KEY=$OPENAI_API_KEY",
        'password = os.environ["DB_PASSWORD"]',
        "password = get_password(user)",
        "secret = settings.SECRET_KEY_2",
        'password: "${DB_PASSWORD}"',
        "api_key: <your api key>",
        'token = ""',
        "password: ********",
        "max_tokens = 1024",
        "if password == hashed:",
        "The secret: always run migrations before seeding.",
        "Use the task-runner-with-very-long-name for builds",
        "sk-learn style pipelines are fine here",
        "commit 3f2a9c1e0b7d4a5f6e8c9b0a1d2e3f4a5b6c7d8e fixed it",
        "postgres://user:password@localhost/db is the docs example",
        "git@github.com:org/repo.git",
        "Bearer tokens expire after 15 minutes; refresh in auth/session.py",
        f"AWS documents {AWS_DOCS_EXAMPLE} as its example key",
        "bypass = true",
        "",
    ],
)
def test_leaves_ordinary_prose_and_code_alone(text: str) -> None:
    assert find_secret(text) is None
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token is {GITHUB} ok", "token is [REDACTED:GitHub token] ok"),
        ('DB_PASSWORD="hunter2!x" in .env', "DB_PASSWORD=[REDACTED:password assignment] in .env"),
        (f"export GH_TOKEN={GITHUB}", "export GH_TOKEN=[REDACTED:GitHub token]"),
        (
            "postgres://app:s3cretpw@db:5432/app",
            "postgres://app:[REDACTED:credentials in URL]@db:5432/app",
        ),
        (f"a {AWS} and b {SLACK}", "a [REDACTED:AWS access key] and b [REDACTED:Slack token]"),
        (f"key:\n{PEM}\ndone", "key:\n[REDACTED:private key block]\ndone"),
        # Overlapping findings are one span, named for the most specific rule.
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:JWT]"),
        # The value is judged whole: a comma does not end it, and a key's "value" that is another key does
        # not hide the real one.
        ("password=pass,word42 ok", "password=[REDACTED:password assignment] ok"),
        ('password: password: "Tr0ub4dor&3"', "password: password: [REDACTED:password assignment]"),
        ("f(password=s3cr3t!, user=bob)", "f(password=[REDACTED:password assignment], user=bob)"),
        (
            "Server=db;User ID=sa;Password=Hunter2x;Encrypt=True",
            "Server=db;User ID=sa;Password=[REDACTED:password assignment];Encrypt=True",
        ),
        (
            "REDIS_URL=redis://:s3cretpw@cache:6379",
            "REDIS_URL=redis://:[REDACTED:credentials in URL]@cache:6379",
        ),
    ],
)
def test_redact_replaces_only_the_secret(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert find_secret(redact(text)) is None


def test_redact_is_idempotent() -> None:
    once = redact(f"password: hunter22 and {OPENAI}")
    assert redact(once) == once


def test_a_private_key_without_its_end_line_is_redacted_to_the_end_of_its_body() -> None:
    body = pem_body("no-end", 300)
    text = f"pasted:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n\nthen I rotated it, see notes."
    redacted = redact(text)
    assert redacted == "pasted:\n[REDACTED:private key block]\n\nthen I rotated it, see notes."
    # Cut off at the end of the text, in JSON with escaped newlines, or flattened onto one line.
    for cut in (
        f"-----BEGIN PRIVATE KEY-----\n{body}",
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + body.replace("\n", "\\n"),
        "TOOL ERROR: -----BEGIN EC PRIVATE KEY----- " + body.replace("\n", " "),
    ):
        redacted = redact(cut)
        assert all(line not in redacted for line in body.splitlines() if len(line) > 15), redacted


# ---------------------------------------------------------------- the table (tests/secret_samples.py)


@pytest.mark.parametrize("sample", CREDENTIALS, ids=lambda s: s.format)
def test_table_credential_is_found_and_redacted(sample: Sample) -> None:
    assert find_secret(sample.text) == sample.expected
    redacted = redact(sample.text)
    assert sample.secret and sample.secret not in redacted
    assert find_secret(redacted) is None
    assert redact(redacted) == redacted


@pytest.mark.parametrize("sample", LOOKALIKES, ids=lambda s: s.format)
def test_table_lookalike_is_left_alone(sample: Sample) -> None:
    assert find_secret(sample.text) is None
    assert redact(sample.text) == sample.text


def test_table_rates() -> None:
    assert len({c.format for c in CREDENTIALS}) == len(CREDENTIALS) >= MIN_FORMATS
    assert len({c.format for c in LOOKALIKES}) == len(LOOKALIKES) >= MIN_LOOKALIKES
    detection, false_positives = rates(find_secret)
    print(
        f"\nsecret detection: {detection:.1%} of {len(CREDENTIALS)} credential formats, "
        f"false positives: {false_positives:.1%} of {len(LOOKALIKES)} look-alikes"
    )
    assert detection >= MIN_DETECTION
    assert false_positives <= MAX_FALSE_POSITIVES


# ---------------------------------------------------------------- speed: linear on a megabyte

MB = 1_000_000
_ORDINARY = (
    "The deploy script reads token_url from config.yaml; password hashing uses bcrypt (cost 12).\n"
    "def login(user: str, password: str) -> bool: return check(user, password)  # see auth/session.py\n"
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8, https://github.com/acme/app/pull/12, max_tokens = 1024\n"
    "api_key: ${API_KEY}; secret = settings.SECRET_KEY; Basic authentication and Bearer tokens; curl -sS\n"
)


def _megabyte(piece: str) -> str:
    return (piece * (MB // len(piece) + 1))[:MB]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_megabyte(_ORDINARY + "\n".join(c.text for c in CREDENTIALS[::7])), id="mixed"),
        pytest.param(_megabyte(b64(fake_bytes("blob", 1000))), id="base64"),
        pytest.param(_megabyte("password="), id="keys without values"),
        pytest.param(_megabyte("-----BEGIN PRIVATE KEY-----\n"), id="private key headers"),
        pytest.param(_megabyte("sk-"), id="one long token-like run"),
        pytest.param(_megabyte("curl -u a:"), id="curl users"),
        pytest.param(_megabyte("://a:b" + fake("u", 4) + "@"), id="URLs"),
    ],
)
def test_a_megabyte_is_scanned_in_linear_time(text: str) -> None:
    # Generous: about 0.1 s for ordinary text and under 1 s for the worst of these on a quiet machine; a
    # quadratic path would take minutes on a megabyte.
    started = time.perf_counter()
    find_secret(text)
    redact(text)
    assert time.perf_counter() - started < 15


def test_the_hooks_cheap_screen_passes_every_credential_of_the_table_to_the_detector() -> None:
    """`prompt.may_hold_secret` decides whether a hook imports the detector: it must be True for every text the
    detector flags (a False there would let a prompt's credential into the session state unchecked)."""
    from tether.model.prompt import may_hold_secret

    missed = [s.format for s in CREDENTIALS if find_secret(s.text) and not may_hold_secret(s.text)]
    assert missed == []
    assert not may_hold_secret("why does the upload retry loop back off, and where is it configured?")
