"""The checks `tether.quickstart` repeats with `os` alone, held to the functions they repeat."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import git
from tether import lean
from tether.intake import rulefiles, rulestate
from tether.lifecycle import housekeeping
from tether.notes import stamps
from tether.project import find_project_root, init_project, user_home
from tether.repo import cochange
from tether.repo.git import head_stamp
from tether.workspace import Workspace


def test_the_repeated_constants_are_the_originals() -> None:
    assert lean.REPOMAP_VERSION == cochange.REPOMAP_VERSION
    assert lean.RENDER_VERSION == rulestate.RENDER_VERSION
    assert lean.RULE_FILE_NAMES == rulefiles.RULE_FILE_NAMES


@pytest.mark.parametrize(
    "path",
    [
        "AGENTS.md",
        "web/CLAUDE.md",
        "GEMINI.md",
        "README.md",
        ".cursor/rules/style.mdc",
        "web/.cursor/rules/a/b.mdc",
        "style.mdc",
        ".cursor/style.mdc",
        ".github/copilot-instructions.md",
        "copilot-instructions.md",
        "docs/.github/copilot-instructions.md",
        "xAGENTS.md",
        "agents.md",
    ],
)
def test_rule_file_names_are_the_rule_files(path: str) -> None:
    assert lean.is_rule_file(path) == rulefiles.is_rule_file(path)


def test_the_rules_fingerprint_is_the_rule_state_s(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text("# Rules\n\n- One.\n", encoding="utf-8")
    (repo / "web" / ".cursor" / "rules").mkdir(parents=True)
    (repo / "web" / ".cursor" / "rules" / "style.mdc").write_text("- Two.\n", encoding="utf-8")
    os.symlink("AGENTS.md", repo / "CLAUDE.md")  # the same rules: left out by both
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rules")
    with Workspace.open(repo, home=home) as ws:
        housekeeping.refresh_repo(ws)
        expected = rulestate.fingerprint(repo, rulestate.rule_files(ws, cached=True))
        candidates = sorted(ws.store.repomap().present_paths())
    assert lean.rules_fingerprint(str(repo), candidates) == expected
    assert lean.rules_fingerprint(str(repo), []) == rulestate.fingerprint(repo, [])


def test_a_rule_file_it_would_not_read_is_no_fingerprint(repo: Path) -> None:
    os.mkfifo(repo / "AGENTS.md")  # read non-blocking, as the ordinary path reads it: no hang
    assert lean.rules_fingerprint(str(repo), ["AGENTS.md"]) is None
    os.unlink(repo / "AGENTS.md")
    os.symlink("/etc/hostname", repo / "AGENTS.md")
    assert lean.rules_fingerprint(str(repo), ["AGENTS.md"]) is None


def test_head_stamp_project_root_and_home_are_the_originals(repo: Path, tmp_path: Path, home: Path) -> None:
    assert lean.head_stamp(str(repo)) == head_stamp(repo)
    git(repo, "checkout", "-q", "--detach")
    assert lean.head_stamp(str(repo)) == head_stamp(repo)
    git(repo, "checkout", "-q", "main")
    worktree = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert lean.head_stamp(str(worktree)) == head_stamp(worktree) is not None
    init_project(worktree, home)
    for start in (repo, repo / "src" / "app", worktree / "src", tmp_path):
        found = find_project_root(start)
        assert lean.project_root(str(start)) == (str(found) if found else None)
    for environ in ({"TETHER_HOME": "~/x"}, {"XDG_DATA_HOME": "/data"}, {}):
        assert lean.user_home(environ) == str(user_home(environ))


def test_dir_stamps_and_the_scan_age_are_the_originals(repo: Path, home: Path) -> None:
    notes_dirs = [repo / ".tether" / "memories", home / "memories"]
    assert lean.dir_stamps([str(d) for d in notes_dirs]) == stamps.dir_stamps(notes_dirs)
    assert not lean.scanned_within("0 5", 60) and not lean.scanned_within("junk", 60)
    with Workspace.open(repo, home=home) as ws:
        ws.sync(full=True)
        recorded = ws.store.get_meta(stamps.SCANNED)
        assert lean.scanned_within(recorded, 60) == ws.index.scanned_within(60) is True


@pytest.mark.parametrize(
    ("text", "defaults"),
    [
        ("# tether configuration: `tether config --list` shows every key.\n", True),
        ("\n   \n# a comment\n  # indented\n", True),
        ("", True),
        ("recall.limit = 5\n", False),
        ("[recall]\n", False),
        ("# fine\nembedder = 'static'\n", False),
    ],
)
def test_only_a_config_of_comments_is_read_as_defaults(tmp_path: Path, text: str, defaults: bool) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    assert lean.defaults_only(str(path)) is defaults
    assert lean.defaults_only(str(tmp_path / "absent.toml"))


def test_entries_are_counted_up_to_the_bound(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    for n in range(3):
        (one / f"{n}.md").write_text("x", encoding="utf-8")
        (two / f"{n}.md").write_text("x", encoding="utf-8")
    dirs = [str(one), str(two), str(tmp_path / "absent")]
    assert lean.more_entries_than(dirs, 5) and not lean.more_entries_than(dirs, 6)
