"""The recall-quality corpus: which repositories, what a memory and a task are, and how to read them back.

The corpus is derived data (`benchmarks/quality/data/<repo>/corpus.json`, git-ignored) built from a
fetched bare git directory by `build.py`. Only the frozen labels (`labels/<repo>.json`) are committed; they
hold commit ids, rule-file paths, line numbers and hashes, never repository text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"
LABELS_DIR = HERE / "labels"
DEFAULT_MIRRORS = Path("/work/.mirror")
MIRRORS_ENV = "TETHER_QUALITY_MIRRORS"


@dataclass(frozen=True)
class RepoSpec:
    """One evaluation repository with its two cut-offs, pinned by commit id so every rebuild is identical.

    c1: the memory snapshot (rule files as they were) and the end of the history a retriever may see.
    c2: commits in (c1, c2] are the dev window (tuning); commits in (c2, end] the test window (reporting).
    end: the newest commit considered, so later fetches of the mirror do not change the task set.
    """

    name: str  # short name used for data/ and labels/
    github: str  # owner/name
    language: str
    c1: str
    c2: str
    end: str

    @property
    def mirror_dir(self) -> str:
        return self.github.replace("/", "+")


# Chosen for nested rule files (several directories each) and a busy history after C1; see README.md.
REPOS = (
    RepoSpec(
        name="pydantic-ai",
        github="pydantic/pydantic-ai",
        language="Python",
        c1="9871f756992fdab68fa0b103022a494a5aaf0ebf",  # 2026-05-21, after the per-package AGENTS.md landed
        c2="8432869b2cd59f9f09aaa6fd8ed1c162b015638e",  # 2026-07-09
        end="4fda38988f2939fa6ea9cdefcf120693e10ef491",
    ),
    RepoSpec(
        name="langfuse",
        github="langfuse/langfuse",
        language="TypeScript",
        c1="c401fe0e63641782004518b2d7c7e20bdcf149bf",  # 2026-03-25: nested AGENTS.md plus .cursor/rules
        c2="e281df4a611b3846b992089664c61e94bfe18a23",  # 2026-06-24
        end="62751446149b702b419a9292ddfc2280cdf74b8c",
    ),
    RepoSpec(
        name="gemini-cli",
        github="google-gemini/gemini-cli",
        language="TypeScript",
        c1="81a97e78f1f371fbf4ea63f480aeaa12a74e3068",  # 2026-03-17, after per-package GEMINI.md landed
        c2="8573650253888a252500856e240385ff8a2553c8",  # 2026-04-19
        end="5411f113cafae26161b4969b0237b8e1e024e2c2",
    ),
    RepoSpec(
        name="tensorzero",
        github="tensorzero/tensorzero",
        language="Rust",
        # 2026-03-08: the commit that moved the crates (and their nested AGENTS.md) under crates/; nested
        # files existed from January, but a move changes every scope, so C1 is after it.
        c1="7f11949783365834dad37f60d8fb70415c03083e",
        c2="e28740256d92306d3f62d484dbf2aab1761a7281",  # 2026-03-25, half of the 343 later commits
        end="7a6159a4348ff015373d7926f74ac589ca59a0d9",  # 2026-04-24, the mirror's newest commit
    ),
    RepoSpec(
        name="gitbutler",
        github="gitbutlerapp/gitbutler",
        language="Rust",
        # 2026-05-08: the merge that brought crates/but/AGENTS.md, the last of the nested files, into main.
        c1="0e08cb3e144c625a18eed7bbeb704c2dfcd88804",
        c2="fb562611a60a25dd7adafe8e566c4d921d7f4e66",  # 2026-05-21, half of the commits up to `end`
        # 2026-06-03: about 1,000 commits a month land here, so the history stops after 859 later commits,
        # windows the size of the other repositories', instead of at the mirror's newest (August).
        end="2b9c608c77e128a7dc03ac634cfeafd1c29c128d",
    ),
    RepoSpec(
        name="prefect",
        github="PrefectHQ/prefect",
        language="Python",
        # 2026-04-21: integration-tests/AGENTS.md, the last of the burst (March-April) that put AGENTS.md in
        # 39 directories (the package's subpackages, its utilities, tests, ui-v2's src/*); the two added
        # later (two integration packages, April 30 and May 18) are not at C1, so they are no memories.
        # Added in session 13 for a larger rule set (prompt-only's intervals); not tuned on before its
        # labels were frozen.
        c1="093cd05d7fae5c8f8bc2f93f5fae8bbdb2eb97dd",
        c2="e6ad0cafdb0f9107898c569ea2ec0ebd2eaf52bf",  # 2026-06-12, half of the 708 later commits
        end="ce79dd3d6cfa2b7337265498210dbc4d25bcdc98",  # 2026-08-21, the mirror's newest commit
    ),
)


def repo_spec(name: str) -> RepoSpec:
    for spec in REPOS:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in REPOS)
    raise SystemExit(f"unknown repository {name!r}; known: {known}")


def mirror_root(arg: str | None = None) -> Path:
    return Path(arg or os.environ.get(MIRRORS_ENV) or DEFAULT_MIRRORS)


def git_dir(spec: RepoSpec, root: Path) -> Path:
    """The bare git directory of a fetched mirror, or exit with a message saying how to get one."""
    candidates = [root / spec.mirror_dir / "repo", root / spec.mirror_dir, root / f"{spec.name}.git"]
    for path in candidates:
        if (path / "HEAD").is_file() and (path / "objects").is_dir():
            return path
    sys.exit(
        f"no git mirror of {spec.github} under {root} (looked for {candidates[0]}).\n"
        f"Put a bare clone of {spec.github} there (`git clone --bare <url> {candidates[0]}`), "
        f"or point ${MIRRORS_ENV} / --mirrors at the directory holding it."
    )


def git(gdir: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", f"--git-dir={gdir}", *args], capture_output=True, check=False, text=True, errors="replace"
    )
    if result.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed in {gdir}: {result.stderr.strip()}")
    return result.stdout


def git_bytes(gdir: Path, *args: str) -> bytes:
    result = subprocess.run(["git", f"--git-dir={gdir}", *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise SystemExit(
            f"git {' '.join(args[:3])} failed in {gdir}: {result.stderr.decode(errors='replace')}"
        )
    return result.stdout


@dataclass(frozen=True)
class MemoryItem:
    """One rule unit at C1, as a memory. `id` is the unit hash that the frozen labels refer to."""

    id: str
    path: str
    line: int
    end_line: int
    text: str
    heading: str
    scope: str
    globs: tuple[str, ...]
    summary: str  # the one line that would be injected (DESIGN §5: one-line summaries, ≤ 160 chars)


@dataclass(frozen=True)
class Task:
    """A later commit by a person, seen as a task: the query is what the agent would be asked."""

    commit: str
    split: str  # "dev" or "test"
    query: str
    files: tuple[str, ...]
    added: dict[str, str]  # file -> its added lines, for labelling only: never shown to a retriever


@dataclass(frozen=True)
class TaskView:
    """What a retriever sees of a task. In "prompt" mode `files` is empty."""

    query: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class Doc:
    """One memory as every system sees it: the text the product made for one or more rule units.

    `id` is the unit hash of its first unit (the id space of the frozen labels); `units` are all the units
    it stands for (the product keeps one memory for the same rule written twice in one section). Systems
    rank docs; a label naming any of a doc's units is a label on the doc.
    """

    id: str
    units: tuple[str, ...]
    summary: str  # the one line that is injected
    details: str
    refs: tuple[str, ...]  # the memory's file references ("dir/" for a directory); () applies everywhere
    path: str  # the rule file it came from
    line: int  # first line of its first unit
    memory_id: str = ""  # the product's memory id ("" when built without the product)

    @property
    def text(self) -> str:
        return f"{self.summary}\n{self.details}".strip()

    def covers(self, path: str) -> bool:
        """Whether the memory applies to a touched file: a ref names it or a directory above it."""
        return not self.refs or any(path == r or (r.endswith("/") and path.startswith(r)) for r in self.refs)


@dataclass
class Corpus:
    repo: str
    github: str
    c1: str
    c2: str
    git_dir: str  # the mirror the corpus was built from
    memories: list[MemoryItem]
    tasks: list[Task]
    rule_files: dict[str, int]  # rule file path -> its size in characters at C1 (for native loading)
    # The memories the product made of the rule units (`product.attach`), in rule-file order; until then
    # `docs_of` derives one per unit from the corpus text.
    docs: list[Doc] = field(default_factory=list)

    def checkout_at_c1(self, dest: Path) -> Path:
        """Materialize the repository at C1 in `dest` with only history up to C1 reachable.

        A retriever builds its repo map and co-change from this checkout; commits after C1 are the tasks
        and must stay invisible, so every ref but the C1 branch is deleted from the shared clone.
        """
        run = {"check": True, "capture_output": True}
        subprocess.run(
            ["git", "clone", "--quiet", "--shared", "--no-checkout", self.git_dir, str(dest)], **run
        )
        refs = subprocess.run(
            ["git", "-C", str(dest), "for-each-ref", "--format=%(refname)"], text=True, **run
        ).stdout.split()
        subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", self.c1], **run)
        for ref in refs:
            subprocess.run(["git", "-C", str(dest), "update-ref", "-d", ref], **run)
        subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "-B", "c1"], **run)
        subprocess.run(["git", "-C", str(dest), "remote", "remove", "origin"], **run)
        return dest


def corpus_path(repo: str) -> Path:
    return DATA_DIR / repo / "corpus.json"


def save_corpus(corpus: Corpus) -> Path:
    path = corpus_path(corpus.repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "repo": corpus.repo,
        "github": corpus.github,
        "c1": corpus.c1,
        "c2": corpus.c2,
        "git_dir": corpus.git_dir,
        "rule_files": corpus.rule_files,
        "memories": [m.__dict__ | {"globs": list(m.globs)} for m in corpus.memories],
        "tasks": [t.__dict__ | {"files": list(t.files)} for t in corpus.tasks],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def load_corpus(repo: str) -> Corpus:
    data = json.loads(corpus_path(repo).read_text(encoding="utf-8"))
    return Corpus(
        repo=data["repo"],
        github=data["github"],
        c1=data["c1"],
        c2=data["c2"],
        git_dir=data["git_dir"],
        rule_files=data["rule_files"],
        memories=[MemoryItem(**(m | {"globs": tuple(m["globs"])})) for m in data["memories"]],
        tasks=[Task(**(t | {"files": tuple(t["files"])})) for t in data["tasks"]],
    )


def labels_path(repo: str) -> Path:
    return LABELS_DIR / f"{repo}.json"


def docs_of(corpus: Corpus) -> list[Doc]:
    """The product's memories when attached, else one doc per rule unit (summary and text from the corpus)."""
    if corpus.docs:
        return corpus.docs
    return [
        Doc(m.id, (m.id,), m.summary, m.text, (m.scope,) if m.scope else (), m.path, m.line)
        for m in corpus.memories
    ]


def commit_times(gdir: Path, commits: list[str]) -> dict[str, int]:
    """Committer time (unix seconds) of each commit, from the mirror."""
    out: dict[str, int] = {}
    for start in range(0, len(commits), 500):
        chunk = commits[start : start + 500]
        text = git(gdir, "show", "-s", "--format=%H %ct", *chunk)
        for row in text.splitlines():
            sha, _, when = row.partition(" ")
            if when:
                out[sha] = int(when)
    return out


def unit_times(corpus: Corpus) -> dict[str, int]:
    """When each rule unit last changed before C1: the newest commit time among its lines (`git blame`).

    Cached in `data/<repo>/unit_times.json` (derived data, like the corpus). Used by the recent-3 baseline.
    """
    cache = DATA_DIR / corpus.repo / "unit_times.json"
    if cache.exists():
        cached = json.loads(cache.read_text(encoding="utf-8"))
        if cached.get("c1") == corpus.c1:
            return dict(cached["times"])
    gdir = Path(corpus.git_dir)
    by_path: dict[str, list[MemoryItem]] = {}
    for m in corpus.memories:
        by_path.setdefault(m.path, []).append(m)
    times: dict[str, int] = {}
    for path, items in by_path.items():
        line_time = _blame_times(gdir, corpus.c1, path)
        for m in items:
            times[m.id] = max((line_time.get(n, 0) for n in range(m.line, m.end_line + 1)), default=0)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"c1": corpus.c1, "times": times}), encoding="utf-8")
    return times


def _blame_times(gdir: Path, rev: str, path: str) -> dict[int, int]:
    """Line number (1-based, in `rev`) -> committer time of the commit that last changed that line."""
    text = git(gdir, "blame", "--porcelain", rev, "--", path)
    when: dict[str, int] = {}
    out: dict[int, int] = {}
    current = ""
    final = 0
    for row in text.splitlines():
        if row.startswith("\t"):
            out[final] = when.get(current, 0)
            continue
        parts = row.split(" ")
        if len(parts) >= 3 and len(parts[0]) == 40 and parts[1].isdigit() and parts[2].isdigit():
            current, final = parts[0], int(parts[2])
        elif parts[0] == "committer-time" and len(parts) == 2:
            when[current] = int(parts[1])
    return out
