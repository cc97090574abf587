"""The credential table for `test_secrets.py`: common formats that must be caught, look-alikes that must not.

Every value is made up at import time from a hash of its label, in the provider's published shape (prefix,
alphabet, length), so this file holds no string a secret scanner would flag and the table is the same on
every run. `expected` is the kind `find_secret` should name; `secret` is the part `redact` must remove.

`python tests/secret_samples.py` prints the detection and false-positive rates of `tether.model.secrets`;
`python tests/secret_samples.py OTHER.py` those of another module with a `find_secret` (an older version,
say: `git show REV:src/tether/model/secrets.py > /tmp/old.py`). `test_secrets.py` asserts them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()
DIGITS = "0123456789"
HEX = "0123456789abcdef"
ALNUM = LOWER + UPPER + DIGITS
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def fake(label: str, length: int, alphabet: str = ALNUM) -> str:
    """`length` characters of `alphabet`, the same for the same label on every run."""
    out: list[str] = []
    counter = 0
    while len(out) < length:
        digest = hashlib.sha256(f"{label}:{counter}".encode()).digest()
        out.extend(alphabet[b % len(alphabet)] for b in digest)
        counter += 1
    return "".join(out[:length])


def fake_bytes(label: str, length: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha512(f"{label}:{counter}".encode()).digest()
        counter += 1
    return out[:length]


def b64(data: bytes | str, *, url: bool = False, pad: bool = True) -> str:
    raw = data.encode() if isinstance(data, str) else data
    text = (base64.urlsafe_b64encode(raw) if url else base64.b64encode(raw)).decode()
    return text if pad else text.rstrip("=")


def pem_body(label: str, size: int = 600, width: int = 64) -> str:
    text = b64(fake_bytes(label, size))
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def jwt(label: str) -> str:
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}), url=True, pad=False)
    payload = b64(json.dumps({"sub": fake(label, 8, DIGITS), "role": "admin"}), url=True, pad=False)
    return f"{header}.{payload}.{fake(label + 'sig', 43, URLSAFE)}"


@dataclass(frozen=True)
class Sample:
    format: str
    text: str
    expected: str | None  # None: a look-alike, must not be flagged
    secret: str = ""  # the substring that redact() must remove (the whole credential when it is short)


def _samples() -> list[Sample]:
    s: list[Sample] = []

    def add(fmt: str, secret: str, text: str, kind: str) -> None:
        s.append(Sample(fmt, text.replace("{}", secret), kind, secret))

    # ---- cloud
    aws_id = "AKIA" + fake("aws-id", 16, UPPER + "234567")
    add("AWS access key id", aws_id, "aws_access_key_id = {}", "AWS access key")
    add(
        "AWS temporary key id (ASIA)",
        "ASIA" + fake("aws-sts", 16, UPPER + DIGITS),
        "creds: {} (STS)",
        "AWS access key",
    )
    aws_secret = fake("aws-secret", 40, B64)
    add("AWS secret access key", aws_secret, "aws_secret_access_key = {}", "AWS secret key")
    add(
        "AWS secret key in JSON",
        fake("aws-json", 40, B64),
        '{"AccessKeyId": "x", "SecretAccessKey": "{}"}',
        "AWS secret key",
    )
    add("Google API key", "AIza" + fake("gcp-key", 35, URLSAFE), "const maps = '{}';", "Google API key")
    sa_body = pem_body("gcp-sa", 900).replace("\n", "\\n")
    add(
        "GCP service-account JSON",
        sa_body[:64],
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "'
        + fake("gcp-kid", 40, HEX)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + sa_body
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}',
        "GCP service account key",
    )
    add(
        "Google OAuth client secret",
        "GOCSPX-" + fake("gocspx", 28, URLSAFE),
        "client_secret {}",
        "Google OAuth client secret",
    )
    add(
        "Google OAuth access token",
        "ya29." + fake("ya29", 120, URLSAFE),
        "curl -H 'x: {}'",
        "Google OAuth token",
    )
    azure_key = b64(fake_bytes("azure-account", 64))
    add(
        "Azure storage connection string",
        azure_key,
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={};EndpointSuffix=core.windows.net",
        "Azure shared key",
    )
    add(
        "Azure Service Bus connection string",
        b64(fake_bytes("azure-sb", 32)),
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}",
        "Azure shared key",
    )
    sas = quote(b64(fake_bytes("azure-sas", 32)), safe="")
    add(
        "Azure SAS URL",
        sas,
        "https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2026-01-01T00:00:00Z&sig={}",
        "Azure SAS signature",
    )
    add(
        "Azure AD client secret",
        fake("aad", 3, ALNUM) + "8Q~" + fake("aad2", 34, URLSAFE + "~."),
        "AZURE_CLIENT_SECRET: {}",
        "Azure AD client secret",
    )
    add("DigitalOcean token", "dop_v1_" + fake("do", 64, HEX), "doctl auth init -t {}", "DigitalOcean token")
    add("Alibaba Cloud access key", "LTAI" + fake("ali", 20, ALNUM), "accessKeyId: {}", "Alibaba access key")

    # ---- source hosting, CI
    add("GitHub classic PAT", "ghp_" + fake("ghp", 36), "git clone https://{}@github.com/o/r", "GitHub token")
    add(
        "GitHub fine-grained PAT",
        "github_pat_" + fake("ghfg1", 22) + "_" + fake("ghfg2", 59),
        "GH_TOKEN={}",
        "GitHub token",
    )
    add("GitHub OAuth token", "gho_" + fake("gho", 36), "oauth: {}", "GitHub token")
    add("GitHub app token", "ghs_" + fake("ghs", 36), "installation token {}", "GitHub token")
    add("GitLab PAT", "glpat-" + fake("glpat", 20, URLSAFE), "PRIVATE-TOKEN: {}", "GitLab token")
    add(
        "GitLab runner token",
        "glrt-" + fake("glrt", 20, URLSAFE),
        "gitlab-runner register --token {}",
        "GitLab token",
    )
    add(
        "Atlassian API token",
        "ATATT3" + fake("atl", 186, URLSAFE + "="),
        "jira token {}",
        "Atlassian API token",
    )

    # ---- package registries
    add(
        "npm token",
        "npm_" + fake("npm", 36),
        "npm config set //registry.npmjs.org/:_authToken {}",
        "npm token",
    )
    npmrc = fake("npmrc-a", 8, HEX) + "-" + fake("npmrc-b", 4, HEX) + "-4" + fake("npmrc-c", 3, HEX)
    npmrc += "-a" + fake("npmrc-d", 3, HEX) + "-" + fake("npmrc-e", 12, HEX)
    add(".npmrc auth token", npmrc, "//registry.npmjs.org/:_authToken={}", "npm token")
    add("PyPI token", "pypi-AgEIcHlwaS5vcmc" + fake("pypi", 150, URLSAFE), "password = {}", "PyPI token")
    add("RubyGems token", "rubygems_" + fake("gem", 48, HEX), "GEM_HOST_API_KEY: {}", "RubyGems token")
    add(
        "NuGet API key", "oy2" + fake("nuget", 43, LOWER + DIGITS), "dotnet nuget push -k {}", "NuGet API key"
    )
    add("crates.io token", "cio" + fake("cio", 32), "cargo login {}", "crates.io token")
    add(
        "Docker Hub token",
        "dckr_pat_" + fake("dckr", 27, URLSAFE),
        "docker login -u acme -p {}",
        "Docker Hub token",
    )
    docker_auth = b64("acme:" + fake("docker-pw", 16))
    add(
        "Docker config auth",
        docker_auth,
        '{"auths": {"https://index.docker.io/v1/": {"auth": "{}"}}}',
        "Docker registry auth",
    )
    add("JFrog Artifactory API key", "AKCp" + fake("jfrog", 69), "X-JFrog-Art-Api: {}", "JFrog API key")

    # ---- payments, commerce
    add("Stripe live secret key", "sk_live_" + fake("stripe-live", 99), "Stripe.api_key = '{}'", "Stripe key")
    add("Stripe test secret key", "sk_test_" + fake("stripe-test", 24), "STRIPE_SECRET_KEY={}", "Stripe key")
    add("Stripe restricted key", "rk_live_" + fake("stripe-rk", 24), "key {}", "Stripe key")
    add(
        "Stripe webhook secret",
        "whsec_" + fake("whsec", 32),
        "endpoint_secret = '{}'",
        "Stripe webhook secret",
    )
    add("Square access token", "sq0atp-" + fake("square", 22, URLSAFE), "square: {}", "Square token")
    add(
        "Shopify access token",
        "shpat_" + fake("shpat", 32, HEX),
        "X-Shopify-Access-Token: {}",
        "Shopify token",
    )
    add("Shopify shared secret", "shpss_" + fake("shpss", 32, HEX), "SHOPIFY_API_SECRET={}", "Shopify token")
    add(
        "Braintree access token",
        "access_token$production$" + fake("bt1", 16, LOWER + DIGITS) + "$" + fake("bt2", 32, HEX),
        "gateway = {}",
        "Braintree token",
    )

    # ---- messaging, email
    add(
        "Slack bot token",
        "xoxb-" + fake("slb1", 12, DIGITS) + "-" + fake("slb2", 13, DIGITS) + "-" + fake("slb3", 24),
        "SLACK_BOT_TOKEN={}",
        "Slack token",
    )
    add(
        "Slack user token",
        "xoxp-" + "-".join(fake(f"slu{i}", 12, DIGITS) for i in range(3)) + "-" + fake("slu4", 32, HEX),
        "user token {}",
        "Slack token",
    )
    add(
        "Slack app token",
        "xapp-1-A"
        + fake("sla1", 10, UPPER + DIGITS)
        + "-"
        + fake("sla2", 13, DIGITS)
        + "-"
        + fake("sla3", 64, HEX),
        "SLACK_APP_TOKEN={}",
        "Slack token",
    )
    add(
        "Slack webhook",
        "T"
        + fake("swt", 10, UPPER + DIGITS)
        + "/B"
        + fake("swb", 10, UPPER + DIGITS)
        + "/"
        + fake("sws", 24),
        "curl -X POST https://hooks.slack.com/services/{}",
        "Slack webhook",
    )
    discord = b64(fake("discord-id", 18, DIGITS), pad=False)
    discord += "." + fake("dc2", 6, URLSAFE) + "." + fake("dc3", 38, URLSAFE)
    add("Discord bot token", discord, "client.run('{}')", "Discord bot token")
    add(
        "Discord webhook",
        fake("dwid", 19, DIGITS) + "/" + fake("dwtok", 68, URLSAFE),
        "https://discord.com/api/webhooks/{}",
        "Discord webhook",
    )
    add(
        "Telegram bot token",
        fake("tg1", 10, DIGITS) + ":AA" + fake("tg2", 33, URLSAFE),
        "bot = Bot('{}')",
        "Telegram bot token",
    )
    add(
        "Telegram Bot API URL",
        fake("tg3", 9, DIGITS) + ":AA" + fake("tg4", 33, URLSAFE),
        "curl https://api.telegram.org/bot{}/getMe",
        "Telegram bot token",
    )
    add("Twilio API key", "SK" + fake("twsk", 32, HEX), "twilio api key {}", "Twilio key")
    add(
        "Twilio account SID with auth token",
        fake("twtok", 32, HEX),
        "TWILIO_ACCOUNT_SID=AC" + fake("twac", 32, HEX) + "\nTWILIO_AUTH_TOKEN={}",
        "Twilio key",
    )
    add(
        "SendGrid API key",
        "SG." + fake("sg1", 22, URLSAFE) + "." + fake("sg2", 43, URLSAFE),
        "sendgrid.SendGridAPIClient('{}')",
        "SendGrid API key",
    )
    add("Mailgun API key", "key-" + fake("mailgun", 32, HEX), "api: {}", "Mailgun API key")
    add("Mailchimp API key", fake("mailchimp", 32, HEX) + "-us14", "MC {}", "Mailchimp API key")
    teams = "/".join(
        [
            f"{fake('t1', 8, HEX)}-{fake('t2', 4, HEX)}-{fake('t3', 4, HEX)}-{fake('t4', 4, HEX)}-{fake('t5', 12, HEX)}"
            f"@{fake('t6', 8, HEX)}-{fake('t7', 4, HEX)}-{fake('t8', 4, HEX)}-{fake('t9', 4, HEX)}-{fake('ta', 12, HEX)}",
            "IncomingWebhook",
            fake("tb", 32, HEX),
            f"{fake('tc', 8, HEX)}-{fake('td', 4, HEX)}-{fake('te', 4, HEX)}-{fake('tf', 4, HEX)}-{fake('tg', 12, HEX)}",
        ]
    )
    add(
        "Microsoft Teams webhook",
        teams,
        "https://acme.webhook.office.com/webhookb2/{}",
        "Microsoft Teams webhook",
    )

    # ---- AI providers
    add(
        "OpenAI project key",
        "sk-proj-" + fake("oai1", 58, URLSAFE) + "T3BlbkFJ" + fake("oai2", 58, URLSAFE),
        "OPENAI_API_KEY={}",
        "OpenAI API key",
    )
    add("OpenAI legacy key", "sk-" + fake("oai-legacy", 48), "openai.api_key = '{}'", "OpenAI API key")
    add(
        "Anthropic API key",
        "sk-ant-api03-" + fake("ant", 93, URLSAFE) + "AA",
        "x-api-key: {}",
        "Anthropic API key",
    )
    add(
        "Hugging Face token",
        "hf_" + fake("hf", 34, LOWER + UPPER),
        "huggingface-cli login --token {}",
        "Hugging Face token",
    )
    add("Groq API key", "gsk_" + fake("groq", 52), "GROQ_API_KEY={}", "Groq API key")
    add("Replicate token", "r8_" + fake("r8", 37), "export REPLICATE_API_TOKEN={}", "Replicate token")

    # ---- secret managers, infrastructure, observability
    add("Vault service token", "hvs." + fake("hvs", 91, URLSAFE), "VAULT_TOKEN={}", "Vault token")
    add("Vault batch token", "hvb." + fake("hvb", 138, URLSAFE), "vault login {}", "Vault token")
    add("Doppler token", "dp.pt." + fake("doppler", 43), "DOPPLER_TOKEN={}", "Doppler token")
    add(
        "1Password service account token",
        "ops_eyJ" + fake("ops", 300, B64),
        "OP_SERVICE_ACCOUNT_TOKEN={}",
        "1Password service account token",
    )
    add(
        "age secret key",
        "AGE-SECRET-KEY-1" + fake("age", 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
        "# created: 2026-01-01\n{}",
        "age secret key",
    )
    add(
        "Terraform Cloud token",
        fake("tfc1", 14, LOWER + DIGITS) + ".atlasv1." + fake("tfc2", 67, URLSAFE),
        'credentials "app.terraform.io" { token = "{}" }',
        "Terraform Cloud token",
    )
    add("Pulumi token", "pul-" + fake("pulumi", 40, HEX), "PULUMI_ACCESS_TOKEN={}", "Pulumi token")
    add(
        "Databricks token",
        "dapi" + fake("dapi", 32, HEX),
        "databricks configure --token {}",
        "Databricks token",
    )
    add(
        "Grafana service account token",
        "glsa_" + fake("glsa", 32) + "_" + fake("glsa2", 8, HEX),
        "grafana: {}",
        "Grafana token",
    )
    add("Sentry user token", "sntryu_" + fake("sentry", 64, HEX), "SENTRY_AUTH_TOKEN={}", "Sentry token")
    add("New Relic user key", "NRAK-" + fake("nr", 27, UPPER + DIGITS), "newrelic key {}", "New Relic key")
    add("Linear API key", "lin_api_" + fake("linear", 40), "linear: {}", "Linear API key")
    add(
        "Postman API key",
        "PMAK-" + fake("pm1", 24, HEX) + "-" + fake("pm2", 34, HEX),
        "postman key {}",
        "Postman API key",
    )
    add(
        "Airtable token",
        "pat" + fake("at1", 14) + "." + fake("at2", 64, HEX),
        "AIRTABLE {}",
        "Airtable token",
    )
    add("Supabase token", "sbp_" + fake("supabase", 40, HEX), "supabase login --token {}", "Supabase token")
    add("Fly.io token", "fo1_" + fake("fly", 43, URLSAFE), "FLY_API_TOKEN={}", "Fly.io token")

    # ---- private keys
    rsa = pem_body("rsa", 1190)
    add(
        "RSA private key (PEM)",
        rsa.splitlines()[3],
        f"-----BEGIN RSA PRIVATE KEY-----\n{rsa}\n-----END RSA PRIVATE KEY-----",
        "private key block",
    )
    ossh = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" + pem_body(
        "ossh", 300, 70
    )
    add(
        "OpenSSH private key",
        ossh.splitlines()[2],
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{ossh}\n-----END OPENSSH PRIVATE KEY-----\n",
        "private key block",
    )
    ec = pem_body("ec-truncated", 120)
    add(
        "EC private key without its END line",
        ec.splitlines()[-1],
        f"here is the key:\n-----BEGIN EC PRIVATE KEY-----\n{ec}\n",
        "private key block",
    )
    pgp = pem_body("pgp", 700)
    add(
        "PGP private key block",
        pgp.splitlines()[5],
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{pgp}\n=a1B2\n-----END PGP PRIVATE KEY BLOCK-----",
        "private key block",
    )
    pkcs8 = pem_body("pkcs8", 400)
    add(
        "encrypted PKCS#8 key",
        pkcs8.splitlines()[1],
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{pkcs8}\n-----END ENCRYPTED PRIVATE KEY-----",
        "private key block",
    )

    # ---- connection strings
    pw = fake("pg-pw", 16)
    add("PostgreSQL URL", pw, "DATABASE_URL=postgres://app:{}@db.internal:5432/app", "credentials in URL")
    add("MySQL URL", fake("my-pw", 14), "mysql://root:{}@10.0.0.5:3306/shop", "credentials in URL")
    add(
        "MongoDB SRV URL",
        fake("mongo-pw", 20),
        "mongodb+srv://svc:{}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true",
        "credentials in URL",
    )
    add(
        "Redis URL with password only",
        fake("redis-pw", 24),
        "REDIS_URL=redis://:{}@cache:6379/0",
        "credentials in URL",
    )
    add("AMQP URL", fake("amqp-pw", 18), "amqp://worker:{}@rabbit:5672/%2f", "credentials in URL")
    add(
        "ADO.NET connection string",
        fake("ado-pw", 14),
        "Server=tcp:db.acme.net,1433;Database=app;User ID=sa;Password={};Encrypt=True",
        "password assignment",
    )
    add(
        "JDBC URL with password parameter",
        fake("jdbc-pw", 12),
        "jdbc:mysql://db:3306/app?user=app&password={}&useSSL=true",
        "password assignment",
    )

    # ---- HTTP authorization
    add("Bearer token (opaque)", fake("bearer", 40, URLSAFE), "Authorization: Bearer {}", "bearer token")
    basic = b64("deploy:" + fake("basic-pw", 18))
    add(
        "Basic auth header",
        basic,
        "curl -H 'Authorization: Basic {}' https://api.acme.dev",
        "basic auth header",
    )
    add(
        "curl --user",
        fake("curl-pw", 16),
        "curl -u admin:{} https://ci.acme.dev/api",
        "credentials on command line",
    )
    add(
        "token authorization header",
        fake("gh-hdr", 40, HEX),
        "Authorization: token {}",
        "authorization header",
    )
    add("JWT in a cookie", jwt("cookie"), "Cookie: session={}", "JWT")

    # ---- Kubernetes
    add(
        "kubeconfig client-key-data",
        b64(fake_bytes("kube-key", 240)),
        "users:\n- name: admin\n  user:\n    client-key-data: {}\n",
        "kubeconfig credential",
    )
    add(
        "kubeconfig token",
        fake("kube-tok", 6, LOWER + DIGITS) + "." + fake("kube-tok2", 16, LOWER + DIGITS),
        "users:\n- name: ci\n  user:\n    token: {}\n",
        "api key assignment",
    )

    # ---- generic assignments
    add(".env password", fake("env-pw", 14), "DB_PASSWORD={}", "password assignment")
    add("YAML password", "Tr0ub4dor&3", 'db:\n  password: "{}"', "password assignment")
    add(
        "JSON client secret",
        fake("json-cs", 32, URLSAFE),
        '{"client_id": "web", "client_secret": "{}"}',
        "api key assignment",
    )
    add(
        "Django SECRET_KEY",
        "django-insecure-" + fake("django", 50, LOWER + DIGITS + "!@#%^&*(-_=+)"),
        "SECRET_KEY = '{}'",
        "api key assignment",
    )
    add("X-API-Key header", fake("xapikey", 32, HEX), "X-API-Key: {}", "api key assignment")
    add(
        "password with a comma in it",
        "pass,word42",
        "password=pass,word42 for the staging box",
        "password assignment",
    )
    add("password after a masking key", "Tr0ub4dor&3x", 'password: password: "{}"', "password assignment")
    add(
        "netrc password",
        fake("netrc", 20),
        "machine api.heroku.com login me@acme.dev password {}",
        "netrc password",
    )
    add(
        "--password flag",
        fake("flag-pw", 14),
        "psql --host db --password={} app",
        "credentials on command line",
    )
    add("mysql -p", fake("mysql-p", 14), "mysql -u root -p{} shop", "credentials on command line")
    add("XML password element", fake("xml-pw", 16), "<password>{}</password>", "credential in XML")
    add("Spring property", fake("spring", 12) + "!", "spring.datasource.password={}", "password assignment")
    add(
        "password told in prose",
        "Kx9#mP2vQ",
        "fyi the staging password is {} until Friday",
        "password assignment",
    )
    add("provider-named key", fake("named-key", 32, HEX), "ALGOLIA_ADMIN_KEY={}", "api key assignment")
    return s


def _lookalikes() -> list[Sample]:
    pairs = [
        ("AWS's documented example key id", "deploy with AKIA" + "IOSFODNN7EXAMPLE from the AWS docs"),
        (
            "AWS's documented example secret",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
        ),
        ("UUID", "request_id = 3f0e4c1a-9b7d-4e2f-8a6c-5d1b0e9f7a23"),
        ("git SHA", "fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (see #412)"),
        ("npm lockfile integrity hash", '"integrity": "sha512-' + b64(fake_bytes("lock", 64)) + '"'),
        ("pip --hash", "requests==2.31.0 --hash=sha256:" + fake("piphash", 64, HEX)),
        ("Docker image digest", "image: python@sha256:" + fake("digest", 64, HEX)),
        (
            "base64 of ordinary text",
            "echo " + b64("Hello, world! This is just some ordinary text.") + " | base64 -d",
        ),
        ("password placeholder", "password: <your password>"),
        ("env var reference", "api_key: ${OPENAI_API_KEY}"),
        ("process.env reference", "const apiKey = process.env.API_KEY;"),
        ("os.environ reference", 'token = os.environ["TOKEN"]'),
        ("sk- in prose", "OpenAI keys look like sk-... and Anthropic's start with sk-ant-"),
        ("sk-proj placeholder", "OPENAI_API_KEY=sk-proj-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("CSS hex colours", "a { color: #1e90ff; background: #FFFFFF; border-color: #c0ffee }"),
        ("version strings", '"typescript": "^5.4.2", version = "2.31.0", node v20.11.1'),
        ("file paths", "keys live in ~/.ssh/id_rsa and src/auth/token_store.py reads /etc/app/secrets.yaml"),
        (
            "Slack's placeholder webhook",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        ),
        ("Stripe publishable key", "Stripe('pk_live_" + fake("pk", 24) + "')"),
        ("docs connection string", "postgres://user:password@localhost/db is the docs example"),
        ("getpass call", "password = getpass.getpass()"),
        ("Bearer in prose", "Bearer tokens expire after 15 minutes; refresh in auth/session.py"),
        ("templated bearer header", "Authorization: Bearer ${ACCESS_TOKEN}"),
        ("token endpoint URL", 'token_url = "https://oauth2.googleapis.com/token"'),
        ("max_tokens", "max_tokens: 4096"),
        (
            "public key and certificate",
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQ\n-----END PUBLIC KEY-----",
        ),
        ("SSH public key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake("sshpub", 43, B64) + " dev@laptop"),
        ("Helm template", "password: {{ .Values.db.password }}"),
        ("placeholder key", 'api_key = "YOUR_API_KEY_HERE"'),
        ("bcrypt hash field", '"password_hash": "$2b$12$' + fake("bcrypt", 53, ALNUM + "./") + '"'),
        ("tokenizer code", "tokenizer = AutoTokenizer.from_pretrained(model_name)"),
        ("Basic auth in prose", "Basic authentication is supported via --user on the CLI"),
        ("sha256 in prose", "sha256: " + fake("sha-prose", 64, HEX)),
        ("Twilio SID placeholder", "TWILIO_ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("Windows path", r"C:\Users\dev\AppData\Local\acme\token.json"),
        ("git remote", "git@github.com:acme/secrets-manager.git"),
        ("password type hint", "def login(user: str, password: str) -> bool:"),
        ("masked password", "password: ********"),
        ("Kubernetes secret reference", "valueFrom:\n  secretKeyRef:\n    name: db\n    key: password"),
        ("GitHub Actions secret", "token: ${{ secrets.GITHUB_TOKEN }}"),
        ("change-me placeholder", "JWT_SECRET=change-me-in-production"),
        ("elided key", "OPENAI_API_KEY=sk-..."),
        ("argv subscript", "token = sys.argv[1]"),
        ("anonymous FTP", "ftp://anonymous:anonymous@ftp.example.com/pub"),
        ("primary key", "primary_key = 'user_id42x'"),
        ("sort key argument", "sorted(items, key=itemgetter(1))"),
        ("secret type name", "type: kubernetes.io/service-account-token"),
        # Seen in real repositories' code and docs (a scan of six public ones):
        ("SPDX licence id", "licenseKey: 'Apache-2.0',"),
        ("masked GitHub token", "'https://ghp_" + "x" * 36 + "@github.com/owner/repo.git'"),
        (
            "image's default credentials",
            'DATABASE_URL="postgresql://postgres:postgres@localhost:5432/postgres"',
        ),
        ("test stand-in value", "GEMINI_API_KEY=secret-key"),
        ("private key header without a key", "private_key: '-----BEGIN PRIVATE KEY-----\\n...',"),
        ("repeated-digit key id", "aws_access_key_id=os.getenv('AWS_ACCESS_KEY_ID', 'AKIA" + "6" * 16 + "')"),
        ("password whereabouts", "the staging password is stored in Vault under secret/staging"),
        ("password policy prose", "The password policy requires 12+ characters and 1 digit."),
    ]
    return [Sample(name, text, None) for name, text in pairs]


CREDENTIALS = _samples()
LOOKALIKES = _lookalikes()


def rates(find_secret: Callable[[str], str | None]) -> tuple[float, float]:
    """(share of CREDENTIALS flagged, of any kind; share of LOOKALIKES flagged)."""
    detected = sum(1 for c in CREDENTIALS if find_secret(c.text) is not None)
    false_alarms = sum(1 for c in LOOKALIKES if find_secret(c.text) is not None)
    return detected / len(CREDENTIALS), false_alarms / len(LOOKALIKES)


def _load(path: str) -> Callable[[str], str | None]:
    spec = importlib.util.spec_from_file_location("secrets_under_test", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.find_secret  # type: ignore[no-any-return]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        find = _load(sys.argv[1])
    else:
        from tether.model.secrets import find_secret as find
    detection, false_positives = rates(find)
    print(
        f"detection {detection:.1%} of {len(CREDENTIALS)} credential formats, "
        f"false positives {false_positives:.1%} of {len(LOOKALIKES)} look-alikes"
    )
