"""The Codex CLI harness, proved with hooks and an MCP server that are not tether.

Codex hooks use Claude Code's wire format; their context reaches the model as ``role: "developer"`` input
messages. These tests pin that, the trust step hooks need, and how an MCP tool is called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .conftest import RunCodex, Workspace
from .mock_openai import call_output, function_call, say
from .sample_scripts import MCP_SERVER, context_answer, hook_events, recording_hook


def developer_texts(body: dict[str, Any]) -> list[str]:
    return [
        part["text"]
        for item in body["input"]
        if item.get("type") == "message" and item.get("role") == "developer"
        for part in item["content"]
        if "text" in part
    ]


def index_of(body: dict[str, Any], predicate: Any) -> int:
    return next(i for i, item in enumerate(body["input"]) if predicate(item))


def test_hook_context_reaches_the_model_as_developer_messages(
    workspace: Workspace, run_codex: RunCodex
) -> None:
    workspace.add_codex_hook(
        "SessionStart", recording_hook(workspace, "start.jsonl", context_answer("SessionStart", "START-5e1c"))
    )
    workspace.add_codex_hook(
        "UserPromptSubmit",
        recording_hook(workspace, "prompt.jsonl", context_answer("UserPromptSubmit", "PROMPT-a0f2")),
    )
    workspace.add_codex_hook(
        "PostToolUse",
        recording_hook(workspace, "post.jsonl", context_answer("PostToolUse", "AFTER-CAT-61b0")),
        matcher="Bash",
    )
    cat = function_call("exec_command", {"cmd": "cat README.md"})

    run = run_codex(workspace.repo, workspace.home, "what is this repo?", [[cat], [say("A sample.")]])

    assert run.returncode == 0, run.describe()
    assert run.final_message == "A sample.", run.describe()
    assert len(run.requests) == 2, run.describe()
    first, second = run.requests
    # Plain developer messages with the hook's text, no prefix; the prompt's context right after the prompt.
    assert developer_texts(first)[-2:] == ["START-5e1c", "PROMPT-a0f2"]
    prompt_at = index_of(first, lambda item: "what is this repo?" in json.dumps(item))
    assert first["input"][prompt_at + 1]["content"][0]["text"] == "PROMPT-a0f2"
    assert "PROMPT-a0f2" not in json.dumps(first.get("instructions", ""))
    # The command ran (in the workspace-write sandbox) and its output came back. Unlike Claude Code, the
    # PostToolUse context sits between the call and its output, not after the output.
    output = call_output(second, cat["call_id"])
    assert output is not None and output.endswith("Output:\n# sample\n"), second["input"][-3:]
    output_at = index_of(second, lambda item: item.get("type") == "function_call_output")
    assert second["input"][output_at - 1]["role"] == "developer"
    assert second["input"][output_at - 1]["content"][0]["text"] == "AFTER-CAT-61b0"
    assert second["input"][output_at - 2]["call_id"] == cat["call_id"]

    (prompt,) = hook_events(workspace, "prompt.jsonl")
    assert prompt["hook_event_name"] == "UserPromptSubmit" and prompt["prompt"] == "what is this repo?"
    assert prompt["cwd"] == str(workspace.repo)
    (post,) = hook_events(workspace, "post.jsonl")
    assert post["tool_name"] == "Bash" and post["tool_input"] == {"command": "cat README.md"}
    assert post["tool_use_id"] == cat["call_id"] and post["tool_response"] == "# sample\n"


def test_untrusted_hooks_are_skipped_silently(workspace: Workspace, run_codex: RunCodex) -> None:
    workspace.add_codex_hook(
        "UserPromptSubmit",
        recording_hook(workspace, "prompt.jsonl", context_answer("UserPromptSubmit", "PROMPT-77d1")),
    )

    run = run_codex(workspace.repo, workspace.home, "hi", [[say("Hello.")]], trust_hooks=False)

    assert run.returncode == 0, run.describe()
    assert "PROMPT-77d1" not in json.dumps(run.requests)
    assert hook_events(workspace, "prompt.jsonl") == []
    # No warning either: making the user trust them is the installer's job.
    assert [item for item in run.items if item.get("type") == "error"] == [], run.describe()


def test_mcp_tool_call_result_reaches_the_model(workspace: Workspace, run_codex: RunCodex) -> None:
    server = workspace.write("tools/notes_server.py", MCP_SERVER)
    workspace.add_codex_mcp_server("notes", sys.executable, [str(server)])
    # MCP tools are deferred behind tool_search; the model calls one by namespace and bare name.
    call = function_call("lookup", {"topic": "db"})
    call["namespace"] = "mcp__notes"

    script = [[call], [say("Noted.")]]

    # No hooks to trust: skipping that step saves an app-server start (which also starts the MCP server).
    run = run_codex(workspace.repo, workspace.home, "how do I deploy?", script, trust_hooks=False)

    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 2, run.describe()
    assert "tool_search" in [tool.get("type") for tool in run.requests[0]["tools"]]
    assert "lookup" not in json.dumps(run.requests[0]["tools"])
    output = call_output(run.requests[1], call["call_id"])
    assert output is not None and output.endswith('{"result":"NOTE-db-3d8a: always run migrations first"}')
    assert Path(f"{server}.calls").read_text() == "db\n"
    (mcp_item,) = [item for item in run.items if item.get("type") == "mcp_tool_call"]
    assert (mcp_item["server"], mcp_item["tool"], mcp_item["status"]) == ("notes", "lookup", "completed")
