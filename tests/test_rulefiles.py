from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.errors import ValidationError
from tether.intake.rulefiles import (
    RuleUnit,
    find_rule_files,
    is_rule_file,
    read_rule_file,
    rule_scope,
    split_rules,
)


def _summary(units: list[RuleUnit]) -> list[tuple[int, int, str, str]]:
    return [(u.line, u.end_line, u.heading, u.text) for u in units]


NESTED = """\
# Project

## Testing

- Run `make test` before pushing.
- Fixtures:
  - `tmp_repo` makes a real git repo.
  - `db` is a real SQLite file.
    It is deleted after the test.
* Never mock `Store`.
"""

FENCED = """\
## Commands

Run the suite with:

```bash
make test
# all of it
```

- Format with `ruff format`.
  ```sh
  ruff format src
  ```
- Type check with `mypy`.
"""

TABLE = """\
# Layout

| dir | what |
|-----|------|
| `src/` | code |
| `tests/` | tests |

After the table, a paragraph
that spans two lines.
"""

LEAD_IN = """\
# Style

When adding a provider:
- Register it in `providers/__init__.py`.
- Add a test.

Plain paragraph rule.
"""

SETEXT_AND_COMMENTS = """\
Conventions
===========

<!-- generated: do not edit
   above -->
1. Use `uv run`.
2) Keep modules small.

---

Imports
-------
@docs/style.md

Prefer absolute imports.
"""

CASES = [
    (
        "nested bullets",
        "AGENTS.md",
        NESTED,
        [
            (5, 5, "Project > Testing", "- Run `make test` before pushing."),
            (
                6,
                9,
                "Project > Testing",
                "- Fixtures:\n  - `tmp_repo` makes a real git repo.\n  - `db` is a real SQLite file.\n"
                "    It is deleted after the test.",
            ),
            (10, 10, "Project > Testing", "* Never mock `Store`."),
        ],
    ),
    (
        "fences attach",
        "web/CLAUDE.md",
        FENCED,
        [
            (3, 8, "Commands", "Run the suite with:\n\n```bash\nmake test\n# all of it\n```"),
            (10, 13, "Commands", "- Format with `ruff format`.\n  ```sh\n  ruff format src\n  ```"),
            (14, 14, "Commands", "- Type check with `mypy`."),
        ],
    ),
    (
        "table is one unit",
        "GEMINI.md",
        TABLE,
        [
            (3, 6, "Layout", "| dir | what |\n|-----|------|\n| `src/` | code |\n| `tests/` | tests |"),
            (8, 9, "Layout", "After the table, a paragraph\nthat spans two lines."),
        ],
    ),
    (
        "lead-in becomes context",
        "AGENTS.md",
        LEAD_IN,
        [
            (4, 4, "Style > When adding a provider", "- Register it in `providers/__init__.py`."),
            (5, 5, "Style > When adding a provider", "- Add a test."),
            (7, 7, "Style", "Plain paragraph rule."),
        ],
    ),
    (
        "setext headings, comments, hrule, imports",
        "AGENTS.md",
        SETEXT_AND_COMMENTS,
        [
            (6, 6, "Conventions", "1. Use `uv run`."),
            (7, 7, "Conventions", "2) Keep modules small."),
            (15, 15, "Conventions > Imports", "Prefer absolute imports."),
        ],
    ),
    ("empty file", "AGENTS.md", "", []),
    ("only headings", "AGENTS.md", "# A\n\n## B\n", []),
    (
        "fence opening a section stands alone",
        "AGENTS.md",
        "## Build\n\n```\nmake\n```\n",
        [(3, 5, "Build", "```\nmake\n```")],
    ),
    (
        "unclosed fence runs to the end",
        "AGENTS.md",
        "- Do it:\n\n  ```py\n  x = 1\n",
        [(1, 4, "", "- Do it:\n\n  ```py\n  x = 1")],
    ),
]


@pytest.mark.parametrize(("name", "path", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_split_rules(name: str, path: str, text: str, expected: list[tuple[int, int, str, str]]) -> None:
    assert _summary(split_rules(path, text)) == expected


def test_crlf_gives_same_units_as_lf() -> None:
    assert _summary(split_rules("AGENTS.md", NESTED.replace("\n", "\r\n"))) == _summary(
        split_rules("AGENTS.md", NESTED)
    )


def test_bom_is_ignored() -> None:
    assert _summary(split_rules("AGENTS.md", "\ufeff" + LEAD_IN)) == _summary(
        split_rules("AGENTS.md", LEAD_IN)
    )


@pytest.mark.parametrize(
    ("front", "globs"),
    [
        ('globs: "src/**/*.ts, tests/**"', ("src/**/*.ts", "tests/**")),
        ("globs: [src/**/*.ts, 'lib/*.js']", ("src/**/*.ts", "lib/*.js")),
        ("globs:\n  - src/**\n  - docs/*.md", ("src/**", "docs/*.md")),
        ("globs:", ()),
        ("alwaysApply: true", ()),
    ],
)
def test_mdc_frontmatter(front: str, globs: tuple[str, ...]) -> None:
    text = f"---\ndescription: API conventions\n{front}\n---\n\n- Return `Result` types.\n"
    (unit,) = split_rules("pkg/.cursor/rules/api.mdc", text)
    assert unit.globs == globs
    assert unit.heading == "API conventions"
    assert unit.scope == "pkg/"
    assert unit.text == "- Return `Result` types."
    assert unit.line == text.splitlines().index("- Return `Result` types.") + 1


def test_frontmatter_of_markdown_rule_file_is_skipped_and_not_globs() -> None:
    (unit,) = split_rules("AGENTS.md", "---\nglobs: src/**\n---\nOne rule.\n")
    assert (unit.line, unit.text, unit.globs, unit.heading) == (4, "One rule.", (), "")


@pytest.mark.parametrize(
    ("path", "scope"),
    [
        ("AGENTS.md", ""),
        ("web/src/features/AGENTS.md", "web/src/features/"),
        (".cursor/rules/style.mdc", ""),
        ("apps/api/.cursor/rules/deep/db.mdc", "apps/api/"),
        (".github/copilot-instructions.md", ""),
        ("svc/.github/copilot-instructions.md", "svc/"),
    ],
)
def test_scope(path: str, scope: str) -> None:
    assert rule_scope(path) == scope
    assert all(u.scope == scope for u in split_rules(path, "- a rule\n"))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("AGENTS.md", True),
        ("a/b/CLAUDE.md", True),
        ("GEMINI.md", True),
        (".cursor/rules/x.mdc", True),
        (".cursor/rules/sub/x.mdc", True),
        (".cursor/x.mdc", False),
        ("rules/x.mdc", False),
        (".github/copilot-instructions.md", True),
        ("copilot-instructions.md", False),
        ("agents.md", False),
        ("README.md", False),
    ],
)
def test_is_rule_file(path: str, expected: bool) -> None:
    assert is_rule_file(path) is expected


def _write(root: Path, rel: str, text: str = "- rule\n") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def test_find_rule_files_walk_skips_ignored_dirs_and_symlink_copies(tmp_path: Path) -> None:
    for rel in [
        "AGENTS.md",
        "pkg/AGENTS.md",
        ".cursor/rules/a.mdc",
        ".github/copilot-instructions.md",
        "node_modules/dep/AGENTS.md",
        ".git/AGENTS.md",
        ".venv/lib/CLAUDE.md",
        "docs/guide.md",
    ]:
        _write(tmp_path, rel)
    os.symlink("AGENTS.md", tmp_path / "pkg" / "CLAUDE.md")  # a copy of pkg/AGENTS.md: skipped
    _write(tmp_path, "docs/GEMINI-src.md")
    os.symlink("GEMINI-src.md", tmp_path / "docs" / "GEMINI.md")  # points at a non-rule file: kept
    assert find_rule_files(tmp_path) == [
        ".cursor/rules/a.mdc",
        ".github/copilot-instructions.md",
        "AGENTS.md",
        "docs/GEMINI.md",
        "pkg/AGENTS.md",
    ]


def test_find_rule_files_uses_given_list(tmp_path: Path) -> None:
    files = ["AGENTS.md", "src/app.py", "vendor/x/CLAUDE.md", "web/.cursor/rules/r.mdc"]
    # The list is the truth (it came from git): files need not exist on disk, and nothing else is found.
    _write(tmp_path, "other/AGENTS.md")
    assert find_rule_files(tmp_path, files) == ["AGENTS.md", "vendor/x/CLAUDE.md", "web/.cursor/rules/r.mdc"]


def test_read_rule_file(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/AGENTS.md", "# T\n\n- Use `x`.\n")
    (unit,) = read_rule_file(tmp_path, "pkg/AGENTS.md")
    assert unit == RuleUnit("pkg/AGENTS.md", 3, 3, "- Use `x`.", "T", "pkg/", ())


def test_read_rule_file_rejects_non_utf8_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes("- caf\xe9 rule\n".encode("latin-1"))
    with pytest.raises(ValidationError, match=r"AGENTS\.md: rule file is not UTF-8"):
        read_rule_file(tmp_path, "AGENTS.md")


def test_read_rule_file_missing_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"gone/CLAUDE\.md: cannot read"):
        read_rule_file(tmp_path, "gone/CLAUDE.md")


def test_units_are_stable_under_unrelated_edits_below() -> None:
    before = split_rules("AGENTS.md", NESTED)
    after = split_rules("AGENTS.md", NESTED + "\n## More\n\n- New rule.\n")
    assert after[: len(before)] == before
    assert after[-1].text == "- New rule." and after[-1].heading == "Project > More"


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink-outside", "huge"])
def test_a_rule_file_that_is_no_file_of_the_repository_is_skipped_not_read(tmp_path: Path, kind: str) -> None:
    # A FIFO used to hang the sync (and every session start after it); a committed AGENTS.md linking to
    # ~/.bash_history put private text into every agent's context.
    root = tmp_path / "repo"
    root.mkdir()
    target = root / "AGENTS.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "symlink-outside":
        (tmp_path / "history").write_text("- ssh prod-db.internal with the root password\n", encoding="utf-8")
        target.symlink_to(tmp_path / "history")
    else:
        target.write_text("- rule\n" * 200_000, encoding="utf-8")
    with pytest.raises(ValidationError, match=r"AGENTS\.md: rule file skipped"):
        read_rule_file(root, "AGENTS.md")


def test_a_rule_file_linked_inside_the_repository_is_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text("- Use ruff.\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").symlink_to(tmp_path / "docs" / "rules.md")
    assert [u.text for u in read_rule_file(tmp_path, "CLAUDE.md")] == ["- Use ruff."]
