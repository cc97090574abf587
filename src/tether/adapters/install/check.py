"""`tether doctor`'s look at the agent integrations: do the hooks and the MCP server tether installed work here?

For every agent whose config (project or user scope) mentions tether:
- each hook's program resolves (on PATH, or the path exists), tether included for the committed guards;
- the MCP server starts and answers `tools/list` with tether's tools within a timeout;
- the tether the hooks call is the installation `tether` on PATH is (two installations drift apart).

    problems = check_agents(repo, Path.home())
    for p in problems: print(p.kind, p.where, p.message)

The composition root hands this to the CLI's `tether doctor` (the CLI adapter does not import this one).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import subprocess
import threading
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tether.adapters.install import guard
from tether.adapters.install.installer import AGENTS, SCOPES, config_files
from tether.adapters.install.jsonconf import load
from tether.adapters.install.specs import SERVER_NAME, is_tether_hook, is_tether_server

# A Python MCP server starts in 0.6-0.9 s here; a loaded machine or a first `uvx` run needs far longer.
DEFAULT_TIMEOUT = 30.0
EXPECTED_TOOL = "memory_search"


@dataclass(frozen=True)
class AgentProblem:
    """One thing wrong with an agent integration, as plain data: kind, where (a file), what to do."""

    kind: str  # "agent-config" | "agent-hook" | "agent-mcp" | "agent-install"
    where: str
    message: str


@dataclass(frozen=True)
class _Found:
    """tether's entries in one agent config file."""

    path: Path
    hooks: list[list[str]]  # argv of each tether hook
    servers: list[dict[str, Any]]  # tether MCP server entries
    env: dict[str, str]  # what the agent adds to the environment (Claude Code's settings `env`)


def _parse(path: Path) -> dict[str, Any] | None:
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    if text is None:
        return None
    if path.suffix == ".toml":
        return tomllib.loads(text)
    return load(text, comments=path.parent.name == ".gemini")


def _hook_argvs(data: dict[str, Any]) -> list[list[str]]:
    found: list[list[str]] = []
    hooks = data.get("hooks")
    for entries in hooks.values() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            handlers = entry.get("hooks", [entry]) if isinstance(entry, dict) else []
            for handler in handlers if isinstance(handlers, list) else []:
                if is_tether_hook(handler):
                    args = handler.get("args")
                    argv = [handler["command"], *args] if isinstance(args, list) and args else None
                    found.append(argv or shlex.split(handler["command"]))
    return found


def _servers(data: dict[str, Any], root: Path | None) -> list[dict[str, Any]]:
    containers = [data.get("mcpServers"), data.get("mcp_servers")]
    projects = data.get("projects")  # ~/.claude.json: Claude Code's local scope, per project
    if root is not None and isinstance(projects, dict) and isinstance(projects.get(str(root)), dict):
        containers.append(projects[str(root)].get("mcpServers"))
    return [
        c[SERVER_NAME] for c in containers if isinstance(c, dict) and is_tether_server(c.get(SERVER_NAME))
    ]


def _found(agent: str, scope: str, root: Path | None, home: Path) -> tuple[list[_Found], list[AgentProblem]]:
    if scope == "project" and root is None:
        return [], []  # without a project only user scope is looked at
    problems: list[AgentProblem] = []
    parsed: list[tuple[Path, dict[str, Any]]] = []
    for path in config_files(agent, scope=scope, root=root or home, home=home):
        try:
            data = _parse(path)
        except Exception as exc:  # any unreadable file is reported, none stops the check
            problems.append(AgentProblem("agent-config", str(path), f"cannot be read ({exc})"))
            continue
        if data is not None:
            parsed.append((path, data))
    env: dict[str, str] = {}  # Claude Code's settings `env` (TETHER_BIN in settings.local.json) reaches both
    for _, data in parsed if agent == "claude" else []:
        settings_env = data.get("env")
        if isinstance(settings_env, dict):
            env.update({k: v for k, v in settings_env.items() if isinstance(v, str)})
    found = [_Found(path, _hook_argvs(data), _servers(data, root), env) for path, data in parsed]
    return [f for f in found if f.hooks or f.servers], problems


def _program(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str | None]:
    """What a hook or server runs in the end: (its name as written, where it resolves, None if nowhere)."""
    # the committed guard runs $TETHER_BIN, else tether on PATH
    guarded = guard.guarded_call(argv) is not None
    name = (env.get(guard.BIN_VAR) or "tether") if guarded else argv[0]
    return name, shutil.which(name, path=env.get("PATH"))


def installation(executable: str) -> str:
    """Which Python environment an executable belongs to: the bin directory of its interpreter.

    A console script names its interpreter in its first line; an interpreter is its own. Compared without
    resolving symlinks, since two virtual environments share one base interpreter.
    """
    path = Path(executable)
    try:
        with path.open("rb") as handle:
            first = handle.readline(512)
    except OSError:
        first = b""
    if first.startswith(b"#!"):
        interpreter = first[2:].decode("utf-8", "replace").strip().split(" ")[0]
        if "python" in Path(interpreter).name:
            path = Path(interpreter)
    return os.path.normpath(path.parent)


def _hook_problems(found: _Found, agent: str, environ: Mapping[str, str]) -> list[AgentProblem]:
    env = {**environ, **found.env}
    problems: list[AgentProblem] = []
    on_path = shutil.which("tether", path=env.get("PATH"))
    seen: set[tuple[str, str | None]] = set()
    for argv in found.hooks:
        name, resolved = _program(argv, env)
        if guard.guarded_call(argv) is not None and shutil.which("sh", path=env.get("PATH")) is None:
            problems.append(
                AgentProblem("agent-hook", str(found.path), "the hooks need `sh`, not found on PATH")
            )
        if (name, resolved) in seen:
            continue
        seen.add((name, resolved))
        if resolved is None:
            fix = (
                f"install tether (pipx install tether) or set {guard.BIN_VAR}"
                if guard.guarded_call(argv) is not None
                else f"run `tether install {agent}` again from the tether you use"
            )
            problems.append(
                AgentProblem(
                    "agent-hook", str(found.path), f"the hooks run `{name}`, which is not here: {fix}"
                )
            )
            continue
        if on_path is not None and installation(resolved) != installation(on_path):
            problems.append(
                AgentProblem(
                    "agent-install",
                    str(found.path),
                    f"the hooks run {resolved} but `tether` on PATH is {on_path}, another installation: "
                    f"run `tether install {agent}` again with the one you use",
                )
            )
    return problems


def _read_lines(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def probe_server(
    entry: Mapping[str, Any], *, env: Mapping[str, str], cwd: Path, timeout: float = DEFAULT_TIMEOUT
) -> tuple[list[str] | None, str]:
    """Start an MCP server entry, ask `initialize` then `tools/list`; (tool names or None, what went wrong)."""
    args = entry.get("args", [])
    argv = [str(entry["command"]), *(str(a) for a in args if isinstance(args, list))]
    server_env = {**env, **{k: str(v) for k, v in (entry.get("env") or {}).items()}}
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=server_env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return None, f"does not start ({exc.strerror or exc})"
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + timeout
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "tether-doctor", "version": "1"},
    }
    try:
        answers: dict[int, dict[str, Any]] = {}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        ):
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            wanted = message.get("id")
            while isinstance(wanted, int) and wanted not in answers:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
                if line is None:
                    raise EOFError
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                if isinstance(answer, dict) and isinstance(answer.get("id"), int):
                    answers[answer["id"]] = answer
        info = answers[1].get("result", {}).get("serverInfo", {})
        if info.get("version") == "not installed":
            return [], "runs tether's stand-in: no tether on PATH (or $TETHER_BIN) where the server starts"
        tools = answers[2].get("result", {}).get("tools", [])
        return [str(t.get("name")) for t in tools if isinstance(t, dict)], ""
    except queue.Empty:
        return None, f"did not answer tools/list within {timeout:g} s"
    except (EOFError, BrokenPipeError, OSError):
        process.wait(timeout=5)
        tail = process.stderr.read()[-300:].strip().replace("\n", " | ")
        return None, f"exited ({process.returncode}) before answering" + (f": {tail}" if tail else "")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
        process.wait()
        with contextlib.suppress(
            OSError
        ):  # a server killed with our request still buffered: nothing to flush to
            process.stdin.close()


def _server_problems(
    found: _Found, cwd: Path, environ: Mapping[str, str], timeout: float, done: dict[str, tuple[Any, str]]
) -> list[AgentProblem]:
    problems: list[AgentProblem] = []
    for entry in found.servers:
        key = json.dumps([entry, found.env, str(cwd)], sort_keys=True)
        if key not in done:  # the same server in several files starts once
            done[key] = probe_server(entry, env={**environ, **found.env}, cwd=cwd, timeout=timeout)
        tools, failure = done[key]
        if tools is None or EXPECTED_TOOL not in tools:
            problems.append(
                AgentProblem(
                    "agent-mcp", str(found.path), f"the MCP server {failure or 'offers no memory tools'}"
                )
            )
    return problems


def check_agents(
    root: Path | None,
    home: Path,
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[AgentProblem]:
    """Problems of every agent integration that mentions tether, at project (`root`) and user scope."""
    env = dict(os.environ if environ is None else environ)
    problems: list[AgentProblem] = []
    started: dict[str, tuple[Any, str]] = {}
    for agent in AGENTS:
        for scope in SCOPES:
            found, unreadable = _found(agent, scope, root, home)
            problems += unreadable
            for item in found:
                problems += _hook_problems(item, agent, env)
                problems += _server_problems(item, root or home, env, timeout, started)
    return problems
