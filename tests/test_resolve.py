"""Resolving specs against a file set: the module names a Python file answers to, and what one importer's
specs name (the counts over whole trees are in test_imports.py)."""

from __future__ import annotations

import pytest

from tether.repo.resolve import Resolver, package_dirs, python_module_index, python_names


@pytest.mark.parametrize(
    ("path", "files", "names"),
    [
        ("tools/run.py", [], {"run", "tools.run"}),  # not a package: its bare name, as scripts import it
        ("pkg/a.py", ["pkg/__init__.py"], {"pkg.a"}),
        ("pkg/__init__.py", ["pkg/__init__.py"], {"pkg"}),
        ("src/app/db/m.py", ["src/app/__init__.py", "src/app/db/__init__.py"], {"app.db.m", "src.app.db.m"}),
        ("svc/lib/app/m.py", ["svc/lib/app/__init__.py"], {"app.m", "svc.lib.app.m"}),
        ("__init__.py", [], set()),  # regression: a root-level one raised IndexError, failing the refresh
    ],
)
def test_python_names(path: str, files: list[str], names: set[str]) -> None:
    assert python_names(path, package_dirs([path, *files])) == names


def test_the_module_index_lists_every_file_under_each_of_its_names() -> None:
    files = {"svc_a/common.py", "svc_b/common.py", "pkg/__init__.py", "pkg/a.py", "notes.md"}
    index = python_module_index(files)
    assert sorted(index["common"]) == ["svc_a/common.py", "svc_b/common.py"]
    assert index["pkg.a"] == ["pkg/a.py"] and "notes" not in index


@pytest.mark.parametrize(
    ("importer", "specs", "targets"),
    [
        ("pkg/a.py", [".:b", "pkg.b:f", "os"], {"pkg/b.py"}),
        ("svc_a/run.py", ["common"], {"svc_a/common.py"}),  # the nearest of two candidates
        ("web/main.ts", ["./view.js", "./parts", "../outside"], {"web/view.ts", "web/parts/index.ts"}),
        (
            "crate/lib.rs",
            ["mod:net", "use:crate::net::wire::Frame"],
            {"crate/net/mod.rs", "crate/net/wire.rs"},
        ),
    ],
)
def test_targets(importer: str, specs: list[str], targets: set[str]) -> None:
    files = {
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/b.py",
        "svc_a/run.py",
        "svc_a/common.py",
        "svc_b/common.py",
        "web/main.ts",
        "web/view.ts",
        "web/parts/index.ts",
        "crate/lib.rs",
        "crate/net/mod.rs",
        "crate/net/wire.rs",
    }
    assert Resolver(files, {}).targets(importer, specs) == targets


def test_an_index_handed_in_is_the_one_used() -> None:
    # The incremental count resolves the old file set with an index derived from the new one's.
    files = {"a.py", "b.py"}
    resolver = Resolver(files, {}, py_modules={"b": ["elsewhere/b.py"]})
    assert resolver.targets("a.py", ["b"]) == {"elsewhere/b.py"}


def test_rust_paths_resolve_under_each_files_own_crate() -> None:
    """Crate roots are found once per directory: one resolver, asked deep files first, then a file of a
    crate nested in another's directory, then the outer crate's, gives each its own root."""
    files = {
        "lib.rs",  # a crate at the repository's root
        "util.rs",
        "core/src/lib.rs",
        "core/src/db/mod.rs",
        "core/src/db/pool/conn.rs",
        "core/src/net.rs",
        "core/src/tools/cli/main.rs",  # a crate inside the other's directory
        "core/src/tools/cli/args.rs",
        "core/src/tools/cli/net.rs",
    }
    resolver = Resolver(files, {})
    asked = [
        (
            "core/src/db/pool/conn.rs",
            ["use:super::super::super::net::Socket", "use:crate::db"],
            {"core/src/net.rs", "core/src/db/mod.rs"},
        ),
        (
            "core/src/tools/cli/args.rs",
            ["use:crate::net::x", "use:super::net"],
            {"core/src/tools/cli/net.rs"},
        ),
        (
            "core/src/db/mod.rs",
            ["use:self::pool::conn::C", "use:crate::net"],
            {"core/src/db/pool/conn.rs", "core/src/net.rs"},
        ),
        ("util.rs", ["use:crate::util::f", "use:crate::core::x"], {"util.rs"}),
    ]
    for importer, specs, targets in asked:
        assert resolver.targets(importer, specs) == targets, importer
