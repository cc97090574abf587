"""A scripted stand-in for the OpenAI Responses API, served on loopback for the real Codex CLI.

Codex (``codex exec``) with a custom ``model_provider`` whose ``base_url`` is this server sends only
``POST /v1/responses`` with ``stream: true``. Each request is answered with the next scripted turn as the
Responses SSE sequence (``response.created``, ``response.output_item.added``, ``response.output_text.delta``,
``response.output_item.done``, ``response.completed``); every request is logged for assertions.

    with MockOpenAI([[function_call("exec_command", {"cmd": "cat a.py"})], [say("done")]]) as mock:
        ...  # run codex with model_providers.mock.base_url = f"{mock.url}/v1"
"""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

from .scripted_server import FINAL_TEXT, Answer, Block, Script, ScriptedServer, Turn, estimate_tokens, sse


def say(value: str) -> Block:
    """An assistant message item for a scripted turn: ``[say("Looking at it.")]``."""
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": value}]}


def function_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> Block:
    """A function-call item (``exec_command``, MCP tools ``mcp__srv__tool``...) for a scripted turn."""
    return {
        "type": "function_call",
        "call_id": call_id or f"call_{uuid.uuid4().hex[:24]}",
        "name": name,
        "arguments": json.dumps(arguments),
    }


def custom_call(name: str, tool_input: str, call_id: str | None = None) -> Block:
    """A freeform tool call, e.g. ``custom_call("apply_patch", "*** Begin Patch ...")``."""
    return {
        "type": "custom_tool_call",
        "call_id": call_id or f"call_{uuid.uuid4().hex[:24]}",
        "name": name,
        "input": tool_input,
    }


def item_text(item: dict[str, Any]) -> str:
    """Text of one input item: message content parts, or a tool call's output."""
    if item.get("type") in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output)
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", "")) for part in content or [] if isinstance(part, dict) and "text" in part
    )


def input_texts(body: dict[str, Any], role: str | None = None) -> list[str]:
    """Texts of a request's input items, optionally only messages of one role (``developer``, ``user``)."""
    return [
        item_text(item)
        for item in body.get("input", [])
        if role is None or (item.get("type") == "message" and item.get("role") == role)
    ]


def call_output(body: dict[str, Any], call_id: str) -> str | None:
    """The output the agent sent back for a tool call, if this request carries it."""
    for item in body.get("input", []):
        if item.get("type") in ("function_call_output", "custom_tool_call_output") and (
            item.get("call_id") == call_id
        ):
            return item_text(item)
    return None


class MockOpenAI(ScriptedServer):
    """The Responses API: ``POST /v1/responses`` (streamed), 404 for the rest."""

    name = "mock-openai"

    def __init__(self, script: Script, *, final_text: str = FINAL_TEXT) -> None:
        super().__init__(script, final_text=final_text)
        self._ids = itertools.count(1)

    @property
    def response_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the POST /v1/responses requests (model turns), in arrival order."""
        return self.bodies("POST", "/v1/responses")

    def error_answer(self, status: int, kind: str, message: str) -> Answer:
        return Answer.json(status, {"error": {"type": kind, "message": message, "code": None}})

    def respond(self, method: str, route: str, body: Any) -> Answer:
        if method == "POST" and route == "/v1/responses" and isinstance(body, dict):
            turn = self.next_turn(body) or [say(self.final_text)]
            response = self.response(body, turn)
            if body.get("stream", False):
                return Answer(200, self.sse(response), "text/event-stream")
            return Answer.json(200, response)
        return self.error_answer(404, "not_found", f"mock: no route {method} {route}")

    def response(self, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        output = []
        for item in turn:
            prefix = "msg" if item["type"] == "message" else "fc"
            output.append({"id": f"{prefix}_mock{next(self._ids):06d}", "status": "completed", **item})
        input_tokens, output_tokens = estimate_tokens(body.get("input", [])), estimate_tokens(turn)
        return {
            "id": f"resp_mock{next(self._ids):06d}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": body.get("model", "mock-model"),
            "output": output,
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
        }

    def sse(self, response: dict[str, Any]) -> bytes:
        """The Responses event stream for one response."""
        sequence = itertools.count()

        def event(kind: str, **data: Any) -> bytes:
            return sse(kind, {"type": kind, "sequence_number": next(sequence), **data})

        pending = dict(response, status="in_progress", output=[], usage=None)
        events = [
            event("response.created", response=pending),
            event("response.in_progress", response=pending),
        ]
        for index, item in enumerate(response["output"]):
            if item["type"] == "message":
                opened = dict(item, status="in_progress", content=[])
                events.append(event("response.output_item.added", output_index=index, item=opened))
                for part_index, part in enumerate(item["content"]):
                    where = {"item_id": item["id"], "output_index": index, "content_index": part_index}
                    events.append(
                        event(
                            "response.content_part.added", **where, part=dict(part, text="", annotations=[])
                        )
                    )
                    events.append(event("response.output_text.delta", **where, delta=part["text"]))
                    events.append(event("response.output_text.done", **where, text=part["text"]))
                    events.append(
                        event("response.content_part.done", **where, part=dict(part, annotations=[]))
                    )
            elif item["type"] == "function_call":
                opened = dict(item, status="in_progress", arguments="")
                events.append(event("response.output_item.added", output_index=index, item=opened))
                where = {"item_id": item["id"], "output_index": index}
                events.append(
                    event("response.function_call_arguments.delta", **where, delta=item["arguments"])
                )
                events.append(
                    event("response.function_call_arguments.done", **where, arguments=item["arguments"])
                )
            elif item["type"] == "custom_tool_call":
                opened = dict(item, status="in_progress", input="")
                events.append(event("response.output_item.added", output_index=index, item=opened))
                where = {"item_id": item["id"], "output_index": index}
                events.append(event("response.custom_tool_call_input.delta", **where, delta=item["input"]))
                events.append(event("response.custom_tool_call_input.done", **where, input=item["input"]))
            else:  # other items (tool_search_call, reasoning...) arrive whole
                events.append(event("response.output_item.added", output_index=index, item=item))
            events.append(event("response.output_item.done", output_index=index, item=item))
        events.append(event("response.completed", response=response))
        return b"".join(events)
