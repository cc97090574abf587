"""Plan and apply config-file changes: backups, byte-exact restores, atomic writes, unified diffs.

Every file of an install is planned (read, parsed, edited in memory) before any is written, so a malformed
file anywhere means nothing is written at all.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tether.adapters.install.jsonconf import Problem
from tether.errors import ConfigError
from tether.fs import write_atomic

BACKUP_SUFFIX = ".tether-backup"
AGENT_DIRS = frozenset({".claude", ".codex", ".cursor", ".gemini"})


class Editor(Protocol):
    """Tether's edits of one config file format (see jsonconf.JsonEditor, tomlconf.TomlMcpEditor)."""

    def parse(self, text: str | None) -> dict[str, Any]: ...

    def install(self, text: str | None) -> str: ...

    def uninstall(self, text: str) -> str: ...

    def equivalent(self, a: str, b: str) -> bool: ...

    def is_blank(self, text: str) -> bool: ...


@dataclass(frozen=True)
class Change:
    """One planned change to one file. `new` None deletes the file."""

    path: Path
    old: str | None
    new: str | None
    backup: Path | None = None  # write `old` here first (the first change tether makes to the file)
    drop_backup: Path | None = None  # the backup was restored byte for byte: it is no longer needed

    def diff(self) -> str:
        return unified_diff(self.path, self.old, self.new)


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def read(path: Path) -> str | None:
    """The file's text, exactly (no newline translation), or None when it does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file; move it aside and try again") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(
            f"{path}: is not UTF-8 text; nothing was written. Fix or move the file aside"
        ) from None


def _config_error(path: Path, problem: Problem) -> ConfigError:
    return ConfigError(
        f"{path}: {problem}. Nothing was written; fix the file (or move it aside) and try again."
    )


def plan_install(path: Path, editor: Editor) -> Change | None:
    old = read(path)
    try:
        new = editor.install(old)
    except Problem as problem:
        raise _config_error(path, problem) from None
    if new == old:
        return None
    backup = backup_path(path)
    return Change(path, old, new, backup=backup if old is not None and not backup.exists() else None)


def plan_uninstall(path: Path, editor: Editor) -> Change | None:
    old = read(path)
    if old is None:
        return None
    try:
        new: str | None = editor.uninstall(old)
    except Problem as problem:
        raise _config_error(path, problem) from None
    if new == old:
        return None
    assert new is not None
    backup = backup_path(path)
    saved = read(backup)
    if saved is not None and editor.equivalent(new, saved):
        # the content is the original's: give back its exact bytes (formatting, key spelling, comments)
        return Change(path, old, saved, drop_backup=backup)
    if saved is None and editor.is_blank(new):
        return Change(path, old, None)  # tether created this file
    return Change(path, old, new)


def _atomic_write(path: Path, text: str, mode_from: Path | None) -> None:
    # Through a symlinked dotfile (the link is kept), with the mode of the file it replaces or backs up.
    write_atomic(path, text, mode_from=mode_from, through_symlink=True)


def apply(changes: list[Change]) -> None:
    """Write the planned changes: backups first, then each file atomically."""
    for change in changes:
        if change.backup is not None and change.old is not None:
            _atomic_write(change.backup, change.old, mode_from=change.path)
    for change in changes:
        if change.new is None:
            change.path.unlink(missing_ok=True)
            parent = change.path.parent
            if parent.name in AGENT_DIRS and not any(parent.iterdir()):
                parent.rmdir()  # the agent directory tether created for this file
        else:
            _atomic_write(change.path, change.new, mode_from=change.path)
        if change.drop_backup is not None:
            change.drop_backup.unlink(missing_ok=True)


def unified_diff(path: Path, old: str | None, new: str | None) -> str:
    def lines(text: str | None) -> list[str]:
        out = (text or "").splitlines(keepends=True)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    return "".join(
        difflib.unified_diff(
            lines(old),
            lines(new),
            fromfile=str(path) if old is not None else "/dev/null",
            tofile=str(path) if new is not None else "/dev/null",
        )
    )
