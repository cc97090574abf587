"""The import-line scan against a full parse (`ast`): the same specs on this repository's own files, and the
same fan-in over them; plus the shapes a scan must get right."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tether.repo.fanin import fan_in
from tether.repo.imports import language_of, parse_imports
from tether.repo.pyscan import python_specs

ROOT = Path(__file__).resolve().parents[1]


def parsed_specs(text: str) -> list[str]:
    """What the repo map read with `ast` before the scan replaced it: the reference."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            out.extend(f"{module}:{alias.name}" for alias in node.names)
    return out


def own_python_files() -> dict[str, str]:
    files = {}
    for top in ("src", "tests", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            files[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return files


def test_the_scan_reads_the_same_imports_as_a_parse_on_this_repository() -> None:
    files = own_python_files()
    assert len(files) > 100
    differ = {
        path: (sorted(set(python_specs(text))), sorted(set(parsed_specs(text))))
        for path, text in files.items()
        if set(python_specs(text)) != set(parsed_specs(text))
    }
    assert differ == {}


def test_the_scan_gives_the_same_fan_in_as_a_parse_on_this_repository() -> None:
    files = own_python_files()
    scanned = {p: parse_imports(p, t) for p, t in files.items() if language_of(p)}
    parsed = {p: list(dict.fromkeys(parsed_specs(t))) for p, t in files.items()}
    by_scan = fan_in(set(files), scanned)
    assert by_scan == fan_in(set(files), parsed)
    assert by_scan.get("src/tether/errors.py", 0) > 20  # the comparison has something to compare


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import os\n", ["os"]),
        ("import a.b as c, d\n", ["a.b", "d"]),
        ("from . import x\n", [".:x"]),
        (
            "from ..pkg.mod import (  # (a comment)\n    a,  # why)\n    b as c,\n)\n",
            ["..pkg.mod:a", "..pkg.mod:b"],
        ),
        ("from m import a, \\\n    b\n", ["m:a", "m:b"]),
        ("from m import *\n", ["m:*"]),
        ("if TYPE_CHECKING:\n    from x.y import Z\n", ["x.y:Z"]),
        ("def f():\n    import late  # deferred\n", ["late"]),
        ('"""Usage:\n\n    from tether import Workspace\n"""\nimport real\n', ["real"]),
        ("x = '''\nimport fake\n'''\n", []),
        ('"""a \\""" b\nimport fake\n"""\n', []),  # an escaped quote does not end the string
        ("important = 1\nfrom_here = 2\nimport_x()\n", []),
        ("# import commented\n", []),
        ("print('import x')\n", []),
        ("", []),
    ],
)
def test_scan_shapes(text: str, expected: list[str]) -> None:
    assert python_specs(text) == expected
    if expected:
        assert python_specs(text) == parsed_specs(text)  # where a parse succeeds, it agrees


def test_a_file_that_does_not_parse_still_has_its_import_lines() -> None:
    assert python_specs("def (:\nimport app.core\n") == ["app.core"]
    assert parsed_specs("def (:\nimport app.core\n") == []


@pytest.mark.parametrize(
    "text",
    [
        "x = '''\nimport a\n",  # an unterminated string hides nothing
        'import a """\nimport b\n"""\nimport c',
        "'''''' import x\nimport y",
        '"""a\\"""" import z\n"""\nimport w',  # an escaped quote inside: the regex ends the string
        "from a import (b,\n '''c''')\nimport d",
        'def f():\n    """Doc."""\n    import inner\n    return inner\n"""\nimport hidden\n"""\n',
        "x = 1; import after_semicolon\nimportant = 2\n  import indented as i, other\n",
        # Docstrings after the last import (the scan stops at the last "import"), and one only in a string.
        "import a\n\ndef f():\n    \"\"\"F.\"\"\"\n\ndef g():\n    '''G.'''\n",
        'import a\n"""\nimport not_this\n"""\ndef f():\n    """F."""\n',
        "",
    ],
)
def test_the_jumping_scan_finds_what_the_regex_alone_finds(text: str) -> None:
    # `python_specs` jumps between triple quotes and lines holding "import" with str.find; the reference
    # is the one regex tried at every character.
    from tether.repo import pyscan

    reference = [m for m in pyscan._SCAN.finditer(text) if m.group("string") is None]
    assert [m.span() for m in pyscan._statements(text)] == [m.span() for m in reference]
