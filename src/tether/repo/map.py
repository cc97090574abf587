"""The repo map (DESIGN §3): what exists, what was renamed, what changes together, what is imported.

`RepoMap.open` is cheap and the lookups are single indexed queries, so a hook can ask on every prompt;
`refresh` talks to git and the file system and runs at session start and on sync.

    >>> rm = RepoMap.open(Path("."), conn)        # conn: the index, with migrate_repomap applied
    >>> rm.refresh().renames                      # [(old, new), ...] since the last refresh
    >>> rm.neighbours("src/tether/recall.py")     # [("src/tether/fusion.py", 0.62), ...]

Co-change, in short: every non-merge commit touching at most `MAX_COMMIT_FILES` files counts once for
each file it touches and once for each pair of them; confidence of b given a is pairs(a, b) / count(a).
Counts follow renames: a path's history moves with it, so a renamed file keeps its neighbours.
History is processed once: the map remembers the last commit it read and reads only `last..HEAD`; if
that commit is no longer an ancestor of HEAD (rebase, force-push, reset), history is read again from
scratch and no renames are reported, since the old ones may not have happened on the new history.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.errors import TetherError
from tether.repo.imports import fan_in as compute_fan_in
from tether.repo.imports import language_of, parse_imports
from tether.store.sqlite.repomap import CachedImports, CoChangeWrite, RepoMapTables

# Commits touching more files are sweeps (reformatting, license headers, vendoring, mass renames):
# they would pair every file with every other one, drowning the real couplings, and cost n² pairs.
MAX_COMMIT_FILES = 30
# Minimum shared commits for a neighbour: one shared commit is often an accident (a drive-by fix in
# the same commit); two independent ones are a pattern.
MIN_SUPPORT = 2
# Minimum confidence: a file that changed 100 times and once or twice with b is not coupled to b.
MIN_CONFIDENCE = 0.1
# Bump when the counting rules change: an index built under other rules is rebuilt at the next refresh.
REPOMAP_VERSION = "1"
# Never listed, in a plain directory; `.tether/` is skipped in git repos too, because memory notes are
# committed beside the code and would otherwise become everyone's co-change neighbour.
SKIP_DIRS = frozenset({".git", ".tether", "node_modules", ".venv", "__pycache__"})
_TETHER_DIR = ".tether/"
_MAX_SOURCE_BYTES = 2_000_000  # larger "source" files are generated or vendored; their imports don't count
_STATUS = re.compile(r"[ACDMRTUXB]\d*")


@dataclass(frozen=True)
class RefreshReport:
    renames: list[tuple[str, str]]  # (old, new), chains collapsed; apply as one mapping, not in sequence
    new_commits: int  # non-merge commits read from git by this refresh
    rebuilt: bool  # co-change was computed from scratch (first build, rewritten history, new rules)
    files: int  # files that exist now


@dataclass(frozen=True)
class Change:
    status: str  # git's letter: A, M, D, R (rename, with `old`), T, ...
    path: str
    old: str | None = None


@dataclass(frozen=True)
class Commit:
    sha: str
    changes: tuple[Change, ...]
    size: int  # files touched, counted before narrowing to the map's root


# -- git --------------------------------------------------------------------------------------------


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    # Settings a user's config could change and that would change what we parse.
    cmd = ["git", "-C", str(root), "-c", "diff.relative=false", "-c", "log.showSignature=false", *args]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
    except OSError as exc:
        raise TetherError(f"Could not run git ({exc}); install git or put it on PATH.") from exc
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise TetherError(f"`git {' '.join(args)}` failed in {root}: {err}")
    return proc


def _probe(root: Path) -> tuple[str, str | None] | None:
    """(prefix of root inside the work tree, HEAD or None for an empty repo), or None outside git."""
    try:
        proc = _git(root, "rev-parse", "--show-prefix", check=False)
    except TetherError:
        return None  # no git binary: treat as a plain directory
    if proc.returncode != 0:
        return None
    prefix = proc.stdout.decode().strip()
    head = _git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    return prefix, (head.stdout.decode().strip() or None) if head.returncode == 0 else None


def _split_z(raw: bytes) -> list[str]:
    return [os.fsdecode(p) for p in raw.split(b"\0") if p]


def list_files(root: Path, git: bool) -> list[str]:
    """Repo-relative POSIX paths of the files that exist now, sorted.

    In git: tracked files still on disk plus untracked ones that are not ignored. Elsewhere: a walk
    that skips `SKIP_DIRS` and every dot-directory."""
    if git:
        listed = set(
            _split_z(_git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout)
        )
        listed -= set(_split_z(_git(root, "ls-files", "-z", "--deleted").stdout))
        return sorted(p for p in listed if not p.startswith(_TETHER_DIR))
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


def read_commits(root: Path, rev_range: str, prefix: str = "") -> list[Commit]:
    """Non-merge commits in `rev_range`, oldest first (parents before children), with their files.

    Rename detection reads blob contents; in a partial clone (`--filter=blob:none`, or a mirror missing
    its largest objects) some are absent and `git log -M` fails. Then history is read without rename
    detection: co-change still works, renames show as a delete plus an add."""
    args = ["log", "--no-merges", "--topo-order", "--reverse", "-M", "--name-status", "-z", "--format=%x01%H"]
    proc = _git(root, *args, rev_range, "--", check=False)
    if proc.returncode != 0:
        args[args.index("-M")] = "--no-renames"
        proc = _git(root, *args, rev_range, "--")
    return parse_log(_split_z(proc.stdout), prefix)


def parse_log(tokens: Sequence[str], prefix: str = "") -> list[Commit]:
    """Parse `git log -z --name-status --format=%x01%H` split on NUL. Paths outside `prefix` (the map's
    root inside the work tree) are dropped, and a rename across that border is an add or a delete."""
    commits: list[Commit] = []
    sha: str | None = None
    changes: list[Change] = []
    size = 0

    def local(path: str) -> str | None:
        if prefix and not path.startswith(prefix):
            return None
        path = path[len(prefix) :]
        return None if path.startswith(_TETHER_DIR) else path

    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token.startswith("\x01"):
            if sha is not None:
                commits.append(Commit(sha, tuple(changes), size))
            sha, changes, size = token[1:].strip(), [], 0
            continue
        status = token.lstrip("\n")
        if not _STATUS.fullmatch(status) or sha is None:
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
            path = local(tokens[i])
            i += 1
            if path is not None:
                changes.append(Change(letter, path))
        size += 1
    if sha is not None:
        commits.append(Commit(sha, tuple(changes), size))
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


@dataclass
class _History:
    """Co-change counts accumulated over commits, in path ids, on top of what the index holds."""

    ids: dict[str, int]
    next_id: int = 0
    commits: int = 0
    write: CoChangeWrite = field(default_factory=lambda: CoChangeWrite({}, set(), set(), {}, {}))

    def __post_init__(self) -> None:
        self.next_id = max(self.ids.values(), default=0) + 1
        self._changes: Counter[int] = Counter()
        self._pairs: Counter[tuple[int, int]] = Counter()

    def _id(self, path: str) -> int:
        ident = self.ids.get(path)
        if ident is None:
            ident = self.ids[path] = self.next_id
            self.next_id += 1
            self.write.new_ids.add(ident)
            self.write.paths[ident] = path
        return ident

    def add(self, commit: Commit) -> None:
        self.commits += 1
        renames = [(ch.old, ch.path) for ch in commit.changes if ch.old is not None]
        if renames:
            # One commit's renames are simultaneous: take every old path first, then place the new ones.
            moving = [(self.ids.pop(old, None), new) for old, new in renames]
            for ident, new in moving:
                if ident is None:
                    continue
                taken = self.ids.get(new)
                if taken is not None and taken != ident:
                    self.write.dropped.add(taken)  # the path now belongs to the moved file
                self.ids[new] = ident
                self.write.paths[ident] = new
        if commit.size > MAX_COMMIT_FILES or not commit.changes:
            return
        touched = sorted({self._id(ch.path) for ch in commit.changes})
        self._changes.update(touched)
        for x, a in enumerate(touched):
            for b in touched[x + 1 :]:
                self._pairs[(a, b)] += 1

    def result(self) -> CoChangeWrite:
        self.write.changes = dict(self._changes)
        self.write.pairs = dict(self._pairs)
        return self.write


# -- the facade -------------------------------------------------------------------------------------


class RepoMap:
    """Files, renames, co-change and fan-in of one project, cached in tether's SQLite index."""

    def __init__(self, root: Path, tables: RepoMapTables) -> None:
        self.root = root
        self.tables = tables
        self._state: dict[str, str] | None = None

    @classmethod
    def open(cls, root: Path, conn: sqlite3.Connection) -> RepoMap:
        """Cheap: no git, no query until a lookup needs one."""
        return cls(Path(root), RepoMapTables(conn))

    # -- lookups (hot path) ---------------------------------------------------------------------

    def _cached_state(self) -> dict[str, str]:
        if self._state is None:
            self._state = self.tables.state()
        return self._state

    def is_git(self) -> bool:
        mode = self._cached_state().get("mode")
        if mode is not None:
            return mode == "git"
        return any((d / ".git").exists() for d in (self.root.resolve(), *self.root.resolve().parents))

    def exists(self, path: str) -> bool:
        """Whether `path` (or, for "dir/", any file under it) exists.

        The map answers as of the last refresh, corrected by one `lstat`: a listed file deleted since
        then does not exist, and a file created since then (changed after the refresh) does."""
        rel = self._rel(path)
        if rel is None:
            return False
        target = self.root / rel
        if rel.endswith("/"):
            if self.tables.present_under(rel):
                return target.is_dir()
            return self._appeared(target)
        if self.tables.present(rel):
            return os.path.lexists(target)
        return self._appeared(target)

    def _appeared(self, target: Path) -> bool:
        try:
            st = target.lstat()
        except OSError:
            return False
        # Appeared since the refresh began. (Files there before it are listed, or ignored on purpose.)
        return st.st_ctime_ns > int(self._cached_state().get("refreshed_at_ns", "0"))

    def neighbours(
        self,
        path: str,
        limit: int = 2,
        *,
        min_count: int = MIN_SUPPORT,
        min_confidence: float = MIN_CONFIDENCE,
    ) -> list[tuple[str, float]]:
        """The files that most often change with `path` and still exist: (path, confidence), strongest
        first. Confidence = shared commits / commits touching `path`; for one `path` it orders exactly
        as the shared count does, so ties fall back to the neighbour's path."""
        rel = self._rel(path)
        if rel is None or rel.endswith("/") or limit <= 0:
            return []
        changes, rows = self.tables.neighbours(rel, max(1, min_count), limit)
        return [(p, n / changes) for p, n in rows if n / changes >= min_confidence]

    def fan_in(self, path: str) -> int:
        """How many files import `path` (0 for unknown paths and directories)."""
        rel = self._rel(path)
        return 0 if rel is None or rel.endswith("/") else self.tables.fan_in(rel)

    def _rel(self, path: str) -> str | None:
        path = path.replace("\\", "/")
        if os.path.isabs(path):
            try:
                path = Path(path).resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                return None
        is_dir = path.endswith("/")
        norm = posixpath.normpath(path)
        if norm.startswith("../") or norm == "..":
            return None
        if norm == ".":
            return None
        return norm + "/" if is_dir else norm

    # -- refresh --------------------------------------------------------------------------------

    def refresh(self) -> RefreshReport:
        """Bring files, renames, co-change and fan-in up to date with the work tree and HEAD."""
        started = time.time_ns()
        probe = _probe(self.root)
        git = probe is not None
        prefix, head = probe if probe is not None else ("", None)
        files = list_files(self.root, git)
        file_set = set(files)
        specs, import_rows, import_changed = self._parse_sources(files)

        for _ in range(3):  # optimistic: another process may refresh between our read and our write
            state = self.tables.state()
            rebuild = (
                state.get("mode") != ("git" if git else "dir")
                or state.get("prefix", "") != prefix
                or state.get("version") != REPOMAP_VERSION
            )
            last = state.get("last_commit")
            commits: list[Commit] = []
            if git and head is not None and (rebuild or last != head):
                if not rebuild and last is not None and self._is_ancestor(last, head):
                    commits = read_commits(self.root, f"{last}..{head}", prefix)
                else:
                    rebuild = True
                    commits = read_commits(self.root, head, prefix)
            elif git and head is None and last is not None:
                rebuild = True  # the branch lost all its commits

            with self.tables.write():
                if self.tables.state().get("last_commit") != last:
                    continue
                if rebuild:
                    self.tables.clear_history()
                history = _History(self.tables.path_ids())
                for commit in commits:
                    history.add(commit)
                write = history.result()
                self.tables.apply_cochange(write)
                if rebuild or write.paths or self._files_changed(state, files):
                    self.tables.set_files(files)
                self.tables.put_imports(import_rows)
                self.tables.drop_imports(set(self.tables.cached_imports()) - set(specs))
                if rebuild or import_changed or write.paths or self._files_changed(state, files):
                    self._write_fan_in(file_set, specs)
                self.tables.set_state(
                    {
                        "mode": "git" if git else "dir",
                        "prefix": prefix,
                        "version": REPOMAP_VERSION,
                        "last_commit": head,
                        "files_digest": _digest(files),
                        "refreshed_at_ns": str(started),
                    }
                )
            self._state = None
            renames = [] if rebuild else collapse_renames(commits)
            return RefreshReport(renames, len(commits), rebuild, len(files))
        raise TetherError("The repo map kept changing under this refresh (other sessions refreshing); retry.")

    def _is_ancestor(self, old: str, head: str) -> bool:
        return _git(self.root, "merge-base", "--is-ancestor", old, head, check=False).returncode == 0

    @staticmethod
    def _files_changed(state: dict[str, str], files: list[str]) -> bool:
        return state.get("files_digest") != _digest(files)

    def _write_fan_in(self, files: set[str], specs: dict[str, tuple[str, ...]]) -> None:
        counts = compute_fan_in(files, specs)
        stored = self.tables.fan_ins()
        diff = {p: counts.get(p, 0) for p in stored if stored[p] != counts.get(p, 0)}
        self.tables.set_fan_ins(diff)

    def _parse_sources(
        self, files: list[str]
    ) -> tuple[dict[str, tuple[str, ...]], dict[str, CachedImports], bool]:
        """Import specs of every source file, parsing only files whose content changed.

        Returns (specs by path, cache rows to write, whether any file's specs changed or vanished)."""
        cached = self.tables.cached_imports()
        specs: dict[str, tuple[str, ...]] = {}
        rows: dict[str, CachedImports] = {}
        changed = False
        root = str(self.root)
        for path in files:
            if language_of(path) is None:
                continue
            full = os.path.join(root, path)
            try:
                st = os.stat(full)
            except OSError:
                continue
            old = cached.get(path)
            if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
                specs[path] = old.specs
                continue
            if st.st_size > _MAX_SOURCE_BYTES:
                continue
            try:
                with open(full, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            digest = hashlib.blake2b(data, digest_size=16).hexdigest()
            if old is not None and old.digest == digest:
                parsed = old.specs  # touched, not changed
            else:
                parsed = tuple(parse_imports(path, data.decode("utf-8", errors="replace")))
                changed = changed or old is None or old.specs != parsed
            specs[path] = parsed
            rows[path] = CachedImports(st.st_mtime_ns, st.st_size, digest, parsed)
        changed = changed or bool(set(cached) - set(specs))
        return specs, rows, changed


def _digest(files: list[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for f in files:
        h.update(f.encode("utf-8", errors="surrogateescape") + b"\0")
    return h.hexdigest()
