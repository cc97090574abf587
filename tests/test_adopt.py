"""`tether rules adopt` and its undo: Claude Code's local settings exclude the CLAUDE.md files, a bounded
core is injected at session start, and undo restores the settings file byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from tether.adapters.hooks.behaviour import HookEvent, session_start
from tether.adapters.install.adopt import SETTINGS, adopt_claude, undo
from tether.errors import ValidationError
from tether.intake import adopt as adoption
from tether.intake.rules import sync_rules
from tether.workspace import Workspace

CLAUDE = """\
# Project

- Never commit `.env` files.
- Keep functions short and named for what they return.
<!-- tether: core -->
- Every public function has a docstring with an example.
- Run `make test` before pushing.
"""


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "CLAUDE.md").write_text(CLAUDE, encoding="utf-8")
    (repo / "web").mkdir()
    (repo / "web" / "CLAUDE.md").write_text("- Never import server code in `web/`.\n", encoding="utf-8")
    (repo / "web" / "AGENTS.md").write_text("- Components live in `web/components/`.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rules")
    return repo


def test_adopt_excludes_claude_md_files_and_keeps_a_core(project: Path, ws: Workspace) -> None:
    sync_rules(ws)
    record = adopt_claude(ws)
    settings = json.loads((project / SETTINGS).read_text())
    assert settings["claudeMdExcludes"] == [str(project / "CLAUDE.md"), str(project / "web" / "CLAUDE.md")]
    core = [ws.get(mid).summary for mid in record.core]
    # Marked first, then the root file's gotchas; a nested file's gotcha is left to recall and hints.
    assert core == ["Every public function has a docstring with an example.", "Never commit `.env` files."]
    reply = session_start(ws, HookEvent("session_start", "s1", project))
    assert adoption.CORE_HEADER in reply.context and "Never commit `.env` files." in reply.context
    assert "Run `make test`" not in reply.context


def test_the_core_is_bounded(project: Path, ws: Workspace) -> None:
    sync_rules(ws)
    assert len(adoption.choose_core(ws, budget=80)) == 1


def test_undo_restores_the_settings_byte_for_byte(project: Path, ws: Workspace) -> None:
    original = (
        '{\n    "permissions": {"allow": ["Bash(ls)"]},\n    "claudeMdExcludes": ["/elsewhere/CLAUDE.md"]\n}'
    )
    (project / ".claude").mkdir()
    (project / SETTINGS).write_text(original, encoding="utf-8")
    sync_rules(ws)
    adopt_claude(ws)
    adopt_claude(ws)  # again: idempotent, and undo still goes back to the very first state
    assert json.loads((project / SETTINGS).read_text())["claudeMdExcludes"][0] == "/elsewhere/CLAUDE.md"
    assert undo(ws) and (project / SETTINGS).read_bytes() == original.encode()
    assert adoption.load(ws) == [] and undo(ws) == []


def test_undo_removes_what_adopt_created(project: Path, ws: Workspace) -> None:
    sync_rules(ws)
    adopt_claude(ws)
    assert (project / SETTINGS).is_file()
    undo(ws)
    assert not (project / ".claude").exists()
    reply = session_start(ws, HookEvent("session_start", "s2", project))
    assert adoption.CORE_HEADER not in reply.context


def test_undo_after_someone_else_edited_keeps_their_change(project: Path, ws: Workspace) -> None:
    sync_rules(ws)
    adopt_claude(ws)
    data = json.loads((project / SETTINGS).read_text())
    data["model"] = "opus"
    (project / SETTINGS).write_text(json.dumps(data), encoding="utf-8")
    (line,) = undo(ws)
    assert "changed since adopt" in line
    assert json.loads((project / SETTINGS).read_text()) == {"model": "opus"}


def test_the_command_adopts_and_undoes(project: Path, tether: Any) -> None:
    tether("init")
    adopted = tether("rules", "adopt", "--json")
    assert adopted.code == 0, adopted.err
    out = json.loads(adopted.out)
    assert out["excluded"] == [str(project / "CLAUDE.md"), str(project / "web" / "CLAUDE.md")] and out["core"]
    undone = tether("rules", "adopt", "--undo")
    assert undone.code == 0 and "removed (adopt had created it)" in undone.out
    assert not (project / SETTINGS).exists()


def test_a_settings_file_that_is_no_file_is_refused_not_read(
    project: Path, ws: Workspace, tmp_path: Path
) -> None:
    # A clone can hold anything under that name: a FIFO would hang adopt, a symlink would leak or clobber.
    (project / ".claude").mkdir()
    os.mkfifo(project / SETTINGS)
    sync_rules(ws)
    with pytest.raises(ValidationError, match=r"settings\.local\.json: cannot read it"):
        adopt_claude(ws)
    assert adoption.load(ws) == []
