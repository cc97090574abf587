"""Build the recall-quality corpus from fetched git mirrors, label it, and check it against frozen labels.

    python benchmarks/quality/build.py                    # build every repo, verify against labels/
    python benchmarks/quality/build.py --repo langfuse    # one repo
    python benchmarks/quality/build.py --freeze           # (re)write labels/<repo>.json: only before tuning

Memories are the rule units (`units.split_rules`, the splitter the labels were frozen with) of every rule
file at C1. Tasks are the later non-merge commits by people. A rule is relevant to a task when the task touches a file inside the rule's
scope and one of the rule's back-ticked identifiers appears in the task's added lines (README.md has the
exact rules). The labels are mechanical so that nobody, tuning included, can nudge them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from corpus import (
    REPOS,
    Corpus,
    MemoryItem,
    RepoSpec,
    Task,
    git,
    git_bytes,
    git_dir,
    labels_path,
    mirror_root,
    repo_spec,
    save_corpus,
)
from units import is_rule_file, split_rules

# Commits touching more files than this are sweeping changes (formatting, renames, vendoring), not tasks
# an agent would be given; DESIGN §3 skips them for co-change for the same reason.
MAX_FILES = 30
# Query = subject + start of the body: about what a person types as a task prompt.
QUERY_CHARS = 300
# An identifier found in more than this share of tasks' added lines says nothing about any one task.
MAX_IDENTIFIER_DF = 0.05
MIN_IDENTIFIER_LEN = 3
MAX_RULES_PER_IDENTIFIER = 2
# Added lines kept per task (labelling only); lock files and generated output are left out entirely.
MAX_ADDED_CHARS = 400_000
SUMMARY_CHARS = 160

BOT_RE = re.compile(r"\[bot\]|dependabot|renovate|github-actions|(^|[-_ ])bot($|[-_ @])", re.IGNORECASE)
TRAILER_RE = re.compile(r"^[A-Za-z-]+-by:|^Co-authored-by:|^Change-Id:", re.IGNORECASE)
LOCK_FILE_RE = re.compile(
    r"(^|/)(pnpm-lock\.yaml|package-lock\.json|yarn\.lock|uv\.lock|poetry\.lock|Cargo\.lock|go\.sum)$"
    r"|\.snap$|\.min\.js$|/cassettes/"
)
INLINE_CODE_RE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
IDENT_RE = re.compile(r"^@?[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*")
CODE_NAME_RE = re.compile(r"[_.$:#]|[A-Z]")
IMPORT_ONLY_RE = re.compile(r"\s*(@\S+\s*)+")
PATHLIKE_RE = re.compile(r"/|\\|\.(py|ts|tsx|js|jsx|mjs|json|md|mdc|ya?ml|toml|sql|sh|txt|css|html|lock)$")


def unit_hash(path: str, line: int, text: str) -> str:
    """The stable id of a rule unit: what the frozen labels refer to."""
    return hashlib.sha256(f"{path}\0{line}\0{text}".encode()).hexdigest()[:16]


def summary_of(text: str, heading: str) -> str:
    """The one line that would be injected for this rule: its first prose line (heading for a bare fence)."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("```", "~~~")) or re.fullmatch(r"[|:\- ]+", line):
            continue
        line = re.sub(r"^([-*+]|\d+[.)])\s+", "", line)
        if text.lstrip().startswith(("```", "~~~")) and heading:
            line = f"{heading.split(' > ')[-1]}: {line}"
        return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"
    return heading[:SUMMARY_CHARS]


# --- memories -----------------------------------------------------------------------------------------


def build_memories(gdir: Path, c1: str) -> tuple[list[MemoryItem], dict[str, int]]:
    entries = []
    for rec in git(gdir, "ls-tree", "-r", "-z", c1).split("\0"):
        if not rec:
            continue
        meta, path = rec.split("\t", 1)
        mode = meta.split()[0]
        if is_rule_file(path):
            entries.append((mode, path))
    memories: list[MemoryItem] = []
    sizes: dict[str, int] = {}
    for mode, path in sorted(entries, key=lambda e: e[1]):
        if mode == "120000":
            # CLAUDE.md -> AGENTS.md is the same rules, loaded once; a link to a non-rule file has no
            # lines of its own to anchor a rule to, so symlinks never add units.
            continue
        blob = git_bytes(gdir, "show", f"{c1}:{path}")
        try:
            text = blob.decode("utf-8-sig")
        except UnicodeDecodeError:
            print(f"  skip {path}: not UTF-8", file=sys.stderr)
            continue
        if IMPORT_ONLY_RE.fullmatch(text):
            # A CLAUDE.md holding only `@AGENTS.md` is Claude's way of loading the other file: the same
            # rules, like a symlink, with no lines of its own.
            continue
        sizes[path] = len(text)
        for unit in split_rules(path, text):
            memories.append(
                MemoryItem(
                    id=unit_hash(unit.path, unit.line, unit.text),
                    path=unit.path,
                    line=unit.line,
                    end_line=unit.end_line,
                    text=unit.text,
                    heading=unit.heading,
                    scope=unit.scope,
                    globs=unit.globs,
                    summary=summary_of(unit.text, unit.heading),
                )
            )
    return memories, sizes


# --- tasks --------------------------------------------------------------------------------------------

HEADER = "\x00COMMIT\x00"


def _commits(gdir: Path, rev_range: str) -> Iterator[tuple[list[str], list[str], dict[str, list[str]]]]:
    """Yield (header fields, touched paths, added lines) for each non-merge commit, oldest first.

    Touched paths come from the trees (`--raw`), which needs no file contents. Added lines come from a
    second pass with `-p`; a mirror lacks blobs of 4 MiB and more, so paths with a missing blob are
    excluded from that pass (such files are data dumps, not code anyone labels by).
    """
    base = ["git", f"--git-dir={gdir}", "-c", "core.quotepath=false", "log", "--no-merges", "--reverse"]
    base += ["--no-renames", "--no-color", "--no-ext-diff"]
    raw = git(
        gdir,
        "-c",
        "core.quotepath=false",
        "log",
        "--no-merges",
        "--reverse",
        "--no-renames",
        "--raw",
        "--no-abbrev",
        "--format=%x00COMMIT%x00%H",
        rev_range,
    )
    files: dict[str, list[str]] = {}
    blobs: dict[str, str] = {}
    order: list[str] = []
    sha = ""
    for line in raw.splitlines():
        if line.startswith(HEADER):
            sha = line[len(HEADER) :]
            order.append(sha)
            files[sha] = []
        elif line.startswith(":"):
            meta, path = line.split("\t", 1)
            files[sha].append(path)
            for blob in meta.split()[2:4]:  # the diff reads both sides: a missing old blob fails it too
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
    excludes = [f":(exclude,literal){p}" for p in missing]
    cmd = [*base, "-p", "-U0", "--format=%x00COMMIT%x00%H%x1f%an%x1f%ae%x1f%s%x1f%b%x1e", rev_range, "--"]
    cmd += [".", *excludes] if excludes else []
    headers: dict[str, list[str]] = {}
    added: dict[str, dict[str, list[str]]] = {}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    pending = ""
    per_file: dict[str, list[str]] = {}
    current: list[str] = []
    current_lock = False
    for raw_line in proc.stdout:
        line = raw_line.decode("utf-8", errors="replace").rstrip("\n")
        if pending or line.startswith(HEADER):
            pending += (line[len(HEADER) :] if line.startswith(HEADER) else line) + "\n"
            if "\x1e" in line:
                header = pending.split("\x1e", 1)[0].split("\x1f")
                headers[header[0]] = header
                per_file = added.setdefault(header[0], {})
                current = []
                pending = ""
            continue
        if line.startswith("diff --git a/"):
            rest = line[len("diff --git a/") :]
            path = rest[: (len(rest) - 3) // 2]
            current_lock = bool(LOCK_FILE_RE.search(path))
            current = per_file.setdefault(path, [])
        elif line.startswith("+") and not line.startswith("+++ ") and not current_lock:
            current.append(line[1:])
    if proc.wait() != 0:
        raise SystemExit(f"git log -p {rev_range} failed in {gdir}")
    for sha in order:
        header = headers.get(sha)
        if header is None:  # touched only excluded paths: ask for its message alone
            header = (
                git(gdir, "log", "-1", "--format=%H%x1f%an%x1f%ae%x1f%s%x1f%b", sha)
                .rstrip("\n")
                .split("\x1f")
            )
        yield header, files[sha], added.get(sha, {})


def make_query(subject: str, body: str) -> str:
    lines = [ln for ln in body.splitlines() if ln.strip() and not TRAILER_RE.match(ln.strip())]
    text = subject.strip()
    rest = " ".join(ln.strip() for ln in lines)
    if rest:
        text = f"{text}\n{rest}"
    if len(text) > QUERY_CHARS:
        cut = text[:QUERY_CHARS]
        text = cut[: cut.rfind(" ")] if " " in cut[len(subject) :] else cut
    return text


def build_tasks(gdir: Path, spec: RepoSpec) -> tuple[list[Task], Counter[str]]:
    dev_ids = set(git(gdir, "rev-list", f"{spec.c1}..{spec.c2}").split())
    skipped: Counter[str] = Counter()
    tasks = []
    for header, files, added in _commits(gdir, f"{spec.c1}..{spec.end}"):
        sha, author, email, subject, body = (header + [""] * 5)[:5]
        sha = sha.strip()
        if BOT_RE.search(author) or BOT_RE.search(email):
            skipped["bot"] += 1
            continue
        unique = sorted(set(files))
        if not unique:
            skipped["no files"] += 1
            continue
        if len(unique) > MAX_FILES:
            skipped[f"> {MAX_FILES} files"] += 1
            continue
        if all(is_rule_file(f) for f in unique):
            skipped["only rule files"] += 1
            continue
        budget = MAX_ADDED_CHARS
        per_file = {}
        for path in sorted(added):
            text = "\n".join(added[path])[:budget]
            if text:
                per_file[path] = text
                budget -= len(text)
        tasks.append(
            Task(
                commit=sha,
                split="dev" if sha in dev_ids else "test",
                query=make_query(subject, body),
                files=tuple(unique),
                added=per_file,
            )
        )
    return tasks, skipped


# --- labels -------------------------------------------------------------------------------------------


def identifiers(text: str) -> set[str]:
    """Back-ticked identifiers of a rule, outside code fences, without paths, URLs, markup or flags."""
    prose = re.sub(r"(?ms)^\s*(```|~~~).*?^\s*\1[^\n]*$", "", text)
    found = set()
    for match in INLINE_CODE_RE.finditer(prose):
        span = match.group(2).strip()
        if not span or "://" in span or span.startswith(("<", "-", "$ ")) or PATHLIKE_RE.search(span):
            continue
        ident = IDENT_RE.match(span)
        if ident is None:
            continue
        name = ident.group(0)
        # `uv run pytest` or `make test` are commands, not names; keep a span only when the identifier is
        # all of it, or it is a call / subscript / generic (`Agent(...)`, `ctx.deps[...]`, `Foo<T>`).
        tail = span[len(name) :]
        if tail and tail[0] not in "([<":
            continue
        if len(name.lstrip("@")) < MIN_IDENTIFIER_LEN:
            continue
        # A lowercase word (`fixed`, `main`, `httpx`) is as likely English or a CSS keyword as code; a name
        # with an underscore, a dot, a capital or call parentheses is code.
        if not (CODE_NAME_RE.search(name) or tail.startswith("(")):
            continue
        found.add(name)
    return found


# Comment syntax by file extension, for `code_only`. Other files (Markdown, JSON, SQL, ...) are kept whole.
HASH_COMMENT_EXTS = frozenset({"py", "pyi", "sh", "bash", "zsh", "toml", "yaml", "yml"})
SLASH_COMMENT_EXTS = frozenset(
    {
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "mts",
        "cts",
        "go",
        "rs",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "java",
        "kt",
        "swift",
        "cs",
        "scala",
    }
)
# Quote characters that open a string in which a comment marker is text. A Rust `'` starts a lifetime as
# often as a char literal, so Rust and Go only count `"`.
_QUOTES = {"rs": '"', "go": '"`'}


def code_only(path: str, text: str) -> str:
    r"""The added lines of `path` with comments removed, so a name mentioned only in a comment does not count.

    Line-based and simple on purpose (the labels see added lines, not whole files): for `#` languages
    (Python, shell, TOML, YAML) everything from a `#` outside a string is dropped; for C-like languages
    (JS/TS, Go, Rust, C, Java, ...) `//` to the end of the line, `/* ... */` spans on one line, a line that
    opens `/*` from there on, and lines that continue a block comment (`* ...`, `*/`). A block comment's
    inner lines without a leading `*` are not recognised. Other file types are returned unchanged.

    >>> code_only("a.py", "x = f(a)  # uses Foo")
    'x = f(a)  '
    >>> code_only("a.ts", " * see Foo\nconst s = '//not a comment' // Foo")
    "const s = '//not a comment' "
    """
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext in HASH_COMMENT_EXTS:
        markers: tuple[str, ...] = ("#",)
    elif ext in SLASH_COMMENT_EXTS:
        markers = ("//", "/*")
    else:
        return text
    quotes = _QUOTES.get(ext, "\"'`")
    kept = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if markers[0] == "//" and (stripped.startswith(("* ", "*/")) or stripped == "*"):
            continue
        kept.append(_cut_comment(line, markers, quotes))
    return "\n".join(kept)


def _cut_comment(line: str, markers: tuple[str, ...], quotes: str) -> str:
    out = []
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                out.append(line[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in quotes:
            quote = ch
        elif line.startswith("/*", i) and "/*" in markers:
            end = line.find("*/", i + 2)
            if end < 0:
                break
            i = end + 2
            continue
        elif any(line.startswith(m, i) for m in markers) and (ch != "#" or i == 0 or line[i - 1].isspace()):
            break  # a `#` starts a comment only as a word of its own (not `$#`, not a URL's `#anchor`)
        out.append(ch)
        i += 1
    return "".join(out)


def _word_re(ident: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w$])" + re.escape(ident) + r"(?![\w$])")


def in_scope(path: str, scope: str) -> bool:
    return path.startswith(scope)


def label(
    memories: list[MemoryItem], tasks: list[Task]
) -> tuple[dict[str, list[MemoryItem]], dict[str, int]]:
    """Relevant memories per task commit, and the document frequency of every kept identifier.

    A rule is relevant when one of its identifiers is among the lines the task added to a file inside the
    rule's scope, outside a comment (`code_only`): the file and identifier conditions hold for the same file.
    """
    idents = {m.id: identifiers(m.text) for m in memories}
    # An identifier named by several rules (`BinaryContent` in four fixture bullets) singles out none of
    # them; the label check found most false positives came from such shared names.
    shared = Counter(i for ids in idents.values() for i in ids)
    idents = {mid: {i for i in ids if shared[i] <= MAX_RULES_PER_IDENTIFIER} for mid, ids in idents.items()}
    vocabulary = sorted(set().union(*idents.values())) if idents else []
    patterns = {ident: _word_re(ident) for ident in vocabulary}
    df: Counter[str] = Counter()
    present: dict[str, dict[str, set[str]]] = {}  # commit -> file -> identifiers in its added lines
    for task in tasks:
        by_file = {}
        anywhere: set[str] = set()
        for path, added in task.added.items():
            found = {ident for ident, pat in patterns.items() if ident in added and pat.search(added)}
            # How common a name is counts every mention, comments included (a name in many comments is still
            # a common name); whether it makes this rule relevant counts code only.
            anywhere |= found
            code = code_only(path, added)
            by_file[path] = {ident for ident in found if patterns[ident].search(code)}
        present[task.commit] = by_file
        df.update(anywhere)
    limit = MAX_IDENTIFIER_DF * len(tasks)
    common = {ident for ident, count in df.items() if count > limit}
    relevant: dict[str, list[MemoryItem]] = {}
    for task in tasks:
        by_file = present[task.commit]
        relevant[task.commit] = [
            m
            for m in memories
            if any(
                in_scope(path, m.scope) and (hits & idents[m.id]) - common for path, hits in by_file.items()
            )
        ]
    return relevant, {ident: df[ident] for ident in vocabulary if ident not in common}


def labels_document(
    spec: RepoSpec, tasks: list[Task], relevant: dict[str, list[MemoryItem]]
) -> dict[str, object]:
    return {
        "repo": spec.name,
        "github": spec.github,
        "c1": spec.c1,
        "c2": spec.c2,
        "end": spec.end,
        "tasks": [
            {
                "commit": t.commit,
                "split": t.split,
                "relevant": [[m.path, m.line, m.id] for m in relevant[t.commit]],
            }
            for t in tasks
        ],
    }


def dump_labels(doc: dict[str, object]) -> str:
    """Labels as JSON with one task per line, so a diff of two freezes reads task by task."""
    head = {k: v for k, v in doc.items() if k != "tasks"}
    lines = [json.dumps(t, separators=(",", ":")) for t in doc["tasks"]]  # type: ignore[attr-defined]
    body = ",\n  ".join(lines)
    return json.dumps(head, indent=1)[:-2] + ',\n "tasks": [\n  ' + body + "\n ]\n}\n"


def compare_labels(frozen: dict[str, object], rebuilt: dict[str, object]) -> list[str]:
    """Human-readable differences between frozen and rebuilt labels (empty when they match)."""
    diffs = []
    for key in ("repo", "c1", "c2", "end"):
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
        if a["split"] != b["split"]:
            diffs.append(f"task {sha[:10]}: split {a['split']} -> {b['split']}")
        ra = {tuple(r) for r in a["relevant"]}
        rb = {tuple(r) for r in b["relevant"]}
        for path, line, h in sorted(ra - rb):
            diffs.append(f"task {sha[:10]}: lost relevant rule {path}:{line} ({h})")
        for path, line, h in sorted(rb - ra):
            diffs.append(f"task {sha[:10]}: gained relevant rule {path}:{line} ({h})")
    return diffs


def build(spec: RepoSpec, mirrors: Path, freeze: bool) -> bool:
    gdir = git_dir(spec, mirrors)
    for sha in (spec.c1, spec.c2, spec.end):
        git(gdir, "cat-file", "-e", f"{sha}^{{commit}}")
    memories, sizes = build_memories(gdir, spec.c1)
    tasks, skipped = build_tasks(gdir, spec)
    relevant, df = label(memories, tasks)
    corpus = Corpus(spec.name, spec.github, spec.c1, spec.c2, str(gdir), memories, tasks, sizes)
    path = save_corpus(corpus)
    doc = labels_document(spec, tasks, relevant)
    _report(spec, corpus, relevant, skipped, df, path)
    target = labels_path(spec.name)
    if freeze:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_labels(doc), encoding="utf-8")
        print(f"  froze labels -> {target}")
        return True
    if not target.exists():
        print(f"  no frozen labels at {target}: run with --freeze once, before any tuning")
        return False
    diffs = compare_labels(json.loads(target.read_text(encoding="utf-8")), doc)
    if diffs:
        print(f"  REBUILT CORPUS DIFFERS from {target} ({len(diffs)} differences):")
        for d in diffs[:40]:
            print(f"    {d}")
        if len(diffs) > 40:
            print(f"    ... and {len(diffs) - 40} more")
        return False
    print(f"  labels match {target.name}")
    return True


def _report(
    spec: RepoSpec,
    corpus: Corpus,
    relevant: dict[str, list[MemoryItem]],
    skipped: Counter[str],
    df: dict[str, int],
    path: Path,
) -> None:
    print(f"{spec.name} ({spec.github}, {spec.language}) C1={spec.c1[:10]} C2={spec.c2[:10]} -> {path}")
    print(f"  rule files at C1: {len(corpus.rule_files)}, rule units (memories): {len(corpus.memories)}")
    print(f"  skipped commits: {dict(skipped)}; labelled identifiers: {len(df)}")
    for split in ("dev", "test"):
        tasks = [t for t in corpus.tasks if t.split == split]
        pos = [len(relevant[t.commit]) for t in tasks]
        with_pos = [p for p in pos if p]
        mean = sum(with_pos) / len(with_pos) if with_pos else 0.0
        print(
            f"  {split}: {len(tasks)} tasks, {len(with_pos)} with >=1 relevant rule, "
            f"{sum(pos)} positives, {mean:.2f} per task that has any"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", action="append", help="repository short name (default: all)")
    parser.add_argument(
        "--mirrors", help="directory holding the fetched mirrors (default: $TETHER_QUALITY_MIRRORS)"
    )
    parser.add_argument("--freeze", action="store_true", help="write labels/<repo>.json (before tuning only)")
    args = parser.parse_args(argv)
    specs = [repo_spec(n) for n in args.repo] if args.repo else list(REPOS)
    ok = all([build(spec, mirror_root(args.mirrors), args.freeze) for spec in specs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
