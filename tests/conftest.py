"""Shared fixtures: a real git repository with `tether init` done, and a private `$TETHER_HOME`.

def test_add(repo, ws):
    assert ws.add("Staging listens on 6443", files=["src/app.py"]).created

def test_cli(repo, tether):
    assert tether("list").code == 0
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import settings

from tether.project import init_project
from tether.workspace import Workspace

# The fuzz suite's budget (tests/test_fuzz.py): few examples, derandomized (the same inputs on every run, so
# a failure reproduces and CI never meets a new one by chance), no example database written to the tree.
# `HYPOTHESIS_PROFILE=deep` explores further by hand.
settings.register_profile("check", max_examples=120, deadline=None, derandomize=True, database=None)
settings.register_profile("deep", max_examples=5000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "check"))

ROOT = Path(__file__).resolve().parents[1]
TETHER_BIN = Path(sys.executable).with_name("tether")


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def write_lines(repo: Path, path: str, lines: list[str]) -> None:
    """Write `lines` to `repo/path` (its directories made), one per line."""
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def commit_all(repo: Path, message: str) -> None:
    """`git add -A` and commit, quietly."""
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def make_git_repo(path: Path) -> Path:
    """A git repository with a few committed files (src/, docs/), the shape memories point at."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "src" / "app").mkdir(parents=True)
    (path / "src" / "app" / "__init__.py").write_text("", encoding="utf-8")
    (path / "src" / "app" / "upload.py").write_text("def upload():\n    return 1\n", encoding="utf-8")
    (path / "src" / "app" / "auth.py").write_text("import app.upload\n", encoding="utf-8")
    (path / "docs").mkdir()
    (path / "docs" / "deploy.md").write_text("# Deploy\n", encoding="utf-8")
    (path / "Makefile").write_text("all:\n\ttrue\n", encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def listening(port: int) -> list[str]:
    """The local addresses with a socket listening on `port` (Linux: /proc/net/tcp and tcp6, in hex)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if int(hex_port, 16) == port and state == "0A":  # 0A: LISTEN
                    found.append(address)
    return found


@pytest.fixture(autouse=True)
def no_resident(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hooks and commands run in process, as they do without a resident process; `tests/test_resident.py`
    turns it on (a test's hook must not start a background process that outlives it)."""
    monkeypatch.setenv("TETHER_RESIDENT", "0")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`$TETHER_HOME` in a temporary directory: user memory and user config live there."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("TETHER_HOME", str(path))
    for name in ("TETHER_SESSION", "TETHER_DATABASE_URL", "VISUAL", "EDITOR"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def repo(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real git repository with `tether init` done; the current directory is its root."""
    path = make_git_repo(tmp_path / "repo")
    init_project(path, home)
    monkeypatch.chdir(path)
    return path


@pytest.fixture
def ws(repo: Path, home: Path) -> Iterator[Workspace]:
    workspace = Workspace.open(repo, home=home)
    try:
        yield workspace
    finally:
        workspace.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real Postgres with pgvector and pg_trgm (pgserver's wheel), started once per test session.

    Its data directory is in a temporary directory and it listens on a unix socket only (no TCP port).
    Not under pytest's own temporary root: every pytest session started on the machine makes that 0700
    again, and a server running as root runs as pgserver's own user, which would then lose its files.
    Skipped, with the reason in the summary (`-rs`), only when the wheel is missing or cannot start here.
    Yields the URL of its `postgres` database; `pg_url` makes a fresh database per test."""
    try:
        with warnings.catch_warnings():  # platformdirs warns about a missing XDG_RUNTIME_DIR on import
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:
        pytest.skip(f"Postgres tests need pgserver (pip install -e '.[dev]'): {exc}")
    parent = Path(tempfile.mkdtemp(prefix="tether-test-pg-"))
    try:
        server = pgserver.get_server(parent / "data", cleanup_mode="stop")
        url = server.get_uri()
    except Exception as exc:  # the wheel's server did not start on this machine
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip(f"pgserver could not start a Postgres here: {type(exc).__name__}: {exc}")
    try:
        yield url
    finally:
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


def database_url(server_url: str, name: str) -> str:
    """The URL of database `name` on the server of `server_url` (pgserver's `.../postgres?host=...`)."""
    base, _, query = server_url.partition("?")
    return f"{base.rsplit('/', 1)[0]}/{name}" + (f"?{query}" if query else "")


@pytest.fixture
def pg_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database on the session's Postgres, dropped after the test."""
    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield database_url(postgres_server, name)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def note_files(repo: Path) -> list[Path]:
    return sorted((repo / ".tether" / "memories").glob("*.md"))


def index_ids(repo: Path) -> set[str]:
    """Ids in the index, read with a plain sqlite3 connection (not through the code under test)."""
    path = repo / ".tether" / "index.db"
    if not path.exists():
        return set()
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def tether(repo: Path) -> Callable[..., Run]:
    """Run `tether ARGS` in-process through `tether.__main__.main` (exit codes as the real command has them)."""
    from tether.__main__ import main

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Run:
        runner = CliRunner()
        code = 0
        with runner.isolation(input=input, env=env) as (out, err, _):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            return Run(code, out.getvalue().decode(), err.getvalue().decode())

    return run


@pytest.fixture
def tether_proc(repo: Path, home: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the installed `.venv/bin/tether` as a real subprocess in the repository."""

    def run(
        *args: str, input: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(TETHER_BIN), *args],
            cwd=cwd or repo,
            input=input,
            capture_output=True,
            text=True,
            env={**os.environ, "TETHER_HOME": str(home), **(env or {})},
            timeout=60,
        )

    return run


# -- hooks, run as the agents run them ------------------------------------------------------------------


def run_hook(
    agent: str, event: str, payload: Any, cwd: Path, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "tether", "hook", agent, event],
        input=body,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TETHER_HOME": str(home), **(env or {})},
    )


def claude(event: str, repo: Path, session: str = "sess-1", **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": event,
        **extra,
    }


def context_of(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"].get("additionalContext", "")) if out.strip() else ""


def ids_of(lines: Sequence[str]) -> list[str]:
    return [line.split()[0] for line in lines if line.strip()]


# -- Claude Code transcript entries (JSON lines), for the distill and transcript tests ---------------------


def user(text: str, cwd: str = "/repo", **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": "s1",
        "cwd": cwd,
        "message": {"role": "user", "content": text},
        **extra,
    }


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": "s1",
        "cwd": "/repo",
        "message": {"role": "assistant", "content": list(blocks)},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}


def append(path: Path, *entries: dict[str, Any] | str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for entry in entries:
            handle.write((entry if isinstance(entry, str) else json.dumps(entry)) + "\n")
