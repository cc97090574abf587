"""Whether the rule files changed since their last sync: which files are rules, and their fingerprint.

What a session start checks (`unchanged`) without loading the markdown parser, the secret rules and the
sync itself (`tether.intake.rules`, which imports this): 7 ms of a hook's imports, for a check that is
almost always "nothing changed".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tether.errors import TetherError
from tether.fs import read_limited
from tether.intake.rulefiles import find_rule_files
from tether.memories import Memories
from tether.model.limits import RULE_FILE_MAX_BYTES

META_HASH = "rules.hash"
META_FILES = "rules.files"  # JSON: path -> `file_hashes` at the last sync, so a re-sync skips unchanged files
# Bump when `render` changes what a rule's memory looks like, so every project re-syncs once. 2: whole-
# sentence summaries from parsed markdown, categories, no "Rule from <file>" trailer in the details.
RENDER_VERSION = "2"


def rule_files(ws: Memories, *, cached: bool = False) -> list[str]:
    """Repo-relative paths of the project's rule files.

    In git, the files git lists (tracked and untracked-not-ignored), so a vendored or ignored directory's
    AGENTS.md is not this project's rule; `cached` reads that list from the repo map's last refresh
    (session start refreshes it just before). Outside git, a walk of the tree.
    """
    root = _root(ws)
    from tether.repo.git import list_files
    from tether.repo.map import RepoMap

    repo = RepoMap(root, ws.store.repomap())
    if not repo.is_git():
        return find_rule_files(root)
    if cached and repo.tables.state().get("mode") == "git":
        return find_rule_files(root, sorted(repo.tables.present_paths()))
    return find_rule_files(root, list_files(root, True))


def file_hashes(root: Path, paths: list[str]) -> dict[str, str]:
    """Per rule file, a hash of its bytes and the render version: an equal hash means its memories are
    already what a sync would make of it."""
    out = {}
    for path in sorted(paths):
        digest = hashlib.sha256(f"tether-rules-{RENDER_VERSION}\0".encode())
        try:
            digest.update(read_limited(root / path, RULE_FILE_MAX_BYTES, inside=root))
        except OSError as exc:  # RefusedFile too: hashed as unreadable, and the sync reports why
            digest.update(f"unreadable {exc.errno} {exc}".encode())
        out[path] = digest.hexdigest()
    return out


def fingerprint(root: Path, paths: list[str], hashes: dict[str, str] | None = None) -> str:
    """A hash of the rule files' names and bytes (and the render version): equal means nothing to do."""
    hashes = file_hashes(root, paths) if hashes is None else hashes
    return hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()


def _root(ws: Memories) -> Path:
    if ws.root is None:
        raise TetherError("rule files are project memory: run `tether init` at the repository root first")
    return ws.root


def unchanged(ws: Memories) -> bool:
    """Whether the rule files are as the last sync left them: one read of the repo map's file list, a hash
    of the rule files, one meta lookup."""
    return ws.store.get_meta(META_HASH) == fingerprint(_root(ws), rule_files(ws, cached=True))
