"""Rule files become memory: first import, idempotent re-run, edits, deletions, bad files, session-start
re-sync through the real hook, on nested rule files in a real git repository."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git
from tether.adapters import hooks
from tether.intake.rulefiles import split_rules
from tether.intake.rules import RENDER_VERSION, render, resync_if_changed, sync_rules
from tether.model.memory import Memory
from tether.store.base import Query
from tether.workspace import Workspace

AGENTS = """\
# Project rules

Read the docs before changing the API.

## Testing

- Use `pytest`; never mock the database.
- Run the suite with:
  ```sh
  make test
  ```

## Style

- Format with ruff.
- Keep functions under 50 lines.
"""

MDC = """\
---
description: API conventions
globs: src/app/upload.py, src/app/**/*.py, **/*.md, docs
alwaysApply: false
---
- Return JSON errors with a `code` field.
"""


def write(repo: Path, path: str, text: str | bytes) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")


@pytest.fixture
def rules_repo(repo: Path) -> Path:
    write(repo, "AGENTS.md", AGENTS)
    write(repo, "web/CLAUDE.md", "- Components live in `web/components/`.\n")
    write(repo, "web/app.ts", "export {}\n")
    write(repo, "docs/GEMINI.md", "Docs use sentence case headings.\n")
    write(repo, ".cursor/rules/api.mdc", MDC)
    write(repo, ".github/copilot-instructions.md", "Prefer small pull requests.\n")
    # Not this project's rules: a dependency's, and an ignored directory's.
    write(repo, "node_modules/pkg/AGENTS.md", "- Vendored rule.\n")
    write(repo, ".gitignore", "scratch/\nnode_modules/\n")
    write(repo, "scratch/AGENTS.md", "- Ignored rule.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rules")
    return repo


def rule_memories(ws: Workspace, status: tuple[str, ...] | None = ("active",)) -> dict[str, Memory]:
    return {m.summary: m for m in ws.find(Query(status=status, origin="rules:"))}


def by_summary(ws: Workspace, summary: str) -> Memory:
    (memory,) = [m for m in ws.find(Query(status=None, origin="rules:")) if m.summary == summary]
    return memory


def test_first_import(rules_repo: Path, ws: Workspace) -> None:
    report = sync_rules(ws)

    assert [f.path for f in report.files] == [
        ".cursor/rules/api.mdc",
        ".github/copilot-instructions.md",
        "AGENTS.md",
        "docs/GEMINI.md",
        "web/CLAUDE.md",
    ]
    assert sum(len(f.added) for f in report.files) == 9
    found = rule_memories(ws)
    assert set(found) == {
        "Read the docs before changing the API.",
        "Use `pytest`; never mock the database.",
        "Run the suite with:",
        "Format with ruff.",
        "Keep functions under 50 lines.",
        "Components live in `web/components/`.",
        "Docs use sentence case headings.",
        "Return JSON errors with a `code` field.",
        "Prefer small pull requests.",
    }
    suite = found["Run the suite with:"]
    assert suite.origin == "rules:AGENTS.md" and suite.category == "pref" and suite.files == ()
    assert suite.details == "```sh\nmake test\n```\n\nRule from AGENTS.md › Project rules > Testing"
    assert found["Components live in `web/components/`."].files == ("web/",)
    assert found["Docs use sentence case headings."].files == ("docs/",)
    assert found["Prefer small pull requests."].files == ()
    api = found["Return JSON errors with a `code` field."]
    # Plain globs are paths (a file, a directory), a wildcard glob is its literal directory, and a glob
    # with no literal directory narrows nothing; the globs themselves stay in the details.
    assert api.files == ("src/app/upload.py", "src/app/", "docs/")
    assert api.details.endswith("Applies to: src/app/upload.py, src/app/**/*.py, **/*.md, docs")
    assert api.origin == "rules:.cursor/rules/api.mdc"
    # Notes are written like any memory's: rules travel with the repository.
    assert Path(ws.store.note_path(suite.id) or "").is_file()


def test_rerun_changes_nothing(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    notes = {p: p.stat().st_mtime_ns for p in (rules_repo / ".tether" / "memories").glob("*.md")}
    before = {m.id: m for m in ws.find(Query(status=None, origin="rules:"))}

    report = sync_rules(ws)

    assert not any(f.changed for f in report.files) and report.removed_files == []
    assert sum(f.unchanged for f in report.files) == 9
    assert {m.id: m for m in ws.find(Query(status=None, origin="rules:"))} == before
    assert {p: p.stat().st_mtime_ns for p in notes} == notes


def test_edited_rule_updates_its_memory(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    old = by_summary(ws, "Use `pytest`; never mock the database.")
    ws.ack(old.id)

    write(
        rules_repo, "AGENTS.md", AGENTS.replace("never mock the database", "never mock the database or HTTP")
    )
    report = sync_rules(ws)

    (entry,) = [f for f in report.files if f.path == "AGENTS.md"]
    assert [m.id for m in entry.updated] == [old.id] and entry.added == [] and entry.archived == []
    new = ws.get(old.id)
    assert new.summary == "Use `pytest`; never mock the database or HTTP."
    assert new.status == "active"
    assert ws.store.telemetry([old.id])[old.id].acted == 1  # same memory: its history is kept
    assert len(rule_memories(ws)) == 9


def test_rewritten_rule_is_a_new_memory(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    old = by_summary(ws, "Keep functions under 50 lines.")
    write(
        rules_repo, "AGENTS.md", AGENTS.replace("Keep functions under 50 lines.", "Type-annotate every API.")
    )
    (entry,) = [f for f in sync_rules(ws).files if f.path == "AGENTS.md"]
    assert [m.summary for m in entry.added] == ["Type-annotate every API."]
    assert [m.id for m in entry.archived] == [old.id]


def test_deleted_rule_is_archived_and_comes_back(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    old = by_summary(ws, "Format with ruff.")
    write(rules_repo, "AGENTS.md", AGENTS.replace("- Format with ruff.\n", ""))

    (entry,) = [f for f in sync_rules(ws).files if f.path == "AGENTS.md"]

    assert [m.id for m in entry.archived] == [old.id]
    archived = ws.get(old.id)
    assert archived.status == "archived"  # never deleted
    assert Path(ws.store.note_path(old.id) or "").is_file()
    assert "Format with ruff." not in rule_memories(ws)

    write(rules_repo, "AGENTS.md", AGENTS)
    (entry,) = [f for f in sync_rules(ws).files if f.path == "AGENTS.md"]
    assert [m.id for m in entry.restored] == [old.id]
    assert ws.get(old.id).status == "active"


def test_a_person_archiving_a_rule_memory_is_respected(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    memory = by_summary(ws, "Prefer small pull requests.")
    ws.archive(memory.id, reason="rm")
    assert not any(f.changed for f in sync_rules(ws).files)
    assert ws.get(memory.id).status == "archived"


def test_deleted_rule_file_archives_all_its_rules(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    (rules_repo / "web" / "CLAUDE.md").unlink()
    report = sync_rules(ws)
    (gone,) = report.removed_files
    assert gone.path == "web/CLAUDE.md"
    assert [m.summary for m in gone.archived] == ["Components live in `web/components/`."]
    assert len(rule_memories(ws)) == 8


def test_a_moved_rule_file_keeps_its_memories_ids_and_usage(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    memory = by_summary(ws, "Components live in `web/components/`.")
    ws.ack(memory.id)
    write(rules_repo, "ui/app.ts", "export {}\n")
    git(rules_repo, "add", "-A")
    git(rules_repo, "mv", "web/CLAUDE.md", "ui/CLAUDE.md")
    report = sync_rules(ws)
    assert report.removed_files == []
    (entry,) = [f for f in report.files if f.path == "ui/CLAUDE.md"]
    assert [m.id for m in entry.moved] == [memory.id] and entry.added == []
    moved = ws.get(memory.id)
    assert (moved.origin, moved.files, moved.status) == ("rules:ui/CLAUDE.md", ("ui/",), "active")
    assert "ui/CLAUDE.md" in moved.details and "web/CLAUDE.md" not in moved.details
    assert ws.store.telemetry([memory.id])[memory.id].acted == 1
    assert not any(f.changed for f in sync_rules(ws).files)  # settled: nothing more to do


def test_a_moved_and_edited_rule_is_adopted_and_a_new_one_added(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    memory = by_summary(ws, "Components live in `web/components/`.")
    (rules_repo / "web" / "CLAUDE.md").unlink()
    write(rules_repo, "web/AGENTS.md", "- Components live in `web/components/`, one per file.\n- Use pnpm.\n")
    git(rules_repo, "add", "-A")
    (entry,) = [f for f in sync_rules(ws).files if f.path == "web/AGENTS.md"]
    assert [m.id for m in entry.moved] == [memory.id]
    assert [m.summary for m in entry.added] == ["Use pnpm."]
    assert ws.get(memory.id).summary == "Components live in `web/components/`, one per file."


def test_not_utf8_file_is_named_and_the_others_still_import(rules_repo: Path, ws: Workspace) -> None:
    write(rules_repo, "docs/GEMINI.md", b"- Caf\xe9 rules in Latin-1.\n")
    report = sync_rules(ws)
    (bad,) = [f for f in report.files if f.error]
    assert bad.path == "docs/GEMINI.md"
    assert (bad.error or "").startswith("docs/GEMINI.md: rule file is not UTF-8")
    assert report.errors == [bad.error]
    assert len(rule_memories(ws)) == 8  # every other rule

    # An unreadable file's memories are left alone, not archived as if its rules were removed.
    write(rules_repo, "docs/GEMINI.md", "Docs use sentence case headings.\n")
    sync_rules(ws)
    write(rules_repo, "docs/GEMINI.md", b"\xff\xfe broken")
    sync_rules(ws)
    assert "Docs use sentence case headings." in rule_memories(ws)


def test_rule_with_a_credential_is_skipped_with_a_warning(rules_repo: Path, ws: Workspace) -> None:
    token = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
    write(
        rules_repo,
        "web/CLAUDE.md",
        f"- Components live in `web/components/`.\n- Deploy with token {token}.\n",
    )
    (entry,) = [f for f in sync_rules(ws).files if f.path == "web/CLAUDE.md"]
    assert len(entry.added) == 1
    (warning,) = entry.warnings
    assert warning.startswith("web/CLAUDE.md:2: skipped a rule that looks like it holds a credential")
    assert token not in json.dumps([m.details for m in ws.find(Query(status=None))])


def test_rule_with_a_terminal_escape_is_skipped_with_a_warning(rules_repo: Path, ws: Workspace) -> None:
    write(rules_repo, "web/CLAUDE.md", "- Components live in `web/components/`.\n- Say \x1b[2J to clear.\n")
    (entry,) = [f for f in sync_rules(ws).files if f.path == "web/CLAUDE.md"]
    assert len(entry.added) == 1 and entry.error is None
    (warning,) = entry.warnings
    assert warning.startswith(
        "web/CLAUDE.md:2: skipped a rule: the rule contains the control character U+001B"
    )


def test_long_first_line_is_trimmed_into_the_summary() -> None:
    words = " ".join(f"word{n}" for n in range(40))
    (unit,) = split_rules("AGENTS.md", f"## Long\n\n- {words}\n  and a second line.\n")
    item = render(unit, Path("/nowhere"))
    assert len(item.summary) <= 160 and item.summary.endswith("…")
    assert item.details.startswith(words + "\nand a second line.")
    assert item.details.endswith("Rule from AGENTS.md › Long")


def test_resync_if_changed_is_a_no_op_until_a_rule_file_changes(rules_repo: Path, ws: Workspace) -> None:
    first = resync_if_changed(ws)
    assert first is not None and sum(len(f.added) for f in first.files) == 9
    assert resync_if_changed(ws) is None  # nothing changed: nothing done
    write(rules_repo, "web/CLAUDE.md", "- Components live in `web/ui/`.\n")
    again = resync_if_changed(ws)
    assert again is not None
    assert [m.summary for f in again.files for m in f.updated] == ["Components live in `web/ui/`."]
    assert resync_if_changed(ws) is None
    assert RENDER_VERSION  # part of the fingerprint: a new rendering re-syncs every project once


def test_resync_reads_only_the_rule_files_that_changed(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    write(rules_repo, "docs/GEMINI.md", "Docs use title case headings.\n")
    write(rules_repo, "web/CLAUDE.md", "- Components live in `web/ui/`.\n- Hooks live in `web/hooks/`.\n")
    again = resync_if_changed(ws)
    assert again is not None
    assert sorted(f.path for f in again.files) == ["docs/GEMINI.md", "web/CLAUDE.md"]  # not AGENTS.md & co
    assert sorted(m.summary for f in again.files for m in f.updated) == [
        "Components live in `web/ui/`.",
        "Docs use title case headings.",
    ]
    assert [m.summary for f in again.files for m in f.added] == ["Hooks live in `web/hooks/`."]
    assert resync_if_changed(ws) is None
    assert sum(len(f.added) for f in sync_rules(ws).files) == 0  # a full sync agrees: nothing left to do


def test_session_start_hook_resyncs_an_edited_rule(
    rules_repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOME", str(home))
    with Workspace.open(rules_repo, home=home) as ws:
        sync_rules(ws)
        memory = by_summary(ws, "Format with ruff.")
    write(rules_repo, "AGENTS.md", AGENTS.replace("Format with ruff.", "Format with ruff (line length 110)."))

    payload = {
        "session_id": "s",
        "cwd": str(rules_repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    out = io.StringIO()
    assert hooks.main(["claude", "SessionStart"], stdin=io.StringIO(json.dumps(payload)), stdout=out) == 0

    assert not (rules_repo / ".tether" / "logs" / "hooks.log").exists()
    with Workspace.open(rules_repo, home=home) as ws:
        assert ws.get(memory.id).summary == "Format with ruff (line length 110)."


def test_resync_skips_when_another_sync_holds_the_lock(rules_repo: Path, ws: Workspace) -> None:
    import fcntl

    lock = ws.paths.logs / "rules-sync.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        assert resync_if_changed(ws) is None  # another session is syncing: do not wait for it
    assert resync_if_changed(ws) is not None


def test_hand_broken_note_fails_its_file_only(rules_repo: Path, ws: Workspace) -> None:
    sync_rules(ws)
    ruff = by_summary(ws, "Format with ruff.")
    note = Path(ws.store.note_path(ruff.id) or "")
    note.write_text("---\nid: [broken\n---\n", encoding="utf-8")
    ws.sync()
    write(rules_repo, "AGENTS.md", AGENTS.replace("Format with ruff.", "Format with ruff, always."))
    write(rules_repo, "web/CLAUDE.md", "- Components live in `web/ui/`.\n")

    report = sync_rules(ws)

    (bad,) = [f for f in report.files if f.error]
    assert bad.path == "AGENTS.md" and str(note) in (bad.error or "")
    assert note.read_text(encoding="utf-8") == "---\nid: [broken\n---\n"  # never overwritten
    (web,) = [f for f in report.files if f.path == "web/CLAUDE.md"]
    assert [m.summary for m in web.updated] == ["Components live in `web/ui/`."]


_SYNC = """
import sys
from pathlib import Path
from tether.intake.rules import sync_rules
from tether.workspace import Workspace
with Workspace.open(Path(sys.argv[1]), home=Path(sys.argv[2])) as ws:
    sync_rules(ws)
"""


def test_concurrent_syncs_import_each_rule_once(rules_repo: Path, home: Path, ws: Workspace) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _SYNC, str(rules_repo), str(home)]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    ws.sync()
    assert len(ws.find(Query(status=None, origin="rules:"))) == 9
    assert len(list((rules_repo / ".tether" / "memories").glob("*.md"))) == 9
