"""The scripted Messages API mock, spoken to over real HTTP (no agent needed, so not marked e2e)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

from .mock_anthropic import MockAnthropic, text, tool_results, tool_use
from .scripted_server import FINAL_TEXT, Turn


def post(url: str, body: Any) -> tuple[int, str, str]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def sse_events(payload: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in payload.strip().split("\n\n"):
        name, data = chunk.split("\n")
        assert name.startswith("event: ") and data.startswith("data: ")
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def test_streams_a_scripted_turn_as_the_messages_api_event_sequence() -> None:
    call = tool_use("Read", {"file_path": "/r/a.py"}, tool_id="toolu_1")
    with MockAnthropic([[text("Reading."), call]]) as mock:
        status, content_type, payload = post(
            f"{mock.url}/v1/messages?beta=true", {"model": "m1", "stream": True, "messages": []}
        )
    assert (status, content_type) == (200, "text/event-stream")
    events = [(name, data) for name, data in sse_events(payload) if name != "ping"]
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(data["type"] == name for name, data in events)
    assert events[0][1]["message"]["model"] == "m1" and events[0][1]["message"]["content"] == []
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "Reading."}
    assert events[4][1]["content_block"] == {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
    assert json.loads(events[5][1]["delta"]["partial_json"]) == {"file_path": "/r/a.py"}
    assert events[5][1]["index"] == 1
    assert events[7][1]["delta"]["stop_reason"] == "tool_use"


def test_answers_json_when_not_streaming_then_the_final_text_when_the_script_ends() -> None:
    with MockAnthropic([[text("first")]], final_text="bye") as mock:
        answers = [
            post(f"{mock.url}/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            for _ in range(2)
        ]
        logged = mock.message_bodies
    assert [status for status, _, _ in answers] == [200, 200]
    first, second = (json.loads(body) for _, _, body in answers)
    assert first["content"] == [{"type": "text", "text": "first"}] and first["stop_reason"] == "end_turn"
    assert second["content"] == [{"type": "text", "text": "bye"}]
    assert logged[0]["messages"][0]["content"] == "hi"


def test_count_tokens_404_and_script_errors() -> None:
    def broken(body: dict[str, Any]) -> Turn | None:
        raise KeyError("no such turn")

    with MockAnthropic(broken) as mock:
        tokens = post(f"{mock.url}/v1/messages/count_tokens", {"messages": [{"content": "x" * 400}]})
        missing = post(f"{mock.url}/v1/other", {})
        failed = post(f"{mock.url}/v1/messages", {"messages": []})
        routes = [(r.path, r.status) for r in mock.requests]
    assert tokens[0] == 200 and json.loads(tokens[2])["input_tokens"] > 50
    assert missing[0] == 404 and json.loads(missing[2])["error"]["type"] == "not_found_error"
    assert failed[0] == 400 and mock.errors == ["KeyError: 'no such turn'"]
    assert routes == [("/v1/messages/count_tokens", 200), ("/v1/other", 404), ("/v1/messages", 400)]


def test_a_callable_script_decides_from_the_request_and_logging_is_thread_safe() -> None:
    def model(body: dict[str, Any]) -> Turn | None:
        return None if tool_results(body) else [text(f"turn for {body['n']}")]

    with MockAnthropic(model) as mock:
        threads = [
            threading.Thread(target=post, args=(f"{mock.url}/v1/messages", {"n": n, "messages": []}))
            for n in range(20)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done = post(
            f"{mock.url}/v1/messages",
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
        )
        bodies = mock.message_bodies
    assert sorted(body["n"] for body in bodies[:20]) == list(range(20))
    assert json.loads(done[2])["content"][0]["text"] == FINAL_TEXT
