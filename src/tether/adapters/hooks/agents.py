"""Agent adapters: each agent's hook JSON in, a `HookEvent` out; a `Reply` in, the agent's JSON out.

Formats: `../shared/reference/agent-integrations.md` §1 (Claude Code), §2.3 (Codex), §3.2 (Cursor),
§4.3 (Gemini), checked against the real Claude Code in `tests/e2e`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tether.adapters.hooks.behaviour import MEMORY_TOOLS, HookEvent, Reply

AGENTS = ("claude", "codex", "cursor", "gemini")

# Claude Code caps hook output at 10,000 characters and saves the rest to a file; stay under it.
MAX_CONTEXT_CHARS = 9500

_READ_TOOLS = {"Read", "NotebookRead", "read_file", "read_many_files", "view"}
_EDIT_TOOLS = {
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "apply_patch",
    "write_file",
    "replace",
    "edit_file",
    "search_replace",
}
_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)

# Agents whose pre-edit hook cannot add context (agent-integrations.md §4.3: Gemini's BeforeTool has no
# `additionalContext`; §3.2: Cursor's preToolUse answers a permission only): there, only a deny is seen.
_NO_CONTEXT_BEFORE_EDIT = frozenset({"gemini", "cursor"})

# event name → kind, per agent
_EVENTS: dict[str, dict[str, str]] = {
    "claude": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "PreToolUse": "before_edit",
        "PostToolUse": "after_tool",
        "Stop": "stop",
        "SessionEnd": "session_end",
        "PreCompact": "stop",
    },
    "codex": {
        "SessionStart": "session_start",
        "UserPromptSubmit": "prompt",
        "PreToolUse": "before_edit",
        "PostToolUse": "after_tool",
        "Stop": "stop",
        "PreCompact": "stop",
        "SessionEnd": "session_end",
    },
    "cursor": {
        "sessionStart": "session_start",
        "beforeSubmitPrompt": "prompt_gate",
        "preToolUse": "before_edit",
        "postToolUse": "after_tool",
        "afterFileEdit": "after_tool",
        "stop": "stop",
        "sessionEnd": "session_end",
        "preCompact": "stop",
    },
    "gemini": {
        "SessionStart": "session_start",
        "BeforeAgent": "prompt",
        "BeforeTool": "before_edit",
        "AfterTool": "after_tool",
        "AfterAgent": "stop",
        "SessionEnd": "session_end",
        "PreCompress": "stop",
    },
}


def known_event(agent: str, event: str) -> bool:
    return event in _EVENTS.get(agent, {})


def parse(agent: str, event_name: str, payload: dict[str, Any]) -> HookEvent:
    kind = _EVENTS[agent].get(event_name, "other")
    if agent == "cursor":
        roots = payload.get("workspace_roots") or []
        cwd = Path(str(roots[0] if roots else payload.get("cwd") or Path.cwd()))
        session = str(payload.get("conversation_id") or payload.get("session_id") or "cursor")
    else:
        cwd = Path(str(payload.get("cwd") or Path.cwd()))
        session = str(payload.get("session_id") or f"{agent}-unknown")
    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    assert isinstance(tool_input, dict)
    paths = _paths(tool, tool_input, payload)
    if agent == "cursor" and event_name == "afterFileEdit":
        tool = tool or "Edit"
    event = HookEvent(
        kind=kind,
        session=session,
        cwd=cwd,
        prompt=str(payload.get("prompt") or ""),
        tool=tool,
        tool_kind=_tool_kind(tool),
        paths=paths,
        transcript=str(payload.get("transcript_path") or ""),
        source=str(payload.get("source") or ""),
        shows_context=not (kind == "before_edit" and agent in _NO_CONTEXT_BEFORE_EDIT),
    )
    if event.tool_kind == "read" and len(paths) == 1:
        event.read_lines = read_span(agent, tool_input)
    if kind == "after_tool" and event.tool_kind == "edit" and agent in _NO_CONTEXT_BEFORE_EDIT:
        event.unwarned_edit = True  # its pre-edit context was dropped: the edit's gotchas come now
    if kind == "before_edit" and event.tool_kind != "edit":
        event.kind = "other"  # a guard installed on too wide a matcher must not touch other tools
    elif kind == "before_edit":
        from tether.anchors.edits import from_payload  # an edit's hook only: anchors load there

        event.edits = from_payload(tool, tool_input, payload)  # located in the files by `behaviour`
    return event


def render(agent: str, event_name: str, event: HookEvent, reply: Reply) -> dict[str, Any] | None:
    """The JSON the agent expects on stdout, or None for no output."""
    context = reply.context[:MAX_CONTEXT_CHARS]
    if agent == "cursor":
        if reply.deny:
            return {
                "permission": "deny",
                "agent_message": reply.deny,
                "user_message": "tether: this file has known gotchas (see the agent's message)",
            }
        if event.kind == "prompt_gate":
            return {"continue": True}
        return {"additional_context": context} if context else None
    if agent == "gemini":
        if reply.deny:
            return {"decision": "deny", "reason": reply.deny}
        if context and event.kind != "before_edit":
            return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}
        return None
    # Claude Code and Codex share a format.
    if reply.deny:
        return {
            "hookSpecificOutput": {
                "hookEventName": event_name,
                "permissionDecision": "deny",
                "permissionDecisionReason": reply.deny,
            }
        }
    if context:
        return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}
    if agent == "codex" and event.kind == "stop":
        return {}  # Codex requires JSON from a Stop hook that exits 0
    return None


def read_span(agent: str, tool_input: dict[str, Any]) -> tuple[int, int] | None:
    """The lines a read asked for (first, last; 1-based), or None for the whole file: Claude Code's and
    Cursor's `Read` take a 1-based `offset`, Gemini's `read_file` a 0-based one, each with a line `limit`
    (agent-integrations.md §1, §4.3). Anything else an agent sends (strings, negatives, floats) is no range.

    >>> read_span("claude", {"file_path": "a.py", "offset": 120, "limit": 40})
    (120, 159)
    >>> read_span("gemini", {"file_path": "a.py", "offset": 0, "limit": 10}), read_span("claude", {"limit": "9"})
    ((1, 10), None)
    """
    offset, limit = tool_input.get("offset"), tool_input.get("limit")
    if offset is None and limit is None:
        return None
    if not all(v is None or (type(v) is int and 0 <= v < 1 << 31) for v in (offset, limit)):
        return None
    first = (offset or 0) + (1 if agent == "gemini" else 0)
    first = max(first, 1)
    if limit is None:
        return (first, 1 << 31)
    return (first, first + limit - 1) if limit > 0 else None


def _tool_kind(tool: str) -> str:
    base = tool.split("__")[-1].split(":")[-1]
    if base in MEMORY_TOOLS or any(tool.endswith(t) for t in MEMORY_TOOLS):
        return "memory"
    if tool in _READ_TOOLS:
        return "read"
    if tool in _EDIT_TOOLS:
        return "edit"
    return "other"


def _paths(tool: str, tool_input: dict[str, Any], payload: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for key in ("file_path", "notebook_path", "path", "absolute_path"):
        value = (
            tool_input.get(key) if key in tool_input else (payload.get(key) if key == "file_path" else None)
        )
        if isinstance(value, str) and value:
            found.append(value)
    paths = tool_input.get("paths") or tool_input.get("file_paths")
    if isinstance(paths, list):
        found.extend(str(p) for p in paths if isinstance(p, str))
    command = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
    if tool == "apply_patch" and isinstance(command, str):
        for match in _PATCH_FILE_RE.finditer(command):
            found.append((match.group(1) or match.group(2)).strip())
    return found
