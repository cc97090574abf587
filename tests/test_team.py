"""A team on one Postgres (issue 13): checkouts sharing memory, the sync rules, tenancy, the user-level setting.

Workspaces here are real: git repositories made by the test, clones of them, `$TETHER_HOME`s of their own
(one per team member), the team database of `conftest.pg_url`, and `tether` run in-process or as a
subprocess.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import git
from tether.config import Config
from tether.config.database import database_url, set_database_url
from tether.errors import ConfigError
from tether.notes import format as notes
from tether.project import init_project
from tether.store.base import Query
from tether.store.postgres import connect
from tether.store.postgres.tenancy import Tenant, project_id, user_id
from tether.workspace import Workspace


@pytest.fixture
def team(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The team database, configured through the environment for every workspace the test opens."""
    monkeypatch.setenv("TETHER_DATABASE_URL", pg_url)
    return pg_url


def clone(source: Path, target: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True, capture_output=True)
    return target


@pytest.fixture
def checkouts(repo: Path, home: Path, tmp_path: Path, team: str) -> Iterator[tuple[Workspace, Workspace]]:
    """Two checkouts of one repository (the second a clone, with `.tether/` committed), one user."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tether")
    other = clone(repo, tmp_path / "clone")
    init_project(other, home)  # git keeps no empty directory: the teammate runs `tether init`
    a, b = Workspace.open(repo, home=home), Workspace.open(other, home=home)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


# -- the setting is the user's -------------------------------------------------------------------------


def test_the_database_is_a_user_level_setting_only(
    repo: Path, home: Path, tether: Callable[..., object]
) -> None:
    committed = repo / ".tether" / "config.toml"
    committed.write_text('[database]\nurl = "postgresql://attacker.example/loot"\n', encoding="utf-8")
    assert database_url(home, {}) is None  # a clone cannot send memory anywhere
    Config.load(home / "config.toml", committed)  # and it does not break the clone either
    refused = tether("config", "database.url", "postgresql://x/y")
    assert refused.code == 1 and "user-level setting" in refused.err  # type: ignore[attr-defined]
    set_database_url(home, "postgresql://ann:pw@db.internal/tether")
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600  # it may hold a password
    assert database_url(home, {}) == "postgresql://ann:pw@db.internal/tether"
    assert database_url(home, {"TETHER_DATABASE_URL": "postgres:///other"}) == "postgres:///other"
    with pytest.raises(ConfigError, match="must be a Postgres URL"):
        database_url(home, {"TETHER_DATABASE_URL": "https://example.com"})
    set_database_url(home, None)
    assert database_url(home, {}) is None


def test_init_database_connects_and_shares_the_notes(
    repo: Path, home: Path, pg_url: str, tether: Callable[..., object]
) -> None:
    with Workspace.open(repo, home=home) as ws:
        added = ws.add(
            "Staging listens on 6443", details="Set in deploy/", files=["src/app/upload.py"]
        ).memory
    done = tether("init", "--database", pg_url)
    assert done.code == 0 and "shared: 1 memory;" in done.out  # type: ignore[attr-defined]
    status = tether("store", "status", "--json")
    info = json.loads(status.out)  # type: ignore[attr-defined]
    assert info["backend"] == "postgres" and info["project_memories"] == 1
    assert info["extensions"].keys() == {"vector", "pg_trgm"} and info["project"].startswith("git:")
    assert "***" in info["url"] or "@" not in info["url"]
    text = tether("store", "status").out  # type: ignore[attr-defined]
    assert "backend: postgres" in text and "memories: 1 project, 0 user" in text
    assert tether("init", "--database", "none").code == 0
    assert json.loads(tether("store", "status", "--json").out)["backend"] == "sqlite"  # type: ignore[attr-defined]
    assert "backend: sqlite" in tether("store", "status").out  # type: ignore[attr-defined]
    with Workspace.open(repo, home=home) as ws:  # back on its own index, whole again (not the stand-ins)
        assert ws.get(added.id) == added and ws.search("deploy")


# -- two checkouts, one memory ------------------------------------------------------------------------------


def test_a_memory_added_in_one_checkout_is_recalled_in_the_other_without_a_commit(
    checkouts: tuple[Workspace, Workspace],
) -> None:
    a, b = checkouts
    added = a.add("Uploads retry three times with exponential backoff", files=["src/app/upload.py"]).memory
    recalled = b.recall(
        "how often do uploads retry?", files=["src/app/upload.py"], session="s-b", record=True
    )
    assert [item.memory.id for item in recalled.memories] == [added.id]
    a.ack(added.id, session="s-a")
    b.ack(added.id, session="s-b")
    for ws in (a, b):
        tel = ws.store.telemetry([added.id])[added.id]
        assert (tel.surfaced, tel.acted) == (1, 2)  # both checkouts' counts add up
    assert b.store.note_path(added.id) is None  # b has no note for it yet: it is a's, until committed


def _writer(root: str, home: str, url: str, shared_id: str, n: int) -> None:
    os.environ["TETHER_DATABASE_URL"] = url
    with Workspace.open(Path(root), home=Path(home)) as ws:
        for i in range(n):
            ws.add(f"Finding {i} of writer {os.getpid()} about the upload path")
            ws.ack(shared_id, session=f"w{os.getpid()}")


def test_nine_concurrent_sessions_on_two_checkouts_lose_no_add_and_no_count(
    checkouts: tuple[Workspace, Workspace], home: Path, team: str
) -> None:
    a, b = checkouts
    shared = a.add("The shared gotcha everyone acknowledges").memory
    roots = [a.root, b.root] * 5
    spawn = multiprocessing.get_context("spawn")
    workers = [spawn.Process(target=_writer, args=(str(r), str(home), team, shared.id, 4)) for r in roots[:9]]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(180)
        assert worker.exitcode == 0
    assert a.store.count(Query(status=None)) == 1 + 9 * 4
    assert a.store.telemetry([shared.id])[shared.id].acted == 9 * 4
    notes_on_disk = len(list((a.root / ".tether" / "memories").glob("*.md"))) + len(  # type: ignore[operator]
        list((b.root / ".tether" / "memories").glob("*.md"))  # type: ignore[operator]
    )
    assert notes_on_disk == 1 + 9 * 4  # each add wrote its note in its own checkout


# -- the sync rules -----------------------------------------------------------------------------------------


def _rewrite_note(ws: Workspace, memory_id: str, **changes: object) -> None:
    """Change a note on disk as a `git pull` would, leaving the index to find out."""
    path = Path(ws.store.note_path(memory_id) or "")
    memory = notes.read(path, "project").with_changes(**changes)
    path.write_text(notes.render(memory), encoding="utf-8")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000))


def test_a_pulled_note_and_a_shared_write_meet_by_last_writer(checkouts: tuple[Workspace, Workspace]) -> None:
    a, b = checkouts
    t0 = datetime.now(UTC).replace(microsecond=0)
    memory = a.add("Staging listens on 6443").memory
    b.sync(full=True)  # b sees it in the store; a commit and a pull bring b the note
    git(a.root, "add", "-A")  # type: ignore[arg-type]
    git(a.root, "commit", "-q", "-m", "memory")  # type: ignore[arg-type]
    git(b.root, "pull", "-q")  # type: ignore[arg-type]
    b.sync(full=True)
    assert b.store.note_path(memory.id) is not None
    # b edits it (a newer row in the store); a then pulls an edit made earlier elsewhere: older.
    b.clock = lambda: t0 + timedelta(hours=2)
    newer = b.edit(memory.id, summary="Staging listens on 7443")
    _rewrite_note(a, memory.id, summary="Staging listens on 5443", updated=t0 + timedelta(hours=1))
    a.sync(full=True)
    assert a.get(memory.id).summary == newer.summary  # the later write stays
    stale = [e for e in a.store.events(memory.id) if e.event == "stale"]
    assert stale and stale[0].receipts["stored_hash"] == newer.content_hash
    # A note newer than the store replaces it, and the replaced version is in the log.
    _rewrite_note(a, memory.id, summary="Staging listens on 8443", updated=t0 + timedelta(hours=3))
    a.sync(full=True)
    assert b.get(memory.id).summary == "Staging listens on 8443"
    revised = [e for e in b.store.events(memory.id) if e.event == "revised"]
    assert revised[0].receipts["stored_hash"] == newer.content_hash


def test_a_sync_keeps_shared_memories_that_have_no_note_here(checkouts: tuple[Workspace, Workspace]) -> None:
    a, b = checkouts
    elsewhere = b.add("Added on the other machine, not committed yet").memory
    mine = a.add("Mine, whose note I then lose on a branch switch").memory
    a.reindex()  # from a's notes alone: b's memory has no note here, and stays
    assert a.get(elsewhere.id) == elsewhere
    Path(a.store.note_path(mine.id) or "").unlink()  # the note vanishes (a branch without it)
    a.sync(full=True)
    assert b.get(mine.id).id == mine.id  # a missing file is not a deletion for the team
    assert a.store.note_path(mine.id) is None  # only a's bookkeeping went


def test_a_deletion_leaves_a_tombstone_that_an_unpulled_note_does_not_undo(
    checkouts: tuple[Workspace, Workspace],
) -> None:
    a, b = checkouts
    memory = a.add("To be deleted by a teammate").memory
    git(a.root, "add", "-A")  # type: ignore[arg-type]
    git(a.root, "commit", "-q", "-m", "memory")  # type: ignore[arg-type]
    git(b.root, "pull", "-q")  # type: ignore[arg-type]
    b.sync(full=True)
    a.delete(memory.id)  # `tether rm`: gone for the team, with a tombstone
    assert b.store.get(memory.id) is None
    assert next(e.event for e in b.store.events(memory.id)) == "deleted"
    b.reindex()  # b still has the note (it has not pulled the deletion): it stays deleted
    assert b.store.get(memory.id) is None
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)
    _rewrite_note(b, memory.id, summary="Edited after the deletion: back", updated=later)
    b.sync(full=True)
    assert a.get(memory.id).summary == "Edited after the deletion: back"


# -- tenancy at the workspace -------------------------------------------------------------------------------


def test_projects_and_team_members_are_isolated(repo: Path, home: Path, tmp_path: Path, team: str) -> None:
    other_repo = tmp_path / "other"
    other_repo.mkdir()
    git(other_repo, "init", "-q", "-b", "main")
    (other_repo / "README").write_text("another project\n", encoding="utf-8")
    git(other_repo, "add", "-A")
    git(other_repo, "commit", "-q", "-m", "a different history")  # another first commit: another project
    init_project(other_repo, home)
    teammate_home = tmp_path / "teammate"
    with Workspace.open(repo, home=home) as mine:
        shared = mine.add("Project memory: shared with the team").memory
        private = mine.add("My own preference", scope="user").memory
    with Workspace.open(repo, home=teammate_home) as theirs:
        seen = {m.id for m in theirs.find(Query(status=None))}
        assert shared.id in seen and private.id not in seen
        assert theirs.search("preference") == [] or all(
            r.memory.id != private.id for r in theirs.search("preference")
        )
    with Workspace.open(other_repo, home=home) as elsewhere:
        seen = {m.id for m in elsewhere.find(Query(status=None))}
        assert private.id in seen and shared.id not in seen  # my user memory follows me, not the project's


def test_ids_project_from_the_first_commit_user_from_home(repo: Path, home: Path, tmp_path: Path) -> None:
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert project_id(repo) == f"git:{first}"
    (repo / "later.txt").write_text("x\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    assert project_id(clone(repo, tmp_path / "c")) == f"git:{first}"  # every clone agrees
    assert user_id(home) == user_id(home) != user_id(tmp_path / "someone-else")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)], check=True)
    with pytest.raises(ConfigError, match="shallow clone"):
        project_id(shallow)
    assert Tenant(None, "u").key("user") == ("", "u")


def test_the_project_id_is_cached_in_the_local_index(repo: Path, home: Path, team: str) -> None:
    with Workspace.open(repo, home=home) as ws:
        assert ws.store.get_meta(connect.PROJECT_ID_META) == project_id(repo)


# -- failing open -------------------------------------------------------------------------------------------


def test_hooks_fail_open_fast_when_the_database_is_down(
    repo: Path, tmp_path: Path, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    dead = f"postgresql://nobody@/tether?host={tmp_path}"
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": "hi?"}
    started = time.monotonic()
    done = tether_proc(
        "hook", "claude", "UserPromptSubmit", input=json.dumps(payload), env={"TETHER_DATABASE_URL": dead}
    )
    assert done.returncode == 0 and time.monotonic() - started < 10
    failed = tether_proc("list", env={"TETHER_DATABASE_URL": dead})
    assert failed.returncode == 1 and "team database is unavailable" in failed.stderr


def test_anchors_and_tags_survive_a_write_through_the_team_database(
    checkouts: tuple[Workspace, Workspace],
) -> None:
    # Regression: the team database kept no anchors, so an edit (which reads the memory back from it)
    # rewrote the note without them.
    a, _ = checkouts
    assert a.root is not None
    (a.root / "src").mkdir(exist_ok=True)
    (a.root / "src" / "pay.py").write_text("def charge(amount):\n    return amount\n", encoding="utf-8")
    added = a.add(
        "charge() must stay idempotent", at=["src/pay.py::charge"], tags=["billing"], aliases=["Charge rule"]
    ).memory
    edited = a.edit(added.id, summary="charge() must stay idempotent: reuse the key")
    note = a.store.note_path(added.id)
    assert note is not None
    on_disk = notes.parse(Path(note).read_text(encoding="utf-8"), str(note), "project")
    for memory in (edited, on_disk, a.get(added.id)):
        assert [x.symbol for x in memory.anchors] == ["charge"], memory
        assert (memory.tags, memory.aliases) == (("billing",), ("Charge rule",))
