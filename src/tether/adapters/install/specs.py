"""What tether installs for each agent: hook events, matchers, timeouts, MCP entries, and how to recognise them.

Event names, matchers and timeout units follow `../shared/reference/agent-integrations.md` (sections 1-4, 7).
Timeouts are generous ceilings: `tether hook` has an internal deadline well below them and fails open, so a
timeout only matters when the machine is badly overloaded.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.adapters.install import guard

SERVER_NAME = "tether"  # no underscore: Gemini splits MCP tool names `mcp_<server>_<tool>` on `_`


ALLOW_TOOLS = ("read", "all", "none")
# The MCP tools `install` allows (Claude Code's permission rules, Gemini CLI's `tools.allowed`): by default
# the tools that change nothing; `all` adds the writing ones (memory_add writes a note the user sees in
# `git status`; remove archives; pin needs approval).
READ_TOOLS = ("memory_search", "memory_get", "memory_links")
WRITE_TOOLS = ("memory_add", "memory_remove", "memory_pin")


def tool_rules(allow_tools: str, agent: str = "claude") -> list[str]:
    """The allowed names of tether's MCP tools: `read` (the default), `all` or `none` of them.

    Claude Code names them `mcp__tether__memory_search`, Gemini CLI `mcp_tether_memory_search`.
    """
    names = {"read": READ_TOOLS, "all": READ_TOOLS + WRITE_TOOLS, "none": ()}[allow_tools]
    prefix = f"mcp_{SERVER_NAME}_" if agent == "gemini" else f"mcp__{SERVER_NAME}__"
    return [prefix + name for name in names]


@dataclass(frozen=True)
class HookSpec:
    """One hook tether registers: the agent's own event name, a tool matcher (None = all), a timeout."""

    event: str
    matcher: str | None
    timeout: int  # in the agent's unit: seconds, except Gemini (milliseconds)


# Claude Code (seconds). PostToolUse only on the tools whose use changes something: a Read brings that
# file's gotchas, edits record touched files, memory tools silence hints (measured in the real agent: each
# hook process costs ~0.1-0.2 s, so a hook on every Bash/Grep call or on Stop would cost time for nothing).
# SessionEnd only spawns a detached distill worker; its 5 s raises Claude's 1.5 s SessionEnd budget so a
# cold Python start on a busy machine still gets to detach.
CLAUDE_HOOKS = (
    HookSpec("SessionStart", None, 10),
    HookSpec("UserPromptSubmit", None, 10),
    HookSpec("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit", 5),
    HookSpec("PostToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit|mcp__.*memory_.*", 5),
    HookSpec("SessionEnd", None, 5),
)

# Codex CLI (seconds): same wire format as Claude Code. File edits go through `apply_patch` (the matcher
# aliases Edit/Write match it too); there is no read hook. Codex clamps SessionEnd hooks to 3 s and warns
# above that. Builds without SessionEnd ignore the unknown event name silently.
CODEX_HOOKS = (
    HookSpec("SessionStart", None, 10),
    HookSpec("UserPromptSubmit", None, 10),
    HookSpec("PreToolUse", "apply_patch|Edit|Write", 5),
    HookSpec("PostToolUse", "apply_patch|Edit|Write|mcp__.*memory_.*", 5),
    HookSpec("SessionEnd", None, 3),
)

# Cursor (seconds). No prompt hook: `beforeSubmitPrompt` cannot inject context, so it is not registered.
# postToolUse has no matcher: Cursor's tool names vary between builds.
CURSOR_HOOKS = (
    HookSpec("sessionStart", None, 10),
    HookSpec("preToolUse", "Edit|Write|MultiEdit", 5),
    HookSpec("postToolUse", None, 5),
    HookSpec("sessionEnd", None, 5),
)

# Gemini CLI (milliseconds). Tool matchers are regular expressions, hence the anchors.
GEMINI_HOOKS = (
    HookSpec("SessionStart", None, 10_000),
    HookSpec("BeforeAgent", None, 10_000),
    HookSpec("BeforeTool", "^(write_file|replace)$", 5_000),
    HookSpec("AfterTool", "^(read_file|read_many_files|write_file|replace|mcp_tether_.*)$", 5_000),
    HookSpec("SessionEnd", None, 5_000),
)

HOOKS: dict[str, tuple[HookSpec, ...]] = {
    "claude": CLAUDE_HOOKS,
    "codex": CODEX_HOOKS,
    "cursor": CURSOR_HOOKS,
    "gemini": GEMINI_HOOKS,
}

# Every event Claude Code dispatches (hooks.md), for validating the plugin's hooks file.
CLAUDE_EVENTS = frozenset(
    {
        "SessionStart",
        "Setup",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "PreToolUse",
        "PermissionRequest",
        "PermissionDenied",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Notification",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
        "CwdChanged",
        "FileChanged",
        "MessageDisplay",
    }
)


def hook_command(command: Sequence[str] | None, agent: str, event: str) -> str:
    """The shell command an agent runs for one hook, e.g. `tether hook claude PreToolUse`.

    `command` None is the form a team commits (`guard.hook_command`): tether if this machine has it, else
    silence. Shell form (not Claude's exec-form `args`) because every agent, and Cursor's loader of Claude
    hooks, understands it; `shlex.join` quotes an interpreter path with spaces.
    """
    if command is None:
        return guard.hook_command(agent, event)
    return shlex.join([*command, "hook", agent, event])


# Codex: without `required` the server's tools are not registered by the first turn (measured with Codex
# 0.171.0 in tests/e2e: "unsupported call"). A required server that fails to start stops Codex from starting,
# which is why committed configs run the guard (`guard.mcp_script`): without tether it is a stand-in that
# starts. Codex's default startup timeout (10 s) is too tight for a Python server on a loaded machine, and
# a required server that misses it also stops Codex. Codex starts MCP servers with only a few variables
# of its environment (measured with 0.171.0): `env_vars` passes on the ones that say which tether runs
# (the guard's TETHER_BIN) and where user memory lives, as the hooks see them.
CODEX_MCP_OPTIONS: dict[str, Any] = {
    "required": True,
    "startup_timeout_sec": 30,
    "env_vars": [guard.BIN_VAR, "TETHER_HOME"],
}


def mcp_entry(agent: str, command: Sequence[str] | None) -> dict[str, Any]:
    """The MCP server entry for `tether mcp` (stdio) in the agent's own shape; `command` None is the guard."""
    argv = guard.mcp_argv(agent) if command is None else [*command, "mcp"]
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    if agent == "claude":
        return {"type": "stdio", **entry}
    if agent == "codex":
        return {**entry, **CODEX_MCP_OPTIONS}
    return entry


_BASENAME = re.compile(r"[^/\\]*$")


def _invokes_tether(tokens: Sequence[str], verb: str) -> bool:
    """True when the argv runs tether's `verb`: `.../tether VERB`, `tether.exe VERB` or `... -m tether VERB`."""
    call = guard.guarded_call(tokens)
    if call is not None:
        return call[0] == verb
    for i, token in enumerate(tokens):
        match = _BASENAME.search(token)
        name = match.group(0).lower() if match else ""
        if name in ("tether", "tether.exe"):
            nxt = i + 1
        elif token == "-m" and i + 1 < len(tokens) and tokens[i + 1] == "tether":
            nxt = i + 2
        else:
            continue
        if nxt < len(tokens) and tokens[nxt] == verb:
            return True
    return False


def _argv(command: object, args: object) -> list[str] | None:
    if not isinstance(command, str):
        return None
    if isinstance(args, list) and all(isinstance(a, str) for a in args) and args:
        return [command, *args]
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: certainly not a command tether wrote
        return None


def is_tether_hook(handler: object) -> bool:
    """Whether a hook handler (Claude/Codex/Gemini handler or Cursor entry) is one tether installed."""
    if not isinstance(handler, dict):
        return False
    argv = _argv(handler.get("command"), handler.get("args"))
    return argv is not None and _invokes_tether(argv, "hook")


def is_tether_server(entry: object) -> bool:
    """Whether an MCP server entry runs `tether mcp` (in any spelling: `uvx tether mcp`, `python -m tether mcp`)."""
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str):
        return False
    if (
        isinstance(args, list)
        and all(isinstance(a, str) for a in args)
        and _invokes_tether([command, *args], "mcp")
    ):
        return True
    argv = _argv(command, None)
    return argv is not None and _invokes_tether(argv, "mcp")


PLUGIN_LAUNCHER = "${CLAUDE_PLUGIN_ROOT}/scripts/tether"


def plugin_hooks() -> dict[str, Any]:
    """`plugins/tether/hooks/hooks.json`: Claude Code's hooks, run through the plugin's launcher script.

    Exec form (`args`), as Claude Code's docs advise wherever `${CLAUDE_PLUGIN_ROOT}` appears.
    """
    hooks: dict[str, Any] = {}
    for spec in CLAUDE_HOOKS:
        handler = {
            "type": "command",
            "command": PLUGIN_LAUNCHER,
            "args": ["hook", "claude", spec.event],
            "timeout": spec.timeout,
        }
        group: dict[str, Any] = {} if spec.matcher is None else {"matcher": spec.matcher}
        group["hooks"] = [handler]
        hooks[spec.event] = [group]
    return {
        "description": "tether: recall on session start and on every prompt, file gotchas after a Read, a "
        "deny-once guard before the first edit of a file with gotchas, touched-file tracking, distill at "
        "session end.",
        "hooks": hooks,
    }
