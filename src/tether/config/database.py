"""The team database's URL (`database.url`): a user-level setting only, from the environment
(`TETHER_DATABASE_URL`) or `$TETHER_HOME/config.toml`, never from a committed file (see `tether.config`).

Imports `tether.config` (the file format) and `tether.fs`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.config import DATABASE_URL_ENV, DATABASE_URL_KEY, _flatten, _read, dump
from tether.errors import ConfigError
from tether.fs import write_atomic


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
