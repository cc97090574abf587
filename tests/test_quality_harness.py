"""The quality evaluation's own machinery (benchmarks/quality), on data made here: labels, metrics, retriever.

The real corpora need fetched mirrors that CI does not have; these tests keep the pieces honest without them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "quality"))

import corpus as corpus_module
from build import build_memories, code_only, identifiers, label
from corpus import Corpus, Doc, MemoryItem, Task, TaskView, docs_of
from evaluate import (
    BASELINES,
    BM25Retriever,
    RecentRetriever,
    Result,
    Run,
    ScopeBM25Retriever,
    against_strongest,
    bootstrap_ci,
    budget_recall,
    evaluate,
    load_labels,
    paired_differences,
    score,
    strongest,
)
from judged import agreement, drop_judged, judged_labels, located
from online import replay
from product import Project, attach
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


def _commit(repo: Path, message: str, when: str) -> str:
    """Commit everything with author and committer dates set to `when`."""
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    for args in (
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", message],
    ):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return git(repo, "rev-parse", "HEAD").strip()


def _rule_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository at C1 with rule files in web/ and api/ and a root AGENTS.md."""
    repo = tmp_path / "upstream"
    (repo / "web" / "src").mkdir(parents=True)
    (repo / "api").mkdir()
    (repo / "web" / "src" / "Button.test.tsx").write_text("test('x', () => {})\n")
    (repo / "api" / "server.py").write_text("x = 1\n")
    (repo / "AGENTS.md").write_text("# Repo\n\n- Run the linters before every push.\n")
    (repo / "web" / "AGENTS.md").write_text(
        "# Web\n\n- Tests render components with `renderWithProviders` and snapshot them.\n"
        "- Styles live in CSS modules next to the component.\n"
    )
    (repo / "api" / "AGENTS.md").write_text(
        "# API\n\n- API errors use the `ApiError` envelope and retries.\n"
    )
    git(repo, "init", "-q", "-b", "main")
    return repo, _commit(repo, "c1", "2026-01-01T00:00:00Z")


def _corpus(repo: Path, c1: str, tasks: list[Task] | None = None) -> Corpus:
    memories, sizes = build_memories(repo / ".git", c1)
    return Corpus("synthetic", "x/y", c1, c1, str(repo / ".git"), memories, tasks or [], sizes)


def _unit(corpus: Corpus, word: str) -> str:
    return next(m.id for m in corpus.memories if word in m.text)


def test_the_product_makes_one_memory_per_rule_unit_and_maps_it_back(tmp_path: Path) -> None:
    repo, c1 = _rule_repo(tmp_path)
    corpus = _corpus(repo, c1)
    project = attach(corpus)
    assert [d.id for d in corpus.docs] == [m.id for m in corpus.memories]
    assert project.skipped == [] and project.unmapped == []
    web = next(d for d in corpus.docs if "renderWithProviders" in d.summary)
    assert web.refs == ("web/",) and web.memory_id and "AGENTS.md" not in web.details
    root = next(d for d in corpus.docs if d.path == "AGENTS.md")
    assert root.refs == () and root.covers("api/server.py")


def test_tether_retriever_finds_the_scoped_rule_for_a_touched_file(tmp_path: Path) -> None:
    repo, c1 = _rule_repo(tmp_path)
    corpus = _corpus(repo, c1)
    attach(corpus)
    retriever = TetherRetriever("tether-test")
    retriever.prepare(corpus)
    found = retriever.retrieve(
        TaskView("add a test for the button", ("web/src/Button.test.tsx",)), "prompt+files"
    )
    assert found[0] == _unit(corpus, "renderWithProviders")
    assert _unit(corpus, "ApiError") not in found
    assert retriever.tokens(TaskView("", ()), "prompt+files") > 0
    parts = retriever.token_parts()
    assert parts["header+footer"] > 0 and parts["lines"] > 0


def _docs(*specs: tuple[str, str, tuple[str, ...]]) -> list[Doc]:
    return [
        Doc(i, (i,), text, "", refs, f"{refs[0] if refs else ''}AGENTS.md", n)
        for n, (i, text, refs) in enumerate(specs)
    ]


def _doc_corpus(docs: list[Doc]) -> Corpus:
    return Corpus("synthetic", "x/y", "c1", "c2", "", [], [], {}, docs=docs)


def test_porter_bm25_stems_and_the_unstemmed_one_does_not() -> None:
    corpus = _doc_corpus(_docs(("a", "Uploads are retried three times", ()), ("b", "Style guide", ())))
    porter, plain = BM25Retriever(), BASELINES["bm25-unstemmed"]()
    porter.prepare(corpus)
    plain.prepare(corpus)
    view = TaskView("why does the upload retry", ())
    assert porter.retrieve(view, "prompt") == ["a"]
    assert plain.retrieve(view, "prompt") == []
    assert plain.name == "bm25-unstemmed"


def test_scope_bm25_ranks_memories_of_the_touched_files_first() -> None:
    docs = _docs(
        ("api", "retry the upload in the api", ("api/",)),
        ("web", "components and styles", ("web/",)),
        ("root", "upload etiquette", ()),
    )
    corpus = _doc_corpus(docs)
    scoped, only = ScopeBM25Retriever(), BASELINES["in-scope-bm25"]()
    scoped.prepare(corpus)
    only.prepare(corpus)
    view = TaskView("retry the upload", ("web/app.ts",))
    # In scope of web/app.ts: the web rule and the root rule; the root one matches the query, the web one
    # does not (it follows in rule-file order); the api match comes after both.
    assert scoped.retrieve(view, "prompt+files") == ["root", "web", "api"]
    assert only.retrieve(view, "prompt+files") == ["root", "web"]
    # With nothing touched: plain porter bm25, and for the restricted one the rules that apply everywhere.
    assert scoped.retrieve(TaskView("retry the upload", ()), "prompt")[0] == "api"
    assert only.retrieve(TaskView("retry the upload", ()), "prompt") == ["root"]


def test_recent_ranks_the_rules_changed_last_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_module, "DATA_DIR", tmp_path / "data")
    repo, _ = _rule_repo(tmp_path)
    with (repo / "api" / "AGENTS.md").open("a") as handle:
        handle.write("- Handlers are async.\n")
    c1 = _commit(repo, "later", "2026-02-01T00:00:00Z")
    corpus = _corpus(repo, c1)
    recent = RecentRetriever()
    recent.prepare(corpus)
    ranked = recent.retrieve(TaskView("", ()), "prompt")
    assert ranked[0] == _unit(corpus, "async")
    # The rest share the first commit's time and keep rule-file order (path, then line).
    assert ranked[1:] == [d.id for d in docs_of(corpus) if d.id != ranked[0]]


def _result(repo: str, system: str, recall: list[float], rr: list[float] | None = None) -> Result:
    r = Result(repo, system, "prompt+files")
    r.commits = [f"c{i}" for i in range(len(recall))]
    r.recall = recall
    r.rr = rr or recall
    return r


def test_strongest_baseline_is_chosen_per_repository_and_pooled() -> None:
    results = [
        _result("a", "bm25-porter", [1.0, 0.0]),
        _result("a", "scope-bm25", [0.0, 0.5]),
        _result("b", "bm25-porter", [0.0, 0.0]),
        _result("b", "scope-bm25", [1.0, 1.0]),
        _result("all", "bm25-porter", [1.0, 0.0, 0.0, 0.0]),
        _result("all", "scope-bm25", [0.0, 0.5, 1.0, 1.0]),
        _result("all", "tether", [1.0, 1.0, 1.0, 1.0]),
    ]
    names = ["bm25-porter", "scope-bm25"]
    assert strongest(results, names, "a", "prompt+files").system == "bm25-porter"  # type: ignore[union-attr]
    assert strongest(results, names, "b", "prompt+files").system == "scope-bm25"  # type: ignore[union-attr]
    assert strongest(results, names, "all", "prompt+files").system == "scope-bm25"  # type: ignore[union-attr]
    # A system is never its own baseline, and a tie goes to the higher MRR.
    assert strongest(results, ["tether"], "a", "prompt+files") is None
    tie = [_result("a", "x", [0.5], [0.2]), _result("a", "y", [0.5], [0.9])]
    assert strongest(tie, ["x", "y"], "a", "prompt+files").system == "y"  # type: ignore[union-attr]
    table = against_strongest(results, names, ["tether"])
    row = next(line for line in table.splitlines() if line.startswith("| all | prompt+files"))
    assert "| scope-bm25 | 0.625 | tether | 1.000 | +0.375 [" in row


def test_budget_recall_injects_the_head_that_fits() -> None:
    run = Run(
        "r", "s", "prompt+files", commits=["t"], ranked=[["a", "b", "c"]], cost={"a": 40, "b": 80, "c": 10}
    )
    labels = {"t": {"b", "c"}}
    assert budget_recall(run, labels, 39) == [0.0]
    assert budget_recall(run, labels, 100) == [0.0]  # b does not fit after a, and c is not tried past it
    assert budget_recall(run, labels, 120) == [0.5]
    assert budget_recall(run, labels, 130) == [1.0]


def _labels(tmp_path: Path, corpus: Corpus, relevant: dict[str, list[str]]) -> None:
    doc = {
        "repo": corpus.repo,
        "c1": corpus.c1,
        "c2": corpus.c2,
        "tasks": [
            {
                "commit": t.commit,
                "split": t.split,
                "relevant": [
                    [m.path, m.line, m.id] for m in corpus.memories if m.id in relevant.get(t.commit, [])
                ],
            }
            for t in corpus.tasks
        ],
    }
    (tmp_path / "labels").mkdir(exist_ok=True)
    (tmp_path / "labels" / f"{corpus.repo}.json").write_text(json.dumps(doc))


def test_runs_score_against_the_frozen_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_module, "LABELS_DIR", tmp_path / "labels")
    repo, c1 = _rule_repo(tmp_path)
    tasks = [
        Task("t1", "dev", "retry the api call", ("api/server.py",), {}),
        Task("t2", "test", "x", ("a",), {}),
    ]
    corpus = _corpus(repo, c1, tasks)
    attach(corpus)
    _labels(tmp_path, corpus, {"t1": [_unit(corpus, "ApiError")]})
    labels = load_labels(corpus, "dev")
    assert labels == {"t1": {_unit(corpus, "ApiError")}}
    runs = evaluate(corpus, ScopeBM25Retriever(), "dev")
    assert [r.commits for r in runs] == [["t1"], ["t1"]]
    assert score(runs[1], labels).recall == [1.0]


def test_online_replay_records_surfacings_and_acks_what_was_relevant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus_module, "LABELS_DIR", tmp_path / "labels")
    repo, c1 = _rule_repo(tmp_path)
    commits = []
    for day in range(1, 6):
        (repo / "web" / "src" / "Button.test.tsx").write_text(f"test('{day}', () => {{}})\n")
        commits.append(_commit(repo, f"task {day}", f"2026-03-{day:02d}T00:00:00Z"))
    tasks = [Task(c, "dev", "add a button test", ("web/src/Button.test.tsx",), {}) for c in commits]
    corpus = _corpus(repo, c1, tasks)
    attach(corpus)
    wanted = _unit(corpus, "renderWithProviders")
    _labels(tmp_path, corpus, {c: [wanted] for c in commits})
    off = replay(corpus, "prompt+files", "off")
    shown = replay(corpus, "prompt+files", "shown")
    fed = replay(corpus, "prompt+files", "feedback")
    assert off.surfaced == 0 and off.penalized == 0
    assert shown.surfaced > 0 and shown.acks == 0
    assert fed.acks == sum(wanted in top for top in fed.run.ranked) > 0
    assert off.run.ranked[0][0] == wanted
    # Shown five times and never used, by an agent that never pulls anything: no sign of being ignored.
    assert shown.penalized == 0
    # Where the agent pulls now and then, the memories it shows and does not pull are (`scoring.feedback`).
    some = replay(corpus, "prompt+files", "some")
    assert 0 < some.acks < fed.acks
    assert some.penalized >= 1


def test_paired_differences_pair_tasks_and_bracket_the_mean() -> None:
    def result(system: str, recall: list[float]) -> Result:
        return _result("all", system, recall)

    text = paired_differences(
        [result("bm25-porter", [0.0, 0.5, 1.0, 0.0]), result("tether", [1.0, 0.5, 1.0, 1.0])]
    )
    row = text.splitlines()[-1]
    assert row.startswith("| tether | prompt+files | 4 | +0.500 [")
    low, high = (float(x) for x in row.split("[")[1].rstrip(" |]").split(","))
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    same = paired_differences([result("bm25-porter", [0.5] * 5), result("tether", [0.5] * 5)])
    assert same.splitlines()[-1] == "| tether | prompt+files | 5 | +0.000 [+0.00, +0.00] |"


def test_judged_labels_and_their_agreement_with_the_mechanical_ones() -> None:
    rows = [
        {"commit": "t1", "rule": "a", "verdict": "needed"},
        {"commit": "t1", "rule": "b", "verdict": "helpful"},
        {"commit": "t1", "rule": "c", "verdict": "not relevant"},
        {"commit": "t2", "rule": "a", "verdict": "not relevant"},
    ]
    assert judged_labels(rows, ("needed",)) == {"t1": {"a"}, "t2": set()}
    assert judged_labels(rows, ("needed", "helpful")) == {"t1": {"a", "b"}, "t2": set()}
    mechanical = {"t1": {"a", "c"}, "t2": {"a"}}
    # (both, mechanical positives, judged relevant) over the judged pairs
    assert agreement(rows, mechanical, ("needed",)) == (1, 3, 1)
    assert agreement(rows, mechanical, ("needed", "helpful")) == (1, 3, 2)


def test_a_later_judging_round_pools_only_new_pairs_and_keeps_earlier_locations() -> None:
    judged = [{"commit": "t1", "rule": "a"}, {"commit": "t2", "rule": "b"}]
    pool = {"t1": {"a": {"systems": ["x"]}, "c": {"systems": ["x@4"]}}, "t2": {"b": {"systems": ["x"]}}}
    assert drop_judged(pool, judged) == {"t1": {"c": {"systems": ["x@4"]}}}  # t2 had nothing new
    # An earlier verdict keeps the path and line it was frozen with, even when the rule's id is gone now.
    previous = {("t1", "a"): {"path": "AGENTS.md", "line": 3}}
    where = {"c": ("GEMINI.md", 9)}
    assert located({"commit": "t1", "rule": "a"}, previous, where) == ("AGENTS.md", 3)
    assert located({"commit": "t1", "rule": "c"}, previous, where) == ("GEMINI.md", 9)
    with pytest.raises(SystemExit):
        located({"commit": "t1", "rule": "gone"}, previous, where)


def test_two_builds_of_a_project_give_the_same_memory_ids(tmp_path: Path) -> None:
    # Recall breaks score ties by memory id: random ids would make runs differ from build to build.
    repo, c1 = _rule_repo(tmp_path)
    corpus = _corpus(repo, c1)
    first, second = Project.build(corpus), Project.build(corpus)
    assert [d.memory_id for d in first.docs] == [d.memory_id for d in second.docs]
