"""Repositories that lack blobs: a partial clone (`git clone --filter=blob:none`) and a copy that lost some.

tether's git never fetches (a hook must not reach the network, and a first build's rename detection
would fetch every old blob of history one request at a time): history is read with exact renames alone,
found by blob id. The tests clone over `file://`, a real transport, and count the objects still missing
before and after each read.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from test_repomap import Repo, open_map
from tether.errors import TetherError
from tether.repo.git import partial_clone, read_commits
from tether.repo.recent import recent_lines

BODY = "".join(f"line {i}\n" for i in range(40))


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def missing(path: Path) -> int:
    """Objects reachable from every ref that the repository does not have."""
    out = subprocess.run(
        ["git", "rev-list", "--objects", "--missing=print", "--all"],
        cwd=path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(line.startswith("?") for line in out.splitlines())


@pytest.fixture
def origin(tmp_path: Path) -> Repo:
    """Two files with history, then an exact rename (`a.py` -> `moved.py`) and a rename with edits."""
    repo = Repo(tmp_path / "origin")
    repo.commit({"a.py": BODY, "b.py": BODY.upper(), "c.py": "c\n"})
    repo.commit({"a.py": BODY + "more\n", "c.py": "c2\n"})
    repo.commit({"a.py": BODY + "more\nand more\n", "c.py": "c3\n"})
    repo.git("config", "uploadpack.allowFilter", "true")
    return repo


def clone(origin: Repo, into: Path) -> Path:
    subprocess.run(
        ["git", "clone", "-q", "--filter=blob:none", f"file://{origin.path}", str(into)],
        check=True,
        capture_output=True,
    )
    return into


def test_a_partial_clone_is_mapped_without_fetching_a_blob(origin: Repo, tmp_path: Path) -> None:
    here = clone(origin, tmp_path / "clone")
    assert partial_clone(here) and not partial_clone(origin.path)
    before = missing(here)
    assert before > 0  # history's old blobs stayed behind

    rm = open_map(here, tmp_path / "index.db")
    report = rm.refresh()
    assert report.new_commits == 3 and missing(here) == before
    assert rm.neighbours("c.py") == [("a.py", 1.0)]

    origin.commit({"b.py": BODY.upper() + "B\n"})  # a blob the clone's checkout never had
    origin.git("mv", "a.py", "moved.py")
    origin.git("mv", "b.py", "edited.py")
    origin.commit({"edited.py": BODY.upper() + "B\nEDITED\n"})
    subprocess.run(["git", "pull", "-q", "--ff-only"], cwd=here, check=True, capture_output=True)
    before = missing(here)  # the pull's checkout fetched the new files' blobs: git's doing, not tether's
    report = rm.refresh()
    assert missing(here) == before
    # The exact rename is followed; the edited one would need the old blob: a delete and an add.
    assert report.renames == [("a.py", "moved.py")]
    assert ("moved.py", 1.0) in rm.neighbours("c.py")


def test_the_recent_lines_of_a_partial_clone_fail_open_without_fetching(origin: Repo, tmp_path: Path) -> None:
    here = clone(origin, tmp_path / "clone")
    before = missing(here)
    # The last commit's lines: a diff against the commit before, whose blobs the clone lacks.
    lines = recent_lines(here, ["a.py", "c.py"], commits=1, horizon=50)
    assert missing(here) == before
    assert not any(lines.values())  # a hint that could not be read, not an error


def test_a_copy_that_lost_a_blob_is_read_on_with_exact_renames_from_where_it_failed(tmp_path: Path) -> None:
    """No promisor remote says blobs may be missing: `git log -M` fails on the lost one. The commits read
    before it keep their renames with edits; the rest is read by blob id."""
    repo = Repo(tmp_path / "repo")
    repo.commit({"a.py": BODY, "b.py": BODY.upper(), "c.py": "c\n", "d.py": BODY.title()})
    repo.git("mv", "d.py", "e.py")
    repo.commit({"e.py": BODY.title() + "edited\n"})  # a rename with edits, before the lost blob is read
    second = repo.commit({"c.py": "c2\n", "b.py": BODY.upper() + "B\n"})
    repo.git("mv", "a.py", "moved.py")
    repo.git("mv", "b.py", "edited.py")
    repo.commit({"edited.py": BODY.upper() + "B\nEDITED\n"})
    lost = repo.git("rev-parse", f"{second}:b.py")  # the old side of the last rename with edits
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    assert subprocess.run(
        ["git", "log", "-M", "--name-status"], cwd=repo.path, capture_output=True
    ).returncode

    commits = read_commits(repo.path, ["HEAD"])
    assert [len(c.parents) for c in commits] == [0, 1, 1, 1]  # each commit once
    assert ("R", "e.py", "d.py") in {(c.status, c.path, c.old) for c in commits[1].changes}
    last = {(c.status, c.path, c.old) for c in commits[-1].changes}
    assert ("R", "moved.py", "a.py") in last and ("A", "edited.py", None) in last
    rm = open_map(repo.path, tmp_path / "index.db")
    assert rm.refresh().new_commits == 4
    assert rm.exists("moved.py") and rm.exists("edited.py")
    assert rm.tables.change_count("e.py") == 2  # its history as d.py follows it


def test_a_treeless_clone_says_how_to_make_it_readable(origin: Repo, tmp_path: Path) -> None:
    """`--filter=tree:0` lacks the trees every commit's file list needs: nothing is fetched, and the error
    names the one command that makes the clone readable."""
    here = tmp_path / "treeless"
    subprocess.run(
        ["git", "clone", "-q", "--filter=tree:0", f"file://{origin.path}", str(here)],
        check=True,
        capture_output=True,
    )
    before = missing(here)
    with pytest.raises(TetherError, match=r"never fetches: `git fetch --refetch --filter=blob:none`"):
        open_map(here, tmp_path / "index.db").refresh()
    assert missing(here) == before
    subprocess.run(
        ["git", "fetch", "-q", "--refetch", "--filter=blob:none"], cwd=here, check=True, capture_output=True
    )
    assert open_map(here, tmp_path / "index2.db").refresh().new_commits == 3
