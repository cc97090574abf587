"""A scripted stand-in for the Gemini API, served on loopback for the real Gemini CLI.

Gemini CLI with ``GEMINI_API_KEY`` set and ``GOOGLE_GEMINI_BASE_URL`` pointing here sends
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` for every model turn (and
``:generateContent`` / ``:countTokens`` for side questions). Each turn is answered with the next scripted
one as one server-sent ``GenerateContentResponse``; every request is logged for assertions.

    with MockGemini([[function_call("read_file", {"file_path": "a.py"})], [reply("done")]]) as mock:
        ...  # run gemini with GOOGLE_GEMINI_BASE_URL=mock.url
"""

from __future__ import annotations

import json
import re
from typing import Any

from .scripted_server import Answer, Block, ScriptedServer, Turn, estimate_tokens

# /v1beta/models/gemini-2.5-pro:streamGenerateContent (the SDK's default API version is v1beta)
ROUTE = re.compile(r"^/(?P<version>v1[a-z0-9]*)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
STREAM, GENERATE, COUNT = "streamGenerateContent", "generateContent", "countTokens"


def reply(value: str) -> Block:
    """A text part for a scripted turn: ``[reply("Looking at it.")]``."""
    return {"text": value}


def function_call(name: str, args: dict[str, Any]) -> Block:
    """A function-call part (``read_file``, ``replace``, MCP tools by their bare name...) for a turn."""
    return {"functionCall": {"name": name, "args": args}}


def part_text(part: dict[str, Any]) -> str:
    """Text of one content part: its text, or a function response as JSON."""
    if "text" in part:
        return str(part["text"])
    if "functionResponse" in part:
        return json.dumps(part["functionResponse"])
    return ""


def contents_text(body: dict[str, Any], role: str | None = None) -> str:
    """All the text a request carries in ``contents`` (optionally of one role), parts joined by newlines."""
    return "\n".join(
        part_text(part)
        for content in body.get("contents", [])
        if role is None or content.get("role") == role
        for part in content.get("parts", [])
        if isinstance(part, dict)
    )


def system_text(body: dict[str, Any]) -> str:
    """The request's system instruction as text ("" when none)."""
    instruction = body.get("systemInstruction") or body.get("config", {}).get("systemInstruction") or {}
    if isinstance(instruction, str):
        return instruction
    return "\n".join(part_text(p) for p in instruction.get("parts", []) if isinstance(p, dict))


def function_response(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The last ``functionResponse`` for tool ``name`` this request carries (its ``response`` object)."""
    found = None
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            if isinstance(part, dict) and part.get("functionResponse", {}).get("name") == name:
                found = part["functionResponse"].get("response")
    return found


def tool_names(body: dict[str, Any]) -> list[str]:
    """The function declarations the request offers the model."""
    return [
        str(declaration.get("name"))
        for tool in body.get("tools", [])
        for declaration in tool.get("functionDeclarations", [])
    ]


class MockGemini(ScriptedServer):
    """The Gemini API: turns on ``:streamGenerateContent`` and ``:generateContent``, 404 for the rest.

    Requests that carry no tools are the CLI's side questions (next-speaker checks, routing, summaries):
    they get a short JSON-ish text answer and do not consume a scripted turn.
    """

    name = "mock-gemini"

    @property
    def turn_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the model turns (requests offering tools), in arrival order."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST"
            and isinstance(r.body, dict)
            and (m := ROUTE.match(r.path.split("?")[0]))
            and m["method"] in (STREAM, GENERATE)
            and r.body.get("tools")
        ]

    def error_answer(self, status: int, kind: str, message: str) -> Answer:
        return Answer.json(status, {"error": {"code": status, "message": message, "status": kind.upper()}})

    def respond(self, method: str, route: str, body: Any) -> Answer:
        match = ROUTE.match(route)
        if method != "POST" or match is None or not isinstance(body, dict):
            return self.error_answer(404, "not_found", f"mock: no route {method} {route}")
        if match["method"] == COUNT:
            return Answer.json(200, {"totalTokens": estimate_tokens(body.get("contents", []))})
        if match["method"] not in (STREAM, GENERATE):
            return self.error_answer(404, "not_found", f"mock: no method {match['method']}")
        if body.get("tools"):
            turn = self.next_turn(body) or [reply(self.final_text)]
        else:
            turn = [reply(self.side_answer(body))]
        response = self.response(match["model"], body, turn)
        if match["method"] == STREAM:
            return Answer(200, f"data: {json.dumps(response)}\r\n\r\n".encode(), "text/event-stream")
        return Answer.json(200, response)

    def side_answer(self, body: dict[str, Any]) -> str:
        schema = body.get("generationConfig", {}).get("responseJsonSchema") or body.get(
            "generationConfig", {}
        ).get("responseSchema")
        if schema:
            # The next-speaker check asks whose turn it is: the user's, so the CLI stops.
            return json.dumps({"reasoning": "done", "next_speaker": "user"})
        return self.final_text

    def response(self, model: str, body: dict[str, Any], turn: Turn) -> dict[str, Any]:
        prompt_tokens, output_tokens = estimate_tokens(body.get("contents", [])), estimate_tokens(turn)
        return {
            "candidates": [{"content": {"role": "model", "parts": turn}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens,
            },
            "modelVersion": model,
        }
