"""tether inside the real Claude Code: installed as a user would, driven by a scripted model.

Each test builds a throwaway repo and $HOME, runs `tether init`, `tether add` and `tether install claude
--project` through the workspace (the agent's own environment), then `claude -p` against the mock model, and
asserts on what the agent sent to the model and on what is on disk.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from .conftest import RunClaude, Workspace
from .mock_anthropic import (
    message_after_tool_result,
    message_text,
    system_messages,
    text,
    tool_result_for,
    tool_results,
    tool_use,
)
from .scripted_server import Turn

pytestmark = pytest.mark.e2e

MCP_TOOLS = ("mcp__tether__memory_search", "mcp__tether__memory_get")
HEADER = "=== Project memory (auto-recalled) ==="
FALLBACK = "Project memory is available: search project memory with memory_search before you start."
PROMPT_PREFIX = "UserPromptSubmit hook additional context: "

PORT_NOTE = "Staging API is on port 6443, deploys land on host callisto"
SHIP_NOTE = "Deploys go exclusively through make ship-v2, never raw rsync"
LYING_README = """\
# orbit

Staging runs on port 8080 on host europa.

## Deploying

Run ./deploy.sh from the repository root.
"""
CHARGE_PY = "def charge(amount, key):\n    return submit(amount, key)\n"
GOTCHA = "charge() must stay idempotent: a retry reuses the idempotency key, never a new one"


def tether(ws: Workspace, *args: str) -> str:
    return ws.run("tether", *args)


def remember(ws: Workspace, summary: str, *args: str) -> str:
    """`tether add SUMMARY ARGS --json`, as a user types it; the new memory's id."""
    return str(json.loads(tether(ws, "add", summary, *args, "--json"))["id"])


def install(ws: Workspace) -> None:
    """`tether install claude --project`, the MCP tools allowed (the repo is trusted), all committed."""
    tether(ws, "install", "claude", "--project")
    ws.allow_tools(*MCP_TOOLS)
    ws.commit("tether")


def prompt_context(body: dict[str, Any]) -> str:
    """What the UserPromptSubmit hook added to a request ("" when it added nothing)."""
    for message in system_messages(body):
        if PROMPT_PREFIX in message:
            # tether's block has no blank line; Claude Code appends "Today's date is ..." after one.
            return message.split(PROMPT_PREFIX, 1)[1].split("\n\n")[0]
    return ""


def telemetry(ws: Workspace, memory_id: str) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(event, session, receipts) rows tether logged for one memory, oldest first."""
    with closing(sqlite3.connect(ws.repo / ".tether" / "index.db")) as db:
        rows = db.execute(
            "SELECT event, session, receipts FROM events WHERE memory_id = ? ORDER BY seq", (memory_id,)
        ).fetchall()
    return [(str(event), session, json.loads(receipts)) for event, session, receipts in rows]


def session_state(ws: Workspace, session: str) -> dict[str, Any]:
    """The per-session state tether's hooks (and MCP server) keep in the index."""
    with closing(sqlite3.connect(ws.repo / ".tether" / "index.db")) as db:
        (state,) = db.execute("SELECT state FROM sessions WHERE id = ?", (session,)).fetchone()
    return dict(json.loads(state))


def assert_no_hook_failed(ws: Workspace) -> None:
    """Hooks fail open, silently: a failure only shows in .tether/logs/hooks.log, so look there."""
    log = ws.repo / ".tether" / "logs" / "hooks.log"
    assert not log.exists(), log.read_text()


# ---------------------------------------------------------------- 1. the trap


def test_trap_true_notes_reach_the_first_request_and_the_lying_readme_does_not(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    workspace.write("README.md", LYING_README)
    workspace.write("deploy.sh", "#!/bin/sh\nrsync -a . europa:/srv/orbit\n", executable=True)
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context")
    ship = remember(workspace, SHIP_NOTE, "--category", "decision")
    install(workspace)
    prompt = "what port does staging run on, which host do we deploy to, and with what command?"

    run = run_claude(workspace.repo, workspace.home, prompt, [[text("6443, callisto, make ship-v2.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    first = run.requests[0]
    context = prompt_context(first)
    assert context.startswith(HEADER), system_messages(first)
    for fact in ("6443", "callisto", "make ship-v2"):
        assert fact in context, context
    assert port in context and ship in context
    # The README's lies never reached the model: it answers from memory without opening a file.
    body = json.dumps(first)
    # As words: a random memory id may hold "8080" (8080b358 did).
    for lie in ("8080", "europa", "deploy.sh"):
        assert not re.search(rf"\b{re.escape(lie)}\b", body), lie
    # Being shown is logged, with the receipt that explains why.
    assert run.result is not None
    assert [(e, s) for e, s, _ in telemetry(workspace, port)] == [("surfaced", run.result["session_id"])]


# ---------------------------------------------------------------- 2. at the point of action


def billing_workspace(ws: Workspace, *args: str) -> tuple[Path, str]:
    target = ws.write("src/billing/charge.py", CHARGE_PY)
    tether(ws, "init")
    gotcha = remember(ws, GOTCHA, "--category", "gotcha", "--file", "src/billing/charge.py", *args)
    return target, gotcha


# Nothing in it matches the gotcha's words, so the gotcha must come from the file, not the prompt.
EDIT_PROMPT = "add a currency parameter"
EDIT = {"old_string": "def charge(amount, key):", "new_string": "def charge(amount, key, currency):"}


def test_gotcha_arrives_right_after_the_read_and_the_edit_goes_through(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    target, gotcha = billing_workspace(workspace)
    install(workspace)
    read = tool_use("Read", {"file_path": str(target)})
    edit = tool_use("Edit", {"file_path": str(target), **EDIT})

    run = run_claude(workspace.repo, workspace.home, EDIT_PROMPT, [[read], [edit], [text("Done.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert len(run.requests) == 3, run.describe()
    assert GOTCHA not in json.dumps(run.requests[0])
    after_read = message_after_tool_result(run.requests[1], read["id"])
    assert after_read is not None and after_read["role"] == "system", run.requests[1]["messages"]
    assert message_text(after_read) == (
        f'PostToolUse:Read hook additional context: · gotcha "{GOTCHA}" [{gotcha}] — review before editing'
    )
    # Seen on the read, so the guard lets the edit through (and says nothing more).
    result = tool_result_for(run.requests[2], edit["id"])
    assert result is not None and not result.get("is_error"), result
    assert json.dumps(run.requests[2], ensure_ascii=False).count(GOTCHA) == 1  # no second hint on the edit
    assert target.read_text() == CHARGE_PY.replace(EDIT["old_string"], EDIT["new_string"])
    assert run.result is not None and run.result["permission_denials"] == []
    assert [(e, r["receipt"]) for e, _, r in telemetry(workspace, gotcha)] == [
        ("surfaced", "read src/billing/charge.py")
    ]


def test_deny_once_refuses_the_first_blind_edit_and_lets_the_retry_through(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    target, gotcha = billing_workspace(workspace)
    tether(workspace, "config", "guard.mode", "deny-once")
    install(workspace)
    edits = [tool_use("Edit", {"file_path": str(target), **EDIT}) for _ in range(2)]
    on_disk_after_deny: list[str] = []

    def model(body: dict[str, Any]) -> Turn | None:
        # Edit without reading; when refused, retry the same edit, as the deny reason says to.
        results = tool_results(body)
        if not results:
            return [edits[0]]
        if results[-1]["tool_use_id"] == edits[0]["id"] and results[-1].get("is_error"):
            on_disk_after_deny.append(target.read_text())
            return [edits[1]]
        return None

    run = run_claude(workspace.repo, workspace.home, EDIT_PROMPT, model)

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert len(run.requests) == 3, run.describe()
    assert GOTCHA not in json.dumps(run.requests[0])
    denied = tool_result_for(run.requests[1], edits[0]["id"])
    assert denied is not None and denied.get("is_error") is True, denied
    reason = message_text({"content": [denied]})
    assert reason.startswith("PreToolUse:Edit hook error: tether: src/billing/charge.py has known gotchas"), (
        reason
    )
    assert f'gotcha "{GOTCHA}" [{gotcha}]' in reason and "issue the same edit again" in reason
    assert on_disk_after_deny == [CHARGE_PY]
    allowed = tool_result_for(run.requests[2], edits[1]["id"])
    assert allowed is not None and not allowed.get("is_error"), allowed
    assert target.read_text() == CHARGE_PY.replace(EDIT["old_string"], EDIT["new_string"])
    assert run.result is not None
    assert [d["tool_use_id"] for d in run.result["permission_denials"]] == [edits[0]["id"]]


def test_parallel_reads_bring_every_gotcha_and_lose_no_session_update(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    tether(workspace, "init")
    files = [f"src/m{i}.py" for i in range(4)]
    ids = []
    for i, path in enumerate(files):
        workspace.write(path, f"X{i} = {i}\n")
        ids.append(remember(workspace, f"m{i} rounds half to even", "--category", "gotcha", "--file", path))
    install(workspace)
    reads = [tool_use("Read", {"file_path": str(workspace.repo / path)}) for path in files]

    # One turn with four Reads: Claude Code runs their PostToolUse hooks at the same time.
    run = run_claude(workspace.repo, workspace.home, "look around", [reads, [text("Read them.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    # All results share one user message; the hooks' context follows it as one system message.
    after = message_after_tool_result(run.requests[1], reads[0]["id"])
    assert after is not None and after["role"] == "system", run.requests[1]["messages"][-2:]
    shown = message_text(after)
    for i, memory_id in enumerate(ids):
        assert f'gotcha "m{i} rounds half to even" [{memory_id}]' in shown, shown
    assert run.result is not None
    state = session_state(workspace, run.result["session_id"])
    assert sorted(state["touched"]) == files and sorted(state["seen"]) == sorted(ids), state
    assert state["hints"] == 4


# ---------------------------------------------------------------- 3. the memory tools


def test_memory_search_then_get_answer_and_count_as_acted(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context", "--details", "Moved from 8443 in March.")
    remember(workspace, SHIP_NOTE, "--category", "decision")
    install(workspace)
    search = tool_use(MCP_TOOLS[0], {"query": "staging port"})
    got: list[str] = []

    def model(body: dict[str, Any]) -> Turn | None:
        results = tool_results(body)
        if not results:
            return [search]
        if results[-1]["tool_use_id"] == search["id"]:
            found = json.loads(message_text({"content": [results[-1]]}))
            got.append(found["results"][0]["id"])
            return [tool_use(MCP_TOOLS[1], {"id": got[0]}, tool_id="toolu_get")]
        return None

    # A prompt with nothing to recall, so the tools are the only way the note reaches the model.
    run = run_claude(workspace.repo, workspace.home, "hello", model)

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert len(run.requests) == 3, run.describe()
    assert PORT_NOTE not in json.dumps(run.requests[0])
    searched = tool_result_for(run.requests[1], search["id"])
    assert searched is not None and not searched.get("is_error"), searched
    hits = json.loads(message_text({"content": [searched]}))["results"]
    assert hits[0]["id"] == port and hits[0]["summary"] == PORT_NOTE
    fetched = tool_result_for(run.requests[2], "toolu_get")
    assert fetched is not None and not fetched.get("is_error"), fetched
    full = json.loads(message_text({"content": [fetched]}))
    assert full["id"] == port and full["details"] == "Moved from 8443 in March."
    assert got == [port]
    # memory_get counts as acted, in the agent's session (Claude Code gives MCP servers its session id).
    assert run.result is not None
    session = run.result["session_id"]
    assert telemetry(workspace, port) == [("acted", session, {"via": "memory_get"})]
    stats = json.loads(tether(workspace, "stats", "--json"))
    assert stats["categories"]["context"]["acted"] == 1 and stats["total"]["acted"] == 1
    assert [(m["id"], m["acted"]) for m in stats["most_used"]] == [(port, 1)]
    # Both sides saw the agent use the tools: the MCP server's mark, and the hooks (which now stay quiet).
    state = session_state(workspace, session)
    assert state["memory_tools"]["calls"] == 2, state
    assert state["tools_used"] is True, state


def test_without_an_allow_rule_claude_p_refuses_the_tools_as_the_installer_warns(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    tether(workspace, "init")
    remember(workspace, PORT_NOTE, "--category", "context")
    notes = tether(workspace, "install", "claude", "--project", "--allow-tools", "none")
    workspace.commit("tether")
    assert "`claude -p` refuses them unless allowed: install with --allow-tools read" in notes
    search = tool_use(MCP_TOOLS[0], {"query": "staging port"})

    run = run_claude(workspace.repo, workspace.home, "hello", [[search], [text("ok")]])

    assert run.returncode == 0, run.describe()
    refused = tool_result_for(run.requests[1], search["id"])
    assert refused is not None and refused.get("is_error") is True, refused
    assert "haven't granted it yet" in message_text({"content": [refused]})
    assert run.result is not None
    assert [d["tool_name"] for d in run.result["permission_denials"]] == [MCP_TOOLS[0]]


# ---------------------------------------------------------------- 4. nothing to say


@pytest.mark.parametrize("memory", ["unrelated", "empty"])
def test_an_unrelated_prompt_gets_nothing_and_empty_memory_only_the_fallback(
    workspace: Workspace, run_claude: RunClaude, memory: str
) -> None:
    workspace.write("web/login.css", ".login-button { color: grey; }\n")
    tether(workspace, "init")
    if memory == "unrelated":
        remember(workspace, PORT_NOTE, "--category", "context")
        remember(workspace, SHIP_NOTE, "--category", "decision")
        remember(workspace, GOTCHA, "--category", "gotcha", "--file", "src/billing/charge.py")
    install(workspace)

    run = run_claude(workspace.repo, workspace.home, "make the login button blue", [[text("Sure.")]])

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    first = json.dumps(run.requests[0])
    assert HEADER not in first
    for summary in (PORT_NOTE, SHIP_NOTE, GOTCHA):
        assert summary not in first
    if memory == "unrelated":
        # No hook said anything: neither SessionStart nor UserPromptSubmit context.
        assert "hook additional context" not in first, system_messages(run.requests[0])
    else:
        assert prompt_context(run.requests[0]) == FALLBACK
        assert first.count("hook additional context") == 1, system_messages(run.requests[0])


# ---------------------------------------------------------------- 5. fail open


@pytest.mark.parametrize("broken", ["nothing (control)", "corrupt-index", "tether-not-on-path"])
def test_a_broken_tether_never_breaks_the_session(
    workspace: Workspace, run_claude: RunClaude, broken: str
) -> None:
    target, _ = billing_workspace(workspace, "--priority", "high")
    install(workspace)
    env: dict[str, str] = {}
    if broken == "corrupt-index":
        for name in ("index.db-wal", "index.db-shm"):
            (workspace.repo / ".tether" / name).unlink(missing_ok=True)
        (workspace.repo / ".tether" / "index.db").write_bytes(os.urandom(64 * 1024))
    elif broken == "tether-not-on-path":
        # The committed hooks look for `tether` on PATH (or $TETHER_BIN): without it they exit 0, silent.
        env["PATH"] = "/usr/bin:/bin"
    # Read another file, then edit charge.py blind: a working tether would deny that edit once (auto mode,
    # a high-priority gotcha not yet seen), so an edit that goes through first time shows the hooks are out.
    read = tool_use("Read", {"file_path": str(workspace.repo / "README.md")})
    edit = tool_use("Edit", {"file_path": str(target), **EDIT})

    run = run_claude(workspace.repo, workspace.home, EDIT_PROMPT, [[read], [edit], [text("Done.")]], env=env)

    assert run.returncode == 0, run.describe()
    assert run.result is not None and run.result["result"] == "Done.", run.describe()
    assert len(run.requests) == 3, run.describe()
    if broken.startswith("nothing"):
        assert [d["tool_use_id"] for d in run.result["permission_denials"]] == [edit["id"]]
        assert target.read_text() == CHARGE_PY
        return
    assert target.read_text() == CHARGE_PY.replace(EDIT["old_string"], EDIT["new_string"])
    sent = json.dumps(run.requests)
    for noise in ("hook error", "Traceback", "command not found", "tether:", "not a database"):
        assert noise not in sent, noise
    # The hooks did run, and failed.
    assert run.result["permission_denials"] == []
    if broken == "corrupt-index":
        failures = (workspace.repo / ".tether" / "logs" / "hooks.log").read_text().splitlines()
        events = [json.loads(line)["hook"] for line in failures if "file is not a database" in line]
        assert {"claude UserPromptSubmit", "claude PostToolUse", "claude PreToolUse"} <= set(events), failures
    else:
        debug = run.debug_text()
        assert "hook claude PreToolUse; exit 0'] finished with status 0" in debug
        assert "status 127" not in debug


def test_a_damaged_index_makes_the_tools_say_what_to_do_and_recovers(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context")
    install(workspace)
    workspace.allow_tools("Bash(rm .tether/index.db)")
    (workspace.repo / ".tether" / "index.db").write_bytes(os.urandom(64 * 1024))
    searches = [tool_use(MCP_TOOLS[0], {"query": "staging port"}) for _ in range(2)]
    remove = tool_use("Bash", {"command": "rm .tether/index.db", "description": "Remove the damaged index"})
    script: list[Turn] = [[searches[0]], [remove], [searches[1]], [text("6443.")]]

    run = run_claude(workspace.repo, workspace.home, "hello", script)

    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 4, run.describe()
    failed = tool_result_for(run.requests[1], searches[0]["id"])
    assert failed is not None and failed.get("is_error") is True, failed
    message = message_text({"content": [failed]})
    assert "the memory index .tether/index.db is damaged (file is not a database): delete it" in message
    removed = tool_result_for(run.requests[2], remove["id"])
    assert removed is not None and not removed.get("is_error"), removed
    found = tool_result_for(run.requests[3], searches[1]["id"])
    assert found is not None and not found.get("is_error"), found
    assert json.loads(message_text({"content": [found]}))["results"][0]["id"] == port
