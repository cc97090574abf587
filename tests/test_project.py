"""`tether.project`: where a project's memory lives, and the user's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.errors import NoProjectError
from tether.project import TETHER_DIR, find_git_root, find_project_root, init_project, resolve, user_home


def test_user_home_honours_tether_home_then_xdg() -> None:
    assert user_home({"TETHER_HOME": "/x/home"}) == Path("/x/home")
    assert user_home({"XDG_DATA_HOME": "/data"}) == Path("/data/tether")
    assert user_home({}).parts[-3:] == (".local", "share", "tether")


def test_git_root_is_found_for_a_worktree_file_too(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere\n")  # how a worktree's checkout marks itself
    assert find_git_root(repo / "a" / "b") == repo
    assert find_git_root(tmp_path) is None


def test_project_root_never_crosses_the_git_root(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / TETHER_DIR / "memories").mkdir(parents=True)
    inner = outer / "inner"
    (inner / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(inner)], check=True)
    assert find_project_root(inner / "src") is None  # another repository's memory is not this one's
    assert find_project_root(outer) == outer
    with pytest.raises(NoProjectError, match="run `tether init`"):
        resolve(inner / "src", tmp_path / "home", require_project=True)


def test_init_is_idempotent_and_ignores_derived_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    paths, created = init_project(repo / "sub", tmp_path / "home")
    assert created and paths.root == repo and paths.project_notes == repo / TETHER_DIR / "memories"
    ignore = (repo / TETHER_DIR / ".gitignore").read_text()
    assert "index.db*" in ignore and "logs/" in ignore
    (repo / TETHER_DIR / "config.toml").write_text("[recall]\nlimit = 5\n")
    _, again = init_project(repo, tmp_path / "home")
    assert not again and "limit = 5" in (repo / TETHER_DIR / "config.toml").read_text()
    assert paths.index == repo / TETHER_DIR / "index.db"
    assert paths.config_files == (tmp_path / "home" / "config.toml", repo / TETHER_DIR / "config.toml")


def test_user_only_paths(tmp_path: Path) -> None:
    paths = resolve(tmp_path, tmp_path / "home")
    assert paths.root is None and paths.project_notes is None
    assert (
        paths.user_notes == tmp_path / "home" / "memories" and paths.index == tmp_path / "home" / "index.db"
    )
