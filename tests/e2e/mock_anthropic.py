"""A scripted stand-in for the Anthropic Messages API, served on loopback for the real Claude Code CLI.

The agent under test is real; only the model is scripted. Each ``POST /v1/messages`` is answered with the
next assistant turn of the script (text and ``tool_use`` blocks), as the full streaming SSE sequence when the
request asks for ``stream: true`` and as one JSON message otherwise. Every request is logged so a test can
assert on what the agent sent to the model (hook context, tool results, tool lists).

    with MockAnthropic([[tool_use("Read", {"file_path": path})], [text("done")]]) as mock:
        ...  # run claude with ANTHROPIC_BASE_URL=mock.url
        assert tool_results(mock.message_bodies[1])
"""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Block = dict[str, Any]
Turn = list[Block]
# A script is a list of turns replayed in order, or a function choosing the turn from the request body;
# returning None (or running out of turns) answers with the final text.
ScriptFn = Callable[[dict[str, Any]], "Turn | None"]
Script = Sequence[Turn] | ScriptFn

FINAL_TEXT = "All done."


def text(value: str) -> Block:
    """A text block for a scripted assistant turn: ``[text("Looking at it.")]``."""
    return {"type": "text", "text": value}


def tool_use(name: str, tool_input: dict[str, Any], tool_id: str | None = None) -> Block:
    """A tool_use block for a scripted assistant turn: ``[tool_use("Read", {"file_path": "/r/a.py"})]``."""
    return {
        "type": "tool_use",
        "id": tool_id or f"toolu_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": tool_input,
    }


@dataclass(frozen=True)
class LoggedRequest:
    """One HTTP request as received: method, path (with query), headers and the parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int


# ---------------------------------------------------------------- helpers to read what the agent sent


def content_blocks(message: dict[str, Any]) -> list[Block]:
    """A message's content as a list of blocks (a plain string becomes one text block)."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def block_text(block: Block) -> str:
    """The text carried by a text or tool_result block (tool_result content may be a string or blocks)."""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(part) for part in content if isinstance(part, dict))
    return ""


def message_text(message: dict[str, Any]) -> str:
    """All text of one message, tool results included, joined by newlines."""
    return "\n".join(block_text(block) for block in content_blocks(message))


def tool_results(body: dict[str, Any]) -> list[Block]:
    """Every tool_result block in a request's messages, oldest first."""
    return [
        block
        for message in body.get("messages", [])
        for block in content_blocks(message)
        if block.get("type") == "tool_result"
    ]


def tool_result_for(body: dict[str, Any], tool_id: str) -> Block | None:
    """The tool_result answering the tool_use with this id, if the request carries it."""
    return next((block for block in tool_results(body) if block.get("tool_use_id") == tool_id), None)


def system_messages(body: dict[str, Any]) -> list[str]:
    """Texts of the ``role: "system"`` entries Claude Code puts in ``messages`` (hook context lands there)."""
    return [message_text(m) for m in body.get("messages", []) if m.get("role") == "system"]


def tool_names(body: dict[str, Any]) -> list[str]:
    """Names of the tools offered to the model in a request."""
    return [str(tool.get("name")) for tool in body.get("tools", []) if isinstance(tool, dict)]


def message_after_tool_result(body: dict[str, Any], tool_id: str) -> dict[str, Any] | None:
    """The message that follows the one carrying the tool_result for ``tool_id``, or None."""
    messages = body.get("messages", [])
    for index, message in enumerate(messages):
        if any(
            block.get("type") == "tool_result" and block.get("tool_use_id") == tool_id
            for block in content_blocks(message)
        ):
            return messages[index + 1] if index + 1 < len(messages) else None
    return None


# ---------------------------------------------------------------- the server


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _estimate_tokens(body: Any) -> int:
    # Roughly 4 characters a token: enough for the CLI's context bookkeeping, which only needs a number.
    return max(1, len(json.dumps(body)) // 4)


class MockAnthropic:
    """Serve a scripted model on ``http://127.0.0.1:<port>``; use as a context manager or start()/stop()."""

    def __init__(self, script: Script, *, final_text: str = FINAL_TEXT) -> None:
        self._script = script
        self._final_text = final_text
        self._turns: Iterator[Turn] | None = None if callable(script) else iter(list(script))
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._message_ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    # lifecycle

    def start(self) -> MockAnthropic:
        server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="mock-anthropic", daemon=True)
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

    def __enter__(self) -> MockAnthropic:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL for ANTHROPIC_BASE_URL (no trailing slash, no /v1)."""
        if self._server is None:
            raise RuntimeError("MockAnthropic is not started; call start() or use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # what was received

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request received, in arrival order (a copy)."""
        with self._lock:
            return list(self._log)

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/messages requests (model turns), in arrival order."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST" and r.path.split("?")[0] == "/v1/messages" and isinstance(r.body, dict)
        ]

    # answering

    def _record(self, request: LoggedRequest) -> None:
        with self._lock:
            self._log.append(request)

    def next_turn(self, body: dict[str, Any]) -> Turn:
        """The assistant turn answering this request: the script's next one, else the final text."""
        with self._lock:
            if self._turns is None:
                assert callable(self._script)
                turn = self._script(body)
            else:
                turn = next(self._turns, None)
        if not turn:
            return [text(self._final_text)]
        return [dict(block) for block in turn]

    def message(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in turn) else "end_turn"
        return {
            "id": f"msg_mock{next(self._message_ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-mock"),
            "content": turn,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": _estimate_tokens(body.get("messages", [])),
                "output_tokens": _estimate_tokens(turn),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def sse(self, message: dict[str, Any]) -> bytes:
        """The full Messages API event stream for one assistant message."""
        start = dict(message, content=[], stop_reason=None)
        start["usage"] = dict(message["usage"], output_tokens=1)
        events = [_sse("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening: Block = {"type": "text", "text": ""}
                delta: Block = {"type": "text_delta", "text": block["text"]}
            elif block["type"] == "tool_use":
                opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                raise ValueError(f"scripted block type {block['type']!r} is not text or tool_use")
            events.append(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opening},
                )
            )
            events.append(_sse("ping", {"type": "ping"}))
            events.append(
                _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
            )
        )
        events.append(_sse("message_stop", {"type": "message_stop"}))
        return b"".join(events)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when the agent opens several at once.
    request_queue_size = 64


def _handler_for(mock: MockAnthropic) -> type[BaseHTTPRequestHandler]:
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

        def _respond(self, body: Any) -> tuple[int, bytes, str]:
            route = self.path.split("?")[0].rstrip("/")
            if self.command == "POST" and route == "/v1/messages" and isinstance(body, dict):
                message = mock.message(body, mock.next_turn(body))
                if body.get("stream"):
                    return 200, mock.sse(message), "text/event-stream"
                return 200, json.dumps(message).encode(), "application/json"
            if self.command == "POST" and route == "/v1/messages/count_tokens":
                return 200, json.dumps({"input_tokens": _estimate_tokens(body)}).encode(), "application/json"
            error = {"type": "not_found_error", "message": f"mock: no route {self.command} {route}"}
            return 404, json.dumps({"type": "error", "error": error}).encode(), "application/json"

        def _handle(self) -> None:
            body = self._body() if self.command == "POST" else None
            try:
                status, payload, content_type = self._respond(body)
            except Exception as exc:
                # A script bug: answer 400, which the agent does not retry, and keep the error for the test.
                mock.errors.append(f"{type(exc).__name__}: {exc}")
                error = {"type": "invalid_request_error", "message": f"mock script failed: {exc}"}
                status, content_type = 400, "application/json"
                payload = json.dumps({"type": "error", "error": error}).encode()
            # Logged before answering, so whoever got the answer also sees the request in the log.
            mock._record(LoggedRequest(self.command, self.path, dict(self.headers), body, status))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", f"req_mock_{uuid.uuid4().hex[:12]}")
            if content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = _handle

    return Handler
