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
import uuid
from typing import Any

from .scripted_server import (
    FINAL_TEXT,
    Answer,
    Block,
    Script,
    ScriptedServer,
    Turn,
    estimate_tokens,
    sse,
)


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


class MockAnthropic(ScriptedServer):
    """The Messages API: ``POST /v1/messages`` (streaming or not), ``count_tokens``, 404 for the rest."""

    name = "mock-anthropic"

    def __init__(self, script: Script, *, final_text: str = FINAL_TEXT) -> None:
        super().__init__(script, final_text=final_text)
        self._message_ids = itertools.count(1)

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/messages requests (model turns), in arrival order."""
        return self.bodies("POST", "/v1/messages")

    def respond(self, method: str, route: str, body: Any) -> Answer:
        if method == "POST" and route == "/v1/messages" and isinstance(body, dict):
            message = self.message(body, self.next_turn(body) or [text(self.final_text)])
            if body.get("stream"):
                return Answer(200, self.sse(message), "text/event-stream")
            return Answer.json(200, message)
        if method == "POST" and route == "/v1/messages/count_tokens":
            return Answer.json(200, {"input_tokens": estimate_tokens(body)})
        return self.error_answer(404, "not_found_error", f"mock: no route {method} {route}")

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
                "input_tokens": estimate_tokens(body.get("messages", [])),
                "output_tokens": estimate_tokens(turn),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def sse(self, message: dict[str, Any]) -> bytes:
        """The full Messages API event stream for one assistant message."""
        start = dict(message, content=[], stop_reason=None)
        start["usage"] = dict(message["usage"], output_tokens=1)
        events = [sse("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening: Block = {"type": "text", "text": ""}
                delta: Block = {"type": "text_delta", "text": block["text"]}
            elif block["type"] == "tool_use":
                opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                raise ValueError(f"scripted block type {block['type']!r} is not text or tool_use")
            start_event = {"type": "content_block_start", "index": index, "content_block": opening}
            events.append(sse("content_block_start", start_event))
            events.append(sse("ping", {"type": "ping"}))
            delta_event = {"type": "content_block_delta", "index": index, "delta": delta}
            events.append(sse("content_block_delta", delta_event))
            events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        message_delta = {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        }
        events.append(sse("message_delta", message_delta))
        events.append(sse("message_stop", {"type": "message_stop"}))
        return b"".join(events)
