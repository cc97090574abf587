"""What a rule becomes as memory text: whole-sentence summaries, lead-ins kept with what they lead in,
units that carry no rule dropped, provenance out of the searchable text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.intake.rulefiles import split_rules
from tether.intake.ruletext import body_of, heading_of, render


def summaries(text: str, path: str = "AGENTS.md") -> list[str | None]:
    return [
        None if r is None else r.summary
        for r in (render(u, Path("/nowhere")) for u in split_rules(path, text))
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A hard-wrapped rule is one sentence, not its first line; the second sentence goes to details.
        ("- Never mock the store. Use a real\n  SQLite file.\n", ["Never mock the store."]),
        (
            "- Keep every public function\n  documented with an example.\n",
            ["Keep every public function documented with an example."],
        ),
        # A lead-in with its short list is one rule, the items in the summary.
        (
            "Before pushing, run:\n\n- `make lint`\n- `make test`\n",
            ["Before pushing, run: `make lint`, `make test`"],
        ),
        # A lead-in in front of a shell block: the commands complete it.
        ("Run from the repo root:\n\n```sh\nmake dev\n```\n", ["Run from the repo root: `make dev`"]),
        # A table row with its header dropped; the header and separator rows are no rules.
        ("| Group | File |\n|---|---|\n| api | `api.py` |\n", ["api: `api.py`"]),
        # No rule: a bare link, a table of contents, a directory tree.
        ("- [Style guide](docs/style.md)\n", [None]),
        ("## Layout\n\n```\nsrc/\n├── app/\n└── tests/\n```\n", [None]),
        # "e.g." and code do not end a sentence.
        ("Name tests e.g. `test_x.py`. Then more.\n", ["Name tests e.g. `test_x.py`."]),
        # A fragment of four words or fewer gets its section's title.
        ("## Frontend\n\n- Svelte with TypeScript\n", ["Frontend: Svelte with TypeScript"]),
    ],
)
def test_summaries(text: str, expected: list[str | None]) -> None:
    assert summaries(text) == expected


def test_an_over_long_sentence_is_cut_at_a_clause_never_mid_word() -> None:
    clause = "Order the required fields of every model before the optional ones"
    text = f"- {clause} — Python requires it for dataclasses, " + "and " * 40 + "more.\n"
    (summary,) = summaries(text)
    assert summary == clause + "."
    (unit,) = split_rules("AGENTS.md", "- " + " ".join(f"word{n}" for n in range(60)) + "\n")
    item = render(unit, Path("."))
    assert item is not None and len(item.summary) <= 160 and item.summary.endswith("…")
    assert item.summary.removesuffix("…").split()[-1].startswith("word")  # a whole word before the cut
    assert item.details.startswith("word0 word1")  # the whole rule is in the details


def test_provenance_is_not_in_the_text_and_reads_back() -> None:
    (unit,) = split_rules(
        "pkg/AGENTS.md", "# Rules for pkg\n\n## Testing\n\n- Use `pytest` for every test file.\n"
    )
    item = render(unit, Path("."))
    assert item is not None
    assert (
        "AGENTS.md" not in item.details
        and "Rule from" not in item.details
        and "Rules for" not in item.details
    )
    assert item.details == "§ Testing" and heading_of(item.details) == "Testing"
    assert body_of(item.summary, item.details) == "Use `pytest` for every test file."
    assert item.files == ("pkg/",)


def test_render_version_1_details_still_read_back() -> None:
    details = "more text\n\nRule from AGENTS.md › Project > Testing"
    assert heading_of(details) == "Project > Testing"
    assert body_of("Use pytest.", details) == "Use pytest.\nmore text"


def test_a_long_lead_in_stays_in_the_details() -> None:
    lead = "When you add a provider, do all of the following steps in the right order"
    (unit,) = split_rules(
        "AGENTS.md", f"{lead}:\n\n- Register it in `providers/__init__.py` with its default model.\n"
    )
    item = render(unit, Path("."))
    assert item is not None and item.summary.startswith("Register it")
    assert item.details.startswith(lead + ":")


def test_marked_core_and_category() -> None:
    (unit,) = split_rules("AGENTS.md", "<!-- tether: decision, core -->\n- Keep modules under 400 lines.\n")
    item = render(unit, Path("."))
    assert item is not None and item.core and item.category == "decision"
    assert "tether:" not in item.summary + item.details


def test_a_cut_never_falls_inside_code() -> None:
    text = (
        "- For every option include "
        + "word " * 20
        + '`#[serde(skip_serializing_if = "Option::is_none")]` '
        + "x " * 30
        + "\n"
    )
    (summary,) = summaries(text)
    assert summary is not None and summary.count("`") % 2 == 0 and summary.endswith("…")
