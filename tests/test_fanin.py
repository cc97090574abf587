"""Fan-in brought up to date (`FanInChange`) against fan-in counted anew (`fan_in`): the same counts after
every kind of change, and a count from scratch only where a change reaches further than its importers."""

from __future__ import annotations

import random

import pytest

from tether.repo.fanin import FanInChange, fan_in
from tether.repo.imports import language_of, parse_imports

Tree = dict[str, str]  # path -> content

BASE: Tree = {
    "app/__init__.py": "",
    "app/core.py": "import os\n",
    "app/util.py": "from . import core\nfrom .helpers import fmt\n",
    "app/api.py": "from app import core, util\nimport vendored\nimport tools.fmt\n",
    "svc_a/run.py": "import common\n",
    "svc_a/common.py": "",
    "svc_b/run.py": "import common\n",
    "web/lib.ts": "export const x = 1\n",
    "web/view.ts": "import { x } from './lib'\nimport './parts'\nimport '.'\nimport c from './c.json'\n",
    "web/main.ts": "import './view.js'\nimport '../shared/fmt'\n",
    "crate/lib.rs": "mod net;\nmod db;\nuse crate::db::pool;\n",
    "crate/db.rs": "use super::net::wire;\n",
    "go.mod": "module example.com/m\n",
    "pkg/store/store.go": 'package store\nimport "example.com/m/pkg/log"\n',
    "pkg/store/cache.go": "package store\n",
    "pkg/log/log.go": "package log\n",
    "pkg/log/log_test.go": (
        'package log\nimport (\n\t"example.com/m/pkg/log"\n\t"example.com/m/pkg/store"\n)\n'
    ),
    "cmd/main.go": 'package main\nimport (\n\t"example.com/m/pkg/store"\n\t"example.com/m/pkg/next"\n)\n',
    "README.md": "# readme\n",
}


def specs_of(tree: Tree) -> dict[str, tuple[str, ...]]:
    return {path: tuple(parse_imports(path, text)) for path, text in tree.items() if language_of(path)}


def change_between(old: Tree, new: Tree) -> tuple[FanInChange | None, dict[str, int], dict[str, int]]:
    """(the change, brought up to date from the old count or None, the count anew)."""
    old_specs, new_specs = specs_of(old), specs_of(new)
    changed = {p for p in old_specs.keys() | new_specs.keys() if old_specs.get(p) != new_specs.get(p)}
    change = FanInChange.between(set(old), old_specs, set(new), new_specs, changed)
    anew = fan_in(set(new), new_specs)
    return change, change.applied(fan_in(set(old), old_specs)) if change else {}, anew


def renamed(tree: Tree, old: str, new: str) -> Tree:
    return {new if p == old else p: text for p, text in tree.items()}


def without(tree: Tree, *paths: str) -> Tree:
    return {p: text for p, text in tree.items() if p not in paths}


@pytest.mark.parametrize(
    ("why", "new"),
    [
        ("nothing changed", BASE),
        ("an edit changing imports", {**BASE, "app/api.py": "from app import util\n"}),
        ("an edit keeping them", {**BASE, "app/core.py": "import os\n\nX = 1\n"}),
        ("a file added that nobody imports", {**BASE, "app/extra.py": "from . import core\n"}),
        ("a module an import now finds", {**BASE, "vendored.py": ""}),
        ("a namespace module an import now finds", {**BASE, "tools/fmt.py": ""}),
        ("a relative import now finds its module", {**BASE, "app/helpers.py": ""}),
        ("a file deleted with its importers", without(BASE, "app/core.py")),
        ("a renamed file", renamed(BASE, "web/lib.ts", "web/base.ts")),
        ("the nearest of two candidates removed", without(BASE, "svc_a/common.py")),
        ("a second candidate, farther", {**BASE, "svc_b/common.py": ""}),
        ("a JS index a directory import now finds", {**BASE, "web/parts/index.ts": ""}),
        ("a JS index of the importer's own directory", {**BASE, "web/index.ts": ""}),
        ("the .ts a .js import means, renamed", renamed(BASE, "web/view.ts", "web/view.tsx")),
        ("a JS import of a file with its extension", {**BASE, "shared/fmt.js": ""}),
        ("a Rust module file declared before", {**BASE, "crate/net/mod.rs": ""}),
        ("a Rust module path now finds its file", {**BASE, "crate/net.rs": "", "crate/db/pool.rs": ""}),
        ("a file no import names", {**BASE, "docs/guide.md": ""}),
        ("a new package an import now finds", {**BASE, "tools/__init__.py": "", "tools/fmt.py": ""}),
        ("a new package a relative import finds", {**BASE, "app/helpers/__init__.py": "from . import fmt\n"}),
        (
            "a package removed with its files",
            without(BASE, "app/__init__.py", "app/core.py", "app/util.py", "app/api.py"),
        ),
        ("a data file a JS import names", {**BASE, "web/c.json": "{}"}),
        ("a Go file added to a package", {**BASE, "pkg/log/level.go": "package log\n"}),
        ("a Go file's imports changed", {**BASE, "pkg/store/store.go": "package store\n"}),
        (
            "a Go file's imports added",
            {**BASE, "pkg/log/log.go": 'package log\nimport "example.com/m/pkg/store"\n'},
        ),
        ("a Go package an import now finds", {**BASE, "pkg/next/next.go": "package next\n"}),
        ("a Go package's last member removed", without(BASE, "pkg/log/log.go")),
        ("a Go member removed, others stay", without(BASE, "pkg/store/cache.go")),
        ("a Go importer removed", without(BASE, "cmd/main.go")),
        (
            "a Go test file added (an importer, not a member)",
            {**BASE, "pkg/next/x_test.go": "package next\n"},
        ),
        ("a Go member moved to another package", renamed(BASE, "pkg/store/cache.go", "pkg/log/cache.go")),
        (
            "a Go importer moved into the package it imports",
            renamed(BASE, "cmd/main.go", "pkg/store/main.go"),
        ),
        (
            "a Go package moved",
            renamed(
                renamed(BASE, "pkg/log/log.go", "pkg/next/log.go"),
                "pkg/log/log_test.go",
                "pkg/next/log_test.go",
            ),
        ),
    ],
)
def test_a_change_that_stays_near_its_importers_is_brought_up_to_date(why: str, new: Tree) -> None:
    change, brought, anew = change_between(BASE, new)
    assert change is not None, why
    assert brought == anew, why


@pytest.mark.parametrize(
    ("why", "new"),
    [
        ("a package root added over files that stay", {**BASE, "svc_a/__init__.py": ""}),
        ("a package root removed from files that stay", without(BASE, "app/__init__.py")),
        ("a root-level __init__.py", {**BASE, "__init__.py": ""}),
        ("the Go module renamed", {**BASE, "go.mod": "module example.com/other\n"}),
        ("a second Go module", {**BASE, "pkg/go.mod": "module example.com/pkg\n"}),
        ("a JS import of a .go file, added", {**BASE, "web/lib.ts": "import '../pkg/log/log.go'\n"}),
        ("a Rust crate root added", {**BASE, "crate/bin/main.rs": "mod cli;\n"}),
    ],
)
def test_a_change_that_reaches_far_is_counted_anew(why: str, new: Tree) -> None:
    change, _, _ = change_between(BASE, new)
    assert change is None, why


def test_a_go_package_whose_member_a_js_import_names_is_counted_anew() -> None:
    """Such a member carries its package's count, or its own where the package has none: the stored count
    does not say which, so a change moving the package's count counts anew."""
    old = {**BASE, "pkg/store/store.go": "package store\n", "web/go.ts": "import '../pkg/log/log.go'\n"}
    assert fan_in(set(old), specs_of(old))["pkg/log/log.go"] == 1  # its own: pkg/log has no importer
    change, _, anew = change_between(old, {**old, "pkg/store/store.go": BASE["pkg/store/store.go"]})
    assert change is None
    assert anew["pkg/log/log.go"] == 1  # the package's now


def test_the_counts_move_as_the_change_says() -> None:
    change, brought, anew = change_between(BASE, {**without(BASE, "app/core.py"), "vendored.py": ""})
    assert change is not None and brought == anew
    assert "app/core.py" not in brought and brought["vendored.py"] == 1
    assert fan_in(set(BASE), specs_of(BASE))["app/core.py"] == 2


# Random trees over a small vocabulary, so that names collide, imports find and lose their files, and every
# kind of move happens: each change is checked against the count anew.
_DIRS = ("", "a/", "a/b/", "c/")
_NAMES = ("x", "y", "util", "index", "mod", "lib", "b")
_EXTS = (".py", ".py", ".ts", ".js", ".rs", ".md", ".go", ".go", "_test.go")
_LINES = {
    ".py": (
        "import x",
        "import util",
        "import a.b.x",
        "from a import y",
        "from . import util",
        "from .b import x",
        "from .. import y",
        "from a.b import *",
    ),
    ".ts": ("import './x'", "import '../util'", "import '.'", "import './b/y.js'", "import './index'"),
    ".js": ("require('..')", "import './util.js'", "import '../a/b'"),
    ".rs": ("mod x;", "mod util;", "use crate::a::x;", "use super::util::f;", "use self::b::y;"),
    # (under the module example.com/m at the root, and example.com/m/c in c/ when that go.mod is there)
    ".go": (
        'import "example.com/m/a"',
        'import "example.com/m/a/b"',
        'import "example.com/m"',
        'import "example.com/m/c"',
        'import "example.com/m/c/d"',
        'import "example.com/m/d"',
        'import "other.org/x"',
    ),
}
_LINES["_test.go"] = _LINES[".go"]
_GO_MODS = (
    {"go.mod": "module example.com/m\n"},
    {"go.mod": "module example.com/m\n", "c/go.mod": "module example.com/m/c\n"},
)


def _random_file(rng: random.Random) -> tuple[str, str]:
    ext = rng.choice(_EXTS)
    path = rng.choice(_DIRS) + rng.choice(_NAMES) + ext
    return path, _random_text(ext, rng)


def _random_text(ext: str, rng: random.Random) -> str:
    choices = _LINES.get(ext, ("text",))
    lines = rng.sample(choices, rng.randint(0, min(3, len(choices))))
    if ext == ".ts" and rng.random() < 0.05:
        lines.append("import './x.go'")  # a JS import of a Go file: its count is its own
    return ("package p\n" if ext.endswith(".go") else "") + "\n".join(lines) + "\n"


def _random_change(tree: Tree, rng: random.Random) -> Tree:
    new = dict(tree)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(("add", "remove", "rename", "edit", "package"))
        paths = sorted(new)
        if kind == "add" or not paths:
            path, text = _random_file(rng)
            new[path] = text
        elif kind == "remove":
            del new[rng.choice(paths)]
        elif kind == "rename":
            path = rng.choice(paths)
            new[rng.choice(_DIRS) + rng.choice(_NAMES) + path[path.rfind(".") :]] = new.pop(path)
        elif kind == "edit":
            path = rng.choice(paths)
            new[path] = _random_text(next((e for e in _EXTS if path.endswith(e)), ".md"), rng)
        elif rng.random() < 0.5:  # a package over whatever is there
            new[rng.choice(_DIRS[1:]) + "__init__.py"] = ""
        else:  # a new package with its files
            directory = rng.choice(("d/", "a/e/", "c/f/"))
            new[directory + "__init__.py"] = rng.choice(("", "from . import x\n"))
            new[directory + rng.choice(_NAMES) + ".py"] = rng.choice(_LINES[".py"])
    return new


def test_random_changes_are_brought_up_to_date_to_the_count_anew() -> None:
    rng = random.Random(15)
    brought_up = 0
    for _ in range(600):
        tree = dict(_random_file(rng) for _ in range(rng.randint(3, 12)))
        if rng.random() < 0.5:
            tree["a/__init__.py"] = "from . import x\n"
        if rng.random() < 0.7:
            tree.update(rng.choice(_GO_MODS))
        new = _random_change(tree, rng)
        change, brought, anew = change_between(tree, new)
        if change is not None:
            brought_up += 1
            assert brought == anew, (tree, new)
    assert brought_up > 300  # most changes took the incremental path the test is about
