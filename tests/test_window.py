"""HEAD's last commits recorded with the repo map (`tether.repo.window`), in real git repositories built here:
what the window says for each file is what the recent-change channel's own `git log` says."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import commit_all, git, make_git_repo, write_lines
from tether.repo import recent
from tether.repo.git import head_commit, stream_commits
from tether.repo.map import RepoMap
from tether.repo.window import WindowRecorder, plan_window, window_key
from tether.store.memory import InMemoryRepoMap
from tether.store.sqlite.store import SQLiteStore

ODD = ":(glob)*"  # a name that is pathspec magic unless passed with --literal-pathspecs


def _history(repo: Path) -> list[str]:
    """A few files changed over a dozen commits: one renamed, one with an odd name, one in a directory."""
    for n in range(12):
        write_lines(repo, "app.py", [f"changed {n}" if k == 2 * n else f"app {k}" for k in range(30)])
        if n % 3 == 0:
            write_lines(repo, "lib/util.py", [f"changed {n}" if k == n else f"util {k}" for k in range(15)])
        if n == 4:
            write_lines(repo, ODD, ["odd", str(n)])
        if n == 6:
            git(repo, "mv", "src/app/upload.py", "src/app/uploads.py")
        commit_all(repo, f"change {n}")
    return ["app.py", "lib/util.py", ODD, "src/app/uploads.py", "src/app/auth.py", "Makefile"]


def _git_says(repo: Path, paths: list[str], commits: int = 3) -> dict[str, list[tuple[int, int]]]:
    recent._CACHE.clear()
    recent._BOUNDARY.clear()
    return recent.recent_lines(repo, paths, commits, 1000)


def _index_says(
    repo: Path, tables: object, paths: list[str], commits: int = 3
) -> dict[str, list[tuple[int, int]]]:
    recent._CACHE.clear()
    recent._BOUNDARY.clear()
    return recent.recent_lines(repo, paths, commits, 1000, tables)  # type: ignore[arg-type]


def test_a_chain_of_commits_is_recorded_and_answers_as_git_does(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    paths = _history(repo)
    store = SQLiteStore(tmp_path / "index.db")
    tables = store.repomap()
    RepoMap(repo, tables).refresh()
    head = head_commit(repo)
    assert head is not None and tables.state()["recent_window"] == window_key(head, 1000)
    touches = tables.recent_touches(window_key(head, 1000), paths, 3)
    assert touches is not None and len(touches["app.py"]) == 3
    # a rename touched both paths, as `--no-renames` lists them
    assert "src/app/upload.py" in (
        tables.recent_touches(window_key(head, 1000), ["src/app/upload.py"], 9) or {}
    )
    write_lines(repo, "app.py", ["new first line", *[f"app {k}" for k in range(30)]])  # and one file is dirty
    for commits in (1, 2, 3):
        assert _index_says(repo, tables, paths, commits) == _git_says(repo, paths, commits)
    store.close()


def test_commits_on_top_and_a_pull_move_the_window(tmp_path: Path) -> None:
    upstream = make_git_repo(tmp_path / "up")
    paths = _history(upstream)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    store = SQLiteStore(tmp_path / "index.db")
    tables = store.repomap()
    repo = RepoMap(clone, tables)
    repo.refresh()
    before = tables.state()["recent_window"]
    for n in range(3):
        write_lines(
            upstream, "lib/util.py", [f"pulled {n} {k}" if k == 5 + n else f"util {k}" for k in range(15)]
        )
        commit_all(upstream, f"upstream {n}")
    git(clone, "pull", "-q", "--ff-only")
    repo.refresh()
    head = head_commit(clone)
    assert head is not None and tables.state()["recent_window"] == window_key(head, 1000) != before
    assert tables.state()["recent_chain"] == "1"
    assert _index_says(clone, tables, paths) == _git_says(clone, paths)
    store.close()


def test_the_oldest_commits_drop_out_as_new_ones_go_above(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    _history(repo)
    tables = InMemoryRepoMap()
    recorder = WindowRecorder(4)
    for commit in stream_commits(repo, ["HEAD"]):
        recorder.add(commit)
    first = head_commit(repo)
    assert first is not None
    write = plan_window({}, first, recorder)
    assert write is not None and not write.add and len(write.commits) == 4
    write.apply(tables)
    write_lines(repo, "Makefile", ["all:", "\tfalse"])
    commit_all(repo, "on top")
    head = head_commit(repo)
    assert head is not None
    recorder = WindowRecorder(4)
    for commit in stream_commits(repo, ["HEAD", f"^{first}"]):
        recorder.add(commit)
    write = plan_window(tables.state(), head, recorder)
    assert write is not None and write.add and len(write.commits) == 1
    write.apply(tables)
    everything = ["app.py", "lib/util.py", ODD, "Makefile", "src/app/uploads.py", "src/app/upload.py"]
    touches = tables.recent_touches(window_key(head, 4), everything, 9)
    assert touches is not None
    listed = [sha for found in touches.values() for sha, _ in found]
    expected = git(repo, "rev-list", "-n", "4", "HEAD").split()
    assert sorted(set(listed)) == sorted(expected)  # HEAD's newest four, the fifth dropped
    assert plan_window(tables.state(), head, WindowRecorder(4)) is None  # recorded for HEAD already


def test_a_merge_within_the_window_records_nothing_and_git_answers(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    paths = _history(repo)
    git(repo, "checkout", "-qb", "side")
    before = (repo / "app.py").read_bytes()
    write_lines(repo, "app.py", ["side"] * 30)
    commit_all(repo, "side change")
    (repo / "app.py").write_bytes(before)
    commit_all(repo, "side change undone")
    git(repo, "checkout", "-q", "main")
    write_lines(repo, "Makefile", ["all:", "\tmain"])
    commit_all(repo, "main change")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    store = SQLiteStore(tmp_path / "index.db")
    tables = store.repomap()
    RepoMap(repo, tables).refresh()
    assert "recent_window" not in tables.state()
    simplified = git(repo, "log", "--no-merges", "--format=%s", "--", "app.py").splitlines()
    every = git(repo, "log", "--no-merges", "--full-history", "--format=%s", "--", "app.py").splitlines()
    assert "side change" in every and "side change" not in simplified  # what a window would have got wrong
    # the side branch's commits to app.py left no change: git's log of the file skips them, and so does recall
    assert _index_says(repo, tables, paths) == _git_says(repo, paths)
    store.close()


def _git_shim(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` is a script that logs its arguments and runs the real git."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    shim = bin_dir / "git"
    shim.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real} "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, calls


_FRESH = """
import sys
from pathlib import Path
from tether.repo.recent import recent_lines
from tether.store.sqlite.store import SQLiteStore
store = SQLiteStore(Path(sys.argv[1]))
print(recent_lines(Path(sys.argv[2]), sys.argv[3:], 3, 1000, store.repomap()))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script stands in for git")
def test_a_fresh_process_asks_git_for_a_diff_only_then_nothing(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    paths = _history(repo)
    store = SQLiteStore(tmp_path / "index.db")
    RepoMap(repo, store.repomap()).refresh()
    store.close()
    env, calls = _git_shim(tmp_path)
    expected = _git_says(repo, paths)

    def fresh() -> tuple[str, list[str]]:
        calls.unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", _FRESH, str(tmp_path / "index.db"), str(repo), *paths],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        ran = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
        return done.stdout.strip(), [line.split(" -c ")[-1] for line in ran]

    out, ran = fresh()
    assert out == str(expected)
    # the window answered where the last commits are: one diff per file, no rev-list, no log; and one more
    # for each file its last commits added or moved there (the odd name, uploads.py), from after that commit
    assert all(" diff " in f" {line} " for line in ran)
    again = sorted(path for path in paths if sum(line.endswith(f" -- {path}") for line in ran) == 2)
    assert len(ran) == len(paths) + 2 and again == sorted([ODD, "src/app/uploads.py"])
    out, ran = fresh()
    assert (out, ran) == (str(expected), [])  # nothing changed: the lines the index keeps
    write_lines(repo, "app.py", ["dirty", *[f"app {k}" for k in range(30)]])
    out, ran = fresh()
    assert out == str(_git_says(repo, paths)) != str(expected)
    assert len(ran) == 1 and "app.py" in ran[0]  # only the file whose stat changed
