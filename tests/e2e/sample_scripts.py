"""Tiny hooks and an MCP server that are not tether, written into a test's workspace to prove the harness."""

from __future__ import annotations

import json
from typing import Any

from .conftest import Workspace, python_command

# A hook that logs its stdin event (one JSON line) and prints a fixed answer (argv[2], may be empty).
RECORDING_HOOK = """\
import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(event) + "\\n")
if len(sys.argv) > 2:
    print(sys.argv[2])
"""


def recording_hook(workspace: Workspace, log_name: str, answer: dict[str, Any] | None = None) -> str:
    script = workspace.root / "hooks" / "record.py"
    if not script.exists():
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(RECORDING_HOOK)
    args = [str(workspace.root / log_name)] + ([json.dumps(answer)] if answer is not None else [])
    return python_command(script, *args)


def hook_events(workspace: Workspace, log_name: str) -> list[dict[str, Any]]:
    path = workspace.root / log_name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def context_answer(event: str, context: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


MCP_SERVER = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def lookup(topic: str) -> str:
    \"\"\"Look up a note by topic.\"\"\"
    with open(__file__ + ".calls", "a") as log:
        log.write(topic + "\\n")
    return f"NOTE-{topic}-3d8a: always run migrations first"


if __name__ == "__main__":
    server.run("stdio")
"""
