"""Fan-in: how many files import a file (DESIGN §3, the blast radius), counted from scratch or brought up
to date from the last count.

`fan_in(files, specs)` resolves every spec of every file. After a pull, most files neither changed their
imports nor can resolve differently, so `FanInChange.between` re-resolves only the importers a change can
move: the files whose specs changed (those added or removed included) and, when files were added or
removed, the files holding a spec that could name one of them (tested once per distinct spec, from the
module names and last path components of what moved). Each of those is resolved against the old file set
and the new one, and the difference is added to the old counts: `applied(old)` is exactly what `fan_in`
counts anew.
A Go import names a package (a directory), whose count every non-test `.go` file of it carries: a package's
count moves by its importers' delta, and is written to its members as they are after the change (those
added included). A directory that gains its first member or loses its last changes what the import paths
naming it resolve to: their holders are re-resolved too.
A change that moves resolution far from it (an `__init__.py` added or removed over files that stay: their
module names change; a `go.mod` added, removed or naming another module; a Rust crate root added or
removed) has no `FanInChange`: count from scratch. So has one that moves a Go package's count while a JS
import names a `.go` file by its path (that file's count is its own where its package has none, which a
stored count does not tell). A new package (its `__init__.py` with its files) is brought up to date like
any other file.

    >>> files = {"a.py", "b.py", "c.py"}
    >>> old = {"a.py": ("b",), "b.py": (), "c.py": ()}
    >>> new = {**old, "a.py": ("c",)}
    >>> FanInChange.between(files, old, files, new, {"a.py"}).applied(fan_in(files, old))
    {'c.py': 1}
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from tether.repo.imports import JS_EXTS, language_of
from tether.repo.resolve import Resolver, package_dirs, python_names

# Names whose arrival or departure moves resolution far from them: a Rust crate root, a Go module. An
# `__init__.py` does when files stay under it.
_STRUCTURAL = frozenset({"lib.rs", "main.rs", "go.mod"})


def fan_in(files: Collection[str], specs: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """For every file that at least one other file imports: the number of distinct importers."""
    resolver = Resolver(files, specs)
    importers: dict[str, set[str]] = defaultdict(set)
    for path, file_specs in specs.items():
        if path not in resolver.files:
            continue
        for target in resolver.targets(path, file_specs):
            if target != path:
                importers[target].add(path)
    counts = {target: len(who) for target, who in importers.items()}
    for pkg_dir, members in resolver.go_packages.items():
        n = len(importers.get(pkg_dir + "/", ()))
        if n:
            counts.pop(pkg_dir + "/", None)
            for member in members:
                counts[member] = n
    counts.pop("/", None)
    return counts


@dataclass(frozen=True)
class FanInChange:
    """How the counts of `fan_in` move from one (files, specs) to the next (see the module's docstring)."""

    files: frozenset[str]  # the new file set
    # target (a Go package as "dir/") -> importers gained minus importers lost (never 0)
    delta: dict[str, int]
    # Go package directory -> (one of its members before the change, which carries its count then, or None;
    # its members after it): the packages whose count or members moved.
    packages: dict[str, tuple[str | None, tuple[str, ...]]] = field(default_factory=dict)

    @classmethod
    def between(
        cls,
        old_files: Collection[str],
        old_specs: Mapping[str, Sequence[str]],
        files: Collection[str],
        specs: Mapping[str, Sequence[str]],
        changed: Collection[str],
    ) -> FanInChange | None:
        """The change from counting (`old_files`, `old_specs`) to counting (`files`, `specs`), where
        `changed` holds at least every path whose specs differ between the two. None when the change
        reaches further than its importers can tell (then count with `fan_in`)."""
        before, after = frozenset(old_files), frozenset(files)
        added, removed = after - before, before - after
        moved = added | removed
        if any(_structural(p) for p in moved) or any(language_of(p) == "gomod" for p in changed):
            return None
        if not changed and not moved:
            return cls(after, {})
        names = _Names(before, after, added, removed)
        if names.reach_kept():
            return None
        new = Resolver(after, specs)
        go = _GoMoves(new, added, removed)
        every = set().union(*specs.values()) if moved else set()  # the distinct specs
        exposed = _exposed(moved, every, names) | go.exposed(every) if moved else set()
        importers = set(changed) | {
            p for p, file_specs in specs.items() if not exposed.isdisjoint(file_specs)
        }
        targets = {p: new.targets(p, specs[p]) for p in importers if p in after and p in specs}
        old = new  # the same file set: the same resolution
        if moved:
            # An absolute spec no moved file can answer resolves as it does in the new file set.
            known = {spec: t for spec, t in new.absolute_specs().items() if spec not in exposed}
            known_go = {spec: t for spec, t in new.go_paths().items() if spec not in exposed}
            index = _index_before(new.py_modules, added, removed, names)
            old = Resolver(before, old_specs, index, known, known_go, go.packages_before())
        delta: dict[str, int] = defaultdict(int)
        for path in importers:
            was = old.targets(path, old_specs[path]) if path in before and path in old_specs else set()
            now = targets.get(path, set())
            was.discard(path)
            now.discard(path)
            if any(t.endswith(".go") for t in was ^ now):
                return None  # a `.go` file imported by its path (JS): see the module's docstring
            for target in now - was:
                delta[target] += 1
            for target in was - now:
                delta[target] -= 1
        delta = {target: d for target, d in delta.items() if d}
        touched = go.members_moved | {t[:-1] for t in delta if t.endswith("/")}
        if touched and _names_go_file(specs):
            return None
        return cls(after, delta, {pkg: (go.member_before(pkg), go.members(pkg)) for pkg in touched})

    def applied(self, old_counts: Mapping[str, int]) -> dict[str, int]:
        """`old_counts` (what `fan_in` gave for the old files and specs) moved by this change."""
        counts = {path: n for path, n in old_counts.items() if n and path in self.files}
        for target, d in self.delta.items():
            if target not in self.files:
                continue  # removed: its importers are gone with it
            n = counts.get(target, 0) + d
            if n:
                counts[target] = n
            else:
                del counts[target]
        for pkg, (member_before, members) in self.packages.items():
            n = old_counts.get(member_before, 0) if member_before is not None else 0
            n += self.delta.get(pkg + "/", 0)
            for member in members:
                if n:
                    counts[member] = n
                else:
                    counts.pop(member, None)
        return counts


def _structural(path: str) -> bool:
    return path.rpartition("/")[2] in _STRUCTURAL or path == "__init__.py"


class _GoMoves:
    """The Go packages whose members came or went, from the new file set's `Resolver` and what moved."""

    def __init__(self, new: Resolver, added: frozenset[str], removed: frozenset[str]) -> None:
        self.new, self.added = new, added
        self.removed: dict[str, list[str]] = defaultdict(list)  # package -> its members removed
        for path in removed:
            if _go_member(path):
                self.removed[path.rpartition("/")[0]].append(path)
        self.members_moved = set(self.removed) | {p.rpartition("/")[0] for p in added if _go_member(p)}

    def packages_before(self) -> dict[str, list[str]]:
        """`Resolver.go_packages` of the file set before the change, from the new one's."""
        packages = dict(self.new.go_packages)
        for pkg in self.members_moved:
            members = [m for m in packages.get(pkg, ()) if m not in self.added] + self.removed.get(pkg, [])
            if members:
                packages[pkg] = members
            else:
                packages.pop(pkg, None)
        return packages

    def members(self, pkg: str) -> tuple[str, ...]:
        return tuple(self.new.go_packages.get(pkg, ()))

    def member_before(self, pkg: str) -> str | None:
        """A file that was a member of `pkg` before the change (all carried its count), or None."""
        kept = (m for m in self.new.go_packages.get(pkg, ()) if m not in self.added)
        return next(kept, None) or next(iter(self.removed.get(pkg, ())), None)

    def exposed(self, specs: Collection[str]) -> set[str]:
        """The import paths among `specs` that name a directory which gained its first member or lost its
        last (they resolve to its package on one side only)."""
        new = self.new
        flipped = {
            p for p in self.members_moved if (p in new.go_packages) != (self.member_before(p) is not None)
        }
        if not flipped:
            return set()
        # A path names a directory of its last segment unless that segment is "", "." or ".." (`go_dir`
        # normalizes) or the path is a module's own: only those are resolved.
        last = {p.rpartition("/")[2] for p in flipped} | {"", ".", ".."}
        modules = {module for module, _ in new.go_modules}
        return {
            spec
            for spec in specs
            if (spec.rpartition("/")[2] in last or spec in modules) and new.go_dir(spec) in flipped
        }


def _go_member(path: str) -> bool:
    """Whether `path` is a member of its directory's Go package (carries the package's count)."""
    return path.endswith(".go") and not path.endswith("_test.go")


def _names_go_file(specs: Mapping[str, Sequence[str]]) -> bool:
    """Whether a JS import may name a `.go` file by its path (a superset: any JS spec holding `.go`)."""
    return any(
        ".go" in spec for path, file_specs in specs.items() if path.endswith(JS_EXTS) for spec in file_specs
    )


class _Names:
    """The module names of the Python files that moved, each under its own file set's packages (the
    directories holding an `__init__.py`, which differ when a package came or went)."""

    def __init__(
        self, before: frozenset[str], after: frozenset[str], added: frozenset[str], removed: frozenset[str]
    ) -> None:
        self.before, self.after, self.added = before, after, added
        self.came = package_dirs(added)
        self.went = package_dirs(removed)

    @cached_property
    def packages_after(self) -> set[str]:
        return package_dirs(self.after)

    @cached_property
    def packages_before(self) -> set[str]:
        return (self.packages_after - self.came) | self.went

    def reach_kept(self) -> bool:
        """Whether a package came or went over a Python file that stays (its names change)."""
        if not self.came and not self.went:
            return False
        kept = sorted(p for p in self.before & self.after if p.endswith(".py"))
        for directory in self.came | self.went:
            i = bisect_left(kept, directory + "/")
            if i < len(kept) and kept[i].startswith(directory + "/"):
                return True
        return False

    def of(self, path: str) -> set[str]:
        packages = self.packages_after if path in self.added else self.packages_before
        return python_names(path, packages)


def _exposed(moved: frozenset[str], specs: Collection[str], module_names: _Names) -> set[str]:
    """The specs among `specs` that could resolve to, or away from, one of `moved` (a superset).

    A spec names a file by its module name (absolute Python) or by its last path component (relative
    Python, JS, Rust); an `index.*`, `mod.rs` or `__init__.py` by its directory's."""
    names: set[str] = set()
    parts: set[str] = set()
    for path in moved:
        directory, _, base = path.rpartition("/")
        parts.update((base, posixpath.splitext(base)[0]))
        if base.startswith("index.") or base in ("mod.rs", "__init__.py"):
            parts.add(directory.rpartition("/")[2])
        if path.endswith(".py"):
            names |= module_names.of(path)
    parts.discard("")  # a root-level index: named by `.`-only specs, which are always tested
    return {spec for spec in specs if _may_name(spec, names, parts)}


def _may_name(spec: str, names: set[str], parts: set[str]) -> bool:
    """Whether `spec` (of any language: the test is a superset) may look up one of `names` (Python module
    names) or `parts` (last path components)."""
    if spec.startswith("."):
        module, _, name = spec.partition(":")  # Python `.pkg.mod:name`
        if name in parts or module.lstrip(".").rpartition(".")[2] in parts:
            return True
        last = spec.rstrip("/").rpartition("/")[2]  # JS `../dir/file`: also file.ext, file/index.ext
        return last in ("", ".", "..") or last in parts or posixpath.splitext(last)[0] in parts
    if spec.startswith(("mod:", "use:")) and not parts.isdisjoint(spec[4:].split("::")):
        return True  # Rust: a module file of any prefix of the path
    module, _, name = spec.partition(":")
    return module in names or (bool(name) and f"{module}.{name}" in names)


def _index_before(
    index: dict[str, list[str]], added: frozenset[str], removed: frozenset[str], module_names: _Names
) -> dict[str, list[str]]:
    """`python_module_index` of the old file set, from the new one's: the names of what moved are the
    only ones whose files differ (a name depends on the path and on the packages above it alone, and no
    package came or went above a file that stayed)."""
    before = dict(index)
    gone: dict[str, list[str]] = defaultdict(list)
    touched: set[str] = set()
    for path in added | removed:
        if path.endswith(".py"):
            for name in module_names.of(path):
                touched.add(name)
                if path in removed:
                    gone[name].append(path)
    for name in touched:
        members = [f for f in index.get(name, ()) if f not in added] + gone.get(name, [])
        if members:
            before[name] = members
        else:
            before.pop(name, None)
    return before
