"""Configuration: `.tether/config.toml` (project) over `$TETHER_HOME/config.toml` (user) over defaults.

Only known keys are accepted, each with a type, so a typo is an error instead of a silently ignored
setting. The team database (`database.url`) is a user-level setting only: it is read from the
environment (`TETHER_DATABASE_URL`) or `$TETHER_HOME/config.toml`, never from a committed file.
"""

from __future__ import annotations

import os
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
        "static",
        "embedder spec: static | hashed | auto | static:<dir> | sentence-transformers:<dir> | "
        "fastembed:<model>[@<dir>] | openai:<url>#<model>",
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
# Settings only the user makes, in the environment or `$TETHER_HOME/config.toml`: a clone is untrusted
# input (DESIGN §8), and a committed database URL would send every memory and prompt-derived event of
# whoever opens the clone to the committer's server. `Config.load` skips these keys in every file;
# `database_url` reads them from the user's file alone.
DATABASE_URL_KEY = "database.url"
DATABASE_URL_ENV = "TETHER_DATABASE_URL"
USER_ONLY = frozenset({DATABASE_URL_KEY})


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
                    if key not in USER_ONLY:
                        values[key] = coerce(key, value, source=str(path))
        return cls(values)


def coerce(key: str, value: object, source: str = "command line") -> Value:
    if key in USER_ONLY:
        raise ConfigError(
            f"{key} is a user-level setting: set it with `tether init --database URL` (it goes to "
            f"$TETHER_HOME/config.toml) or {DATABASE_URL_ENV}; a project's config.toml cannot choose it"
        )
    if key not in DEFAULTS:
        raise ConfigError(f"unknown config key {key!r} in {source}: known keys are {', '.join(DEFAULTS)}")
    default = DEFAULTS[key][0]
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
                    raise ValueError
                return value.lower() in ("true", "yes", "on", "1")
            return bool(value)
        if isinstance(default, int):
            number = int(value) if isinstance(value, int) else int(str(value))
            if number < 0:
                raise ValueError
            return number
    except (TypeError, ValueError):
        kind = "true or false" if isinstance(default, bool) else "a non-negative whole number"
        raise ConfigError(f"{key} in {source} must be {kind}, not {value!r}") from None
    text = str(value)
    if key == "guard.mode" and text not in GUARD_MODES:
        raise ConfigError(f"guard.mode in {source} must be one of {', '.join(GUARD_MODES)}, not {text!r}")
    return text


def set_value(path: Path, key: str, raw: str) -> Value:
    """Set one key in a config file, keeping the others. Returns the coerced value."""
    value = coerce(key, raw)
    data = _flatten(_read(path)) if path.is_file() else {}
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
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


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


def database_url(home: Path, environ: dict[str, str] | None = None) -> str | None:
    """The team database's URL: `TETHER_DATABASE_URL`, else `database.url` in `$TETHER_HOME/config.toml`,
    else None (the checkout's own SQLite index). Never read from a project's config.

    >>> database_url(Path("/nonexistent"), {})
    """
    env = os.environ if environ is None else environ
    value = env.get(DATABASE_URL_ENV, "").strip()
    source = DATABASE_URL_ENV
    if not value:
        path = home / "config.toml"
        raw = _flatten(_read(path)).get(DATABASE_URL_KEY) if path.is_file() else None
        if raw is None or not str(raw).strip():
            return None
        value, source = str(raw).strip(), f"{DATABASE_URL_KEY} in {path}"
    return check_database_url(value, source)


def check_database_url(url: str, source: str = "--database") -> str:
    """`url` if it names a Postgres database (`postgresql://` or `postgres://`), else `ConfigError`."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            f"{source} must be a Postgres URL (postgresql://user@host/database), not {redact_url(url)!r}"
        )
    return url


def set_database_url(home: Path, url: str | None) -> Path:
    """Write (or with None remove) `database.url` in the user's config, readable by the user alone
    (it may hold a password). Returns the file."""
    path = home / "config.toml"
    data = _flatten(_read(path)) if path.is_file() else {}
    if url is None:
        data.pop(DATABASE_URL_KEY, None)
    else:
        data[DATABASE_URL_KEY] = check_database_url(url)
    home.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.touch(mode=0o600)
    os.chmod(path, 0o600)
    write_atomic(path, dump(data))
    return path


def committed_database_setting(paths: tuple[Path, ...]) -> list[Path]:
    """The files among `paths` (a project's config) that set `database.url`, which is ignored there."""
    return [p for p in paths if p.is_file() and DATABASE_URL_KEY in _flatten(_read(p))]


def redact_url(url: str) -> str:
    """`url` with its password replaced by `***`, for showing.

    >>> redact_url("postgresql://ann:s3cret@db.example/tether")
    'postgresql://ann:***@db.example/tether'
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    credentials, _, host = rest.partition("@")
    user, colon, _ = credentials.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{host}"
