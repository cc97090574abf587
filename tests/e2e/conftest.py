"""Fixtures to run the real Claude Code CLI offline, against a scripted model served on loopback.

A test gets a throwaway git repo and $HOME (``workspace``), writes the project's hooks and MCP config into it
(or runs an installer such as ``tether install claude --project`` with ``workspace.run``), then calls
``run_claude(repo, home, prompt, script)`` and asserts on what the agent sent to the model and on disk.

    def test_prompt_context(workspace, run_claude):
        workspace.add_hook("UserPromptSubmit", "echo hello")
        run = run_claude(workspace.repo, workspace.home, "hi", [[text("ok")]])
        assert "hello" in system_messages(run.requests[0])[0]

Facts about the CLI's behaviour are in ../shared/reference/claude-code-e2e.md.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from .codex_agent import (
    CodexRun,
    append_toml,
    install_codex,
    launch_codex,
    toml_table,
    trust_codex_hooks,
)
from .gemini_agent import GeminiRun, install_gemini, launch_gemini
from .mock_anthropic import MockAnthropic
from .process import RegistryUnreachable, run_agent
from .scripted_server import LoggedRequest, Script

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALLER = REPO_ROOT / "bin" / "install-claude-code"
# bin/install-claude-code exits with EX_TEMPFAIL when the npm registry is unreachable: the only case we skip.
REGISTRY_UNREACHABLE = 75
INSTALL_TIMEOUT = 900
# A scripted run takes about a second; the bound only has to catch a hung agent, hook or MCP server.
DEFAULT_TIMEOUT = 90.0
E2E_DIR = Path(__file__).resolve().parent

# What makes the CLI talk only to the mock: no telemetry, updates, error reports or other side traffic.
OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # The first request waits for MCP servers to connect, so their tools are known from the first turn.
    "MCP_CONNECTION_NONBLOCKING": "false",
}
# Inherited variables that would point the agent elsewhere or change its behaviour are not passed on.
PASSED_THROUGH = ("LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test here that runs the real agent is marked, so `-m "not e2e"` deselects it; the mock's own
    # tests need no agent and stay unmarked.
    for item in items:
        uses_agent = {"claude_bin", "codex_bin", "gemini_bin"} & set(getattr(item, "fixturenames", ()))
        if E2E_DIR in item.path.parents and uses_agent:
            item.add_marker(pytest.mark.e2e)


def agent_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for the agent and what runs on its behalf: throwaway $HOME and TETHER_HOME.

    The venv's bin directory comes first on PATH: hooks and MCP servers find this ``python`` and ``tether``.
    """
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
        HOME=str(home),
        TETHER_HOME=str(home / ".tether-home"),
        TERM="dumb",
        NO_COLOR="1",
    )
    env.update(extra or {})
    return env


# ---------------------------------------------------------------- workspace: a repo and a $HOME


def _merge_json(path: Path, update: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(path.read_text()) if path.exists() else {}
    update(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def python_command(script: Path, *args: str) -> str:
    """A shell command line running ``script`` with this interpreter (for hooks in settings.json)."""
    return shlex.join([sys.executable, str(script), *args])


@dataclass
class Workspace:
    """A throwaway git repo the agent works in, and a throwaway $HOME that trusts it."""

    repo: Path
    home: Path
    root: Path

    @property
    def settings_path(self) -> Path:
        return self.repo / ".claude" / "settings.json"

    @property
    def mcp_config_path(self) -> Path:
        return self.repo / ".mcp.json"

    def write(self, relpath: str, content: str, *, executable: bool = False) -> Path:
        """Write a file under the repo (parents created) and return its absolute path."""
        path = self.repo / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        if executable:
            path.chmod(0o755)
        return path

    def write_settings(self, settings: dict[str, Any]) -> Path:
        """Replace the project's ``.claude/settings.json``."""
        self.settings_path.parent.mkdir(parents=True, exist_ok=True)
        self.settings_path.write_text(json.dumps(settings, indent=2) + "\n")
        return self.settings_path

    def add_hook(
        self, event: str, command: str, *, matcher: str | None = None, timeout: int | None = None
    ) -> Path:
        """Add a command hook for ``event`` (e.g. ``PostToolUse`` with matcher ``Read``) to settings.json."""
        hook: dict[str, Any] = {"type": "command", "command": command}
        if timeout is not None:
            hook["timeout"] = timeout
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group["matcher"] = matcher
        return _merge_json(
            self.settings_path, lambda data: data.setdefault("hooks", {}).setdefault(event, []).append(group)
        )

    def allow_tools(self, *rules: str) -> Path:
        """Add permission rules (``mcp__srv__tool``) to settings.json; they count as HOME trusts the repo."""
        return _merge_json(
            self.settings_path,
            lambda data: data.setdefault("permissions", {}).setdefault("allow", []).extend(rules),
        )

    def add_mcp_server(
        self, name: str, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> Path:
        """Add a stdio MCP server to the project's ``.mcp.json``."""
        server: dict[str, Any] = {"type": "stdio", "command": command, "args": list(args)}
        if env:
            server["env"] = dict(env)
        return _merge_json(
            self.mcp_config_path, lambda data: data.setdefault("mcpServers", {}).__setitem__(name, server)
        )

    def add_codex_hook(
        self, event: str, command: str, *, matcher: str | None = None, timeout: int | None = None
    ) -> Path:
        """Add a command hook for ``event`` to the project's ``.codex/hooks.json`` (Claude's format)."""
        hook: dict[str, Any] = {"type": "command", "command": command}
        if timeout is not None:
            hook["timeout"] = timeout
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group["matcher"] = matcher
        return _merge_json(
            self.repo / ".codex" / "hooks.json",
            lambda data: data.setdefault("hooks", {}).setdefault(event, []).append(group),
        )

    def add_codex_mcp_server(self, name: str, command: str, args: Sequence[str] = (), **options: Any) -> Path:
        """Add a stdio MCP server to the project's ``.codex/config.toml``.

        Defaults make it usable under ``codex exec``: ``required`` (its tools are known from the first turn)
        and ``default_tools_approval_mode = "approve"`` (exec never asks, so unapproved calls fail).
        """
        server = {
            "command": command,
            "args": list(args),
            "required": True,
            "default_tools_approval_mode": "approve",
            **options,
        }
        return append_toml(self.repo / ".codex" / "config.toml", toml_table(f"mcp_servers.{name}", server))

    def run(self, *command: str, env: Mapping[str, str] | None = None, timeout: float = 60) -> str:
        """Run a command in the repo with the agent's environment (e.g. an installer); return its stdout."""
        done = subprocess.run(
            command,
            cwd=self.repo,
            env=agent_env(self.home, env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            pytest.fail(f"{shlex.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def git(self, *args: str) -> str:
        return self.run("git", *args)

    def commit(self, message: str = "change") -> None:
        """Commit everything in the repo (hooks and MCP config included)."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


def make_workspace(root: Path, files: Mapping[str, str] | None = None) -> Workspace:
    """Create ``root/repo`` (a git repo with ``files`` committed) and ``root/home`` trusting it."""
    root = root.resolve()  # the CLI keys trust by the real path
    repo, home = root / "repo", root / "home"
    repo.mkdir(parents=True)
    home.mkdir(parents=True)
    # Trust and onboarding, so -p runs without dialogs and project permission rules count.
    trusted = {"hasCompletedOnboarding": True, "projects": {str(repo): {"hasTrustDialogAccepted": True}}}
    (home / ".claude.json").write_text(json.dumps(trusted))
    # Codex loads a project's .codex/ config and hooks only for a trusted project.
    project = toml_table(f"projects.{json.dumps(str(repo))}", {"trust_level": "trusted"})
    append_toml(home / ".codex" / "config.toml", project)
    workspace = Workspace(repo=repo, home=home, root=root)
    workspace.git("init", "-q", "-b", "main")
    workspace.git("config", "user.name", "Test")
    workspace.git("config", "user.email", "test@example.invalid")
    for relpath, content in (files or {"README.md": "# sample\n"}).items():
        workspace.write(relpath, content)
    workspace.commit("initial")
    return workspace


# ---------------------------------------------------------------- running the agent


@dataclass
class ClaudeRun:
    """What one ``claude -p`` run did: exit status, output, the parsed JSON result and the model requests."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None
    http_log: list[LoggedRequest]
    debug_log: Path
    run_dir: Path
    seconds: float
    requests: list[dict[str, Any]] = field(default_factory=list)

    def debug_text(self) -> str:
        return self.debug_log.read_text(errors="replace") if self.debug_log.exists() else ""

    def describe(self) -> str:
        """A summary for assertion messages: exit code, output tails, requests seen, debug log tail."""
        routes = ", ".join(f"{r.method} {r.path} -> {r.status}" for r in self.http_log) or "none"
        debug_tail = "\n".join(self.debug_text().splitlines()[-40:])
        return (
            f"claude exited {self.returncode} after {self.seconds:.1f}s; requests: {routes}\n"
            f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}\n"
            f"debug log {self.debug_log} (tail):\n{debug_tail}"
        )


def _parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                return parsed
    return None


def launch_claude(
    claude_bin: Path,
    repo: Path,
    home: Path,
    prompt: str,
    script: Script,
    *,
    run_dir: Path,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    permission_mode: str = "acceptEdits",
) -> ClaudeRun:
    """Run ``claude -p prompt`` in ``repo`` against a mock model replaying ``script``; logs go to run_dir."""
    run_dir.mkdir(parents=True, exist_ok=True)
    debug_log = run_dir / "debug.log"
    args = [
        str(claude_bin),
        "-p",
        prompt,
        "--output-format",
        "json",
        "--permission-mode",
        permission_mode,
        "--debug-file",
        str(debug_log),
        *extra_args,
    ]
    with MockAnthropic(script) as mock:
        run_env = agent_env(home, {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": mock.url, **(env or {})})
        done = run_agent(args, repo, run_env, timeout)
        stdout, stderr, seconds = done.stdout, done.stderr, done.seconds
        if done.timed_out:
            run = ClaudeRun(args, -9, stdout, stderr, None, mock.requests, debug_log, run_dir, seconds)
            pytest.fail(f"claude did not finish within {timeout}s; killed.\n{run.describe()}")
        run = ClaudeRun(
            args=args,
            returncode=done.returncode,
            stdout=stdout,
            stderr=stderr,
            result=_parse_result(stdout),
            http_log=mock.requests,
            debug_log=debug_log,
            run_dir=run_dir,
            seconds=seconds,
            requests=mock.message_bodies,
        )
    (run_dir / "requests.json").write_text(json.dumps([r.body for r in run.http_log], indent=1))
    (run_dir / "stdout.txt").write_text(stdout)
    (run_dir / "stderr.txt").write_text(stderr)
    if mock.errors:
        pytest.fail(f"the mock model's script failed: {mock.errors}\n{run.describe()}")
    return run


class RunClaude(Protocol):
    def __call__(
        self,
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        permission_mode: str = "acceptEdits",
    ) -> ClaudeRun: ...


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned Claude Code binary, installed once into .cache/claude-code by bin/install-claude-code."""
    try:
        done = subprocess.run(
            [str(INSTALLER)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{INSTALLER} did not finish within {INSTALL_TIMEOUT}s")
    if done.returncode == REGISTRY_UNREACHABLE:
        pytest.skip(
            f"Claude Code is not installed and the npm registry is unreachable: {done.stderr.strip()}"
        )
    if done.returncode != 0:
        pytest.fail(f"{INSTALLER} exited {done.returncode}:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """A fresh git repo and a $HOME that trusts it, under tmp_path. The agent's session start launches the
    project's resident process (and, with a real model, the warm embedding process); they are stopped after
    the test, so a run of the suite does not leave dozens of them idling for half an hour."""
    ws = make_workspace(tmp_path / "ws")
    yield ws
    env = agent_env(ws.home)
    for stop in (["resident", "stop"], ["embedder", "stop"]):
        argv = [sys.executable, "-m", "tether", *stop]
        subprocess.run(argv, cwd=ws.repo, env=env, capture_output=True, timeout=60, check=False)


@pytest.fixture
def run_claude(claude_bin: Path, tmp_path: Path) -> RunClaude:
    """``run_claude(repo, home, prompt, script, ...)``: launch_claude with logs in tmp_path/runs/NN."""
    runs = tmp_path / "runs"
    counter = iter(range(1, 1000))

    def run(
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        permission_mode: str = "acceptEdits",
    ) -> ClaudeRun:
        return launch_claude(
            claude_bin,
            repo,
            home,
            prompt,
            script,
            run_dir=runs / f"{next(counter):02d}",
            extra_args=extra_args,
            env=env,
            timeout=timeout,
            permission_mode=permission_mode,
        )

    return run


class RunCodex(Protocol):
    def __call__(
        self,
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        trust_hooks: bool = True,
    ) -> CodexRun: ...


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned Codex CLI, installed once into .cache/codex from the npm registry."""
    try:
        return install_codex(REPO_ROOT / ".cache" / "codex")
    except RegistryUnreachable as exc:
        pytest.skip(f"Codex is not installed and npm's registry is unreachable: {exc}")


@pytest.fixture
def run_codex(codex_bin: Path, tmp_path: Path) -> RunCodex:
    """``run_codex(repo, home, prompt, script, ...)``: launch_codex with logs in tmp_path/codex-runs/NN.

    With ``trust_hooks`` (the default) every hook Codex finds is trusted first, as a user would in ``/hooks``.
    """
    runs = tmp_path / "codex-runs"
    counter = iter(range(1, 1000))

    def run(
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        trust_hooks: bool = True,
    ) -> CodexRun:
        run_env = agent_env(home, env)
        if trust_hooks:
            trust_codex_hooks(codex_bin, repo, run_env)
        return launch_codex(
            codex_bin,
            repo,
            run_env,
            prompt,
            script,
            run_dir=runs / f"{next(counter):02d}",
            extra_args=extra_args,
            timeout=timeout,
        )

    return run


class RunGemini(Protocol):
    def __call__(
        self,
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        approval_mode: str = "auto_edit",
    ) -> GeminiRun: ...


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    """The pinned Gemini CLI, installed once into .cache/gemini-cli from the npm registry."""
    try:
        return install_gemini(REPO_ROOT / ".cache" / "gemini-cli")
    except RegistryUnreachable as exc:
        pytest.skip(f"Gemini CLI is not installed and npm's registry is unreachable: {exc}")


@pytest.fixture
def run_gemini(gemini_bin: Path, tmp_path: Path) -> RunGemini:
    """``run_gemini(repo, home, prompt, script, ...)``: launch_gemini with logs in tmp_path/gemini-runs/NN.

    $HOME/.gemini is prepared as a user who signed in with an API key and trusted the repo has it.
    """
    runs = tmp_path / "gemini-runs"
    counter = iter(range(1, 1000))

    def run(
        repo: Path,
        home: Path,
        prompt: str,
        script: Script,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        approval_mode: str = "auto_edit",
    ) -> GeminiRun:
        return launch_gemini(
            gemini_bin,
            repo,
            agent_env(home, env),
            prompt,
            script,
            run_dir=runs / f"{next(counter):02d}",
            extra_args=extra_args,
            timeout=timeout,
            approval_mode=approval_mode,
        )

    return run
