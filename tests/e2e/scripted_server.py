"""The loopback HTTP machinery shared by the scripted model mocks (Anthropic Messages, OpenAI Responses).

A subclass says how to answer a route (``respond``); this base serves it on ``127.0.0.1`` (port 0), replays
the script turn by turn and logs every request, thread-safely, for the test to assert on.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

Block = dict[str, Any]
Turn = list[Block]
# A script is a list of turns replayed in order, or a function choosing the turn from the request body;
# returning None (or running out of turns) answers with the final text.
ScriptFn = Callable[[dict[str, Any]], "Turn | None"]
Script = Sequence[Turn] | ScriptFn

FINAL_TEXT = "All done."


@dataclass(frozen=True)
class LoggedRequest:
    """One HTTP request as received: method, path (with query), headers, the parsed JSON body, our status."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int


@dataclass(frozen=True)
class Answer:
    status: int
    payload: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, data: Any) -> Answer:
        return cls(status, json.dumps(data).encode())


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def estimate_tokens(value: Any) -> int:
    # Roughly 4 characters a token: agents only need a plausible number for their context bookkeeping.
    return max(1, len(json.dumps(value)) // 4)


class ScriptedServer:
    """Serve a scripted model on ``http://127.0.0.1:<port>``; use as a context manager or start()/stop()."""

    name = "scripted-model"

    def __init__(self, script: Script, *, final_text: str = FINAL_TEXT) -> None:
        self._script = script
        self.final_text = final_text
        self._turns: Iterator[Turn] | None = None if callable(script) else iter(list(script))
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    # the protocol, given by subclasses

    def respond(self, method: str, route: str, body: Any) -> Answer:
        """The answer to one request; ``route`` is the path without query string or trailing slash."""
        raise NotImplementedError

    def error_answer(self, status: int, kind: str, message: str) -> Answer:
        return Answer.json(status, {"type": "error", "error": {"type": kind, "message": message}})

    # lifecycle

    def start(self) -> Self:
        server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server = server
        # A short poll interval: shutdown() waits up to one interval, and every run stops a server.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``, no trailing slash."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not started; use start() or a with block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # what was received

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._log)

    def bodies(self, method: str, route: str) -> list[dict[str, Any]]:
        """JSON bodies of the requests to one route (query string ignored), in arrival order."""
        return [
            r.body
            for r in self.requests
            if r.method == method and r.path.split("?")[0] == route and isinstance(r.body, dict)
        ]

    # replaying the script

    def next_turn(self, body: dict[str, Any]) -> Turn | None:
        """The script's next turn for this request, or None when it has no more to say."""
        with self._lock:
            if self._turns is None:
                assert callable(self._script)
                turn = self._script(body)
            else:
                turn = next(self._turns, None)
        return [dict(block) for block in turn] if turn else None

    def _record(self, request: LoggedRequest) -> None:
        with self._lock:
            self._log.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when an agent opens several at once.
    request_queue_size = 64


def _handler_for(mock: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the request log replaces stderr noise
            pass

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _handle(self) -> None:
            body = self._body() if self.command == "POST" else None
            route = self.path.split("?")[0].rstrip("/")
            try:
                answer = mock.respond(self.command, route, body)
            except Exception as exc:
                # A script bug: answer 400, which agents do not retry, and keep the error for the test.
                mock.errors.append(f"{type(exc).__name__}: {exc}")
                answer = mock.error_answer(400, "invalid_request_error", f"mock script failed: {exc}")
            # Logged before answering, so whoever got the answer also sees the request in the log.
            mock._record(LoggedRequest(self.command, self.path, dict(self.headers), body, answer.status))
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.payload)))
            self.send_header("request-id", f"req_mock_{uuid.uuid4().hex[:12]}")
            if answer.content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(answer.payload)

        do_GET = do_POST = do_PUT = do_DELETE = _handle

    return Handler
