"""Import specs resolved against a file set (DESIGN §3, fan-in): which files a file imports.

What each language's specs resolve to is in `tether.repo.imports` (its coverage notes). A Python name is
looked up in an index of the module names every `.py` file answers to, which depend on its path and on the
package directories (those holding `__init__.py`) only: `tether.repo.fanin` derives the index of one file
set from another's when a change adds or removes no package.

    >>> files = {"pkg/__init__.py", "pkg/a.py", "pkg/b.py"}
    >>> Resolver(files, {}).targets("pkg/a.py", [".:b", "os"])  # from . import b; import os
    {'pkg/b.py'}
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from functools import cached_property

from tether.repo.imports import JS_EXTS, language_of

# `import "./x.js"` in TypeScript ESM means ./x.ts.
_JS_SWAP = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


class Resolver:
    """Specs resolved against one file set: `targets(importer, specs)` is the files `importer` imports
    (a Go package as "dir/"). `py_modules` and `go_packages` are this file set's tables when the caller has
    them, `absolute` and `go` what some absolute Python specs and Go import paths resolve to here, known
    from another file set (the incremental fan-in derives all four from the new file set's); tables not
    given are built on first use."""

    def __init__(
        self,
        files: Collection[str],
        specs: Mapping[str, Sequence[str]],
        py_modules: dict[str, list[str]] | None = None,
        absolute: Mapping[str, str | None] | None = None,
        go: Mapping[str, str | None] | None = None,
        go_packages: dict[str, list[str]] | None = None,
    ) -> None:
        self.files = files if isinstance(files, set | frozenset) else set(files)
        self.specs = specs
        # (else built on first use: `cached_property`)
        if py_modules is not None:
            self.py_modules = py_modules
        if go_packages is not None:
            self.go_packages = go_packages
        self._resolvers = {
            "python": self._python,
            "js": self._js,
            "rust": self._rust,
        }  # (Go: `_go`, per file)
        # An absolute Python spec names the same file from every importer unless a name it looks up has
        # several candidates (then the nearest wins): those are resolved once. Most specs of a repository
        # are absolute, and each module is imported by several files.
        self._absolute: dict[str, str | None] = dict(absolute or {})
        self._go_found: dict[str, str | None] = dict(go or {})
        self._crate_roots: dict[str, str | None] = {}  # directory -> its Rust crate root

    @cached_property
    def py_modules(self) -> dict[str, list[str]]:
        """`python_module_index(files)`: module name -> the files answering to it."""
        return python_module_index(self.files)

    def absolute_specs(self) -> dict[str, str | None]:
        """The absolute Python specs resolved so far, and to what (the same from every importer)."""
        return dict(self._absolute)

    def go_paths(self) -> dict[str, str | None]:
        """The Go import paths resolved so far, and to what package ("dir/", the same from every importer)."""
        return dict(self._go_found)

    def targets(self, path: str, file_specs: Sequence[str]) -> set[str]:
        lang = language_of(path)
        if lang == "go":
            return self._go(path, file_specs)
        resolve = self._resolvers.get(lang or "")
        if resolve is None:
            return set()
        out: set[str] = set()
        if lang == "python":
            absolute = self._absolute
            for spec in file_specs:
                target = absolute[spec] if spec in absolute else self._python(path, spec)
                if target is not None:
                    out.add(target)
            return out
        for spec in file_specs:
            target = resolve(path, spec)
            if target is not None:
                out.add(target)
        return out

    # Python

    def _py_module(self, name: str, importer: str) -> str | None:
        candidates = self.py_modules.get(name)
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        # Several roots define the name (e.g. two services): prefer the one nearest the importer.
        return min(candidates, key=lambda c: (-_common_prefix(c, importer), len(c), c))

    def _py_path(self, base: str) -> str | None:
        for candidate in (base + ".py", base + "/__init__.py"):
            if candidate in self.files:
                return candidate
        return None

    def _python(self, importer: str, spec: str) -> str | None:
        module, _, name = spec.partition(":")
        if not module.startswith("."):
            looked = (module,) if not name or name == "*" else (f"{module}.{name}", module)
            found = None
            for candidate in looked:
                found = self._py_module(candidate, importer)
                if found:
                    break
            if all(len(self.py_modules.get(n, ())) <= 1 for n in looked):
                self._absolute[spec] = found  # the same from every importer
            return found
        level = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            if not base:
                return None
            base = posixpath.dirname(base)
        rest = module[level:].replace(".", "/")
        base = posixpath.join(base, rest) if rest else base
        if name and name != "*":
            found = self._py_path(posixpath.join(base, name))
            if found:
                return found
        if rest:
            return self._py_path(base)
        init = posixpath.join(base, "__init__.py")
        return init if init in self.files else None

    # JavaScript / TypeScript

    def _js(self, importer: str, spec: str) -> str | None:
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
        if base.startswith("../") or base == "..":
            return None
        base = "" if base == "." else base
        if base in self.files:
            return base
        stem, ext = posixpath.splitext(base)
        for alt in _JS_SWAP.get(ext, ()):
            if stem + alt in self.files:
                return stem + alt
        for ext in JS_EXTS:
            if base + ext in self.files:
                return base + ext
        for ext in JS_EXTS:
            index = posixpath.join(base, "index" + ext)
            if index in self.files:
                return index
        return None

    # Go: a target is a package directory, returned as "dir/" and spread over its files by fan_in().

    @cached_property
    def go_modules(self) -> list[tuple[str, str]]:
        """(module path, its directory) per `go.mod`, longest module path first."""
        return sorted(
            (
                (spec[len("module ") :], posixpath.dirname(path))
                for path, file_specs in self.specs.items()
                if path.endswith("go.mod") and language_of(path) == "gomod" and path in self.files
                for spec in file_specs
            ),
            key=lambda m: -len(m[0]),
        )

    @cached_property
    def go_packages(self) -> dict[str, list[str]]:
        """Package directory -> its non-test `.go` files."""
        packages: dict[str, list[str]] = defaultdict(list)
        for f in self.files:
            if f.endswith(".go") and not f.endswith("_test.go"):
                packages[f.rpartition("/")[0]].append(f)
        return packages

    def _go(self, importer: str, file_specs: Sequence[str]) -> set[str]:
        """The packages `importer`'s import paths name, its own left out: one call per file, not per path (a Go
        repository's files import the same few hundred paths thousands of times)."""
        found, here, out = self._go_found, importer.rpartition("/")[0] + "/", set()
        for spec in file_specs:
            target = found[spec] if spec in found else self._go_target(spec)
            if target is not None and target != here:
                out.add(target)
        return out

    def _go_target(self, spec: str) -> str | None:
        """The package an import path names in this file set, as "dir/", the same from every importer: found
        once per path."""
        pkg = self.go_dir(spec)
        target = pkg + "/" if pkg is not None and pkg in self.go_packages else None
        self._go_found[spec] = target
        return target

    def go_dir(self, spec: str) -> str | None:
        """The directory the import path `spec` names under the repository's Go modules (the longest module
        path it starts with), whether or not a package is there; None outside every module."""
        for module, directory in self.go_modules:
            if spec == module or spec.startswith(module + "/"):
                pkg = posixpath.join(directory, spec[len(module) + 1 :]) if spec != module else directory
                pkg = posixpath.normpath(pkg) if pkg else ""
                return "" if pkg == "." else pkg
        return None

    # Rust

    def _rust_root(self, path: str) -> str | None:
        """The crate root of `path`: the nearest directory above it holding `lib.rs` or `main.rs` (found once
        per directory: every file of a crate asks)."""
        directory = path.rpartition("/")[0]
        if directory in self._crate_roots:
            return self._crate_roots[directory]
        walked, root = [], None
        while True:
            walked.append(directory)
            prefix = directory + "/" if directory else ""
            if prefix + "lib.rs" in self.files or prefix + "main.rs" in self.files:
                root = directory
                break
            if not directory or directory in self._crate_roots:
                root = self._crate_roots.get(directory)
                break
            directory = directory.rpartition("/")[0]
        self._crate_roots.update(dict.fromkeys(walked, root))
        return root

    def _rust(self, importer: str, spec: str) -> str | None:
        kind, _, rest = spec.partition(":")
        directory, _, name = importer.rpartition("/")
        if kind == "mod":
            is_root = name in ("lib.rs", "main.rs", "mod.rs")
            mod_dir = directory if is_root else posixpath.join(directory, name[:-3])
            for candidate in (posixpath.join(mod_dir, rest + ".rs"), posixpath.join(mod_dir, rest, "mod.rs")):
                if candidate in self.files:
                    return candidate
            return None
        root = self._rust_root(importer)
        if root is None:
            return None
        segs = rest.split("::")
        rel = importer[len(root) + 1 if root else 0 : -3]  # (the root is a directory above the importer)
        here = [] if rel in ("lib", "main") else rel.split("/")
        if here and here[-1] == "mod":
            here.pop()
        if segs[0] == "crate":
            absolute = segs[1:]
        else:
            absolute = list(here)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super" and absolute:
                    absolute.pop()
            absolute += segs
        # Paths joined by "/" as `posixpath.join` would, unless a segment is empty or holds a "/" (not Rust).
        plain = "" not in absolute and not any("/" in seg for seg in absolute)
        for k in range(len(absolute), 0, -1):
            if plain:
                base = f"{root}/{'/'.join(absolute[:k])}" if root else "/".join(absolute[:k])
                candidates: tuple[str, str] = (base + ".rs", base + "/mod.rs")
            else:
                base = posixpath.join(root, *absolute[:k])
                candidates = (base + ".rs", posixpath.join(base, "mod.rs"))
            for candidate in candidates:
                if candidate in self.files:
                    return candidate
        return None


def python_module_index(files: Collection[str]) -> dict[str, list[str]]:
    """Module name -> files defining it, under every root a name can be imported from."""
    packages = package_dirs(files)
    index: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if f.endswith(".py"):
            for name in python_names(f, packages):
                index[name].append(f)
    return index


def package_dirs(files: Collection[str]) -> set[str]:
    """The directories holding an `__init__.py`: where the package roots are."""
    return {f[: -len("/__init__.py")] for f in files if f.endswith("/__init__.py")}


def python_names(path: str, packages: Collection[str]) -> set[str]:
    """The module names the Python file `path` answers to, given the `package_dirs` of its file set."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    dirs = path.split("/")[:-1]
    k = len(dirs)
    while k > 0 and "/".join(dirs[:k]) in packages:
        k -= 1
    names = {".".join(parts[k:]), ".".join(parts)}  # package root; repo root (namespace packages)
    if parts and parts[0] == "src":  # (a root-level `__init__.py` has no parts, and no name)
        names.add(".".join(parts[1:]))
    names.discard("")
    return names


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n
