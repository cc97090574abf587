"""The e2e harness itself, proved with hooks and an MCP server that are not tether.

Each test writes tiny hook scripts or an MCP server into a throwaway repo, runs the real Claude Code against a
scripted model, and checks what the agent sent to the model and what is on disk. These pin the facts in
claude-code-e2e.md that tether's own scenarios rely on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import RunClaude, Workspace, python_command
from .mock_anthropic import (
    content_blocks,
    message_after_tool_result,
    message_text,
    system_messages,
    text,
    tool_names,
    tool_result_for,
    tool_results,
    tool_use,
)
from .sample_scripts import MCP_SERVER, context_answer, hook_events, recording_hook
from .scripted_server import Turn

pytestmark = pytest.mark.e2e


def test_prompt_hook_context_reaches_the_first_request(workspace: Workspace, run_claude: RunClaude) -> None:
    workspace.add_hook(
        "SessionStart", recording_hook(workspace, "start.jsonl", context_answer("SessionStart", "START-7f3a"))
    )
    workspace.add_hook(
        "UserPromptSubmit",
        recording_hook(workspace, "prompt.jsonl", context_answer("UserPromptSubmit", "PROMPT-c41d")),
    )

    readme = tool_use("Read", {"file_path": str(workspace.repo / "README.md")})
    script = [[readme], [text("Nothing much.")]]

    run = run_claude(workspace.repo, workspace.home, "what is in this repo?", script)

    assert run.returncode == 0, run.describe()
    assert run.result is not None and run.result["result"] == "Nothing much.", run.describe()
    assert len(run.requests) == 2, run.describe()
    messages = run.requests[0]["messages"]
    # The prompt is the last text of the first user message; hook context follows as a role:"system" entry.
    assert messages[0]["role"] == "user"
    assert content_blocks(messages[0])[-1]["text"] == "what is in this repo?"
    context = next(m for m in messages if "hook additional context" in message_text(m))
    assert context["role"] == "system"
    assert messages.index(context) == 1, [m["role"] for m in messages]
    assert "SessionStart hook additional context: START-7f3a" in message_text(context)
    assert "UserPromptSubmit hook additional context: PROMPT-c41d" in message_text(context)
    # It is the same system entry as the "# Environment" block (SessionStart context first, prompt context
    # after it); not in the top-level system prompt; repeated in the later request (there as text blocks).
    assert message_text(context).startswith(
        "SessionStart hook additional context: START-7f3a\n\n# Environment"
    )
    assert "PROMPT-c41d" not in json.dumps(run.requests[0]["system"])
    repeated = run.requests[1]["messages"][1]
    assert repeated["role"] == "system" and message_text(repeated) == message_text(context)

    (start,) = hook_events(workspace, "start.jsonl")
    (prompt,) = hook_events(workspace, "prompt.jsonl")
    assert start["hook_event_name"] == "SessionStart" and start["source"] == "startup"
    assert prompt["hook_event_name"] == "UserPromptSubmit"
    assert prompt["prompt"] == "what is in this repo?"
    assert {"prompt_id", "permission_mode", "transcript_path"} <= prompt.keys()
    assert prompt["cwd"] == str(workspace.repo)
    assert prompt["session_id"] == start["session_id"] == run.result["session_id"]


def test_post_read_hook_context_follows_the_tool_result(workspace: Workspace, run_claude: RunClaude) -> None:
    target = workspace.write("src/app.py", "SECRET_SAUCE = 42\n")
    workspace.add_hook(
        "PostToolUse",
        recording_hook(workspace, "post.jsonl", context_answer("PostToolUse", "GOTCHA-app-9b2e")),
        matcher="Read",
    )
    read = tool_use("Read", {"file_path": str(target)})

    run = run_claude(workspace.repo, workspace.home, "look at app.py", [[read], [text("Read it.")]])

    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 2, run.describe()
    first, second = run.requests
    assert "GOTCHA-app-9b2e" not in json.dumps(first)
    result = tool_result_for(second, read["id"])
    assert result is not None and "SECRET_SAUCE = 42" in message_text({"content": [result]})
    following = message_after_tool_result(second, read["id"])
    assert following is not None and following["role"] == "system", second["messages"]
    # The prefix names the tool too ("PostToolUse:Read"), like the PreToolUse error text.
    assert message_text(following) == "PostToolUse:Read hook additional context: GOTCHA-app-9b2e"

    (event,) = hook_events(workspace, "post.jsonl")
    assert event["tool_name"] == "Read" and event["tool_use_id"] == read["id"]
    assert event["tool_input"]["file_path"] == str(target)
    assert event["tool_response"]["file"]["content"] == "SECRET_SAUCE = 42\n"


# Denies the first Edit it sees (creating a state file), allows the rest: a "deny once" policy.
DENY_ONCE_HOOK = """\
import json, pathlib, sys
event = json.load(sys.stdin)
state = pathlib.Path(sys.argv[1])
with open(str(state) + ".events", "a") as log:
    log.write(json.dumps(event) + "\\n")
if state.exists():
    decision = {
        "permissionDecision": "allow",
        "permissionDecisionReason": "ALLOW-REASON-5c1e",
        "additionalContext": "AFTER-EDIT-77aa",
    }
else:
    state.write_text("denied once")
    reason = "DENY-REASON-e90d read the gotcha first"
    decision = {"permissionDecision": "deny", "permissionDecisionReason": reason}
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **decision}}))
"""


def test_pre_edit_deny_then_retry_is_allowed(workspace: Workspace, run_claude: RunClaude) -> None:
    target = workspace.write("config.py", "TIMEOUT = 10\n")
    hook = workspace.root / "hooks" / "deny_once.py"
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text(DENY_ONCE_HOOK)
    state = workspace.root / "deny.state"
    workspace.add_hook("PreToolUse", python_command(hook, str(state)), matcher="Edit")

    edit_input = {"file_path": str(target), "old_string": "TIMEOUT = 10", "new_string": "TIMEOUT = 30"}
    read = tool_use("Read", {"file_path": str(target)})
    edits = [tool_use("Edit", edit_input), tool_use("Edit", edit_input)]
    on_disk_after_deny: list[str] = []

    def model(body: dict[str, Any]) -> Turn | None:
        # Decide from what the agent sent, like a model would: read, edit, retry the edit if it was refused.
        results = tool_results(body)
        if not results:
            return [read]
        last = results[-1]
        if last["tool_use_id"] == read["id"]:
            return [edits[0]]
        if last["tool_use_id"] == edits[0]["id"] and last.get("is_error"):
            on_disk_after_deny.append(target.read_text())
            return [text("The hook refused; retrying."), edits[1]]
        return None

    run = run_claude(workspace.repo, workspace.home, "raise the timeout to 30", model)

    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 4, run.describe()
    denied = tool_result_for(run.requests[2], edits[0]["id"])
    assert denied is not None and denied.get("is_error") is True, denied
    assert "PreToolUse:Edit hook error: DENY-REASON-e90d read the gotcha first" in message_text(
        {"content": [denied]}
    )
    assert on_disk_after_deny == ["TIMEOUT = 10\n"]
    allowed = tool_result_for(run.requests[3], edits[1]["id"])
    assert allowed is not None and not allowed.get("is_error"), allowed
    assert "ALLOW-REASON-5c1e" not in json.dumps(run.requests[3])
    # PreToolUse context is only shown beside the tool's result, i.e. after the edit already happened.
    following = message_after_tool_result(run.requests[3], edits[1]["id"])
    assert following is not None and following["role"] == "system", run.requests[3]["messages"]
    assert message_text(following) == "PreToolUse:Edit hook additional context: AFTER-EDIT-77aa"
    assert target.read_text() == "TIMEOUT = 30\n"
    assert run.result is not None
    assert [d["tool_name"] for d in run.result["permission_denials"]] == ["Edit"]
    assert run.result["permission_denials"][0]["tool_use_id"] == edits[0]["id"]

    events = [json.loads(line) for line in Path(f"{state}.events").read_text().splitlines()]
    assert [e["tool_use_id"] for e in events] == [edits[0]["id"], edits[1]["id"]]
    assert events[0]["tool_input"]["old_string"] == "TIMEOUT = 10"


@pytest.mark.parametrize("tool_search", ["default", "off"])
def test_mcp_tool_call_result_reaches_the_model(
    workspace: Workspace, run_claude: RunClaude, tool_search: str
) -> None:
    server = workspace.write("tools/notes_server.py", MCP_SERVER)
    workspace.add_mcp_server("notes", sys.executable, [str(server)])
    workspace.allow_tools("mcp__notes__lookup")
    call = tool_use("mcp__notes__lookup", {"topic": "db"})
    env = {"ENABLE_TOOL_SEARCH": "false"} if tool_search == "off" else {}

    run = run_claude(workspace.repo, workspace.home, "how do I deploy?", [[call], [text("Noted.")]], env=env)

    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 2, run.describe()
    # Deferred by default: named in the system entry's "deferred tools" list, not offered in `tools`.
    tools = tool_names(run.requests[0])
    deferred = any("mcp__notes__lookup" in m for m in system_messages(run.requests[0]))
    assert ("mcp__notes__lookup" in tools) == (tool_search == "off"), tools
    assert deferred == (tool_search == "default")
    result = tool_result_for(run.requests[1], call["id"])
    assert result is not None and not result.get("is_error"), result
    # mcp 2.x returns structured content for a str-returning tool; the agent forwards it as JSON text.
    assert json.loads(message_text({"content": [result]})) == {
        "result": "NOTE-db-3d8a: always run migrations first"
    }
    assert Path(f"{server}.calls").read_text() == "db\n"
    assert run.result is not None and run.result["permission_denials"] == []


def test_mcp_tool_call_without_permission_is_denied(workspace: Workspace, run_claude: RunClaude) -> None:
    server = workspace.write("tools/notes_server.py", MCP_SERVER)
    workspace.add_mcp_server("notes", sys.executable, [str(server)])
    call = tool_use("mcp__notes__lookup", {"topic": "db"})

    # acceptEdits does not cover MCP tools: without an allow rule the call is refused, not run.
    run = run_claude(workspace.repo, workspace.home, "how do I deploy?", [[call], [text("Hm.")]])

    assert run.returncode == 0, run.describe()
    result = tool_result_for(run.requests[1], call["id"])
    assert result is not None and result.get("is_error") is True, result
    assert not Path(f"{server}.calls").exists()
    assert run.result is not None
    assert [d["tool_name"] for d in run.result["permission_denials"]] == ["mcp__notes__lookup"]
