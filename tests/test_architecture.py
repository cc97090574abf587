"""The shape of the package (STYLE 1, 13): core is a library, adapters are thin and separate, docs match code.

Imports are read from the source with `ast`, lazy ones inside functions included: an import that only runs
on some path is still a dependency of the module.
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
README = ROOT / "README.md"

# Frameworks, network clients and database drivers the core must not depend on.
FORBIDDEN_IN_CORE = (
    "click",
    "mcp",
    "starlette",
    "uvicorn",
    "httpx",
    "psycopg",
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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def adapter_of(name: str) -> str | None:
    """Which adapter a module belongs to (`cli`, `hooks`, `mcp`, `install`, `ui`), or None."""
    parts = name.split(".")
    if parts[:2] == ["tether", "adapters"] and len(parts) > 2:
        return parts[2]
    return None


def is_core(name: str) -> bool:
    rest = name.removeprefix("tether.")
    return (
        name != "tether" and rest != "__main__" and not (rest == "adapters" or rest.startswith("adapters."))
    )


def imports(path: Path, name: str) -> set[str]:
    """Absolute names of every module `path` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
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
            # `from tether import hooks` imports the module tether.adapters.hooks; `from x import func` does not.
            found.update(
                f"{stem}.{alias.name}" for alias in node.names if f"{stem}.{alias.name}" in modules()
            )
    return found


def test_the_walk_sees_the_package() -> None:
    names = modules()
    assert {
        "tether.adapters.cli.main",
        "tether.workspace",
        "tether.store.sqlite.store",
        "tether.model.memory",
    } <= set(names)
    assert "click" in imports(names["tether.adapters.cli.main"], "tether.adapters.cli.main")
    assert "tether.store.sqlite.store" in imports(names["tether.workspace"], "tether.workspace")


CORE = sorted(name for name in modules() if is_core(name))


@pytest.mark.parametrize("name", CORE)
def test_core_imports_no_framework_or_db_driver(name: str) -> None:
    bad = sorted(
        imported for imported in imports(modules()[name], name) if imported.split(".")[0] in FORBIDDEN_IN_CORE
    )
    assert bad == [], f"{name} is core and imports {bad}: move that code into an adapter"


@pytest.mark.parametrize("name", CORE)
def test_core_imports_no_adapter(name: str) -> None:
    bad = sorted(i for i in imports(modules()[name], name) if i.startswith("tether.") and adapter_of(i))
    assert bad == [], f"{name} is core and imports the adapter(s) {bad}"


ADAPTER_MODULES = sorted(name for name in modules() if adapter_of(name))


# Known violations, each a strict xfail so the test fails again (XPASS) the day it is fixed.
KNOWN_CROSSINGS: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_CROSSINGS[n]))
        if n in KNOWN_CROSSINGS
        else n
        for n in ADAPTER_MODULES
    ],
)
def test_adapters_do_not_import_each_other(name: str) -> None:
    own = adapter_of(name)
    bad = sorted(
        imported
        for imported in imports(modules()[name], name)
        if imported.startswith("tether.") and adapter_of(imported) not in (None, own)
    )
    assert bad == [], f"{name} ({own} adapter) imports other adapters {bad}"


# -- the README's CLI section is what `--help` says -------------------------------------------------------


def readme_cli_lines() -> list[str]:
    if not README.exists():
        return []
    text = README.read_text(encoding="utf-8")
    section = re.search(r"^## CLI\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if section is None:
        return []
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
    if not lines:
        pytest.skip("README.md has no '## CLI' section with a code block of `tether ...` lines yet")
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
