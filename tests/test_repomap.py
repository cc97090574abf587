from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tether.errors import TetherError
from tether.repo.cochange import MAX_COMMIT_FILES
from tether.repo.fanin import fan_in
from tether.repo.git import Change, Commit, blob_id, collapse_renames
from tether.repo.map import RepoMap
from tether.repo.refresh import Refresh
from tether.store.sqlite.repomap import RepoMapTables, migrate_repomap

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bigrepo


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    # The machine's own git config must not change what the tests see.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


class Repo:
    """A real git repository in tmp_path, with deterministic commit dates."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = 1_700_000_000
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
        }
        proc = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def commit(self, files: dict[str, str] | None = None, msg: str = "change") -> str:
        self.write(files or {})
        self.git("add", "-A")
        self.clock += 60
        self.git("commit", "-q", "--allow-empty", "-m", msg)
        return self.git("rev-parse", "HEAD")

    def touch(self, *paths: str) -> str:
        """One commit changing each of `paths` (new content every time)."""
        return self.commit({p: f"{p} at {self.clock}\n" for p in paths})


def open_map(root: Path, db: Path) -> RepoMap:
    conn = sqlite3.connect(db)
    migrate_repomap(conn)
    return RepoMap(root, RepoMapTables(conn))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


def dump(rm: RepoMap) -> tuple[list[tuple[str, int, int]], list[tuple[str, str, int]]]:
    conn = rm.tables.conn
    paths = conn.execute("SELECT path, changes, present FROM repomap_paths ORDER BY path").fetchall()
    pairs = conn.execute(  # (each pair in both directions: which path has the lower id depends on the build)
        "SELECT pa.path, pb.path, r.n FROM repomap_pairs r JOIN repomap_paths pa ON pa.id = r.a "
        "JOIN repomap_paths pb ON pb.id = r.b UNION ALL SELECT pb.path, pa.path, r.n FROM repomap_pairs r "
        "JOIN repomap_paths pa ON pa.id = r.a JOIN repomap_paths pb ON pb.id = r.b ORDER BY 1, 2"
    ).fetchall()
    return paths, pairs


# -- schema ------------------------------------------------------------------------------------------


def test_migration_creates_everything_and_is_idempotent(db: Path) -> None:
    conn = sqlite3.connect(db)
    migrate_repomap(conn)
    migrate_repomap(conn)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"repomap_state", "repomap_paths", "repomap_pairs", "repomap_imports"} <= names


def test_an_index_storing_pairs_both_ways_keeps_each_once(repo: Repo, tmp_path: Path) -> None:
    """Before 0010 each pair was stored in both directions: opening such an index keeps one, with the same
    counts and neighbours."""
    from tether.store.sqlite.store import SQLiteStore

    repo.commit({"a.py": "1", "b.py": "1", "c.py": "1"})
    repo.commit({"a.py": "2", "b.py": "2"})
    repo.commit({"b.py": "3", "c.py": "3", "a.py": "3"})
    store = SQLiteStore(tmp_path / "index.db")
    rm = RepoMap(repo.path, store.repomap())
    rm.refresh()
    expected = {p: rm.neighbours(p, 3, min_count=1) for p in ("a.py", "b.py", "c.py")}
    assert expected["b.py"] == [("a.py", 1.0), ("c.py", 2 / 3)]
    conn = store.conn
    rows = conn.execute("SELECT a, b, n FROM repomap_pairs ORDER BY a, b").fetchall()
    assert rows and all(a < b for a, b, _ in rows)
    # As a tether before 0010 left it: both directions, no index on `b`, the migration not recorded.
    conn.execute("INSERT INTO repomap_pairs SELECT b, a, n FROM repomap_pairs")
    conn.execute("DROP INDEX repomap_pairs_b")
    conn.execute("DELETE FROM migrations WHERE name = '0010_repomap_pairs_once'")
    store.close()
    store = SQLiteStore(tmp_path / "index.db")  # opening it runs the migration
    assert store.conn.execute("SELECT a, b, n FROM repomap_pairs ORDER BY a, b").fetchall() == rows
    rm = RepoMap(repo.path, store.repomap())
    assert {p: rm.neighbours(p, 3, min_count=1) for p in ("a.py", "b.py", "c.py")} == expected
    assert rm.tables.pair_count("c.py", "b.py") == rm.tables.pair_count("b.py", "c.py") == 2
    store.close()


def test_missing_tables_say_what_to_do(tmp_path: Path) -> None:
    rm = RepoMap(tmp_path, RepoMapTables(sqlite3.connect(tmp_path / "empty.db")))
    with pytest.raises(TetherError, match="tether reindex"):
        rm.fan_in("a.py")


# -- files -------------------------------------------------------------------------------------------


def test_git_files_are_tracked_plus_untracked_not_ignored(repo: Repo, db: Path) -> None:
    repo.commit(
        {
            ".gitignore": "build/\n*.log\n",
            "src/app.py": "x = 1\n",
            "gone.py": "",
            ".tether/memories/abcd1234.md": "note\n",
        }
    )
    repo.write({"new.py": "", "build/out.o": "", "debug.log": "", "docs/guide.md": ""})
    (repo.path / "gone.py").unlink()  # deleted in the work tree, still in the index
    rm = open_map(repo.path, db)
    report = rm.refresh()
    assert report.files == 4
    assert rm.tables.present_paths() == {".gitignore", "src/app.py", "new.py", "docs/guide.md"}
    assert rm.is_git()
    assert rm.exists("src/app.py") and rm.exists("./src//app.py") and rm.exists(str(repo.path / "new.py"))
    assert rm.exists("src/") and rm.exists("docs/")
    assert not rm.exists("gone.py")
    assert not rm.exists("build/") and not rm.exists("sr/")
    assert not rm.exists("../outside.py")


def test_ignored_files_present_at_refresh_do_not_exist(repo: Repo, db: Path) -> None:
    repo.commit({".gitignore": "*.log\n"})
    repo.write({"old.log": ""})
    os.utime(repo.path / "old.log", (1_000_000, 1_000_000))
    rm = open_map(repo.path, db)
    rm.refresh()
    # ctime, not mtime, says when it appeared; it was there before the refresh.
    assert not rm.exists("old.log")


def test_exists_sees_files_created_or_deleted_since_refresh(repo: Repo, db: Path) -> None:
    repo.commit({"a.py": "", "b.py": ""})
    rm = open_map(repo.path, db)
    rm.refresh()
    (repo.path / "b.py").unlink()
    repo.write({"fresh/c.py": ""})
    assert not rm.exists("b.py")
    assert rm.exists("fresh/c.py") and rm.exists("fresh/")
    assert rm.exists("a.py")


def test_plain_directory(tmp_path: Path, db: Path) -> None:
    root = tmp_path / "plain"
    for rel in [
        "main.py",
        "pkg/__init__.py",
        "pkg/util.py",
        ".env.example",
        "node_modules/lib/index.js",
        ".venv/lib/site.py",
        "__pycache__/main.cpython-311.pyc",
        ".hidden/secret.txt",
        ".tether/memories/x.md",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("from pkg import util\n" if rel == "main.py" else "")
    rm = open_map(root, db)
    report = rm.refresh()
    assert (report.files, report.new_commits, report.renames) == (4, 0, [])
    assert rm.tables.present_paths() == {"main.py", "pkg/__init__.py", "pkg/util.py", ".env.example"}
    assert not rm.is_git()
    assert rm.fan_in("pkg/util.py") == 1
    assert rm.neighbours("main.py") == []
    assert not rm.exists("node_modules/")
    # A second refresh of an unchanged directory changes nothing.
    assert rm.refresh() == report.__class__([], 0, False, 4)


def test_empty_repo_lists_untracked_files(repo: Repo, db: Path) -> None:
    repo.write({"a.py": "import b\n", "b.py": ""})
    rm = open_map(repo.path, db)
    report = rm.refresh()
    assert (report.files, report.new_commits) == (2, 0)
    assert rm.is_git() and rm.fan_in("b.py") == 1


def test_lookups_need_no_git(repo: Repo, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    open_map(repo.path, db).refresh()
    monkeypatch.setenv("PATH", "")  # any git call would now fail
    rm = open_map(repo.path, db)
    assert rm.is_git() and rm.exists("a.py")
    assert rm.neighbours("a.py") == [("b.py", 1.0)]
    assert rm.fan_in("a.py") == 0


# -- renames -----------------------------------------------------------------------------------------


def test_git_mv_is_reported_once(repo: Repo, db: Path) -> None:
    repo.commit({"a.py": "alpha\n" * 20, "keep.py": ""})
    rm = open_map(repo.path, db)
    assert rm.refresh().renames == []  # first build: nothing to follow yet
    repo.git("mv", "a.py", "b.py")
    repo.commit()
    report = rm.refresh()
    assert (report.renames, report.new_commits, report.rebuilt) == ([("a.py", "b.py")], 1, False)
    assert rm.refresh().renames == []
    assert rm.exists("b.py") and not rm.exists("a.py")


def test_chained_and_edited_renames_collapse(repo: Repo, db: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(30))
    repo.commit({"a.py": body, "x/old.py": body.upper()})
    rm = open_map(repo.path, db)
    rm.refresh()
    repo.git("mv", "a.py", "b.py")
    repo.commit()
    (repo.path / "lib").mkdir()
    repo.git("mv", "b.py", "lib/c.py")
    repo.commit({"lib/c.py": body + "one more line\n"})  # rename + edit in one commit
    repo.git("mv", "x/old.py", "x/new.py")
    repo.commit({"x/new.py": body.upper().replace("LINE 3\n", "LINE THREE\n")})
    report = rm.refresh()
    assert report.renames == [("a.py", "lib/c.py"), ("x/old.py", "x/new.py")]
    assert report.new_commits == 3


def test_cochange_follows_renames(repo: Repo, db: Path) -> None:
    repo.commit({"a.py": "".join(f"a{i}\n" for i in range(30)), "x.py": "x\n"})
    repo.touch("x.py")
    repo.commit({"a.py": "".join(f"a{i}\n" for i in range(31)), "x.py": "x2\n"})
    rm = open_map(repo.path, db)
    rm.refresh()
    assert rm.neighbours("x.py") == [("a.py", 2 / 3)]
    repo.git("mv", "a.py", "b.py")
    repo.commit()
    rm.refresh()
    assert rm.neighbours("x.py") == [("b.py", 2 / 3)]
    assert rm.neighbours("b.py") == [("x.py", 2 / 3)]  # b.py: 2 changes as a.py + the rename
    assert rm.neighbours("a.py") == []


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([[("a", "b")], [("b", "c")]], [("a", "c")]),
        ([[("a", "b")], [("b", "a")]], []),
        ([[("a", "b"), ("b", "a")]], [("a", "b"), ("b", "a")]),  # a swap in one commit
        ([[("a", "b")], [("c", "a")], [("b", "d")]], [("a", "d"), ("c", "a")]),
        ([[("a", "b")], [("D", "b")]], []),  # renamed, then deleted: nothing to follow
        ([[("a", "b")], [("D", "b")], [("c", "b")]], [("c", "b")]),
    ],
)
def test_collapse_renames(steps: list[list[tuple[str, str]]], expected: list[tuple[str, str]]) -> None:
    commits = [
        Commit(
            f"c{i}",
            tuple(Change("D", new) if old == "D" else Change("R", new, old) for old, new in step),
            len(step),
        )
        for i, step in enumerate(steps)
    ]
    assert collapse_renames(commits) == expected


def test_rename_onto_a_deleted_path_takes_it_over(repo: Repo, db: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(30))
    repo.commit({"old.py": "old\n", "friend.py": "f\n", "mover.py": body, "other.py": "o\n"})
    repo.touch("old.py", "friend.py")
    repo.touch("mover.py", "other.py")
    rm = open_map(repo.path, db)
    rm.refresh()
    repo.git("rm", "-q", "old.py")
    repo.commit()
    repo.git("mv", "mover.py", "old.py")
    repo.commit()
    report = rm.refresh()
    assert report.renames == [("mover.py", "old.py")]
    # old.py now carries mover.py's history, not the deleted file's.
    assert rm.neighbours("old.py") == [("other.py", 2 / 3)]
    assert rm.neighbours("friend.py") == []


# -- co-change ---------------------------------------------------------------------------------------


def test_cochange_counts_and_confidence(repo: Repo, db: Path) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "c.py")
    repo.touch("a.py")
    repo.touch("d.py", "e.py")
    repo.touch("d.py", "e.py")
    rm = open_map(repo.path, db)
    report = rm.refresh()
    assert (report.new_commits, report.rebuilt) == (6, True)
    t = rm.tables
    assert (t.change_count("a.py"), t.change_count("b.py"), t.change_count("c.py")) == (4, 2, 1)
    assert (t.pair_count("a.py", "b.py"), t.pair_count("b.py", "a.py"), t.pair_count("a.py", "c.py")) == (
        2,
        2,
        1,
    )
    assert rm.neighbours("a.py") == [("b.py", 0.5)]  # c.py shares one commit only
    assert rm.neighbours("b.py") == [("a.py", 1.0)]
    assert rm.neighbours("a.py", min_count=1) == [("b.py", 0.5), ("c.py", 0.25)]
    assert rm.neighbours("d.py") == [("e.py", 1.0)]


def test_neighbours_order_limit_and_existence(repo: Repo, db: Path) -> None:
    for _ in range(3):
        repo.touch("hub.py", "z.py", "y.py", "w.py")
    repo.touch("hub.py", "x.py")
    repo.touch("hub.py", "x.py")
    rm = open_map(repo.path, db)
    rm.refresh()
    # y, w and z tie on 3 of 5: the path breaks the tie.
    assert rm.neighbours("hub.py") == [("w.py", 0.6), ("y.py", 0.6)]
    assert rm.neighbours("hub.py", limit=5)[-1] == ("x.py", 0.4)
    assert rm.neighbours("hub.py", min_confidence=0.5, limit=5) == [
        ("w.py", 0.6),
        ("y.py", 0.6),
        ("z.py", 0.6),
    ]
    repo.git("rm", "-q", "w.py")
    repo.commit()
    rm.refresh()
    assert rm.neighbours("hub.py") == [("y.py", 0.6), ("z.py", 0.6)]
    assert rm.neighbours("hub.py", limit=0) == [] and rm.neighbours("src/") == []


def test_sweeping_commits_are_skipped(repo: Repo, db: Path) -> None:
    repo.touch("a.py", "b.py")
    repo.touch(*(f"f{i:02}.py" for i in range(MAX_COMMIT_FILES - 2)), "a.py", "b.py")  # 30 files: counted
    repo.touch(*(f"g{i:02}.py" for i in range(MAX_COMMIT_FILES - 1)), "a.py", "b.py")  # 31 files: skipped
    rm = open_map(repo.path, db)
    assert rm.refresh().new_commits == 3
    assert rm.tables.pair_count("a.py", "b.py") == 2
    assert rm.tables.change_count("a.py") == 2
    assert rm.tables.change_count("g00.py") == 0 and rm.exists("g00.py")


def test_merges_are_skipped(repo: Repo, db: Path) -> None:
    repo.touch("a.py", "b.py", "base.py")
    repo.git("checkout", "-q", "-b", "topic")
    repo.touch("a.py", "b.py")
    repo.git("checkout", "-q", "main")
    repo.touch("c.py")
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    rm = open_map(repo.path, db)
    report = rm.refresh()
    assert report.new_commits == 3  # the merge is not read
    assert rm.tables.pair_count("a.py", "b.py") == 2  # the merge's diff would have made it 3
    assert rm.tables.change_count("a.py") == 2


def test_one_new_commit_reads_only_that_commit(repo: Repo, db: Path, tmp_path: Path) -> None:
    for i in range(12):
        repo.touch("a.py", f"m{i % 3}.py", "b.py" if i % 2 else "c.py")
    rm = open_map(repo.path, db)
    assert rm.refresh().new_commits == 12
    repo.touch("a.py", "b.py", "new.py")
    report = rm.refresh()
    assert (report.new_commits, report.rebuilt, report.renames) == (1, False, [])
    assert rm.refresh().new_commits == 0
    # The incremental result is exactly what a full build of the same history gives.
    fresh = open_map(repo.path, tmp_path / "fresh.db")
    assert fresh.refresh().new_commits == 13
    assert dump(rm) == dump(fresh)


def test_rewritten_history_rebuilds_without_renames(repo: Repo, db: Path, tmp_path: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(30))
    first = repo.commit({"a.py": body, "b.py": "b\n"})
    repo.touch("a.py", "b.py")
    rm = open_map(repo.path, db)
    rm.refresh()
    repo.git("mv", "a.py", "moved.py")
    repo.commit()
    repo.touch("moved.py", "b.py")
    rm.refresh()
    # Someone force-pushes: the rename and the edits are gone, different commits take their place.
    repo.git("reset", "-q", "--hard", first)
    repo.touch("b.py", "c.py")
    repo.touch("b.py", "c.py")
    report = rm.refresh()
    assert (report.rebuilt, report.renames, report.new_commits) == (True, [], 3)
    assert not rm.exists("moved.py")
    assert rm.neighbours("b.py") == [("c.py", 2 / 3)]
    fresh = open_map(repo.path, tmp_path / "fresh.db")
    fresh.refresh()
    assert dump(rm) == dump(fresh)


def test_map_rooted_below_the_work_tree(repo: Repo, db: Path) -> None:
    repo.touch("app/a.py", "app/b.py", "other/x.py")
    repo.touch("app/a.py", "app/b.py", "other/x.py")
    rm = open_map(repo.path / "app", db)
    report = rm.refresh()
    assert report.files == 2 and rm.exists("a.py") and not rm.exists("other/x.py")
    assert rm.neighbours("a.py") == [("b.py", 1.0)]


# -- fan-in through the facade ---------------------------------------------------------------------


def test_fan_in_is_refreshed_incrementally(repo: Repo, db: Path) -> None:
    repo.commit(
        {
            "src/pkg/__init__.py": "",
            "src/pkg/core.py": "",
            "src/pkg/a.py": "from pkg import core\n",
            "src/pkg/b.py": "from . import core\n",
            "web/util.ts": "export const x = 1\n",
            "web/app.ts": "import { x } from './util'\n",
        }
    )
    rm = open_map(repo.path, db)
    rm.refresh()
    assert (rm.fan_in("src/pkg/core.py"), rm.fan_in("web/util.ts"), rm.fan_in("src/")) == (2, 1, 0)
    # Same size and mtime: the cached parse is trusted, so the file is not read again.
    c = repo.path / "src/pkg/b.py"
    st = c.stat()
    c.write_text("from . import a   \n")  # same size
    os.utime(c, ns=(st.st_atime_ns, st.st_mtime_ns))
    rm.refresh()
    assert rm.fan_in("src/pkg/core.py") == 2
    # A real edit is parsed.
    c.write_text("import os\n")
    rm.refresh()
    assert rm.fan_in("src/pkg/core.py") == 1
    (repo.path / "src/pkg/a.py").unlink()
    rm.refresh()
    assert rm.fan_in("src/pkg/core.py") == 0
    assert rm.tables.conn.execute("SELECT count(*) FROM repomap_imports").fetchone()[0] == 5


def test_concurrent_refreshes_do_not_double_count(repo: Repo, db: Path) -> None:
    for _ in range(5):
        repo.touch("a.py", "b.py")
    open_map(repo.path, db).refresh()
    for _ in range(3):
        repo.touch("a.py", "b.py")
    script = (
        "import sqlite3, sys; from pathlib import Path; from tether.repo.map import RepoMap;"
        "from tether.store.sqlite.repomap import RepoMapTables;"
        "conn = sqlite3.connect(sys.argv[2], timeout=30);"
        "print(RepoMap(Path(sys.argv[1]), RepoMapTables(conn)).refresh().new_commits)"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(repo.path), str(db)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(outputs)[-1] == "3"  # someone read the three commits; nobody counted them twice
    assert RepoMapTables(sqlite3.connect(db)).pair_count("a.py", "b.py") == 8


def test_head_stamp_moves_with_every_change_of_head_and_needs_no_git(repo: Repo, tmp_path: Path) -> None:
    from tether.repo.git import head_stamp

    plain = tmp_path / "plain"
    plain.mkdir()
    assert head_stamp(plain) is None  # not in a repository
    repo.touch("a.py")
    seen = {head_stamp(repo.path)}
    repo.touch("a.py")  # a commit
    seen.add(head_stamp(repo.path))
    repo.git("checkout", "-q", "-b", "other")  # another branch, same commit
    seen.add(head_stamp(repo.path))
    repo.git("checkout", "-q", "--detach")  # a detached HEAD
    seen.add(head_stamp(repo.path))
    assert None not in seen and len(seen) == 4
    (repo.path / "sub").mkdir()
    assert head_stamp(repo.path / "sub") == head_stamp(repo.path)  # from a subdirectory too
    worktree = tmp_path / "wt"
    repo.git("worktree", "add", "-q", str(worktree), "main")
    assert head_stamp(worktree) not in (None, head_stamp(repo.path))  # a worktree's own HEAD


# -- fan-in after a pull: the scan reads what git says changed, and ends where a full rebuild does ----------

PROJECT = {
    "src/app/__init__.py": "",
    "src/app/core.py": "import os\n",
    "src/app/util.py": "from . import core\n",
    "src/app/api.py": "from app import core, util\n",
    "src/app/old.py": "from .util import helper\n",
    "web/lib.ts": "export const x = 1\n",
    "web/view.ts": "import { x } from './lib'\n",
    "web/main.ts": "import './view'\nimport { y } from './helpers'\n",
}


def full_fan_in(root: Path, db: Path) -> dict[str, int]:
    """Fan-in as a first build computes it: a fresh index, every file read."""
    fresh = open_map(root, db)
    report = fresh.refresh()
    assert report.rebuilt
    return fan_ins(fresh)


def fan_ins(rm: RepoMap) -> dict[str, int]:
    return {p: n for p, n in rm.tables.fan_ins().items() if n}


def test_pulled_commits_and_local_edits_end_at_the_full_rebuilds_fan_in(tmp_path: Path) -> None:
    upstream = Repo(tmp_path / "upstream")
    upstream.commit(PROJECT)
    upstream.git("clone", "-q", str(upstream.path), str(tmp_path / "work"))
    work = Repo(tmp_path / "work")
    rm = open_map(work.path, tmp_path / "index.db")
    rm.refresh()
    before = fan_ins(rm)
    assert before == full_fan_in(work.path, tmp_path / "f0.db")
    assert (before["src/app/core.py"], before["web/lib.ts"]) == (2, 1)

    upstream.commit({"src/app/new.py": "from app.core import thing\nimport app.util\n"})  # added
    upstream.commit({"src/app/api.py": "from app import util\n"})  # modified: core loses an importer
    upstream.git("rm", "-q", "src/app/old.py")  # deleted, and util's importer with it
    upstream.commit()
    upstream.git("mv", "web/lib.ts", "web/base.ts")  # renamed: its importer now misses it ...
    upstream.commit({"web/helpers.ts": "import { x } from './base'\n"})  # ... and a new file finds it
    upstream.git("mv", "src/app/util.py", "src/app/tools.py")  # renamed with an edit
    upstream.commit({"src/app/tools.py": "from . import core\nfrom . import api\n"})
    # A merge whose own commit changes a file no side touched (history reads skip merges).
    upstream.git("checkout", "-q", "-b", "side")
    upstream.commit({"web/side.ts": "import './view'\n"})
    upstream.git("checkout", "-q", "main")
    upstream.commit({"src/app/core.py": "import os\nimport sys\n"})
    upstream.git("merge", "-q", "--no-ff", "--no-commit", "side")
    upstream.write({"web/view.ts": "import { x } from './base'\n"})
    upstream.git("add", "-A")
    upstream.git("commit", "-q", "-m", "merge side")

    work.git("pull", "-q", "--ff-only")
    report = rm.refresh()
    assert not report.rebuilt and report.new_commits == 7  # the merge is not one
    pulled = fan_ins(rm)
    assert pulled == full_fan_in(work.path, tmp_path / "f1.db")
    assert (pulled["web/base.ts"], pulled["web/view.ts"]) == (2, 2)

    # Edited without a commit: modified, staged, untracked, deleted.
    work.write({"src/app/api.py": "from app import core, tools\n"})
    work.write({"web/main.ts": "import './base'\n"})
    work.git("add", "web/main.ts")
    work.write({"src/app/extra.py": "from app import api\n"})
    (work.path / "web/side.ts").unlink()
    rm.refresh()
    edited = fan_ins(rm)
    assert edited == full_fan_in(work.path, tmp_path / "f2.db") != pulled
    # And put back: the parses made from the edits must not outlive them.
    work.git("reset", "-q", "--hard")
    (work.path / "src/app/extra.py").unlink()
    rm.refresh()
    assert fan_ins(rm) == full_fan_in(work.path, tmp_path / "f3.db") == pulled


POLYGLOT = {
    **PROJECT,
    "tools/run.py": "import vendored\nimport helpers.fmt\nfrom plugins import loader\n",
    "svc_a/run.py": "import common\n",
    "svc_a/common.py": "",
    "svc_b/run.py": "import common\n",
    "go.mod": "module example.com/m\n",
    "pkg/store/store.go": 'package store\n\nimport "example.com/m/pkg/log"\n',
    "pkg/log/log.go": "package log\n",
    "cmd/main.go": 'package main\n\nimport (\n\t"example.com/m/pkg/store"\n)\n',
    "crate/lib.rs": "mod net;\nmod db;\nuse crate::db::pool;\n",
    "crate/db.rs": "use super::net::wire;\n",
}

# Pulls in order, each what upstream commits: (why, files written, paths removed, (old, new) renames,
# whether the count may start from scratch).
PULLS: list[tuple[str, dict[str, str], list[str], list[tuple[str, str]], bool]] = [
    (
        "edits changing imports",
        {"src/app/api.py": "from app import util\n", "web/view.ts": "import './main'\n"},
        [],
        [],
        False,
    ),
    (
        "files added, one an import now finds",
        {"src/app/extra.py": "from . import core\n", "vendored.py": ""},
        [],
        [],
        False,
    ),
    ("a namespace module an import now finds", {"helpers/fmt.py": "import vendored\n"}, [], [], False),
    (
        "deletes and renames",
        {},
        ["src/app/old.py", "svc_a/common.py"],
        [("web/lib.ts", "web/base.ts")],
        False,
    ),
    (
        "a renamed file its importers follow",
        {"web/main.ts": "import './view'\nimport './base'\nimport './helpers'\n"},
        [],
        [("src/app/util.py", "src/app/tools.py")],
        False,
    ),
    (
        "JS and Rust files an import now finds",
        {"web/helpers/index.ts": "", "crate/net/mod.rs": "", "crate/db/pool.rs": "use crate::net;\n"},
        [],
        [],
        False,
    ),
    (
        "a Python package an existing import now resolves to",
        {"plugins/__init__.py": "", "plugins/loader.py": "from . import base\n", "plugins/base.py": ""},
        [],
        [],
        False,
    ),
    ("a package root over files that stay", {"svc_b/__init__.py": ""}, [], [], True),
    (
        "Go imports edited and a Go file added",
        {"cmd/main.go": "package main\n", "pkg/log/level.go": "package log\n"},
        [],
        [],
        False,
    ),
    (
        "a Go file importing a package not there yet, a test file importing another",
        {
            "cmd/main.go": (
                'package main\n\nimport (\n\t"example.com/m/pkg/store"\n\t"example.com/m/pkg/next"\n)\n'
            ),
            "tools/gen.go": 'package tools\n\nimport "example.com/m/pkg/next"\n',
            "pkg/log/log_test.go": 'package log\n\nimport "example.com/m/pkg/store"\n',
        },
        [],
        [],
        False,
    ),
    ("a Go package existing imports now find", {"pkg/next/next.go": "package next\n"}, [], [], False),
    (
        "a Go package's member moved to another, one removed",
        {"go.mod": "module example.com/m\n\ngo 1.22\n"},  # (a go.mod edit keeping its module)
        ["pkg/log/level.go"],
        [("pkg/next/next.go", "pkg/store/next.go")],
        False,
    ),
    (
        "a Go package's members all replaced",
        {"pkg/store/db.go": 'package store\n\nimport "example.com/m/pkg/log"\n'},
        ["pkg/store/store.go", "pkg/store/next.go"],
        [],
        False,
    ),
    (
        "a Go package's last member removed, another package's imports edited",
        {
            "pkg/store/db.go": (
                'package store\n\nimport (\n\t"example.com/m/pkg/log"\n\t"example.com/m/tools"\n)\n'
            )
        },
        ["pkg/log/log.go"],
        [],
        False,
    ),
    ("the Go module renamed", {"go.mod": "module example.com/renamed\n"}, [], [], True),
]


# Go counts after some of the pulls (each member of a package carries its count): the pulls moved them.
GO_COUNTS_AFTER = {
    "a Go file importing a package not there yet, a test file importing another": {
        "pkg/store/store.go": 2,
        "pkg/log/log.go": 1,
        "pkg/log/level.go": 1,
        "tools/gen.go": 0,
    },
    "a Go package existing imports now find": {"pkg/next/next.go": 2, "pkg/store/store.go": 2},
    "a Go package's member moved to another, one removed": {
        "pkg/store/next.go": 2,
        "pkg/store/store.go": 2,
        "pkg/log/log.go": 1,
    },
    "a Go package's members all replaced": {"pkg/store/db.go": 2, "pkg/log/log.go": 1},
    "a Go package's last member removed, another package's imports edited": {
        "tools/gen.go": 1,
        "pkg/store/db.go": 2,
    },
}


def test_pulls_of_every_kind_end_at_a_full_builds_files_and_fan_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether.repo.refresh as refresh

    # Which refreshes counted from scratch: the rest brought the last count up to date (`FanInChange`).
    from_scratch: list[bool] = []

    def counted_anew(files: Any, specs: Any) -> dict[str, int]:
        from_scratch[-1] = True
        return fan_in(files, specs)

    monkeypatch.setattr(refresh, "fan_in", counted_anew)
    upstream = Repo(tmp_path / "upstream")
    upstream.commit(POLYGLOT)
    upstream.git("clone", "-q", str(upstream.path), str(tmp_path / "work"))
    work = Repo(tmp_path / "work")
    rm = open_map(work.path, tmp_path / "index.db")
    from_scratch.append(False)
    rm.refresh()
    assert from_scratch == [True]  # a first build
    for n, (why, written, removed, moves, may_start_over) in enumerate(PULLS):
        for old, new in moves:
            upstream.git("mv", old, new)
        if removed:
            upstream.git("rm", "-q", *removed)
        upstream.commit(written, msg=why)
        work.git("pull", "-q", "--ff-only")
        from_scratch.append(False)
        rm.refresh()
        assert from_scratch[-1] == may_start_over, why
        fresh = open_map(work.path, tmp_path / f"fresh{n}.db")
        fresh.refresh()
        assert rm.tables.present_paths() == fresh.tables.present_paths(), why
        assert fan_ins(rm) == fan_ins(fresh), why
        counts = fan_ins(rm)
        assert {p: counts.get(p, 0) for p in GO_COUNTS_AFTER.get(why, {})} == GO_COUNTS_AFTER.get(why, {}), (
            why
        )
    counts = fan_ins(rm)  # the pulls moved what they say
    assert "tools/gen.go" not in counts and "pkg/store/db.go" not in counts  # (the module renamed)
    assert (counts["vendored.py"], counts["helpers/fmt.py"], counts["plugins/loader.py"]) == (2, 1, 1)
    assert (counts["web/helpers/index.ts"], counts["crate/net/mod.rs"], counts["crate/db/pool.rs"]) == (
        1,
        3,
        1,
    )


def test_a_committed_edit_keeping_size_and_mtime_is_read(repo: Repo, db: Path) -> None:
    # Regression: the stat alone trusted the old parse; git's blob id says the content is new.
    repo.commit({"a.py": "import b\n", "b.py": "", "c.py": ""})
    rm = open_map(repo.path, db)
    rm.refresh()
    target = repo.path / "a.py"
    st = target.stat()
    target.write_text("import c\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    repo.commit()
    rm.refresh()
    assert (rm.fan_in("b.py"), rm.fan_in("c.py")) == (0, 1)


def test_clean_files_are_trusted_by_their_blob_id(repo: Repo, db: Path) -> None:
    # What lets a pull read only what it changed: the cache row carries the blob git has for the file.
    repo.commit({"a.py": "import b\n", "b.py": ""})
    rm = open_map(repo.path, db)
    rm.refresh()
    rows = rm.tables.cached_imports()
    assert rows["a.py"].digest == repo.git("rev-parse", "HEAD:a.py")
    assert blob_id(b"import b\n") == repo.git("rev-parse", "HEAD:a.py")


def test_rewritten_history_ends_at_the_full_rebuilds_fan_in(repo: Repo, db: Path, tmp_path: Path) -> None:
    first = repo.commit(PROJECT)
    repo.commit({"src/app/api.py": "from app import util\n", "web/main.ts": "import './lib'\n"})
    rm = open_map(repo.path, db)
    rm.refresh()
    # A force-push: the map's last commit is no longer an ancestor of HEAD.
    repo.git("reset", "-q", "--hard", first)
    repo.commit({"src/app/core.py": "from . import util\n", "web/lib.ts": "import './view'\n"})
    report = rm.refresh()
    assert report.rebuilt
    assert fan_ins(rm) == full_fan_in(repo.path, tmp_path / "fresh.db")
    assert fan_ins(rm)["src/app/core.py"] == 2


def test_a_lost_import_cache_ends_at_the_full_rebuilds_fan_in(repo: Repo, db: Path, tmp_path: Path) -> None:
    repo.commit(PROJECT)
    rm = open_map(repo.path, db)
    rm.refresh()
    rm.tables.conn.execute("DELETE FROM repomap_imports")
    rm.tables.conn.commit()
    repo.commit({"src/app/api.py": "import os\n", "web/view.ts": "import './main'\n"})
    report = rm.refresh()
    assert not report.rebuilt
    assert fan_ins(rm) == full_fan_in(repo.path, tmp_path / "fresh.db")
    assert len(rm.tables.cached_imports()) == len(PROJECT)


# -- a long read saved part way: where it stopped, what is left, and a killed build continuing ----------


def test_a_watermark_names_exactly_what_is_left_at_every_stop(repo: Repo) -> None:
    """Merges, two branches side by side, a root of its own: stopped after any prefix of the stream, the
    tips it leaves make `git rev-list` list exactly the commits the stream has not given yet."""
    from tether.repo.git import stream_commits
    from tether.repo.watermark import Watermark

    repo.touch("a.py")
    fork = repo.touch("a.py", "b.py")
    repo.git("checkout", "-q", "-b", "side")
    for _ in range(3):
        repo.touch("s.py")
    repo.git("checkout", "-q", "main")
    for _ in range(3):
        repo.touch("a.py")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    repo.git("checkout", "-q", "-b", "late", fork)
    repo.touch("l.py")
    repo.git("checkout", "-q", "main")
    repo.touch("b.py")
    repo.git("merge", "-q", "--no-ff", "-m", "merge late", "late")
    repo.git("checkout", "-q", "--orphan", "other")
    repo.git("rm", "-rfq", ".")
    repo.touch("o.py")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--allow-unrelated-histories", "-m", "merge other", "other")
    head = repo.git("rev-parse", "HEAD")

    stream = list(stream_commits(repo.path, [head]))
    assert len(stream) == int(repo.git("rev-list", "--count", head)) and sum(c.merge for c in stream) == 3
    widest = 0
    for stop in range(len(stream) + 1):
        mark = Watermark()
        for commit in stream[:stop]:
            mark.advance(commit.sha, commit.parents)
        widest = max(widest, len(mark.tips))
        left = repo.git("rev-list", *mark.revs(head), "--").split()
        assert sorted(left) == sorted(c.sha for c in stream[stop:]), stop
        assert Watermark.decode(mark.encode()) == mark
    assert widest >= 2  # some stops had two lines of history open


def test_a_history_stream_left_part_way_or_unread_stops_its_git(repo: Repo) -> None:
    """git starts when the stream is made (a refresh's setup overlaps its walk): a stream closed before its
    end, or never read, leaves no git running."""
    from tether.repo.git import stream_commits

    for _ in range(5):
        repo.touch("a.py", "b.py")
    with stream_commits(repo.path, ["HEAD"]) as history:
        assert next(iter(history)).parents == ()  # the root first
    unread = stream_commits(repo.path, ["HEAD"])
    unread.close()
    assert history._log.proc.returncode is not None and unread._log.proc.returncode is not None
    assert len(list(stream_commits(repo.path, ["HEAD"]))) == 5


def full_dump(rm: RepoMap) -> tuple[object, ...]:
    """Everything a refresh writes, by path (ids are the store's own business), without its clock and the
    random part of its fan-in basis."""
    conn = rm.tables.conn
    fan = conn.execute("SELECT path, fan_in FROM repomap_paths WHERE fan_in > 0 ORDER BY path").fetchall()
    imports = conn.execute("SELECT path, digest, specs FROM repomap_imports ORDER BY path").fetchall()
    state = {k: v for k, v in rm.tables.state().items() if k not in ("refreshed_at_ns", "head_stamp")}
    state["fan_in_basis"] = state["fan_in_basis"].partition(":")[0]
    # HEAD's last commits for the recent-change channel, newest first (their numbers are the store's own)
    window = conn.execute(
        "SELECT c.sha, c.parent, group_concat(t.path, ' ') FROM repomap_recent_commits c"
        " LEFT JOIN (SELECT * FROM repomap_recent_touches ORDER BY path) t ON t.ord = c.ord"
        " GROUP BY c.ord ORDER BY c.ord DESC"
    ).fetchall()
    return (*dump(rm), fan, imports, state, window)


@pytest.mark.parametrize("checkpoint", [None, 1])
@pytest.mark.parametrize("kind", ["pull", "rewrite"])
def test_the_log_tells_whether_heads_history_still_holds_what_the_map_read(
    repo: Repo, tmp_path: Path, kind: str, checkpoint: int | None
) -> None:
    # No `git merge-base` on a refresh's path: the map's last commit is in HEAD's history exactly when a
    # commit `git log HEAD ^last` lists has it as a parent. A save part way (every commit here) before
    # the log has shown it asks git.
    start = repo.commit(PROJECT)
    repo.touch("src/app/core.py", "src/app/util.py")
    rm = open_map(repo.path, tmp_path / "map.db")
    rm.refresh()
    if kind == "pull":
        # A commit after the map's last one, merged into a branch from before it: the branch's commits
        # (its first parents) are listed first, so the save after the first commit is made before the log
        # has shown the last commit as a parent.
        repo.touch("src/app/core.py", "src/app/api.py")
        repo.git("checkout", "-q", "-b", "side", start)
        repo.touch("web/lib.ts", "web/view.ts")
        repo.touch("web/lib.ts", "web/view.ts")
        repo.git("merge", "-q", "--no-ff", "-m", "merge main", "main")
    else:  # force-pushed: the map's last commit is gone from HEAD's history, its parent is not
        repo.git("reset", "-q", "--hard", start)
        repo.touch("web/lib.ts", "web/view.ts")
        repo.touch("web/lib.ts", "web/view.ts")
    report = rm.refresh() if checkpoint is None else rm.refresh(checkpoint=checkpoint)
    assert (report.rebuilt, report.new_commits) == ((False, 3) if kind == "pull" else (True, 3))
    fresh = open_map(repo.path, tmp_path / "fresh.db")
    fresh.refresh()
    assert full_dump(rm) == full_dump(fresh)


@pytest.mark.parametrize("change", ["a pulled commit", "a local edit"])
def test_a_refresh_overtaken_between_its_reads_and_its_write_writes_what_it_listed(
    repo: Repo, tmp_path: Path, change: str
) -> None:
    # A refresh writes its files and counts as differences from what it read at its start, which it
    # reuses only while no other refresh has written since. Here another one writes in between, listing
    # a file this one did not (the first write moves history too; the second, files and counts only).
    repo.commit(PROJECT)
    rm = open_map(repo.path, tmp_path / "map.db")
    rm.refresh()
    edit = {"src/app/api.py": "from app import util\n"}  # core loses an importer
    repo.commit(edit) if change == "a pulled commit" else repo.write(edit)
    other = open_map(repo.path, tmp_path / "map.db")

    def overtaken(stage: str, done: int, total: int | None) -> None:
        if stage == "writing":
            for thread in threading.enumerate():  # this refresh has listed and scanned the work tree
                if thread.name.startswith("tether-"):
                    thread.join()
            repo.write({"src/app/extra.py": "from app import core\n"})
            assert other.refresh().files == 9

    assert Refresh(repo.path, rm.tables, progress=overtaken).run().files == 8
    (repo.path / "src/app/extra.py").unlink()
    fresh = open_map(repo.path, tmp_path / "fresh.db")
    fresh.refresh()
    assert rm.tables.present_paths() == fresh.tables.present_paths()
    assert fan_ins(rm) == fan_ins(fresh)


def test_saving_after_every_commit_ends_where_one_write_does(repo: Repo, tmp_path: Path) -> None:
    repo.commit(PROJECT)
    for n in range(4):
        repo.touch("src/app/core.py", "src/app/util.py")
        repo.touch("web/lib.ts", "web/view.ts", f"web/n{n}.ts")
    repo.git("mv", "src/app/util.py", "src/app/tools.py")
    repo.commit()
    repo.git("checkout", "-q", "-b", "side", "HEAD~3")
    repo.touch("src/app/api.py", "web/side.ts")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    repo.touch("src/app/tools.py", "src/app/api.py")

    whole = open_map(repo.path, tmp_path / "whole.db")
    saved = open_map(repo.path, tmp_path / "saved.db")
    assert whole.refresh() == saved.refresh(checkpoint=1)
    assert full_dump(saved) == full_dump(whole)


# A build in its own process, saving every `argv[3]` commits; prints what its refresh reports.
BUILD = (
    "import json, sqlite3, sys; from pathlib import Path; from tether.repo.map import RepoMap;"
    "from tether.store.sqlite.repomap import RepoMapTables;"
    "conn = sqlite3.connect(sys.argv[2], timeout=60);"
    "r = RepoMap(Path(sys.argv[1]), RepoMapTables(conn)).refresh(checkpoint=int(sys.argv[3]));"
    "print(json.dumps([r.renames, r.new_commits, r.rebuilt]))"
)


def saved_mark(db: Path) -> str | None:
    conn = sqlite3.connect(db, timeout=60)
    try:
        row = conn.execute("SELECT value FROM repomap_state WHERE key = 'partial'").fetchone()
        return str(row[0]) if row else None
    finally:
        conn.close()


def build_or_kill(root: Path, db: Path, checkpoint: int, kill: bool) -> tuple[str | None, list[Any] | None]:
    """Run a build in a real process. With `kill`, SIGKILL it as soon as it has saved a part of its own
    (the watermark it left, None); when it finishes first, or without `kill`, what it reported."""
    before = saved_mark(db)
    proc = subprocess.Popen(
        [sys.executable, "-c", BUILD, str(root), str(db), str(checkpoint)], stdout=subprocess.PIPE, text=True
    )
    while kill and proc.poll() is None:
        mark = saved_mark(db)
        if mark is not None and mark != before:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
            return saved_mark(db), None
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    return None, json.loads(out)


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    """1,200 commits over ~150 files (with renames, a delete, import lines), and a merged side branch."""
    root = tmp_path / "gen"
    bigrepo.generate(root, commits=1_200, files=150)
    side = Repo.__new__(Repo)
    side.path, side.clock = root, 1_700_000_000
    listed = sorted(p for p in side.git("ls-files").split() if p.endswith(".py"))
    side.git("checkout", "-q", "-b", "side", "HEAD~300")
    side.touch(*listed[:2])
    side.touch(*listed[:2])
    side.git("checkout", "-q", "main")
    side.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    return root


def wal_map(root: Path, db: Path) -> RepoMap:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")  # the test reads the builder's saves while it writes
    migrate_repomap(conn)
    return RepoMap(root, RepoMapTables(conn))


def test_a_killed_first_build_continues_where_it_stopped(generated: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    rm = wal_map(generated, db)
    stops = []
    while len(stops) < 3:  # killed three times, each time right after a save of its own
        mark, report = build_or_kill(generated, db, 100, kill=True)
        if mark is None:
            break
        stops.append(mark)
    assert len(stops) >= 1, "every build finished before it could be killed"
    assert not RepoMap(generated, rm.tables).built()
    left = rm.backlog()
    assert 0 < left < 1_202  # part is counted; the rest is what is left
    _, report = build_or_kill(generated, db, 100, kill=False)
    assert report is not None
    renames, read, rebuilt = report
    assert (renames, read, rebuilt) == ([], left, True)  # continued, still a build from nothing
    assert RepoMap(generated, rm.tables).built() and rm.backlog() == 0

    clean = wal_map(generated, tmp_path / "clean.db")
    assert clean.refresh().rebuilt
    assert full_dump(rm) == full_dump(clean)


def test_a_killed_refresh_after_a_pull_reports_every_rename_once_it_completes(
    generated: Path, tmp_path: Path
) -> None:
    top = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=generated, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1000"], cwd=generated, check=True)
    db, whole_db = tmp_path / "index.db", tmp_path / "whole.db"
    rm, whole = wal_map(generated, db), wal_map(generated, whole_db)
    rm.refresh()
    whole.refresh()
    subprocess.run(["git", "reset", "-q", "--hard", top], cwd=generated, check=True)  # a pull of 1,000
    expected = whole.refresh()
    assert len(expected.renames) >= 2

    mark, _ = build_or_kill(generated, db, 50, kill=True)
    assert mark is not None, "the refresh finished before it could be killed"
    assert RepoMap(generated, rm.tables).built() and 0 < rm.backlog() < expected.new_commits
    _, report = build_or_kill(generated, db, 50, kill=False)
    assert report is not None
    assert [[old, new] for old, new in expected.renames] == report[0] and report[2] is False
    assert full_dump(rm) == full_dump(whole)
