"""The warm embedding process: loads the configured model once and answers `tether.embed.warm.client` requests.

One process per project and embedder spec, on a socket in a private per-user directory
(`tether.embed.warm.client.socket_path`), or (`transport="tcp"`: Windows) on a port of 127.0.0.1 whose every
request must carry the token the process wrote, with the port, to its endpoint file there (`tether.transport`). It holds a lock file for its whole life, so a second server for the
same socket exits at once and a socket file whose lock is free belongs to a dead server and is replaced.
The socket is bound before the model loads, so clients get a quick "still loading" instead of a timeout.
Model calls are serialized (one lock); clients are served in threads. It exits by itself after
`idle_seconds` without a request, when the project's index is gone, when its socket file is removed or
taken over, or on a `stop` request.

>>> serve(Path(".tether/index.db"), "auto", idle_seconds=1200)  # doctest: +SKIP
'idle'
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socketserver
import threading
import time
from array import array
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tether.embed import Embedder, HashedEmbedder
from tether.embed.policy import in_process
from tether.embed.static import StaticEmbedder
from tether.embed.warm.client import (
    failure_path,
    lock_path,
    private_dir,
    runtime_dir,
    socket_path,
    transport,
)
from tether.errors import ConfigError
from tether.fs import file_lock
from tether.transport import LOOPBACK, authorized, listen

# More than a hook ever sends (`embed_client.MAX_TEXTS`), so the CLI could share the server one day.
MAX_TEXTS = 256
_MAX_REQUEST_BYTES = 8 * 1024 * 1024
# How often the lifecycle checks run: often enough that a stop or a removed index is noticed quickly.
_TICK_SECONDS = 1.0


class _Handler(socketserver.StreamRequestHandler):
    server: EmbedServer

    def handle(self) -> None:
        while True:
            line = self.rfile.readline(_MAX_REQUEST_BYTES + 1)
            if not line:
                return
            if len(line) > _MAX_REQUEST_BYTES:
                self._send({"error": f"request over {_MAX_REQUEST_BYTES} bytes"})
                return
            try:
                request = json.loads(line)
            except ValueError as exc:
                self._send({"error": f"request is not JSON: {exc}"})
                return
            given = request.pop("token", None) if isinstance(request, dict) else None
            if not authorized(self.server.token, given):
                # Another user on this machine, or a stale token: no answer, not even what it serves.
                self.server.refused += 1
                self._send({"error": "not authorized: the token of the endpoint file is needed"}, bare=True)
                return
            self._send(self.server.answer(request))

    def _send(self, reply: dict[str, Any], *, bare: bool = False) -> None:
        message = reply if bare else {**self.server.identity(), **reply}
        with contextlib.suppress(OSError):  # the client gave up (its timeout): nothing to do
            self.wfile.write(json.dumps(message).encode() + b"\n")


class EmbedServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The socket server and the model behind it; `run` drives its life. Over either transport: the
    listening socket is `tether.transport.listen`'s (a TCPServer only accepts on it)."""

    daemon_threads = True
    # socketserver's default backlog is 5: nine sessions' hooks at once (and a busy machine that lets the
    # accept loop fall behind) overflow it, and a Unix socket then refuses connects with EAGAIN.
    request_queue_size = 128

    def __init__(
        self,
        path: Path,
        spec: str,
        embedder: Embedder,
        index: Path,
        idle_seconds: float,
        *,
        transport: str = "unix",
    ) -> None:
        super().__init__((LOOPBACK, 0), _Handler, bind_and_activate=False)
        self.socket.close()  # the unbound one TCPServer made: `listen` binds the transport's own
        self.socket, self.token = listen(str(path), transport, backlog=self.request_queue_size)
        self.server_address = self.socket.getsockname()
        self.transport = transport
        self.refused = 0
        self.path = path
        self.spec = spec
        self.embedder = embedder
        self.embedder_id = embedder.id  # known before the model loads (the providers compute it)
        self.index = index
        self.idle_seconds = idle_seconds
        self.dimension = 0  # set once the model answered
        self.served = 0
        self.last_used = time.monotonic()
        self.stopping = threading.Event()
        self._model_lock = threading.Lock()
        self._inode = os.stat(path).st_ino
        self._had_index = index.exists()

    def identity(self) -> dict[str, Any]:
        return {"spec": self.spec, "id": self.embedder_id, "dim": self.dimension, "ready": self.dimension > 0}

    def answer(self, request: Any) -> dict[str, Any]:
        op = request.get("op") if isinstance(request, dict) else None
        if op != "status":
            self.last_used = time.monotonic()
        if op in ("ping", "status"):
            return {
                "pid": os.getpid(),
                "index": str(self.index),
                "served": self.served,
                "refused": self.refused,
                "transport": self.transport,
                "idle_seconds": self.idle_seconds,
                "idle_for": round(time.monotonic() - self.last_used, 1),
            }
        if op == "stop":
            self.stopping.set()
            return {"stopping": True, "pid": os.getpid()}
        if op != "embed":
            return {"error": f"unknown op {op!r}: ping, status, embed or stop"}
        texts = request.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return {"error": "embed needs 'texts', a list of strings"}
        if len(texts) > MAX_TEXTS:
            return {"error": f"{len(texts)} texts in one request; at most {MAX_TEXTS}"}
        if not self.dimension:
            return {"error": "still loading the model"}
        try:
            with self._model_lock:
                vectors = self.embedder.embed(texts)
        except Exception as exc:  # the model failed on this input: say so, keep serving
            return {"error": f"the model failed: {exc}"}
        packed = array("f")
        for vector in vectors:
            packed.extend(vector)
        self.served += 1
        return {"vectors": base64.b64encode(packed.tobytes()).decode("ascii")}

    def load(self) -> None:
        """Load the model (seconds) and make the server ready; the model's errors propagate."""
        with self._model_lock:
            [vector] = self.embedder.embed(["tether warm-up"])
        self.dimension = len(vector)
        self.last_used = time.monotonic()

    def why_stop(self) -> str | None:
        """Why the server should exit now, or None to keep serving."""
        if self.stopping.is_set():
            return "stopped"
        # An index not created yet (no tether command ran) is awaited; one that was there and went is not.
        if (self._had_index and not self.index.exists()) or not self.index.parent.is_dir():
            return "index gone"
        self._had_index = self._had_index or self.index.exists()
        try:
            if os.stat(self.path).st_ino != self._inode:
                return "socket taken over"
        except FileNotFoundError:
            return "socket removed"
        if time.monotonic() - self.last_used > self.idle_seconds:
            return "idle"
        return None

    def run(self, log: Callable[[str], None]) -> str:
        """Serve in threads, load the model, then watch the lifecycle. Returns why it ended."""
        thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        thread.start()
        try:
            started = time.monotonic()
            failed = failure_path(self.path)
            try:
                self.load()
            except Exception as exc:
                log(f"could not load {self.spec!r}: {exc}")
                failed.write_text(f"{self.spec}: {exc}\n", encoding="utf-8")
                return "load failed"
            failed.unlink(missing_ok=True)
            log(f"ready: {self.embedder_id} ({self.dimension} dims) in {time.monotonic() - started:.1f}s")
            tick = min(_TICK_SECONDS, max(0.05, self.idle_seconds / 4))
            while True:
                reason = self.why_stop()
                if reason is not None:
                    return reason
                self.stopping.wait(tick)
        finally:
            self.shutdown()
            self.server_close()
            try:
                if os.stat(self.path).st_ino == self._inode:
                    self.path.unlink()
            except FileNotFoundError:
                pass


def serve(
    index: Path,
    spec: str,
    *,
    idle_seconds: float,
    environ: Mapping[str, str] | None = None,
    log: Callable[[str], None] = print,
) -> str:
    """Serve `spec`'s model for the project whose index is `index` until idle, stopped or orphaned.

    Returns why it ended: `already running` (another server holds the socket), `idle`, `index gone`,
    `stopped`, `socket removed`, `socket taken over` or `load failed`. Raises ConfigError for a spec that
    needs no server or names no usable embedder. SIGTERM ends it cleanly (main thread only).
    """
    from tether.embed.providers import make_embedder

    kind = transport(environ)
    if kind is None:
        raise ConfigError(
            "the embedding server has no transport here: TETHER_TRANSPORT is not `unix` or `tcp` (or is "
            "`unix` where there are no Unix sockets): unset it, or set it to `tcp`"
        )
    if in_process(spec):
        raise ConfigError(
            f"the embedder {spec.strip() or 'hashed'!r} needs no server: it is computed in every process"
        )
    directory = private_dir(runtime_dir(environ))
    path = socket_path(index, spec, directory, environ)
    try:
        # One thread per model call: the server answers one short query at a time, and a pool of a thread
        # per core fights the hook processes for the CPU (`tether embedder serve` sets torch's the same way).
        embedder = make_embedder(spec, threads=1)
        if isinstance(embedder, HashedEmbedder | StaticEmbedder):
            raise ConfigError(f"embedder {spec!r} resolves to {embedder.id} here, which needs no server")
    except ConfigError as exc:
        failure_path(path).write_text(f"{spec}: {exc}\n", encoding="utf-8")  # hooks back off
        raise
    with file_lock(lock_path(path), wait=False) as held:
        if not held:
            return "already running"
        # The lock was free, so whatever socket file is there belongs to a dead server.
        path.unlink(missing_ok=True)
        server = EmbedServer(path, spec, embedder, index, idle_seconds, transport=kind)
        where = f"127.0.0.1 (endpoint {path})" if kind == "tcp" else str(path)
        log(f"serving {spec!r} for {index} on {where} (pid {os.getpid()}, idle exit {idle_seconds:g}s)")
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda signum, frame: server.stopping.set())
        reason = server.run(log)
        log(f"exiting: {reason}")
        return reason
