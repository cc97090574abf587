"""The shape of the package (STYLE 1-6, 13; DESIGN §9): layers by package, arrows pointing down only.

Imports are read from the source with `ast`, lazy ones inside functions included (an import that only runs
on some path is still a dependency), those under `if TYPE_CHECKING:` left out (they never run).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tether.__main__ import build_cli

cli = build_cli()  # the CLI as users get it, with the commands the composition root attaches

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tether"
TESTS = ROOT / "tests"
README = ROOT / "README.md"

# Bottom first. A module may import modules of its own package and of any lower layer; two packages of one
# layer never import each other (the adapters, the store backends). Within a layer's tuple, each entry is a
# package (or module) of its own.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("tether.errors",),
    ("tether.model",),
    ("tether.fs", "tether.detach"),
    ("tether.transport",),
    ("tether.config", "tether.project"),
    ("tether.store.base",),
    ("tether.store.memory", "tether.store.sqlite", "tether.store.postgres"),
    ("tether.repo",),
    ("tether.anchors",),
    ("tether.embed",),
    ("tether.notes",),
    ("tether.memories",),
    ("tether.recall",),
    ("tether.intake",),
    ("tether.lifecycle",),
    ("tether.workspace",),
    ("tether",),
    (
        "tether.adapters.cli",
        "tether.adapters.hooks",
        "tether.adapters.mcp",
        "tether.adapters.install",
        "tether.adapters.ui",
    ),
    # The resident process composes the adapters (hooks and read commands over one open workspace).
    ("tether.resident",),
    ("tether.__main__",),
)
# Only the composition (`workspace`, which opens the index) and the backends themselves name a backend: the
# rest of the core sees `tether.store.base` only.
MAY_NAME_A_BACKEND = (
    "tether.workspace",
    # A quiet session start opens the index file as `workspace` does, without the store's protocols.
    "tether.quickstart",
    "tether.store.memory",
    "tether.store.sqlite",
    "tether.store.postgres",
)
# Database drivers, and who may import them.
DRIVERS = {
    "sqlite3": "tether.store.sqlite",
    "psycopg": "tether.store.postgres",
    "psycopg_pool": "tether.store.postgres",
}
# Frameworks and network clients the core must not depend on (adapters may).
FORBIDDEN_IN_CORE = (
    "click",
    "mcp",
    "starlette",
    "uvicorn",
    "httpx",
    "psycopg2",
    "asyncpg",
    "pg8000",
    "pymysql",
    "MySQLdb",
    "mysql",
    "sqlalchemy",
    "apsw",
    "duckdb",
    "pymongo",
    "redis",
)
# STYLE 2: review anything over ~400 lines, split anything over ~600. The reviewed ones, and why they stay whole.
SPLIT_OVER = 600
REVIEWED_OVER_400 = {
    "tether.store.sqlite.store": "one class implementing five protocols over one connection; its SQL reads best together",
    "tether.repo.git": "the git processes the repo map and recall start and the parse of what they print: the settings that keep git off the network (`_SETTINGS`) cover each such call while they share one module",
    "tether.store.memory": "the reference store: every protocol in plain Python, mirroring store.sqlite",
    "tether.store.postgres.store": "one class implementing three protocols over one pool, like store.sqlite.store (its search and event SQL live beside it)",
    "tether.intake.rulefiles": "finding rule files and splitting parsed markdown into line-anchored units: the block walk and the merges that fold lead-ins, examples and loose tables read best together",
    "tether.memories": "every write (add, edit, pin, archive, supersede, ack) under one lock and one admission check; splitting them would split the lock discipline",
    "tether.model.secrets": "the credential rules table (66 provider formats and the context rules) and its engine",
    "tether.adapters.ui.core": "the UI's one seam to the core: every library call of the web app in one place",
    "tether.recall.recaller": "one ranking with four entries (recall, search, explain, order) and the channel methods the quality benchmark's variants override: split, the entries would each reach into another module's privates",
}
# A module's tests live in `tests/test_<name>.py` for one of its dotted name's tails (`test_map.py` or
# `test_repo_map.py` for `tether.repo.map`), or in the topical file named here.
TESTED_IN = {
    "tether": "test_architecture.py",
    "tether.__main__": "test_cli.py",
    "tether.errors": "test_cli.py",
    "tether.adapters.install.notes": "test_install.py",
    "tether.config.database": "test_team.py",
    "tether.model.display": "test_display.py",
    "tether.model.prompt": "test_text.py",
    "tether.adapters.hooks.gotchas": "test_hooks.py",
    "tether.model.secret_values": "test_secrets.py",
    "tether.store.base": "test_store_contract.py",
    "tether.store.memory": "test_store_contract.py",
    "tether.store.sqlite.errors": "test_sqlite_store.py",
    "tether.store.sqlite.recovery": "test_workspace.py",
    "tether.store.sqlite.schema": "test_sqlite_store.py",
    "tether.store.sqlite.repomap": "test_repomap.py",
    "tether.store.postgres.connect": "test_team.py",
    "tether.store.postgres.driver": "test_postgres_store.py",
    "tether.store.postgres.errors": "test_postgres_store.py",
    "tether.store.postgres.eventlog": "test_postgres_store.py",
    "tether.store.postgres.rows": "test_postgres_store.py",
    "tether.store.postgres.schema": "test_postgres_store.py",
    "tether.store.postgres.search": "test_postgres_store.py",
    "tether.store.postgres.tenancy": "test_team.py",
    "tether.adapters.cli.store": "test_team.py",
    "tether.repo.map": "test_repomap.py",
    "tether.repo.git": "test_repomap.py",
    "tether.repo.sources": "test_repomap.py",
    "tether.repo.refresh": "test_repomap.py",
    "tether.repo.inthread": "test_repomap.py",
    "tether.repo.watermark": "test_repomap.py",
    "tether.embed.base": "test_embedders.py",
    "tether.embed.hashed": "test_embedders.py",
    "tether.embed.policy": "test_embed_service.py",
    "tether.embed.providers": "test_embedders.py",
    "tether.embed.providers._common": "test_embedders.py",
    "tether.embed.providers.fastembed": "test_embedders.py",
    "tether.embed.providers.http": "test_embedders.py",
    "tether.embed.providers.sentence_transformers": "test_embedders.py",
    "tether.embed.warm.client": "test_embed_service.py",
    "tether.embed.warm.server": "test_embed_service.py",
    "tether.notes.format": "test_notes.py",
    "tether.notes.pending": "test_review.py",
    "tether.adapters.mcp.stdio": "test_mcp_server.py",
    "tether.lifecycle.incoming": "test_review.py",
    "tether.recall.recaller": "test_recall.py",
    "tether.recall.channels": "test_recall.py",
    "tether.recall.evidence": "test_recall.py",
    "tether.intake.seeds": "test_intake.py",
    "tether.intake.autodistill": "test_distill.py",
    "tether.intake.distill_state": "test_distill.py",
    "tether.intake.jsonl": "test_workspace.py",
    "tether.lifecycle.archive": "test_lifecycle.py",
    "tether.lifecycle.cleanup": "test_lifecycle.py",
    "tether.lifecycle.passes": "test_lifecycle.py",
    "tether.lifecycle.stats": "test_cli_lifecycle.py",
    "tether.lifecycle.doctor": "test_notes.py",
    "tether.adapters.cli.common": "test_cli.py",
    "tether.adapters.cli.main": "test_cli.py",
    "tether.adapters.cli.memories": "test_cli.py",
    "tether.adapters.cli.project": "test_cli.py",
    "tether.adapters.cli.recall": "test_cli.py",
    "tether.adapters.cli.lifecycle": "test_cli_lifecycle.py",
    "tether.adapters.cli.intake": "test_cli_lifecycle.py",
    "tether.adapters.cli.embedder": "test_embed_service.py",
    "tether.adapters.cli.demo": "test_demo.py",
    "tether.adapters.hooks": "test_hooks.py",
    "tether.adapters.hooks.agents": "test_hooks.py",
    "tether.adapters.hooks.behaviour": "test_hooks.py",
    "tether.adapters.hooks.command": "test_hooks.py",
    "tether.adapters.hooks.session": "test_hooks.py",
    "tether.adapters.mcp": "test_mcp_server.py",
    "tether.adapters.mcp.command": "test_mcp_server.py",
    "tether.adapters.mcp.memories": "test_mcp_server.py",
    "tether.adapters.mcp.results": "test_mcp_server.py",
    "tether.adapters.mcp.server": "test_mcp_server.py",
    "tether.adapters.mcp.tools": "test_mcp_server.py",
    "tether.adapters.install": "test_install.py",
    "tether.adapters.install.commands": "test_install.py",
    "tether.adapters.install.files": "test_install.py",
    "tether.adapters.install.installer": "test_install.py",
    "tether.adapters.install.jsonconf": "test_install.py",
    "tether.adapters.install.specs": "test_install.py",
    "tether.adapters.install.tomlconf": "test_install.py",
    "tether.recall.block": "test_hooks.py",
    "tether.recall.work": "test_hooks.py",
    "tether.resident.answers": "test_resident.py",
    "tether.resident.client": "test_resident.py",
    "tether.resident.command": "test_resident.py",
    "tether.resident.launch": "test_resident.py",
    "tether.resident.server": "test_resident.py",
    "tether.model.anchor": "test_anchors.py",
    "tether.anchors.fingerprint": "test_anchors.py",
    "tether.anchors.symbols": "test_anchors.py",
    "tether.anchors.resolve": "test_anchors.py",
    "tether.anchors.locations": "test_anchors.py",
}
# Whole packages whose modules share one topical test file.
TESTED_IN_PACKAGE = {"tether.adapters.ui": "test_ui.py"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = modules()


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def imports(path: Path, name: str) -> set[str]:
    """Absolute names of every module `path` imports (lazy ones too, `TYPE_CHECKING` ones not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            # `from tether import lifecycle` imports the module tether.lifecycle; `from x import func` does not.
            found.update(f"{stem}.{alias.name}" for alias in node.names if f"{stem}.{alias.name}" in MODULES)
    return found


def place(name: str) -> tuple[int, str]:
    """(layer index, the layer entry holding `name`), the most specific entry winning."""
    best: tuple[int, str] | None = None
    for index, layer in enumerate(LAYERS):
        for entry in layer:
            if (name == entry or name.startswith(entry + ".")) and (
                best is None or len(entry) > len(best[1])
            ):
                best = (index, entry)
    assert best is not None, f"{name} is in no layer of LAYERS: add it where it belongs"
    return best


def tether_imports(name: str) -> set[str]:
    return {i for i in imports(MODULES[name], name) if i == "tether" or i.startswith("tether.")}


def is_core(name: str) -> bool:
    return name not in ("tether", "tether.__main__") and not name.startswith(
        ("tether.adapters", "tether.resident")
    )


CORE = sorted(name for name in MODULES if is_core(name))


def test_the_walk_sees_the_package() -> None:
    assert {
        "tether.adapters.cli.main",
        "tether.workspace",
        "tether.store.sqlite.store",
        "tether.model.memory",
    } <= set(MODULES)
    assert "click" in imports(MODULES["tether.adapters.cli.main"], "tether.adapters.cli.main")
    assert "tether.store.sqlite.store" in tether_imports("tether.workspace")
    # TYPE_CHECKING imports are not dependencies; lazy ones in functions are.
    assert "tether.embed.warm.client" in tether_imports("tether.embed.policy")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_arrows_point_down(name: str) -> None:
    layer, entry = place(name)
    bad = []
    for imported in sorted(tether_imports(name)):
        if imported == "tether" and name != "tether.__main__" and not name.startswith("tether.adapters"):
            bad.append(imported)
            continue
        other_layer, other_entry = place(imported)
        if other_layer > layer or (other_layer == layer and other_entry != entry):
            bad.append(imported)
    assert bad == [], f"{name} (layer {entry}) imports {bad} from its own layer's neighbours or above"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_composition_and_backends_name_a_backend(name: str) -> None:
    if name.startswith(MAY_NAME_A_BACKEND) or not is_core(name):
        return
    bad = sorted(
        i
        for i in tether_imports(name)
        if i.startswith(("tether.store.sqlite", "tether.store.memory", "tether.store.postgres"))
    )
    assert bad == [], f"{name} names a store backend {bad}: type it against tether.store.base"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_a_backend_imports_its_driver(name: str) -> None:
    for imported in imports(MODULES[name], name):
        owner = DRIVERS.get(imported.split(".")[0])
        assert owner is None or name.startswith(owner), f"{name} imports {imported}: only {owner} may"


@pytest.mark.parametrize("name", CORE)
def test_core_imports_no_framework(name: str) -> None:
    bad = sorted(i for i in imports(MODULES[name], name) if i.split(".")[0] in FORBIDDEN_IN_CORE)
    assert bad == [], f"{name} is core and imports {bad}: move that code into an adapter"


def test_no_import_cycles() -> None:
    graph = {name: {i for i in tether_imports(name) if i in MODULES and i != name} for name in MODULES}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend([*trail[trail.index(nxt) :], nxt] if nxt in trail else [node, nxt])
                return True
            if nxt not in state and visit(nxt, [*trail, nxt]):
                return True
        state[node] = 2
        return False

    for name in sorted(MODULES):
        if name not in state and visit(name, [name]):
            break
    # A package's `__init__` re-exporting its modules and those modules importing a sibling through the
    # package are the same dependency, not a cycle of design: only cycles between distinct modules count.
    assert cycle == [], f"import cycle: {' -> '.join(cycle)}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_size(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= SPLIT_OVER, f"{name} has {lines} lines: split it (STYLE 2)"
    if lines > 400:
        assert name in REVIEWED_OVER_400, (
            f"{name} has {lines} lines: review it, split it or say why it stays whole"
        )


def test_reviewed_modules_are_still_over_400() -> None:
    small = [n for n in REVIEWED_OVER_400 if len(MODULES[n].read_text(encoding="utf-8").splitlines()) <= 400]
    assert small == [], f"no longer over 400 lines, drop from REVIEWED_OVER_400: {small}"


PACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_says_what_lives_there_and_what_it_may_import(name: str) -> None:
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text(encoding="utf-8"))) or ""
    assert doc.strip(), f"{name}/__init__.py has no docstring saying what lives there"
    assert "import" in doc.lower(), f"{name}/__init__.py does not say what it may import"


def test_public_api_is_small_and_sorted() -> None:
    import tether

    assert tether.__all__ == sorted(tether.__all__) == sorted(tether._WHERE)
    assert {"Workspace", "Memory", "Query", "TetherError"} <= set(tether.__all__)
    for name in tether.__all__:
        assert hasattr(tether, name), name


@pytest.mark.parametrize("name", sorted(MODULES))
def test_tests_mirror_modules(name: str) -> None:
    if (
        MODULES[name].name == "__init__.py"
        and name not in TESTED_IN
        and len(MODULES[name].read_text().splitlines()) < 60
    ):
        return  # a package's short __init__ (docs and re-exports)
    parts = name.split(".")[1:]
    candidates = {f"test_{'_'.join(parts[i:])}.py" for i in range(len(parts))}
    if name in TESTED_IN:
        candidates.add(TESTED_IN[name])
    candidates.update(f for pkg, f in TESTED_IN_PACKAGE.items() if name.startswith(pkg + "."))
    assert any((TESTS / c).exists() for c in candidates), (
        f"no test file for {name}: expected one of {sorted(candidates)}"
    )


# -- the README's CLI section is what `--help` says -------------------------------------------------------


def readme_cli_lines() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## CLI\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert section is not None, "README.md has no '## CLI' section"
    lines: list[str] = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", section.group(1), re.S):
        lines += [line.strip() for line in block.splitlines() if line.strip().startswith("tether ")]
    return lines


def help_text(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], prog_name="tether")
    assert result.exit_code == 0, result.output
    return result.output


def test_readme_cli_section_matches_help() -> None:
    lines = readme_cli_lines()
    assert len(lines) >= 10, "the README's CLI section lists the commands"
    top = help_text()
    problems: list[str] = []
    for line in lines:
        words = line.split()[1:]
        command = words[0]
        if command not in cli.commands:
            problems.append(f"{line!r}: no command {command!r} in `tether --help`")
            continue
        assert re.search(rf"^\s+{re.escape(command)}\s", top, re.M), f"{command} missing from top-level help"
        # Descend into groups (`tether rules sync`): the options belong to the subcommand.
        path = [command]
        current = cli.commands[command]
        rest = words[1:]
        while isinstance(current, click.Group) and rest and rest[0] in current.commands:
            current = current.commands[rest[0]]
            path.append(rest.pop(0))
        text = help_text(*path)
        for option in re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", " ".join(rest)):
            if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text):
                problems.append(f"{line!r}: option {option} is not in `tether {' '.join(path)} --help`")
    assert problems == []


def test_every_command_and_option_has_help() -> None:
    missing: list[str] = []
    commands: list[tuple[str, click.Command]] = list(cli.commands.items())
    while commands:
        name, command = commands.pop()
        if not (command.help or "").strip():
            missing.append(name)
        if isinstance(command, click.Group):
            commands += [(f"{name} {sub}", c) for sub, c in command.commands.items()]
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "help", None):
                missing.append(f"{name} {param.opts[0]}")
    assert sorted(missing) == []


def test_readme_code_map_names_every_package() -> None:
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^### Code map\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert section is not None, "README.md has no '### Code map'"
    named = set(re.findall(r"`tether/([\w./]+?)/?`", section.group(1)))
    top = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    top |= {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    assert top <= named, f"the code map misses {sorted(top - named)}"
    assert named <= top, f"the code map names what does not exist: {sorted(named - top)}"
