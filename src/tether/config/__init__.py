"""Configuration: `.tether/config.toml` (project) over `$TETHER_HOME/config.toml` (user) over defaults.

Only known keys are accepted, each with a type, so a typo is an error instead of a silently ignored
setting.

A project's file arrives with a clone, from whoever could push to the repository. The settings that
choose where text and API keys are sent, or what tether starts or loads (`USER_LEVEL`), are therefore read
from the user's file and the environment only: a project's value for one is ignored, with a warning saying
how to approve it, unless the user approved that very value for that very checkout on this machine (an
approval record in `$TETHER_HOME`, which no clone can carry). As git treats a repository's hooks and
ssh an unknown host key: what another party could plant is refused until the person says otherwise.

The team database (`database.url`) is stricter still: it is read from the environment
(`TETHER_DATABASE_URL`) or `$TETHER_HOME/config.toml` only, never from a committed file, approved or not (`tether.config.database`).

The package imports `tether.errors`, `tether.fs` and, for types only, `tether.project`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import tomllib
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ConfigError
from tether.fs import write_atomic

if TYPE_CHECKING:
    from tether.project import Paths

# key → (default, description). Types are taken from the defaults.
DEFAULTS: dict[str, tuple[bool | int | str, str]] = {
    "recall.limit": (3, "most memories injected per prompt"),
    "recall.budget": (2400, "most characters injected per prompt"),
    "recall.cooldown_turns": (10, "turns a surfaced memory stays quiet in the same session"),
    "hints.session_budget": (12, "most point-of-action hints per session (pinned pierce it)"),
    "hints.per_read": (
        3,
        "most of a file's gotchas a read or edit hint lists, best first (the rest are counted)",
    ),
    "guard.mode": (
        "auto",
        "edit guard: off | context | deny-once | auto (deny-once for pinned/high gotchas)",
    ),
    "embedder": (
        "hashed",
        "embedder spec: hashed | static | auto | static:<dir> | sentence-transformers:<dir> | "
        "fastembed:<model>[@<dir>] | openai:<url>#<model>",
    ),
    "embed_server.enabled": (
        True,
        "with a real model configured, hooks use it through a warm process that session start launches",
    ),
    "embed_server.idle_seconds": (1200, "the warm embedding process exits after this long without a request"),
    "embed_server.timeout_ms": (300, "how long a hook waits for the warm embedding process to answer"),
    "resident.enabled": (
        True,
        "hooks and read commands are answered by one resident process per project that session start launches",
    ),
    "resident.idle_seconds": (1800, "the resident process exits after this long without a request"),
    "resident.max_rss_mib": (768, "the resident process restarts itself when its memory grows past this"),
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
# `tether.config.database` reads them from the user's file alone.
DATABASE_URL_KEY = "database.url"
DATABASE_URL_ENV = "TETHER_DATABASE_URL"
USER_ONLY = frozenset({DATABASE_URL_KEY})
# Settings a project's file may not choose (see the module's docstring), and why.
USER_LEVEL = {
    "embedder": "an endpoint receives every memory and query (and your API key); a model directory is code",
    "embed_server.enabled": "it starts a process",
    "distill.enabled": "it sends session transcripts to an LLM",
    "distill.provider": "it chooses who receives transcripts and which API key goes with them",
    "distill.base_url": "it chooses where transcripts and your API key are sent",
}
# Embedder specs a project may set: no endpoint, no path (`static` is the model inside tether's own package,
# `auto` picks among locally installed models).
PROJECT_EMBEDDERS = ("hashed", "static", "auto")


Value = bool | int | str


def project_may_set(key: str, value: Value) -> bool:
    """Whether a project's file may set `key` to `value` without the user's approval: any key but the
    user-level ones; of those, a local embedder, or turning a process or distill *off*."""
    if key not in USER_LEVEL:
        return True
    if key == "embedder":
        return value in PROJECT_EMBEDDERS
    return value is False


@dataclass(frozen=True)
class Ignored:
    """A project's value of a user-level key, not used: it was not approved on this machine."""

    key: str
    value: Value
    source: str

    def message(self) -> str:
        return (
            f"{self.source} sets {self.key} = {self.value!r}: ignored, because {USER_LEVEL[self.key]}, and a "
            f"project's file (which comes with a clone) cannot choose that. If you trust it, run "
            f"`tether config --approve {self.key}` in this checkout, or set it in your own config "
            f"(`tether config --user {self.key} VALUE`)."
        )


class Approvals:
    """`$TETHER_HOME/approvals.json` (mode 0600): project values of user-level keys the user approved, by
    checkout path, key and a hash of the value. A changed value is a new question."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def digest(key: str, value: Value) -> str:
        return hashlib.sha256(f"{key}\0{json.dumps(value)}".encode()).hexdigest()

    def approved(self, root: Path, key: str, value: Value) -> bool:
        entry = self._read().get(str(root.resolve()), {})
        return isinstance(entry, dict) and entry.get(key) == self.digest(key, value)

    def approve(self, root: Path, key: str, value: Value) -> None:
        data = self._read()
        entry = data.setdefault(str(root.resolve()), {})
        entry[key] = self.digest(key, value)
        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)


@dataclass(frozen=True)
class Config:
    """Known keys with values of their default's type: read them with `integer`, `text` or `flag`.

    >>> Config.load().integer("recall.limit")
    3
    """

    values: dict[str, Value]
    ignored: tuple[Ignored, ...] = ()  # project values of user-level keys that were not approved

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
        """Load defaults, then each existing file in order (later files win), every file trusted."""
        values = {key: default for key, (default, _) in DEFAULTS.items()}
        for path in paths:
            if path.is_file():
                for key, value in _flatten(_read(path)).items():
                    if key not in USER_ONLY:
                        values[key] = coerce(key, value, source=str(path))
        return cls(values)

    @classmethod
    def for_checkout(
        cls, user: Path, project: Path | None, *, root: Path | None, approvals: Approvals
    ) -> Config:
        """Defaults, the user's file, then the project's file less its unapproved user-level values."""
        base = cls.load(user)
        if project is None or root is None or not project.is_file():
            return base
        values = dict(base.values)
        ignored: list[Ignored] = []
        for key, raw in _flatten(_read(project)).items():
            if key in USER_ONLY:  # never from a project's file (`committed_database_setting` warns)
                continue
            value = coerce(key, raw, source=str(project))
            if project_may_set(key, value) or approvals.approved(root, key, value):
                values[key] = value
            elif value != values[key]:  # the same value as in effect anyway changes nothing: no warning
                ignored.append(Ignored(key, value, str(project)))
        return cls(values, tuple(ignored))

    @classmethod
    def for_paths(cls, paths: Paths) -> Config:
        """`for_checkout` for a workspace's locations."""
        project = paths.root / ".tether" / "config.toml" if paths.root is not None else None
        return cls.for_checkout(
            paths.home / "config.toml", project, root=paths.root, approvals=Approvals(paths.approvals)
        )

    def project_value(self, key: str) -> Value | None:
        """A project's ignored value for `key`, if any."""
        return next((item.value for item in self.ignored if item.key == key), None)


# TOML integers are 64-bit signed: a larger number would make the file invalid for other TOML readers.
_INT_MAX = 2**63 - 1


def coerce(key: str, value: object, source: str = "command line") -> Value:
    """`value` as the type of `key`'s default, strictly: a TOML file's value must have that type (`1` is not
    true, `true` is not 1), a command line's text must spell it."""
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


def check_endpoint(url: str, what: str) -> str:
    """`url` if it is an `https://` URL, or a plain `http://` one to this machine (loopback), where nothing
    on the network can read the text and the API key sent. Raises `ConfigError` saying what to use.

    >>> check_endpoint("http://127.0.0.1:11434/v1", "embedding endpoint")
    'http://127.0.0.1:11434/v1'
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "https" and parsed.hostname:
        return url
    if parsed.scheme == "http" and parsed.hostname:
        if is_loopback(parsed.hostname):
            return url
        raise ConfigError(
            f"{what} {url!r} is plain http to another machine: memories, prompts and the API key would cross "
            "the network unencrypted; use https, or reach it through a tunnel on localhost (ssh -L)"
        )
    raise ConfigError(f"{what} {url!r} is not an http(s) URL")


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine: `localhost`, 127.0.0.0/8 or ::1."""
    host = host.strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
