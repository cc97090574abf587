"""A generated repository with a realistic history, for the repo map's benchmark and its large tests.

    generate(Path("/tmp/big"), commits=20_000, files=3_000)   # ~20 s with `git fast-import`

The shape follows what a real project's history looks like to the repo map: a few thousand source files
(Python mostly, some TypeScript, some markdown) of a few kilobytes each, with import lines naming other
files of the repository (so fan-in has something to count); 1-6 files per commit, mostly drawn from
correlated groups (what co-change should find), files added as the project grows, a rename every few
hundred commits, a deletion now and then, and sweeping commits (50+ files) that co-change must skip.

Contents: each file has three versions (blobs written once, then cycled), so a modification is a real
content change without writing a new blob per commit: `git log` sees the same trees as with fresh blobs,
and the stream stays small enough to import in seconds.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
}
VERSIONS = 3
_WORDS = "parse render cache index query token session record anchor budget merge stream batch".split()


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, input=stdin, capture_output=True, check=True
    ).stdout


def _module(path: str) -> str:
    return path[: -len(".py")].replace("/", ".")


def _content(path: str, version: int, others: list[str], rng: random.Random) -> bytes:
    """A file of a few kilobytes: a docstring, import lines of other repository files, then code."""
    lines: list[str] = []
    if path.endswith(".py"):
        lines.append(f'"""{path}: {" ".join(rng.sample(_WORDS, 5))}."""')
        lines.append("from __future__ import annotations")
        lines.append("import os")
        for other in others:
            if other.endswith(".py"):
                mod = _module(other)
                if rng.random() < 0.5:
                    pkg, _, name = mod.rpartition(".")
                    lines.append(f"from {pkg} import {name}" if pkg else f"import {name}")
                else:
                    lines.append(f"import {mod}")
        for f in range(rng.randint(6, 30)):
            word = rng.choice(_WORDS)
            lines += [
                "",
                "",
                f"def {word}_{f}_{version}(value: int) -> int:",
                f'    """{word.title()} the value ({version})."""',
                f"    return value * {rng.randint(2, 99)} + {f}",
            ]
    elif path.endswith(".ts"):
        for other in others:
            if other.endswith(".ts"):
                rel = os.path.relpath(other[: -len(".ts")], os.path.dirname(path))
                rel = rel if rel.startswith(".") else "./" + rel
                lines.append(f'import {{ x{len(lines)} }} from "{rel}";')
        for f in range(rng.randint(6, 30)):
            lines.append(
                f"export function {rng.choice(_WORDS)}{f}v{version}(v: number) {{ return v * {f}; }}"
            )
    else:
        lines.append(f"# {path}")
        lines += [" ".join(rng.choices(_WORDS, k=12)) for _ in range(rng.randint(10, 60))]
    return ("\n".join(lines) + "\n").encode()


def generate(repo: Path, commits: int, files: int, seed: int = 7) -> dict[str, int]:
    """Make `repo` (a new directory) a git repository with `commits` non-merge commits on `main` and
    about `files` files at HEAD. Returns counts of what was generated."""
    rng = random.Random(seed)
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    n_dirs = max(4, files // 60)
    dirs = [f"pkg{d:03}" for d in range(n_dirs)]
    stream: list[bytes] = []
    mark = 0
    blobs: dict[str, list[int]] = {}  # path -> marks of its versions
    version: dict[str, int] = {}
    live: list[str] = []
    groups: list[list[str]] = []

    def new_path() -> str:
        d = rng.choice(dirs)
        roll = rng.random()
        ext = ".py" if roll < 0.75 else ".ts" if roll < 0.9 else ".md"
        return f"{d}/{rng.choice(_WORDS)}_{len(blobs):05}{ext}"

    def add_blobs(path: str) -> None:
        nonlocal mark
        others = rng.sample(live, min(len(live), rng.randint(2, 10)))
        blobs[path] = []
        for v in range(VERSIONS):
            mark += 1
            data = _content(path, v, others, rng)
            stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
            blobs[path].append(mark)
        version[path] = 0

    def modify(path: str) -> bytes:
        version[path] = (version[path] + 1) % VERSIONS
        return b"M 100644 :%d %s\n" % (blobs[path][version[path]], path.encode())

    start = max(50, files // 5)  # the first commit's files; the rest arrive as the project grows
    grow_every = max(1, commits // max(1, files - start))
    renames = deletes = sweeps = 0
    for n in range(commits):
        ops: list[bytes] = []
        if n == 0:
            for _ in range(start):
                path = new_path()
                add_blobs(path)
                live.append(path)
                ops.append(b"M 100644 :%d %s\n" % (blobs[path][0], path.encode()))
            groups = [rng.sample(live, rng.randint(2, 6)) for _ in range(len(live) // 3)]
        elif n % 1499 == 0:  # a sweep: reformatting, license headers
            sweeps += 1
            ops.extend(modify(p) for p in rng.sample(live, min(len(live), rng.randint(50, 200))))
        elif n % 311 == 0 and len(live) > 10:  # a rename the map must follow
            old = rng.choice(live)
            new = old.replace(".", f"_r{n}.", 1) if "." in old else old + f"_r{n}"
            blobs[new], version[new] = blobs.pop(old), version.pop(old)
            live[live.index(old)] = new
            for g in groups:
                if old in g:
                    g[g.index(old)] = new
            ops.append(b"R %s %s\n" % (old.encode(), new.encode()))
            renames += 1
        elif n % 677 == 0 and len(live) > 10:  # a file deleted
            gone = rng.choice(live)
            live.remove(gone)
            for g in groups:
                if gone in g:
                    g.remove(gone)
            ops.append(b"D %s\n" % gone.encode())
            deletes += 1
        else:
            if n % grow_every == 0 and len(blobs) < files:
                path = new_path()
                add_blobs(path)
                live.append(path)
                ops.append(b"M 100644 :%d %s\n" % (blobs[path][0], path.encode()))
                if rng.random() < 0.5:
                    groups.append([path, *rng.sample(live, min(len(live), rng.randint(1, 4)))])
            groups = [g for g in groups if len(g) >= 2] or [rng.sample(live, 2)]
            if rng.random() < 0.7:
                group = rng.choice(groups)
                touched = rng.sample(group, rng.randint(min(2, len(group)), len(group)))
            else:
                touched = rng.sample(live, rng.randint(1, 3))
            ops.extend(modify(p) for p in touched if p in version)
        msg = b"commit %d" % n
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer bench <b@b> %d +0000\n" % (1_600_000_000 + n * 60))
        stream.append(b"data %d\n%s\n" % (len(msg), msg))
        stream.extend(ops)
        stream.append(b"\n")
    git(repo, "fast-import", "--quiet", stdin=b"".join(stream))
    git(repo, "checkout", "-q", "-f", "main")
    return {"commits": commits, "files": len(live), "renames": renames, "deletes": deletes, "sweeps": sweeps}


def cached(directory: Path, commits: int, files: int, seed: int = 7) -> Path:
    """The repository for these parameters under `directory`, generated on first use and kept.

    A work tree that is no longer clean (a benchmark added commits to it) is reset to what was generated."""
    repo = directory / f"bigrepo-{commits}-{files}-{seed}"
    done = repo / ".git" / "tether-generated"
    if done.exists():
        head = done.read_text().strip()
        git(repo, "reset", "-q", "--hard", head)
        git(repo, "clean", "-q", "-fdx")
        return repo
    if repo.exists():
        import shutil

        shutil.rmtree(repo)
    generate(repo, commits, files, seed)
    done.write_text(git(repo, "rev-parse", "HEAD").decode())
    return repo
