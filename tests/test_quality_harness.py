"""The quality evaluation's own machinery (benchmarks/quality), on data made here: labels, metrics, retriever.

The real corpora need fetched mirrors that CI does not have; these tests keep the pieces honest without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import git

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "quality"))

from build import build_memories, code_only, identifiers, label
from corpus import Corpus, MemoryItem, Task, TaskView
from evaluate import Result, bootstrap_ci, paired_differences
from tether_retriever import TetherRetriever


@pytest.mark.parametrize(
    "rule, expected",
    [
        ("Use `renderWithProviders` from test-utils.", {"renderWithProviders"}),
        ("Call `Agent(...)` with `deps_type`.", {"Agent", "deps_type"}),
        ("Run `make test` before pushing.", set()),  # a command, not a name
        ("See `src/app/main.py` and `https://example.com`.", set()),  # paths and URLs
        ("Prefer `httpx` over `requests`.", set()),  # lowercase words may be English
        ("```\n`InsideFence`\n```\nOutside.", set()),  # fenced code is not a back-ticked name
    ],
)
def test_identifiers_keep_code_names_only(rule: str, expected: set[str]) -> None:
    assert identifiers(rule) == expected


def _item(mid: str, text: str, scope: str) -> MemoryItem:
    return MemoryItem(mid, f"{scope}AGENTS.md", 1, 1, text, "", scope, (), text[:160])


def test_a_rule_is_relevant_when_its_name_is_added_inside_its_scope() -> None:
    memories = [
        _item("r1", "Wrap renders in `renderWithProviders`.", "web/"),
        _item("r2", "Errors subclass `ApiError`.", "api/"),
    ]
    tasks = [
        Task("c1", "dev", "add a test", ("web/a.test.tsx",), {"web/a.test.tsx": "renderWithProviders(<A/>)"}),
        Task(
            "c2", "dev", "api error", ("web/b.ts",), {"web/b.ts": "class E extends ApiError {}"}
        ),  # out of scope
    ]
    # Names found in more than ~5% of tasks are dropped as too common: pad with unrelated tasks.
    tasks += [Task(f"f{n}", "dev", "chore", ("web/c.ts",), {"web/c.ts": f"x = {n}"}) for n in range(40)]
    relevant, _ = label(memories, tasks)
    assert [m.id for m in relevant["c1"]] == ["r1"]
    assert relevant["c2"] == []


@pytest.mark.parametrize(
    "path, added, expected",
    [
        ("a.py", "x = Foo()  # Foo again", "x = Foo()  "),
        ("a.py", "# only Foo here", ""),
        ("a.py", "s = 'a # not a comment'", "s = 'a # not a comment'"),  # inside a string
        ("a.sh", 'echo "$#" $x', 'echo "$#" $x'),  # `$#` is not a comment
        ("ci.yml", "url: https://x.org/#Foo", "url: https://x.org/#Foo"),  # `#` inside a word
        ("a.ts", "const a = Foo(); // Foo", "const a = Foo(); "),
        ("a.ts", "  /* Foo */ bar(); /* Foo", "   bar(); "),
        ("a.ts", " * Foo in a block comment\n */\nbar()", "bar()"),
        ("a.ts", "const u = 'http://x/Foo'", "const u = 'http://x/Foo'"),  # `//` in a string
        ("lib.rs", "/// Foo docs\nfn f<'a>(x: &'a str) {} // Foo", "\nfn f<'a>(x: &'a str) {} "),
        ("main.go", "s := `a // b` // Foo", "s := `a // b` "),
        ("README.md", "# Foo heading", "# Foo heading"),  # other files are kept as they are
    ],
)
def test_code_only_drops_comments(path: str, added: str, expected: str) -> None:
    assert code_only(path, added) == expected


def test_a_name_only_in_a_comment_labels_nothing() -> None:
    memories = [_item("r1", "Wrap renders in `renderWithProviders`.", "web/")]
    tasks = [
        Task("c1", "dev", "t", ("web/a.ts",), {"web/a.ts": "// TODO: use renderWithProviders\nx()"}),
        Task("c2", "dev", "t", ("web/b.ts",), {"web/b.ts": "renderWithProviders(<A/>) // render"}),
    ]
    tasks += [Task(f"f{n}", "dev", "chore", ("web/c.ts",), {"web/c.ts": f"x = {n}"}) for n in range(40)]
    relevant, _ = label(memories, tasks)
    assert relevant["c1"] == []
    assert [m.id for m in relevant["c2"]] == ["r1"]


def test_a_claude_md_that_only_imports_agents_md_adds_no_rules(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "web").mkdir(parents=True)
    (repo / "web" / "AGENTS.md").write_text("# Web\n\n- Wrap renders in `renderWithProviders`.\n")
    (repo / "web" / "CLAUDE.md").write_text("@AGENTS.md\n")
    (repo / "CLAUDE.md").write_text("- Run `make lint` before pushing.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c1")
    memories, sizes = build_memories(repo / ".git", git(repo, "rev-parse", "HEAD").strip())
    assert sorted(sizes) == ["CLAUDE.md", "web/AGENTS.md"]
    assert {m.path for m in memories} == {"CLAUDE.md", "web/AGENTS.md"}


def test_bootstrap_interval_brackets_the_mean() -> None:
    assert bootstrap_ci([0.5] * 20) == (0.5, 0.5)
    low, high = bootstrap_ci([0.0] * 10 + [1.0] * 10)
    assert low < 0.5 < high


def test_tether_retriever_finds_the_scoped_rule_for_a_touched_file(tmp_path: Path) -> None:
    repo = tmp_path / "upstream"
    (repo / "web" / "src").mkdir(parents=True)
    (repo / "api").mkdir()
    (repo / "web" / "src" / "Button.test.tsx").write_text("test('x', () => {})\n")
    (repo / "api" / "server.py").write_text("x = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c1")
    c1 = git(repo, "rev-parse", "HEAD").strip()
    memories = [
        _item("web-test", "Tests render components with `renderWithProviders` and snapshot them.", "web/"),
        _item("web-style", "Styles live in CSS modules next to the component.", "web/"),
        _item("api-errors", "API errors use the `ApiError` envelope.", "api/"),
    ]
    corpus = Corpus("synthetic", "x/y", c1, c1, str(repo / ".git"), memories, [], {})
    retriever = TetherRetriever("tether-test")
    retriever.prepare(corpus)
    found = retriever.retrieve(
        TaskView("add a test for the button", ("web/src/Button.test.tsx",)), "prompt+files"
    )
    assert found[0] == "web-test"
    assert "api-errors" not in found
    assert retriever.tokens(TaskView("", ()), "prompt+files") > 0


def test_paired_differences_pair_tasks_and_bracket_the_mean() -> None:
    def result(system: str, recall: list[float]) -> Result:
        r = Result("all", system, "prompt+files")
        r.recall.extend(recall)
        return r

    text = paired_differences([result("bm25", [0.0, 0.5, 1.0, 0.0]), result("tether", [1.0, 0.5, 1.0, 1.0])])
    row = text.splitlines()[-1]
    assert row.startswith("| tether | prompt+files | 4 | +0.500 [")
    low, high = (float(x) for x in row.split("[")[1].rstrip(" |]").split(","))
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    same = paired_differences([result("bm25", [0.5] * 5), result("tether", [0.5] * 5)])
    assert same.splitlines()[-1] == "| tether | prompt+files | 5 | +0.000 [+0.00, +0.00] |"
