"""Where work on a file went lately (`tether.repo.recent`): in a real git repository built here."""

from __future__ import annotations

from pathlib import Path

from conftest import commit_all, git, make_git_repo, write_lines
from tether.repo.recent import recent_lines, runs_of


def _history(repo: Path, path: str = "app.py") -> list[str]:
    """A 30-line file, then commits changing lines 10-12, 25 and 3 in that order."""
    lines = [f"line {n}" for n in range(1, 31)]
    write_lines(repo, path, lines)
    commit_all(repo, "first")
    for numbers in ((10, 11, 12), (25,), (3,)):
        for n in numbers:
            lines[n - 1] = f"changed {n}"
        write_lines(repo, path, lines)
        commit_all(repo, f"change {numbers}")
    return lines


def test_runs_of_reads_insertions_replacements_and_deletions() -> None:
    diff = "@@ -1 +1 @@\n-a\n+b\n@@ -5,0 +6,3 @@\n+x\n+y\n+z\n@@ -9,2 +11,0 @@\n-p\n-q\n@@ -0,0 +1 @@\n+n\n"
    assert runs_of(diff) == [(1, 1), (6, 8), (11, 11), (1, 1)]
    assert runs_of("") == []


def test_the_last_commits_lines_in_the_file_as_it_is_now(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    lines = _history(repo)
    assert recent_lines(repo, ["app.py"], 3, 1000) == {"app.py": [(3, 3), (10, 12), (25, 25)]}
    assert recent_lines(repo, ["app.py"], 2, 1000) == {"app.py": [(3, 3), (25, 25)]}
    # the horizon bounds git's walk: only HEAD's last commit is looked at
    assert recent_lines(repo, ["app.py"], 3, 1) == {"app.py": [(3, 3)]}
    # lines inserted above move what is recent with them (the lines are the work tree's), and what is not
    # committed yet counts too
    write_lines(repo, "app.py", ["new a", "new b", *lines])
    assert recent_lines(repo, ["app.py"], 2, 1000) == {"app.py": [(1, 2), (5, 5), (27, 27)]}


def test_a_new_commit_or_an_edit_is_seen_at_once(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    lines = _history(repo)
    assert recent_lines(repo, ["app.py"], 1, 1000) == {"app.py": [(3, 3)]}
    lines[19] = "changed 20"
    write_lines(repo, "app.py", lines)
    assert recent_lines(repo, ["app.py"], 1, 1000) == {"app.py": [(3, 3), (20, 20)]}
    commit_all(repo, "change 20")  # HEAD moves: the last commit is now the one of line 20
    assert recent_lines(repo, ["app.py"], 1, 1000) == {"app.py": [(20, 20)]}


def test_files_of_a_subdirectory_project_other_files_and_missing_ones(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    _history(repo, "sub/app.py")
    write_lines(repo, "other.py", ["x"] * 10)
    commit_all(repo, "other")
    found = recent_lines(repo / "sub", ["app.py", "missing.py"], 3, 1000)
    assert found == {"app.py": [(3, 3), (10, 12), (25, 25)]}
    # within HEAD's last commit: a file it did not touch has only its uncommitted changes (none), and a file
    # it added has what changed since (none): new all through says nothing of where work went in it
    assert recent_lines(repo, ["sub/app.py", "other.py"], 1, 1) == {"sub/app.py": [], "other.py": []}


def test_outside_git_and_a_file_whose_history_starts_within_the_last_commits(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x\n", encoding="utf-8")
    assert recent_lines(plain, ["a.py"], 3, 1000) == {}
    repo = make_git_repo(tmp_path / "r")
    write_lines(repo, "fresh.py", ["a", "b", "c"])
    commit_all(repo, "add fresh")
    write_lines(repo, "fresh.py", ["a", "B", "c"])
    # added lately: the lines changed since it was added (here, not committed yet), as for a file whose
    # history starts with the repository's (below)
    assert recent_lines(repo, ["fresh.py"], 3, 1000) == {"fresh.py": [(2, 2)]}
    first = tmp_path / "first"
    first.mkdir()
    git(first, "init", "-q", "-b", "main")
    write_lines(first, "fresh.py", ["a", "b", "c"])
    commit_all(first, "the first commit")
    write_lines(first, "fresh.py", ["a", "B", "c"])
    # its oldest commit is the history's first, with nothing before it to diff from: only what is not
    # committed says where work is
    assert recent_lines(first, ["fresh.py"], 3, 1000) == {"fresh.py": [(2, 2)]}


def test_a_path_that_looks_like_pathspec_magic_is_only_a_path(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    _history(repo)
    write_lines(repo, ":(glob)*", ["x", "y"])
    commit_all(repo, "an odd name")
    found = recent_lines(repo, ["app.py", ":(glob)*"], 1, 1000)
    # the odd name's last commit is its own, which added it (it matched no other path): nothing since;
    # app.py's last commit is "change (3,)"
    assert found == {"app.py": [(3, 3)], ":(glob)*": []}
    write_lines(repo, ":(glob)*", ["x", "Y"])
    assert recent_lines(repo, ["app.py", ":(glob)*"], 1, 1000) == {"app.py": [(3, 3)], ":(glob)*": [(2, 2)]}


def test_a_file_moved_lately_keeps_the_lines_its_later_commits_changed(tmp_path: Path) -> None:
    """A move is a new path to a diff without rename detection: from before the move the whole file would
    be recent (every memory of it beside "recent work"), and the commit after the move would be hidden."""
    repo = make_git_repo(tmp_path / "r")
    lines = _history(repo, "old/app.py")
    (repo / "new").mkdir()
    git(repo, "mv", "old/app.py", "new/app.py")
    commit_all(repo, "move app.py")
    lines[19] = "changed 20"
    write_lines(repo, "new/app.py", lines)
    commit_all(repo, "change 20")
    assert recent_lines(repo, ["new/app.py"], 3, 1000) == {"new/app.py": [(20, 20)]}
    # moved in the last commit: nothing since, until the work tree changes
    repo2 = make_git_repo(tmp_path / "r2")
    _history(repo2, "a.py")
    git(repo2, "mv", "a.py", "b.py")
    commit_all(repo2, "rename")
    assert recent_lines(repo2, ["b.py"], 3, 1000) == {"b.py": []}


def test_a_removed_line_that_reads_like_a_diff_header_is_not_an_added_file(tmp_path: Path) -> None:
    """`-- /dev/null` removed from a file is `--- /dev/null` inside a hunk: only the header says a file is new."""
    repo = make_git_repo(tmp_path / "r")
    lines = [f"line {n}" for n in range(1, 31)]
    lines[4] = "-- /dev/null"
    write_lines(repo, "app.sql", lines)
    commit_all(repo, "first")
    for n in (5, 20):
        lines[n - 1] = f"changed {n}"
        write_lines(repo, "app.sql", lines)
        commit_all(repo, f"change {n}")
    assert recent_lines(repo, ["app.sql"], 2, 1000) == {"app.sql": [(5, 5), (20, 20)]}
