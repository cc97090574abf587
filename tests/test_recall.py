"""Ranking tests on real git repositories: one table per signal (DESIGN §4)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from conftest import git
from tether.errors import ValidationError
from tether.lifecycle.housekeeping import refresh_repo
from tether.store.base import Query
from tether.workspace import Workspace


def ids(result: object) -> list[str]:
    return [r.memory.id for r in result.memories]  # type: ignore[attr-defined]


def commit_together(repo: Path, paths: list[str], times: int, tag: str = "") -> None:
    for n in range(times):
        for path in paths:
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(f"# {tag}{n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {tag}{n}")


def test_memory_naming_the_edited_file_beats_ten_word_sharers(ws: Workspace) -> None:
    target = ws.add("Uploads must be chunked at 5 MB", category="gotcha", files=["src/app/upload.py"]).memory
    for n in range(10):
        ws.add(f"Retry policy note {n}: the upload retry loop and retry budget for uploads, variant {n}")
    result = ws.recaller().recall("fix the upload retry loop", ["src/app/upload.py"], record=False)
    assert ids(result)[0] == target.id
    assert "file" in result.memories[0].signals


def test_sole_owner_beats_a_46_way_share(ws: Workspace) -> None:
    (ws.root / "src" / "app" / "hot.py").write_text("x = 1\n")  # type: ignore[operator]
    crowd = [
        ws.add(f"Hot path rule {n} about caching layers", files=["src/app/hot.py"]).memory.id
        for n in range(45)
    ]
    sole = ws.add("Only this memory knows about upload.py internals", files=["src/app/upload.py"]).memory
    crowd.append(ws.add("Hot path rule 46 about caching layers", files=["src/app/hot.py"]).memory.id)
    result = ws.recaller().recall("", ["src/app/upload.py", "src/app/hot.py"], record=False, limit=3)
    assert ids(result)[0] == sole.id
    assert result.memories[0].signals["file"] == pytest.approx(0.40)
    # The crowd's file magnitude sits on the floor's rarity curve: 0.25 + 0.15 / (1 + ln 46).
    explained, _ = ws.recaller().explain(crowd[0], "", ["src/app/hot.py"])
    assert explained.magnitude.file == pytest.approx(0.2814, abs=1e-3)


@pytest.mark.parametrize("together, expected", [(True, True), (False, False)])
def test_cochange_neighbour_surfaces_only_when_files_change_together(
    ws: Workspace, repo: Path, together: bool, expected: bool
) -> None:
    (repo / "src" / "app" / "b.py").write_text("y = 2\n")
    (repo / "src" / "app" / "a.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a and b")
    if together:
        commit_together(repo, ["src/app/a.py", "src/app/b.py"], 4)
    else:
        commit_together(repo, ["src/app/a.py"], 4, "a")
        commit_together(repo, ["src/app/b.py"], 4, "b")
    on_b = ws.add("b.py must stay in sync with the schema", category="gotcha", files=["src/app/b.py"]).memory
    refresh_repo(ws)
    result = ws.recaller().recall("", ["src/app/a.py"], record=False)
    assert (on_b.id in ids(result)) is expected
    if expected:
        assert "co-change(src/app/b.py)" in result.memories[0].receipt


def test_memory_follows_git_mv_and_loses_file_signal_after_git_rm(ws: Workspace, repo: Path) -> None:
    memory = ws.add("Upload chunk size is 5 MB", files=["src/app/upload.py"]).memory
    refresh_repo(ws)
    git(repo, "mv", "src/app/upload.py", "src/app/transfer.py")
    git(repo, "commit", "-q", "-m", "rename")
    report = refresh_repo(ws)
    assert report.renamed == [(memory.id, "src/app/upload.py", "src/app/transfer.py")]
    moved = ws.get(memory.id)
    assert moved.files == ("src/app/transfer.py",)
    note = next((repo / ".tether" / "memories").glob(f"{memory.id}-*.md")).read_text()
    assert "src/app/transfer.py" in note
    assert ids(ws.recaller().recall("", ["src/app/transfer.py"], record=False)) == [memory.id]

    git(repo, "rm", "-q", "src/app/transfer.py")
    git(repo, "commit", "-q", "-m", "remove")
    refresh_repo(ws)
    assert ws.recaller().recall("", ["src/app/transfer.py"], record=False).memories == []
    assert [m.id for m, _ in ws.dead_refs()] == [memory.id]


def test_pasted_trace_with_question_in_last_line_finds_that_memory(ws: Workspace) -> None:
    target = ws.add("The token refresh endpoint needs the client secret header").memory
    ws.add("Database migrations run with alembic upgrade head")
    ws.add("Frontend builds use vite with the legacy plugin")
    frame = '  File "/srv/app/venv/lib/python3.11/site-packages/sqlalchemy/engine/base.py", line 1410, in execute\n'
    trace = (
        "Traceback (most recent call last):\n"
        + frame * 30
        + "sqlalchemy.exc.OperationalError: database locked\n"
    )
    prompt = trace + "\nwhy does the token refresh endpoint reject my request?"
    assert len(prompt) > 3000
    result = ws.recaller().recall(prompt, record=False)
    assert ids(result)[:1] == [target.id]
    assert "alembic" not in result.query and "sqlalchemy" not in result.query


def test_archived_superseded_and_cooled_down_memories_stay_out(ws: Workspace) -> None:
    archived = ws.add("Upload limit is 10 MB for archived test", files=["src/app/upload.py"]).memory
    ws.archive(archived.id)
    old = ws.add("Upload limit is 20 MB", files=["src/app/upload.py"]).memory
    new = ws.add(
        "Upload limit is 50 MB since the CDN change", files=["src/app/upload.py"], supersedes=old.id
    ).memory
    recaller = ws.recaller()
    first = recaller.recall("upload limit", ["src/app/upload.py"], session="s", turn=1)
    assert ids(first) == [new.id]
    assert ids(recaller.recall("upload limit", ["src/app/upload.py"], session="s", turn=5)) == []
    assert ids(recaller.recall("upload limit", ["src/app/upload.py"], session="s", turn=12)) == [new.id]
    assert ids(recaller.recall("upload limit", ["src/app/upload.py"], session="other", turn=1)) == [new.id]
    assert new.id in [r.memory.id for r in ws.search("upload limit")]
    assert old.id not in [r.memory.id for r in ws.search("upload limit")]


def test_high_priority_nudges_but_does_not_lift_irrelevant_over_relevant(ws: Workspace) -> None:
    relevant = ws.add("Upload retries use exponential backoff", files=["src/app/upload.py"]).memory
    loud = ws.add("Backoff constants are shared with the auth client", priority="high").memory
    result = ws.recaller().recall("upload backoff", ["src/app/upload.py"], record=False)
    assert ids(result)[0] == relevant.id
    explained, _ = ws.recaller().explain(loud.id, "upload backoff", ["src/app/upload.py"])
    assert explained.multiplier > 1.0


def test_a_prompts_plurals_and_tenses_cover_a_memory_as_the_word_index_stems_them(ws: Workspace) -> None:
    """The query coverage (the text magnitude's scale and the evidence gate) counts `tests` in a memory that
    says `test`, as the stemmed word index already matched it: before, it covered one of three terms here
    (`integration`), under the gate, and nothing was injected."""
    target = ws.add("Integration test runs need the docker daemon started first").memory
    ws.add("Release notes are drafted from the changelog")
    result = ws.recaller().recall("why do the integration tests flake?", record=False)
    assert ids(result) == [target.id]
    explained, _ = ws.recaller().explain(target.id, "why do the integration tests flake?")
    assert explained.evidence.coverage == pytest.approx(2 / 3)


def test_unrelated_prompt_injects_nothing(ws: Workspace) -> None:
    ws.add("Upload retries use exponential backoff", files=["src/app/upload.py"])
    ws.add("Deploys go through make ship-v2")
    assert ws.recaller().recall("make the login button blue", record=False).memories == []


def test_same_content_in_project_and_user_scope_appears_once(ws: Workspace) -> None:
    project = ws.add("Prefer ruff over flake8 for linting", category="pref").memory
    ws.add("Prefer ruff over flake8 for linting", category="pref", scope="user")
    result = ws.recaller().recall("which linter should we prefer, ruff or flake8?", record=False)
    assert ids(result) == [project.id]


def test_recording_counts_surfacings_and_dry_run_does_not(ws: Workspace) -> None:
    memory = ws.add("Uploads must be chunked", files=["src/app/upload.py"]).memory
    ws.recaller().recall("", ["src/app/upload.py"], record=False)
    assert ws.store.telemetry([memory.id]) == {}
    ws.recaller().recall("", ["src/app/upload.py"], session="s1", turn=3)
    telemetry = ws.store.telemetry([memory.id])[memory.id]
    assert telemetry.surfaced == 1
    event = next(ws.store.events(memory.id))
    assert (event.event, event.session, event.turn) == ("surfaced", "s1", 3)


def test_ignored_memory_is_penalized_and_used_one_is_not(ws: Workspace, repo: Path) -> None:
    ignored = ws.add("Upload rule A about chunking", files=["src/app/upload.py"]).memory
    used = ws.add("Upload rule B about chunking", files=["src/app/upload.py"]).memory
    for turn in range(6):
        ws.recaller().recall("", ["src/app/upload.py"], session=f"s{turn}", turn=1)
        ws.ack(used.id)  # the agent pulls B each time: it follows up half of what it is shown
    recaller = ws.recaller()
    a, _ = recaller.explain(ignored.id, "", ["src/app/upload.py"])
    b, _ = recaller.explain(used.id, "", ["src/app/upload.py"])
    assert a.magnitude.feedback == pytest.approx(-0.09)
    assert (b.magnitude.feedback or 0) > 0
    assert b.score > a.score


def test_recency_anchors_on_last_action_not_last_showing(repo: Path, home: Path) -> None:
    now = [Workspace.open(repo, home=home).clock()]
    ws = Workspace.open(repo, home=home, clock=lambda: now[0])
    memory = ws.add("Upload rule about chunking", files=["src/app/upload.py"]).memory
    now[0] += timedelta(days=120)
    before, _ = ws.recaller().explain(memory.id, "", ["src/app/upload.py"])
    ws.recaller().recall("", ["src/app/upload.py"], session="s", turn=1)  # shown: keeps nothing fresh
    shown, _ = ws.recaller().explain(memory.id, "", ["src/app/upload.py"])
    ws.ack(memory.id)
    acted, _ = ws.recaller().explain(memory.id, "", ["src/app/upload.py"])
    assert shown.magnitude.recency == pytest.approx(before.magnitude.recency)
    assert (acted.magnitude.recency or 0) > (shown.magnitude.recency or 0) * 3


def test_budget_limits_characters_and_count(ws: Workspace) -> None:
    for n in range(5):
        ws.add(f"Upload gotcha {n}: " + "x" * 120, files=["src/app/upload.py"])
    assert len(ws.recaller().recall("", ["src/app/upload.py"], record=False).memories) == 3
    assert len(ws.recaller().recall("", ["src/app/upload.py"], record=False, budget=400).memories) == 2


def test_directory_ref_matches_files_under_it(ws: Workspace) -> None:
    memory = ws.add("Everything in src/app/ uses structured logging", files=["src/app/"]).memory
    result = ws.recaller().recall("", ["src/app/auth.py"], record=False)
    assert ids(result) == [memory.id]
    assert result.memories[0].receipt.startswith("dir(src/app/)")


def test_works_outside_git(tmp_path: Path, home: Path) -> None:
    from tether.project import init_project

    plain = tmp_path / "plain"
    (plain / "lib").mkdir(parents=True)
    (plain / "lib" / "core.py").write_text("x = 1\n")
    init_project(plain, home)
    ws = Workspace.open(plain, home=home)
    memory = ws.add(
        "core.py is generated; edit the template", category="gotcha", files=["lib/core.py"]
    ).memory
    refresh_repo(ws)
    assert ids(ws.recaller().recall("", [str(plain / "lib" / "core.py")], record=False)) == [memory.id]
    assert ws.find(Query())[0].id == memory.id


def test_cli_recall_json_and_explain(tether, repo: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    added = json.loads(tether("add", "Uploads are chunked", "-f", "src/app/upload.py", "--json").out)
    out = json.loads(tether("recall", "--file", "src/app/upload.py", "--json", "--no-record").out)
    first = out["memories"][0]
    assert {"id", "summary", "category", "score", "signals"} <= set(first)
    assert first["id"] == added["id"] and first["signals"]["file"] > 0.25
    text = tether("explain", added["id"], "--file", "src/app/upload.py").out
    assert "magnitude: file" in text and "rank 1" in text
    unknown = tether("recall", "--channel", "x")
    assert unknown.code == 2 and "No such option '--channel'" in unknown.err


def test_unknown_channels_are_refused_by_name(ws: Workspace) -> None:
    with pytest.raises(ValidationError, match=r"unknown channel\(s\) sound, x: use file, path"):
        ws.recall("anything", channels=["file", "x", "sound"])


def test_any_syncing_command_reports_that_a_memory_followed_a_rename(tether, repo: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    memory_id = json.loads(tether("add", "Uploads are chunked", "-f", "src/app/upload.py", "--json").out)[
        "id"
    ]
    git(repo, "mv", "src/app/upload.py", "src/app/transfer.py")
    git(repo, "commit", "-q", "-m", "rename")
    done = tether("list")
    assert (
        f"note: memory {memory_id} now names src/app/transfer.py (renamed from src/app/upload.py)" in done.err
    )
    assert json.loads(tether("get", memory_id, "--json").out)["files"] == ["src/app/transfer.py"]
    assert "renamed" not in tether("list").err  # reported once


# -- issue 17's failure classes, one test each ---------------------------------------------------------


def test_pinned_pierces_the_budget_but_does_not_crowd_out_evidence(ws: Workspace) -> None:
    for n in range(3):
        ws.add(f"Release trains leave on Tuesdays, rule {n}", pinned=True)
    relevant = ws.add("Uploads are chunked at 5 MB", files=["src/app/upload.py"]).memory
    result = ws.recall("why are uploads chunked?", ["src/app/upload.py"], record=False)
    assert ids(result) == [relevant.id]  # irrelevant pinned memories do not take the three slots
    pinned_relevant = ws.add(
        "Upload chunk size is 5 MB, never more", pinned=True, files=["src/app/upload.py"]
    ).memory
    result = ws.recall("why are uploads chunked?", ["src/app/upload.py"], record=False, budget=10)
    assert ids(result) == [pinned_relevant.id]  # first, and past a budget nothing else fits in


def test_a_pinned_memory_whose_files_are_gone_stops_injecting(ws: Workspace, repo: Path) -> None:
    memory = ws.add("Auth tokens rotate hourly", pinned=True, files=["src/app/auth.py"]).memory
    assert ids(ws.recall("auth tokens", ["src/app/auth.py"], record=False)) == [memory.id]
    git(repo, "rm", "-q", "src/app/auth.py")
    git(repo, "commit", "-q", "-m", "drop auth")
    refresh_repo(ws)
    assert ids(ws.recall("auth tokens rotate", [], record=False)) == []


def test_a_match_in_cooldown_keeps_its_slot_instead_of_letting_weaker_ones_in(ws: Workspace) -> None:
    best = ws.add("Uploads retry three times with backoff", files=["src/app/upload.py"]).memory
    ws.add("Upload logs go to stderr", files=["src/"])
    ws.add("Backoff uses jitter", files=["src/"])
    first = ws.recall("upload retry backoff", ["src/app/upload.py"], session="s", turn=1, limit=1)
    assert ids(first) == [best.id]
    again = ws.recall("upload retry backoff", ["src/app/upload.py"], session="s", turn=2, limit=1)
    assert ids(again) == []  # the best answer is already in context; nothing weaker replaces it


def test_the_copy_on_the_touched_file_keeps_the_slot_of_identical_text(ws: Workspace) -> None:
    # The same sentence tied to two places is two memories (a second add with other files is refused as
    # a duplicate, so write the twins the way two rule files in two directories would produce them).
    elsewhere = ws.add("Keep this list sorted", files=["docs/deploy.md"]).memory
    here = ws.write(elsewhere.with_changes(id="0badc0de", files=("src/app/upload.py",)))
    result = ws.recall("keep the list sorted", ["src/app/upload.py"], record=False)
    assert ids(result) == [here.id]


def test_every_memory_on_the_touched_file_is_scored_against_the_prompt(ws: Workspace) -> None:
    # Sixty memories repository-wide match "upload" better than the one that answers; only the answering
    # one is on the touched file and names the rest of the question.
    for n in range(60):
        ws.add(f"upload upload upload note {n}", files=[f"docs/n{n}.md"])
    answer = ws.add(
        "Uploads resume from the last acknowledged chunk offset", files=["src/app/upload.py"]
    ).memory
    for n in range(5):
        ws.add(f"Auth helper detail {n}", files=["src/app/upload.py"])
    result = ws.recall(
        "how does an upload resume from the chunk offset?", ["src/app/upload.py"], record=False
    )
    assert ids(result)[0] == answer.id


def test_memories_about_other_code_step_back_once_files_are_touched(ws: Workspace) -> None:
    general = ws.add("Retry budgets are per request").memory  # no paths: applies everywhere
    elsewhere = ws.add("Retry budgets are per request on the docs site", files=["docs/"]).memory
    prompt = "retry budgets per request"

    def score(memory_id: str, files: list[str]) -> float:
        return ws.explain(memory_id, prompt, files)[0].score

    assert score(general.id, ["src/app/upload.py"]) == pytest.approx(score(general.id, []), rel=0.05)
    assert score(elsewhere.id, ["src/app/upload.py"]) < 0.6 * score(elsewhere.id, [])


def test_a_memory_naming_many_files_is_weak_evidence_for_each(ws: Workspace) -> None:
    wide = ws.add(
        "Sweeping rename of the helpers", files=["src/app/upload.py", *[f"src/x{n}.py" for n in range(40)]]
    ).memory
    narrow = ws.add("Helpers in upload.py are private", files=["src/app/upload.py"]).memory
    explained_wide, _ = ws.explain(wide.id, "", ["src/app/upload.py"])
    explained_narrow, _ = ws.explain(narrow.id, "", ["src/app/upload.py"])
    assert (explained_wide.magnitude.file or 0) < 0.5 * (explained_narrow.magnitude.file or 0)


def test_a_rule_naming_what_the_touched_code_uses_comes_with_it(ws: Workspace) -> None:
    """Issue 17 §3: identifiers in the touched file's current content are evidence for memories naming
    them, matched case-sensitively as whole identifiers; a plain word shared with the code is not."""
    assert ws.root is not None
    path = ws.root / "src" / "app" / "agent.py"
    path.write_text(
        "from .errors import ModelRetry\n\ndef run(retry_count):\n    raise ModelRetry(retry_count)\n"
    )
    rule = ws.add("Raise `ModelRetry` to make the model try again, never a bare exception").memory
    ws.add("Prefer modelretry spelled as one word in prose")  # not the identifier
    ws.add("Retry counts live in the settings module")  # plain words, no identifier
    for n in range(5):
        ws.add(f"Unrelated root rule {n} about documentation style")
    result = ws.recaller().recall("", ["src/app/agent.py"], record=False)
    assert ids(result) == [rule.id]
    assert "code" in result.memories[0].signals and "code(ModelRetry)" in result.memories[0].receipt
    off = ws.recaller().recall(
        "", ["src/app/agent.py"], record=False, channels=("file", "path", "text", "semantic", "pinned")
    )
    assert rule.id not in ids(off)  # the code channel is what found it
    path.write_text("def run():\n    return 1\n")  # the code no longer uses it: the evidence goes with it
    assert rule.id not in ids(ws.recaller().recall("", ["src/app/agent.py"], record=False))


def test_a_root_rule_whose_words_name_the_touched_paths_comes_with_them(ws: Workspace) -> None:
    """A memory tied to no file applies everywhere; once files are touched, the touched paths' words in its
    text tie it to this work and admit it (issue 17: scope-BM25 ties root rules the same way). A memory tied
    to other files, or one sharing no path word, is not admitted by path words."""
    tests_rule = ws.add("Run the migrations tests with `make check-migrations` before pushing").memory
    docs_rule = ws.add("Documentation pages use sentence case headings").memory
    scoped = ws.add("Migrations tests need a scratch database", files=["docs/"]).memory
    touched = ["db/migrations/0042_add_index.sql"]
    result = ws.recaller().recall("", touched, record=False)
    assert ids(result) == [tests_rule.id]
    assert "paths" in result.memories[0].receipt
    assert docs_rule.id not in ids(result) and scoped.id not in ids(result)
    assert ws.recaller().recall("", ["src/other.py"], record=False).memories == []  # no path word shared
    assert ws.recaller().recall("", [], record=False).memories == []  # nothing touched: nothing ties it
