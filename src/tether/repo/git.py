"""Reading git: the files that exist, and the history as commits with their changed paths.

Everything here runs `git` with the settings that would change what is parsed pinned
(`diff.relative=false`, no signatures) and without optional locks, so a refresh never takes a lock
another git command needs.

    >>> parse_log(["\x01abc", "M", "src/a.py"])[0].changes
    (Change(status='M', path='src/a.py', old=None),)

A revision range is a list of git revisions (`["HEAD", "^a1b2c3"]`: HEAD's history without a1b2c3's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tether.errors import TetherError

if TYPE_CHECKING:
    import subprocess

# `subprocess` (with `selectors` and `locale`), `tempfile` and `hashlib` are imported where git runs or a blob
# is hashed: a hook that only asks whether the map is fresh reads `.git` and starts no git (7 ms of its start).

# Never listed, in a plain directory; `.tether/` is skipped in git repos too, because memory notes are
# committed beside the code and would otherwise become everyone's co-change neighbour.
SKIP_DIRS = frozenset({".git", ".tether", "node_modules", ".venv", "__pycache__"})
TETHER_DIR = ".tether/"
_STATUS = re.compile(r"[ACDMRTUXB]\d*")
_LETTERS = frozenset("ACDMTUXB")  # the plain statuses: a set lookup spares the regex on most lines


# Tuples, not frozen dataclasses: a first build makes one per path of every commit (56,000 Changes and
# 20,000 Commits on the benchmark's history), at a third of the dataclass's cost.
class Change(NamedTuple):
    status: str  # git's letter: A, M, D, R (rename, with `old`), T, ...
    path: str
    old: str | None = None


class Commit(NamedTuple):
    sha: str
    changes: tuple[Change, ...]
    size: int  # files touched, counted before narrowing to the map's root
    parents: tuple[str, ...] = ()

    @property
    def merge(self) -> bool:
        """A merge: streamed (so a build knows how far it read) but never counted, and without changes."""
        return len(self.parents) > 1


# --------------------------------------------------------------------------------------------


# Settings a user's config could change and that would change what we parse; and no transport at all: in a
# partial clone (`--filter=blob:none`) a read that meets a missing blob would fetch it from the promisor
# remote, one request at a time (a first build's rename detection: every old blob of history), from inside
# a hook. Refused, the read fails and its caller reads without that blob (`stream_commits`, `recent_lines`).
# `GIT_NO_LAZY_FETCH` says the same to git 2.44 and later; `protocol.allow=never` to every git.
_SETTINGS = ("-c", "diff.relative=false", "-c", "log.showSignature=false", "-c", "protocol.allow=never")


def _command(root: Path, args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    cmd = ["git", "-C", str(root), *_SETTINGS, *args]
    return cmd, {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_LAZY_FETCH": "1"}


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return finish(root, args, start(root, args), check)


def start(root: Path, args: Sequence[str]) -> subprocess.Popen[bytes]:
    """`git *args` started, for `finish` to wait for: what the caller does meanwhile overlaps it."""
    import subprocess

    cmd, env = _command(root, args)
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        raise TetherError(f"Could not run git ({exc}); install git or put it on PATH.") from exc


def finish(
    root: Path, args: Sequence[str], proc: subprocess.Popen[bytes], check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    import subprocess

    out, err = proc.communicate()
    if check and proc.returncode != 0:
        message = err.decode(errors="replace").strip()
        raise TetherError(f"`git {' '.join(args)}` failed in {root}: {message}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def probe(root: Path) -> tuple[str, str | None] | None:
    """(prefix of root inside the work tree, HEAD or None for an empty repo), or None outside git."""
    try:
        # One process in the common case (a repository with commits): the prefix's line, then HEAD's.
        both = git(root, "rev-parse", "--show-prefix", "HEAD^{commit}", check=False)
    except TetherError:
        return None  # no git binary: treat as a plain directory
    lines = both.stdout.decode().split("\n")
    if both.returncode == 0 and len(lines) >= 2 and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", lines[1]):
        return lines[0].strip(), lines[1]
    proc = git(root, "rev-parse", "--show-prefix", check=False)
    if proc.returncode != 0:
        return None
    prefix = proc.stdout.decode().strip()
    head = git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    return prefix, (head.stdout.decode().strip() or None) if head.returncode == 0 else None


def head_stamp(root: Path) -> str | None:
    """What HEAD is, read from `.git` without running git: HEAD's text plus the stat of the ref it names
    and of `packed-refs`. Any commit, checkout, pull or reset changes it (a hook compares it with the
    last refresh's instead of spending two git processes). None when it cannot be read (then ask git)."""
    try:
        found = _head(root)
        if found is None:
            return None
        gitdir, common, head = found
        parts = [head]
        if head.startswith("ref:"):
            ref = head[len("ref:") :].strip()
            for place in (gitdir / ref, common / ref, common / "packed-refs"):
                try:
                    info = place.stat()
                    parts.append(f"{place}:{info.st_mtime_ns}:{info.st_size}")
                except FileNotFoundError:
                    parts.append(f"{place}:-")
        return "|".join(parts)
    except OSError:
        return None


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def head_commit(root: Path) -> str | None:
    """The commit HEAD names, read from `.git` without running git (the ref's file, else `packed-refs`).
    None when it cannot be read that way (an empty repository, a symbolic ref chain, a ref store git
    keeps elsewhere): then ask git."""
    try:
        found = _head(root)
        if found is None:
            return None
        gitdir, common, head = found
        if _SHA.fullmatch(head):
            return head  # detached
        if not head.startswith("ref: refs/"):
            return None
        ref = head[len("ref:") :].strip()
        for place in (gitdir / ref, common / ref):
            try:
                text = place.read_text(encoding="utf-8").strip()
            except FileNotFoundError:
                continue
            return text if _SHA.fullmatch(text) else None
        packed = (common / "packed-refs").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha if _SHA.fullmatch(sha) else None
    return None


def _head(root: Path) -> tuple[Path, Path, str] | None:
    """(the git directory, the common one, HEAD's text) of the work tree holding `root`; None outside git.
    Raises OSError (or UnicodeDecodeError) when unreadable."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    gitdir, common = dirs
    return gitdir, common, (gitdir / "HEAD").read_text(encoding="utf-8").strip()


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the git directory of the work tree holding `root`, the common one of its repository), read from
    `.git` (a directory, or a file naming one); None outside git. Raises OSError when unreadable."""
    here = root.resolve()
    for directory in (here, *here.parents):
        dot = directory / ".git"
        if dot.is_file():
            text = dot.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            gitdir = (directory / text[len("gitdir:") :].strip()).resolve()
        elif dot.is_dir():
            gitdir = dot
        else:
            continue
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        return gitdir, common
    return None


def split_z(raw: bytes) -> list[str]:
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def list_files(root: Path, in_git: bool) -> list[str]:
    """Repo-relative POSIX paths of the files that exist now, sorted.

    In git: tracked files still on disk plus untracked ones that are not ignored. Elsewhere: a walk
    that skips `SKIP_DIRS` and every dot-directory."""
    if in_git:
        listed = set(
            split_z(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout)
        )
        listed -= set(split_z(git(root, "ls-files", "-z", "--deleted").stdout))
        return sorted(p for p in listed if not p.startswith(TETHER_DIR))
    out: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(root / rel if rel else root))
        except OSError:
            continue
        for entry in entries:
            path = f"{rel}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    stack.append(path + "/")
            else:
                out.append(path)
    return sorted(out)


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The id git gives `data` as a blob (`git hash-object`, no filters)."""
    import hashlib

    # The named constructor, not `hashlib.new`: a fifth of the cost for a few-KB file (a pull's scan hashes
    # every file it reads).
    h = hashlib.sha1() if object_format == "sha1" else hashlib.new(object_format)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def read_commits(root: Path, revs: Sequence[str], prefix: str = "") -> list[Commit]:
    """Non-merge commits of `revs`, oldest first (parents before children), with their files."""
    return [c for c in stream_commits(root, revs, prefix) if not c.merge]


def stream_commits(root: Path, revs: Sequence[str], prefix: str = "") -> HistoryStream:
    """The commits of `revs`, merges included (with no changes), oldest first: `HistoryStream`."""
    return HistoryStream(root, revs, prefix)


class HistoryStream:
    """The commits of `revs`, merges included (with no changes), oldest first: one `git log`, started
    when this is made (what its caller does before iterating overlaps git's walk of the history) and
    parsed while git is still writing it (on a 20k-commit history git and this parser then share the time
    instead of adding it up), memory bounded by a chunk. Merges are there for their parents: a reader that
    stops part way knows exactly which commits it has seen (`tether.repo.watermark`). Iterate once;
    `close()` (or `with`) stops a git not read to its end.

    Rename detection compares blob contents. A partial clone (`--filter=blob:none`) lacks history's old
    blobs and git may not fetch them (`_SETTINGS`): its history is read with exact renames alone, a path
    moved with its content unchanged (git finds those by blob id, without reading a blob). A repository
    that lacks blobs without saying so (a mirror missing its largest objects) makes `git log -M` fail part
    way: the commits given so far stand, and the rest is read on with exact renames (what was given is
    closed under ancestry, history being read parents first, so the rest is `revs` without the tips of
    what was given). Co-change works either way; a rename with edits then shows as a delete plus an add."""

    def __init__(self, root: Path, revs: Sequence[str], prefix: str = "") -> None:
        self.root, self.revs, self.prefix = root, list(revs), prefix
        self._exact = partial_clone(root)
        self._log = _Log(root, self.revs, exact=self._exact)

    def __iter__(self) -> Iterator[Commit]:
        if self._exact:
            yield from self._log.commits(self.prefix)
            return
        tips: set[str] = set()  # of the commits given so far
        try:
            for commit in self._log.commits(self.prefix):
                tips.difference_update(commit.parents)
                tips.add(commit.sha)
                yield commit
        except _RenamesFailed:
            self._log = _Log(self.root, [*self.revs, *(f"^{t}" for t in sorted(tips))], exact=True)
            yield from self._log.commits(self.prefix)

    def close(self) -> None:
        self._log.close()

    def __enter__(self) -> HistoryStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def partial_clone(root: Path) -> bool:
    """Whether the repository has a promisor remote (a partial clone: objects may be missing by design)."""
    found = git(
        root, "config", "--get-regexp", r"^(remote\..+\.promisor|extensions\.partialclone)$", check=False
    )
    return any(
        value.strip().lower() not in ("", "false", "no", "off", "0")
        for _, _, value in (
            line.partition(" ") for line in found.stdout.decode(errors="replace").splitlines()
        )
    )


class _RenamesFailed(Exception):
    """`git log -M` failed part way (missing blobs)."""


_CHUNK = 1 << 20
_BOUNDARY = "\0\x01"  # NUL then the next commit's \x01 marker: everything before it is whole commits


class _Log:
    """One `git log` of a `HistoryStream`, started at once."""

    def __init__(self, root: Path, revs: Sequence[str], *, exact: bool) -> None:
        import subprocess
        import tempfile

        self.root, self.revs, self.exact = root, revs, exact
        # Merges are listed (git log shows no changes for them unless asked with -m, -c or --cc) for their
        # parents; a reader skips them as `--no-merges` would.
        detect = "-M100%" if exact else "-M"
        self.args = ["log", "--topo-order", "--reverse", detect, "--name-status", "-z", "--format=%x01%H %P"]
        cmd, env = _command(root, [*self.args, *revs, "--"])
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 (git writes it while the stream is read; `close`)
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, env=env)
        except OSError as exc:
            self.err.close()
            raise TetherError(f"Could not run git ({exc}); install git or put it on PATH.") from exc

    def commits(self, prefix: str) -> Iterator[Commit]:
        proc = self.proc
        assert proc.stdout is not None
        rest = ""
        try:
            while True:
                data = os.read(proc.stdout.fileno(), _CHUNK)
                if not data:
                    break
                text = rest + data.decode("utf-8", "surrogateescape")
                cut = text.rfind(_BOUNDARY)
                if cut < 0:
                    rest = text
                    continue
                rest = text[cut + 1 :]
                yield from parse_log(text[: cut + 1].split("\0"), prefix)
            if proc.wait() != 0:
                self._failed()
            if rest:
                yield from parse_log(rest.split("\0"), prefix)
        finally:
            self.close()

    def _failed(self) -> None:
        if not self.exact:
            raise _RenamesFailed()
        self.err.seek(0)
        message = self.err.read().decode(errors="replace").strip()
        shown = " ".join(self.revs[:3]) + (" ..." if len(self.revs) > 3 else "")
        if partial_clone(self.root):  # a treeless clone (`--filter=tree:0`): its history has no file lists
            message += (
                "\nThis partial clone lacks objects its history's file lists need, and tether never"
                " fetches: `git fetch --refetch --filter=blob:none` makes it a blobless clone that tether"
                " can read (co-change and renames; recall works without them meanwhile)."
            )
        raise TetherError(f"`git {' '.join(self.args)} {shown}` failed in {self.root}: {message}")

    def close(self) -> None:
        """Stop git if it still runs (a reader that stopped early), and let go of its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc.wait()
        self.err.close()


def parse_log(tokens: Sequence[str], prefix: str = "") -> list[Commit]:
    """Parse `git log -z --name-status --format=%x01%H %P` split on NUL. Paths outside `prefix` (the map's
    root inside the work tree) are dropped, and a rename across that border is an add or a delete."""
    commits: list[Commit] = []
    sha: str | None = None
    parents: tuple[str, ...] = ()
    changes: list[Change] = []
    size = 0

    def local(path: str) -> str | None:
        if prefix and not path.startswith(prefix):
            return None
        path = path[len(prefix) :]
        return None if path.startswith(TETHER_DIR) else path

    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token.startswith("\x01"):
            if sha is not None:
                commits.append(Commit(sha, tuple(changes), size, parents))
            sha, *rest = token[1:].split() or [""]
            parents, changes, size = tuple(rest), [], 0
            continue
        status = token.lstrip("\n")
        if sha is None or not (status in _LETTERS or _STATUS.fullmatch(status)):
            continue  # not expected from git; skip rather than misread paths
        letter = status[0]
        if letter in "RC":
            old, new = local(tokens[i]), local(tokens[i + 1])
            i += 2
            if letter == "C":
                old = None
            if new is None and old is not None:
                changes.append(Change("D", old))
            elif new is not None:
                changes.append(Change("R" if old else "A", new, old))
        else:
            raw = tokens[i]
            i += 1
            # (`local` inlined for the common case, the map at the work tree's root: one call per path
            # of a 20k-commit history is a tenth of a first build's parse)
            path = local(raw) if prefix or raw.startswith(TETHER_DIR) else raw
            if path is not None:
                changes.append(Change(letter, path))
        size += 1
    if sha is not None:
        commits.append(Commit(sha, tuple(changes), size, parents))
    return commits


def collapse_renames(commits: Iterable[Commit]) -> list[tuple[str, str]]:
    """(old, new) per file renamed over `commits`, chains collapsed (a->b->c gives a->c).

    A chain that returns to its start, or whose file is deleted at the end, disappears. Pairs are in the
    order the chains began; apply them as one mapping (a swap a<->b cannot be applied in sequence)."""
    origin: dict[str, tuple[int, str]] = {}  # current path -> (order of the chain's first step, first path)
    seq = 0
    for commit in commits:
        moved: list[tuple[tuple[int, str], str]] = []
        for ch in commit.changes:
            if ch.old is not None:
                moved.append((origin.pop(ch.old, (seq, ch.old)), ch.path))
                seq += 1
            elif ch.status == "D":
                origin.pop(ch.path, None)
        for first, new in moved:
            origin[new] = first
    ordered = sorted((s, old, new) for new, (s, old) in origin.items() if old != new)
    return [(old, new) for _, old, new in ordered]
