"""The UI's guard (DESIGN §8: loopback, a per-run token, CSRF, escaping), as one ASGI middleware.

Every request, static files included, passes these checks in order:

1. `Host` names the server's own loopback address and port: a page on another site that rebinds its DNS
   name to 127.0.0.1 reaches the port, but its requests carry its own name (DNS rebinding).
2. `Origin`, when a browser sends one, is the server's own; `Sec-Fetch-Site: cross-site` is refused. Under
   `Referrer-Policy: no-referrer` Chromium sends `Origin: null` with the UI's own form posts: `null` is
   accepted only with `Sec-Fetch-Site: same-origin`, which the browser sets and no page can forge (a
   sandboxed frame elsewhere, the other source of `null`, is `cross-site`).
3. The per-run token (printed with the URL) is exchanged for an HttpOnly, SameSite=Strict cookie, and the
   browser is sent to the same address without it, so it leaves the address bar and history.
4. Without that cookie: 403.
5. A state change (any method but GET/HEAD) is a urlencoded form of at most 1 MiB whose `csrf` field is
   the run's CSRF token; anything else is refused before the application sees it, so nothing is written.

Every response carries a strict Content-Security-Policy (scripts and styles only from this server, no
inline code), `X-Frame-Options: DENY`, `Referrer-Policy: no-referrer` and `nosniff`.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from tether.adapters.ui.core import ValidationError
from tether.model.limits import FORM_MAX_BYTES

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BIND_HOST = "127.0.0.1"
MAX_FORM_BYTES = FORM_MAX_BYTES  # one set of limits, in the core (`tether.model.limits`)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
SAFE_METHODS = ("GET", "HEAD")


def check_bind(host: str) -> str:
    """`host` if it is 127.0.0.1; anything else is refused with the reason."""
    if host == BIND_HOST:
        return host
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    why = (
        "the UI listens on 127.0.0.1 only (its token cookie and Host check are tied to that address)"
        if loopback
        else "the UI shows and changes your memory, so it never listens beyond this machine's loopback"
    )
    raise ValidationError(
        f"refusing to listen on {host!r}: {why}; to reach it from elsewhere, use a tunnel such as "
        f"`ssh -L PORT:127.0.0.1:PORT`"
    )


@dataclass
class Secrets:
    """The per-run secrets: the URL token, the cookie's value and the CSRF token, all random."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))


class Guard:
    """The checks above around `app`, for a server at 127.0.0.1:`port`."""

    def __init__(self, app: ASGIApp, port: int, keys: Secrets) -> None:
        self.app = app
        self.keys = keys
        self.cookie = f"tether_ui_{port}"  # cookies ignore ports: two servers must not share one
        self.hosts = {f"{BIND_HOST}:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(HEADERS)
                present = {k.lower() for k, _ in message.get("headers", [])}
                if b"cache-control" not in present:
                    extra.append((b"cache-control", b"no-store"))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _plain(secured, 403, refusal)
            return
        params = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in params if k == "token"]
        if given:
            if not hmac.compare_digest(given[-1].encode(), self.keys.token.encode()):
                await _plain(
                    secured, 403, "wrong token: open the address `tether ui` printed in your terminal"
                )
                return
            rest = urlencode([(k, v) for k, v in params if k != "token"])
            location = quote(scope["path"], safe="/") + (f"?{rest}" if rest else "")
            cookie = f"{self.cookie}={self.keys.session}; HttpOnly; SameSite=Strict; Path=/"
            await _redirect(secured, location, cookie)
            return
        if not hmac.compare_digest(_cookie(headers, self.cookie).encode(), self.keys.session.encode()):
            await _plain(
                secured,
                403,
                "not signed in: open the address `tether ui` printed in your terminal (it carries a one-run token)",
            )
            return
        if scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, secured)
            return
        body, problem = await self._form(headers, receive)
        if problem:
            await _plain(secured, 403, problem)
            return

        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, secured)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        if host not in self.hosts:
            return f"refused: unexpected Host {host!r} (the UI answers only to {BIND_HOST})"
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site")
        if (
            origin is not None
            and origin not in self.origins
            and not (origin == "null" and site == "same-origin")
        ):
            return f"refused: request from another site ({origin!r})"
        if site == "cross-site":
            return "refused: request from another site"
        return None

    async def _form(self, headers: dict[str, str], receive: Receive) -> tuple[bytes, str]:
        """The whole request body and "" when it is a form with the right CSRF token, else the reason."""
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return b"", "refused: a change must be a form sent from the UI's own page"
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"", "refused: the request ended early"
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_FORM_BYTES:
                return b"", "refused: the form is larger than 1 MiB"
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        fields = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        token = next((v for k, v in fields if k == "csrf"), "")
        if not hmac.compare_digest(token.encode(), self.keys.csrf.encode()):
            return b"", "refused: the form's CSRF token is missing or stale: reload the page and try again"
        return body, ""


def _cookie(headers: dict[str, str], name: str) -> str:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, cookie: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
