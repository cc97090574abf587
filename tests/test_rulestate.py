"""Whether the rule files changed since their last sync, checked without the sync's own modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.intake.rules import sync_rules
from tether.intake.rulestate import fingerprint, rule_files, unchanged
from tether.workspace import Workspace


def test_an_edited_rule_file_is_a_change_and_a_sync_makes_it_none(repo: Path, ws: Workspace) -> None:
    (repo / "AGENTS.md").write_text("# Rules\n\n- Use ruff format.\n", encoding="utf-8")
    assert rule_files(ws) == ["AGENTS.md"]
    assert not unchanged(ws)
    sync_rules(ws)
    assert unchanged(ws)
    before = fingerprint(repo, ["AGENTS.md"])
    (repo / "AGENTS.md").write_text(
        "# Rules\n\n- Use ruff format.\n- Never push to main.\n", encoding="utf-8"
    )
    assert fingerprint(repo, ["AGENTS.md"]) != before
    assert not unchanged(ws)


def test_the_check_loads_no_markdown_parser() -> None:
    # What a session start's check imports: the sync, the rule parser and the secret rules stay unloaded.
    code = (
        "import sys, tether.intake.rulestate\n"
        "print(sorted(m for m in ('tether.intake.rules', 'tether.intake.ruletext', 'tether.model.secrets')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
