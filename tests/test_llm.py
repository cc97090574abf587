"""`tether.intake.llm`: the Anthropic and OpenAI-compatible clients, chosen from the environment.

The clients' requests and error replies are exercised against a loopback server in `test_distill.py`.
"""

from __future__ import annotations

import pytest

from tether.intake.llm import AnthropicProvider, DistillError, OpenAIProvider, provider_from_env


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ANTHROPIC_API_KEY": "k"}, "anthropic:claude-haiku-4-5"),
        ({"ANTHROPIC_API_KEY": "k", "TETHER_DISTILL_MODEL": "m"}, "anthropic:m"),
        ({"TETHER_DISTILL_PROVIDER": "openai"}, "openai:gpt-4o-mini"),
        ({"TETHER_DISTILL_PROVIDER": "ollama", "TETHER_DISTILL_MODEL": "qwen3"}, "openai:qwen3"),
    ],
)
def test_provider_from_env(env: dict[str, str], expected: str) -> None:
    assert provider_from_env(env).name == expected


def test_provider_from_env_base_url_and_errors() -> None:
    provider = provider_from_env({"TETHER_DISTILL_PROVIDER": "ollama", "TETHER_DISTILL_MODEL": "q"})
    assert isinstance(provider, OpenAIProvider) and provider.base_url == "http://localhost:11434/v1"
    custom = provider_from_env({"ANTHROPIC_API_KEY": "k", "TETHER_DISTILL_BASE_URL": "http://gw:1"})
    assert isinstance(custom, AnthropicProvider) and custom.base_url == "http://gw:1"
    with pytest.raises(DistillError, match="ANTHROPIC_API_KEY is not set"):
        provider_from_env({"TETHER_DISTILL_PROVIDER": "anthropic"})
    with pytest.raises(DistillError, match="unknown distill provider 'gemini'"):
        provider_from_env({"TETHER_DISTILL_PROVIDER": "gemini"})
    with pytest.raises(DistillError, match="TETHER_DISTILL_TIMEOUT='soon'"):
        provider_from_env({"ANTHROPIC_API_KEY": "k", "TETHER_DISTILL_TIMEOUT": "soon"})


@pytest.mark.parametrize(
    "provider",
    [
        OpenAIProvider(base_url="http://192.168.1.5:11434/v1", model="m"),
        AnthropicProvider(api_key="sk-ant-x", base_url="http://api.example.com"),
        OpenAIProvider(base_url="file:///etc", model="m"),
    ],
)
def test_transcripts_and_keys_never_go_over_plain_http_off_this_machine(provider: object) -> None:
    # Nothing is sent: the URL is refused before any connection (a file:// URL would read a local file).
    with pytest.raises(DistillError, match=r"plain http to another machine|not an http"):
        provider.complete("system", "user")  # type: ignore[attr-defined]
