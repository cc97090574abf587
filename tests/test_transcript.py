"""`tether.intake.transcript`: reading Claude Code's JSON-lines transcripts incrementally, and the bounded digest."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import append, assistant, text, tool, user
from tether.intake.transcript import Event, build_digest, read_transcript


def test_read_transcript_extracts_prompts_text_and_files(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    append(
        path,
        user("fix it"),
        user("<command-name>/clear</command-name>"),
        user("meta text", isMeta=True),
        assistant({"type": "thinking", "thinking": "hmm", "signature": "x"}, text("Looking.")),
        assistant(tool("Edit", file_path="/repo/src/a.py", old_string="a", new_string="b")),
        assistant(tool("Read", file_path="/repo/src/b.py")),
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "is_error": True, "content": "E: boom"}
                ]
            },
        },
        user("=== Project memory (auto-recalled) ===\n- [abcd1234] something"),
        {"type": "ai-title", "aiTitle": "x"},
        {"type": "brand-new-type", "whatever": 1},
    )
    chunk = read_transcript(path, 0)
    assert [(e.kind, e.text or e.path) for e in chunk.events] == [
        ("user", "fix it"),
        ("assistant", "Looking."),
        ("tool", "/repo/src/a.py"),
        ("tool", "/repo/src/b.py"),
        ("tool_error", "E: boom"),
    ]
    assert chunk.files == ["/repo/src/a.py", "/repo/src/b.py"]
    assert (chunk.session_id, chunk.cwd, chunk.skipped) == ("s1", "/repo", 0)


def test_digest_is_bounded_and_keeps_recent_and_early_prompts() -> None:
    events = [Event("user", "always squash merge, never rebase")]
    for i in range(400):
        events.append(Event("assistant", f"step {i} " + "x" * 100))
        events.append(Event("tool", "", tool="Edit", path=f"/repo/src/m{i % 7}.py"))
    events.append(Event("user", "last question: why does it fail?"))
    digest = build_digest(events, max_chars=4_000, root="/repo")
    assert len(digest) <= 4_000
    assert digest.startswith("Files touched: src/m")
    assert "always squash merge" in digest  # an early prompt survives
    assert "last question" in digest and "step 399" in digest
    assert "step 10 " not in digest and "omitted" in digest


def test_digest_shortens_a_huge_prompt_but_keeps_its_end() -> None:
    digest = build_digest([Event("user", "trace line\n" * 2_000 + "why does this fail?")])
    assert len(digest) < 1_400 and digest.endswith("why does this fail?")


def test_reading_is_incremental_and_stops_before_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    append(path, user("first prompt"))
    first = read_transcript(path, 0)
    assert [e.text for e in first.events] == ["first prompt"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps(user("second prompt")) + "\n" + '{"type": "user", "mess'
        )  # still being written
    second = read_transcript(path, first.end)
    assert [e.text for e in second.events] == ["second prompt"]
    assert second.end < path.stat().st_size  # the partial line is read next time, whole
