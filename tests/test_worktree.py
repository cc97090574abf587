"""The work tree as git sees it, in two steps: the paths and staged blobs at once, the clean ones once git
has compared; and the import scan that reads meanwhile ending where a scan of the finished listing does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.repo.git import blob_id
from tether.repo.sources import scan_sources
from tether.repo.worktree import WorkTreeListing, in_progress, list_work_tree
from tether.store.base import CachedImports


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)  # the machine's git config changes nothing here
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git(tmp_path, "init", "-q", "-b", "main")
    return tmp_path


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_listing_gives_paths_and_staged_blobs_first_then_the_clean_ones(repo: Path) -> None:
    write(
        repo,
        {"clean.py": "1\n", "edited.py": "1\n", "staged.py": "1\n", "gone.py": "1\n", ".tether/m.md": ""},
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    write(repo, {"edited.py": "2\n", "staged.py": "2\n", "new.py": "1\n"})
    git(repo, "add", "staged.py")
    (repo / "gone.py").unlink()
    listing = WorkTreeListing(repo)
    assert listing.paths == {"clean.py", "edited.py", "staged.py", "gone.py", "new.py"}  # a deletion not yet
    assert listing.staged["edited.py"] == git(repo, "rev-parse", "HEAD:edited.py")  # modified or not
    tree = listing.result()
    assert tree == list_work_tree(repo)
    assert tree.files == ["clean.py", "edited.py", "new.py", "staged.py"]
    assert tree.clean == {
        "clean.py": git(repo, "rev-parse", "HEAD:clean.py"),
        "staged.py": git(repo, "rev-parse", ":staged.py"),  # the index's blob is the work tree's
    }
    assert tree.clean["staged.py"] == blob_id(b"2\n") and tree.object_format == "sha1"


def test_the_scan_reading_while_git_compares_ends_where_a_scan_of_the_finished_listing_does(
    repo: Path,
) -> None:
    write(repo, {"a.py": "import b\n", "b.py": "", "c.py": "import a\n", "d.py": "import c\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    parsed = scan_sources(repo, list_work_tree(repo), {})
    cached = dict(parsed[2])
    # A pull's new content (b), a local edit keeping the parse's stat (c: trusted by its stat, as the
    # stat is all that tells), a committed edit keeping it (d: its blob says it is new), an untracked file.
    write(repo, {"a.py": "import c\n", "c.py": "import b\n", "d.py": "import b\n", "e.py": "import d\n"})
    for path in ("c.py", "d.py"):
        row = cached[path]
        os.utime(repo / path, ns=(row.mtime_ns, row.mtime_ns))
    git(repo, "add", "a.py", "d.py")
    git(repo, "commit", "-q", "-m", "two")
    os.utime(repo / "d.py", ns=(cached["d.py"].mtime_ns, cached["d.py"].mtime_ns))
    early = scan_sources(repo, WorkTreeListing(repo), cached)
    assert early == scan_sources(repo, list_work_tree(repo), cached)
    tree, specs, rows, changed = early
    assert specs == {"a.py": ("c",), "b.py": (), "c.py": ("a",), "d.py": ("b",), "e.py": ("d",)}
    assert set(rows) == {"a.py", "d.py", "e.py"} and changed == {"a.py", "d.py", "e.py"}
    assert isinstance(rows["e.py"], CachedImports) and tree.files == ["a.py", "b.py", "c.py", "d.py", "e.py"]


def test_work_in_progress_is_the_latest_changes_since_head(repo: Path) -> None:
    committed = {"a.py": "1\n", "b.py": "1\n", "gone.py": "1\n", "sub/c.py": "1\n", ".tether/m.md": "1\n"}
    write(repo, committed)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    assert in_progress(repo) == []  # a clean tree says nothing
    write(repo, {"a.py": "2\n", "b.py": "2\n", "new.py": "1\n", "sub/c.py": "2\n", ".tether/m.md": "2\n"})
    write(repo, {"fresh/e.py": "1\n"})  # a new directory is one "fresh/" entry: not a file
    git(repo, "add", "b.py")  # staged counts as unstaged does
    (repo / "gone.py").unlink()  # a deletion is nothing to work on
    for age, rel in enumerate(["sub/c.py", "new.py", "b.py", "a.py"]):
        os.utime(repo / rel, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    assert in_progress(repo) == ["sub/c.py", "new.py", "b.py", "a.py"]  # the latest first
    assert in_progress(repo, most=2) == ["sub/c.py", "new.py"]
    assert in_progress(repo, over=3) == []  # a sweep of more files says nothing about the session
    assert in_progress(repo / "sub") == ["c.py"]  # relative to a root below the top, and inside it
    assert in_progress(repo.parent / "elsewhere") == []  # not a directory git can read: nothing, no error


def test_work_in_progress_of_a_repository_without_commits_is_its_untracked_files(repo: Path) -> None:
    write(repo, {"a.py": "1\n"})
    assert in_progress(repo) == ["a.py"]


def test_work_in_progress_that_git_is_slow_to_list_is_none(repo: Path) -> None:
    write(repo, {"a.py": "1\n"})
    assert in_progress(repo, wait=0.0) == []  # past its wait a prompt goes without


def commit(root: Path, files: dict[str, str], message: str) -> None:
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def test_a_clean_trees_work_in_progress_is_its_branchs_own_commits(repo: Path) -> None:
    commit(repo, {"a.py": "1\n", "b.py": "1\n", "sub/c.py": "1\n"}, "trunk")
    assert in_progress(repo) == []  # on the trunk, no remote: nothing is the session's own
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"b.py": "2\n", "old.py": "1\n", "sub/doomed.py": "1\n"}, "first")
    commit(repo, {"sub/c.py": "2\n", ".tether/m.md": "1\n"}, "second")
    git(repo, "rm", "-q", "sub/doomed.py")
    git(repo, "commit", "-q", "-m", "third: a deletion")
    git(repo, "checkout", "-q", "main")
    commit(repo, {"a.py": "2\n"}, "the trunk moves on")  # not the branch's work
    git(repo, "checkout", "-q", "feature")
    # The latest commit's files first, then the earlier ones'; no deleted file, no note, no trunk commit.
    assert in_progress(repo) == ["sub/c.py", "b.py", "old.py"]
    assert in_progress(repo, most=1) == ["sub/c.py"]  # enough found: the older commits are not read
    assert in_progress(repo / "sub") == ["c.py"]  # relative to a root below the top, and inside it
    write(repo, {"a.py": "3\n"})
    assert in_progress(repo) == ["a.py"]  # uncommitted work comes first: it is what the session left


def test_a_sweep_among_the_branchs_latest_commits_says_nothing(repo: Path) -> None:
    commit(repo, {"a.py": "1\n"}, "trunk")
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {f"gen/f{i}.py": "1\n" for i in range(6)}, "a reformat")
    assert in_progress(repo, over=5) == []
    commit(repo, {"a.py": "2\n", "b.py": "1\n"}, "the work after it")
    assert in_progress(repo, most=2, over=5) == ["a.py", "b.py"]  # found before the sweep is reached


def test_on_the_trunk_the_commits_the_remote_lacks_are_the_work(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    commit(repo, {"a.py": "1\n", "b.py": "1\n"}, "trunk")
    remote = tmp_path_factory.mktemp("remote")
    git(remote, "init", "-q", "--bare", "-b", "main")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    git(repo, "remote", "set-head", "origin", "main")
    assert in_progress(repo) == []  # in step with the remote's default branch
    commit(repo, {"b.py": "2\n"}, "not pushed yet")
    assert in_progress(repo) == ["b.py"]
