"""Checks of other modules, repeated with `os` alone for `tether.quickstart`: where the project is, the
user's home, whether a config file sets anything, the note directories' stamps, the last scan of every
note, HEAD as `.git` says, which repo map paths are rule files and their fingerprint.

Each names the function it repeats; `tests/test_lean.py` holds each to it. Where one would spell a stamp or
a fingerprint otherwise than the original, the caller only takes the ordinary path.
"""

from __future__ import annotations

import json
import os
import time

from tether.model.limits import RULE_FILE_MAX_BYTES

TYPE_CHECKING = False  # not `typing`'s: its import is a tenth of a quiet session start's budget
if TYPE_CHECKING:
    from collections.abc import Mapping

REPOMAP_VERSION = "1"  # tether.repo.cochange
RENDER_VERSION = "2"  # tether.intake.rulestate
RULE_FILE_NAMES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")  # tether.intake.rulefiles


def project_root(start: str) -> str | None:
    """`tether.project.find_project_root` without pathlib: the nearest ancestor with `.tether/memories/`,
    not above the git root."""
    current = os.path.realpath(start)
    while True:
        if os.path.isdir(os.path.join(current, ".tether", "memories")):
            return current
        parent = os.path.dirname(current)
        if parent == current or os.path.exists(os.path.join(current, ".git")):
            return None
        current = parent


def user_home(environ: Mapping[str, str]) -> str:
    """`tether.project.user_home` without pathlib."""
    if environ.get("TETHER_HOME"):
        return os.path.expanduser(environ["TETHER_HOME"])
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "tether")


def defaults_only(path: str) -> bool:
    """Whether the config file at `path` leaves every key at its default: absent, or blank lines and
    comments only (what `tether init` writes). Anything else is read by the ordinary path's TOML parser."""
    if not os.path.isfile(path):
        return True
    with open(path, "rb") as handle:
        data = handle.read(65536)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(data) < 65536 and all(
        not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines()
    )


def dir_stamps(directories: list[str]) -> str:
    """`tether.notes.stamps.dir_stamps`."""
    stamps = []
    for directory in directories:
        try:
            stamps.append(str(os.stat(directory).st_mtime_ns))
        except OSError:
            stamps.append("-")
    return ",".join(stamps)


def more_entries_than(directories: list[str], most: int) -> bool:
    """Whether the directories hold more than `most` entries between them (counting stops there). Notes are
    entries of the note directories, so at most this many notes means at most this many memories in an
    index in step with them: a small project is told without opening the index."""
    seen = 0
    for directory in directories:
        try:
            with os.scandir(directory) as entries:
                for _ in entries:
                    seen += 1
                    if seen > most:
                        return True
        except OSError:
            continue
    return False


def scanned_within(recorded: str | None, seconds: float) -> bool:
    """`NoteIndex.scanned_within` in a fresh process: the last scan of every note any process recorded."""
    raw = (recorded or "").split()
    try:
        at, _ = int(raw[0]), int(raw[1])
    except (IndexError, ValueError):
        return False
    return 0 <= (time.time_ns() - at) / 1e9 < seconds


def repo_fresh(state: dict[str, str], root: str, seconds: float) -> bool:
    """`RepoMap.fresh`, False where that would ask git (no stamp of HEAD readable from `.git`)."""
    try:
        age = (time.time_ns() - int(state.get("refreshed_at_ns", "0"))) / 1e9
    except ValueError:
        return False
    if state.get("version") != REPOMAP_VERSION or not 0 <= age < seconds:
        return False
    if state.get("mode") == "dir":
        return True
    stamp = head_stamp(root)
    return stamp is not None and bool(state.get("head_stamp")) and stamp == state["head_stamp"]


def head_stamp(root: str) -> str | None:
    """`tether.repo.git.head_stamp` without pathlib (a path it would spell otherwise only means "not fresh")."""
    directory = os.path.realpath(root)
    while True:
        dot = os.path.join(directory, ".git")
        try:
            if os.path.isfile(dot):
                text = _read_text(dot)
                if not text.startswith("gitdir:"):
                    return None
                gitdir = os.path.realpath(os.path.join(directory, text[len("gitdir:") :].strip()))
            elif os.path.isdir(dot):
                gitdir = dot
            else:
                parent = os.path.dirname(directory)
                if parent == directory:
                    return None
                directory = parent
                continue
            head = _read_text(os.path.join(gitdir, "HEAD"))
            common = gitdir
            if os.path.isfile(os.path.join(gitdir, "commondir")):
                common = os.path.realpath(os.path.join(gitdir, _read_text(os.path.join(gitdir, "commondir"))))
            parts = [head]
            if head.startswith("ref:"):
                ref = head[len("ref:") :].strip()
                for place in (
                    os.path.join(gitdir, ref),
                    os.path.join(common, ref),
                    os.path.join(common, "packed-refs"),
                ):
                    try:
                        info = os.stat(place)
                        parts.append(f"{place}:{info.st_mtime_ns}:{info.st_size}")
                    except FileNotFoundError:
                        parts.append(f"{place}:-")
            return "|".join(parts)
        except OSError:
            return None


def is_rule_file(path: str) -> bool:
    """`tether.intake.rulefiles.is_rule_file` (a path it answers otherwise only changes the fingerprint)."""
    name = path.rstrip("/").rpartition("/")[2]
    if name in RULE_FILE_NAMES:
        return True
    parts = [p for p in path.split("/") if p and p != "."]
    if name.endswith(".mdc"):
        return any(parts[i] == ".cursor" and parts[i + 1] == "rules" for i in range(len(parts) - 2))
    return name == "copilot-instructions.md" and len(parts) >= 2 and parts[-2] == ".github"


def rules_fingerprint(root: str, candidates: list[str]) -> str | None:
    """`tether.intake.rulestate.fingerprint` of the rule files among `candidates` (the repo map's paths, as
    `rule_files(cached=True)` lists them), or None where that reads a file otherwise (a symlink, a file
    that is not regular or is too large: it hashes why it could not read it)."""
    found = sorted({path for path in candidates if is_rule_file(path)})
    real_root = os.path.realpath(root)
    kept = []
    for rel in found:
        full = os.path.join(root, rel)
        if os.path.islink(full):
            target = os.path.realpath(full)
            inside = target.startswith(real_root + os.sep)
            if inside and os.path.relpath(target, real_root).replace(os.sep, "/") in found:
                continue  # `CLAUDE.md -> AGENTS.md`: the same rules (`find_rule_files`)
            return None  # read through a symlink by the ordinary path: left to it
        kept.append(rel)
    hashes = []
    for rel in kept:
        full = os.path.join(root, rel)
        if not os.path.realpath(full).startswith(real_root + os.sep):
            return None
        data = read_rule_file(full)
        if data is None:
            return None
        hashes.append((rel, sha256_hex(f"tether-rules-{RENDER_VERSION}\0".encode(), data)))
    return sha256_hex(json.dumps(sorted(hashes)).encode())


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def read_rule_file(path: str) -> bytes | None:
    """`tether.fs.read_limited` of a rule file (opened non-blocking: a FIFO does not hang it), or None
    where that raises (not a regular file, over the limit): the ordinary path hashes why."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > RULE_FILE_MAX_BYTES:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= RULE_FILE_MAX_BYTES:
            chunk = os.read(fd, min(1 << 20, RULE_FILE_MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return None if size > RULE_FILE_MAX_BYTES else b"".join(chunks)


def sha256_hex(*parts: bytes) -> str:
    """The SHA-256 hex digest of `parts` joined, without `hashlib` (OpenSSL's loader: 10 ms of a hook)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - a build without it
        from hashlib import sha256
    digest = sha256()
    for part in parts:
        digest.update(part)
    return str(digest.hexdigest())
