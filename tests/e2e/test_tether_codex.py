"""tether inside the real Codex CLI: `tether install codex --project`, hooks trusted as in `/hooks`.

The trap: a README that lies about staging, two true notes in memory, and a question only memory answers.
Codex hands hook context to the model as plain ``role: "developer"`` input messages.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .conftest import RunCodex, Workspace
from .mock_openai import call_output, custom_call, function_call, input_texts, say
from .scripted_server import Turn
from .test_tether_claude import (
    CHARGE_PY,
    EDIT,
    EDIT_PROMPT,
    GOTCHA,
    HEADER,
    LYING_README,
    PORT_NOTE,
    SHIP_NOTE,
    assert_no_hook_failed,
    billing_workspace,
    remember,
    telemetry,
    tether,
)

pytestmark = pytest.mark.e2e


def test_trap_true_notes_reach_the_first_request(workspace: Workspace, run_codex: RunCodex) -> None:
    workspace.write("README.md", LYING_README)
    workspace.write("deploy.sh", "#!/bin/sh\nrsync -a . europa:/srv/orbit\n", executable=True)
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context")
    ship = remember(workspace, SHIP_NOTE, "--category", "decision")
    tether(workspace, "install", "codex", "--project")
    workspace.commit("tether")
    prompt = "what port does staging run on, which host do we deploy to, and with what command?"

    # run_codex trusts every hook Codex lists for the repo first, as a user does once in /hooks.
    run = run_codex(workspace.repo, workspace.home, prompt, [[say("6443, callisto, make ship-v2.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    first = run.requests[0]
    developer = input_texts(first, "developer")
    recalled = [t for t in developer if t.startswith(HEADER)]
    assert len(recalled) == 1, developer
    for fact in ("6443", "callisto", "make ship-v2", port, ship):
        assert fact in recalled[0], recalled[0]
    # Right after the prompt, like Codex places UserPromptSubmit context.
    items = first["input"]
    at = next(i for i, item in enumerate(items) if prompt in json.dumps(item))
    assert input_texts({"input": [items[at + 1]]}) == [recalled[0]]
    body = json.dumps(first)
    # As words: a random memory id may hold "8080" (8080b358 did).
    for lie in ("8080", "europa", "deploy.sh"):
        assert not re.search(rf"\b{re.escape(lie)}\b", body), lie


def test_deny_once_refuses_the_first_blind_apply_patch_and_lets_the_retry_through(
    workspace: Workspace, run_codex: RunCodex
) -> None:
    target, gotcha = billing_workspace(workspace)
    tether(workspace, "config", "guard.mode", "deny-once")
    tether(workspace, "install", "codex", "--project")
    workspace.commit("tether")
    patch = (
        "*** Begin Patch\n*** Update File: src/billing/charge.py\n@@\n"
        f"-{EDIT['old_string']}\n+{EDIT['new_string']}\n*** End Patch\n"
    )
    calls = [custom_call("apply_patch", patch) for _ in range(2)]
    on_disk_after_deny: list[str] = []

    def model(body: dict[str, Any]) -> Turn | None:
        # Codex has no read hook: the guard on apply_patch is where a file's gotchas reach the model.
        first, retry = (call_output(body, call["call_id"]) for call in calls)
        if first is None:
            return [calls[0]]
        if retry is None and first.startswith("Command blocked by PreToolUse hook"):
            on_disk_after_deny.append(target.read_text())
            return [calls[1]]
        return None

    run = run_codex(workspace.repo, workspace.home, EDIT_PROMPT, model)

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert len(run.requests) == 3, run.describe()
    denied = call_output(run.requests[1], calls[0]["call_id"])
    assert denied is not None and denied.startswith(
        "Command blocked by PreToolUse hook: tether: src/billing/charge.py has known gotchas"
    ), denied
    assert f'gotcha "{GOTCHA}" [{gotcha}]' in denied
    assert on_disk_after_deny == [CHARGE_PY]
    applied = call_output(run.requests[2], calls[1]["call_id"])
    assert applied is not None and "Success. Updated the following files" in applied, applied
    assert target.read_text() == CHARGE_PY.replace(EDIT["old_string"], EDIT["new_string"])


def test_memory_tools_answer_with_the_installed_config(workspace: Workspace, run_codex: RunCodex) -> None:
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context", "--details", "Moved from 8443 in March.")
    tether(workspace, "install", "codex", "--project")
    workspace.commit("tether")
    # MCP tools sit behind tool_search; a call names the server as its namespace. The installer sets no
    # approval mode: Codex runs these read-only tools (readOnlyHint) without asking, even under exec.
    search = function_call("memory_search", {"query": "staging port"})
    search["namespace"] = "mcp__tether"
    get = function_call("memory_get", {"id": port})
    get["namespace"] = "mcp__tether"

    run = run_codex(workspace.repo, workspace.home, "hello", [[search], [get], [say("6443.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert len(run.requests) == 3, run.describe()
    found = call_output(run.requests[1], search["call_id"])
    assert found is not None, run.requests[1]["input"][-2:]
    hits = json.loads(found[found.index("{") :])["results"]
    assert hits[0]["id"] == port and hits[0]["summary"] == PORT_NOTE
    full = call_output(run.requests[2], get["call_id"])
    assert full is not None and "Moved from 8443 in March." in full, full
    calls = [(i["tool"], i["status"]) for i in run.items if i.get("type") == "mcp_tool_call"]
    assert calls == [("memory_search", "completed"), ("memory_get", "completed")]
    assert [(event, receipts) for event, _, receipts in telemetry(workspace, port)] == [
        ("acted", {"via": "memory_get"})
    ]
