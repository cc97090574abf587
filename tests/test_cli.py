"""The `tether` command: in-process through `tether.adapters.cli.main.main` for most paths, real subprocesses for a few."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import TETHER_BIN, Run, index_ids, make_git_repo, note_files
from tether.notes import format as notes
from tether.workspace import Workspace

Tether = Callable[..., Run]


def add_json(tether: Tether, *args: str, input: str | None = None) -> dict[str, object]:
    run = tether("add", *args, "--json", input=input)
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert isinstance(data, dict)
    return data


def test_add_json_prints_an_object_with_id(repo: Path, tether: Tether) -> None:
    data = add_json(
        tether,
        "Staging API listens on 6443",
        "-c",
        "gotcha",
        "-f",
        "src/app/upload.py",
        "-f",
        "docs",
        "--priority",
        "high",
        "--pin",
    )
    assert isinstance(data["id"], str) and len(data["id"]) == 8
    assert data["category"] == "gotcha" and data["files"] == ["src/app/upload.py", "docs/"]
    assert data["pinned"] is True and data["priority"] == "high" and data["new"] is True
    assert isinstance(data["created"], str) and data["created"].endswith("Z")  # a timestamp, not a flag
    again = add_json(tether, "staging api listens on 6443")
    assert again["id"] == data["id"] and again["new"] is False


def test_add_details_from_stdin_and_scope(repo: Path, home: Path, tether: Tether) -> None:
    data = add_json(tether, "Long story", "--details", "-", "--scope", "user", input="line one\n\nline two\n")
    assert data["details"] == "line one\n\nline two" and data["scope"] == "user"
    assert len(list((home / "memories").glob("*.md"))) == 1


def test_add_supersedes(repo: Path, tether: Tether) -> None:
    old = add_json(tether, "Use yarn")
    new = add_json(tether, "Use pnpm", "--supersedes", str(old["id"]))
    assert new["supersedes"] == old["id"]
    listed = json.loads(tether("list", "--superseded", "--json").out)
    assert [m["id"] for m in listed] == [old["id"]]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["add", "x" * 161], 1, "put the rest in --details"),
        (["add", "two\nlines"], 1, "--details"),
        (["add", "ok", "-f", "../escape.py"], 1, "outside the repository"),
        (["add", "ok", "--supersedes", "zz"], 1, "8 hex characters"),
        (["add", "token " + "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"], 1, "GitHub token"),
        (["add", "ok", "--category", "rumour"], 2, "'pref', 'decision', 'gotcha', 'context'"),
        (["add", "ok", "--scope", "team"], 2, "'project', 'user', 'session'"),
        (["add"], 2, "Missing argument"),
        (["frobnicate"], 2, "No such command"),
        (["get", "0000ffff"], 1, "no memory 0000ffff"),
        (["get", "nope"], 1, "8 hex characters"),
        (["rm", "0000ffff"], 1, "no memory 0000ffff"),
        (["search", "x", "--limit", "0"], 2, "--limit"),
        (["recall", "--work", "-f", "src/app/upload.py"], 2, "give --work or --file, not both"),
    ],
)
def test_errors_and_exit_codes(repo: Path, tether: Tether, args: list[str], code: int, message: str) -> None:
    run = tether(*args)
    assert run.code == code, (run.out, run.err)
    assert message in run.err
    assert "Traceback" not in run.err
    assert note_files(repo) == [] and index_ids(repo) == set()


def test_recall_as_a_first_prompt_takes_the_work_in_progress_when_the_prompt_is_about_it(
    repo: Path, tether: Tether
) -> None:
    mid = str(add_json(tether, "upload.py chunk size is 5 MB", "-f", "src/app/upload.py")["id"])
    plain = tether("recall", "-p", "now add tests", "--work", "--no-record", "--json")
    assert plain.code == 0 and json.loads(plain.out)["memories"] == []  # a clean tree: nothing in progress
    (repo / "src/app/upload.py").write_text("def upload():\n    return 2\n", encoding="utf-8")
    run = tether("recall", "-p", "now add tests", "--work", "--no-record")
    assert run.code == 0 and mid in run.out
    assert "work in progress: src/app/upload.py (used)" in run.err
    alone = tether(
        "recall", "-p", "now add tests", "--no-record", "--json"
    )  # without --work: the prompt alone
    assert json.loads(alone.out)["memories"] == []


def test_add_outside_a_project_says_run_init(
    tmp_path: Path, home: Path, tether: Tether, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = make_git_repo(tmp_path / "plain")
    monkeypatch.chdir(plain)
    run = tether("add", "where does this go")
    assert run.code == 1 and "run `tether init`" in run.err


def test_init_reindex_and_purge_print_json(repo: Path, tether: Tether) -> None:
    again = tether("init", "--json")
    assert again.code == 0 and json.loads(again.out) == {
        "tether_dir": str(repo / ".tether"),
        "created": False,
    }
    added = json.loads(tether("add", "Deploys go through make ship", "--json").out)
    rebuilt = tether("reindex", "--json")
    assert (
        rebuilt.code == 0
        and json.loads(rebuilt.out)["memories"] == 1
        and json.loads(rebuilt.out)["skipped"] == []
    )
    purged = tether("purge", "--origin", "user", "--yes", "--json")
    assert purged.code == 0 and [m["id"] for m in json.loads(purged.out)["deleted"]] == [added["id"]]
    assert added["id"] in purged.err  # the list of what goes is shown, beside the JSON
    assert json.loads(tether("purge", "--origin", "seed", "--json").out) == {"origin": "seed", "deleted": []}


def test_read_commands_outside_a_project_say_so(
    repo: Path, tmp_path: Path, home: Path, tether: Tether, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They read the user's memory (it follows the person), and say that is all they read."""
    assert tether("add", "I prefer small commits", "--scope", "user").code == 0
    plain = make_git_repo(tmp_path / "plain")
    monkeypatch.chdir(plain)
    for args in (
        ["search", "commits"],
        ["list"],
        ["recall", "-p", "commits?", "--no-record"],
        ["list", "--json"],
    ):
        run = tether(*args)
        assert run.code == 0 and "no tether project here" in run.err and "`tether init`" in run.err, args
    assert "small commits" in json.loads(tether("list", "--json").out)[0]["summary"]
    monkeypatch.chdir(repo)
    assert "no tether project here" not in tether("list").err


def test_get_and_list_filters(repo: Path, tether: Tether) -> None:
    a = add_json(tether, "Pref A", "-c", "pref", "-f", "Makefile")
    b = add_json(tether, "Gotcha B", "-c", "gotcha", "--pin")
    c = add_json(tether, "Context C")
    assert tether("rm", str(c["id"])).code == 0

    def ids(*args: str) -> list[object]:
        run = tether("list", *args, "--json")
        assert run.code == 0, run.err
        return sorted(m["id"] for m in json.loads(run.out))  # same-second adds order by id

    assert ids() == sorted([a["id"], b["id"]])
    assert ids("--category", "gotcha") == [b["id"]]
    assert ids("--pinned") == [b["id"]]
    assert ids("--file", "Makefile") == [a["id"]]
    assert ids("--file", str(repo / "Makefile")) == [a["id"]]
    assert ids("--archived") == [c["id"]]
    assert ids("--all") == sorted([a["id"], b["id"], c["id"]])
    got = json.loads(tether("get", str(a["id"]), "--json").out)
    assert got["summary"] == "Pref A" and got["chain"] == []
    text = tether("get", str(b["id"])).out
    assert text.startswith(f"{b['id']}  [gotcha] Gotcha B  (pinned)")


def test_search_finds_by_words_and_file(repo: Path, tether: Tether) -> None:
    hit = add_json(tether, "Upload retries use exponential backoff", "-f", "src/app/upload.py")
    add_json(tether, "Docs are built with mkdocs")
    run = tether("search", "backoff", "--json")
    assert run.code == 0
    found = json.loads(run.out)
    assert [r["id"] for r in found if r["confidence"] == "strong"] == [hit["id"]] == [found[0]["id"]]
    # Not gated like injection: what is only near comes back too, marked weak, after the strong ones (with
    # the static model, which puts every two texts at some similarity; hashed shares no feature here).
    assert tether("config", "embedder", "static").code == 0
    weak = tether("search", "kubernetes")
    assert weak.code == 0 and "no strong match" in weak.err
    assert weak.out and all("  weak    [" in line for line in weak.out.splitlines())


def test_search_finds_by_meaning_with_the_default_embedder(repo: Path, tether: Tether) -> None:
    # The Acolyte article's example: the question shares no word with the memory but a stem.
    hit = add_json(tether, "Tool execution uses runTool")
    add_json(tether, "Staging listens on port 6443")
    add_json(tether, "Use pnpm, never npm, for installs")
    run = tether("search", "how do tools work in this project")
    assert run.code == 0, run.err
    # The hashed default finds it first through the shared stem, and says it is not sure.
    first = run.out.splitlines()[0]
    assert f"{hit['id']} — Tool execution uses runTool" in first and "  weak    " in first
    # The packaged static model finds it by meaning, and is sure.
    assert tether("config", "embedder", "static").code == 0
    first = tether("search", "how do tools work in this project").out.splitlines()[0]
    assert f"{hit['id']} — Tool execution uses runTool" in first and "  strong  " in first


def test_edit_with_flags(repo: Path, tether: Tether) -> None:
    memory = add_json(tether, "Edit me")
    run = tether("edit", str(memory["id"]), "--summary", "Edited", "--priority", "high", "-f", "docs/")
    assert run.code == 0, run.err
    got = json.loads(tether("get", str(memory["id"]), "--json").out)
    assert (got["summary"], got["priority"], got["files"]) == ("Edited", "high", ["docs/"])
    bad = tether("edit", str(memory["id"]), "--summary", "a\nb")
    assert bad.code == 1 and "--details" in bad.err


def editor_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-editor.sh"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_edit_in_editor(repo: Path, tmp_path: Path, tether: Tether) -> None:
    memory = add_json(tether, "Opened in the editor")
    editor = editor_script(
        tmp_path,
        'sed -i "s/Opened in the editor/Changed in the editor/" "$1"\necho "Body from editor" >> "$1"\n',
    )
    run = tether("edit", str(memory["id"]), env={"EDITOR": editor, "VISUAL": None})
    assert run.code == 0, run.err
    got = json.loads(tether("get", str(memory["id"]), "--json").out)
    assert got["summary"] == "Changed in the editor" and "Body from editor" in got["details"]


def test_edit_in_editor_that_breaks_the_note_keeps_it(repo: Path, tmp_path: Path, tether: Tether) -> None:
    memory = add_json(tether, "Will be broken")
    editor = editor_script(tmp_path, 'printf -- "---\\nsummary: [oops\\n---\\nmy careful notes\\n" > "$1"\n')
    run = tether("edit", str(memory["id"]), env={"EDITOR": editor, "VISUAL": None})
    assert run.code == 1 and "no longer parses" in run.err and "kept as you saved it" in run.err
    assert note_files(repo)[0].read_text(encoding="utf-8").endswith("my careful notes\n")
    doctor = tether("doctor")
    assert doctor.code == 1 and str(note_files(repo)[0]) in doctor.out


def test_rm_restore_hard(repo: Path, tether: Tether) -> None:
    memory = str(add_json(tether, "Remove me")["id"])
    assert tether("rm", memory).out.startswith(f"archived: {memory}")
    assert note_files(repo), "rm archives: the note stays"
    assert tether("restore", memory).code == 0
    assert json.loads(tether("get", memory, "--json").out)["status"] == "active"
    assert tether("rm", memory, "--hard").out.startswith(f"deleted: {memory}")
    assert note_files(repo) == [] and index_ids(repo) == set()


def test_pin_unpin(repo: Path, tether: Tether) -> None:
    memory = str(add_json(tether, "Pin me")["id"])
    assert tether("pin", memory).code == 0
    assert json.loads(tether("get", memory, "--json").out)["pinned"] is True
    assert tether("unpin", memory).code == 0
    assert json.loads(tether("get", memory, "--json").out)["pinned"] is False


def test_doctor_lists_every_problem(repo: Path, tether: Tether) -> None:
    assert tether("doctor").code == 0
    folder = repo / ".tether" / "memories"
    (folder / "one.md").write_text("no frontmatter\n", encoding="utf-8")
    (folder / "two.md").write_text("---\nid: 00000002\nsummary: x\ncategory: rumour\n---\n", encoding="utf-8")
    run = tether("doctor", "--json")
    assert run.code == 1
    problems = json.loads(run.out)["problems"]
    assert sorted((p["kind"], Path(p["where"]).name) for p in problems) == [
        ("note", "one.md"),
        ("note", "two.md"),
    ]
    assert "warning: skipped note" in tether("list").err


def test_reindex(repo: Path, tether: Tether) -> None:
    add_json(tether, "Survives a reindex")
    run = tether("reindex")
    assert run.code == 0 and "indexed 1 memory" in run.out


def on_a_terminal(args: list[str], cwd: Path, home: Path) -> tuple[int, str, str]:
    """Run the installed command with its stderr on a pseudo-terminal: (exit code, stdout, the terminal)."""
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(TETHER_BIN), *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=follower,
            env={**os.environ, "TETHER_HOME": str(home), "TETHER_RESIDENT": "0"},
            timeout=60,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # the terminal closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    return done.returncode, done.stdout.decode(), shown.decode(errors="replace")


def test_reindex_and_rules_sync_show_progress_on_a_terminal_only(
    repo: Path, home: Path, tether: Tether
) -> None:
    for n in range(3):
        add_json(tether, f"Survives a reindex, number {n}")
    (repo / "AGENTS.md").write_text("- Never push to main directly.\n- Run make check before a commit.\n")
    code, out, shown = on_a_terminal(["reindex"], repo, home)
    assert code == 0 and "indexed 3 memories" in out
    assert "reading notes: 0 of 3" in shown and "writing the index" in shown
    assert shown.endswith("\r\x1b[2K")  # cleared before anything else is printed
    code, out, shown = on_a_terminal(["rules", "sync"], repo, home)
    assert code == 0 and "AGENTS.md: 2 added" in out and "syncing rule files: 0 of 1" in shown
    code, out, shown = on_a_terminal(["rules", "sync", "--json"], repo, home)
    assert code == 0 and json.loads(out)["files"] and shown == ""  # --json: quiet
    assert "reading notes" not in tether("reindex").err  # off a terminal: quiet


# -- real subprocesses of the installed command -----------------------------------------------------------


def test_init_from_a_subdirectory(tmp_path: Path, home: Path) -> None:
    repo = make_git_repo(tmp_path / "fresh")
    run = subprocess.run(
        [str(TETHER_BIN), "init"],
        cwd=repo / "src" / "app",
        capture_output=True,
        text=True,
        env={**os.environ, "TETHER_HOME": str(home)},
    )
    assert run.returncode == 0 and f"initialized: {repo / '.tether'}" in run.stdout
    assert (repo / ".tether" / "memories").is_dir() and not (repo / "src" / "app" / ".tether").exists()


def test_end_to_end_add_search_recall(
    repo: Path, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    added = tether_proc(
        "add", "Never call upload() without a timeout", "-c", "gotcha", "-f", "src/app/upload.py", "--json"
    )
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["id"]
    found = tether_proc("search", "upload timeout", "--json")
    assert found.returncode == 0 and json.loads(found.stdout)[0]["id"] == mid
    recalled = tether_proc("recall", "--file", "src/app/upload.py", "--no-record", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert [m["id"] for m in json.loads(recalled.stdout)["memories"]] == [mid]
    usage = tether_proc("add", "x", "--category", "nope")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    user_error = tether_proc("add", "x" * 200)
    assert user_error.returncode == 1 and "--details" in user_error.stderr


def test_export_import_round_trip_through_processes(
    repo: Path, home: Path, tmp_path: Path, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    for args in (
        ["add", "Prefer small PRs", "-c", "pref", "--pin"],
        [
            "add",
            "Auth tokens expire hourly",
            "-c",
            "gotcha",
            "-f",
            "src/app/auth.py",
            "--details",
            "naïve ✓ [[x]]",
        ],
        ["add", "User-wide habit", "--scope", "user"],
    ):
        assert tether_proc(*args).returncode == 0
    exported = tether_proc("export")
    assert exported.returncode == 0 and len(exported.stdout.splitlines()) == 3
    fresh = make_git_repo(tmp_path / "fresh")
    other_home = tmp_path / "home2"
    env = {"TETHER_HOME": str(other_home)}
    assert tether_proc("init", cwd=fresh, env=env).returncode == 0
    dump = tmp_path / "dump.jsonl"
    dump.write_text(exported.stdout, encoding="utf-8")
    imported = tether_proc("import", str(dump), cwd=fresh, env=env)
    assert imported.returncode == 0 and "imported 3 memories" in imported.stdout
    again = tether_proc("export", cwd=fresh, env=env)
    assert again.stdout == exported.stdout
    from_stdin = tether_proc("import", cwd=fresh, env=env, input=exported.stdout)
    assert "imported 0 memories (3 already present)" in from_stdin.stdout


HOSTILE_PATH = "src/\x1b]0;pwned\x07evil.py"  # an OSC sequence that retitles the terminal


def test_memory_text_reaches_the_terminal_shown_not_obeyed(
    repo: Path, ws: Workspace, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    mid = ws.add("Evil paths are data", files=[HOSTILE_PATH]).memory.id
    hostile_note = repo / ".tether" / "memories" / "bad\x1b[2J.md"
    hostile_note.write_text('---\nid: 0000beef\nsummary: "clear \\e[2J now"\n---\n', encoding="utf-8")
    for args in (["list"], ["get", mid], ["search", "evil paths"], ["doctor"], ["list", "--json"]):
        done = tether_proc(*args)
        assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr, args
    assert "src/\\x1b]0;pwned\\x07evil.py" in tether_proc("get", mid).stdout
    warning = tether_proc("list").stderr
    assert "bad\\x1b[2J.md" in warning and "U+001B" in warning
    assert hostile_note.exists()  # skipped, never rewritten or deleted
    exported = tether_proc("export").stdout
    assert json.loads(exported.splitlines()[0])["files"] == [HOSTILE_PATH]  # data stays exact


def test_a_git_worktree_has_the_committed_memories_and_its_own_index(
    repo: Path, tmp_path: Path, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    added = tether_proc(
        "add", "Uploads stream, never buffer", "-c", "gotcha", "-f", "src/app/upload.py", "--json"
    )
    mid = json.loads(added.stdout)["id"]
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "memory"], cwd=repo, check=True)
    worktree = tmp_path / "wt"
    subprocess.run(["git", "worktree", "add", "-q", str(worktree)], cwd=repo, check=True)
    assert (worktree / ".git").is_file()
    found = tether_proc("recall", "-f", "upload.py", "--json", "--no-record", cwd=worktree / "src" / "app")
    assert [m["id"] for m in json.loads(found.stdout)["memories"]] == [mid]
    assert (worktree / ".tether" / "index.db").exists()  # built from the worktree's own notes
    tether_proc("add", "Only in the worktree so far", cwd=worktree)
    listed = tether_proc("list", "--json").stdout
    assert "Only in the worktree" not in listed  # the main checkout sees it once it is committed and merged


def test_an_id_prefix_is_enough_when_it_is_unambiguous(repo: Path, tether: Tether, ws: Workspace) -> None:
    a = str(add_json(tether, "First fact about deploys")["id"])
    got = json.loads(tether("get", a[:4], "--json").out)
    assert got["id"] == a
    assert tether("pin", a[:5]).out.startswith(f"pinned: {a}")
    b = str(add_json(tether, "Second fact about deploys")["id"])
    # Make a second id share the first one's prefix, as a few thousand random ids eventually do.
    shared = a[:4] + b[4:]
    note = ws.store.note_path(b)
    assert note is not None
    # Through the note format: YAML quotes an id that looks like a number ('12345e67'), a plain replace would not.
    memory = notes.parse(Path(note).read_text(), str(note), "project")
    Path(note).write_text(notes.render(dataclasses.replace(memory, id=shared)))
    tether("reindex")
    ambiguous = tether("get", a[:4])
    assert (
        ambiguous.code == 1
        and "ambiguous" in ambiguous.err
        and a in ambiguous.err
        and shared in ambiguous.err
    )
    short = tether("get", a[:3])
    assert short.code == 1 and "at least 4 characters" in short.err
    missing = tether("get", "ffff" if not a.startswith("ffff") else "eeee")
    assert missing.code == 1 and "no memory id starts with" in missing.err


def test_add_warns_about_a_file_that_does_not_exist(repo: Path, tether: Tether) -> None:
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "real.py").write_text("x = 1\n")
    run = tether("add", "Ghosts are scary", "--file", "src/ghost.py", "--file", "src/real.py", "--json")
    assert run.code == 0
    assert "src/ghost.py does not exist" in run.err and "real.py" not in run.err
    assert json.loads(run.out)["missing"] == ["src/ghost.py"]


def test_edit_without_an_editor_or_a_terminal_says_so(
    repo: Path, tether: Tether, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = str(add_json(tether, "Edit me")["id"])
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    run = tether("edit", memory)  # the test runner's stdin is no terminal
    assert run.code == 2 and "no $EDITOR" in run.err and "--summary" in run.err


def test_counts_are_singular_for_one(repo: Path, tether: Tether, tmp_path: Path) -> None:
    seeds = tmp_path / "seed.json"
    seeds.write_text(json.dumps([{"summary": "The only seeded fact"}]))
    assert tether("seed", str(seeds)).out.startswith("seeded 1 memory from seed.json")


def test_help_shows_tether_and_a_command(repo: Path, tether: Tether) -> None:
    top = tether("help")
    assert top.code == 0 and "code-aware memory" in top.out and "rules" in top.out
    sub = tether("help", "rules", "sync")
    assert sub.code == 0 and "Usage: tether rules sync" in sub.out
    bad = tether("help", "frobnicate")
    assert bad.code == 2 and "no command `tether frobnicate`" in bad.err


@pytest.mark.parametrize(
    ("args", "key", "value"),
    [
        (["pin"], "pinned", True),
        (["unpin"], "pinned", False),
        (["ack"], "done", "acknowledged"),
        (["rm"], "status", "archived"),
        (["edit", "--summary", "Edited by flag"], "summary", "Edited by flag"),
    ],
)
def test_write_commands_print_json(
    repo: Path, tether: Tether, args: list[str], key: str, value: object
) -> None:
    memory = str(add_json(tether, "Written through the CLI")["id"])
    run = tether(args[0], memory, *args[1:], "--json")
    assert run.code == 0, run.err
    out = json.loads(run.out)
    assert out["id"] == memory and out[key] == value


class _Terminal:
    """A stderr that says it is a terminal, keeping what is written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_progress_shows_on_a_terminal_only_and_is_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from tether.adapters.cli.common import progress_line

    with progress_line(quiet=False) as off_a_tty:
        assert off_a_tty is None  # pytest's stderr is no terminal
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_line(quiet=True) as quiet:
        assert quiet is None  # --json
    with progress_line(quiet=False) as show:
        assert show is not None
        show("history", 12000, None)
        show("writing", 0, None)
    assert "reading git history: 12,000 commits" in terminal.text and "writing the repo map" in terminal.text
    assert terminal.text.endswith("\r\x1b[2K")  # the line is cleared for what the command prints next


def test_repomap_builds_and_reports_in_json(repo: Path, tether: Run) -> None:
    done = tether("repomap", "--json")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert data["built"] is True and data["renamed"] == 0 and len(data["last_commit"]) == 40
    assert tether("repomap").out.startswith("repo map up to date at ")


def complete(
    tether_proc: Callable[..., subprocess.CompletedProcess[str]],
    shell: str,
    line: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """What the shell's completion script asks the real `tether` for the last word of `line`."""
    words = line.split(" ")
    # bash and zsh pass the index of the word being completed; fish passes the word itself.
    cword = words[-1] if shell == "fish" else str(len(words) - 1)
    env = {"COMP_WORDS": line, "COMP_CWORD": cword, "_TETHER_COMPLETE": f"{shell}_complete"}
    return tether_proc(cwd=cwd, env=env)


@pytest.mark.parametrize("command", ["get", "edit", "rm", "restore", "pin", "unpin", "ack", "explain"])
def test_shell_completion_offers_ids_starting_with_what_was_typed(
    repo: Path, tether: Tether, tether_proc: Callable[..., subprocess.CompletedProcess[str]], command: str
) -> None:
    a = str(add_json(tether, "Staging API is on port 6443")["id"])
    b = str(add_json(tether, "Deploys go through make ship-v2")["id"])
    done = complete(tether_proc, "bash", f"tether {command} ")
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == sorted([f"plain,{a}", f"plain,{b}"])
    narrowed = complete(tether_proc, "bash", f"tether {command} {a[:3].upper()}").stdout.split()
    assert f"plain,{a}" in narrowed and all(item.startswith(f"plain,{a[:3]}") for item in narrowed)


def test_shell_completion_describes_ids_in_zsh_and_fish_and_covers_supersede(
    repo: Path, tether: Tether, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    a = str(add_json(tether, "Staging API is on port 6443")["id"])
    zsh = complete(tether_proc, "zsh", f"tether get {a[:4]}").stdout.splitlines()
    assert zsh[:3] == ["plain", a, "Staging API is on port 6443"]
    fish = complete(tether_proc, "fish", f"tether supersede {a[:2]}").stdout.splitlines()
    assert f"plain,{a}\tStaging API is on port 6443" in fish
    option = complete(tether_proc, "bash", "tether add Newer --supersedes ").stdout.split()
    assert f"plain,{a}" in option
    # The scripts to enable it, as the README says to load them.
    for shell, marker in [("bash", "_tether_completion"), ("zsh", "#compdef tether"), ("fish", "complete")]:
        script = tether_proc(env={"_TETHER_COMPLETE": f"{shell}_source"})
        assert script.returncode == 0 and marker in script.stdout, (shell, script.stdout[:200])


def test_shell_completion_is_silent_where_there_is_nothing_to_offer(
    repo: Path, tmp_path: Path, tether: Tether, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    add_json(tether, "Staging API is on port 6443")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    nothing = complete(tether_proc, "bash", "tether get ", cwd=outside)
    assert (nothing.returncode, nothing.stdout.strip(), nothing.stderr) == (0, "", "")
    (repo / ".tether" / "index.db").write_bytes(b"not a database at all" * 100)
    damaged = complete(tether_proc, "bash", "tether get ")
    # No traceback and no error text in the user's command line; the next real command recovers.
    assert damaged.returncode == 0 and "Traceback" not in damaged.stdout + damaged.stderr


def test_shell_completion_of_review_offers_the_pending_requests(
    repo: Path, ws: Workspace, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    asked = ws.add("Always run the linter first", origin="agent", pinned=True)
    assert asked.pending
    for verb in ("approve", "reject"):
        items = complete(tether_proc, "fish", f"tether review {verb} ").stdout.splitlines()
        assert items == [f"plain,{asked.memory.id}\tadd: Always run the linter first"], items
