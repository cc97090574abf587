"""The warm embedding process, client side: where its socket lives, `RemoteEmbedder`, and starting it.

A hook is a fresh process on every prompt and cannot wait seconds for a model to load. With a real model
configured, one warm process per project and embedder (`tether.embed.warm.server`) loads it once and answers
"embed these texts" over a Unix domain socket, or over loopback TCP with a token where there are none
(`tether.transport`, as the resident process is reached). This module is stdlib only and imports nothing
heavy, so a hook can use it.

Protocol: one JSON object per line, each way. Requests are `{"op": "ping"}` (liveness; counts as use),
`{"op": "status"}` (the same, without counting as use), `{"op": "embed", "texts": [...]}` and
`{"op": "stop"}`; over TCP every request carries the `token` of the endpoint file. Every reply names the server's `spec`, embedder `id` and `dim` (0 until the model has
loaded), and `ready`; an embed reply adds `vectors`: every vector's float32 values in order, in the
machine's byte order (the socket never leaves the machine), base64-encoded. A failed request gets
`{"error": "..."}`; one without the right token gets only that, and its connection closed.

>>> RemoteEmbedder(socket_path(index, "auto"), "auto").embed(["retry the upload"])  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import sys
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tether.embed import Vector
from tether.embed.providers._common import EmbedderError
from tether.fs import file_lock, make_private_dir
from tether.transport import choose, connect, endpoint, is_private, suffix
from tether.transport import runtime_dir as _runtime_dir

# A hook asks once per prompt; a warm MiniLM answers a query in 5-20 ms, so 300 ms means "not there".
DEFAULT_TIMEOUT = 0.3
# A hook may embed what it indexes, but never a batch that holds the model (and every other session's
# queries) for seconds: larger batches are left to the next CLI command.
MAX_TEXTS = 32
# After a failed model load, hooks wait this long before starting another server (a missing model would
# otherwise cost a seconds-long process on every prompt).
RETRY_AFTER_FAILURE_SECONDS = 600
_MAX_REPLY_BYTES = 64 * 1024 * 1024


def transport(environ: Mapping[str, str] | None = None) -> str | None:
    """How the warm process is reached (`tether.transport`): `unix` or `tcp`, as `TETHER_TRANSPORT` names,
    else the platform's default (`tcp` on Windows); None when the one named is not there (or unknown)."""
    return choose(os.environ if environ is None else environ)


def supported(environ: Mapping[str, str] | None = None) -> bool:
    """A transport is there (otherwise hooks go without a model): Unix sockets, or loopback TCP."""
    return transport(environ) is not None


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user directory for sockets (`tether.transport.runtime_dir`), the resident process's too."""
    return Path(_runtime_dir(os.environ if environ is None else environ))


def check_private(directory: Path) -> None:
    """Raise EmbedderError unless `directory` is a real directory of this user that no one else can enter."""
    if is_private(str(directory)):
        return
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        raise EmbedderError(f"no embedding server: {directory} does not exist") from None
    raise EmbedderError(
        f"{directory} is not a private directory of this user (owner uid {info.st_uid}, mode "
        f"{stat.S_IMODE(info.st_mode):o}): another user could serve vectors through it; remove it"
    )


def private_dir(directory: Path) -> Path:
    """Create `directory` with mode 0700 (or tighten it, if it is ours) and check it. Returns it."""
    check_private(make_private_dir(directory))
    return directory


def socket_path(
    index: Path, spec: str, directory: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The socket of the server for this index and embedder spec: one model load per project and embedder.
    Over TCP, its endpoint file (`.tcp`: address, port, token) in the same place.

    Named by a hash: a repository path can be longer than a socket path may be.
    """
    key = hashlib.sha256(f"{index}\0{spec}".encode()).hexdigest()[:16]
    kind = transport(environ) or "unix"
    return (directory or runtime_dir(environ)) / f"emb-{key}{suffix(kind)}"


def lock_path(socket: Path) -> Path:
    """Held by the live server for its whole life: free means no server (its socket file is stale).
    One whichever the transport, so a `unix` and a `tcp` server never serve one project and model at once."""
    return socket.with_suffix(".lock")


def failure_path(socket: Path) -> Path:
    """Written by a server whose model failed to load (the error inside); removed by one that loaded."""
    return socket.with_suffix(".failed")


class RemoteEmbedder:
    """An `Embedder` whose model runs in the warm process at `path`; every failure is an EmbedderError.

    `timeout` bounds each request from connect to the last byte of the reply. A reply from a server of
    another spec, or of another id than `expected_id`, is refused: vectors of two spaces never mix.
    Without `expected_id`, `id` is what the server reports (asked once).

    >>> RemoteEmbedder(path, "auto", timeout=0.3).embed(["retry the upload"])  # doctest: +SKIP
    """

    def __init__(
        self,
        path: Path,
        spec: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        expected_id: str | None = None,
        max_texts: int = MAX_TEXTS,
    ) -> None:
        self.path = path
        self.spec = spec
        self.timeout = timeout
        self.max_texts = max_texts
        self._expected = expected_id
        self._id = expected_id
        self._dimension = 0

    @property
    def id(self) -> str:
        if self._id is None:
            self.ping()
        assert self._id is not None
        return self._id

    @property
    def dimension(self) -> int:
        if not self._dimension:
            self.ping()
        if not self._dimension:
            raise EmbedderError(f"the embedding server at {self.path} is still loading its model")
        return self._dimension

    def ping(self, *, op: str = "ping") -> dict[str, Any]:
        """The server's state (`ready`, `id`, `dim`, `pid`...). `op="status"` does not count as use."""
        return self._ask({"op": op})

    def ready(self) -> bool:
        """Whether a server answers with its model loaded (False for none, a slow one, or a wrong one)."""
        try:
            return bool(self.ping().get("ready"))
        except EmbedderError:
            return False

    def stop(self) -> dict[str, Any]:
        return self._ask({"op": "stop"})

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        if len(texts) > self.max_texts:
            raise EmbedderError(
                f"{len(texts)} texts is more than a hook embeds through the server ({self.max_texts}); "
                "the next tether command embeds them"
            )
        reply = self._ask({"op": "embed", "texts": list(texts)})
        values = array("f")
        values.frombytes(base64.b64decode(reply.get("vectors", "")))
        dim = self._dimension
        if not dim or len(values) != dim * len(texts):
            raise EmbedderError(
                f"the embedding server at {self.path} answered {len(values)} values for {len(texts)} "
                f"texts of dimension {dim}"
            )
        return [values[i * dim : (i + 1) * dim].tolist() for i in range(len(texts))]

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        check_private(self.path.parent)
        deadline = time.monotonic() + self.timeout
        data = bytearray()
        conn = None
        try:
            address, token = endpoint(str(self.path))
            if token:
                request = {**request, "token": token}
            while conn is None:
                try:
                    conn = connect(address, self.timeout)
                except (
                    BlockingIOError
                ):  # the server's backlog is full for a moment: wait, within the deadline
                    if time.monotonic() + 0.005 >= deadline:
                        raise TimeoutError from None
                    time.sleep(0.005)
            conn.sendall(json.dumps(request).encode() + b"\n")
            while not data.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                conn.settimeout(remaining)
                chunk = conn.recv(1 << 20)
                if not chunk:
                    raise EmbedderError(f"the embedding server at {self.path} closed the connection")
                data += chunk
                if len(data) > _MAX_REPLY_BYTES:
                    raise EmbedderError(f"the embedding server at {self.path} sent an oversized reply")
        except (FileNotFoundError, ConnectionRefusedError):
            raise EmbedderError(
                f"no embedding server at {self.path}: session start starts one, or `tether embedder serve`"
            ) from None
        except TimeoutError:
            raise EmbedderError(
                f"the embedding server at {self.path} did not answer within {self.timeout * 1000:.0f} ms"
            ) from None
        except OSError as exc:
            raise EmbedderError(f"cannot talk to the embedding server at {self.path}: {exc}") from None
        finally:
            if conn is not None:
                conn.close()
        return self._check(json.loads(data))

    def _check(self, reply: Any) -> dict[str, Any]:
        if not isinstance(reply, dict):
            raise EmbedderError(
                f"the embedding server at {self.path} sent {type(reply).__name__}, not an object"
            )
        if "spec" not in reply and "error" in reply:  # refused before it said who it is (a wrong token)
            raise EmbedderError(f"the embedding server at {self.path} refused the request: {reply['error']}")
        if reply.get("spec") != self.spec:
            raise EmbedderError(
                f"the embedding server at {self.path} serves {reply.get('spec')!r}, not {self.spec!r}"
            )
        if self._expected is not None and reply.get("id") != self._expected:
            raise EmbedderError(
                f"the embedding server at {self.path} embeds with {reply.get('id')!r}, not "
                f"{self._expected!r}: refusing to mix vector spaces"
            )
        if "error" in reply:
            raise EmbedderError(f"the embedding server at {self.path}: {reply['error']}")
        self._id = str(reply["id"])
        self._dimension = int(reply.get("dim") or 0)
        return reply


class FailOpenQueries:
    """A `RemoteEmbedder` as recall sees it in a hook: a query that fails (the server died or answered too
    late) is logged and embedded as a zero vector, which has no direction and matches nothing, so recall
    goes on without the semantic channel. Never for stored vectors: those are embedded later instead."""

    def __init__(self, remote: RemoteEmbedder, log: Callable[[str], None]) -> None:
        self._remote = remote
        self._log = log

    @property
    def id(self) -> str:
        return self._remote.id

    @property
    def dimension(self) -> int:
        return self._remote.dimension

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        try:
            return self._remote.embed(texts)
        except EmbedderError as exc:
            self._log(f"semantic channel skipped: {exc}")
            return [[0.0] * self._remote.dimension for _ in texts]


def start_server(
    index: Path, spec: str, *, cwd: Path, log: Path, environ: Mapping[str, str] | None = None
) -> bool:
    """Start the warm process for `index` and `spec` in the background, unless one is running or loading.

    Returns at once (the model loads in the server, seconds later); True when a process was started.
    Two racing callers may both start one: the second finds the lock held and exits. After a failed load,
    nothing is started for `RETRY_AFTER_FAILURE_SECONDS` (`tether embedder serve` shows the error).
    """
    if not supported(environ):
        return False
    directory = private_dir(runtime_dir(environ))
    path = socket_path(index, spec, directory, environ)
    try:
        if time.time() - failure_path(path).stat().st_mtime < RETRY_AFTER_FAILURE_SECONDS:
            return False
    except FileNotFoundError:
        pass
    with file_lock(lock_path(path), wait=False) as free:
        if not free:
            return False
    from tether.detach import spawn_detached

    spawn_detached([sys.executable, "-m", "tether", "embedder", "serve"], log, cwd=cwd)
    return True
