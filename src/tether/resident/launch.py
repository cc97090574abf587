"""Starting the resident process: from session start, or the first hook or command that finds none.

A start is a detached `tether resident serve` (`tether.detach`) and returns at once; the process binds its
socket within a few hundred milliseconds, and until then hooks answer in process. Racing hooks start one
process: whoever starts one touches the `.starting` file first, and the process itself exits at once when
another holds the lock.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from tether.config import Config
from tether.fs import file_lock, make_private_dir
from tether.project import resolve
from tether.resident import client
from tether.transport import is_private

# Longer than a process takes to start and take its lock on a loaded machine: within it, no second start.
START_GRACE_SECONDS = 10.0


def private_dir(directory: Path) -> Path:
    """Create `directory` with mode 0700 (or tighten it, if it is ours); raise PermissionError if it is
    not a private directory of this user (another user could answer this user's hooks through it)."""
    if not is_private(str(make_private_dir(directory))):
        raise PermissionError(f"{directory} is not a private directory of this user: remove it")
    return directory


def start(cwd: Path, environ: Mapping[str, str] | None = None) -> bool:
    """Start the resident process of the project at `cwd` unless it is off (`TETHER_RESIDENT=0`, the
    `resident.enabled` key), running, or being started. True when a process was started."""
    env = os.environ if environ is None else environ
    if not client.enabled(env):
        return False
    paths = resolve(cwd, Path(client.user_home(env)))
    if paths.root is None:
        return False
    if not Config.load(*paths.config_files).flag("resident.enabled"):
        return False
    socket = Path(client.socket_path(str(paths.root), env))
    private_dir(socket.parent)
    starting = Path(client.starting_path(str(socket)))
    try:
        if time.time() - starting.stat().st_mtime < START_GRACE_SECONDS:
            return False
    except FileNotFoundError:
        pass
    with file_lock(Path(client.lock_path(str(socket))), wait=False) as free:
        if not free:
            return False
    starting.touch()
    from tether.detach import spawn_detached

    argv = [sys.executable, "-m", "tether", "resident", "serve"]
    spawn_detached(argv, paths.logs / "resident.log", cwd=paths.root)
    return True


def start_quietly(cwd: str) -> bool:
    """`start`, for a hook or command that must not fail over an optimization."""
    try:
        return start(Path(cwd))
    except Exception:
        return False
