"""How a process reaches tether's warm processes (the resident process, the warm embedding process).

Two transports. `unix`: a socket file in a private per-user directory, whose mode and directory keep other
users out (the default where there are Unix sockets). `tcp`: a port the system picks on 127.0.0.1 only, and
an endpoint file (`<name>.tcp`, mode 0600, in the same private directory) holding the address, the port and
a random token the process makes at start; a request without that exact token is refused (the default
where there are no Unix sockets: CPython has none on Windows). `TETHER_TRANSPORT=unix|tcp` chooses for
both processes; `TETHER_RESIDENT_TRANSPORT`, where set, for the resident process alone (its older name).

The client half imports only `os` and the C `_socket` (a hook's thin client pays for every module: see
`tether.resident.client`); `listen` and `authorized`, the server half, import what they need when called.

>>> address, token = endpoint("/run/user/1000/tether/res-0123456789abcdef.tcp")  # doctest: +SKIP
"""

from __future__ import annotations

import os

# Not `typing.TYPE_CHECKING`: importing `typing` imports `re` (mypy reads any constant of this name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from _socket import socket as Socket
    from collections.abc import Mapping

# The only address the TCP transport listens on or connects to: never a port other hosts can reach.
LOOPBACK = "127.0.0.1"
# The switch for both warm processes.
ENV = "TETHER_TRANSPORT"
# AF_UNIX paths are cut at 104-108 bytes depending on the system.
MAX_SOCKET_PATH = 100
# The longest name a process puts in the runtime directory (`res-<key>.starting`).
_LONGEST_NAME = len("/res-0123456789abcdef.starting")


def has_unix_sockets() -> bool:
    """Unix domain sockets and user ids exist here (not on Windows)."""
    import _socket

    return hasattr(_socket, "AF_UNIX") and hasattr(os, "getuid")


def choose(environ: Mapping[str, str], override: str = "") -> str | None:
    """`unix` or `tcp`: what `override` (an env var name, when set) or `TETHER_TRANSPORT` names, else the
    platform's default. None when the one named is not there (`unix` on Windows) or is unknown.

    >>> choose({"TETHER_TRANSPORT": "tcp"})
    'tcp'
    """
    chosen = (environ.get(override, "") if override else "").strip().lower()
    chosen = chosen or environ.get(ENV, "").strip().lower()
    if chosen == "tcp" or (not chosen and not has_unix_sockets()):
        return "tcp"
    if chosen in ("", "unix") and has_unix_sockets():
        return "unix"
    return None


def suffix(kind: str) -> str:
    """The file a process of transport `kind` leaves in the runtime directory: a socket, or an endpoint."""
    return ".tcp" if kind == "tcp" else ".sock"


def runtime_dir(environ: Mapping[str, str]) -> str:
    """The per-user directory for sockets: `$XDG_RUNTIME_DIR/tether`, else `/tmp/tether-<uid>`; where there
    are no user ids (Windows), `%LOCALAPPDATA%\\tether\\run`, inside the user's own profile.

    The second when the first is unset or too long for a socket path."""
    if not hasattr(os, "getuid"):
        local = environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        return os.path.join(local, "tether", "run")
    base = environ.get("XDG_RUNTIME_DIR", "")
    if base.startswith("/"):
        candidate = os.path.join(base, "tether")
        if len(candidate) + _LONGEST_NAME <= MAX_SOCKET_PATH:
            return candidate
    return f"/tmp/tether-{os.getuid()}"


def is_private(directory: str) -> bool:
    """A real directory of this user that no one else can enter (else another user could answer requests).

    Where there are no user ids or mode bits (Windows), a real directory: the profile's own permissions
    keep other users out of `runtime_dir` there."""
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    if not hasattr(os, "getuid"):
        return (info.st_mode & 0o170000) == 0o040000
    return (info.st_mode & 0o170000) == 0o040000 and info.st_uid == os.getuid() and not info.st_mode & 0o077


def endpoint(path: str) -> tuple[str | tuple[str, int], str]:
    """Where to connect, and the token to send: a Unix socket's path (no token: the file's mode and its
    directory's keep others out), or the loopback address and token in a `.tcp` endpoint file. Raises
    FileNotFoundError (no process) or ConnectionRefusedError (a file that is not a loopback endpoint)."""
    if not path.endswith(".tcp"):
        return path, ""
    with open(path, encoding="ascii", errors="replace") as handle:
        fields = handle.read(512).split()
    if len(fields) != 3 or fields[0] != LOOPBACK or not fields[1].isdigit() or len(fields[2]) < 32:
        raise ConnectionRefusedError(f"{path} is not a loopback endpoint")
    return (LOOPBACK, int(fields[1])), fields[2]


def connect(address: str | tuple[str, int], timeout: float) -> Socket:
    """A stream connected to a socket path or a loopback (host, port), with `timeout` set. Raises OSError
    (ConnectionRefusedError where there are no Unix sockets and `address` is a path)."""
    import _socket

    if isinstance(address, tuple):
        if address[0] != LOOPBACK:
            raise ConnectionRefusedError(f"{address[0]} is not {LOOPBACK}: tether only talks over loopback")
        family = _socket.AF_INET
    elif hasattr(_socket, "AF_UNIX"):
        family = _socket.AF_UNIX
    else:
        raise ConnectionRefusedError("Unix domain sockets are not available here: use TETHER_TRANSPORT=tcp")
    conn = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(address)
    except BaseException:
        conn.close()
        raise
    return conn


# -- the server half ----------------------------------------------------------------------------------------


def listen(path: str, kind: str, backlog: int) -> tuple[socket.socket, str]:
    """A listening socket for `path`, and the token its requests must carry ("" for a Unix socket).

    `unix`: a socket file at `path`, mode 0600. `tcp`: a port the system picks on 127.0.0.1, and the
    endpoint file at `path` (mode 0600, written whole) naming it and a fresh 256-bit token."""
    import secrets
    import socket
    from pathlib import Path

    from tether.fs import write_atomic

    token = ""
    if kind == "tcp":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((LOOPBACK, 0))  # a port the system picks, on loopback only
            listener.listen(backlog)
            token = secrets.token_hex(32)
            port = listener.getsockname()[1]
            write_atomic(Path(path), f"{LOOPBACK} {port} {token}\n", mode=0o600)
        except BaseException:
            listener.close()
            raise
        return listener, token
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(backlog)
    except BaseException:
        listener.close()
        raise
    return listener, token


def authorized(token: str, given: object) -> bool:
    """Whether a request carrying `given` may be answered by a process whose token is `token` (in constant
    time; any request, when there is no token: a Unix socket)."""
    import hmac

    if not token:
        return True
    return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())
