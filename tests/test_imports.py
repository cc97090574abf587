from __future__ import annotations

import random

import pytest

from tether.repo.fanin import fan_in
from tether.repo.imports import language_of, parse_imports


def fan_in_of(files: dict[str, str]) -> dict[str, int]:
    specs = {path: parse_imports(path, text) for path, text in files.items() if language_of(path)}
    return fan_in(set(files), specs)


PYTHON = {
    "src/app/__init__.py": "",
    "src/app/core.py": "",
    "src/app/db/__init__.py": "from .models import Base\n",
    "src/app/db/models.py": "from ..core import helper\n",
    "src/app/db/queries.py": "from . import models\nfrom app.db.models import Base\n",
    "src/app/api.py": "import app.db\nfrom app import core\nfrom app.core import *\n",
    "src/app/cli.py": (
        "def main():\n    from app.api import run  # deferred import counts too\n"
        "    import app.db.queries as q\n"
    ),
    "scripts/run.py": "import helpers\nfrom app.cli import main\nimport requests\n",
    "scripts/helpers.py": "",
    "tests/test_api.py": "from app import api\nfrom tests import conftest\n",
    "tests/conftest.py": "",
    "broken.py": "def (:\n  import app.core\n",  # a syntax error: its import lines still count
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "src/app/core.py",
            3,
        ),  # models (..core); api (`from app import core`, `app.core import *`: once); broken
        ("src/app/db/models.py", 2),  # db/__init__ (.models), queries (. import models and absolute)
        ("src/app/db/__init__.py", 1),  # `import app.db` from api.py
        ("src/app/db/queries.py", 1),
        ("src/app/api.py", 2),  # cli.py (inside a function) and tests
        ("src/app/cli.py", 1),
        ("scripts/helpers.py", 1),  # a sibling in a directory that is not a package, by its bare name
        ("tests/conftest.py", 1),  # namespace package, from the repo root
        ("src/app/__init__.py", 0),  # `import app.db` counts for app/db only
    ],
)
def test_python_fan_in(path: str, expected: int) -> None:
    assert fan_in_of(PYTHON).get(path, 0) == expected


def test_python_specs() -> None:
    text = "import a.b as c, d\nfrom ..x.y import z\nfrom . import m, n\nfrom e import *\n"
    assert parse_imports("p/q.py", text) == ["a.b", "d", "..x.y:z", ".:m", ".:n", "e:*"]


def test_python_same_name_in_two_services_prefers_the_nearest() -> None:
    files = {
        "svc_a/src/common/__init__.py": "",
        "svc_a/src/common/log.py": "",
        "svc_a/src/main.py": "from common import log\n",
        "svc_b/src/common/__init__.py": "",
        "svc_b/src/common/log.py": "",
        "svc_b/src/main.py": "from common import log\nfrom common.log import x\n",
    }
    counts = fan_in_of(files)
    assert counts["svc_a/src/common/log.py"] == 1
    assert counts["svc_b/src/common/log.py"] == 1


JS = {
    "web/src/util.ts": "export const x = 1\n",
    "web/src/format.tsx": "",
    "web/src/api/index.ts": "export * from './client'\n",
    "web/src/api/client.ts": "import type { T } from '../types'\n",
    "web/src/types.d.ts": "",
    "web/src/types.ts": "",
    "web/src/esm.ts": "import { x } from './util.js'\n",  # TypeScript ESM: ./util.js means ./util.ts
    "web/src/app.tsx": (
        'import React from "react"\nimport { x } from "./util"\nimport Fmt from "./format"\n'
        "import {\n  a,\n  b,\n} from './api'\n"
        "const lazy = () => import('./lazy.mjs')\n"
        "// import { old } from './old'\n/* import './commented' */\n"
        "import './styles.css'\n"
    ),
    "web/src/lazy.mjs": "const c = require('./common.cjs')\n",
    "web/src/common.cjs": "module.exports = require('../../outside/thing')\n",
    "web/src/old.ts": "",
    "web/src/commented.ts": "",
    "web/src/styles.css": "",
    "web/src/plain.jsx": "const u = require('./util')\nexport { default } from './format'\n",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("web/src/util.ts", 3),  # app.tsx, plain.jsx, esm.ts (via .js)
        ("web/src/format.tsx", 2),
        ("web/src/api/index.ts", 1),  # './api' resolves to the directory's index file
        ("web/src/api/client.ts", 1),  # export-from
        ("web/src/types.ts", 1),  # '../types' prefers types.ts over types.d.ts
        ("web/src/lazy.mjs", 1),  # dynamic import()
        ("web/src/common.cjs", 1),  # require()
        ("web/src/styles.css", 1),  # an exact file, whatever its kind
        ("web/src/old.ts", 0),  # commented out
        ("web/src/commented.ts", 0),
    ],
)
def test_js_fan_in(path: str, expected: int) -> None:
    assert fan_in_of(JS).get(path, 0) == expected


def test_js_specs_skip_comment_lines_whether_they_hold_the_string_or_its_keyword() -> None:
    text = (
        "import a from './a'\n"
        "  // import b from './b'\n"  # the whole statement in a comment
        "// import\n'./c'\n"  # only the keyword: a bare string is no import
        "import d from // a comment between keyword and string\n  './d'\n"
        "const url = 'https://x' // require('./e') after code on the line\n"
        "export * from\n\n\n   '../f'\n"
        "const g = require (  './g'  )\n"
    )
    assert parse_imports("x.ts", text) == ["./a", "./e", "../f", "./g"]


GO = {
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "cmd/server/main.go": (
        'package main\n\nimport (\n\t"fmt"\n\tdb "example.com/shop/internal/db"\n'
        '\t_ "example.com/shop/internal/migrate"\n\t// "example.com/shop/internal/old"\n)\n'
    ),
    "cmd/worker/main.go": 'package main\n\nimport "example.com/shop/internal/db"\n',
    "internal/db/db.go": 'package db\n\nimport "example.com/shop/internal/model"\n',
    "internal/db/query.go": "package db\n",
    "internal/db/db_test.go": 'package db_test\n\nimport "example.com/shop/internal/db"\n',
    "internal/model/model.go": "package model\n",
    "internal/migrate/migrate.go": "package migrate\n",
    "internal/old/old.go": "package old\n",
    "tools/gen/go.mod": "module example.com/gen\n",
    "tools/gen/main.go": 'package main\nimport "example.com/shop/internal/model"\nimport "example.com/gen/tmpl"\n',
    "tools/gen/tmpl/tmpl.go": "package tmpl\n",
    "root.go": "package shop\n",
    "internal/model/uses_root.go": 'package model\nimport "example.com/shop"\n',
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("internal/db/db.go", 2),  # a package's fan-in, on each of its files
        ("internal/db/query.go", 2),
        ("internal/db/db_test.go", 0),  # its own external test package does not count, nor do tests get it
        ("internal/model/model.go", 2),  # db.go and the nested module's tool
        ("internal/migrate/migrate.go", 1),  # blank import
        ("internal/old/old.go", 0),  # commented out
        ("tools/gen/tmpl/tmpl.go", 1),  # nested go.mod: longest module path wins
        ("root.go", 1),  # the module's root package
    ],
)
def test_go_fan_in(path: str, expected: int) -> None:
    assert fan_in_of(GO).get(path, 0) == expected


def test_go_imports_are_read_from_the_header_before_the_first_declaration() -> None:
    text = (
        "/*\nPackage p does things.\n\ntype T is described here, at the start of a line.\n*/\npackage p\n\n"
        '/*\n#include <stdio.h>\nconst int limit = 3;\n*/\nimport "C"\n\n'  # a cgo preamble's C code
        'import (\n\t"fmt"\n\t// "old/gone"\n\tstrs "strings"\n)\n\n'
        'import "example.com/p/q"\n\n'
        "func main() {}\n\n"
        'const template = `\nimport "not/an/import"\n`\n'  # generated code in a string, after the header
    )
    assert parse_imports("p.go", text) == ["C", "example.com/p/q", "fmt", "strings"]


def test_go_header_with_a_comment_never_closed_is_read_whole() -> None:
    text = 'package p\n\n/* never closed\nfunc f() {}\nimport "example.com/x"\n'
    # Where the header ends is unclear: the whole file is read, as before the header was cut (an unclosed
    # comment is not a comment to the regex either).
    assert parse_imports("p.go", text) == ["example.com/x"]
    text = 'package p\n// a /* in a line comment\nimport "example.com/x"\nfunc f() {}\n'
    assert parse_imports("p.go", text) == ["example.com/x"]


RUST = {
    "Cargo.toml": "[package]\nname = 'shop'\n",
    "src/lib.rs": "pub mod db;\nmod util;\npub mod api;\nuse crate::db::Pool;\n",
    "src/db.rs": "pub mod pool;\nuse super::util::helper;\n",
    "src/db/pool.rs": "use crate::util;\n",
    "src/util.rs": "",
    "src/api/mod.rs": (
        "mod routes;\nuse crate::{db::{pool::Pool, Conn}, util as u};\n"
        "use self::routes::all;\nfn f() { crate::db::pool::open(); }\n"
        "// use crate::legacy::x;\n"
    ),
    "src/api/routes.rs": "use super::super::util::x;\nuse std::io;\n",
    "src/legacy.rs": "",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/db.rs", 2),  # `pub mod db;` in lib.rs, `use crate::db::Pool` (lib.rs again), db::Conn in api
        ("src/db/pool.rs", 2),  # `pub mod pool;` in db.rs; braces and an inline path in api/mod.rs
        ("src/util.rs", 5),  # lib.rs (mod), db.rs (super::), pool.rs, api/mod.rs (`util as u`), routes.rs
        ("src/api/mod.rs", 1),
        ("src/api/routes.rs", 1),  # `mod routes;` and `use self::routes` from the same file
        ("src/legacy.rs", 0),  # commented out, never declared
    ],
)
def test_rust_fan_in(path: str, expected: int) -> None:
    assert fan_in_of(RUST).get(path, 0) == expected


def test_rust_specs_need_their_word_to_start_where_it_does() -> None:
    text = (
        "pub(crate) mod db;\n    mod util;\nlet xmod = 1; submod y;\n"  # `mod` begins its line's item or nothing
        "use crate::db::{Pool, open as o};\nfn f() { reuse crate::no; }\n"  # `reuse` is not `use`
        "fn g() { myself::self::helper(); crate :: api :: run(); }\n"
    )
    assert parse_imports("src/lib.rs", text) == [
        "mod:db",
        "mod:util",
        "use:crate::db::Pool",
        "use:crate::db::open",
        "use:crate::no",  # (an inline path, like any other outside a `use` item)
        "use:self::helper",
        "use:crate::api::run",
    ]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("x.tsx", "js"),
        ("x.cjs", "js"),
        ("go.mod", "gomod"),
        ("sub/go.mod", "gomod"),
        ("m.go", "go"),
        ("lib.rs", "rust"),
        ("README.md", None),
        (".py", None),
        ("Makefile", None),
    ],
)
def test_language_of(path: str, language: str | None) -> None:
    assert language_of(path) == language


def test_importers_outside_the_file_set_do_not_count() -> None:
    specs = {"gone.py": parse_imports("gone.py", "import a\n"), "b.py": parse_imports("b.py", "import a\n")}
    assert fan_in({"a.py", "b.py"}, specs) == {"a.py": 1}


def test_a_file_importing_itself_does_not_count() -> None:
    assert fan_in_of({"pkg/__init__.py": "from pkg import x\n", "pkg/x.py": "import pkg.x\n"}) == {
        "pkg/x.py": 1
    }


# Files a clone could hold to stall the repo map: each made a pattern read to the end of the text again from
# every place it started (minutes for a few hundred KB, hours at the 2 MB a source file may have). Each is now
# read in a pass or two; the timeout is a guard against hanging, not a speed claim (these take well under a
# second each on a loaded machine).
SLOW_BEFORE = [
    ("x.rs", "use a\n" * 300_000),  # a `use` with no `;` after it
    ("x.rs", "pub(mod x;\n" * 300_000),  # `pub(` never closed before `mod`
    ("x.rs", "xmod a;" * 300_000),  # one line of `mod` that no item starts
    ("x.rs", "use crate::" + "{a," * 100_000 + ";"),  # braces nested without end
    ("x.rs", "/* " * 300_000),  # block comments never closed
    ("x.go", "import (\n" * 300_000),  # import blocks never closed
    ("x.ts", "/* " * 300_000),
    ("x.ts", "'./" * 300_000),  # quoted strings on one line, none after a keyword
    ("x.py", "from a import (\n" * 300_000),  # parentheses never closed
    ("x.py", '"""\\' * 300_000 + "\nimport a\n"),  # triple-quoted strings that never close
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("path", "text"), SLOW_BEFORE, ids=[f"{p}-{i}" for i, (p, _) in enumerate(SLOW_BEFORE)]
)
def test_a_file_built_to_be_slow_is_read_in_a_pass(path: str, text: str) -> None:
    assert isinstance(parse_imports(path, text), list)


def test_what_the_one_pass_readers_still_find() -> None:
    # A triple quote that never closes hides nothing after it, as before (a lone `"""` inside a short string
    # is one), and a later string of the other quote still hides what it holds.
    assert parse_imports("x.py", "'''\nimport a\n") == ["a"]
    assert parse_imports("x.py", "x = '\"\"\"'\nimport a\n'''\nimport b\n'''\n") == ["a"]
    assert parse_imports("x.rs", "use crate::a;\nuse ;\nuse crate::b;\n") == ["use:crate::a", "use:crate::b"]
    assert parse_imports("x.go", 'package p\nimport (\n\t"a/b"\n)\nimport ("c"\n') == ["a/b"]


def test_js_keyword_then_comment_lines_then_its_string_and_quotes_that_close_and_open() -> None:
    text = "import a from\n  // why this one\n  './a'\nx = '..//b from '../c'\n"
    # The string after comment lines keeps its keyword; a closing quote can open the next specifier.
    assert parse_imports("x.ts", text) == ["./a", "../c"]


# Strings over the characters the finders look for (Unicode blanks too: `\s` is `str.isspace`), so that
# openings, keywords and `::` fall everywhere, inside words and runs of each other.
_JS_PIECES = (
    "'",
    '"',
    ".",
    "./",
    "../",
    "'.",
    '".',
    "/",
    "x",
    " ",
    "\n",
    "from ",
    "import(",
    "'./a'",
    '"../b"',
)
_RUST_PIECES = (
    "crate",
    "super",
    "self",
    "::",
    ":",
    " ",
    "\t",
    "\n",
    "\x85",
    "\u2028",
    "\xa0",
    "my",
    "a",
    "_1",
    "{",
)


@pytest.mark.parametrize("seed", range(4))
def test_the_str_find_led_finders_find_what_their_patterns_would(seed: int) -> None:
    """The JS and Rust readers look for a relative specifier and an inline path where one can start
    (`str.find`), not by their regex's scan of every position: the same matches, in the same order."""
    from tether.repo import imports

    rng = random.Random(seed)
    for _ in range(2500):
        text = "".join(rng.choice(_JS_PIECES) for _ in range(rng.randint(0, 24)))
        quoted, pos = imports._Quoted(text), 0
        while pos <= len(text):
            want, got = imports._JS_QUOTED.search(text, pos), quoted.search(pos)
            assert (got and got.span()) == (want and want.span()), (text, pos)
            pos = want.start() + 1 if want else len(text) + 1
        text = "".join(rng.choice(_RUST_PIECES) for _ in range(rng.randint(0, 24)))
        want_paths = [m.span() for m in imports._at_word_start(imports._RUST_PATH, text)]
        assert [m.span() for m in imports._rust_paths(text)] == want_paths, text
