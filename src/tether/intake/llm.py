"""Chat-completion clients for auto-distill, on urllib alone (no SDKs: the base install stays slim).

Two wire formats cover the field: Anthropic's Messages API, and the OpenAI chat-completions API that
OpenAI, Ollama, vLLM, LM Studio and most gateways speak.

>>> provider = provider_from_env({"TETHER_DISTILL_PROVIDER": "ollama", "TETHER_DISTILL_MODEL": "qwen3"})
>>> provider.name
'openai:qwen3'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tether.errors import TetherError
from tether.model.secrets import redact
from tether.model.text import excerpt

__all__ = [
    "AnthropicProvider",
    "DistillError",
    "LLMProvider",
    "OpenAIProvider",
    "provider_from_env",
]

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://localhost:11434/v1"
# A small, cheap model is plenty for picking three facts out of a digest.
ANTHROPIC_MODEL = "claude-haiku-4-5"
OPENAI_MODEL = "gpt-4o-mini"
# The worker is detached, so nobody waits on it; a minute covers a slow local model on a laptop CPU.
TIMEOUT = 60.0
# Three facts with short details fit comfortably; more would only invite the model to pad.
MAX_TOKENS = 1_024


class DistillError(TetherError):
    """Auto-distill failed (endpoint unreachable, HTTP error, timeout, bad reply); nothing was written."""


class LLMProvider(Protocol):
    """Anything that turns a system prompt and a user message into the model's text reply."""

    @property
    def name(self) -> str: ...

    def complete(self, system: str, user: str) -> str: ...


@dataclass(frozen=True)
class AnthropicProvider:
    """Anthropic Messages API (`POST {base_url}/v1/messages`)."""

    api_key: str
    model: str = ANTHROPIC_MODEL
    base_url: str = ANTHROPIC_URL
    timeout: float = TIMEOUT
    max_tokens: int = MAX_TOKENS

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    def complete(self, system: str, user: str) -> str:
        url = _join(self.base_url, "v1/messages")
        body = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        headers = {"x-api-key": self.api_key, "anthropic-version": ANTHROPIC_VERSION}
        reply = _post_json(url, body, headers, self.timeout, self.name, key_env="ANTHROPIC_API_KEY")
        content = reply.get("content")
        if isinstance(content, list):
            texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
            if texts:
                return "".join(texts)
        raise DistillError(f"{self.name} at {url} sent a reply with no text content: {_excerpt(reply)}")


@dataclass(frozen=True)
class OpenAIProvider:
    """OpenAI-compatible chat completions (`POST {base_url}/chat/completions`), Ollama included."""

    model: str = OPENAI_MODEL
    base_url: str = OPENAI_URL
    api_key: str | None = None
    timeout: float = TIMEOUT
    max_tokens: int = MAX_TOKENS

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def complete(self, system: str, user: str) -> str:
        url = _join(self.base_url, "chat/completions")
        body = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        reply = _post_json(url, body, headers, self.timeout, self.name, key_env="OPENAI_API_KEY")
        choices = reply.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                return str(message["content"])
        raise DistillError(f"{self.name} at {url} sent a reply with no message content: {_excerpt(reply)}")


def provider_from_env(
    env: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    timeout: float | None = None,
) -> LLMProvider:
    """Build the provider that configuration (arguments first, then `env`) asks for.

    `TETHER_DISTILL_PROVIDER` is `anthropic` (default when `ANTHROPIC_API_KEY` is set), `openai` or
    `ollama` (an OpenAI-compatible endpoint at localhost:11434). `TETHER_DISTILL_MODEL`,
    `TETHER_DISTILL_BASE_URL` and `TETHER_DISTILL_TIMEOUT` (seconds) override the defaults.
    """
    env = os.environ if env is None else env
    kind = (provider or env.get("TETHER_DISTILL_PROVIDER") or "").strip().lower()
    if not kind:
        kind = "anthropic" if env.get("ANTHROPIC_API_KEY") else "openai"
    model = model or env.get("TETHER_DISTILL_MODEL") or None
    base_url = base_url or env.get("TETHER_DISTILL_BASE_URL") or None
    if timeout is None:
        raw = env.get("TETHER_DISTILL_TIMEOUT", "")
        try:
            timeout = float(raw) if raw else TIMEOUT
        except ValueError:
            raise DistillError(f"TETHER_DISTILL_TIMEOUT={raw!r} is not a number of seconds") from None
    if timeout <= 0:
        raise DistillError(f"distill timeout must be positive, got {timeout}")
    if kind == "anthropic":
        key = env.get("ANTHROPIC_API_KEY", "")
        if not key:
            raise DistillError(
                "ANTHROPIC_API_KEY is not set: export it, or set TETHER_DISTILL_PROVIDER=openai "
                "(or ollama) to use an OpenAI-compatible endpoint"
            )
        return AnthropicProvider(
            api_key=key,
            model=model or ANTHROPIC_MODEL,
            base_url=base_url or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL,
            timeout=timeout,
        )
    if kind in ("openai", "ollama"):
        default_url = OLLAMA_URL if kind == "ollama" else env.get("OPENAI_BASE_URL") or OPENAI_URL
        if kind == "ollama" and not model:
            raise DistillError("set TETHER_DISTILL_MODEL to the Ollama model to use (e.g. qwen3:8b)")
        return OpenAIProvider(
            model=model or OPENAI_MODEL,
            base_url=base_url or default_url,
            api_key=env.get("OPENAI_API_KEY") or None,
            timeout=timeout,
        )
    raise DistillError(f"unknown distill provider {kind!r}: use anthropic, openai or ollama")


def _join(base_url: str, path: str) -> str:
    base = base_url.rstrip("/")
    # Accept a base URL given with the version already in it (".../v1") for either API.
    if path.startswith("v1/") and base.endswith("/v1"):
        path = path[len("v1/") :]
    return f"{base}/{path}"


def _is_loopback(url: str) -> bool:
    import urllib.parse

    from tether.config import is_loopback

    return is_loopback(urllib.parse.urlsplit(url).hostname or "")


def _excerpt(value: object) -> str:
    """A redacted start of a reply, for an error message (distill's log keeps it)."""
    return excerpt(redact(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))


def _error_message(raw: bytes) -> str:
    """The human part of an API error body: both APIs use `{"error": {"message": ...}}`."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _excerpt(text) or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return _excerpt(error["message"])
    if isinstance(error, str):
        return _excerpt(error)
    return _excerpt(data)


def _hint(status: int, key_env: str) -> str:
    if status in (401, 403):
        return f"check {key_env}"
    if status == 404:
        return "check the model name (TETHER_DISTILL_MODEL) and base URL (TETHER_DISTILL_BASE_URL)"
    if status == 429 or status >= 500:
        return "the service is busy or failing; the session will be distilled on the next run"
    return "check the distill configuration"


def _post_json(
    url: str, body: dict[str, Any], headers: dict[str, str], timeout: float, name: str, *, key_env: str
) -> dict[str, Any]:
    # Imported here: http.client and email cost ~25 ms, and hooks import this module's error type.
    import urllib.error
    import urllib.request

    from tether.config import check_endpoint
    from tether.errors import ConfigError

    try:
        check_endpoint(url, f"{name}'s URL")  # https, or plain http to this machine only: never file://
    except ConfigError as exc:
        raise DistillError(
            f"{exc} (TETHER_DISTILL_BASE_URL or `tether config --user distill.base_url`)"
        ) from None

    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"content-type": "application/json", "accept": "application/json", **headers},
    )
    # A local model (Ollama) must not be sent through a corporate HTTP proxy from the environment.
    handlers = [urllib.request.ProxyHandler({})] if _is_loopback(url) else []
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = _error_message(exc.read())
        raise DistillError(
            f"{name} at {url} answered HTTP {exc.code}: {detail} ({_hint(exc.code, key_env)})"
        ) from None
    except TimeoutError:
        raise DistillError(
            f"{name} at {url} sent no reply within {timeout:g}s: raise TETHER_DISTILL_TIMEOUT or use a "
            "faster model"
        ) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise DistillError(
                f"{name} at {url} sent no reply within {timeout:g}s: raise TETHER_DISTILL_TIMEOUT or use a "
                "faster model"
            ) from None
        raise DistillError(
            f"cannot reach {name} at {url}: {reason}: check TETHER_DISTILL_BASE_URL and that the server runs"
        ) from None
    except OSError as exc:  # connection reset mid-reply and kin
        raise DistillError(f"connection to {name} at {url} failed: {exc}") from None
    try:
        reply = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DistillError(
            f"{name} at {url} sent a reply that is not JSON: {_excerpt(raw.decode('utf-8', 'replace'))}"
        ) from None
    if not isinstance(reply, dict):
        raise DistillError(f"{name} at {url} sent JSON that is not an object: {_excerpt(reply)}")
    return reply
