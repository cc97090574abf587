"""`tether rules adopt` inside the real Claude Code: what the agent sends the model before and after.

Adopt writes `claudeMdExcludes` (absolute paths) into `.claude/settings.local.json`. These tests check,
against Claude Code itself, that the excluded CLAUDE.md files are no longer in the request, that tether's
core and recalled rules are, and that `--undo` brings the native loading back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import RunClaude, Workspace
from .mock_anthropic import text

pytestmark = pytest.mark.e2e

CORE_HEADER = "=== Project rules (core; the rule files are delivered by tether) ==="
# A gotcha of the root file: adopt's core carries it at session start.
ROOT_GOTCHA = "Never call the payments sandbox from unit tests; use FakeGateway instead."
# A plain preference no unrelated prompt recalls: present only when Claude Code loads the file itself.
ROOT_PREF = "Keep commit subjects under seventy characters, written like a changelog line."
NESTED_RULE = "Widgets under ui/ render through the Zephyr templating layer only."
CLAUDE_MD = f"# Project rules\n\n- {ROOT_GOTCHA}\n- {ROOT_PREF}\n"
NESTED_MD = f"# UI rules\n\n- {NESTED_RULE}\n"


def tether(ws: Workspace, *args: str) -> str:
    return ws.run("tether", *args)


def sent(body: dict[str, Any]) -> str:
    """Everything one request carries (system prompt, messages), as one JSON text."""
    return json.dumps(body, ensure_ascii=False)


def first_request(run_claude: RunClaude, ws: Workspace, prompt: str) -> str:
    run = run_claude(ws.repo, ws.home, prompt, [[text("ok")]])
    assert run.returncode == 0, run.describe()
    return sent(run.requests[0])


def project(ws: Workspace) -> None:
    ws.write("CLAUDE.md", CLAUDE_MD)
    ws.write("ui/CLAUDE.md", NESTED_MD)
    ws.write("ui/widget.py", "def render():\n    return zephyr.render('w')\n")
    tether(ws, "init")
    tether(ws, "rules", "sync")
    tether(ws, "install", "claude", "--project")
    ws.commit("rules and tether")


def test_adopt_stops_native_loading_and_undo_brings_it_back(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    project(workspace)
    prompt = "Summarise the README in one line."
    before = first_request(run_claude, workspace, prompt)
    # Natively Claude Code sends the root CLAUDE.md whole.
    assert ROOT_PREF in before and ROOT_GOTCHA in before
    assert CORE_HEADER not in before

    adopted = json.loads(tether(workspace, "rules", "adopt", "--json"))
    local = workspace.repo / ".claude" / "settings.local.json"
    assert (
        json.loads(local.read_text())["claudeMdExcludes"]
        == sorted([str(workspace.repo / "CLAUDE.md"), str(workspace.repo / "ui" / "CLAUDE.md")])
        == adopted["excluded"]
    )

    after = first_request(run_claude, workspace, prompt)
    # The file's own text is gone; the core (the root file's gotcha) arrives through tether's hook.
    assert ROOT_PREF not in after, after
    assert CORE_HEADER in after and ROOT_GOTCHA in after

    tether(workspace, "rules", "adopt", "--undo")
    assert not local.exists()
    undone = first_request(run_claude, workspace, prompt)
    assert ROOT_PREF in undone and ROOT_GOTCHA in undone
    assert CORE_HEADER not in undone


def test_an_excluded_nested_rule_file_is_delivered_by_recall_when_its_files_are_touched(
    workspace: Workspace, run_claude: RunClaude
) -> None:
    project(workspace)
    nested = "Contents of " + str(workspace.repo / "ui" / "CLAUDE.md")
    read = {
        "type": "tool_use",
        "id": "toolu_read_widget",
        "name": "Read",
        "input": {"file_path": str(workspace.repo / "ui" / "widget.py")},
    }

    def everything_sent() -> str:
        run = run_claude(
            workspace.repo, workspace.home, "How does the widget render?", [[dict(read)], [text("ok")]]
        )
        assert run.returncode == 0, run.describe()
        return "\n".join(sent(body) for body in run.requests)

    # Natively Claude Code loads a nested CLAUDE.md once a file under it is read.
    assert nested in everything_sent()
    tether(workspace, "rules", "adopt")
    adopted = everything_sent()
    # Excluded, it is not loaded; the rule reaches the model through tether's recall instead.
    assert nested not in adopted, adopted
    assert NESTED_RULE in adopted
