from __future__ import annotations

import pytest

from tether.model.secrets import find_secret, redact

# Built from parts so this file does not itself look like it leaks credentials to scanners.
GITHUB = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-abcdefABCDEF"
OPENAI = "sk-proj-" + "abc123DEF456ghi789JKL0"
ANTHROPIC = "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3"
GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrstuv"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"deploy key is {AWS} for the bucket", "AWS access key"),
        (f"export GH_TOKEN={GITHUB}", "GitHub token"),
        (f"slack bot uses {SLACK}", "Slack token"),
        (f"client = OpenAI(api_key='{OPENAI}')", "OpenAI/Anthropic API key"),
        (f"ANTHROPIC_API_KEY={ANTHROPIC}", "OpenAI/Anthropic API key"),
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
    ],
)
def test_redact_replaces_only_the_secret(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert find_secret(redact(text)) is None


def test_redact_is_idempotent() -> None:
    once = redact(f"password: hunter22 and {OPENAI}")
    assert redact(once) == once
