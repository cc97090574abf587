"""The resident process, client side: where its socket is, the wire format, and a hook or command sent over it.

A hook is a fresh process on every prompt and tool call. With the project's resident process up
(`tether.resident.server`), the hook entry point (`tether.__main__`) sends the agent's JSON to it and writes
back what it answers, importing nothing but this module: `os`, `sys`, `time` (loaded by every interpreter)
and the C `_socket` (the `socket` module would pull in `selectors` and `enum`, and `json` pulls in `re`:
together as much again as the interpreter's own start). When the process is absent, busy or late, the caller
falls back to the in-process hook, with what is left of the hook's deadline. The CLI's read commands
(`cli`) and the MCP server's read tools (`tool`) ask it the same way. The process is reached over a Unix
socket, or over TCP on 127.0.0.1 with a token (`tether.transport`: where there are no Unix sockets, as on
Windows), as the warm embedding process is.

Wire format, each way: one line of JSON (the header), then exactly `length` bytes (the body; `length` 0 or
absent: none). Requests name an `op`: `hook` (`agent`, `event`, `cwd`, `deadline`; the body is the agent's
JSON, passed through unparsed), `cli` (`argv`, `cwd`, `env`; the answer is the body: `command_body`),
`tool` (`tool`, `arguments`, `session`, `cwd`; the answer is the body, as JSON), `status`, `stop`. Every
reply starts with `"ok"`: `{"ok":true,"length":N}` in exactly that compact form for a hook and a read command
(what `reply_header` writes, so their clients read it without a JSON parser: importing `json` costs a
third of the interpreter's start), or `{"ok":false,"fallback":"..."}` when the caller should do the work
itself (busy, late, another project, the process stopping).

>>> status, out = hook(["claude", "UserPromptSubmit"], b'{"prompt": "why?"}', os.environ)  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import time

from tether.transport import choose, connect, endpoint, is_private, runtime_dir, suffix

# Not `typing.TYPE_CHECKING`: importing `typing` imports `re` (mypy reads any constant of this name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket as Socket
    from collections.abc import Mapping
    from typing import Any

    Field = str | int | float | bool | list[str] | dict[str, str]

# A warm answer takes milliseconds; past this the process is busy or wedged, and the in-process hook still
# has two thirds of the deadline (`DEFAULT_DEADLINE`) for its own ~100-300 ms.
HOOK_TIMEOUT = 1.0
# The hook runner's own default (`tether.adapters.hooks.DEFAULT_DEADLINE_SECONDS`).
DEFAULT_DEADLINE = 3.0
# A read command waits longer: a search at 100k memories takes a second, and the fallback costs as much.
CLI_TIMEOUT = 10.0
# An MCP read tool, likewise (its server has the workspace to fall back on, opened on that first miss).
TOOL_TIMEOUT = 10.0
_MAX_HEADER = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
_OK_PREFIX = b'{"ok":true,"length":'
_OFF = ("0", "off", "false", "no")


def enabled(environ: Mapping[str, str]) -> bool:
    """`TETHER_RESIDENT=0` turns the resident process off for this environment (the `resident.enabled`
    config key turns it off for a project or user); so does a `TETHER_RESIDENT_TRANSPORT` it cannot use."""
    if environ.get("TETHER_RESIDENT", "1").strip().lower() in _OFF:
        return False
    return transport(environ) is not None


def transport(environ: Mapping[str, str]) -> str | None:
    """How the resident process is reached (`tether.transport`): `unix` or `tcp`, as
    `TETHER_RESIDENT_TRANSPORT` or else `TETHER_TRANSPORT` names, else the platform's default; None when
    the one named is not there (or unknown)."""
    return choose(environ, "TETHER_RESIDENT_TRANSPORT")


def user_home(environ: Mapping[str, str]) -> str:
    """`$TETHER_HOME`, else the XDG data dir: `tether.project.user_home`, without pathlib."""
    if environ.get("TETHER_HOME"):
        return os.path.expanduser(environ["TETHER_HOME"])
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "tether")


def project_root(start: str) -> str | None:
    """The nearest ancestor with `.tether/memories/`, not crossing above the git root:
    `tether.project.find_project_root`, without pathlib."""
    current = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(current, ".tether", "memories")):
            return current
        parent = os.path.dirname(current)
        if parent == current or os.path.exists(os.path.join(current, ".git")):
            return None
        current = parent


def server_key(root: str, environ: Mapping[str, str]) -> str:
    """What one resident process serves: a project, a user home, a database, an interpreter and this copy
    of tether. Any of them different is another process (an upgrade never talks to an old one)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = "\0".join(
        (root, user_home(environ), environ.get("TETHER_DATABASE_URL", ""), sys.executable, package)
    )
    # FNV-1a, 64 bits: no hashlib import on the hook's path. A collision only costs a fallback: the
    # process checks the request's project and home, and answers "another project" otherwise.
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def socket_path(root: str, environ: Mapping[str, str]) -> str:
    """The process's socket file (`.sock`), or over TCP its endpoint file (`.tcp`: address, port, token)."""
    kind = transport(environ) or "unix"
    return os.path.join(runtime_dir(environ), f"res-{server_key(root, environ)}{suffix(kind)}")


def lock_path(socket: str) -> str:
    """Held by the live process for its whole life: free means no process (its socket file is stale).
    One per project whichever the transport, so a `unix` and a `tcp` process never serve it at once."""
    return socket.rpartition(".")[0] + ".lock"


def starting_path(socket: str) -> str:
    """Touched by whoever starts a process, so racing hooks start one, not nine."""
    return socket.rpartition(".")[0] + ".starting"


def located(root: str, environ: Mapping[str, str]) -> tuple[str | tuple[str, int], str] | None:
    """The project's process: its `endpoint`, or None when its directory is not this user's private one or
    no process has an endpoint there."""
    path = socket_path(root, environ)
    if not is_private(os.path.dirname(path)):
        return None
    try:
        return endpoint(path)
    except (OSError, ValueError):
        return None


# -- the wire --------------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    if any(ord(c) < 0x20 for c in text):
        text = "".join(c if ord(c) >= 0x20 else f"\\u{ord(c):04x}" for c in text)
    return f'"{text}"'


def encode_header(fields: Mapping[str, Field]) -> bytes:
    """One header line of JSON, for string, number, string-list and string-map fields (no `json` import on
    the hook's or a read command's path)."""
    parts = []
    for name, value in fields.items():
        if isinstance(value, bool):
            encoded = "true" if value else "false"
        elif isinstance(value, int | float):
            encoded = repr(value)
        elif isinstance(value, str):
            encoded = _quote(value)
        elif isinstance(value, dict):
            encoded = "{" + ",".join(f"{_quote(k)}:{_quote(v)}" for k, v in value.items()) + "}"
        else:
            encoded = "[" + ",".join(_quote(item) for item in value) + "]"
        parts.append(f"{_quote(name)}:{encoded}")
    return ("{" + ",".join(parts) + "}\n").encode("utf-8", "strict")


def reply_header(length: int) -> bytes:
    """A successful hook or read command reply's header, in the one form `hook` and `cli` read."""
    return _OK_PREFIX + str(length).encode() + b"}\n"


def command_body(code: int, stdout: str, stderr: str) -> bytes:
    """A read command's answer as `cli` reads it: `CODE STDOUT_BYTES\n`, then stdout and stderr, UTF-8 (any
    lone surrogate passed through, so the text arrives as it was written)."""
    out = stdout.encode("utf-8", "surrogatepass")
    return f"{code} {len(out)}\n".encode() + out + stderr.encode("utf-8", "surrogatepass")


def _command_answer(body: bytes) -> tuple[int, str, str] | None:
    line, newline, rest = body.partition(b"\n")
    fields = line.split(b" ")
    if not newline or len(fields) != 2 or not all(f.lstrip(b"-").isdigit() for f in fields):
        return None
    code, size = int(fields[0]), int(fields[1])
    if not 0 <= size <= len(rest):
        return None
    return code, rest[:size].decode("utf-8", "surrogatepass"), rest[size:].decode("utf-8", "surrogatepass")


def exchange(address: str | tuple[str, int], message: bytes, timeout: float) -> tuple[bytes, bytes]:
    """Send `message` (header line and body) to a socket path or a loopback (host, port) (`endpoint`) and
    read the reply's header line and body, all within `timeout` seconds. Raises OSError (TimeoutError,
    FileNotFoundError, ConnectionRefusedError...)."""
    deadline = time.monotonic() + timeout
    conn = connect(address, timeout)
    try:
        conn.sendall(message)
        data = _read_until(conn, deadline, lambda buffer: b"\n" in buffer, _MAX_HEADER)
        head, _, body = data.partition(b"\n")
        length = _length(head)
        if len(body) < length:
            body += _read_until(conn, deadline, lambda buffer: len(body) + len(buffer) >= length, length)
        return head, body[:length]
    finally:
        conn.close()


def _read_until(conn: Socket, deadline: float, done: Any, limit: int) -> bytes:
    data = b""
    while not done(data):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the resident process did not answer in time")
        conn.settimeout(remaining)
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError("the resident process closed the connection")
        data += chunk
        if len(data) > limit + _MAX_HEADER:
            raise ConnectionResetError("the resident process sent an oversized reply")
    return data


def _length(head: bytes) -> int:
    """The body length of a reply header: only the compact form `reply_header` writes; 0 for any other."""
    if head.startswith(_OK_PREFIX) and head.endswith(b"}"):
        digits = head[len(_OK_PREFIX) : -1]
        if digits.isdigit():
            return min(int(digits), _MAX_BODY)
    return 0


# -- what callers send ------------------------------------------------------------------------------------


def hook(
    argv: list[str], raw: bytes, environ: Mapping[str, str], cwd: str | None = None
) -> tuple[str, bytes]:
    """Send one hook to the project's resident process. Returns (status, what to write on stdout).

    Status `served`: the process ran the hook (the bytes are its whole output, maybe none). Anything else
    means the caller runs the hook itself: `off` (disabled, or no sockets here), `none` (not a tether
    project), `absent` (no process: start one), `busy`, `late` or `fallback` (the process said so)."""
    if len(argv) != 2 or not enabled(environ):
        return "off", b""
    cwd = cwd or os.getcwd()
    root = project_root(cwd)
    if root is None:
        return "none", b""
    found = located(root, environ)
    if found is None:
        return "absent", b""
    address, token = found
    try:
        deadline = float(environ.get("TETHER_HOOK_DEADLINE", DEFAULT_DEADLINE))
    except ValueError:
        deadline = DEFAULT_DEADLINE
    timeout = min(HOOK_TIMEOUT, deadline / 3)
    fields: dict[str, str | int | float | bool] = {
        "op": "hook",
        "agent": argv[0],
        "event": argv[1],
        "cwd": cwd,
        "deadline": time.time() + timeout,
        "length": len(raw),
    }
    if token:
        fields["token"] = token
    try:
        header = encode_header(fields)
    except UnicodeEncodeError:
        return "fallback", b""  # a path that is not UTF-8: the in-process hook handles it
    try:
        head, body = exchange(address, header + raw, timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        return "absent", b""
    except TimeoutError:
        return "late", b""
    except OSError:
        return "busy", b""
    if not head.startswith(_OK_PREFIX):
        return "fallback", b""
    return "served", body


def request(
    root: str, fields: Mapping[str, Any], environ: Mapping[str, str], *, body: bytes = b"", timeout: float
) -> tuple[dict[str, Any], bytes] | None:
    """Any request (`json` allowed: not a hook's path). The reply's header and body; None when no process
    answered (absent, or late)."""
    import json

    found = located(root, environ)
    if found is None:
        return None
    address, token = found
    header = {**fields, "length": len(body), **({"token": token} if token else {})}
    message = json.dumps(header, separators=(",", ":")).encode() + b"\n" + body
    try:
        head, data = exchange(address, message, timeout)
    except OSError:
        return None
    try:
        reply = json.loads(head)
    except ValueError:
        return None
    return (reply, data) if isinstance(reply, dict) else None


def cli(argv: list[str], environ: Mapping[str, str], cwd: str | None = None) -> tuple[int, str, str] | None:
    """Run a read command (`tether search ...`) in the project's resident process: (exit code, stdout,
    stderr), or None when it is absent, busy, late or declines (the caller runs the command itself)."""
    if not enabled(environ):
        return None
    cwd = cwd or os.getcwd()
    root = project_root(cwd)
    if root is None:
        return None
    found = located(root, environ)
    if found is None:
        return None
    address, token = found
    env = {k: v for k, v in environ.items() if k.startswith("TETHER_")}
    fields: dict[str, Field] = {"op": "cli", "argv": argv, "cwd": cwd, "env": env, "length": 0}
    if token:
        fields["token"] = token
    try:
        head, body = exchange(address, encode_header(fields), CLI_TIMEOUT)
    except (OSError, UnicodeEncodeError):  # absent, late, busy; a path or argument that is not UTF-8
        return None
    if not head.startswith(_OK_PREFIX):
        return None  # `{"ok":false,...}`: the command runs in its own process
    return _command_answer(body)


def tool(
    cwd: Any,
    name: str,
    arguments: Mapping[str, Any],
    session: str | None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """Run an MCP read tool (`memory_search`, `memory_get`) in the project's resident process: the tool's
    answer, or None when it is absent, busy, late or declines (the MCP server then answers in process).
    `tether.adapters.mcp.memories.Remote`, which `tether.__main__` hands the MCP server."""
    import json

    environ = os.environ if environ is None else environ
    if not enabled(environ):
        return None
    where = os.fspath(cwd)
    root = project_root(where)
    if root is None:
        return None
    fields = {"op": "tool", "tool": name, "arguments": dict(arguments), "session": session, "cwd": where}
    answered = request(root, fields, environ, timeout=TOOL_TIMEOUT)
    if answered is None or answered[0].get("ok") is not True:
        return None
    try:
        result = json.loads(answered[1])
    except ValueError:
        return None
    return result if isinstance(result, dict) else None
