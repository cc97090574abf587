"""Running the real Codex CLI (``codex exec``) offline against the scripted Responses API mock.

What Codex 0.171.0 needs, found by running it (more in README.md here):
- a custom ``model_provider`` whose ``base_url`` is the mock's ``/v1`` and ``wire_api = "responses"``; an API key
  from ``env_key``; a model slug Codex knows (``gpt-5.5``), else it warns and offers neither ``apply_patch``
  nor ``tool_search``;
- ``analytics.enabled=false`` (else it resolves chatgpt.com) and ``--disable plugins`` (else it syncs the
  plugin marketplace from github.com): with both, it connects only to loopback;
- hooks run only when trusted: their ``currentHash`` (app-server ``hooks/list``) recorded as
  ``[hooks.state."<key>"] trusted_hash`` in ``$CODEX_HOME/config.toml``, or ``--dangerously-bypass-hook-trust``;
  an untrusted hook is skipped silently;
- project ``.codex/`` config and hooks load only for a trusted project (``[projects."<repo>"]``);
- an MCP server's tools are visible from the first turn only with ``required = true``, and calls need
  ``default_tools_approval_mode = "approve"`` under ``codex exec`` (its approval policy is ``never``).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .mock_openai import MockOpenAI
from .process import npm_install, run_agent
from .scripted_server import LoggedRequest, Script

CODEX_VERSION = "0.171.0"
CODEX_PACKAGE = f"@openai/codex@{CODEX_VERSION}"
# Any slug in Codex's bundled model catalog (`codex debug models`); the mock ignores it.
MOCK_MODEL = "gpt-5.5"


def install_codex(cache_dir: Path) -> Path:
    """Install the pinned Codex CLI into ``cache_dir`` once (npm registry only); return its launcher."""
    return npm_install(
        cache_dir, CODEX_PACKAGE, CODEX_VERSION, "codex", "install Node.js and npm to run the Codex e2e tests"
    )


def toml_value(value: Any) -> str:
    """A TOML literal for strings, numbers, booleans and lists of them (JSON strings are TOML strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value)


def toml_table(name: str, values: Mapping[str, Any]) -> str:
    """``[name]`` followed by ``key = value`` lines; quote dotted or odd keys in ``name`` yourself."""
    return f"\n[{name}]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in values.items())


def append_toml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(text)
    return path


@dataclass
class CodexRun:
    """What one ``codex exec --json`` run did: exit status, its JSONL events and the model requests."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]]
    http_log: list[LoggedRequest]
    run_dir: Path
    seconds: float
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def items(self) -> list[dict[str, Any]]:
        """The completed items (agent messages, command executions, MCP calls...), in order."""
        return [e["item"] for e in self.events if e.get("type") == "item.completed"]

    @property
    def final_message(self) -> str | None:
        messages = [item["text"] for item in self.items if item.get("type") == "agent_message"]
        return messages[-1] if messages else None

    def describe(self) -> str:
        routes = ", ".join(f"{r.method} {r.path} -> {r.status}" for r in self.http_log) or "none"
        return (
            f"codex exited {self.returncode} after {self.seconds:.1f}s; requests: {routes}\n"
            f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-2000:]}"
        )


def _offline_args(url: str) -> list[str]:
    provider = "model_providers.mock"
    overrides = {
        "model": MOCK_MODEL,
        "model_provider": "mock",
        f"{provider}.name": "scripted mock",
        f"{provider}.base_url": f"{url}/v1",
        f"{provider}.wire_api": "responses",
        f"{provider}.env_key": "MOCK_API_KEY",
        "analytics.enabled": False,
        "check_for_update_on_startup": False,
    }
    args: list[str] = []
    for key, value in overrides.items():
        args += ["-c", f"{key}={toml_value(value)}"]
    return [*args, "--disable", "plugins"]


def launch_codex(
    codex_bin: Path,
    repo: Path,
    env: Mapping[str, str],
    prompt: str,
    script: Script,
    *,
    run_dir: Path,
    extra_args: Sequence[str] = (),
    timeout: float = 90.0,
    sandbox: str = "workspace-write",
) -> CodexRun:
    """Run ``codex exec --json prompt`` in ``repo`` against a mock model replaying ``script``.

    ``env`` must carry HOME (and CODEX_HOME, defaulting to $HOME/.codex); the API key is added here.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    home = Path(env["HOME"])
    with MockOpenAI(script) as mock:
        args = [
            str(codex_bin),
            "exec",
            "--json",
            "--sandbox",
            sandbox,
            *_offline_args(mock.url),
            *extra_args,
            prompt,
        ]
        run_env = {"CODEX_HOME": str(home / ".codex"), **env, "MOCK_API_KEY": "sk-mock"}
        done = run_agent(args, repo, run_env, timeout)
        stdout, stderr = done.stdout, done.stderr
        events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        run = CodexRun(
            args=args,
            returncode=done.returncode,
            stdout=stdout,
            stderr=stderr,
            events=events,
            http_log=mock.requests,
            run_dir=run_dir,
            seconds=done.seconds,
            requests=mock.response_bodies,
        )
    (run_dir / "requests.json").write_text(json.dumps([r.body for r in run.http_log], indent=1))
    (run_dir / "events.jsonl").write_text(stdout)
    (run_dir / "stderr.txt").write_text(stderr)
    if mock.errors:
        raise AssertionError(f"the mock model's script failed: {mock.errors}\n{run.describe()}")
    return run


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def trust_codex_hooks(codex_bin: Path, repo: Path, env: Mapping[str, str], timeout: float = 30) -> list[str]:
    """Trust every hook Codex finds for ``repo``, as a user reviewing them in ``/hooks`` would.

    Asks ``codex app-server`` for ``hooks/list`` and records each hook's current hash as
    ``[hooks.state."<key>"] trusted_hash`` in ``$CODEX_HOME/config.toml``. Returns the trusted keys.
    """
    home = Path(env["HOME"])
    codex_home = Path(env.get("CODEX_HOME", home / ".codex"))
    process = subprocess.Popen(
        [str(codex_bin), "app-server", "--disable", "plugins", "-c", "analytics.enabled=false"],
        cwd=repo,
        env={"CODEX_HOME": str(codex_home), **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "e2e", "version": "1"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(repo)]}},
    ]
    try:
        process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise RuntimeError("codex app-server closed before answering hooks/list")
            message = json.loads(line)
            if message.get("id") == 2:
                break
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    if "error" in message:
        raise RuntimeError(f"codex app-server hooks/list failed: {message['error']}")
    hooks = [hook for entry in message["result"]["data"] for hook in entry["hooks"]]
    text = "".join(
        toml_table(f"hooks.state.{json.dumps(hook['key'])}", {"trusted_hash": hook["currentHash"]})
        for hook in hooks
        if hook.get("trustStatus") != "trusted"
    )
    append_toml(codex_home / "config.toml", text)
    return [hook["key"] for hook in hooks]
