"""Fault injection: a full disk, a read-only checkout, an index held past every timeout, and SIGKILL at
random (seeded) points of add, edit, reindex, rules sync and MCP add.

Each ends with every acknowledged write present, `tether doctor` clean (or naming exactly what is wrong),
commands ending in a clear message (never a traceback) and hooks exiting 0 within their deadline.
"""

from __future__ import annotations

import json
import os
import random
import resource
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import TETHER_BIN, claude, index_ids, make_git_repo, note_files
from tether.project import init_project
from tether.workspace import Workspace

SEED = 11  # the kill points are random, and the same on every run
ROUNDS = 8  # per operation: 5 operations, 40 SIGKILLs
HOOK_DEADLINE = 3.0
# Interpreter start and a sync on a machine shared with other test runs: generous, never tight.
HOOK_MARGIN = 10.0


def run(
    repo: Path, home: Path, *args: str, input: str | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TETHER_BIN), *args],
        cwd=repo,
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TETHER_HOME": str(home)},
        **kwargs,
    )


def hook_in_time(repo: Path, home: Path, **limits: Any) -> subprocess.CompletedProcess[str]:
    """A prompt hook as the agent runs it: it must exit 0, quickly, whatever state the store is in."""
    started = time.monotonic()
    done = subprocess.run(
        [str(TETHER_BIN), "hook", "claude", "UserPromptSubmit"],
        cwd=repo,
        input=json.dumps(claude("UserPromptSubmit", repo, prompt="how do uploads retry?")),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TETHER_HOME": str(home)},
        **limits,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < HOOK_DEADLINE + HOOK_MARGIN
    return done


def clear_failure(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    assert any(word in done.stderr for word in words), done.stderr


def doctor_clean(repo: Path, home: Path) -> None:
    done = run(repo, home, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr


# -- a full disk ---------------------------------------------------------------------------------------


def _limit_file_size(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), not kills
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_ends_writes_in_a_clear_message(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        kept = ws.add("Uploads retry three times", files=["src/app/upload.py"]).memory
    small = _limit_file_size(64)  # every note and the config are larger
    big = "Uploads are chunked: " + "x" * 500
    clear_failure(run(repo, home, "add", big, preexec_fn=small), "file size limit", "unavailable")
    clear_failure(
        run(repo, home, "edit", kept.id, "--details", "y" * 500, preexec_fn=small),
        "file size limit",
        "unavailable",
    )
    clear_failure(run(repo, home, "config", "distill.model", "m" * 300, preexec_fn=small), "file size limit")
    hook_in_time(repo, home, preexec_fn=small)
    listed = run(repo, home, "list", "--json")
    assert [m["id"] for m in json.loads(listed.stdout)] == [kept.id]
    assert "x" * 500 not in "".join(p.read_text() for p in note_files(repo))
    doctor_clean(repo, home)


@contextmanager
def mounted(target: Path, *options: str) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *options, str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}): needs root with CAP_SYS_ADMIN")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def test_a_full_disk_fails_every_write_clearly_and_loses_nothing(tmp_path: Path, home: Path) -> None:
    disk = tmp_path / "disk"
    with mounted(disk, "-t", "tmpfs", "-o", "size=2m", "tmpfs"):
        repo = make_git_repo(disk / "repo")
        init_project(repo, home)
        acked = []
        with Workspace.open(repo, home=home) as ws:
            for i in range(5):
                acked.append(ws.add(f"Acknowledged memory {i} about upload retries").memory.id)
        filler = disk / "filler"
        with open(filler, "wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass
        for args in (
            ("add", "One more memory about uploads"),
            ("edit", acked[0], "--summary", "Edited while the disk is full"),
            ("config", "recall.limit", "4"),
            ("reindex",),
        ):
            done = run(repo, home, *args)
            assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (args, done.stderr)
            if done.returncode:
                clear_failure(done, "disk is full", "free space", "unavailable")
        hook_in_time(repo, home)
        mcp = _mcp_call(repo, home, "memory_add", {"summary": "Agent note while full", "details": "z" * 4000})
        assert mcp.get("isError") is True or "error" in mcp, mcp
        filler.unlink()
        listed = run(repo, home, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert set(acked) <= {m["id"] for m in json.loads(listed.stdout)}
        doctor_clean(repo, home)


def test_a_read_only_checkout_fails_clearly_and_hooks_stay_quiet(tmp_path: Path, home: Path) -> None:
    source, view = tmp_path / "src", tmp_path / "ro"
    repo = make_git_repo(source / "repo")
    init_project(repo, home)
    with Workspace.open(repo, home=home) as ws:
        kept = ws.add("Uploads retry three times").memory
    with mounted(view, "--bind", str(source)):
        remount = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(view)], capture_output=True, text=True
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        ro = view / "repo"
        clear_failure(run(ro, home, "add", "Another memory"), "writable", "read-only")
        clear_failure(run(ro, home, "list"), "writable", "read-only")
        clear_failure(run(ro, home, "config", "recall.limit", "4"), "read-only")
        done = hook_in_time(ro, home)
        assert done.stdout == ""
        mcp = _mcp_call(ro, home, "memory_search", {"query": "uploads"})
        assert mcp.get("isError") is True, mcp
        assert "writable" in json.dumps(mcp)
    with Workspace.open(repo, home=home) as ws:
        assert [m.id for m in ws.find()] == [kept.id]
    doctor_clean(repo, home)


def test_an_index_held_past_the_busy_timeout_is_a_clear_error_and_no_damage(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home) as ws:
        kept = ws.add("Uploads retry three times").memory
    holder = sqlite3.connect(repo / ".tether" / "index.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        clear_failure(run(repo, home, "add", "Another memory while locked"), "unavailable")
        done = hook_in_time(repo, home)
        assert done.stdout == ""
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not list((repo / ".tether").glob("index.db.damaged-*")), "a busy index is never moved aside"
    listed = run(repo, home, "list", "--json")
    ids = {m["id"] for m in json.loads(listed.stdout)}
    assert kept.id in ids  # the refused add wrote its note first; the next sync indexes it
    doctor_clean(repo, home)


# -- SIGKILL at random points ----------------------------------------------------------------------------

WORKERS = {
    "add": """
for i in range(100000):
    with Workspace.open(repo, home=home) as ws:
        memory = ws.add(f"add {tag} {i}: uploads retry {i} times", details="d" * (i % 300)).memory
    print(memory.id, flush=True)
""",
    "edit": """
with Workspace.open(repo, home=home) as ws:
    target = ws.find()[0].id
for i in range(100000):
    with Workspace.open(repo, home=home) as ws:
        ws.edit(target, summary=f"edit {tag} version {i}", details="e" * (i % 300))
    print(f"{target} {i}", flush=True)
""",
    "reindex": """
for i in range(100000):
    with Workspace.open(repo, home=home) as ws:
        ws.reindex()
    print(i, flush=True)
""",
    "rules": """
from tether.intake.rules import sync_rules
rules = ["- Rule zero: keep tests fast."]
for i in range(100000):
    rules.append(f"- Rule {tag} {i}: name fixtures after what they hold.")
    (repo / "AGENTS.md").write_text("# Rules\\n\\n" + "\\n".join(rules) + "\\n", encoding="utf-8")
    with Workspace.open(repo, home=home) as ws:
        sync_rules(ws, ["AGENTS.md"])
    print(i, flush=True)
""",
}
PRELUDE = "import sys\nfrom pathlib import Path\nfrom tether.workspace import Workspace\nrepo, home, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"


def _kill_after_acks(argv: list[str], rng: random.Random) -> list[str]:
    """Start `argv`, let it acknowledge for a random while, SIGKILL it; every line it printed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked: list[str] = []
    first = proc.stdout.readline()  # at least one acknowledged write before the kill
    assert first, proc.communicate()[1]
    acked.append(first.strip())
    deadline = time.monotonic() + rng.uniform(0.05, 1.5)
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(line.strip())
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return acked + rest.split("\n")


@pytest.mark.parametrize("operation", ["add", "edit", "reindex", "rules", "mcp-add"])
def test_sigkill_at_random_points_loses_no_acknowledged_write(
    operation: str, repo: Path, home: Path, ws: Workspace
) -> None:
    rng = random.Random(f"{SEED}-{operation}")
    baseline = {
        ws.add(f"Baseline memory {i} about the cache", files=["src/app/upload.py"]).memory.id
        for i in range(20)
    }
    ws.close()
    kills = acknowledged = 0
    for round_ in range(ROUNDS):
        if operation == "mcp-add":
            acked = _mcp_adds_killed(repo, home, rng, round_)
        else:
            code = PRELUDE + WORKERS[operation]
            acked = [
                a
                for a in _kill_after_acks(
                    [sys.executable, "-c", code, str(repo), str(home), str(round_)], rng
                )
                if a
            ]
        kills += 1
        acknowledged += len(acked)
        # The index as the killed process left it, before any later sync could repair it: a killed reindex
        # leaves the old index whole.
        if operation == "reindex":
            assert index_ids(repo) >= baseline
        with Workspace.open(repo, home=home) as fresh:
            ids = {m.id for m in fresh.find()}
            report = fresh.doctor()
            if operation in ("add", "mcp-add"):
                assert set(acked) <= ids, set(acked) - ids
            elif operation == "edit":
                target, version = acked[-1].split()
                summary = fresh.get(target).summary  # the last acknowledged edit, or the one in flight
                assert summary.startswith(f"edit {round_} version "), summary
                assert int(summary.rsplit(" ", 1)[1]) >= int(version), (summary, version)
            elif operation == "rules":
                texts = " ".join(m.summary for m in fresh.find(query_rules()))
                assert all(f"Rule {round_} {i}:" in texts for i in range(int(acked[-1]) + 1)), texts
            assert baseline <= ids
        assert report.problems == [], [vars(p) for p in report.problems]
        hook_in_time(repo, home)
    assert kills == ROUNDS
    print(
        f"\n{operation}: {kills} SIGKILLs, {acknowledged} acknowledged writes, none lost"
    )  # the README's table


def query_rules() -> Any:
    from tether.store.base import Query

    return Query(origin="rules:")


# -- the MCP server, driven over its wire -------------------------------------------------------------------


def _start_mcp(repo: Path, home: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.adapters.mcp.server"],
        cwd=repo,
        env={**os.environ, "TETHER_HOME": str(home)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "faults", "version": "0"},
    }
    _send(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert "result" in _receive(proc)
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _receive(proc: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, Any]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the MCP server did not answer"
    return dict(json.loads(proc.stdout.readline()))


def _mcp_call(repo: Path, home: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    proc = _start_mcp(repo, home)
    try:
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            },
        )
        reply = _receive(proc)
        return dict(reply.get("result") or reply)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def _mcp_adds_killed(repo: Path, home: Path, rng: random.Random, round_: int) -> list[str]:
    proc = _start_mcp(repo, home)
    acked: list[str] = []
    deadline = time.monotonic() + rng.uniform(0.3, 2.0)
    i = 0
    try:
        while time.monotonic() < deadline or not acked:
            args = {"summary": f"mcp {round_} {i}: uploads retry {i} times", "category": "context"}
            _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "memory_add", "arguments": args},
                },
            )
            reply = _receive(proc)
            structured = reply["result"]["structuredContent"]
            assert structured["created"], structured
            acked.append(structured["id"])
            i += 1
        # One more in flight, killed before its answer is read: it may or may not be there, never broken.
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 10_000,
                "method": "tools/call",
                "params": {"name": "memory_add", "arguments": {"summary": f"mcp {round_} in flight"}},
            },
        )
        time.sleep(rng.uniform(0.0, 0.05))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    return acked
