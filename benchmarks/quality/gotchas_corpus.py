"""The file-tied (gotcha) corpus: repositories, what a memory, a task and an edit are, and line geometry.

Memories are the warning-style code comments of a repository at C1 (`gotchas_comments`), each tied to its
file and line. Tasks are later commits; the labels say which comments sit next to the lines a commit
changed. `data/gotchas/<repo>/corpus.json` holds repository text and is git-ignored; only
`labels/gotchas/<repo>.json` (commit ids, paths, line numbers, hashes) is committed. GOTCHAS.md has the
rules and the reasons.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from corpus import DATA_DIR, LABELS_DIR, REPOS, Corpus, RepoSpec
from gotchas_comments import Gotcha

# pydantic-ai is kept out of the pooled evaluation: its history was reserved for an independent check, run once
# (session 17, `INDEPENDENT`). prefect joined the rule evaluation only (session 13): this one keeps the five its
# labels were frozen on.
EXCLUDED = frozenset({"pydantic-ai", "prefect"})

TAILSCALE = RepoSpec(
    name="tailscale",
    github="tailscale/tailscale",
    language="Go",
    c1="4334dfa7d5ccbee1daf5acf30b33557bbca66525",  # 2026-03-31, the last main-line commit of March
    c2="6ab5d91071d2d6bf7739d90f1de96cca2b81653d",  # 2026-06-10, half of the 820 later commits
    end="de9ec7ee25627e0e518f53c710a3fc3d947c86c1",  # 2026-08-22, the mirror's newest commit
)
GOTCHA_REPOS: tuple[RepoSpec, ...] = (*(s for s in REPOS if s.name not in EXCLUDED), TAILSCALE)
# Never tuned on, in either window, and never in the pool: scored only when named (`--repo pydantic-ai`),
# both windows at once (`--window all`), with the rule evaluation's cut-offs.
INDEPENDENT: tuple[RepoSpec, ...] = tuple(s for s in REPOS if s.name == "pydantic-ai")

GOTCHA_DATA = DATA_DIR / "gotchas"
GOTCHA_LABELS = LABELS_DIR / "gotchas"

MODES = ("prompt", "prompt+files", "edit")


def gotcha_spec(name: str) -> RepoSpec:
    for spec in (*GOTCHA_REPOS, *INDEPENDENT):
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in (*GOTCHA_REPOS, *INDEPENDENT))
    raise SystemExit(f"unknown repository {name!r} for the gotcha evaluation; known: {known}")


@dataclass(frozen=True)
class Hunk:
    """One change as an agent's `Edit(old_string, new_string)` would carry it, in pre-image coordinates.

    `start`, `count` are git's: the changed lines are `start .. start + count - 1` of the file before the
    commit; `count == 0` is an insertion after line `start` (0: at the top). For an insertion
    `old_string` is the line it follows (or precedes, at the top), as an Edit needs a non-empty anchor.
    """

    path: str
    start: int
    count: int
    old_string: str
    new_string: str

    @property
    def lines(self) -> tuple[int, int]:
        """The pre-image lines the edit covers (for an insertion, the two lines around it)."""
        if self.count == 0:
            return (self.start, self.start + 1)
        return (self.start, self.start + self.count - 1)


@dataclass(frozen=True)
class GotchaTask:
    """A later commit by a person. Only `query`, `files` and (edit mode) `first` and `drift` reach a system.

    runs: every changed run of a modified file, as (start, count) in pre-image lines: labelling only.
    first: the first changed run of each modified source file, as a `Hunk`.
    drift: for each modified file with memories, how its lines moved from C1 to the commit's parent, as git
      hunks (old start, old count, new start, new count): what a system could compute from the working tree.
    status: "A", "M" or "D" per touched path.
    """

    commit: str
    parent: str
    split: str  # "dev" or "test"
    query: str
    files: tuple[str, ...]
    status: dict[str, str]
    runs: dict[str, list[tuple[int, int]]]
    first: dict[str, Hunk]
    drift: dict[str, list[tuple[int, int, int, int]]]


@dataclass(frozen=True)
class GotchaView:
    """What a system sees of a task. prompt: the query; prompt+files: and the files; edit: and the hunks."""

    query: str
    files: tuple[str, ...] = ()
    hunks: tuple[Hunk, ...] = ()
    drift: dict[str, list[tuple[int, int, int, int]]] = field(default_factory=dict)
    # prompt+files and edit: the commit the work is done on. A system may read the touched files as they are
    # there and the history up to it (the agent's checkout while it works; the hunks are in its lines), never
    # the commit itself.
    parent: str = ""


def view_of(task: GotchaTask, mode: str) -> GotchaView:
    if mode == "prompt":
        return GotchaView(task.query)
    if mode == "prompt+files":
        return GotchaView(task.query, task.files, parent=task.parent)
    hunks = tuple(task.first[p] for p in task.files if p in task.first)
    return GotchaView(task.query, task.files, hunks, dict(task.drift), task.parent)


@dataclass
class GotchaCorpus:
    repo: str
    github: str
    c1: str
    c2: str
    end: str
    git_dir: str
    memories: list[Gotcha]
    tasks: list[GotchaTask]
    skipped: dict[str, int] = field(default_factory=dict)

    def checkout_at_c1(self, dest: Path) -> Path:
        """The repository at C1 with no later history reachable (`corpus.Corpus.checkout_at_c1`)."""
        return Corpus(self.repo, self.github, self.c1, self.c2, self.git_dir, [], [], {}).checkout_at_c1(dest)

    def blob(self, rev: str, path: str) -> bytes | None:
        """The file `path` as it is at `rev`; None where git has none."""
        done = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "show", f"{rev}:{path}"], capture_output=True, check=False
        )
        return done.stdout if done.returncode == 0 else None

    def by_file(self) -> dict[str, list[Gotcha]]:
        out: dict[str, list[Gotcha]] = {}
        for m in self.memories:
            out.setdefault(m.path, []).append(m)
        return out


def corpus_file(repo: str) -> Path:
    return GOTCHA_DATA / repo / "corpus.json"


def labels_file(repo: str) -> Path:
    return GOTCHA_LABELS / f"{repo}.json"


def save(corpus: GotchaCorpus) -> Path:
    path = corpus_file(corpus.repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(corpus)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def load(repo: str) -> GotchaCorpus:
    data = json.loads(corpus_file(repo).read_text(encoding="utf-8"))
    tasks = []
    for t in data["tasks"]:
        tasks.append(
            GotchaTask(
                commit=t["commit"],
                parent=t["parent"],
                split=t["split"],
                query=t["query"],
                files=tuple(t["files"]),
                status=t["status"],
                runs={p: [tuple(r) for r in rs] for p, rs in t["runs"].items()},  # type: ignore[misc]
                first={p: Hunk(**h) for p, h in t["first"].items()},
                drift={p: [tuple(d) for d in ds] for p, ds in t["drift"].items()},  # type: ignore[misc]
            )
        )
    return GotchaCorpus(
        repo=data["repo"],
        github=data["github"],
        c1=data["c1"],
        c2=data["c2"],
        end=data["end"],
        git_dir=data["git_dir"],
        memories=[Gotcha(**m) for m in data["memories"]],
        tasks=tasks,
        skipped=data.get("skipped", {}),
    )


# --- line geometry ------------------------------------------------------------------------------------


def distance(lines: tuple[int, int], start: int, count: int) -> int:
    """Lines between a comment (first, last line) and a change (git's start, count), 0 when they overlap.

    A change on the line right after the comment is 1 away. An insertion after line `start` sits between
    `start` and `start + 1`: a comment ending on `start` (or beginning on `start + 1`) is 1 away, and an
    insertion inside the comment is 0 (it edits the comment).

    >>> distance((10, 12), 14, 1), distance((10, 12), 11, 0), distance((10, 12), 12, 0)
    (2, 0, 1)
    """
    first, last = lines
    if count == 0:
        if last <= start:
            return start + 1 - last
        if first >= start + 1:
            return first - start
        return 0
    end = start + count - 1
    return max(0, first - end, start - last)


def below(lines: tuple[int, int], start: int, count: int) -> int | None:
    """Lines from a comment down to a change: 0 when the change touches the comment, None when it lies
    wholly above the comment (a comment is about what follows it, or, after code, about its own line).

    >>> below((10, 12), 14, 1), below((10, 12), 12, 0), below((10, 12), 8, 2), below((10, 12), 9, 0)
    (2, 1, None, None)
    """
    first, last = lines
    if count == 0:
        if start >= last:
            return start + 1 - last
        return 0 if start >= first else None
    if start + count - 1 < first:
        return None
    return 0 if start <= last else start - last


def follow(lines: tuple[int, int], drift: Sequence[tuple[int, int, int, int]]) -> tuple[int, int] | None:
    """Where a C1 line range is in a later version of the file, given the C1 -> later git hunks.

    None when a hunk changed a line of the range (the comment was edited or deleted in between: its C1
    text is no longer there).

    >>> follow((10, 12), [(2, 1, 2, 3)]), follow((10, 12), [(11, 1, 11, 1)]), follow((10, 12), [(20, 0, 21, 2)])
    ((12, 14), None, (10, 12))
    """
    first, last = lines
    shift = 0
    for old_start, old_count, _new_start, new_count in drift:
        if old_count == 0:
            if old_start < first:
                shift += new_count
            elif old_start < last:
                return None  # an insertion inside the comment
        else:
            old_end = old_start + old_count - 1
            if old_end < first:
                shift += new_count - old_count
            elif old_start <= last:
                return None
    return (first + shift, last + shift)
