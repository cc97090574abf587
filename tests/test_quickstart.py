"""The session start answered from the index alone: the same reply and the same rows as the ordinary path,
and the ordinary path whenever anything is to do or unusual."""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git
from tether import quickstart
from tether.adapters import hooks
from tether.adapters.hooks.agents import MAX_CONTEXT_CHARS
from tether.config import DEFAULTS
from tether.intake import rulestate
from tether.lean import sha256_hex
from tether.lifecycle import background, housekeeping, passes
from tether.lifecycle.cleanup import (
    CHECK_EVERY,
    CLEANUP_MIN_ACTIVE,
    CLEANUP_MIN_SESSIONS,
    META_CHECKED,
    META_HINTED,
    META_LAST_PASS,
)
from tether.lifecycle.housekeeping import run_background
from tether.model.memory import Memory, new_id
from tether.model.timestamps import utcnow
from tether.notes import format as notes
from tether.notes import stamps
from tether.project import init_project
from tether.recall import block
from tether.store.base import Query
from tether.workspace import SHARED_MARK, Workspace

AGENTS = ("claude", "codex", "cursor", "gemini")


def payload(agent: str, session: str, cwd: Path) -> bytes:
    """A session start's input as each agent sends it (`../shared/reference/agent-integrations.md`)."""
    event = quickstart.SESSION_START[agent]
    if agent == "cursor":
        body = {
            "conversation_id": session,
            "generation_id": "g1",
            "hook_event_name": event,
            "workspace_roots": [str(cwd)],
        }
    else:
        body = {
            "session_id": session,
            "transcript_path": str(cwd / "t.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": event,
            "source": "startup",
        }
        if agent == "gemini":
            body["timestamp"] = "2026-12-02T01:00:00Z"
    return json.dumps(body).encode()


def ordinary(agent: str, session: str, cwd: Path) -> str:
    """The ordinary path's session start, in this process."""
    out = io.StringIO()
    raw = payload(agent, session, cwd).decode()
    assert hooks.main([agent, quickstart.SESSION_START[agent]], stdin=io.StringIO(raw), stdout=out) == 0
    return out.getvalue()


def quick(agent: str, session: str, cwd: Path) -> str | None:
    return quickstart.answer(agent, quickstart.SESSION_START[agent], payload(agent, session, cwd), os.environ)


def settle(repo: Path, home: Path) -> None:
    """What the background leaves behind: every note scanned, the repo map refreshed, the passes run."""
    with Workspace.open(repo, home=home) as ws:
        run_background(ws, lambda: ws.sync(full=True), wait=True)


def rows(repo: Path, session: str) -> tuple[object, list[tuple[object, ...]]]:
    with sqlite3.connect(repo / ".tether" / "index.db") as conn:
        state = conn.execute("SELECT state FROM sessions WHERE id = ?", (session,)).fetchone()
        events = conn.execute(
            "SELECT memory_id, turn, event, receipts FROM events WHERE session = ? ORDER BY seq", (session,)
        ).fetchall()
    return (json.loads(state[0]) if state else None), events


def surfaced(repo: Path) -> dict[str, int]:
    with sqlite3.connect(repo / ".tether" / "index.db") as conn:
        return dict(conn.execute("SELECT memory_id, surfaced FROM telemetry").fetchall())


def sessions(repo: Path) -> int:
    with sqlite3.connect(repo / ".tether" / "index.db") as conn:
        return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])


@pytest.fixture
def quiet(repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project past the note threshold (lowered to 5 for both paths), with a rule file, 25 past sessions
    and 32 memories (so the cleanup count's conditions are live), with nothing left to do."""
    monkeypatch.setattr(background, "HOOK_MAX_NOTES", 5)
    monkeypatch.setattr(quickstart, "HOOK_MAX_NOTES", 5)
    (repo / "AGENTS.md").write_text(
        "# Rules\n\n- Use ruff format.\n- Never push to main.\n", encoding="utf-8"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rules")
    with Workspace.open(repo, home=home) as ws:
        for n in range(32):
            ws.add(f"Upload retries back off number {n}", files=["src/app/upload.py"])
        with ws.store.transaction():
            for n in range(25):
                ws.store.put_session_state(f"past-{n}", {"turn": 1}, utcnow())
    ordinary("claude", "first", repo)  # syncs the rule file
    settle(repo, home)
    return repo


def pin(repo: Path, home: Path) -> dict[str, str]:
    """Pinned memories of every kind a session start treats differently; their ids by kind."""
    with Workspace.open(repo, home=home) as ws:
        made = {
            "plain": ws.add("Staging API listens on 6443", category="context", pinned=True),
            "agent": ws.add(
                "Run make check before pushing", pinned=True, origin="distilled", category="pref"
            ),
            "high": ws.add("Never log tokens — naïve grep finds them", pinned=True, priority="high"),
            "file": ws.add("Uploads go through one retry loop", pinned=True, files=["src/app/upload.py"]),
            "dir": ws.add("The app package is async", pinned=True, files=["src/app/"]),
            "dead": ws.add("Old billing module quirks", pinned=True, files=["src/billing.py"]),
            "user": ws.add("I prefer small commits", pinned=True, scope="user"),
            "other session": ws.add(
                "Scratch for another session", pinned=True, scope="session", session="zz"
            ),
        }
    settle(repo, home)
    return {kind: added.memory.id for kind, added in made.items()}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("pinned", [False, True])
def test_the_reply_and_the_rows_are_the_ordinary_path_s(
    quiet: Path, home: Path, agent: str, pinned: bool
) -> None:
    ids = pin(quiet, home) if pinned else {}
    before = surfaced(quiet)
    said = ordinary(agent, "by-ordinary", quiet)
    after_ordinary = surfaced(quiet)
    answered = quick(agent, "by-quick", quiet)
    assert answered is not None, "nothing to do: the quick path answers"
    assert answered == said
    ordinary_state, ordinary_events = rows(quiet, "by-ordinary")
    quick_state, quick_events = rows(quiet, "by-quick")
    assert quick_state == ordinary_state
    assert quick_events == ordinary_events
    shown = [mid for mid, *_ in quick_events]
    assert {m: surfaced(quiet)[m] - after_ordinary[m] for m in shown} == {m: 1 for m in shown}
    assert {m: after_ordinary[m] - before.get(m, 0) for m in shown} == {m: 1 for m in shown}
    if pinned:
        assert {k for k, mid in ids.items() if mid in shown} == {
            "plain",
            "agent",
            "high",
            "file",
            "dir",
            "user",
        }
        assert "[distilled] " in said and "naïve" in said and ids["dead"] not in said


def test_the_pinned_block_stops_at_the_budget_as_the_ordinary_path_does(quiet: Path, home: Path) -> None:
    with Workspace.open(quiet, home=home) as ws:
        for n in range(40):
            ws.add(f"Pinned rule {n}: " + "keep the upload retry loop bounded and logged " * 2, pinned=True)
    settle(quiet, home)
    said = ordinary("claude", "a", quiet)
    assert said.count("(via pinned)") < 40
    assert quick("claude", "b", quiet) == said
    assert rows(quiet, "b") == rows(quiet, "a")


def test_a_session_start_outside_a_project_says_nothing(tmp_path: Path, home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert ordinary("claude", "s", plain) == ""
    assert quick("claude", "s", plain) == ""


def unusual(repo: Path, home: Path, case: str) -> dict[str, str] | None:
    """Make `case` true of the quiet project; the environment to answer in, when it is not the process's."""
    index = repo / ".tether" / "index.db"

    def meta(key: str, value: str | None) -> None:
        with Workspace.open(repo, home=home, light=True, sync_notes=False) as ws:
            if value is None:
                ws.store.conn.execute("DELETE FROM meta WHERE key = ?", (key,))  # type: ignore[attr-defined]
            else:
                ws.store.set_meta(key, value)

    if case == "project setting":
        (repo / ".tether" / "config.toml").write_text("[recall]\nlimit = 5\n", encoding="utf-8")
    elif case == "user setting":
        (home / "config.toml").write_text('guard.mode = "off"\n', encoding="utf-8")
    elif case == "team database":
        return {**os.environ, "TETHER_DATABASE_URL": "postgresql://nowhere/none"}
    elif case == "no index":
        for path in repo.joinpath(".tether").glob("index.db*"):
            path.unlink()
    elif case == "damaged index":
        for path in repo.joinpath(".tether").glob("index.db*"):
            path.unlink()
        index.write_bytes(b"this is not a database " * 100)
    elif case == "a note another program wrote":
        memory = Memory(id=new_id(), summary="Written by a script", category="context")
        (repo / ".tether" / "memories" / notes.note_name(memory)).write_text(notes.render(memory), "utf-8")
    elif case == "no recent scan":
        meta(stamps.SCANNED, "0 40")
    elif case == "a new commit":
        (repo / "Makefile").write_text("all:\n\tfalse\n", encoding="utf-8")
        git(repo, "commit", "-qam", "change")
    elif case == "a rule file edited":
        (repo / "AGENTS.md").write_text("# Rules\n\n- Use black.\n", encoding="utf-8")
    elif case == "hints waiting":
        meta(passes.META_HINTS, json.dumps(["tether: 3 memories archived"]))
    elif case == "archive pass due":
        meta(passes.META_ARCHIVE_PASS, None)
    elif case == "cleanup count due":
        meta(META_CHECKED, None)
    elif case == "a shared index":
        meta(SHARED_MARK, "team-1")
    elif case == "adopted rule files":
        key = sha256_hex(str(repo.resolve()).encode())[:16]
        (home / "adopted").mkdir()
        (home / "adopted" / f"{key}.json").write_text('{"agents": []}', encoding="utf-8")
    elif case == "a small project":
        quickstart.HOOK_MAX_NOTES = 1000  # restored by the fixture's monkeypatch
    elif case == "a pinned absolute path":
        with Workspace.open(repo, home=home) as ws:
            ws.add("Absolute", pinned=True, files=[str(repo / "src" / "app" / "auth.py")])
            ws.store.conn.execute(  # type: ignore[attr-defined]
                "UPDATE memories SET files = ? WHERE summary = 'Absolute'",
                (json.dumps([str(repo / "src" / "app" / "auth.py")]),),
            )
        settle(repo, home)
    else:
        raise AssertionError(case)
    return None


CASES = (
    "project setting",
    "user setting",
    "team database",
    "no index",
    "damaged index",
    "a note another program wrote",
    "no recent scan",
    "a new commit",
    "a rule file edited",
    "hints waiting",
    "archive pass due",
    "cleanup count due",
    "a shared index",
    "adopted rule files",
    "a small project",
    "a pinned absolute path",
)


@pytest.mark.parametrize("case", CASES)
def test_anything_to_do_or_unusual_goes_the_ordinary_way_with_nothing_written(
    quiet: Path, home: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quickstart, "HOOK_MAX_NOTES", quickstart.HOOK_MAX_NOTES)
    assert quick("claude", "control", quiet) is not None  # quiet before the change
    environ = unusual(quiet, home, case)
    index = quiet / ".tether" / "index.db"
    count = sessions(quiet) if index.exists() and case != "damaged index" else None
    raw = payload("claude", "s1", quiet)
    assert quickstart.answer("claude", "SessionStart", raw, environ or os.environ) is None
    if count is not None:
        assert sessions(quiet) == count
        assert rows(quiet, "s1") == (None, [])


def test_a_resumed_session_goes_the_ordinary_way(quiet: Path, home: Path) -> None:
    pin(quiet, home)
    first = quick("claude", "resumed", quiet)
    assert first is not None and "(via pinned)" in first
    before = rows(quiet, "resumed")
    assert quick("claude", "resumed", quiet) is None  # its state is merged by the ordinary path
    assert rows(quiet, "resumed") == before


@pytest.mark.parametrize(
    "raw", [b"{not json", b"[1, 2]", b'{"session_id": "s", "workspace_roots": 3}', b"\xff\xfe"]
)
def test_input_the_ordinary_path_refuses_goes_its_way(quiet: Path, raw: bytes) -> None:
    assert quickstart.answer("cursor", "sessionStart", raw, os.environ) is None


@pytest.mark.parametrize("event", [("claude", "UserPromptSubmit"), ("cursor", "SessionStart"), ("x", "y")])
def test_other_events_are_not_answered(quiet: Path, event: tuple[str, str]) -> None:
    assert quickstart.answer(*event, payload("claude", "s", quiet), os.environ) is None


# -- the checks repeat the ordinary path's ---------------------------------------------------------------


def test_the_repeated_constants_are_the_originals() -> None:
    from tether.store.sqlite import schema, startup

    assert quickstart.HOOK_MAX_NOTES == background.HOOK_MAX_NOTES
    assert quickstart.SCAN_EVERY == background.SCAN_EVERY
    assert quickstart.REPO_FRESH_SECONDS == housekeeping.REPO_FRESH_SECONDS
    assert DEFAULTS["recall.budget"][0] == quickstart.RECALL_BUDGET
    assert quickstart.MAX_CONTEXT_CHARS == MAX_CONTEXT_CHARS
    assert quickstart.RULES_HASH == rulestate.META_HASH
    assert (quickstart.PINNED_HEADER, quickstart.FOOTER) == (block.PINNED_HEADER, block.FOOTER)
    assert (quickstart.CLEANUP_MIN_SESSIONS, quickstart.CLEANUP_MIN_ACTIVE) == (
        CLEANUP_MIN_SESSIONS,
        CLEANUP_MIN_ACTIVE,
    )
    hours = quickstart.EVERY_HOURS * 3600
    assert passes.ARCHIVE_EVERY.total_seconds() == CHECK_EVERY.total_seconds() == hours
    assert (quickstart.STAMPS, quickstart.SCANNED) == (stamps.STAMPS, stamps.SCANNED)
    assert quickstart.SHARED_MARK == SHARED_MARK
    assert (quickstart.ARCHIVE_PASS, quickstart.HINTS) == (passes.META_ARCHIVE_PASS, passes.META_HINTS)
    assert (quickstart.LAST_PASS, quickstart.HINTED, quickstart.CHECKED) == (
        META_LAST_PASS,
        META_HINTED,
        META_CHECKED,
    )
    assert startup.BUSY_TIMEOUT_MS == schema.HOOK_BUSY_TIMEOUT_MS
    assert tuple(name for name, _ in schema.MIGRATIONS) == startup.MIGRATIONS


# -- in a real hook process, at the real threshold --------------------------------------------------------


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project of 2,001 notes (past `HOOK_MAX_NOTES`) with one pinned memory, indexed once."""
    from conftest import make_git_repo

    base = tmp_path_factory.mktemp("large")
    repo, home = make_git_repo(base / "repo"), base / "home"
    home.mkdir()
    paths, _ = init_project(repo, home)
    assert paths.project_notes is not None
    for n in range(background.HOOK_MAX_NOTES + 1):
        memory = Memory(
            id=new_id(),
            summary=f"Upload retry note {n}",
            files=("src/app/upload.py",),
            pinned=n == 7,
        )
        (paths.project_notes / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    return repo, home


def hook_process(repo: Path, home: Path, session: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m tether hook claude SessionStart` in its own process (`code`: run before it, in it)."""
    env = {
        **os.environ,
        "TETHER_RESIDENT": "0",
        "TETHER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    argv = [sys.executable, "-m", "tether", "hook", "claude", "SessionStart"]
    if code:
        argv = [sys.executable, "-c", code, "hook", "claude", "SessionStart"]
    raw = payload("claude", session, repo).decode()
    return subprocess.run(argv, input=raw, cwd=repo, env=env, capture_output=True, text=True, timeout=60)


# After the hook: the modules it loaded, one a line on stderr.
LOADED = (
    "import sys\nsys.argv[1:] = sys.argv[1:]\nfrom tether.__main__ import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "sys.stderr.write('\\n'.join(sorted(sys.modules)))\n"
)
# What a session start with nothing to do no longer loads (tests/test_quickstart.py's docstring).
AVOIDED = (
    "pathlib",
    "dataclasses",
    "inspect",
    "typing",
    "tomllib",
    "hashlib",
    "urllib.parse",
    "subprocess",
    "tether.workspace",
    "tether.memories",
    "tether.store.base",
    "tether.store.sqlite.store",
    "tether.model.memory",
    "tether.config",
    "tether.adapters.hooks",
)


def test_a_large_project_s_quiet_session_start_loads_none_of_the_ordinary_path(
    large: tuple[Path, Path],
) -> None:
    repo, home = large
    with Workspace.open(repo, home=home) as ws:  # indexes the notes
        pinned = ws.find(Query(pinned=True))
    settle(repo, home)
    first = hook_process(repo, home, "ordinary-1")
    assert first.returncode == 0 and pinned[0].id in first.stdout
    settle(repo, home)  # the first session start synced the (absent) rule files: quiet again
    done = hook_process(repo, home, "quick-1", LOADED)
    assert done.returncode == 0
    assert done.stdout == first.stdout
    loaded = set(done.stderr.split("\n"))
    assert "tether.quickstart" in loaded
    assert sorted(loaded & set(AVOIDED)) == []
    assert rows(repo, "quick-1") == rows(repo, "ordinary-1")


def test_a_damaged_index_fails_open_in_the_hook_process(large: tuple[Path, Path], tmp_path: Path) -> None:
    repo, home = large
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    for path in copy.joinpath(".tether").glob("index.db*"):
        path.unlink()
    (copy / ".tether" / "index.db").write_bytes(b"not a database " * 1000)
    done = hook_process(copy, home, "s1")
    assert (done.returncode, done.stdout) == (0, "")
    assert "hooks.log" in os.listdir(copy / ".tether" / "logs")  # the ordinary path's one line
