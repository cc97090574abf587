"""What `tether install --project` commits, inside the real Claude Code and Codex: a teammate without tether,
a machine whose tether is not on PATH, and the Claude Code plugin installed from this repository's marketplace.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tether.adapters.install.guard import INSTALL_HINT

from .conftest import OFFLINE_ENV, REPO_ROOT, RunClaude, RunCodex, Workspace, agent_env
from .mock_anthropic import system_messages, text, tool_result_for, tool_use
from .mock_openai import call_output, function_call, input_texts, say
from .test_tether_claude import HEADER, PORT_NOTE, assert_no_hook_failed, remember, tether

pytestmark = pytest.mark.e2e

# A machine without tether: the agents' own directories only (node for Codex's launcher, sh, git).
BARE = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
VENV_TETHER = Path(sys.executable).with_name("tether")


def _committed_project(workspace: Workspace, agent: str) -> str:
    """A project whose memory and `tether install <agent> --project` are committed; the memory's id."""
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context")
    tether(workspace, "install", agent, "--project")
    workspace.commit("tether")
    return port


def test_claude_teammate_without_tether_gets_one_hint_and_no_failure(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    _committed_project(workspace, "claude")
    run = run_claude(
        workspace.repo, workspace.home, "what port is staging on?", [[text("no idea")]], env=BARE
    )

    assert run.returncode == 0, run.describe()
    first = "\n".join(system_messages(run.requests[0]))
    assert HEADER not in first and "tether" not in first  # nothing injected, no server said to have failed
    assert "failed to connect" not in first
    debug = run.debug_text()
    assert f'"systemMessage":"{INSTALL_HINT}"' in debug  # the hint, for the person (not the model)
    assert "status 0" in debug and "hook error" not in debug.lower()
    assert 'MCP server "tether": Successfully connected' in debug  # the stand-in, with no tools
    assert not any("mcp__tether__" in json.dumps(r.get("tools", [])) for r in run.requests)


def test_codex_teammate_without_tether_starts_with_the_required_server(
    workspace: Workspace, run_codex: RunCodex
) -> None:
    _committed_project(workspace, "codex")
    run = run_codex(workspace.repo, workspace.home, "what port is staging on?", [[say("no idea")]], env=BARE)

    # `required = true` stops Codex when the server cannot start: the stand-in starts.
    assert run.returncode == 0, run.describe()
    assert "required MCP servers failed" not in run.stderr
    assert run.final_message == "no idea"
    assert not any(HEADER in t for t in input_texts(run.requests[0], "developer"))


def test_claude_with_tether_off_path_uses_the_local_settings(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context", "--details", "Moved from 8443 in March.")
    # The installer is run by path, with no tether on PATH: committed files name no path of this machine.
    workspace.run(str(VENV_TETHER), "install", "claude", "--project", env=BARE)
    workspace.commit("tether")
    local = workspace.repo / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"env": {"TETHER_BIN": str(VENV_TETHER)}}
    assert "settings.local.json" not in workspace.git("ls-files")  # kept out of the commit
    committed = (workspace.repo / ".claude" / "settings.json").read_text() + (
        workspace.repo / ".mcp.json"
    ).read_text()
    assert str(Path(sys.executable).parent) not in committed

    get = tool_use("mcp__tether__memory_get", {"id": port})
    run = run_claude(
        workspace.repo, workspace.home, "what port is staging on?", [[get], [text("6443")]], env=BARE
    )

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert PORT_NOTE in "\n".join(system_messages(run.requests[0]))  # the hooks found this machine's tether
    # The default `--allow-tools read` let the call through without --allowedTools.
    result = tool_result_for(run.requests[1], get["id"])
    assert result is not None and not result.get("is_error"), result
    assert "Moved from 8443 in March." in json.dumps(result)


def test_codex_passes_tether_bin_to_the_committed_server(workspace: Workspace, run_codex: RunCodex) -> None:
    port = _committed_project(workspace, "codex")
    search = function_call("memory_search", {"query": "staging port"})
    search["namespace"] = "mcp__tether"

    env = {**BARE, "TETHER_BIN": str(VENV_TETHER)}
    run = run_codex(workspace.repo, workspace.home, "hello", [[search], [say("6443.")]], env=env)

    assert run.returncode == 0, run.describe()
    found = call_output(run.requests[1], search["call_id"])
    assert found is not None and port in found, run.describe()  # `env_vars` reached the server


def test_the_plugin_from_this_repositorys_marketplace(
    workspace: Workspace, run_claude: RunClaude, claude_bin: Path
) -> None:
    env = agent_env(workspace.home, OFFLINE_ENV)
    for args in (
        ["plugin", "validate", str(REPO_ROOT / "plugins" / "tether")],
        ["plugin", "marketplace", "add", str(REPO_ROOT)],
        ["plugin", "install", "tether@tether"],
    ):
        done = subprocess.run(
            [str(claude_bin), *args], env=env, cwd=workspace.repo, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    tether(workspace, "init")
    remember(workspace, PORT_NOTE, "--category", "context")
    workspace.commit("memory")
    name = "mcp__plugin_tether_tether__memory_search"
    search = tool_use(name, {"query": "staging port"})

    run = run_claude(
        workspace.repo,
        workspace.home,
        "what port is staging on?",
        [[search], [text("6443")]],
        extra_args=["--allowedTools", name],
    )

    assert run.returncode == 0, run.describe()
    assert_no_hook_failed(workspace)
    assert PORT_NOTE in "\n".join(system_messages(run.requests[0]))  # the plugin's prompt hook
    result = tool_result_for(run.requests[1], search["id"])
    assert result is not None and PORT_NOTE in json.dumps(result), result
    assert "(plugin tether@tether) finished with status 0" in run.debug_text()
