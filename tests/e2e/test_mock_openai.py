"""The scripted Responses API mock, spoken to over real HTTP (no agent needed, so not marked e2e)."""

from __future__ import annotations

import json
from typing import Any

from .mock_openai import MockOpenAI, call_output, function_call, say
from .test_mock_anthropic import post, sse_events


def test_streams_a_scripted_turn_as_responses_events() -> None:
    call = function_call("exec_command", {"cmd": "ls"}, call_id="call_1")
    with MockOpenAI([[say("Looking."), call]]) as mock:
        status, content_type, payload = post(
            f"{mock.url}/v1/responses", {"model": "m", "stream": True, "input": []}
        )
        logged = mock.response_bodies
    assert (status, content_type) == (200, "text/event-stream")
    events = sse_events(payload)
    names = [name for name, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    assert all(data["type"] == name for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    done = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert done[0]["content"] == [{"type": "output_text", "text": "Looking."}]
    assert (done[1]["type"], done[1]["call_id"], json.loads(done[1]["arguments"])) == (
        "function_call",
        "call_1",
        {"cmd": "ls"},
    )
    deltas = [data["delta"] for name, data in events if name.endswith(".delta")]
    assert deltas == ["Looking.", '{"cmd": "ls"}']
    completed: dict[str, Any] = events[-1][1]["response"]
    assert completed["status"] == "completed" and [item["id"] for item in completed["output"]] == [
        item["id"] for item in done
    ]
    assert completed["usage"]["total_tokens"] > 0 and logged == [{"model": "m", "stream": True, "input": []}]


def test_final_text_404_and_reading_tool_outputs() -> None:
    with MockOpenAI([], final_text="bye") as mock:
        status, _, body = post(f"{mock.url}/v1/responses", {"input": []})
        missing = post(f"{mock.url}/v1/models", {})
    assert status == 200 and json.loads(body)["output"][0]["content"][0]["text"] == "bye"
    assert missing[0] == 404 and json.loads(missing[2])["error"]["type"] == "not_found"
    request = {"input": [{"type": "function_call_output", "call_id": "c1", "output": "done"}]}
    assert call_output(request, "c1") == "done" and call_output(request, "c2") is None
