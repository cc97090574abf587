"""Hook tests with the JSON the agents really send (absolute paths included), run as real processes."""

from __future__ import annotations

import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import claude, context_of, git, run_hook
from tether.adapters.hooks import main as hook_main
from tether.workspace import Workspace

TRAP_PROMPT = "what port does staging run on, which host do we deploy to, and with what command?"


@pytest.fixture
def trap(repo: Path, ws: Workspace) -> Path:
    (repo / "README.md").write_text("Staging runs on port 8080 on host europa. Deploy with ./deploy.sh\n")
    ws.add("Staging API is on port 6443, deploys land on host callisto", category="context")
    ws.add("Deploys go exclusively through make ship-v2, never raw rsync", category="decision")
    return repo


def test_trap_prompt_injects_the_true_facts_and_none_of_the_readme(trap: Path, home: Path) -> None:
    done = run_hook(
        "claude", "UserPromptSubmit", claude("UserPromptSubmit", trap, prompt=TRAP_PROMPT), trap, home
    )
    assert done.returncode == 0, done.stderr
    text = context_of(done.stdout)
    assert text.startswith("=== Project memory (auto-recalled) ===")
    for fact in ("6443", "callisto", "make ship-v2"):
        assert fact in text
    # As words: a random memory id may hold "8080" (8080b358 did).
    for lie in ("8080", "europa", "deploy.sh"):
        assert not re.search(rf"\b{re.escape(lie)}\b", text)
    assert "memory_get" in text.splitlines()[-1]


def test_prompt_with_empty_memory_injects_the_fallback(repo: Path, home: Path) -> None:
    done = run_hook(
        "claude", "UserPromptSubmit", claude("UserPromptSubmit", repo, prompt="fix the bug"), repo, home
    )
    assert "memory_search" in context_of(done.stdout)


def test_read_injects_the_files_gotchas_once(repo: Path, ws: Workspace, home: Path) -> None:
    gotcha = ws.add(
        "upload() must stream, never buffer whole files", category="gotcha", files=["src/app/upload.py"]
    ).memory
    ws.add("Uploads go to the eu bucket", category="context", files=["src/app/upload.py"])
    path = str(repo / "src" / "app" / "upload.py")
    payload = claude(
        "PostToolUse",
        repo,
        tool_name="Read",
        tool_input={"file_path": path},
        tool_use_id="t1",
        tool_response={"type": "text", "file": {"filePath": path, "content": "x", "numLines": 1}},
    )
    first = context_of(run_hook("claude", "PostToolUse", payload, repo, home).stdout)
    assert (
        first
        == f'· gotcha "upload() must stream, never buffer whole files" [{gotcha.id}] — review before editing'
    )
    assert run_hook("claude", "PostToolUse", payload, repo, home).stdout == ""  # cooldown: said once


def gotchas_and_a_prompt(
    repo: Path, ws: Workspace, home: Path, path: str, unrelated: list[str], matching: list[str], prompt: str
) -> str:
    """`unrelated` gotchas on `path`, then (newer) two `matching` the prompt; the prompt hook (at one memory a
    prompt) injects one of the two. Returns the other's id: the one a ranked listing must put first."""
    clock = iter(range(100))
    ws.clock = lambda: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=next(clock))
    for text in unrelated:
        ws.add(text, category="gotcha", files=[path])
    ids = [ws.add(text, category="gotcha", files=[path]).memory.id for text in matching]
    asked = claude("UserPromptSubmit", repo, prompt=prompt)
    injected = context_of(run_hook("claude", "UserPromptSubmit", asked, repo, home).stdout)
    (other,) = [mid for mid in ids if mid not in injected]
    return other


def test_a_read_lists_the_files_best_gotchas_for_the_prompt_and_counts_the_rest(
    repo: Path, ws: Workspace, home: Path, tether: Any
) -> None:
    """Fails with the listing before session 14 (every gotcha of the file, oldest first, until the session's
    hint budget): the oldest gotchas are about other things, and there were five lines, no count."""
    assert tether("config", "recall.limit", "1").code == 0
    other = gotchas_and_a_prompt(
        repo,
        ws,
        home,
        "src/app/upload.py",
        [
            "upload() logs the caller's tenant on every call",
            "Upload size limits come from settings.MAX_UPLOAD, not constants",
            "upload() runs inside the request's transaction",
            "Never rename upload(): the mobile client calls it by name",
        ],
        [
            "Chunk retries back off exponentially; a retry loop without backoff floods storage",
            "A failed chunk's retry resumes from its offset, never from byte 0",
        ],
        "how should a failed chunk's retries back off?",
    )
    read = claude(
        "PostToolUse",
        repo,
        tool_name="Read",
        tool_input={"file_path": str(repo / "src/app/upload.py")},
        tool_response={},
    )
    lines = context_of(run_hook("claude", "PostToolUse", read, repo, home).stdout).splitlines()
    assert len(lines) == 4 and other in lines[0]  # the prompt's other match first, however new
    assert lines[-1] == (
        "· (+2 more gotchas on src/app/upload.py: `tether list --file src/app/upload.py --category gotcha`)"
    )


def test_an_edit_lists_the_files_best_gotchas_for_the_prompt_and_the_next_edit_the_next_ones(
    repo: Path, ws: Workspace, home: Path, tether: Any
) -> None:
    """Fails with the listing before session 14 (all of a file's gotchas at its first edit, oldest first)."""
    assert tether("config", "recall.limit", "1").code == 0
    other = gotchas_and_a_prompt(
        repo,
        ws,
        home,
        "src/app/auth.py",
        [
            "auth() logs the caller's tenant on every call",
            "Token lifetimes come from settings.TOKEN_TTL, not constants",
            "auth() runs inside the request's transaction",
            "Never rename auth(): the mobile client calls it by name",
        ],
        [
            "Password hashes use argon2id, never bcrypt",
            "Rehash a password hash on login when its cost is old",
        ],
        "which password hash do we use, and when to rehash?",
    )
    path = str(repo / "src/app/auth.py")
    edit = claude(
        "PreToolUse",
        repo,
        tool_name="Write",
        tool_input={"file_path": path, "content": "import app.upload\n"},
    )
    first = context_of(run_hook("claude", "PreToolUse", edit, repo, home).stdout).splitlines()
    assert len(first) == 4 and other in first[0]
    assert (
        first[-1]
        == "· (+2 more gotchas on src/app/auth.py: `tether list --file src/app/auth.py --category gotcha`)"
    )
    second = context_of(run_hook("claude", "PreToolUse", edit, repo, home).stdout).splitlines()
    assert len(second) == 2 and not set(ids_in(second)) & set(ids_in(first))
    assert run_hook("claude", "PreToolUse", edit, repo, home).stdout == ""


def ids_in(lines: list[str]) -> list[str]:
    return re.findall(r"\[([0-9a-f]{8})\]", "\n".join(lines))


def test_a_ranking_that_fails_leaves_the_files_gotchas_by_age_and_says_so_in_the_log(
    repo: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.adapters.hooks.gotchas import gotchas_for, ranked_gotchas
    from tether.recall.recaller import Recaller

    for text in ("upload() must stream", "upload() retries three times", "upload() logs the tenant"):
        ws.add(text, category="gotcha", files=["src/app/upload.py"])

    def broken(*args: Any, **kwargs: Any) -> list[str]:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(Recaller, "order", broken)
    assert ranked_gotchas(ws, "src/app/upload.py", "why does upload retry?") == gotchas_for(
        ws, "src/app/upload.py"
    )
    log = (repo / ".tether" / "logs" / "tether.log").read_text(encoding="utf-8")
    assert "ranking the gotchas of src/app/upload.py failed; listed them by age" in log


def test_a_read_of_some_lines_lists_the_gotchas_anchored_in_them(
    repo: Path, ws: Workspace, home: Path
) -> None:
    """A ranged read (Claude Code's offset and limit, Gemini's 0-based offset) lists the gotchas anchored in
    the lines it read, where they are, and only counts the ones anchored elsewhere in the file."""
    from tether.anchors.resolve import FileView, make

    body = "".join(f"def step_{n}():\n    return {n}\n\n" for n in range(60))
    (repo / "src/app/steps.py").write_text(body, encoding="utf-8")
    view = FileView.read(repo, "src/app/steps.py")
    early = ws.add(
        "step_2 must stay idempotent",
        category="gotcha",
        files=["src/app/steps.py"],
        anchors=[make(view, "", (7, 8))],
    ).memory
    late = ws.add(
        "step_50 runs after the lock is released",
        category="gotcha",
        files=["src/app/steps.py"],
        anchors=[make(view, "", (151, 152))],
    ).memory
    path = str(repo / "src/app/steps.py")
    claude_read = claude(
        "PostToolUse",
        repo,
        tool_name="Read",
        tool_input={"file_path": path, "offset": 1, "limit": 30},
        tool_response={},
    )
    lines = context_of(run_hook("claude", "PostToolUse", claude_read, repo, home).stdout).splitlines()
    assert lines[0].startswith("· gotcha on step_2(): ") and early.id in lines[0]  # where it is
    assert lines[1:] == [
        "· (+1 more gotcha on src/app/steps.py: `tether list --file src/app/steps.py --category gotcha`)"
    ]
    gemini_read = {
        "session_id": "sess-2",
        "cwd": str(repo),
        "hook_event_name": "AfterTool",
        "tool_name": "read_file",
        "tool_input": {"file_path": path, "offset": 140, "limit": 20},  # 0-based: lines 141-160
    }
    done = run_hook("gemini", "AfterTool", gemini_read, repo, home)
    text = context_of(done.stdout)
    assert late.id in text and early.id not in text.split("more gotcha")[0]


def test_the_hooks_load_the_credential_detector_only_for_a_prompt_that_may_hold_one() -> None:
    """Importing `tether.model.secrets` costs a hook tens of milliseconds: the prompt hook screens first."""
    probe = (
        "import sys; from tether.adapters.hooks import behaviour as b; from tether.model.prompt import sanitize;"
        "q = sanitize('why do chunked uploads retry twice?'); assert not b.may_hold_secret(q);"
        "print('tether.model.secrets' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_prompt_holding_a_credential_is_not_kept_for_the_read_hints(
    repo: Path, ws: Workspace, home: Path
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    prompt = claude("UserPromptSubmit", repo, prompt=f"why does the deploy with token {token} fail?")
    assert run_hook("claude", "UserPromptSubmit", prompt, repo, home).returncode == 0
    state = ws.store.session_state("sess-1")
    assert state is not None and state["turn"] == 1 and state["query"] == ""
    prompt = claude("UserPromptSubmit", repo, prompt="why does the deploy fail?")
    run_hook("claude", "UserPromptSubmit", prompt, repo, home)
    assert ws.store.session_state("sess-1")["query"] == "why does the deploy fail?"  # type: ignore[index]


@pytest.mark.parametrize(
    "mode, priority, first, second",
    [
        ("auto", "high", "deny", ""),
        ("auto", "normal", "context", ""),
        ("deny-once", "normal", "deny", ""),
        ("context", "high", "context", ""),
        ("off", "high", "", ""),
    ],
)
def test_edit_guard_modes(
    repo: Path, ws: Workspace, home: Path, tether: Any, mode: str, priority: str, first: str, second: str
) -> None:
    assert tether("config", "guard.mode", mode).code == 0
    ws.add(
        "auth.py tokens expire after 5 minutes",
        category="gotcha",
        files=["src/app/auth.py"],
        priority=priority,
    )
    edit = claude(
        "PreToolUse",
        repo,
        tool_name="Edit",
        tool_use_id="t2",
        tool_input={
            "file_path": str(repo / "src/app/auth.py"),
            "old_string": "a",
            "new_string": "b",
            "replace_all": False,
        },
    )

    def outcome(out: str) -> str:
        if not out:
            return ""
        data = json.loads(out)["hookSpecificOutput"]
        if data.get("permissionDecision") == "deny":
            assert "tokens expire after 5 minutes" in data["permissionDecisionReason"]
            return "deny"
        return "context"

    assert outcome(run_hook("claude", "PreToolUse", edit, repo, home).stdout) == first
    assert outcome(run_hook("claude", "PreToolUse", edit, repo, home).stdout) == second


def test_gotcha_seen_on_read_is_not_denied_on_edit(repo: Path, ws: Workspace, home: Path) -> None:
    ws.add(
        "auth.py tokens expire after 5 minutes", category="gotcha", files=["src/app/auth.py"], priority="high"
    )
    path = str(repo / "src/app/auth.py")
    run_hook(
        "claude",
        "PostToolUse",
        claude("PostToolUse", repo, tool_name="Read", tool_input={"file_path": path}, tool_response={}),
        repo,
        home,
    )
    edit = claude("PreToolUse", repo, tool_name="Write", tool_input={"file_path": path, "content": "x"})
    assert run_hook("claude", "PreToolUse", edit, repo, home).stdout == ""


def test_touched_files_feed_the_next_prompt(repo: Path, ws: Workspace, home: Path) -> None:
    memory = ws.add("upload.py chunk size is 5 MB", files=["src/app/upload.py"]).memory
    path = str(repo / "src/app/upload.py")
    run_hook(
        "claude",
        "PostToolUse",
        claude(
            "PostToolUse",
            repo,
            tool_name="Edit",
            tool_input={"file_path": path, "old_string": "1", "new_string": "2"},
            tool_response={"filePath": path},
        ),
        repo,
        home,
    )
    done = run_hook(
        "claude", "UserPromptSubmit", claude("UserPromptSubmit", repo, prompt="now add tests"), repo, home
    )
    assert memory.id in context_of(done.stdout)


def test_work_in_progress_feeds_a_sessions_first_prompt_when_the_prompt_is_about_it(
    repo: Path, ws: Workspace, home: Path
) -> None:
    upload = [
        ws.add(f"upload.py {what}", category="gotcha", files=["src/app/upload.py"]).memory.id
        for what in ("chunk size is 5 MB", "retries back off from 2 s", "keeps the last part in memory")
    ]
    deploy = ws.add("Deploys go exclusively through make ship-v2, never raw rsync", files=["docs/deploy.md"])

    def first_prompt(session: str, prompt: str) -> set[str]:
        event = claude("UserPromptSubmit", repo, session, prompt=prompt)
        context = context_of(run_hook("claude", "UserPromptSubmit", event, repo, home).stdout)
        return {mid for mid in [*upload, deploy.memory.id] if mid in context}

    assert not set(upload) & first_prompt("clean", "now add tests")
    (repo / "src/app/upload.py").write_text("def upload():\n    return 2\n", encoding="utf-8")
    # A prompt that says nothing of its own: the work in the tree says what the session is about.
    assert set(upload) <= first_prompt("vague", "now add tests")
    # A prompt about other things: the work left in the tree does not take the slots of what it asks.
    asked = first_prompt("elsewhere", "how do deploys work, with rsync?")
    assert deploy.memory.id in asked and not set(upload) & asked
    # A prompt about the work: the work's memories come.
    about = first_prompt("about", "why do upload retries back off?")
    assert set(upload) <= about
    # Asked of git once a session: the clean session's next prompt keeps what its first one found.
    assert not set(upload) & first_prompt("clean", "now add tests")


def test_a_clean_branchs_own_commits_feed_a_sessions_first_prompt(
    repo: Path, ws: Workspace, home: Path
) -> None:
    """The work was committed on a branch and the tree is clean: the branch's commits since it left `main` are
    the work in progress (as a session resuming a feature branch finds it)."""
    upload = [
        ws.add(f"upload.py {what}", category="gotcha", files=["src/app/upload.py"]).memory.id
        for what in ("chunk size is 5 MB", "retries back off from 2 s", "keeps the last part in memory")
    ]

    def first_prompt(session: str) -> set[str]:
        event = claude("UserPromptSubmit", repo, session, prompt="let's pick this up again")
        context = context_of(run_hook("claude", "UserPromptSubmit", event, repo, home).stdout)
        return {m for m in upload if m in context}

    assert first_prompt("trunk") == set()  # on the trunk, nothing of its own
    git(repo, "checkout", "-q", "-b", "feature/resumable-uploads")
    (repo / "src/app/upload.py").write_text("def upload():\n    return 2\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "resume uploads")
    assert first_prompt("branch") == set(upload)


def test_memory_tool_use_silences_hints(repo: Path, ws: Workspace, home: Path) -> None:
    ws.add("upload() must stream", category="gotcha", files=["src/app/upload.py"])
    run_hook(
        "claude",
        "PostToolUse",
        claude(
            "PostToolUse",
            repo,
            tool_name="mcp__tether__memory_search",
            tool_input={"query": "upload"},
            tool_response={},
        ),
        repo,
        home,
    )
    read = claude(
        "PostToolUse",
        repo,
        tool_name="Read",
        tool_input={"file_path": str(repo / "src/app/upload.py")},
        tool_response={},
    )
    assert run_hook("claude", "PostToolUse", read, repo, home).stdout == ""


def test_session_start_injects_pinned_and_refreshes_the_repo_map(
    repo: Path, ws: Workspace, home: Path
) -> None:
    pinned = ws.add("Run make test before committing", category="pref", pinned=True).memory
    done = run_hook("claude", "SessionStart", claude("SessionStart", repo, source="startup"), repo, home)
    assert done.returncode == 0
    text = context_of(done.stdout)
    assert pinned.id in text and "★" in text
    conn = sqlite3.connect(repo / ".tether" / "index.db")
    assert conn.execute("SELECT count(*) FROM migrations").fetchone()[0] >= 2


@pytest.mark.parametrize(
    "agent, event, payload, expect",
    [
        ("codex", "UserPromptSubmit", {"prompt": TRAP_PROMPT}, "hookSpecificOutput"),
        ("gemini", "BeforeAgent", {"prompt": TRAP_PROMPT}, "hookSpecificOutput"),
        ("cursor", "beforeSubmitPrompt", {"prompt": TRAP_PROMPT}, "continue"),
    ],
)
def test_other_agents_prompt_events(
    trap: Path, home: Path, agent: str, event: str, payload: dict[str, Any], expect: str
) -> None:
    body = {"session_id": "s", "cwd": str(trap), "hook_event_name": event, **payload}
    if agent == "cursor":
        body = {"conversation_id": "c", "workspace_roots": [str(trap)], "hook_event_name": event, **payload}
    done = run_hook(agent, event, body, trap, home)
    data = json.loads(done.stdout)
    assert expect in data
    if expect == "hookSpecificOutput":
        assert "callisto" in data["hookSpecificOutput"]["additionalContext"]


def test_codex_apply_patch_guard_and_cursor_deny(repo: Path, ws: Workspace, home: Path) -> None:
    ws.add(
        "auth.py tokens expire after 5 minutes", category="gotcha", files=["src/app/auth.py"], priority="high"
    )
    patch = "*** Begin Patch\n*** Update File: src/app/auth.py\n@@\n-a\n+b\n*** End Patch"
    done = run_hook(
        "codex",
        "PreToolUse",
        {
            "session_id": "x",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch",
            "tool_input": {"command": patch},
        },
        repo,
        home,
    )
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    done = run_hook(
        "cursor",
        "preToolUse",
        {
            "conversation_id": "c2",
            "workspace_roots": [str(repo)],
            "hook_event_name": "preToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(repo / "src/app/auth.py")},
        },
        repo,
        home,
    )
    assert json.loads(done.stdout)["permission"] == "deny"
    done = run_hook(
        "gemini",
        "BeforeTool",
        {
            "session_id": "g",
            "cwd": str(repo),
            "hook_event_name": "BeforeTool",
            "tool_name": "replace",
            "tool_input": {"file_path": str(repo / "src/app/auth.py")},
        },
        repo,
        home,
    )
    assert json.loads(done.stdout)["decision"] == "deny"


def _corrupt(repo: Path) -> None:
    (repo / ".tether" / "index.db").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (repo / ".tether" / f"index.db{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize(
    "case",
    [
        "malformed-json",
        "not-object",
        "no-project",
        "corrupt-index",
        "locked-index",
        "unknown-event",
        "odd-types",
    ],
)
def test_fail_open(case: str, repo: Path, ws: Workspace, home: Path, tmp_path: Path) -> None:
    ws.add("upload() must stream", category="gotcha", files=["src/app/upload.py"])
    ws.close()
    payload: Any = claude("UserPromptSubmit", repo, prompt="hello there upload")
    event, cwd, env = "UserPromptSubmit", repo, {"TETHER_HOOK_DEADLINE": "1.5"}
    holder = None
    if case == "malformed-json":
        payload = '{"session_id": "s", "prompt": '
    elif case == "not-object":
        payload = "[1, 2, 3]"
    elif case == "no-project":
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
        payload = claude("UserPromptSubmit", cwd, prompt="hello")
    elif case == "corrupt-index":
        _corrupt(repo)
    elif case == "locked-index":
        holder = sqlite3.connect(repo / ".tether" / "index.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    elif case == "unknown-event":
        event = "NoSuchEvent"
    elif case == "odd-types":
        payload = claude("UserPromptSubmit", repo, prompt=None)
        payload["session_id"] = {"not": "a string"}
        env["TETHER_HOOK_DEADLINE"] = "not a number"
    try:
        done = run_hook("claude", event, payload, cwd, home, env)
    finally:
        if holder is not None:
            holder.close()
    assert done.returncode == 0
    if case == "odd-types":
        # A session id that is not a string, no prompt and a deadline that is not a number: the hook still
        # answers a prompt (no memory matches an empty prompt: nothing but well-formed JSON, or nothing).
        assert (
            done.stdout == ""
            or json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        )
        assert not (repo / ".tether" / "logs" / "hooks.log").exists(), "odd but valid input is not a failure"
    else:
        assert done.stdout == ""
    if case in ("malformed-json", "corrupt-index", "locked-index", "unknown-event", "not-object"):
        log = (repo / ".tether" / "logs" / "hooks.log").read_text()
        assert len(log.strip().splitlines()) == 1


def test_hook_main_in_process_never_raises(repo: Path, home: Path) -> None:
    out = io.StringIO()
    assert hook_main(["claude", "UserPromptSubmit"], stdin=io.StringIO("{oops"), stdout=out) == 0
    assert out.getvalue() == ""


def test_hooks_never_load_a_configured_embedding_model(trap: Path, home: Path, tether: Any) -> None:
    # An unreachable endpoint stands for a model that takes seconds to load: the hook must not touch it.
    assert tether("config", "embedder", "openai:http://127.0.0.1:9/v1#some-model").code == 0
    # No warm process either (tests/test_embed_service.py covers hooks with one): nothing left running.
    assert tether("config", "embed_server.enabled", "false").code == 0
    (trap / ".tether" / "memories" / "zz-new.md").write_text(
        "---\nid: 0a0b0c0d\nsummary: Staging logs live in the callisto journal\ncategory: context\n---\n"
    )
    done = run_hook(
        "claude", "UserPromptSubmit", claude("UserPromptSubmit", trap, prompt=TRAP_PROMPT), trap, home
    )
    text = context_of(done.stdout)
    assert "6443" in text and "make ship-v2" in text
    assert not (trap / ".tether" / "logs" / "hooks.log").exists()


def test_hooks_see_new_notes_at_once_and_in_place_edits_from_session_start(
    repo: Path, ws: Workspace, home: Path
) -> None:
    memory = ws.add("Staging API is on port 6443", category="context").memory
    prompt = claude("UserPromptSubmit", repo, prompt="which port does the staging API use?")
    assert memory.id in context_of(run_hook("claude", "UserPromptSubmit", prompt, repo, home).stdout)
    # A note another session writes (temp file + rename) changes the directory: the next hook sees it.
    other = ws.add("The staging API port is pinned in deploy/staging.yaml", category="context").memory
    prompt2 = claude(
        "UserPromptSubmit", repo, session="sess-2", prompt="which port does the staging API use?"
    )
    assert other.id in context_of(run_hook("claude", "UserPromptSubmit", prompt2, repo, home).stdout)
    # An editor saving in place may leave the directory's mtime alone: session start scans every note.
    note = next((repo / ".tether" / "memories").glob(f"{memory.id}-*.md"))
    with open(note, "r+", encoding="utf-8") as handle:
        text = handle.read().replace("port 6443", "port 7443")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    run_hook(
        "claude", "SessionStart", claude("SessionStart", repo, session="sess-3", source="startup"), repo, home
    )
    prompt3 = claude(
        "UserPromptSubmit", repo, session="sess-3", prompt="which port does the staging API use?"
    )
    assert "7443" in context_of(run_hook("claude", "UserPromptSubmit", prompt3, repo, home).stdout)


def test_terminal_escapes_in_memory_data_reach_the_agent_shown_not_obeyed(
    repo: Path, ws: Workspace, home: Path
) -> None:
    hostile = "src/\x1b]0;pwned\x07evil.py"  # an OSC sequence that retitles the terminal
    (repo / hostile).parent.mkdir(parents=True, exist_ok=True)
    (repo / hostile).write_text("x\n", encoding="utf-8")
    ws.add("evil.py must stay ASCII", category="gotcha", files=[hostile], priority="high")
    edit = claude("PreToolUse", repo, tool_name="Write", tool_input={"file_path": str(repo / hostile)})
    out = run_hook("claude", "PreToolUse", edit, repo, home).stdout
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "evil.py must stay ASCII" in reason
    assert "src/\\x1b]0;pwned\\x07evil.py" in reason
    assert "\x1b" not in reason and "\x07" not in reason


def test_a_hook_blocked_past_its_deadline_exits_at_it_with_one_log_line(
    repo: Path, ws: Workspace, home: Path
) -> None:
    # Session start wants the writer lock twice (a memory follows a renamed file, a changed rule file is
    # re-synced), each inside a housekeeping pass that logs and goes on after `except Exception`; another
    # process holds the lock. The deadline must end the hook, not one pass of it.
    import fcntl
    import time

    from conftest import git
    from tether.intake.rules import sync_rules
    from tether.lifecycle.housekeeping import refresh_repo

    ws.add("Pinned: run make check before pushing", category="pref", pinned=True)
    ws.add("upload() must stream", category="gotcha", files=["src/app/upload.py"])
    (repo / "AGENTS.md").write_text("# Rules\n\n- Use ruff format.\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rules")
    refresh_repo(ws)
    sync_rules(ws)
    git(repo, "mv", "src/app/upload.py", "src/app/uploader.py")
    git(repo, "commit", "-q", "-m", "rename")
    (repo / "AGENTS.md").write_text(
        "# Rules\n\n- Use ruff format.\n- Never push to main.\n", encoding="utf-8"
    )
    ws.close()
    payload = json.dumps(claude("SessionStart", repo, source="startup"))
    with open(repo / ".tether" / ".lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "hook", "claude", "SessionStart"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=repo,
            env={**os.environ, "TETHER_HOME": str(home), "TETHER_HOOK_DEADLINE": "1"},
        )
        try:
            out, err = proc.communicate(payload, timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        elapsed = time.monotonic() - started
    assert proc.returncode == 0, err
    # 1 s deadline; the rest is interpreter start on a machine shared with other test runs.
    assert elapsed < 12, f"the hook ran {elapsed:.1f} s past a 1 s deadline"
    assert out == "", "nothing is injected once the deadline has passed"
    lines = (repo / ".tether" / "logs" / "hooks.log").read_text().strip().splitlines()
    assert len(lines) == 1 and "deadline" in json.loads(lines[0])["error"]


def test_a_hook_blocked_in_cleanup_is_ended_by_the_hard_stop(repo: Path, home: Path) -> None:
    # The deadline raised, but a `finally` blocks too: the process that is the hook ends itself, exit 0.
    import time

    code = (
        "import io, sys, time\n"
        "import tether.adapters.hooks as hooks\n"
        "def work(*_):\n"
        "    try:\n"
        "        time.sleep(60)\n"
        "    finally:\n"
        "        time.sleep(60)\n"
        "hooks._work = work\n"
        "sys.exit(hooks.main(['claude', 'UserPromptSubmit'], stdin=io.StringIO('{}'), hard=True))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TETHER_HOME": str(home), "TETHER_HOOK_DEADLINE": "0.5"},
    )
    assert done.returncode == 0 and done.stdout == "", done.stderr
    assert time.monotonic() - started < 15
    lines = (repo / ".tether" / "logs" / "hooks.log").read_text().strip().splitlines()
    assert len(lines) == 1 and "ended" in json.loads(lines[0])["error"]


def test_without_sigalrm_a_hook_runs_without_a_deadline(
    repo: Path, ws: Workspace, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows has neither SIGALRM nor setitimer: the runner must not crash there, and it answers as usual.
    import signal

    ws.add("Staging API is on port 6443", category="context")
    monkeypatch.delattr(signal, "SIGALRM")
    monkeypatch.delattr(signal, "setitimer")
    out = io.StringIO()
    payload = json.dumps(claude("UserPromptSubmit", repo, prompt="which port does staging use?"))
    assert hook_main(["claude", "UserPromptSubmit"], stdin=io.StringIO(payload), stdout=out) == 0
    assert "6443" in context_of(out.getvalue())
    assert not (repo / ".tether" / "logs" / "hooks.log").exists()


@pytest.mark.parametrize("agent", ["gemini", "cursor", "claude"])
def test_pre_edit_context_is_recorded_only_where_the_agent_shows_it(
    repo: Path, ws: Workspace, home: Path, agent: str
) -> None:
    # guard.mode auto with a normal gotcha answers context, not a deny. Gemini's BeforeTool and Cursor's
    # preToolUse drop context: the gotcha was not shown, so it is not surfaced, nor marked seen.
    gotcha = ws.add(
        "auth.py tokens expire after 5 minutes", category="gotcha", files=["src/app/auth.py"]
    ).memory
    target = str(repo / "src/app/auth.py")
    event = {"gemini": "BeforeTool", "cursor": "preToolUse", "claude": "PreToolUse"}[agent]
    body: dict[str, Any] = {"session_id": "s", "cwd": str(repo), "hook_event_name": event}
    if agent == "cursor":
        body = {"conversation_id": "s", "workspace_roots": [str(repo)], "hook_event_name": event}
    body |= {"tool_name": "replace" if agent == "gemini" else "Edit", "tool_input": {"file_path": target}}
    done = run_hook(agent, event, body, repo, home)
    assert done.returncode == 0, done.stderr
    surfaced = ws.store.telemetry([gotcha.id]).get(gotcha.id)
    if agent == "claude":
        assert gotcha.id in context_of(done.stdout)
        assert surfaced is not None and surfaced.surfaced == 1
    else:
        assert done.stdout == ""
        assert surfaced is None or surfaced.surfaced == 0
        assert gotcha.id not in (ws.store.session_state("s") or {}).get("seen", {})
        # ... and arrives once the edit is done, with the agent's after-tool hook
        after = {"gemini": "AfterTool", "cursor": "postToolUse"}[agent]
        done = run_hook(agent, after, body | {"hook_event_name": after}, repo, home)
        shown = json.loads(done.stdout)
        text = (
            shown["additional_context"]
            if agent == "cursor"
            else shown["hookSpecificOutput"]["additionalContext"]
        )
        assert gotcha.id in text
        assert ws.store.telemetry([gotcha.id])[gotcha.id].surfaced == 1
    if agent == "claude":  # its pre-edit hook showed it: the after-tool hook says nothing again
        after_edit = claude(
            "PostToolUse", repo, session="s", tool_name="Edit", tool_input={"file_path": target}
        )
        assert run_hook(agent, "PostToolUse", after_edit, repo, home).stdout == ""
