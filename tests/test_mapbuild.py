"""The repo map's build off the hook's path, on a generated 20,000-commit repository (`benchmarks/bigrepo.py`):
the first hook answers at once and starts the build in the background, a later hook has co-change, a killed
build continues from its last save and ends where an uninterrupted one does, a small backlog is read in
process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.lifecycle import mapbuild
from tether.project import init_project
from tether.repo.map import RepoMap
from tether.store.sqlite.repomap import RepoMapTables, migrate_repomap
from tether.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bigrepo

# Generous on purpose: a loaded machine runs a 1 s build in several; these bound a wait, they time nothing.
WAIT_SECONDS = 300.0


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bigrepo.cached(tmp_path_factory.mktemp("big"), commits=20_000, files=3_000)


@pytest.fixture
def big(generated: Path, tmp_path: Path, home: Path) -> Path:
    """A clone of the generated repository with `tether init` done (a fresh clone, as a teammate has)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(generated), str(clone)], check=True, env=bigrepo.GIT_ENV)
    init_project(clone)
    return clone


def hook(event: str, repo: Path, home: Path, **extra: Any) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": event, **extra}
    return subprocess.run(
        [sys.executable, "-m", "tether", "hook", "claude", event],
        input=json.dumps(payload),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TETHER_HOME": str(home), "TETHER_HOOK_DEADLINE": "10"},
    )


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


def built(repo: Path) -> bool:
    with Workspace.open(repo, sync_notes=False) as ws:
        return bool(ws.repo_map() and ws.repo_map().built())  # type: ignore[union-attr]


def totals(db: Path) -> tuple[int, int, int]:
    conn = sqlite3.connect(db)
    try:
        pairs, n = conn.execute("SELECT count(*), coalesce(sum(n), 0) FROM repomap_pairs").fetchone()
        (changes,) = conn.execute("SELECT coalesce(sum(changes), 0) FROM repomap_paths").fetchone()
        return int(pairs), int(n), int(changes)
    finally:
        conn.close()


def reference_totals(repo: Path, tmp_path: Path) -> tuple[int, int, int]:
    """The same map built straight into a fresh database, uninterrupted."""
    db = tmp_path / "reference.db"
    conn = sqlite3.connect(db, isolation_level=None)
    migrate_repomap(conn)
    RepoMap(repo, RepoMapTables(conn)).refresh()
    conn.close()
    return totals(db)


def test_the_first_hook_answers_and_a_later_one_has_co_change(big: Path, home: Path) -> None:
    first = hook("SessionStart", big, home, source="startup")
    assert first.returncode == 0
    assert not (big / ".tether" / "logs" / "hooks.log").exists()  # no failure, no missed deadline
    assert (big / ".tether" / "logs" / "repomap.log").exists()  # the build went to the background
    wait_for(lambda: built(big), "the background build")
    wait_for(lambda: not_building(big), "the builder to exit")

    with Workspace.open(big) as ws:
        repo = ws.repo_map()
        assert repo is not None
        files = [p for p in repo.tables.present_paths() if p.endswith(".py")]
        touched, neighbour = next((f, n[0][0]) for f in sorted(files) if (n := repo.neighbours(f, 1)))
        memory = ws.add(
            "Regenerate the fixtures after changing this module", category="gotcha", files=[neighbour]
        )
    read = {"tool_name": "Read", "tool_input": {"file_path": str(big / touched)}, "tool_response": {}}
    assert hook("PostToolUse", big, home, **read).returncode == 0
    later = hook("UserPromptSubmit", big, home, prompt="tidy this function up")
    context = json.loads(later.stdout)["hookSpecificOutput"]["additionalContext"]
    assert memory.memory.id in context and "co-change" in context


def not_building(repo: Path) -> bool:
    with Workspace.open(repo, sync_notes=False) as ws:
        return not mapbuild.building(ws)


def saved_part_way(db: Path) -> bool:
    try:
        conn = sqlite3.connect(db, timeout=60)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT 1 FROM repomap_state WHERE key = 'partial'").fetchone() is not None
    except sqlite3.OperationalError:
        return False  # the index is not made yet
    finally:
        conn.close()


def test_a_killed_build_continues_from_its_last_save(big: Path, home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOME": str(home)}
    index = big / ".tether" / "index.db"
    build = subprocess.Popen([sys.executable, "-m", "tether", "repomap"], cwd=big, env=env)
    while not saved_part_way(index) and build.poll() is None:
        time.sleep(0.005)  # kill it as soon as it has saved a part: it saves every 5,000 of 20,000 commits
    os.kill(build.pid, signal.SIGKILL)
    build.wait(timeout=60)
    assert saved_part_way(index), "the build finished before it could be killed"
    expected = reference_totals(big, tmp_path)
    stopped = totals(index)
    assert (0, 0, 0) != stopped != expected  # a part is counted
    with Workspace.open(big, sync_notes=False) as ws:
        repo = ws.repo_map()
        assert repo is not None and not repo.built() and 0 < repo.backlog() < 20_000

    again = subprocess.run(
        [sys.executable, "-m", "tether", "repomap", "--json"],
        cwd=big,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=big, capture_output=True, text=True
    ).stdout.strip()
    assert json.loads(again.stdout) == {"built": True, "last_commit": head, "renamed": 0}
    assert totals(index) == expected


def test_a_second_builder_leaves_at_once_while_one_runs(big: Path, home: Path) -> None:
    with Workspace.open(big, sync_notes=False) as ws, mapbuild.build_lock(ws, wait=True):
        env = {**os.environ, "TETHER_HOME": str(home)}
        second = subprocess.run(
            [sys.executable, "-m", "tether", "repomap", "--if-idle", "--json"],
            cwd=big,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert json.loads(second.stdout) == {"built": False, "reason": "another build is running"}
        assert mapbuild.start_build(ws) is False  # hooks do not start one either


def head_of(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()


def test_a_hook_reads_a_small_backlog_itself_and_leaves_a_long_one(big: Path, home: Path) -> None:
    from tether.lifecycle.housekeeping import refresh_repo

    top = head_of(big)
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~700"], cwd=big, check=True)
    with Workspace.open(big) as ws:
        refresh_repo(ws)  # what a command does: builds in process
        assert ws.repo_map() is not None and ws.repo_map().built()  # type: ignore[union-attr]
    subprocess.run(["git", "reset", "-q", "--hard", f"{top}~600"], cwd=big, check=True)  # pull 100
    with Workspace.open(big, light=True) as ws:
        repo = ws.repo_map()
        assert repo is not None and repo.backlog() == 100
        assert not mapbuild.needs_background(ws)
        refresh_repo(ws, in_hook=True)
        assert repo.tables.state()["last_commit"] == head_of(big)  # read in process

        subprocess.run(["git", "reset", "-q", "--hard", top], cwd=big, check=True)  # pull 600
        assert repo.backlog() == 600 and mapbuild.needs_background(ws)
        with mapbuild.build_lock(ws, wait=True):  # a build "runs": the hook starts none and reads nothing
            refresh_repo(ws, in_hook=True)
            assert repo.tables.state()["last_commit"] != top
        assert mapbuild.start_build(ws) is True  # with the lock free, the hook's path starts one
        wait_for(lambda: repo.tables.state().get("last_commit") == top, "the background refresh")
