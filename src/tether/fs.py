"""Files as tether writes them: atomically (`write_atomic`, whose leftovers `sweep_orphans` removes), under
an advisory lock (`file_lock`), and in directories only their user can enter (`make_private_dir`).

>>> write_atomic(Path(".tether/config.toml"), "# tether configuration\\n")  # doctest: +SKIP
>>> with file_lock(Path(".tether/.lock")) as held:  # doctest: +SKIP
...     ...
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path


def write_atomic(
    path: Path,
    text: str,
    *,
    mode_from: Path | None = None,
    through_symlink: bool = False,
    mode: int | None = None,
) -> None:
    """Write `text` to `path` so readers see the old file or the new one, never a mix.

    Temp file beside the target, fsync, rename, fsync of the directory: after a crash the file is whole,
    old or new. The new file keeps the permissions of `mode_from` (default: of `path` itself) when that
    exists, else gets what a plain `open` would (0666 less the umask; `mkstemp` alone would make it 0600,
    unreadable to a teammate's tools). `through_symlink` writes to the file a symlink points at and keeps
    the link (a dotfile manager's config); otherwise a symlink at `path` is replaced by the file. `mode`
    sets the permissions outright (0600 for a file only its owner may read).
    """
    target = Path(os.path.realpath(path)) if through_symlink else path
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        mode = _mode_of(mode_from if mode_from is not None else target)
    import tempfile  # a write only: its import (with shutil's) is 10 ms of a hook that only reads

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


class RefusedFile(OSError):
    """A file tether will not read: not a regular file (a directory, a FIFO, a device), or over a limit."""


def read_limited(path: Path, limit: int, *, inside: Path | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them, without ever blocking.

    Opened non-blocking, so a FIFO planted under a note's or rule file's name cannot hang the reader;
    anything but a regular file, or a file over `limit` bytes, raises `RefusedFile` (with a message
    saying which). `inside`: the file (after every symlink) must lie under this directory."""
    if inside is not None:
        target = Path(os.path.realpath(path))
        if not target.is_relative_to(Path(os.path.realpath(inside))):
            raise RefusedFile(f"a symlink to {target}, outside {inside}: not followed")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise RefusedFile(f"{kind}, so not read")
        if info.st_size > limit:
            raise RefusedFile(f"{info.st_size} bytes, over the limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:  # it grew while being read
        raise RefusedFile(f"over the limit of {limit} bytes")
    return b"".join(chunks)


def make_private_dir(directory: Path) -> Path:
    """Create `directory` (and its parents) with mode 0700, or tighten an existing one to 0700 when it is a
    real directory of this user. Another user's directory, or a symlink, is left as it is: the caller checks
    the result with its own words for what an unsafe directory would let through. Where there are no user
    ids (Windows) the mode means nothing and the directory is left to its parent's permissions."""
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not hasattr(os, "getuid"):
            return directory
        info = os.lstat(directory)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
            os.chmod(directory, 0o700)
    return directory


def _mode_of(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is on disk.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def file_lock(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on `path` (created if missing) for the `with` block: every lock tether takes
    goes through here.

    Yields True while held; with `wait=False`, yields False at once when another process holds it. POSIX:
    `flock`, blocking in the kernel. Where there is no `fcntl` (Windows): the `filelock` library
    (`LockFileEx` there), a dependency only on such systems.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        lock = _portable_lock
    else:
        del fcntl
        lock = _flock
    with lock(path, wait) as held:
        yield held


class WorkerLock:
    """The lock a detached worker holds while it works, beside a file (the index: `index.db.NAME-lock`, which
    `.tether/.gitignore`'s `index.db*` covers in every existing project), and the stamp its starter leaves
    (`index.db.NAME-starting`) so that starters racing in the second before it takes the lock start one."""

    def __init__(self, beside: Path, name: str) -> None:
        self.path = beside.with_name(f"{beside.name}.{name}-lock")
        self.stamp = beside.with_name(f"{beside.name}.{name}-starting")

    def held(self, *, wait: bool) -> AbstractContextManager[bool]:
        """`file_lock` on the lock: True while held, False at once when another has it, unless `wait`."""
        return file_lock(self.path, wait=wait)

    def busy(self) -> bool:
        """Whether a worker holds the lock now."""
        with file_lock(self.path, wait=False) as free:
            return not free


@contextmanager
def _flock(path: Path, wait: bool) -> Iterator[bool]:
    import fcntl

    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _portable_lock(path: Path, wait: bool) -> Iterator[bool]:
    try:
        import filelock
    except ImportError as exc:
        # Never "locked" without a lock: two writers could then lose an acknowledged update.
        raise RuntimeError(
            "no file locking here: this system has no fcntl and the filelock package is missing "
            "(pip install filelock, or reinstall tether, which depends on it on such systems)"
        ) from exc
    lock = filelock.FileLock(os.fspath(path))
    try:
        # timeout -1 waits as long as it takes, as `flock` does; 0 tries once.
        lock.acquire(timeout=-1 if wait else 0)
    except filelock.Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


# A temp file of an atomic write (`.<name>.<random>.tmp`) lives milliseconds; one older than this was left
# by a process killed mid-write, and the next sync removes it. A minute is far beyond any write in flight.
ORPHAN_AGE_SECONDS = 60


def sweep_orphans(
    directories: Sequence[Path | None], now: float, age: float = ORPHAN_AGE_SECONDS
) -> list[Path]:
    """Remove temp files (`.*.tmp`) older than `age` seconds from `directories`; returns what went.

    Only tether's own temp names are touched, and only files: nothing another program keeps there."""
    removed: list[Path] = []
    for directory in directories:
        if directory is None:
            continue
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
                continue
            try:
                if (
                    entry.is_file(follow_symlinks=False)
                    and now - entry.stat(follow_symlinks=False).st_mtime > age
                ):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
            except OSError:
                continue  # gone already, or a read-only directory: the next sync tries again
    return removed
