"""`tether.fs`: atomic writes (whole or not at all, with the right permissions) and the advisory lock."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tether.fs import WorkerLock, file_lock, make_private_dir, write_atomic


def test_write_atomic_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "d" / "n.md"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["n.md"]


def test_write_atomic_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "n.md"
    write_atomic(target, "old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "new \udcff")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_a_new_file_gets_the_umask_mode_and_a_rewrite_keeps_its_mode(tmp_path: Path) -> None:
    """Notes are committed: a teammate's tools must be able to read them (mkstemp alone makes 0600)."""
    old = os.umask(0o022)
    try:
        target = tmp_path / "n.md"
        write_atomic(target, "one")
        assert target.stat().st_mode & 0o777 == 0o644
        target.chmod(0o640)
        write_atomic(target, "two")
        assert target.stat().st_mode & 0o777 == 0o640
        backup = tmp_path / "n.md.bak"
        write_atomic(backup, "one", mode_from=target)
        assert backup.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_through_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "[1]", through_symlink=True)
    assert link.is_symlink() and real.read_text() == "[1]"
    write_atomic(link, "[2]")
    assert not link.is_symlink() and link.read_text() == "[2]" and real.read_text() == "[1]"


# A writer in a child process: `flock` (POSIX), or the path a system without `fcntl` takes (Windows), which
# runs here with `fcntl` hidden from tether: `filelock` is imported first and keeps its own reference, so
# what locks is the library's real implementation (on Linux its `flock`; on Windows its `LockFileEx`).
_WRITER = """
import sys
from pathlib import Path
if sys.argv[1] == "filelock":
    import filelock
    sys.modules["fcntl"] = None
from tether.fs import file_lock
lock, counter, times = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
for _ in range(times):
    with file_lock(lock) as held:
        assert held
        counter.write_text(str(int(counter.read_text()) + 1))
if sys.argv[1] == "filelock":
    import tether.fs
    assert "fcntl" not in vars(tether.fs) and sys.modules["fcntl"] is None
"""
_PROBE = """
import sys
from pathlib import Path
if sys.argv[1] == "filelock":
    import filelock
    sys.modules["fcntl"] = None
from tether.fs import file_lock
with file_lock(Path(sys.argv[2]), wait=False) as held:
    print(held)
"""


def _probe(kind: str, lock: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, kind, str(lock)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize("kind", ["flock", "filelock"])
def test_file_lock_excludes_another_process(tmp_path: Path, kind: str) -> None:
    lock = tmp_path / ".lock"
    with file_lock(lock) as held:
        assert held
        assert _probe(kind, lock) == "False"
    assert _probe(kind, lock) == "True"


@pytest.mark.parametrize("kind", ["flock", "filelock"])
def test_concurrent_writers_under_the_lock_lose_no_update(tmp_path: Path, kind: str) -> None:
    """Four processes each add 1 to a counter 150 times, read-modify-write under the lock: all 600 land."""
    lock, counter = tmp_path / "d" / ".lock", tmp_path / "counter"
    counter.write_text("0")
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, kind, str(lock), str(counter), "150"])
        for _ in range(4)
    ]
    assert [writer.wait() for writer in writers] == [0, 0, 0, 0]
    assert counter.read_text() == "600"


def test_without_fcntl_the_lock_is_filelocks_and_excludes_a_flock_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Windows path in this process (no `fcntl` to import), against a POSIX `flock` in another."""
    import filelock  # noqa: F401  (before `fcntl` is hidden: the library keeps its own reference)

    monkeypatch.setitem(sys.modules, "fcntl", None)
    lock = tmp_path / ".lock"
    with file_lock(lock) as held:
        assert held
        assert _probe("flock", lock) == "False"
        with file_lock(lock, wait=False) as again:  # another holder, even in this process
            assert again is False
    assert _probe("flock", lock) == "True"
    monkeypatch.setitem(sys.modules, "filelock", None)
    with pytest.raises(RuntimeError, match=r"no file locking here.*pip install filelock"), file_lock(lock):
        pass


def test_read_limited_reads_a_regular_file_and_refuses_the_rest(tmp_path: Path) -> None:
    from tether.fs import RefusedFile, read_limited

    (tmp_path / "f").write_bytes(b"abc")
    assert read_limited(tmp_path / "f", 3) == b"abc"
    with pytest.raises(RefusedFile, match="over the limit of 2"):
        read_limited(tmp_path / "f", 2)
    os.mkfifo(tmp_path / "fifo")  # opened without blocking: refused at once, no writer needed
    with pytest.raises(RefusedFile, match="not a regular file"):
        read_limited(tmp_path / "fifo", 10)
    with pytest.raises(RefusedFile, match="a directory"):
        read_limited(tmp_path, 10)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "link").symlink_to(tmp_path / "f")
    with pytest.raises(RefusedFile, match="outside"):
        read_limited(tmp_path / "in" / "link", 10, inside=tmp_path / "in")
    assert read_limited(tmp_path / "in" / "link", 10, inside=tmp_path) == b"abc"


def test_make_private_dir_creates_or_tightens_only_this_users_real_directory(tmp_path: Path) -> None:
    fresh = make_private_dir(tmp_path / "a" / "b")
    assert fresh.is_dir() and stat.S_IMODE(fresh.stat().st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    make_private_dir(loose)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700
    target = tmp_path / "target"
    target.mkdir()
    os.chmod(target, 0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    make_private_dir(link)  # a symlink is not tightened through: the caller's check refuses it
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_a_worker_lock_sits_beside_its_file_and_says_when_another_holds_it(tmp_path: Path) -> None:
    index = tmp_path / "index.db"
    worker = WorkerLock(index, "repomap")
    assert (worker.path.name, worker.stamp.name) == ("index.db.repomap-lock", "index.db.repomap-starting")
    assert not worker.busy()
    with worker.held(wait=False) as held:
        assert held
        script = (
            "import sys\nfrom pathlib import Path\nfrom tether.fs import WorkerLock\n"
            "w = WorkerLock(Path(sys.argv[1]), 'repomap')\n"
            "with w.held(wait=False) as held:\n    print(held, w.busy())\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script, str(index)], capture_output=True, text=True, check=True
        )
        assert done.stdout.split() == ["False", "True"]  # another process: not its to hold, and busy
    assert not worker.busy()
