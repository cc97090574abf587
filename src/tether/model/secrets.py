"""Likely credentials in text: find them (to refuse a memory) or redact them (in distilled facts).

DESIGN §8: no secrets in memory. Two kinds of rules:

- **Provider formats**: a token's own prefix, alphabet and length (`ghp_…`, `xoxb-…`, `AKIA…`). The
  formats are those of the public rule sets of gitleaks (`config/gitleaks.toml`, MIT) and Yelp's
  detect-secrets plugins (Apache-2.0); the expressions are written here, for Python and for this module's
  guarantees, and each rule names its source or its reason.
- **Context rules**: a value assigned to a key named like a credential (`password = …`, `api_key: …`),
  credentials in a URL, an `Authorization` header, a private key block. These are specific on purpose: a
  memory that *talks about* passwords ("password hashing uses bcrypt", `password: str`, `OPENAI_API_KEY`
  with no value, `${DB_PASSWORD}`) must pass; a memory that *contains* one must not. A false alarm on every
  third note would teach people to pass `--allow-secret` by reflex.

Speed: every expression is linear (no nested quantifiers over overlapping classes; open-ended repetitions
are bounded or end at a character they cannot contain), starts with a literal where it can (so `re` skips
to it instead of trying every position), runs only when one of its keywords is in the text, and the
case-insensitive ones run case-sensitively on one lower-cased copy. A megabyte takes well under a second.

>>> find_secret("token=ghp_0123456789abcdefghijABCDEFGHIJ012345")
'GitHub token'
>>> find_secret("AWS's documented example key is AKIAIOSFODNN7EXAMPLE") is None
True
>>> redact("token=ghp_0123456789abcdefghijABCDEFGHIJ012345")
'token=[REDACTED:GitHub token]'
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tether.model.secret_values import (
    _JUDGED,
    _QUOTES,
    _assignment,
    _discord,
    _has_key_body,
    _machine_token,
    _not_placeholder,
    _on_command_line,
    _random,
    _random_with_digit,
    _real_webhook,
    _unmasked,
    _url_password,
    _user_password,
)
from tether.model.secret_values import (  # the checks that tell a credential from a look-alike
    Accept as _Accept,
)

__all__ = ["find_secret", "redact"]


@dataclass(frozen=True)
class _Rule:
    name: str
    # Compiled on first use (through `re`'s own cache): importing this module, as the session-start hook
    # does, costs nothing, and most runs need a few of the expressions, not all.
    pattern: str
    # Lower-case strings one of which must be in the text for the expression to run at all (empty: always
    # run). A substring test costs next to nothing; an expression over a megabyte does not.
    keywords: tuple[str, ...] = ()
    # The group holding the secret itself (0: the whole match); only that part is redacted, so
    # `password = "x"` keeps its key and reads `password = [REDACTED:…]`.
    group: int = 0
    accept: _Accept | None = None
    # The pattern is lower-case and runs on the ASCII-lower-cased text (same length, same offsets).
    lower: bool = False
    # A token starts here: no letter, digit or underscore right before the match. Checked in code rather
    # than with `\b` or a look-behind, which would stop `re` from skipping ahead to the literal prefix.
    bounded: bool = False
    # Unquoted assignment values: cut where a connection string's next `;Key=` begins, drop trailing
    # punctuation, and judge the whole rest (not the part before the first `,`).
    trim: bool = False


def _token(name: str, pattern: str, *keywords: str, accept: _Accept | None = None) -> _Rule:
    """A provider's token format, matched as written, starting at a token boundary.

    `keywords` only where the pattern cannot start with a literal: a literal start is itself a fast search.
    Without an `accept` of its own, a token is refused only when masked (`ghp_xxxx…`, `sk_live_…EXAMPLE`).
    """
    return _Rule(name, pattern, keywords, accept=accept or _unmasked, bounded=True)


def _context(
    name: str,
    pattern: str,
    *keywords: str,
    group: int = 1,
    accept: _Accept | None = None,
    bounded: bool = False,
    trim: bool = False,
) -> _Rule:
    """A case-insensitive rule (written in lower case) whose secret is one group of the match."""
    return _Rule(name, pattern, keywords, group, accept, lower=True, bounded=bounded, trim=trim)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# ---------------------------------------------------------------- the rules

_PEM_BEGIN = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# Up to the END line, if one comes before the next BEGIN (the look-ahead keeps a run of BEGIN lines linear).
_PEM_TO_END = r"(?:(?!-----BEGIN)[\s\S]){0,16384}?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# A body whose END line is missing (a paste cut short, a digest cut to size): armour headers
# (`Proc-Type: …`, PGP's `Version: …`) and base64 lines, separated by whitespace or a JSON-escaped `\n`,
# then a last short line. Prose after it is left alone: its words are short and not alone on their line.
_PEM_SEP = r"(?:\s|\\[nr])+"
_PEM_BODY = (
    r"(?:" + _PEM_SEP + r"(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): [^\n]{0,200}"
    r"|[A-Za-z0-9+/=]{16,128}))*"
    r"(?:" + _PEM_SEP + r"[A-Za-z0-9+/=]{1,15}(?=[ \t]*(?:\r?\n|\\n|$)))?"
)

# Generic assignments (on lower-cased text): the key ends at the keyword (`DB_PASSWORD`, `"api_key"`,
# `X-API-Key`), then an operator, then a quoted string (bounded) or a run of non-space characters. The
# run is judged whole: `pa,ss;w0rd` is one value, not `pa`. A run longer than 128 characters (more than
# any password) is judged by its start and redacted to its end.
_OP = r"[\"']?([ \t]*(?::=|=>|\?=|:(?!:)|=(?!=))[ \t]*)"
# A password may also be told in prose: "the staging password is Kx9#mP2v" (judged like an unquoted value).
_PASSWORD_OP = r"[\"']?([ \t]*(?::=|=>|\?=|:(?!:)|=(?!=))[ \t]*|[ \t]+is[ \t]+)"
_VALUE = r"(\"[^\"\n]{0,512}\"|'[^'\n]{0,512}'|`[^`\n]{0,512}`|\S{1,128})"
# Each key family starts with a literal, so `re` skips straight to it (one alternation of fifteen names
# would be tried at every position of the text).
_PASSWORD_KEYS = (r"(pass(?:w(?:or)?d|phrase)?)", r"(pwd)")
_SECRET_KEYS = (r"(secret)", r"(token)", r"(key)", r"(credentials?)")

# Ordered: find_secret names the first rule that matches, so specific formats come before the context rules
# that would also catch them (`PRIVATE-TOKEN: glpat-…` is a GitLab token before it is an assignment).
_RULES: tuple[_Rule, ...] = (
    # ---- private keys: PEM (RSA, EC, DSA, PKCS#8, encrypted), OpenSSH and PGP blocks, with or without END
    _Rule(  # a service-account JSON file's private_key (gitleaks: gcp-service-account)
        "GCP service account key",
        r"\"private_key\"\s{0,10}:\s{0,10}\"(-----BEGIN[^\"]*)",
        ('"private_key"',),
        group=1,
    ),
    _Rule(  # gitleaks: private-key; a block cut short is redacted to where its body ends
        "private key block",
        _PEM_BEGIN + "(?:" + _PEM_TO_END + "|" + _PEM_BODY + ")",
        ("private key",),
        accept=_has_key_body,
    ),
    _token("age secret key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # ---- cloud providers
    _token(  # gitleaks: aws-access-token; AWS's documented AKIAIOSFODNN7EXAMPLE is a placeholder
        "AWS access key",
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
        accept=_random,  # and AKIA6666666666666666 is a test's stand-in
    ),
    _context(  # 40 base64 characters after a secret-access-key name (detect-secrets: AWSKeyDetector)
        "AWS secret key",
        r"secret[_-]?access[_-]?key[\"']?(?:[ \t]*(?::=|=>|:|=)[ \t]*|[ \t]+)[\"']?([a-z0-9/+]{40})(?![a-z0-9/+=])",
        "secretaccesskey", "secret_access_key", "secret-access-key",
        accept=_not_placeholder,
    ),
    _token("Google API key", r"AIza[0-9A-Za-z_-]{35}(?![\w-])"),  # gitleaks: gcp-api-key
    _token("Google OAuth client secret", r"GOCSPX-[A-Za-z0-9_-]{28}(?![\w-])"),
    _token("Google OAuth token", r"ya29\.[0-9A-Za-z_-]{20,}"),
    _context(  # storage AccountKey=, Service Bus SharedAccessKey= (detect-secrets: AzureStorageKeyDetector)
        "Azure shared key",
        r"(?:account|sharedaccess)key[ \t]*=[ \t]*([a-z0-9+/]{40,}={0,2})",
        "accountkey", "sharedaccesskey",
    ),
    _context(  # the sig= of a shared access signature URL is the credential itself
        "Azure SAS signature",
        r"[?&]sig=([a-z0-9%+/]{30,}={0,2})",
        "sig=",
        accept=_random,
    ),
    _Rule(  # gitleaks: azure-ad-client-secret (a digit and Q~ after three characters)
        "Azure AD client secret",
        r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
        ("q~",),
    ),
    _token("DigitalOcean token", r"do[opr]_v1_[a-f0-9]{64}(?!\w)"),  # gitleaks: digitalocean-*
    _token("Alibaba access key", r"LTAI[A-Za-z0-9]{12,20}(?!\w)", accept=_random),
    # ---- source hosting and CI
    _token(  # gitleaks: github-pat, github-fine-grained-pat, github-oauth, github-app-token
        "GitHub token",
        r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?!\w)",
    ),
    _token(  # gitleaks: gitlab-pat, -rrt, -ptt, -deploy-token, -runner-authentication-token and kin
        "GitLab token",
        r"(?:gl(?:pat|dt|rt|ft|imt|agent|oas|soat|ffct|ptt|cbt)-[\w-]{20,}|GR1348941[\w-]{20,})",
    ),
    _token("Atlassian API token", r"ATATT3[A-Za-z0-9_=-]{150,}"),  # gitleaks: atlassian-api-token
    _token("Bitbucket app password", r"ATBB[A-Za-z0-9]{32}(?!\w)", accept=_random),
    # ---- package registries
    _token("npm token", r"npm_[A-Za-z0-9]{36}(?!\w)"),  # gitleaks: npm-access-token
    _context(  # .npmrc `//registry/:_authToken=…` and `_auth = …` (detect-secrets: NpmDetector)
        "npm token",
        r"(?<![\w$.-])_auth(?:token)?[ \t]*=[ \t]*([^\s\"']{8,})",
        "_auth",
        accept=_not_placeholder,
    ),
    _token("PyPI token", r"pypi-AgE[A-Za-z0-9_-]{50,}"),  # gitleaks: pypi-upload-token
    _token("RubyGems token", r"rubygems_[a-f0-9]{48}(?!\w)"),
    _token("NuGet API key", r"oy2[a-z0-9]{43}(?!\w)", accept=_random),
    _token("crates.io token", r"cio[A-Za-z0-9]{32}(?!\w)", accept=_random),
    _token("Docker Hub token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}"),
    _Rule(  # ~/.docker/config.json: "auth" is base64 of user:password
        "Docker registry auth",
        r"\"auth\"\s{0,10}:\s{0,10}\"([A-Za-z0-9+/]{8,}={0,2})\"",
        ('"auth"',),
        group=1,
        accept=_user_password,
    ),
    _token("JFrog API key", r"AKCp[A-Za-z0-9]{69}(?!\w)"),  # detect-secrets: ArtifactoryDetector
    # ---- payments and commerce
    _token("Stripe key", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}"),
    _token("Stripe webhook secret", r"whsec_[A-Za-z0-9+/]{24,}"),
    _token("Square token", r"(?:sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60})"),
    _token("Shopify token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?!\w)"),
    _token(
        "Braintree token",
        r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}",
    ),
    # ---- messaging and email
    _token(  # gitleaks: slack-bot-token, -user-token, -app-token, -config-access-token and the legacy ones
        "Slack token",
        r"(?:xox[abposre]-\d[A-Za-z0-9-]{8,}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{40,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)",
    ),
    _Rule(
        "Slack webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,})",
        ("hooks.slack.com",),
        group=1,
        accept=_real_webhook,
    ),
    _token(  # detect-secrets: DiscordBotTokenDetector (and the id part must decode to digits)
        "Discord bot token",
        r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![\w-])",
        accept=_discord,
    ),
    _Rule(
        "Discord webhook",
        r"discord(?:app)?\.com/api/webhooks/\d{17,20}/([A-Za-z0-9_-]{60,68})",
        ("discord",),
        group=1,
    ),
    _token(  # the bot's id, a colon, then 33 to 37 characters starting with A (detect-secrets: Telegram);
        "Telegram bot token",  # in the Bot API's URLs it follows `bot`: api.telegram.org/bot<token>/getMe
        r"(?:bot)?\d{6,12}:A[A-Za-z0-9_-]{32,36}(?![\w-])",
        ":a",
        accept=_random,
    ),
    _token("Twilio key", r"SK[0-9a-fA-F]{32}(?!\w)", accept=_random),  # gitleaks: twilio-api-key
    _context(  # an auth token is 32 hex, told apart from any hash by the name it is assigned to
        "Twilio key",
        r"twilio[\w.-]{0,20}?(?:auth[_-]?token|api[_-]?secret)[\"']?[ \t]*[:=][ \t]*[\"']?([0-9a-f]{32})(?!\w)",
        "twilio",
    ),
    _token("SendGrid API key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"),
    _token("Mailgun API key", r"key-[0-9a-f]{32}(?!\w)", accept=_random),
    _token("Mailchimp API key", r"[0-9a-f]{32}-us\d{1,2}(?!\w)", "-us", accept=_random),
    _token("Sendinblue API key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}(?!\w)"),
    _Rule(
        "Microsoft Teams webhook",
        r"webhook\.office\.com/webhookb2/([0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/[0-9a-f]{32}/[0-9a-f-]{36})",
        ("webhookb2",),
        group=1,
    ),
    # ---- AI providers
    _token("Anthropic API key", r"sk-ant-[a-z]{2,8}\d{0,3}-[A-Za-z0-9_-]{20,}"),
    _token("OpenRouter API key", r"sk-or-v\d-[a-f0-9]{48,}"),
    # OpenAI (sk-…, sk-proj-…, sk-svcacct-…) and the services that copied its shape. A digit is required
    # so that prose like "sk-learn-style-pipeline-with-steps" does not match.
    _token("OpenAI API key", r"sk-[A-Za-z0-9_-]{20,}", accept=_random_with_digit),
    _token("Hugging Face token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}(?!\w)"),
    _token("Groq API key", r"gsk_[A-Za-z0-9]{48,}(?!\w)"),
    _token("Replicate token", r"r8_[A-Za-z0-9]{37}(?!\w)", accept=_random),
    _token("xAI API key", r"xai-[A-Za-z0-9]{70,}(?!\w)"),
    _token("Perplexity API key", r"pplx-[A-Za-z0-9]{48}(?!\w)"),
    # ---- secret managers, infrastructure, observability (gitleaks rules of the same names)
    _token("Vault token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _token("Doppler token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}(?!\w)"),
    _token("1Password service account token", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"),
    _token("Terraform Cloud token", r"[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,70}", "atlasv1"),
    _token("Pulumi token", r"pul-[a-f0-9]{40}(?!\w)"),
    _token("Databricks token", r"dapi[a-f0-9]{32}(?:-\d)?(?!\w)"),
    _token(  # service account, cloud and legacy API keys
        "Grafana token",
        r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2}|eyJrIjoi[A-Za-z0-9]{70,})",
    ),
    _token("Sentry token", r"sntry[us]_[A-Za-z0-9+/=_]{40,}"),
    _token("New Relic key", r"NR(?:AK|II|JS)-[A-Za-z0-9]{19,32}(?!\w)"),
    _token("Dynatrace token", r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    _token("Linear API key", r"lin_api_[A-Za-z0-9]{40}(?!\w)"),
    _token("Postman API key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}(?!\w)"),
    _token("Airtable token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}(?!\w)"),
    _token("Supabase token", r"sbp_[a-f0-9]{40}(?!\w)"),
    _token("Fly.io token", r"(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})"),
    _token("PlanetScale token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,64}"),
    _token("Cloudflare origin CA key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    _token("Mapbox secret token", r"sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}"),
    # ---- connection strings: postgres, mysql, mongodb(+srv), redis (`redis://:pw@host`), amqp, http(s)…
    _Rule(
        "credentials in URL",
        r"://([^\s:/@'\"<>]{0,256}):([^\s/'\"<>]{3,256})@(?=[\w\[])",
        ("://",),
        group=2,
        accept=_url_password,
    ),
    # ---- HTTP authorization and command lines
    _token("JWT", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _context(
        "basic auth header",
        r"basic[ \t]+([a-z0-9+/]{8,}={0,2})(?![a-z0-9+/=])",
        accept=_user_password,
        bounded=True,
    ),
    _context(
        "bearer token",
        r"bearer[ \t]+([a-z0-9._~+/-]{16,}=*)",
        accept=_machine_token,
        bounded=True,
    ),
    _context(  # `Authorization: token …` (GitHub), `: Key …`, or a bare token
        "authorization header",
        r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:token|apikey|api-key|key|sso-key)[ \t]+)?"
        r"([a-z0-9._~+/=-]{16,})",
        "authorization",
        accept=_machine_token,
    ),
    _context(
        "credentials on command line",  # curl -u user:password (gitleaks: curl-auth-user)
        r"[ \t](?:-u|--user)(?:[ \t]+|=)[\"']?[^\s\"':]{1,64}:([^\s\"']{3,})",
        "curl",
        accept=_on_command_line("curl"),
    ),
    _context(
        "credentials on command line",  # mysql -ppassword (no space: `-p` alone prompts, `-P` is the port)
        r"[ \t]-p([^\s\"'-][^\s\"']{2,})",
        "mysql",
        accept=_on_command_line("mysql"),
    ),
    _context(
        "credentials on command line",  # --password=…, --token …, sshpass -p …
        r"(?:--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token"
        r"|access-token)(?:=|[ \t]+)|sshpass[ \t]+-p[ \t]*)[\"']?([^\s\"'-][^\s\"']{5,})",
        accept=_not_placeholder,
        bounded=True,
    ),
    _context(
        "netrc password",  # ~/.netrc: machine HOST login USER password PASSWORD
        r"machine\s+\S{1,256}\s+(?:login\s+\S{1,256}\s+)?password\s+(\S{1,256})",
        "machine",
        accept=_not_placeholder,
    ),
    _context(
        "kubeconfig credential",  # a client key in a kubeconfig (the certificate next to it is public)
        r"client-key-data:[ \t]*[\"']?([a-z0-9+/=]{16,})",
        "client-key-data",
    ),
    _context(
        "credential in XML",  # <password>…</password>, <db.secret>…</db.secret>
        r"<(?:[\w.-]{0,30}[_.-])?(?:password|passwd|secret|token|apikey|api[_-]key|client[_-]?secret)>"
        r"([^<\n]{4,256})</",
        "<",
        accept=_not_placeholder,
    ),
    _context(
        "credential in XML",  # NuGet.config (gitleaks: nuget-config-password)
        r"<add key=\"(?:cleartext)?password\"\s{1,10}value=\"([^\"\n]{4,256})\"",
        "<add key=",
        accept=_not_placeholder,
    ),
    # ---- generic assignments, last: `password = "…"`, `api_key: …`, `"client_secret": "…"`, `X-API-Key:`
    *(
        _context(
            "password assignment", key + _PASSWORD_OP + _VALUE, group=3, accept=_assignment("password"), trim=True
        )
        for key in _PASSWORD_KEYS
    ),
    *(
        _context("api key assignment", key + _OP + _VALUE, group=3, accept=_assignment("secret"), trim=True)
        for key in _SECRET_KEYS
    ),
)  # fmt: skip

# An unquoted value ends where a connection string's or query's next `;Key=` / `&key=` starts, and its
# trailing punctuation is syntax, not secret: `f(password=s3cr3t, …)`, `(token=abc123)`.
_NEXT_PAIR = re.compile(r"[;&](?=[A-Za-z][\w .-]{0,40}=)")
_TRAILING = ",;)]}>\"'`"


def _trimmed(text: str, start: int, end: int) -> int:
    if text[start] in _QUOTES and end - start >= 2 and text[end - 1] == text[start]:
        return end
    cut = _NEXT_PAIR.search(text, start, end)
    if cut:
        end = cut.start()
    while end > start + 1 and text[end - 1] in _TRAILING:
        end -= 1
    return end


def _spans(rule: _Rule, text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """Where `rule` finds accepted credentials in `text`, as (start, end) of the part to redact."""
    subject = lowered if rule.lower else text
    regex = re.compile(rule.pattern)
    pos = 0
    while True:
        match = regex.search(subject, pos)
        if match is None:
            return
        start, end = match.span(rule.group)
        if rule.trim:
            end = _trimmed(text, start, end)
        first = match.start()
        boundary = not rule.bounded or not first or not (text[first - 1].isalnum() or text[first - 1] in "_-")
        value = text[start : min(end, start + _JUDGED)]
        if boundary and start < end and (rule.accept is None or rule.accept(value, text, match)):
            if rule.trim and end == match.end(rule.group) and text[start] not in _QUOTES:
                while end < len(text) and not text[end].isspace():  # a run longer than the value's bound
                    end += 1
            yield start, end
            pos = max(match.end(), pos + 1)
        elif rule.group:
            # Resume inside the rejected value, not after it: in `password: password: "x"` the first key's
            # "value" is the second key.
            pos = start if start > match.start() else match.start() + 1
        else:
            # A rejected token: no other token starts inside it (there is no boundary within a run of its
            # characters), and resuming one character on would make a long run quadratic.
            pos = max(match.end(), pos + 1)


def _applicable(text: str) -> Iterator[tuple[int, _Rule, str]]:
    lowered = text.translate(_ASCII_LOWER)
    for index, rule in enumerate(_RULES):
        if not rule.keywords or any(k in lowered for k in rule.keywords):
            yield index, rule, lowered


def find_secret(text: str) -> str | None:
    """Name of the first kind of credential found in `text` (e.g. "GitHub token"), or None.

    >>> find_secret("password hashing uses bcrypt") is None
    True
    """
    for _, rule, lowered in _applicable(text):
        if next(_spans(rule, text, lowered), None) is not None:
            return rule.name
    return None


def redact(text: str) -> str:
    """`text` with every likely credential replaced by `[REDACTED:<kind>]`.

    Overlapping findings are redacted as one span, named for the most specific rule among them; a private
    key whose END line is missing is redacted to the end of its body.

    >>> redact('DB_PASSWORD="hunter2!x" in .env')
    'DB_PASSWORD=[REDACTED:password assignment] in .env'
    """
    found = sorted(
        (start, end, index)
        for index, rule, lowered in _applicable(text)
        for start, end in _spans(rule, text, lowered)
    )
    merged: list[list[int]] = []
    for start, end, index in found:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = min(merged[-1][2], index)
        else:
            merged.append([start, end, index])
    out: list[str] = []
    last = 0
    for start, end, index in merged:
        out.append(f"{text[last:start]}[REDACTED:{_RULES[index].name}]")
        last = end
    out.append(text[last:])
    return "".join(out)
