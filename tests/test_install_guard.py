"""The commands a team commits (`guard`), run for real with `sh` as the agents run them."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.adapters.install import guard
from tether.adapters.install.specs import HOOKS, is_tether_hook, is_tether_server

VENV_TETHER = Path(sys.executable).with_name("tether")
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"  # a machine without tether


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != guard.BIN_VAR}
    return {**env, "PATH": BARE_PATH, **extra}


def _hook(
    command: str, env: dict[str, str], payload: dict[str, Any], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """Run a hook command line the way agents do: through a shell, the event's JSON on stdin."""
    return subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def _fake_tether(directory: Path) -> Path:
    """A `tether` that prints the arguments it was given."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "tether"
    script.write_text('#!/bin/sh\nprintf "fake tether:%s\\n" "$*"\n')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("agent", sorted(HOOKS))
def test_without_tether_committed_hooks_exit_0_and_only_session_start_says_how_to_install(
    agent: str, tmp_path: Path
) -> None:
    for spec in HOOKS[agent]:
        done = _hook(guard.hook_command(agent, spec.event), _env(), {"cwd": str(tmp_path)}, tmp_path)
        assert done.returncode == 0 and done.stderr == "", (spec.event, done)
        if spec.event == guard.SESSION_START[agent]:
            said = json.loads(done.stdout)
            assert list(said.values()) == [guard.INSTALL_HINT]
            # the person is told (Claude Code, Codex, Gemini show systemMessage); Cursor has only context
            assert list(said) == (["additional_context"] if agent == "cursor" else ["systemMessage"])
        else:
            assert done.stdout == ""


@pytest.mark.parametrize("agent", sorted(HOOKS))
def test_committed_hooks_run_the_tether_on_path_or_tether_bin(agent: str, tmp_path: Path) -> None:
    event = HOOKS[agent][1].event
    on_path = _fake_tether(tmp_path / "path-bin")
    done = _hook(guard.hook_command(agent, event), _env(PATH=f"{on_path.parent}:{BARE_PATH}"), {}, tmp_path)
    assert done.stdout == f"fake tether:hook {agent} {event}\n"
    # A machine whose tether is not on PATH (Claude Code: env in settings.local.json), path with a space.
    elsewhere = _fake_tether(tmp_path / "my venv" / "bin")
    done = _hook(guard.hook_command(agent, event), _env(**{guard.BIN_VAR: str(elsewhere)}), {}, tmp_path)
    assert done.stdout == f"fake tether:hook {agent} {event}\n"


def test_a_committed_hook_runs_the_real_tether(tmp_path: Path) -> None:
    payload = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    env = _env(**{guard.BIN_VAR: str(VENV_TETHER), "TETHER_HOME": str(tmp_path / "home")})
    done = _hook(guard.hook_command("claude", "SessionStart"), env, payload, tmp_path)
    assert done.returncode == 0
    assert guard.INSTALL_HINT not in done.stdout  # tether answered (not a project: nothing to say)


class StdioPeer:
    """Talks JSON-RPC lines to an MCP server over stdio, as an agent does."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
        )

    def ask(self, message: dict[str, Any]) -> dict[str, Any] | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        if "id" not in message:
            return None
        return json.loads(self.process.stdout.readline())

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


def test_without_tether_the_committed_mcp_server_is_a_stand_in_with_no_tools(tmp_path: Path) -> None:
    peer = StdioPeer(guard.mcp_argv(), _env(), tmp_path)
    hello = peer.ask(
        {
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
            "jsonrpc": "2.0",
            "id": 0,
        }
    )
    assert hello == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": "2025-11-25",  # the client's own
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tether", "version": "not installed"},
        },
    }
    assert peer.ask({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert peer.ask({"jsonrpc": "2.0", "id": "a-1", "method": "tools/list", "params": {}}) == {
        "jsonrpc": "2.0",
        "id": "a-1",
        "result": {"tools": []},
    }
    assert peer.ask({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {},
    }
    unknown = peer.ask({"jsonrpc": "2.0", "id": 3, "method": "server/discover"})
    assert unknown is not None and unknown["error"]["code"] == -32601
    assert peer.close() == 0


def test_gemini_clis_stand_in_offers_the_install_hint_as_a_prompt_and_no_tool(tmp_path: Path) -> None:
    # Gemini CLI counts a server offering no tool, prompt or resource as failed (tests/e2e: "MCP issues
    # detected"); the hint as a prompt keeps it a working server, with nothing the model can call.
    peer = StdioPeer(guard.mcp_argv("gemini"), _env(), tmp_path)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    hello = peer.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert hello is not None and hello["result"]["capabilities"] == {"tools": {}, "prompts": {}}
    tools = peer.ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert tools is not None and tools["result"] == {"tools": []}
    prompts = peer.ask({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"})
    assert prompts is not None
    assert prompts["result"]["prompts"] == [{"name": "install-tether", "description": guard.INSTALL_HINT}]
    got = peer.ask({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "install-tether"}})
    assert got is not None and got["result"]["messages"][0]["content"]["text"] == guard.INSTALL_HINT
    assert peer.close() == 0
    assert is_tether_server({"command": "sh", "args": guard.mcp_argv("gemini")[1:]})
    assert "${" not in guard.mcp_script("gemini") and "$VAR" not in guard.mcp_script("gemini")


def test_with_tether_the_committed_mcp_server_is_tethers(tmp_path: Path) -> None:
    env = _env(**{guard.BIN_VAR: str(VENV_TETHER), "TETHER_HOME": str(tmp_path / "home")})
    peer = StdioPeer(guard.mcp_argv(), env, tmp_path)
    hello = peer.ask(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    )
    assert hello is not None and hello["result"]["serverInfo"]["version"] == tether.__version__
    peer.ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
    listed = peer.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert listed is not None and "memory_search" in {t["name"] for t in listed["result"]["tools"]}
    peer.close()


def test_guards_are_recognised_as_tethers_and_name_no_path() -> None:
    for agent, specs in HOOKS.items():
        for spec in specs:
            command = guard.hook_command(agent, spec.event)
            assert is_tether_hook({"command": command})
            assert guard.guarded_call(shlex.split(command)) == ["hook", agent, spec.event]
            script = shlex.split(command)[2].split("echo")[0]  # (the hint after `echo` is prose)
            assert set(re.findall(r"/[\w./-]+", script)) == {"/dev/null"}  # no machine's path
    assert is_tether_server({"command": "sh", "args": guard.mcp_argv()[1:]})
    assert not is_tether_hook({"command": "sh -c 'echo tether hook claude X'"})
    # Claude Code and Cursor expand ${VAR} in MCP arguments themselves: the script has none.
    assert "${" not in guard.mcp_script() and all(
        "${" not in guard.hook_script(a, "SessionStart") for a in HOOKS
    )
