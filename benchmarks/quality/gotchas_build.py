"""Build the file-tied (gotcha) corpus from fetched git mirrors, label it, and check it against frozen labels.

    python benchmarks/quality/gotchas_build.py                  # build every repo, verify against labels/gotchas/
    python benchmarks/quality/gotchas_build.py --repo tailscale # one repo
    python benchmarks/quality/gotchas_build.py --freeze         # (re)write the labels: only before any scoring
    python benchmarks/quality/gotchas_build.py --audit 40 20    # print random positives / negatives to read

Memories are the warning-style comments of the source files at C1 (`gotchas_comments`). Tasks are the later
non-merge commits by people (the filters of `build.py`) that touch files carrying at least MIN_POOL of them.
A memory is relevant to a task when the task modifies its file and changes a line within K lines of it, in
the file as it was just before the commit (the comment's C1 lines followed through the commits in between).
GOTCHAS.md has the exact rules and the reasons.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build import BOT_RE, LOCK_FILE_RE, MAX_FILES, dump_labels, make_query
from corpus import RepoSpec, git, git_dir, mirror_root
from gotchas_comments import LANGUAGES, Gotcha, gotchas, language_of
from gotchas_corpus import (
    GOTCHA_REPOS,
    GotchaCorpus,
    GotchaTask,
    Hunk,
    below,
    distance,
    follow,
    gotcha_spec,
    labels_file,
    save,
)

# Chosen before any system was scored (GOTCHAS.md, "Positives"): a change at most this many lines from a
# comment counts as next to it. Three is the context git shows around a change by default, the lines a
# reviewer reads with it; a warning comment sits just above the statement or block it is about.
K = 3
# A task must touch files carrying at least this many memories: with three or fewer, any system that
# returns the touched files' memories gets all of them into its top three, and there is nothing to rank.
MIN_POOL = 4
# Tasks whose touched files carry this many memories or more are reported apart: a real ranking problem.
BIG_POOL = 25
# Source files larger than this are data, not code anyone edits by hand.
MAX_SOURCE_BYTES = 1_000_000
# The edit text kept per hunk (for retrievers that read it); the line range is always exact.
MAX_EDIT_CHARS = 4000

# Negatives "near" a change, for the audit: a change within this many lines, above or below.
NEAR_AUDIT = 10

HEADER = "\x00COMMIT\x00"
SOURCE_PATHSPECS = [f":(glob)**/*.{ext}" for ext in LANGUAGES]
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


# --- memories -----------------------------------------------------------------------------------------


def read_blobs(gdir: Path, shas: list[str]) -> Iterator[bytes | None]:
    """The contents of the given blobs in order (None for one the mirror lacks), by one `cat-file --batch`."""
    proc = subprocess.Popen(
        ["git", f"--git-dir={gdir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    payload = "".join(f"{s}\n" for s in shas).encode()
    stdin = proc.stdin

    def feed() -> None:
        stdin.write(payload)
        stdin.close()

    writer = threading.Thread(target=feed)
    writer.start()
    for _ in shas:
        head = proc.stdout.readline().split()
        if len(head) < 3 or head[1] == b"missing":
            yield None
            continue
        data = proc.stdout.read(int(head[2]))
        proc.stdout.read(1)
        yield data
    writer.join()
    proc.wait()


def build_memories(gdir: Path, c1: str) -> tuple[list[Gotcha], Counter[str]]:
    """Every warning-style comment of the source files at C1, in path and line order."""
    stats: Counter[str] = Counter()
    entries = []
    for rec in git(gdir, "-c", "core.quotepath=false", "ls-tree", "-r", "-l", "-z", c1).split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        mode, kind, sha, size = meta.split()
        if kind != "blob" or mode == "120000" or language_of(path) is None:
            continue
        if size == "-" or int(size) > MAX_SOURCE_BYTES:
            stats["source files too large"] += 1
            continue
        entries.append((sha, path))
    entries.sort(key=lambda e: e[1])
    memories: list[Gotcha] = []
    for (_, path), data in zip(entries, read_blobs(gdir, [s for s, _ in entries]), strict=True):
        if data is None:
            stats["source files missing from the mirror"] += 1
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            stats["source files not UTF-8"] += 1
            continue
        stats["source files read"] += 1
        found = gotchas(path, text)
        if found:
            stats["source files with a memory"] += 1
        memories.extend(found)
    return memories, stats


# --- tasks --------------------------------------------------------------------------------------------


def _raw_pass(
    gdir: Path, rev_range: str
) -> tuple[list[str], dict[str, dict[str, str]], dict[str, str], list[str]]:
    """Commits oldest first, each one's touched paths with their status, its first parent, and the paths
    whose blobs the mirror lacks (files of 4 MiB and more: the diff pass must leave them out)."""
    out = git(
        gdir,
        "-c",
        "core.quotepath=false",
        "log",
        "--no-merges",
        "--reverse",
        "--no-renames",
        "--raw",
        "--no-abbrev",
        "--format=%x00COMMIT%x00%H %P",
        rev_range,
    )
    order: list[str] = []
    status: dict[str, dict[str, str]] = {}
    parents: dict[str, str] = {}
    blobs: dict[str, str] = {}
    sha = ""
    for line in out.splitlines():
        if line.startswith(HEADER):
            fields = line[len(HEADER) :].split()
            sha = fields[0]
            order.append(sha)
            parents[sha] = fields[1] if len(fields) > 1 else ""
            status[sha] = {}
        elif line.startswith(":"):
            meta, path = line.split("\t", 1)
            parts = meta.split()
            status[sha][path] = parts[4][0]
            for blob in parts[2:4]:
                if not blob.startswith("0000000"):
                    blobs[blob] = path
    check = subprocess.run(
        ["git", f"--git-dir={gdir}", "cat-file", "--batch-check"],
        input="\n".join(blobs),
        capture_output=True,
        text=True,
        check=True,
    )
    missing = sorted({blobs[ln.split()[0]] for ln in check.stdout.splitlines() if ln.endswith(" missing")})
    return order, status, parents, missing


def _messages(gdir: Path, rev_range: str) -> dict[str, tuple[str, str, str, str]]:
    out = git(gdir, "log", "--no-merges", "--format=%H%x1f%an%x1f%ae%x1f%s%x1f%b%x1e", rev_range)
    found = {}
    for rec in out.split("\x1e"):
        fields = rec.strip("\n").split("\x1f")
        if len(fields) >= 5:
            found[fields[0]] = (fields[1], fields[2], fields[3], fields[4])
    return found


def _runs_pass(
    gdir: Path, rev_range: str, missing: list[str]
) -> dict[str, dict[str, tuple[list[tuple[int, int]], Hunk | None]]]:
    """Per commit and source file: every changed run (pre-image start, count) and the first as a Hunk."""
    cmd = ["git", f"--git-dir={gdir}", "-c", "core.quotepath=false", "log", "--no-merges", "--no-renames"]
    cmd += ["-p", "-U3", "--format=%x00COMMIT%x00%H", rev_range, "--", *SOURCE_PATHSPECS]
    cmd += [f":(exclude,literal){p}" for p in missing]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    result: dict[str, dict[str, tuple[list[tuple[int, int]], Hunk | None]]] = {}
    parser = _DiffParser()
    sha = ""
    for raw in proc.stdout:
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        if line.startswith(HEADER):
            if sha:
                result[sha] = parser.finish()
            sha = line[len(HEADER) :]
            continue
        parser.feed(line)
    if sha:
        result[sha] = parser.finish()
    if proc.wait() != 0:
        raise SystemExit(f"git log -p {rev_range} failed in {gdir}")
    return result


class _DiffParser:
    """Turns `git diff -U3` text into changed runs per file (a run: consecutive removed/added lines)."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[list[tuple[int, int]], Hunk | None]] = {}
        self.path = ""
        self.old = self.new = 0
        self.context: str | None = None  # the last context line seen in this hunk
        self.removed: list[str] = []
        self.added: list[str] = []
        self.run_start = 0
        self.in_hunk = False

    def feed(self, line: str) -> None:
        if line.startswith("diff --git a/"):
            self._close_run(None)
            rest = line[len("diff --git a/") :]
            self.path = rest[: (len(rest) - 3) // 2]
            self.in_hunk = False
            return
        m = HUNK_RE.match(line)
        if m:
            self._close_run(None)
            self.old, self.new = int(m.group(1)), int(m.group(3))
            if m.group(2) is not None and int(m.group(2)) == 0:
                self.old += 1  # `-s,0`: nothing old; the first old line after the hunk is s + 1
            self.context = None
            self.in_hunk = True
            return
        if not self.in_hunk or not line:
            if self.in_hunk and not line:  # an empty context line whose leading space was stripped
                self._context("")
            return
        tag, text = line[0], line[1:]
        if tag == " ":
            self._context(text)
        elif tag == "-":
            if not self.removed and not self.added:
                self.run_start = self.old
            self.removed.append(text)
            self.old += 1
        elif tag == "+":
            if not self.removed and not self.added:
                self.run_start = self.old
            self.added.append(text)
            self.new += 1

    def _context(self, text: str) -> None:
        self._close_run(text)
        self.context = text
        self.old += 1
        self.new += 1

    def _close_run(self, next_context: str | None) -> None:
        if not self.removed and not self.added:
            return
        runs, first = self.files.setdefault(self.path, ([], None))
        if self.removed:
            start, count = self.run_start, len(self.removed)
            old_s, new_s = "\n".join(self.removed), "\n".join(self.added)
        else:
            start, count = self.run_start - 1, 0  # an insertion after the previous old line
            added = "\n".join(self.added)
            if self.context is not None:
                old_s, new_s = self.context, f"{self.context}\n{added}"
            else:  # at the top of the file: anchor on the line it precedes
                anchor = next_context or ""
                old_s, new_s = anchor, f"{added}\n{anchor}"
        runs.extend(significant_runs(self.run_start, self.removed, self.added))
        if first is None:
            hunk = Hunk(self.path, start, count, old_s[:MAX_EDIT_CHARS], new_s[:MAX_EDIT_CHARS])
            self.files[self.path] = (runs, hunk)
        self.removed, self.added = [], []

    def finish(self) -> dict[str, tuple[list[tuple[int, int]], Hunk | None]]:
        self._close_run(None)
        files, self.files = self.files, {}
        self.path, self.in_hunk = "", False
        return files


def significant_runs(start: int, removed: list[str], added: list[str]) -> list[tuple[int, int]]:
    """The parts of one changed run that change more than whitespace, as (pre-image start, count) runs.

    `start` is the pre-image line of the run's first removed line (of the line after an insertion). Lines
    are compared with all whitespace removed and blank lines dropped, like `git diff -w
    --ignore-blank-lines` within the run: a re-indented or re-aligned line (gofmt aligning a struct
    literal's values, a block wrapped in a new condition) is not a change of what a comment says about it.

    >>> significant_runs(10, ["a  = 1", "b  = 2"], ["a = 1", "b = 2", "c = 3"])
    [(11, 0)]
    """
    old = [(start + i, "".join(t.split())) for i, t in enumerate(removed) if t.strip()]
    new = ["".join(t.split()) for t in added if t.strip()]
    if not old:
        return [(start - 1, 0)] if new else []
    found = []
    matcher = difflib.SequenceMatcher(None, [t for _, t in old], new, autojunk=False)
    for op, i1, i2, _, _ in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "insert":
            after = old[i1 - 1][0] if i1 > 0 else old[0][0] - 1
            found.append((after, 0))
        else:
            found.append((old[i1][0], old[i2 - 1][0] - old[i1][0] + 1))
    return found


def drift_between(
    gdir: Path, old: str, new: str, paths: list[str]
) -> dict[str, list[tuple[int, int, int, int]]]:
    """How the lines of `paths` moved from commit `old` to commit `new` (git hunks, -U0)."""
    if old == new or not paths:
        return {p: [] for p in paths}
    out = git(gdir, "-c", "core.quotepath=false", "diff", "--no-renames", "-U0", old, new, "--", *paths)
    drift: dict[str, list[tuple[int, int, int, int]]] = {p: [] for p in paths}
    path = ""
    for line in out.splitlines():
        if line.startswith("diff --git a/"):
            rest = line[len("diff --git a/") :]
            path = rest[: (len(rest) - 3) // 2]
            continue
        m = HUNK_RE.match(line)
        if m and path in drift:
            oc = 1 if m.group(2) is None else int(m.group(2))
            nc = 1 if m.group(4) is None else int(m.group(4))
            drift[path].append((int(m.group(1)), oc, int(m.group(3)), nc))
    return drift


def build_tasks(
    gdir: Path, spec: RepoSpec, by_file: dict[str, list[Gotcha]]
) -> tuple[list[GotchaTask], Counter[str]]:
    """The later commits by people whose touched files carry at least MIN_POOL memories."""
    rev_range = f"{spec.c1}..{spec.end}"
    dev_ids = set(git(gdir, "rev-list", f"{spec.c1}..{spec.c2}").split())
    order, status, parents, missing = _raw_pass(gdir, rev_range)
    messages = _messages(gdir, rev_range)
    runs = _runs_pass(gdir, rev_range, missing)
    skipped: Counter[str] = Counter()
    tasks = []
    for sha in order:
        author, email, subject, body = messages.get(sha, ("", "", "", ""))
        if BOT_RE.search(author) or BOT_RE.search(email):
            skipped["bot"] += 1
            continue
        touched = status[sha]
        if not touched:
            skipped["no files"] += 1
            continue
        if len(touched) > MAX_FILES:
            skipped[f"> {MAX_FILES} files"] += 1
            continue
        files = tuple(sorted(touched))
        pool = sum(len(by_file.get(p, ())) for p in files)
        if pool < MIN_POOL:
            skipped[f"< {MIN_POOL} memories on the touched files"] += 1
            continue
        changed = runs.get(sha, {})
        modified = [p for p in files if touched[p] == "M" and p in changed and not LOCK_FILE_RE.search(p)]
        parent = parents[sha]
        drift = drift_between(gdir, spec.c1, parent, [p for p in modified if p in by_file])
        tasks.append(
            GotchaTask(
                commit=sha,
                parent=parent,
                split="dev" if sha in dev_ids else "test",
                query=make_query(subject, body),
                files=files,
                status=dict(touched),
                runs={p: changed[p][0] for p in modified},
                first={p: h for p in modified if (h := changed[p][1]) is not None},
                drift=drift,
            )
        )
    return tasks, skipped


# --- labels -------------------------------------------------------------------------------------------


def pool_of(task: GotchaTask, by_file: dict[str, list[Gotcha]]) -> list[Gotcha]:
    """The memories on the task's touched files (what a file-restricted system chooses from)."""
    return [m for p in task.files for m in by_file.get(p, ())]


def nearest_change(task: GotchaTask, memory: Gotcha) -> int | None:
    """Lines from the memory (followed to the task's pre-image) down to the first line the task changed
    there: 0 when the task changes the comment itself.

    None when the task does not modify the memory's file, changes nothing from the comment down, or the
    comment was changed between C1 and the task (its C1 text is gone).
    """
    runs = task.runs.get(memory.path)
    if not runs:
        return None
    lines = follow((memory.line, memory.end_line), task.drift.get(memory.path, []))
    if lines is None:
        return None
    gaps = [g for start, count in runs if (g := below(lines, start, count)) is not None]
    return min(gaps) if gaps else None


def relevant_of(task: GotchaTask, by_file: dict[str, list[Gotcha]], k: int = K) -> list[Gotcha]:
    found = []
    for m in pool_of(task, by_file):
        d = nearest_change(task, m)
        if d is not None and d <= k:
            found.append(m)
    return found


def labels_document(corpus: GotchaCorpus, k: int = K) -> dict[str, object]:
    by_file = corpus.by_file()
    digest = hashlib.sha256("\n".join(sorted(m.id for m in corpus.memories)).encode()).hexdigest()[:16]
    return {
        "repo": corpus.repo,
        "github": corpus.github,
        "c1": corpus.c1,
        "c2": corpus.c2,
        "end": corpus.end,
        "k": k,
        "min_pool": MIN_POOL,
        "memories": len(corpus.memories),
        "memories_digest": digest,
        "tasks": [
            {
                "commit": t.commit,
                "split": t.split,
                "pool": len(pool_of(t, by_file)),
                "relevant": [[m.path, m.line, m.id] for m in relevant_of(t, by_file, k)],
            }
            for t in corpus.tasks
        ],
    }


def compare(frozen: dict[str, object], rebuilt: dict[str, object]) -> list[str]:
    """Human-readable differences between frozen and rebuilt labels (empty when they match)."""
    diffs = []
    for key in ("repo", "c1", "c2", "end", "k", "min_pool", "memories", "memories_digest"):
        if frozen.get(key) != rebuilt.get(key):
            diffs.append(f"{key}: frozen {frozen.get(key)} != rebuilt {rebuilt.get(key)}")
    old = {t["commit"]: t for t in frozen["tasks"]}  # type: ignore[attr-defined]
    new = {t["commit"]: t for t in rebuilt["tasks"]}  # type: ignore[attr-defined]
    for sha in sorted(old.keys() - new.keys()):
        diffs.append(f"task {sha[:10]}: in the frozen labels, missing from the rebuilt corpus")
    for sha in sorted(new.keys() - old.keys()):
        diffs.append(f"task {sha[:10]}: in the rebuilt corpus, not in the frozen labels")
    for sha in sorted(old.keys() & new.keys()):
        a, b = old[sha], new[sha]
        for key in ("split", "pool"):
            if a[key] != b[key]:
                diffs.append(f"task {sha[:10]}: {key} {a[key]} -> {b[key]}")
        ra = {tuple(r) for r in a["relevant"]}
        rb = {tuple(r) for r in b["relevant"]}
        for path, line, h in sorted(ra - rb):
            diffs.append(f"task {sha[:10]}: lost relevant memory {path}:{line} ({h})")
        for path, line, h in sorted(rb - ra):
            diffs.append(f"task {sha[:10]}: gained relevant memory {path}:{line} ({h})")
    return diffs


def load_labels(corpus: GotchaCorpus) -> dict[str, tuple[str, int, set[str]]]:
    """commit -> (split, pool size, relevant memory ids), from the frozen labels."""
    path = labels_file(corpus.repo)
    doc = json.loads(path.read_text(encoding="utf-8"))
    if (doc["c1"], doc["c2"], doc["end"]) != (corpus.c1, corpus.c2, corpus.end):
        raise SystemExit(f"{corpus.repo}: corpus cut-offs differ from {path}; rebuild with gotchas_build.py")
    ids = {m.id for m in corpus.memories}
    out = {}
    for t in doc["tasks"]:
        rel = {r[2] for r in t["relevant"]}
        if rel - ids:
            raise SystemExit(f"{corpus.repo}: labels name memories missing from the corpus; rebuild it")
        out[t["commit"]] = (t["split"], t["pool"], rel)
    return out


# --- the command --------------------------------------------------------------------------------------


def build(spec: RepoSpec, mirrors: Path, freeze: bool = False) -> bool:
    """Rebuild the corpus of one repository; freeze its labels, or check them. True when they match."""
    gdir = git_dir(spec, mirrors)
    for sha in (spec.c1, spec.c2, spec.end):
        git(gdir, "cat-file", "-e", f"{sha}^{{commit}}")
    memories, stats = build_memories(gdir, spec.c1)
    by_file: dict[str, list[Gotcha]] = {}
    for m in memories:
        by_file.setdefault(m.path, []).append(m)
    tasks, skipped = build_tasks(gdir, spec, by_file)
    corpus = GotchaCorpus(
        spec.name, spec.github, spec.c1, spec.c2, spec.end, str(gdir), memories, tasks, dict(skipped | stats)
    )
    path = save(corpus)
    doc = labels_document(corpus)
    report(corpus, doc, path)
    target = labels_file(spec.name)
    if freeze:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_labels(doc), encoding="utf-8")
        print(f"  froze labels -> {target}")
        return True
    if not target.exists():
        print(f"  no frozen labels at {target}: run with --freeze once, before any system is scored")
        return False
    diffs = compare(json.loads(target.read_text(encoding="utf-8")), doc)
    if diffs:
        print(f"  REBUILT CORPUS DIFFERS from {target} ({len(diffs)} differences):")
        for d in diffs[:40]:
            print(f"    {d}")
        if len(diffs) > 40:
            print(f"    ... and {len(diffs) - 40} more")
        return False
    print(f"  labels match {target.name}")
    return True


def report(corpus: GotchaCorpus, doc: dict[str, object], path: Path) -> None:
    print(
        f"{corpus.repo} ({corpus.github}) C1={corpus.c1[:10]} C2={corpus.c2[:10]} end={corpus.end[:10]} -> {path}"
    )
    files = len({m.path for m in corpus.memories})
    print(f"  memories (warning-style comments at C1): {len(corpus.memories)} on {files} files")
    print(f"  skipped / stats: {corpus.skipped}")
    for split in ("dev", "test"):
        rows = [t for t in doc["tasks"] if t["split"] == split]  # type: ignore[attr-defined]
        pos = [len(t["relevant"]) for t in rows]
        big = [t for t in rows if t["pool"] >= BIG_POOL]
        print(
            f"  {split}: {len(rows)} tasks (>= {MIN_POOL} memories on touched files), "
            f"{sum(1 for p in pos if p)} with a positive, {sum(pos)} positives; "
            f"{BIG_POOL}+ bucket {len(big)} ({sum(1 for t in big if t['relevant'])} with a positive)"
        )


def audit(repos: list[str], positives: int, negatives: int, seed: int) -> None:
    """Print random positives and negatives (both windows) with the diff hunks around the comment.

    Negatives are drawn from memories on files the task modified, half of them from those a change comes
    within NEAR_AUDIT lines of (above or below): the kind a wrong label would hide in.
    """
    from gotchas_corpus import load

    pos_pool, neg_pool, near_pool = [], [], []
    for name in repos:
        corpus = load(name)
        by_file = corpus.by_file()
        for task in corpus.tasks:
            rel = {m.id for m in relevant_of(task, by_file)}
            for m in pool_of(task, by_file):
                if m.id in rel:
                    pos_pool.append((corpus, task, m))
                elif m.path in task.runs:
                    lines = follow((m.line, m.end_line), task.drift.get(m.path, []))
                    near = lines is not None and any(
                        distance(lines, s, c) <= NEAR_AUDIT for s, c in task.runs[m.path]
                    )
                    (near_pool if near else neg_pool).append((corpus, task, m))
    rng = random.Random(seed)
    half = negatives // 2
    for kind, pool, n in (
        ("POSITIVE", pos_pool, positives),
        ("NEGATIVE (near)", near_pool, half),
        ("NEGATIVE (any)", neg_pool + near_pool, negatives - half),
    ):
        print(f"# {kind}: {min(n, len(pool))} of {len(pool)}")
        for index, (corpus, task, m) in enumerate(rng.sample(pool, min(n, len(pool))), 1):
            lines = follow((m.line, m.end_line), task.drift.get(m.path, []))
            print(f"\n===== {kind} {index}: {corpus.repo} {task.commit[:10]} {m.path}:{m.line}-{m.end_line}")
            print(f"at pre-image {lines}; below-gap {nearest_change(task, m)}; trigger {m.trigger}")
            print(f"query: {task.query[:160]!r}")
            print(f"comment: {m.text[:400]}")
            if lines is None:
                continue
            diff = git(
                Path(corpus.git_dir), "show", "--format=", "-U2", "--no-renames", task.commit, "--", m.path
            )
            for hunk in re.split(r"(?m)^(?=@@ )", diff)[1:]:
                head = HUNK_RE.match(hunk)
                assert head is not None
                start = int(head.group(1))
                count = 1 if head.group(2) is None else int(head.group(2))
                if start <= lines[1] + 12 and start + count >= lines[0] - 6:
                    print(hunk[:1500].rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", action="append", help="repository short name (default: all)")
    parser.add_argument("--mirrors", help="directory holding the fetched mirrors (default: /work/.mirror)")
    parser.add_argument(
        "--freeze", action="store_true", help="write labels/gotchas/<repo>.json (before scoring)"
    )
    parser.add_argument(
        "--audit", nargs=2, type=int, metavar=("POS", "NEG"), help="print random labels to read"
    )
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    specs = [gotcha_spec(n) for n in args.repo] if args.repo else list(GOTCHA_REPOS)
    if args.audit:
        audit([s.name for s in specs], args.audit[0], args.audit[1], args.seed)
        return 0
    ok = all([build(spec, mirror_root(args.mirrors), args.freeze) for spec in specs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
