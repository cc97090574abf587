"""Commands a team can commit: they run tether when this machine has it, and stay quiet when it does not.

A teammate who clones a repository with tether's hooks committed but has no tether installed must not get
"tether: not found" on every hook, nor an agent told that a server failed (Codex refuses to start at all
when a `required` MCP server cannot initialize). So committed commands are small POSIX `sh -c` scripts:

    sh -c 'tether_bin="$TETHER_BIN"; [ -n "$tether_bin" ] || tether_bin=tether;
           command -v "$tether_bin" >/dev/null 2>&1 && exec "$tether_bin" hook claude SessionStart; <fallback>'

`$TETHER_BIN` is how one machine points the committed commands at its own installation without writing a
path into a committed file (Claude Code: `env` in `.claude/settings.local.json`, which `tether install` writes
when the `tether` on PATH is not the installation running the install). Without tether, a hook exits 0 with
nothing to say except one hint at session start, and the MCP server is a stand-in written in `sh` that
answers the handshake with no tools.

The scripts avoid `${...}`: Claude Code and Cursor expand `${VAR}` in MCP arguments themselves, and Gemini CLI
replaces `$VAR` and `${VAR}` of variables it knows in every settings string (unknown names are kept), so the
script's own variables have names no agent or user sets.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

BIN_VAR = "TETHER_BIN"
INSTALL_HINT = (
    "This repository uses tether (project memory for coding agents) but tether is not installed on this "
    "machine, so its hooks and memory tools are off. To turn them on: pipx install tether (or uv tool "
    "install tether), then start a new session."
)
PLUGIN_HINT = (
    "The tether plugin is on but finds no tether: not on PATH, and neither uvx nor pipx to fetch it. "
    "Install it (pipx install tether, or uv tool install tether) or install uv, then start a new session."
)
_FIND = f'tether_bin="${BIN_VAR}"; [ -n "$tether_bin" ] || tether_bin=tether; '
_FOUND = 'command -v "$tether_bin" >/dev/null 2>&1 && exec "$tether_bin" '

# What a session-start hook prints when tether is missing: the hint goes to the person (`systemMessage` is
# shown to the user by Claude Code, Codex and Gemini CLI; in Claude Code 2.1.332 it does not reach the model,
# measured in tests/e2e); Cursor has no such field at session start, so there it is context for the agent.
_HINT_OUTPUT = {
    "claude": {"systemMessage": INSTALL_HINT},
    "codex": {"systemMessage": INSTALL_HINT},
    "gemini": {"systemMessage": INSTALL_HINT},
    "cursor": {"additional_context": INSTALL_HINT},
}
SESSION_START = {
    "claude": "SessionStart",
    "codex": "SessionStart",
    "gemini": "SessionStart",
    "cursor": "sessionStart",
}


# A stand-in MCP server in POSIX sh (read, case, sed, printf): it answers `initialize` with the client's own
# protocol version, `tools/list` with no tools, `ping`, and anything else with "method not found", so every
# agent starts as if tether's server were there with nothing to offer. `read` takes one line at a time from a
# pipe, where awk (mawk) would wait for a full buffer.
#
# Gemini CLI (0.61.0, tests/e2e) counts a server offering no tool, prompt or resource as failed ("No prompts,
# tools, or resources found on the server"; the person is told "MCP issues detected"), so its stand-in also
# offers one prompt, the install hint: a `/install-tether` command, and no tool the model could call.
def _stand_in(*, prompt: bool) -> str:
    capabilities = '{"tools":{},"prompts":{}}' if prompt else '{"tools":{}}'
    prompts = (
        '*\'"method":"prompts/list"\'*|*\'"method": "prompts/list"\'*) '
        f'res=\'"result":{{"prompts":[{{"name":"install-tether","description":"{INSTALL_HINT}"}}]}}\';; '
        '*\'"method":"prompts/get"\'*|*\'"method": "prompts/get"\'*) '
        f'res=\'"result":{{"description":"tether is not installed","messages":[{{"role":"user",'
        f'"content":{{"type":"text","text":"{INSTALL_HINT}"}}}}]}}\';; '
        if prompt
        else ""
    )
    return (
        "while IFS= read -r msg; do "
        "rid=$(printf '%s\\n' \"$msg\" | sed -n -E "
        '\'s/.*"id"[[:space:]]*:[[:space:]]*("[^"]*"|-?[0-9]+).*/\\1/p\'); '
        '[ -n "$rid" ] || continue; '
        "case $msg in "
        '*\'"method":"initialize"\'*|*\'"method": "initialize"\'*) '
        "ver=$(printf '%s\\n' \"$msg\" | sed -n -E "
        '\'s/.*"protocolVersion"[[:space:]]*:[[:space:]]*"([^"]*)".*/\\1/p\'); '
        '[ -n "$ver" ] || ver=2025-06-18; '
        f'res=\'"result":{{"protocolVersion":"\'$ver\'","capabilities":{capabilities},'
        '"serverInfo":{"name":"tether","version":"not installed"}}\';; '
        '*\'"method":"tools/list"\'*|*\'"method": "tools/list"\'*) res=\'"result":{"tools":[]}\';; '
        f"{prompts}"
        '*\'"method":"ping"\'*|*\'"method": "ping"\'*) res=\'"result":{}\';; '
        '*) res=\'"error":{"code":-32601,"message":"tether is not installed"}\';; '
        "esac; "
        'printf \'{"jsonrpc":"2.0","id":%s,%s}\\n\' "$rid" "$res"; '
        "done"
    )


STAND_IN = _stand_in(prompt=False)
GEMINI_STAND_IN = _stand_in(prompt=True)


def hook_script(agent: str, event: str) -> str:
    """The `sh -c` script of one committed hook."""
    script = f"{_FIND}{_FOUND}hook {agent} {event}; "
    if event == SESSION_START.get(agent):
        return script + "echo " + shlex.quote(json.dumps(_HINT_OUTPUT[agent]))
    return script + "exit 0"  # `command -v` failed: success, and nothing said


def hook_command(agent: str, event: str) -> str:
    """The shell command line of one committed hook: `sh -c '<hook_script>'`."""
    return shlex.join(["sh", "-c", hook_script(agent, event)])


def mcp_script(agent: str = "") -> str:
    """The `sh -c` script of the committed MCP server: `tether mcp`, or the stand-in (Gemini CLI's own)."""
    return f"{_FIND}{_FOUND}mcp; {GEMINI_STAND_IN if agent == 'gemini' else STAND_IN}"


def mcp_argv(agent: str = "") -> list[str]:
    return ["sh", "-c", mcp_script(agent)]


_SHELLS = frozenset({"sh", "bash", "dash", "zsh"})
_TETHER_CALL = re.compile(r'exec "\$tether_bin" (hook \S+ \S+|mcp)(?=;|$)')


def guarded_call(argv: Sequence[str]) -> list[str] | None:
    """For `sh -c SCRIPT` where SCRIPT is a guard of this module's shape: tether's own argv (`hook claude X`).

    >>> guarded_call(["sh", "-c", mcp_script()])
    ['mcp']
    """
    if len(argv) < 3 or argv[0].rsplit("/", 1)[-1] not in _SHELLS or argv[1] != "-c":
        return None
    script = argv[2]
    if BIN_VAR not in script:
        return None
    match = _TETHER_CALL.search(script)
    return match.group(1).split() if match else None


def plugin_launcher(version: str) -> str:
    """`plugins/tether/scripts/tether`: how the Claude Code plugin finds (or fetches) tether.

    In order: `$TETHER_BIN`, `tether` on PATH, then tether of the plugin's own version from PyPI through
    `uvx` or `pipx run` (cached after the first run, which downloads it). With none of them, the same
    fallbacks as committed commands: one hint at session start, the stand-in MCP server, silence.
    """
    hint = shlex.quote(json.dumps({"systemMessage": PLUGIN_HINT}))
    return f"""#!/bin/sh
# tether's Claude Code plugin runs tether through this script (written by tether.adapters.install.guard).
version={version}
if [ -n "${BIN_VAR}" ] && command -v "${BIN_VAR}" >/dev/null 2>&1; then exec "${BIN_VAR}" "$@"; fi
if command -v tether >/dev/null 2>&1; then exec tether "$@"; fi
if command -v uvx >/dev/null 2>&1; then exec uvx --quiet --from "tether==$version" tether "$@"; fi
if command -v pipx >/dev/null 2>&1; then exec pipx run --quiet --spec "tether==$version" tether "$@"; fi
case "$1 $3" in
"hook SessionStart") echo {hint} ;;
"mcp "*) {STAND_IN} ;;
esac
exit 0
"""
