"""The lifecycle and intake commands end to end through `tether.adapters.cli.main.main`: stats, cleanup, maintain,
rules sync, seed, import, distill against a loopback Anthropic endpoint, purge, supersede and ack."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, make_git_repo, note_files
from tether import lifecycle
from tether.store.base import Query
from tether.workspace import Workspace

UPLOAD = "src/app/upload.py"


@pytest.fixture
def run(tether: Callable[..., Run]) -> Callable[..., Run]:
    """`tether ARGS` in-process, with this issue's commands on the group (as `tether.adapters.cli.main` registers them)."""
    from tether.adapters.cli.lifecycle import COMMANDS
    from tether.adapters.cli.main import cli

    for command in COMMANDS:
        if cli.commands.get(command.name or "") is not command:
            cli.add_command(command)
    return tether


def opened(repo: Path, home: Path, when: datetime | None = None) -> Workspace:
    return Workspace.open(repo, home=home, clock=(lambda: when) if when else None)


def ok(result: Run) -> Run:
    assert result.code == 0, (result.out, result.err)
    return result


# -- stats, cleanup, maintain -------------------------------------------------------------------------


def test_stats_json_and_text(run: Callable[..., Run], repo: Path, home: Path) -> None:
    with opened(repo, home) as ws:
        used = ws.add("Upload needs auth", category="gotcha", files=[UPLOAD]).memory
        ignored = ws.add("Upload owner is infra", category="context", files=[UPLOAD]).memory
    ok(run("recall", "--file", UPLOAD, "--session", "a", "--turn", "1"))
    ok(run("ack", used.id, "--session", "a"))

    data = json.loads(ok(run("stats", "--json")).out)
    assert data["categories"]["gotcha"] == {
        "active": 1,
        "archived": 0,
        "superseded": 0,
        "surfaced": 1,
        "acted": 1,
        "follow_through": 1.0,
    }
    assert data["categories"]["context"]["follow_through"] == 0.0
    assert [m["id"] for m in data["most_ignored"]] == [ignored.id]
    assert [m["id"] for m in data["most_used"]] == [used.id]

    text = ok(run("stats")).out
    assert "gotcha" in text and "100%" in text and f"{ignored.id}  shown 1, used 0" in text


def stale_memories(repo: Path, home: Path, count: int = 3) -> list[str]:
    """Memories written 200 days ago (by the workspace clock) and never used since."""
    then = datetime.now(UTC).replace(microsecond=0) - timedelta(days=200)
    with opened(repo, home, then) as ws:
        ids = [ws.add(f"Old convention {n} for the reports").memory.id for n in range(count)]
        ws.add("Pinned and old, never a candidate", pinned=True)
    return ids


def test_cleanup_json_lists_without_marking_a_pass(run: Callable[..., Run], repo: Path, home: Path) -> None:
    ids = stale_memories(repo, home)
    listed = json.loads(ok(run("cleanup", "--json")).out)
    assert sorted(c["id"] for c in listed) == sorted(ids)
    assert all(c["reasons"] == ["not used for 200 days"] for c in listed)
    with opened(repo, home) as ws:
        assert ws.store.get_meta(lifecycle.META_LAST_PASS) is None
        assert len(ws.find()) == 4


def test_cleanup_yes_archives_all_and_marks_the_pass(run: Callable[..., Run], repo: Path, home: Path) -> None:
    ids = stale_memories(repo, home)
    out = ok(run("cleanup", "--yes")).out
    assert "archived 3 of 3 candidates" in out
    with opened(repo, home) as ws:
        assert {ws.get(i).status for i in ids} == {"archived"}
        assert ws.store.get_meta(lifecycle.META_LAST_PASS) is not None
    assert "no stale memories" in ok(run("cleanup")).out


def test_cleanup_interactive_selection(run: Callable[..., Run], repo: Path, home: Path) -> None:
    stale_memories(repo, home, count=4)
    listed = [c["id"] for c in json.loads(ok(run("cleanup", "--json")).out)]
    result = ok(run("cleanup", input="7\n1 3-4\n"))
    assert "out of range: choose between 1 and 4" in result.err  # asked again
    assert "archived 3 of 4 candidates" in result.out
    with opened(repo, home) as ws:
        statuses = [ws.get(i).status for i in listed]
    assert statuses == ["archived", "active", "archived", "archived"]


def test_cleanup_nothing_chosen_archives_nothing(run: Callable[..., Run], repo: Path, home: Path) -> None:
    ids = stale_memories(repo, home, count=2)
    assert "archived 0 of 2" in ok(run("cleanup", input="\n")).out
    with opened(repo, home) as ws:
        assert {ws.get(i).status for i in ids} == {"active"}


def test_maintain_archives_ignored_memories(run: Callable[..., Run], repo: Path, home: Path) -> None:
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=60)
    with opened(repo, home, start) as ws:
        memory = ws.add("Upload chunks are 8 MB", files=[UPLOAD]).memory
        pulled = ws.add("Deploys go through the release branch").memory
        ws.ack(pulled.id)  # one pull in six showings: six unpulled showings make a memory ignored

    for day in range(0, 60, 10):
        with opened(repo, home, start + timedelta(days=day)) as ws:
            ws.recaller().recall("", [UPLOAD], session=f"d{day}", turn=1)
    result = ok(run("maintain"))
    assert f"archived (ignored): {memory.id}" in result.out
    assert "nothing to do" in ok(run("maintain")).out
    ok(run("restore", memory.id))
    assert json.loads(ok(run("maintain", "--json")).out)["archived"] == []


# -- rules sync -----------------------------------------------------------------------------------------


def test_rules_sync_command(run: Callable[..., Run], repo: Path) -> None:
    (repo / "AGENTS.md").write_text("# Rules\n\n- Use ruff.\n- Use mypy.\n", encoding="utf-8")
    (repo / "web").mkdir()
    (repo / "web" / "CLAUDE.md").write_bytes(b"- Caf\xe9.\n")
    result = run("rules", "sync")
    assert result.code == 1
    assert "AGENTS.md: 2 added, 0 updated, 0 archived, 0 restored, 0 unchanged" in result.out
    assert "error: web/CLAUDE.md: rule file is not UTF-8" in result.err
    (repo / "web" / "CLAUDE.md").write_text("- Café.\n", encoding="utf-8")
    data = json.loads(ok(run("rules", "sync", "--json")).out)
    assert {f["path"]: (len(f["added"]), f["unchanged"]) for f in data["files"]} == {
        "AGENTS.md": (0, 2),
        "web/CLAUDE.md": (1, 0),
    }
    listed = json.loads(ok(run("list", "--origin", "rules:", "--json")).out)
    assert sorted(m["summary"] for m in listed) == ["Café.", "Use mypy.", "Use ruff."]


# -- seed and import ------------------------------------------------------------------------------------


def test_seed_is_idempotent(run: Callable[..., Run], repo: Path, tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(
        json.dumps(
            {
                "memories": [
                    {
                        "summary": "Uploads go through the chunked endpoint",
                        "files": [UPLOAD],
                        "category": "gotcha",
                    },
                    {"summary": "Deploys happen on Tuesdays", "pinned": True},
                ]
            }
        ),
        encoding="utf-8",
    )
    assert "seeded 2 memories from seed.json (0 updated, 0 archived, 0 restored, 0 already present)" in (
        ok(run("seed", str(seed))).out
    )
    again = json.loads(ok(run("seed", str(seed), "--json")).out)
    assert (again["new"], again["present"], again["updated"], again["archived"]) == (0, 2, [], [])
    listed = json.loads(ok(run("list", "--origin", "seed", "--json")).out)
    assert sorted(m["summary"] for m in listed) == [
        "Deploys happen on Tuesdays",
        "Uploads go through the chunked endpoint",
    ]
    assert [m["files"] for m in listed if m["category"] == "gotcha"] == [[UPLOAD]]


def test_seed_from_a_subdirectory_keeps_repo_relative_paths(
    run: Callable[..., Run], repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps([{"summary": "Upload rules", "files": [UPLOAD]}]), encoding="utf-8")
    monkeypatch.chdir(repo / "docs")
    ok(run("seed", str(seed)))
    (memory,) = json.loads(ok(run("list", "--json")).out)
    assert memory["files"] == [UPLOAD]


def test_seed_bad_field_names_the_entry_and_writes_nothing(
    run: Callable[..., Run], repo: Path, tmp_path: Path
) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(
        json.dumps([{"summary": "Fine entry"}, {"summary": "Bad entry", "category": "tip"}]), encoding="utf-8"
    )
    result = run("seed", str(seed))
    assert result.code == 1
    assert f"{seed}: [1].category: invalid category 'tip'" in result.err
    assert note_files(repo) == []


def test_import_claude_memory(run: Callable[..., Run], repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude" / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- [testing](testing.md)\n", encoding="utf-8")
    (folder / "testing.md").write_text(
        "---\nname: testing\ndescription: Integration tests hit a real database\ntype: feedback\n---\n"
        "Never mock the database: a mocked migration passed while prod broke.\n",
        encoding="utf-8",
    )
    (folder / "empty.md").write_text("---\nname:\n---\n", encoding="utf-8")
    result = ok(run("import", "claude-memory", str(folder)))
    assert f"imported 1 memory from {folder} (0 already present, 1 skipped)" in result.out
    assert "skipped" in result.err and "empty.md" in result.err
    (memory,) = json.loads(ok(run("list", "--origin", "agent", "--json")).out)
    assert memory["summary"] == "Integration tests hit a real database" and memory["category"] == "pref"
    assert "imported 0 memories" in (again := ok(run("import", "--from", "claude", str(folder))).out)
    assert "(1 already present, 1 skipped)" in again


def test_import_claude_memory_default_dir(run: Callable[..., Run], repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    encoded = "".join(c if c.isalnum() else "-" for c in repo.resolve().as_posix())
    folder = config / "projects" / encoded / "memory"
    folder.mkdir(parents=True)
    (folder / "ci.md").write_text(
        "---\ndescription: CI runs on every push\ntype: project\n---\n", encoding="utf-8"
    )
    result = ok(run("import", "claude-memory", env={"CLAUDE_CONFIG_DIR": str(config)}))
    assert str(folder) in result.out and "imported 1" in result.out


def test_import_json_lines_still_works(
    run: Callable[..., Run], repo: Path, home: Path, tmp_path: Path
) -> None:
    ok(run("add", "Exported fact about uploads", "--file", UPLOAD))
    exported = ok(run("export")).out
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported, encoding="utf-8")
    other = make_git_repo(tmp_path / "other")
    from tether.project import init_project

    init_project(other, home)
    import os

    os.chdir(other)
    assert "imported 1 memory (0 already present)" in ok(run("import", str(dump))).out
    assert "imported 0 memories (1 already present)" in ok(run("import", input=exported)).out
    assert run("import", str(dump), "somedir").code == 2
    missing = run("import", str(tmp_path / "nope.jsonl"))
    assert missing.code == 1 and "cannot read" in missing.err


# -- distill against a loopback Anthropic endpoint ----------------------------------------------------


class Anthropic:
    def __init__(self) -> None:
        self.url = ""
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []

    def facts(self, facts: list[dict[str, Any]]) -> None:
        text = json.dumps({"facts": facts})
        self.replies.append(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
            }
        )


@pytest.fixture
def anthropic() -> Iterator[Anthropic]:
    fake = Anthropic()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            fake.requests.append({"path": self.path, "key": self.headers.get("x-api-key"), "body": body})
            status, reply = (
                (200, fake.replies.pop(0)) if fake.replies else (500, {"error": {"message": "none"}})
            )
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()


def transcript(path: Path, repo: Path) -> Path:
    lines = [
        {
            "type": "user",
            "cwd": str(repo),
            "message": {"role": "user", "content": "uploads time out, fix it"},
        },
        "this line is not JSON {",
        {
            "type": "assistant",
            "cwd": str(repo),
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Large uploads need chunks."}],
            },
        },
        {"type": "user", "cwd": str(repo), "message": {"role": "user", "content": "always chunk above 5 MB"}},
    ]
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8"
    )
    return path


def test_distill_stores_facts_and_purge_removes_them(
    run: Callable[..., Run], repo: Path, home: Path, tmp_path: Path, anthropic: Anthropic
) -> None:
    ok(run("config", "distill.base_url", anthropic.url))
    ok(run("config", "distill.model", "claude-test"))
    with opened(repo, home) as ws:
        kept = ws.add("Uploads above 5 MB must be chunked", details="The proxy drops bigger bodies.").memory
    anthropic.facts(
        [
            {
                "summary": "Chunk uploads above 5 MB",
                "details": "Timeouts otherwise.",
                "category": "gotcha",
                "files": [UPLOAD, "src/invented.py"],
            },
            {"summary": "User prefers small commits", "category": "pref"},
            # Near-duplicate of the memory already there (cosine ≥ 0.9 with the hashed embedder).
            {
                "summary": "Uploads above 5 MB must always be chunked",
                "details": "The proxy drops bigger bodies.",
                "category": "gotcha",
            },
            {"summary": "The project uses Python", "category": "context"},  # not an allowed category
        ]
    )
    env = {"ANTHROPIC_API_KEY": "test-key", "TETHER_DISTILL_PROVIDER": "", "TETHER_DISTILL_MODEL": ""}
    session = transcript(tmp_path / "s1.jsonl", repo)

    result = ok(run("distill", "--transcript", str(session), "--session", "s1", env=env))

    assert "read 4 transcript lines (1 skipped as unreadable); 4 facts proposed, 2 written" in result.out
    assert "near-duplicate of an existing memory" in result.out
    assert "category 'context' is not allowed" in result.out
    (request,) = anthropic.requests
    assert request["path"] == "/v1/messages" and request["key"] == "test-key"
    assert request["body"]["model"] == "claude-test"
    assert "gotcha" in request["body"]["system"] and "context:" not in request["body"]["system"]
    distilled = json.loads(ok(run("list", "--origin", "distilled", "--json")).out)
    assert sorted(m["summary"] for m in distilled) == [
        "Chunk uploads above 5 MB",
        "User prefers small commits",
    ]
    assert [m["files"] for m in distilled if m["category"] == "gotcha"] == [[UPLOAD]]
    assert (repo / ".tether" / "distill" / ".gitignore").read_text(encoding="utf-8").strip().endswith("*")

    # The offset advanced: nothing new, no second call.
    again = json.loads(ok(run("distill", "--transcript", str(session), "--json", env=env)).out)
    assert again["called_llm"] is False and again["written"] == []

    refused = run("purge", "--origin", "distilled", input="n\n")
    assert refused.code == 1 and len(json.loads(ok(run("list", "--origin", "distilled", "--json")).out)) == 2
    purged = ok(run("purge", "--origin", "distilled", "--yes"))
    assert "deleted 2 memories with origin distilled" in purged.out
    assert json.loads(ok(run("list", "--origin", "distilled", "--all", "--json")).out) == []
    with opened(repo, home) as ws:
        assert ws.get(kept.id).status == "active"  # other origins untouched
        assert {m.origin for m in ws.find(Query(status=None))} == {"user"}
    assert len(note_files(repo)) == 1


def test_distill_error_is_reported(
    run: Callable[..., Run], repo: Path, tmp_path: Path, anthropic: Anthropic
) -> None:
    ok(run("config", "distill.base_url", anthropic.url))
    result = run(
        "distill", "--transcript", str(transcript(tmp_path / "s.jsonl", repo)), env={"ANTHROPIC_API_KEY": "k"}
    )
    assert result.code == 1 and "answered HTTP 500" in result.err
    assert json.loads(ok(run("list", "--json")).out) == []


def test_purge_rejects_unknown_origin(run: Callable[..., Run], repo: Path) -> None:
    result = run("purge", "--origin", "robots", "--yes")
    assert result.code == 1 and "invalid origin 'robots'" in result.err


# -- supersede and ack ----------------------------------------------------------------------------------


def test_supersede_chain_is_readable_but_out_of_recall_and_search(
    run: Callable[..., Run], repo: Path
) -> None:
    old = json.loads(ok(run("add", "Upload limit is 10 MB", "--file", UPLOAD, "--json")).out)["id"]
    new = json.loads(
        ok(run("add", "Upload limit is 25 MB", "--file", UPLOAD, "--supersedes", old, "--json")).out
    )["id"]
    newest = json.loads(ok(run("add", "Upload limit is 50 MB", "--file", UPLOAD, "--json")).out)["id"]
    ok(run("supersede", new, newest))

    shown = json.loads(ok(run("get", old, "--json")).out)
    assert shown["status"] == "superseded"
    assert [m["id"] for m in shown["chain"]] == [new]
    middle = json.loads(ok(run("get", new, "--json")).out)
    assert sorted(m["id"] for m in middle["chain"]) == sorted([newest, old])
    text = ok(run("get", newest)).out
    assert f"replaces: {new} [superseded]" in text and f"replaces: {old} [superseded]" in text

    found = [r["id"] for r in json.loads(ok(run("search", "upload limit", "--json")).out)]
    assert found == [newest]
    recalled = json.loads(ok(run("recall", "--file", UPLOAD, "--no-record", "--json")).out)
    assert [m["id"] for m in recalled["memories"]] == [newest]
    assert [m["id"] for m in json.loads(ok(run("list", "--json")).out)] == [newest]


def test_ack_counts_as_acted(run: Callable[..., Run], repo: Path, home: Path) -> None:
    mid = json.loads(ok(run("add", "Upload retries are capped", "--json")).out)["id"]
    ok(run("ack", mid, "--session", "s9"))
    ok(run("ack", mid))
    with opened(repo, home) as ws:
        assert ws.store.telemetry([mid])[mid].acted == 2
        assert [e.session for e in ws.store.events(mid) if e.event == "acted"] == [None, "s9"]
