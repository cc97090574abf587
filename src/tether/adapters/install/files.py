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
    made_dirs: tuple[Path, ...] = ()  # directories that do not exist yet and writing the file creates

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
    if new == old or (old is None and editor.is_blank(new)):
        return None  # nothing to do, and no empty file made for nothing
    backup = backup_path(path)
    if old is not None and editor.is_blank(new):  # all that is left of tether there goes (TETHER_BIN)
        return _taken_out(path, old, new, editor)
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    return Change(
        path,
        old,
        new,
        backup=backup if old is not None and not backup.exists() else None,
        made_dirs=tuple(missing),
    )


def plan_uninstall(path: Path, editor: Editor) -> Change | None:
    old = read(path)
    if old is None:
        return None
    try:
        new = editor.uninstall(old)
    except Problem as problem:
        raise _config_error(path, problem) from None
    if new == old:
        return None
    return _taken_out(path, old, new, editor)


def _taken_out(path: Path, old: str, new: str, editor: Editor) -> Change:
    """A change that takes tether's entries out: back to the original bytes, or gone if tether made it."""
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


class MadeDirs:
    """Which directories tether's installs created (a text file, one path a line, in tether's user data).

    Uninstall removes a directory only when it is empty and an install created it: an agent directory that
    was there before, even empty, stays.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[str]:
        text = read(self.path)
        return [line for line in (text or "").splitlines() if line]

    def save(self, paths: list[str]) -> None:
        if paths:
            _atomic_write(self.path, "".join(f"{p}\n" for p in paths), mode_from=None)
        else:
            self.path.unlink(missing_ok=True)


def apply(changes: list[Change], made: MadeDirs) -> None:
    """Write the planned changes: backups first, then each file atomically; then the directory record."""
    recorded = made.load()
    for change in changes:
        if change.backup is not None and change.old is not None:
            _atomic_write(change.backup, change.old, mode_from=change.path)
    for change in changes:
        if change.new is None:
            change.path.unlink(missing_ok=True)
            for parent in change.path.parents:
                if str(parent) not in recorded or any(parent.iterdir()):
                    break
                parent.rmdir()
                recorded.remove(str(parent))
        else:
            _atomic_write(change.path, change.new, mode_from=change.path)
            recorded += [str(d) for d in change.made_dirs if str(d) not in recorded]
        if change.drop_backup is not None:
            change.drop_backup.unlink(missing_ok=True)
    made.save(recorded)


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
