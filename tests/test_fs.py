"""`tether.fs`: atomic writes (whole or not at all, with the right permissions) and the advisory lock."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tether.fs import file_lock, make_private_dir, write_atomic


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


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_file_lock_excludes_another_process(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    probe = (
        "import sys; from pathlib import Path; from tether.fs import file_lock\n"
        "with file_lock(Path(sys.argv[1]), wait=False) as held: print(held)"
    )
    with file_lock(lock) as held:
        assert held
        out = subprocess.run(
            [sys.executable, "-c", probe, str(lock)], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == "False"
    out = subprocess.run([sys.executable, "-c", probe, str(lock)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


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
