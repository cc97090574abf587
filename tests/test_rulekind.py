"""Rule kinds from wording and from what the rule file says (marker, section title)."""

from __future__ import annotations

import pytest

from tether.intake.rulefiles import split_rules
from tether.intake.rulekind import by_wording, classify


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        # prohibitions and obligations
        ("Never push to `main` directly.", "gotcha"),
        ("Do not edit generated files under `gen/`.", "gotcha"),
        ("No `print` in library code.", "gotcha"),
        ("Migrations must be reversible.", "gotcha"),
        ("Preserve the order of middleware when wrapping apps.", "gotcha"),
        ("When changing the schema, regenerate the client types.", "gotcha"),
        # choices between alternatives
        ("Use `uv`, not `pip`.", "decision"),
        ("Prefer function declarations over arrow functions.", "decision"),
        ("We use RFC 3339 for every timestamp.", "decision"),
        ("Use `expect` instead of `allow` for lints.", "decision"),
        # commands and facts
        ("Run `make test` before pushing.", "context"),
        ("Install dependencies: `pnpm install`", "context"),
        ("`src/tools/`: built-in tool implementations.", "context"),
        ("The UI uses React Router and Tailwind.", "context"),
        # conventions
        ("Keep functions short and named for what they return.", "pref"),
        ("Write docstrings that say why.", "pref"),
        ("Build the index map once, then look up in it.", "pref"),  # "Build" without a command
    ],
)
def test_by_wording(rule: str, expected: str) -> None:
    assert by_wording(rule, rule) == expected


def test_the_rule_file_overrides_the_wording() -> None:
    text = (
        "<!-- tether: pref -->\n- Never use tabs.\n\n## Decisions\n\n- Keep it small.\n\n"
        "## Style <!-- tether: context -->\n\n- Avoid globals.\n"
    )
    assert [classify(u, u.text) for u in split_rules("AGENTS.md", text)] == ["pref", "decision", "context"]


def test_table_rows_are_reference_and_examples_follow_their_section() -> None:
    rows = split_rules("AGENTS.md", "| Code | Use |\n|---|---|\n| 403 | Forbidden |\n| - | Never retry |\n")
    assert [classify(u, s) for u, s in zip(rows, ["403: Forbidden", "Never retry"], strict=True)] == [
        "context",
        "gotcha",
    ]
    (example,) = split_rules(
        "AGENTS.md", "## 3.1 Avoid ALTER TABLE DELETE\n\n**Incorrect:**\n\n```sql\nx\n```\n"
    )
    assert classify(example, "Incorrect (example).") == "gotcha"


# A clone's rule file could hold these to stall a sync: each made a pattern read to the end of the text again
# from every line (blank lines under a `\s*`, code fences that never close, a table separator's blanks).
# The timeout guards against hanging; each takes well under a second.
@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "text",
    [
        "\n" * 300_000 + "Never push to main.",
        "```\n" * 200_000,
        "".join("`" * (n + 3) + "\n" for n in range(3_000, 0, -1)),  # each fence longer than any after it
        "| a | b |\n|" + " " * 300_000 + "-\n| 1 | 2 |\n",
        "# Rules\n\n" + "<!-- -->" * 100_000 + "x\n\n- Never push.\n",  # comments, then not one
    ],
    ids=["blank-lines", "unclosed-fences", "shrinking-fences", "table-blanks", "comments"],
)
def test_a_rule_file_built_to_be_slow_is_read_in_a_pass(text: str) -> None:
    assert by_wording(text, "x") in ("gotcha", "decision", "context", "pref")
    split_rules("AGENTS.md", text)
