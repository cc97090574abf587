"""The transport of both warm processes (`tether.transport`): which one, where its files go, the endpoint
file, and a real listener over each (the processes themselves: `test_resident.py`, `test_embed_service.py`)."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import listening
from tether import transport


def test_the_switch_and_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert transport.choose({}) == transport.choose({"TETHER_TRANSPORT": "unix"}) == "unix"
    assert transport.choose({"TETHER_TRANSPORT": " TCP "}) == "tcp"
    assert transport.choose({"TETHER_TRANSPORT": "pipe"}) is None
    # An override, where set, wins; unset or empty, the shared switch decides.
    assert transport.choose({"TETHER_TRANSPORT": "tcp", "MINE": "unix"}, "MINE") == "unix"
    assert transport.choose({"TETHER_TRANSPORT": "tcp", "MINE": ""}, "MINE") == "tcp"
    assert transport.suffix("tcp") == ".tcp" and transport.suffix("unix") == ".sock"
    # Where there are no user ids (Windows): TCP by default, `unix` refused.
    monkeypatch.delattr(os, "getuid")
    assert transport.choose({}) == "tcp" and transport.choose({"TETHER_TRANSPORT": "unix"}) is None


def test_runtime_dir_falls_back_when_too_long(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert transport.runtime_dir({"XDG_RUNTIME_DIR": "/run/user/1000"}) == "/run/user/1000/tether"
    assert transport.runtime_dir({"XDG_RUNTIME_DIR": "/x" * 60}) == f"/tmp/tether-{os.getuid()}"
    assert transport.runtime_dir({"XDG_RUNTIME_DIR": "relative"}) == f"/tmp/tether-{os.getuid()}"
    assert transport.runtime_dir({}) == f"/tmp/tether-{os.getuid()}"
    # Windows: in the user's profile, private by its own permissions.
    monkeypatch.delattr(os, "getuid")
    assert transport.runtime_dir({"LOCALAPPDATA": str(tmp_path)}) == str(tmp_path / "tether" / "run")
    assert transport.is_private(str(tmp_path)) and not transport.is_private(str(tmp_path / "absent"))


def test_is_private(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o755)
    (tmp_path / "link").symlink_to(private)
    assert transport.is_private(str(private))
    assert not transport.is_private(str(loose)) and not transport.is_private(str(tmp_path / "link"))


def test_an_endpoint_file_that_is_not_a_loopback_endpoint_is_refused(tmp_path: Path) -> None:
    assert transport.endpoint("/t/res-1.sock") == ("/t/res-1.sock", "")
    good = tmp_path / "res-1.tcp"
    good.write_text(f"127.0.0.1 4242 {'a' * 64}\n")
    assert transport.endpoint(str(good)) == (("127.0.0.1", 4242), "a" * 64)
    for text in ("0.0.0.0 4242 " + "a" * 64, "127.0.0.1 http " + "a" * 64, "127.0.0.1 4242 short", ""):
        good.write_text(text)
        with pytest.raises(ConnectionRefusedError):
            transport.endpoint(str(good))
    with pytest.raises(FileNotFoundError):
        transport.endpoint(str(tmp_path / "res-2.tcp"))


def test_connect_refuses_an_address_off_loopback() -> None:
    with pytest.raises(ConnectionRefusedError, match="loopback"):
        transport.connect(("10.0.0.1", 80), 1.0)


@pytest.mark.parametrize(
    ("token", "given", "answered"),
    [
        ("", None, True),  # a Unix socket: its file's mode keeps others out
        ("a" * 64, "a" * 64, True),
        ("a" * 64, None, False),
        ("a" * 64, "", False),
        ("a" * 64, "a" * 63, False),
        ("a" * 64, ["a" * 64], False),
        ("a" * 64, "ü" * 64, False),
    ],
)
def test_authorized(token: str, given: object, answered: bool) -> None:
    assert transport.authorized(token, given) is answered


@pytest.fixture
def runtime() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="tt-", dir="/tmp") as tmp:  # short: a socket path
        yield Path(tmp)


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_listen_and_connect(runtime: Path, kind: str) -> None:
    path = runtime / f"x{transport.suffix(kind)}"
    listener, token = transport.listen(str(path), kind, backlog=4)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_ISSOCK(path.stat().st_mode) == (kind == "unix")
        address, read = transport.endpoint(str(path))
        assert read == token and (len(token) == 64 if kind == "tcp" else token == "")
        if kind == "tcp" and Path("/proc/net/tcp").exists():
            assert isinstance(address, tuple) and listening(address[1]) == ["0100007F"]  # 127.0.0.1 only
        conn = transport.connect(address, 5.0)
        served, _ = listener.accept()
        conn.sendall(json.dumps({"token": token}).encode() + b"\n")
        assert transport.authorized(token, json.loads(served.recv(1024))["token"])
        served.close()
        conn.close()
    finally:
        listener.close()
