"""Importing from other tools: basic-memory notes, the MCP memory server's JSON lines, Claude Code's notes
(imported, and read in place from `.tether/memories/`), on real files in a real workspace and through the
real CLI; wikilinks resolving by title."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Run, note_files
from tether.errors import ValidationError
from tether.intake.foreign import import_memories, parse_basic_memory, parse_mcp_memory
from tether.store.base import Query
from tether.workspace import Workspace

TOKEN = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"

BREWING = """\
---
title: Coffee Brewing Methods
type: note
permalink: coffee/coffee-brewing-methods
tags:
- coffee
- brewing
---

# Coffee Brewing Methods

How the team brews.

## Observations
- [method] Pour over gives more clarity #brewing
- [decision] The office uses a V60, not a French press #gear (cheaper filters)
- [gotcha] The grinder jams on oily beans
- [ ] a checkbox, not an observation

## Relations
- relates_to [[Coffee Bean Origins]]
"""

ORIGINS = """\
---
title: Coffee Bean Origins
type: note
aliases: [Beans]
---

Ethiopian beans are fruity.
"""


def basic_memory(tmp_path: Path) -> Path:
    folder = tmp_path / "bm"
    (folder / "coffee").mkdir(parents=True)
    (folder / "coffee" / "brewing.md").write_text(BREWING, encoding="utf-8")
    (folder / "coffee" / "origins.md").write_text(ORIGINS, encoding="utf-8")
    return folder


def test_basic_memory_notes_and_their_decisive_observations(tmp_path: Path) -> None:
    memories = {m.summary: m for m in parse_basic_memory(basic_memory(tmp_path))}
    assert sorted(memories) == [
        "Coffee Bean Origins",
        "Coffee Brewing Methods",
        "The grinder jams on oily beans",
        "The office uses a V60, not a French press",
    ]
    note = memories["Coffee Brewing Methods"]
    assert note.category == "context" and note.details.startswith("How the team brews.")
    assert "- [method] Pour over gives more clarity #brewing" in note.details  # kept as written
    # Tags and aliases are fields of the memory (frontmatter of its note), not text in the details.
    assert note.tags == ("coffee", "brewing") and "Tags:" not in note.details
    assert note.links == ("Coffee Bean Origins",)
    decision = memories["The office uses a V60, not a French press"]
    assert decision.category == "decision"
    assert decision.details == "cheaper filters\n\nFrom [[Coffee Brewing Methods]]" and decision.tags == (
        "gear",
    )
    assert memories["The grinder jams on oily beans"].category == "gotcha"
    assert memories["Coffee Bean Origins"].aliases == ("Beans",)
    assert {m.origin for m in memories.values()} == {"agent"}


def test_basic_memory_import_is_idempotent_and_links_resolve_by_title(ws: Workspace, tmp_path: Path) -> None:
    folder = basic_memory(tmp_path)
    dry = import_memories(ws, parse_basic_memory(folder), dry_run=True)
    assert len(dry.new) == 4 and ws.find(Query(status=None)) == []  # a dry run writes nothing
    first = import_memories(ws, parse_basic_memory(folder))
    assert len(first.new) == 4 and first.present == 0
    again = import_memories(ws, parse_basic_memory(folder))
    assert again.new == [] and again.present == 4
    assert import_memories(ws, parse_basic_memory(folder), dry_run=True).present == 4
    (brewing,) = [m for m in ws.find() if m.summary == "Coffee Brewing Methods"]
    (origins,) = [m for m in ws.find() if m.summary == "Coffee Bean Origins"]
    outgoing, _ = ws.links(brewing)
    assert origins in outgoing
    _, incoming = ws.links(origins)
    assert brewing in incoming


def test_a_credential_is_refused_and_the_rest_imported(ws: Workspace, tmp_path: Path) -> None:
    folder = basic_memory(tmp_path)
    (folder / "ci.md").write_text(f"---\ntitle: CI token\n---\nThe token is {TOKEN}\n", encoding="utf-8")
    report = import_memories(ws, parse_basic_memory(folder))
    assert len(report.new) == 4
    (skipped,) = report.skipped
    assert skipped.startswith("CI token: refused") and "GitHub" in skipped
    assert not any(m.summary == "CI token" for m in ws.find(Query(status=None)))


MCP_LINES = [
    {
        "type": "entity",
        "name": "Payments service",
        "entityType": "service",
        "observations": ["Retries twice"],
    },
    {"type": "entity", "name": "Ledger", "entityType": "service", "observations": []},
    {"type": "relation", "from": "Payments service", "to": "Ledger", "relationType": "writes_to"},
    {"type": "relation", "from": "Nobody", "to": "Ledger", "relationType": "reads"},
    {"type": "something-else"},
]


def mcp_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in MCP_LINES) + "\n", encoding="utf-8")
    return path


def test_mcp_memory_entities_with_observations_and_relations(tmp_path: Path) -> None:
    log: list[str] = []
    memories = {m.summary: m for m in parse_mcp_memory(mcp_file(tmp_path), log=log.append)}
    assert sorted(memories) == ["Ledger", "Payments service"]
    assert (
        memories["Payments service"].details == "Type: service\n\n- Retries twice\n\n- writes_to [[Ledger]]"
    )
    assert memories["Ledger"].details == "Type: service"
    assert len(log) == 2 and "line 5" in log[0] and "unknown entity 'Nobody'" in log[1]


def test_mcp_memory_line_that_is_not_json_imports_nothing(tmp_path: Path) -> None:
    path = mcp_file(tmp_path)
    path.write_text(path.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="line 6: not JSON"):
        parse_mcp_memory(path)


def test_import_into_user_scope(ws: Workspace, tmp_path: Path) -> None:
    report = import_memories(ws, parse_mcp_memory(mcp_file(tmp_path)), scope="user")
    assert {m.scope for m in report.new} == {"user"} and len(report.new) == 2


# -- through the CLI ------------------------------------------------------------------------------------


@pytest.fixture
def run(tether: Callable[..., Run]) -> Callable[..., Run]:
    return tether


def test_cli_dry_run_then_import_with_plural_counts(
    run: Callable[..., Run], repo: Path, tmp_path: Path
) -> None:
    path = mcp_file(tmp_path)
    dry = run("import", "--from", "mcp-memory", str(path), "--dry-run")
    assert dry.code == 0, dry.err
    assert f"would import 2 memories from {path} (0 already present, 2 skipped)" in dry.out
    assert "+ " in dry.out and "Payments service" in dry.out and note_files(repo) == []
    done = run("import", "--from", "mcp-memory", str(path))
    assert f"imported 2 memories from {path}" in done.out and len(note_files(repo)) == 2
    again = run("import", "--from", "mcp-memory", str(path), "--json")
    data = json.loads(again.out)
    assert (data["new"], data["present"]) == ([], 2)
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(MCP_LINES[1] | {"name": "Queue"}) + "\n", encoding="utf-8")
    assert (
        f"imported 1 memory from {one} (0 already present, 0 skipped)"
        in run("import", "--from", "mcp-memory", str(one)).out
    )


def test_cli_basic_memory_needs_a_path(run: Callable[..., Run], repo: Path) -> None:
    result = run("import", "--from", "basic-memory")
    assert result.code == 2 and "needs a PATH" in result.err


def test_claude_notes_in_tether_memories_are_memories_without_a_warning(
    run: Callable[..., Run], repo: Path
) -> None:
    notes = repo / ".tether" / "memories"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "testing.md").write_text(
        "---\nname: testing\ndescription: Integration tests hit a real database\ntype: feedback\n---\n"
        "Never mock the database.\n",
        encoding="utf-8",
    )
    listed = run("list", "--json")
    assert listed.code == 0 and "warning" not in listed.err.lower(), listed.err
    (memory,) = json.loads(listed.out)
    assert (memory["summary"], memory["category"], memory["origin"]) == (
        "Integration tests hit a real database",
        "pref",
        "agent",
    )
    assert memory["details"] == "Never mock the database."
    again = json.loads(run("list", "--json").out)
    assert [m["id"] for m in again] == [memory["id"]]  # the same id on every read


# -- claude-mem ---------------------------------------------------------------------------------------------

# The observations table as claude-mem's schema.sql has it (migration 35), trimmed to the columns read.
CLAUDE_MEM_SCHEMA = """
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT, memory_session_id TEXT NOT NULL, project TEXT NOT NULL, text TEXT,
  type TEXT NOT NULL, title TEXT, subtitle TEXT, facts TEXT, narrative TEXT, concepts TEXT, files_read TEXT,
  files_modified TEXT, content_hash TEXT, created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL
);
"""


def claude_mem_db(tmp_path: Path, repo: Path) -> Path:
    import sqlite3

    path = tmp_path / "claude-mem.db"
    conn = sqlite3.connect(path)
    conn.executescript(CLAUDE_MEM_SCHEMA)
    rows = [
        (
            repo.name,
            "decision",
            "Uploads are chunked at 5 MB",
            "Proxy limit",
            json.dumps(["The proxy drops bodies over 5 MB"]),
            "We chose chunking over raising the proxy limit.",
            json.dumps(["uploads", "proxy"]),
            json.dumps([str(repo / "src" / "app.py"), "/elsewhere/x.py"]),
        ),
        (repo.name, "bugfix", "Fixed the flaky upload test", None, None, None, None, None),
        ("another-project", "decision", "Not this repository's", None, None, None, None, None),
    ]
    conn.executemany(
        "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts,"
        " files_modified, created_at, created_at_epoch) VALUES ('s', ?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01', 0)",
        rows,
    )
    conn.commit()
    conn.close()
    return path


def test_claude_mem_observations_of_this_project(run: Callable[..., Run], repo: Path, tmp_path: Path) -> None:
    db = claude_mem_db(tmp_path, repo)
    dry = run("import", "--from", "claude-mem", str(db), "--dry-run")
    assert dry.code == 0, dry.err
    assert f"would import 2 memories from {db}" in dry.out and note_files(repo) == []
    done = run("import", "--from", "claude-mem", str(db), "--json")
    data = json.loads(done.out)
    assert sorted(m["summary"] for m in data["new"]) == [
        "Fixed the flaky upload test",
        "Uploads are chunked at 5 MB",
    ]
    listed = {m["summary"]: m for m in json.loads(run("list", "--json").out)}
    decision = listed["Uploads are chunked at 5 MB"]
    assert decision["category"] == "decision" and decision["files"] == ["src/app.py"]
    assert decision["details"] == (
        "Proxy limit\n\nWe chose chunking over raising the proxy limit.\n\n- The proxy drops bodies over 5 MB"
    )
    assert decision["tags"] == ["uploads", "proxy"]
    assert listed["Fixed the flaky upload test"]["category"] == "context"
    assert "0 memories" in run("import", "--from", "claude-mem", str(db)).out  # idempotent
    other = run("import", "--from", "claude-mem", str(db), "--project", "another-project", "--dry-run")
    assert "would import 1 memory" in other.out


def test_claude_mem_wrong_database_is_named(run: Callable[..., Run], repo: Path, tmp_path: Path) -> None:
    not_db = tmp_path / "notes.db"
    not_db.write_text("hello", encoding="utf-8")
    result = run("import", "--from", "claude-mem", str(not_db))
    assert result.code == 1 and f"{not_db}: not a readable SQLite database" in result.err
    missing = run("import", "--from", "claude-mem", str(tmp_path / "nope.db"))
    assert missing.code == 1 and "no such database file" in missing.err
