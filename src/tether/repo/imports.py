"""Fan-in: how many files import a file (DESIGN §3, the blast radius).

Two steps, so a refresh re-parses only files whose content changed:

1. `parse_imports(path, text)` turns one file into import *specs*: strings that depend only on that
   file's content (cached per file by the repo map).
2. `fan_in(files, specs)` resolves every spec against the current file set and counts, per file, the
   distinct other files that import it.

    >>> specs = {"pkg/a.py": parse_imports("pkg/a.py", "from . import b"), "pkg/b.py": []}
    >>> fan_in({"pkg/__init__.py", "pkg/a.py", "pkg/b.py"}, specs)["pkg/b.py"]
    1

Coverage, and what is not covered:

- Python (the import lines, `tether.repo.pyscan`): `import a.b`, `from a.b import c` (a submodule `c` if one exists, else module `a.b`),
  relative imports, packages via `__init__.py`, src-layout and any other package root (the directory
  above the topmost `__init__.py`; so a file in a directory that is not a package answers to its bare
  name, as scripts import their siblings), plus names relative to the repo root (namespace packages).
  When several files answer to a name, the one sharing the longest directory prefix with the importer wins.
  `import a.b` counts for `a/b.py` only, not for the parents' `__init__.py`. Not covered:
  `importlib`/`__import__` strings, `sys.path` tricks, `.pyi` stubs.
- JavaScript/TypeScript (regex): relative specifiers in `import … from`, bare `import '…'`,
  `export … from`, `require('…')`, `import('…')`; resolved with extensions and `index` files, and the
  TypeScript ESM habit of importing `./x.js` for `./x.ts`. Not covered: package names, tsconfig
  `paths`/`baseUrl` aliases, template-literal specifiers; a specifier inside a string or a `//` comment
  that does not start its line can count.
- Go (regex): import paths under a module declared by a `go.mod` in the repo (longest module path
  wins). A package's fan-in is the number of files in other directories importing it; each non-test
  file of the package carries it (`_test.go` files get 0). Not covered: `replace` directives, vendoring.
- Rust (regex): `mod x;` (`x.rs` or `x/mod.rs` beside the declaring module) and `crate::`/`super::`/
  `self::` paths, in `use` trees (braces expanded) and inline, resolved to the longest module prefix
  that is a file under the crate root (the nearest directory holding `lib.rs` or `main.rs`). Not
  covered: `#[path]` attributes, inline `mod x { … }` nesting, other crates of a workspace.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from tether.repo.pyscan import python_specs

_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
# `import "./x.js"` in TypeScript ESM means ./x.ts.
_JS_SWAP = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}

_LANG_BY_SUFFIX = {".py": "python", ".go": "go", ".rs": "rust", **dict.fromkeys(_JS_EXTS, "js")}


def language_of(path: str) -> str | None:
    """The language whose imports `path` holds ("python", "js", "go", "gomod", "rust"), or None."""
    name = path.rsplit("/", 1)[-1]
    if name == "go.mod":
        return "gomod"
    dot = name.rfind(".")
    return _LANG_BY_SUFFIX.get(name[dot:]) if dot > 0 else None


def parse_imports(path: str, text: str) -> list[str]:
    """The import specs of one file, deduplicated, in first-seen order."""
    lang = language_of(path)
    if lang == "python":
        specs = python_specs(text)
    elif lang == "js":
        specs = _js_specs(text)
    elif lang == "go":
        specs = _go_specs(text)
    elif lang == "gomod":
        specs = _gomod_specs(text)
    elif lang == "rust":
        specs = _rust_specs(text)
    else:
        specs = []
    return list(dict.fromkeys(s for s in specs if s and "\n" not in s))


# -- parsing ---------------------------------------------------------------------------------------


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"^\s*//.*$", re.M)
_JS_SPEC = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])(\.\.?(?:/[^'"\n]*)?)\1""")


def _strip_comments(text: str) -> str:
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", text))


def _js_specs(text: str) -> list[str]:
    return [m.group(2) for m in _JS_SPEC.finditer(_strip_comments(text))]


_GO_BLOCK = re.compile(r"\bimport\s*\((.*?)\)", re.S)
_GO_SINGLE = re.compile(r"""\bimport\s+(?:[\w.]+\s+)?["`]([^"`\n]+)["`]""")
_GO_STRING = re.compile(r"""["`]([^"`\n]+)["`]""")


def _go_specs(text: str) -> list[str]:
    # Import paths never contain "//", so cutting every line at "//" is safe for what we look for.
    text = re.sub(r"//[^\n]*", "", _BLOCK_COMMENT.sub("", text))
    out = [m.group(1) for m in _GO_SINGLE.finditer(text)]
    for block in _GO_BLOCK.finditer(text):
        out.extend(m.group(1) for m in _GO_STRING.finditer(block.group(1)))
    return out


def _gomod_specs(text: str) -> list[str]:
    m = re.search(r"^\s*module\s+\"?([^\s\"]+)", text, re.M)
    return [f"module {m.group(1)}"] if m else []


_RUST_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
_RUST_USE = re.compile(r"\buse\s+([^;]+);")
_RUST_PATH = re.compile(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+")
_RUST_ROOTS = ("crate", "super", "self")


def _rust_specs(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", _BLOCK_COMMENT.sub("", text))
    out = [f"mod:{m.group(1)}" for m in _RUST_MOD.finditer(text)]
    for m in _RUST_USE.finditer(text):
        tree = re.sub(r"\s*(::|[{},])\s*", r"\1", m.group(1).strip())
        for path in _expand_use_tree(tree):
            segs = [s for s in re.sub(r"\s+as\s+\w+$", "", path).split("::") if s]
            if segs and segs[-1] == "self":
                segs.pop()
            if segs and segs[0] in _RUST_ROOTS and re.fullmatch(r"\w+", segs[-1]):
                out.append("use:" + "::".join(segs))
    # Paths used inline (`crate::db::open()`), outside `use` items (already expanded above).
    for m in _RUST_PATH.finditer(_RUST_USE.sub("", text)):
        out.append("use:" + re.sub(r"\s+", "", m.group(0)))
    return out


def _expand_use_tree(tree: str) -> list[str]:
    """`a::{b,c::{d,e}}` -> [a::b, a::c::d, a::c::e] (whitespace around `::{},` already removed)."""
    brace = tree.find("{")
    if brace < 0:
        return [tree]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [prefix + sub for part in parts if part for sub in _expand_use_tree(part)]


# -- resolution ------------------------------------------------------------------------------------


def fan_in(files: Collection[str], specs: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """For every file that at least one other file imports: the number of distinct importers."""
    resolver = _Resolver(files, specs)
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


class _Resolver:
    def __init__(self, files: Collection[str], specs: Mapping[str, Sequence[str]]) -> None:
        self.files = files if isinstance(files, set | frozenset) else set(files)
        self.py_modules = _python_module_index(self.files)
        self.go_modules = sorted(
            (
                (spec[len("module ") :], posixpath.dirname(path))
                for path, file_specs in specs.items()
                if language_of(path) == "gomod" and path in self.files
                for spec in file_specs
            ),
            key=lambda m: -len(m[0]),
        )
        self.go_packages: dict[str, list[str]] = defaultdict(list)
        for f in self.files:
            if f.endswith(".go") and not f.endswith("_test.go"):
                self.go_packages[posixpath.dirname(f)].append(f)
        self._resolvers = {"python": self._python, "js": self._js, "go": self._go, "rust": self._rust}
        # An absolute Python spec names the same file from every importer unless a name it looks up has
        # several candidates (then the nearest wins): those are resolved once. Most specs of a repository
        # are absolute, and each module is imported by several files.
        self._absolute: dict[str, str | None] = {}

    def targets(self, path: str, file_specs: Sequence[str]) -> set[str]:
        lang = language_of(path)
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
        for ext in _JS_EXTS:
            if base + ext in self.files:
                return base + ext
        for ext in _JS_EXTS:
            index = posixpath.join(base, "index" + ext)
            if index in self.files:
                return index
        return None

    # Go: a target is a package directory, returned as "dir/" and spread over its files by fan_in().

    def _go(self, importer: str, spec: str) -> str | None:
        for module, directory in self.go_modules:
            if spec == module or spec.startswith(module + "/"):
                pkg = posixpath.join(directory, spec[len(module) + 1 :]) if spec != module else directory
                pkg = posixpath.normpath(pkg) if pkg else ""
                pkg = "" if pkg == "." else pkg
                if pkg in self.go_packages and posixpath.dirname(importer) != pkg:
                    return pkg + "/"
                return None
        return None

    # Rust

    def _rust_root(self, path: str) -> str | None:
        directory = posixpath.dirname(path)
        while True:
            for root_file in ("lib.rs", "main.rs"):
                if posixpath.join(directory, root_file) in self.files:
                    return directory
            if not directory:
                return None
            directory = posixpath.dirname(directory)

    def _rust(self, importer: str, spec: str) -> str | None:
        kind, _, rest = spec.partition(":")
        name = posixpath.basename(importer)
        directory = posixpath.dirname(importer)
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
        rel = posixpath.relpath(importer[:-3], root) if root else importer[:-3]
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
        for k in range(len(absolute), 0, -1):
            base = posixpath.join(root, *absolute[:k])
            for candidate in (base + ".rs", posixpath.join(base, "mod.rs")):
                if candidate in self.files:
                    return candidate
        return None


def _python_module_index(files: Collection[str]) -> dict[str, list[str]]:
    """Module name -> files defining it, under every root a name can be imported from."""
    init_dirs = {f[: -len("/__init__.py")] for f in files if f.endswith("/__init__.py")}
    index: dict[str, list[str]] = defaultdict(list)
    for f in files:
        if not f.endswith(".py"):
            continue
        parts = f[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        dirs = f.split("/")[:-1]
        k = len(dirs)
        while k > 0 and "/".join(dirs[:k]) in init_dirs:
            k -= 1
        names = {".".join(parts[k:]), ".".join(parts)}  # package root; repo root (namespace packages)
        if parts[0] == "src":
            names.add(".".join(parts[1:]))
        for name in names:
            if name:
                index[name].append(f)
    return index


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n
