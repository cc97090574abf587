"""tether inside the real Gemini CLI: installed as a user would, driven by a scripted model.

Each test builds a throwaway repo and $HOME, runs `tether init`, `tether add` and `tether install gemini
--project`, then `gemini -p` against the mock Gemini API, and asserts on what the CLI sent to the model
and on what is on disk. What the CLI needs to run offline is in gemini_agent.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tether.adapters.install.guard import INSTALL_HINT

from .conftest import RunGemini, Workspace
from .mock_gemini import contents_text, function_call, function_response, reply, tool_names
from .scripted_server import Turn

pytestmark = pytest.mark.e2e

HEADER = "=== Project memory (auto-recalled) ==="
PORT_NOTE = "Staging API is on port 6443, deploys land on host callisto"
CHARGE_PY = "def charge(amount, key):\n    return submit(amount, key)\n"
GOTCHA = "charge() must stay idempotent: a retry reuses the idempotency key, never a new one"
MCP_TOOLS = "mcp_tether_memory_search,mcp_tether_memory_get"


def tether(ws: Workspace, *args: str) -> str:
    return ws.run("tether", *args)


def remember(ws: Workspace, summary: str, *args: str) -> str:
    return str(json.loads(tether(ws, "add", summary, *args, "--json"))["id"])


def setup_project(ws: Workspace) -> dict[str, str]:
    ws.write("src/charge.py", CHARGE_PY)
    tether(ws, "init")
    ids = {
        "port": remember(ws, PORT_NOTE, "--category", "context"),
        "gotcha": remember(
            ws, GOTCHA, "--category", "gotcha", "--file", "src/charge.py", "--priority", "high"
        ),
    }
    tether(ws, "install", "gemini", "--project")
    ws.commit("tether")
    return ids


def last_user_text(body: dict[str, Any]) -> str:
    contents = [c for c in body.get("contents", []) if c.get("role") == "user"]
    return contents_text({"contents": contents[-1:]})


def test_memory_reaches_the_first_turn_and_the_gotcha_follows_the_read(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    ids = setup_project(workspace)
    read = function_call("read_file", {"file_path": "src/charge.py"})
    run = run_gemini(
        workspace.repo, workspace.home, "What port does the staging API use?", [[read], [reply("6443")]]
    )
    assert run.returncode == 0, run.describe()
    assert len(run.requests) == 2, run.describe()
    # BeforeAgent's context rides with the prompt, in the same user turn, wrapped in <hook_context>.
    first = last_user_text(run.requests[0])
    assert "What port does the staging API use?" in first
    assert f"<hook_context>{HEADER}" in first and f"{ids['port']} — {PORT_NOTE}" in first, first
    # AfterTool's context is appended to the read's function response: the model sees it with the file.
    output = (function_response(run.requests[1], "read_file") or {}).get("output", "")
    assert CHARGE_PY.strip() in output and f"[{ids['gotcha']}]" in output, output
    assert "review before editing" in output
    assert run.response == "6443"


def test_deny_once_refuses_the_first_blind_replace_and_lets_the_retry_through(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    ids = setup_project(workspace)
    edit = {
        "file_path": str(workspace.repo / "src/charge.py"),
        "instruction": "Log the amount before submitting.",
        "old_string": "    return submit(amount, key)",
        "new_string": "    print(amount)\n    return submit(amount, key)",
    }
    seen: list[str] = []

    def script(body: dict[str, Any]) -> Turn | None:
        answer = function_response(body, "replace")
        if answer is None:
            return [function_call("replace", edit)]
        seen.append(json.dumps(answer))
        return [function_call("replace", edit)] if len(seen) == 1 else [reply("edited")]

    run = run_gemini(workspace.repo, workspace.home, "log the charged amount", script)
    assert run.returncode == 0, run.describe()
    assert len(seen) == 2, run.describe()
    # The first replace was refused with the gotcha as the reason; the retry went through.
    assert ids["gotcha"] in seen[0] and "idempotent" in seen[0], seen[0]
    assert ids["gotcha"] not in seen[1], seen[1]
    assert "print(amount)" in (workspace.repo / "src/charge.py").read_text()


def test_memory_tools_answer_through_the_installed_server_and_take_an_id_prefix(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    ids = setup_project(workspace)
    search = function_call("mcp_tether_memory_search", {"query": "staging port"})
    get = function_call("mcp_tether_memory_get", {"id": ids["port"][:5]})
    run = run_gemini(
        workspace.repo,
        workspace.home,
        "Which host do deploys land on?",
        [[search], [get], [reply("callisto")]],
        extra_args=("--allowed-tools", MCP_TOOLS),
    )
    assert run.returncode == 0, run.describe()
    assert {"mcp_tether_memory_search", "mcp_tether_memory_get"} <= set(tool_names(run.requests[0]))
    found = json.dumps(function_response(run.requests[1], "mcp_tether_memory_search"))
    assert ids["port"] in found and "6443" in found, found
    note = json.dumps(function_response(run.requests[2], "mcp_tether_memory_get"))
    assert ids["port"] in note and "callisto" in note and "error" not in note.lower(), note
    # memory_get counted as the memory being used.
    stats = json.loads(tether(workspace, "stats", "--json"))
    assert [(m["id"], m["acted"]) for m in stats["most_used"]] == [(ids["port"], 1)], stats


def test_installed_read_tools_are_offered_without_allowed_tools_and_write_tools_are_not(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    ids = setup_project(workspace)  # `install gemini --project`: --allow-tools read is the default
    search = function_call("mcp_tether_memory_search", {"query": "staging port"})
    run = run_gemini(
        workspace.repo, workspace.home, "Which port?", [[search], [reply("6443")]], approval_mode="default"
    )
    assert run.returncode == 0, run.describe()
    offered = set(tool_names(run.requests[0]))
    assert {"mcp_tether_memory_search", "mcp_tether_memory_get", "mcp_tether_memory_links"} <= offered
    assert not {"mcp_tether_memory_add", "mcp_tether_memory_remove", "mcp_tether_memory_pin"} & offered
    found = json.dumps(function_response(run.requests[1], "mcp_tether_memory_search"))
    assert ids["port"] in found and "6443" in found, found
    # Gemini CLI 0.61.0 says so on every run (README: the committed settings use its deprecated form).
    assert "tools.allowed in settings.json are deprecated" in run.stderr


def test_allow_tools_none_leaves_the_mcp_tools_unoffered(workspace: Workspace, run_gemini: RunGemini) -> None:
    setup_project(workspace)
    tether(workspace, "install", "gemini", "--project", "--allow-tools", "none")
    run = run_gemini(workspace.repo, workspace.home, "Which port?", [[reply("no tools")]])
    assert run.returncode == 0, run.describe()
    assert not [name for name in tool_names(run.requests[0]) if name.startswith("mcp_tether_")]


# What README offers instead of the deprecated `tools.allowed`: a user policy rule scoped to the server.
USER_POLICY = """[[rule]]
mcpName = "tether"
toolName = ["memory_search", "memory_get", "memory_links"]
decision = "allow"
priority = 100
"""


def test_a_user_policy_rule_allows_the_named_tools_instead(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    setup_project(workspace)
    tether(workspace, "install", "gemini", "--project", "--allow-tools", "none")
    policies = workspace.home / ".gemini" / "policies"
    policies.mkdir(parents=True)
    (policies / "tether.toml").write_text(USER_POLICY)
    run = run_gemini(workspace.repo, workspace.home, "Which port?", [[reply("6443")]])
    assert run.returncode == 0, run.describe()
    offered = set(tool_names(run.requests[0]))
    assert {"mcp_tether_memory_search", "mcp_tether_memory_get", "mcp_tether_memory_links"} <= offered
    assert "mcp_tether_memory_add" not in offered
    assert "deprecated" not in run.stderr


def test_a_teammate_without_tether_gets_no_errors_and_no_memory(
    workspace: Workspace, run_gemini: RunGemini
) -> None:
    ids = setup_project(workspace)
    # A machine without tether: node, sh and git only. The committed guards exit 0 and the MCP entry starts
    # the stand-in server, which has no tools.
    run = run_gemini(
        workspace.repo,
        workspace.home,
        "What port does the staging API use?",
        [[reply("no idea")]],
        env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
        extra_args=("--allowed-tools", MCP_TOOLS),
    )
    assert run.returncode == 0, run.describe()
    assert run.response == "no idea"
    first = json.dumps(run.requests[0])
    assert HEADER not in first and f"{ids['port']} — " not in first  # nothing recalled (its file is listed)
    assert not [name for name in tool_names(run.requests[0]) if name.startswith("mcp_tether_")]
    # The hint reaches the person; the stand-in is no failed server (Gemini CLI counts a server offering
    # nothing as failed: its stand-in offers the hint as a prompt).
    assert f"Hook system message: {INSTALL_HINT}" in run.stderr
    assert "MCP issues detected" not in run.stderr and "No prompts, tools, or resources" not in run.stderr
