"""Configuration: `.tether/config.toml` (project) over `$TETHER_HOME/config.toml` (user) over defaults.

Only known keys are accepted, each with a type, so a typo is an error instead of a silently ignored
setting.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import ConfigError
from tether.fs import write_atomic

# key → (default, description). Types are taken from the defaults.
DEFAULTS: dict[str, tuple[bool | int | str, str]] = {
    "recall.limit": (3, "most memories injected per prompt"),
    "recall.budget": (2400, "most characters injected per prompt"),
    "recall.cooldown_turns": (10, "turns a surfaced memory stays quiet in the same session"),
    "hints.session_budget": (12, "most point-of-action hints per session (pinned pierce it)"),
    "guard.mode": (
        "auto",
        "edit guard: off | context | deny-once | auto (deny-once for pinned/high gotchas)",
    ),
    "embedder": (
        "hashed",
        "embedder spec: hashed | auto | sentence-transformers:<dir> | openai:<url>#<model>",
    ),
    "embed_server.enabled": (
        True,
        "with a real model configured, hooks use it through a warm process that session start launches",
    ),
    "embed_server.idle_seconds": (1200, "the warm embedding process exits after this long without a request"),
    "embed_server.timeout_ms": (300, "how long a hook waits for the warm embedding process to answer"),
    "distill.enabled": (False, "extract up to 3 durable facts at session end with an LLM"),
    "distill.provider": ("anthropic", "anthropic | openai"),
    "distill.model": ("claude-haiku-4-5", "model name for distill"),
    "distill.base_url": ("", "API base URL (empty: the provider's default)"),
    "distill.categories": ("pref,decision,gotcha", "categories distill may write"),
}
GUARD_MODES = ("off", "context", "deny-once", "auto")


Value = bool | int | str


@dataclass(frozen=True)
class Config:
    """Known keys with values of their default's type: read them with `integer`, `text` or `flag`.

    >>> Config.load().integer("recall.limit")
    3
    """

    values: dict[str, Value]

    def value(self, key: str) -> Value:
        """The value of a known key, whatever its type (for showing it)."""
        if key not in self.values:
            raise ConfigError(f"unknown config key {key!r}: known keys are {', '.join(DEFAULTS)}")
        return self.values[key]

    def integer(self, key: str) -> int:
        value = self.value(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key} is not a whole-number setting")
        return value

    def text(self, key: str) -> str:
        value = self.value(key)
        if not isinstance(value, str):
            raise ConfigError(f"{key} is not a text setting")
        return value

    def flag(self, key: str) -> bool:
        value = self.value(key)
        if not isinstance(value, bool):
            raise ConfigError(f"{key} is not a true/false setting")
        return value

    @classmethod
    def load(cls, *paths: Path) -> Config:
        """Load defaults, then each existing file in order (later files win)."""
        values = {key: default for key, (default, _) in DEFAULTS.items()}
        for path in paths:
            if path.is_file():
                for key, value in _flatten(_read(path)).items():
                    values[key] = coerce(key, value, source=str(path))
        return cls(values)


# TOML integers are 64-bit signed: a larger number would make the file invalid for other TOML readers.
_INT_MAX = 2**63 - 1


def coerce(key: str, value: object, source: str = "command line") -> Value:
    """`value` as the type of `key`'s default, strictly: a TOML file's value must have that type (`1` is not
    true, `true` is not 1), a command line's text must spell it."""
    if key not in DEFAULTS:
        raise ConfigError(f"unknown config key {key!r} in {source}: known keys are {', '.join(DEFAULTS)}")
    default = DEFAULTS[key][0]
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in (
                "true",
                "false",
                "yes",
                "no",
                "on",
                "off",
                "1",
                "0",
            ):
                return value.lower() in ("true", "yes", "on", "1")
            raise ValueError
        if isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError
            number = value if isinstance(value, int) else int(value.strip(), 10)
            if not 0 <= number <= _INT_MAX:
                raise ValueError
            return number
    except ValueError:
        kind = "true or false" if isinstance(default, bool) else "a non-negative whole number"
        raise ConfigError(f"{key} in {source} must be {kind}, not {value!r}") from None
    if not isinstance(value, str):
        raise ConfigError(f"{key} in {source} must be text, not {value!r}")
    text = value
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{key} in {source} is not valid text (it holds a lone surrogate)") from None
    if key == "guard.mode" and text not in GUARD_MODES:
        raise ConfigError(f"guard.mode in {source} must be one of {', '.join(GUARD_MODES)}, not {text!r}")
    return text


def set_value(path: Path, key: str, raw: str) -> Value:
    """Set one key in a config file, keeping the others. Returns the coerced value.

    The other keys are checked as `Config.load` checks them before anything is written: a file is only
    ever rewritten with what the next command can read."""
    value = coerce(key, raw)
    data = {k: coerce(k, v, str(path)) for k, v in _flatten(_read(path)).items()} if path.is_file() else {}
    data[key] = value
    write_atomic(path, dump(data))
    return value


def dump(flat: dict[str, Any]) -> str:
    sections: dict[str, dict[str, Any]] = {}
    for key, value in sorted(flat.items()):
        section, _, name = key.rpartition(".")
        sections.setdefault(section, {})[name] = value
    out = ["# tether configuration: `tether config --list` shows every key."]
    # Top-level keys first: after a `[table]` header a key belongs to that table.
    for section, items in sorted(sections.items(), key=lambda item: item[0] != ""):
        if section:
            out.append(f"\n[{section}]")
        for name, value in items.items():
            out.append(f"{name} = {_toml_value(value)}")
    return "\n".join(out) + "\n"


def _toml_value(value: Any) -> str:
    """A TOML basic string, integer or boolean for `value`: every control character escaped, so any text a
    key can hold writes a file every TOML reader (and the next `tether` command) parses back to it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    out = []
    for ch in str(value):
        code = ord(ch)
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}; fix or delete the file") from None


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
