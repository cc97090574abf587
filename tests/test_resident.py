"""The resident process: the thin client's wire and imports, answers identical to the in-process hook and
command, fallbacks (absent, wedged, busy, crashed), lifecycle (stop, rebuild, memory cap) and a small soak,
each over both transports: the Unix socket, and loopback TCP with its token (Windows' own, forced here)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import listening
from tether import transport
from tether.project import find_project_root
from tether.resident import client
from tether.resident.server import ResidentServer, encode

TETHER_BIN = Path(sys.executable).with_name("tether")
PROMPT = "why does the upload retry loop ignore the backoff config?"


# -- the client, no process -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["plain", 'quote " and \\ backslash', "tab\tnew\nline\x01", "ünïcödé ✓", "/tmp/a b/c"],
)
def test_header_is_json(value: str) -> None:
    line = client.encode_header({"op": "hook", "cwd": value, "deadline": 1.5, "length": 3, "on": True})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"op": "hook", "cwd": value, "deadline": 1.5, "length": 3, "on": True}
    fields = {"op": "cli", "argv": ["search", value, ""], "env": {value: value, "TETHER_X": "1"}, "none": []}
    assert json.loads(client.encode_header(fields)) == {**fields, "none": []}


@pytest.mark.parametrize(
    ("code", "out", "err"),
    [
        (0, "", ""),
        (1, "", "no memory deadbeef\n"),
        (0, "ünï ✓\n2 lines\n", "warn"),
        (2, "lone \udc80 \ud800", ""),
    ],
)
def test_a_read_command_answer_round_trips(code: int, out: str, err: str) -> None:
    assert client._command_answer(client.command_body(code, out, err)) == (code, out, err)
    assert client._command_answer(b"garbage") is None and client._command_answer(b"0 99\nshort") is None


def test_reply_header_is_what_the_server_encodes() -> None:
    assert json.loads(client.reply_header(12)) == {"ok": True, "length": 12}
    assert client._length(client.reply_header(12).rstrip(b"\n")) == 12
    head, _ = encode({"ok": True}, b"abc")
    assert client._length(head.rstrip(b"\n")) == 3
    assert client._length(b'{"ok":false,"fallback":"busy","length":0}') == 0


def test_root_and_home_match_the_core(repo: Path, home: Path) -> None:
    (repo / "src" / "deep").mkdir(parents=True, exist_ok=True)
    for start in (repo, repo / "src" / "deep", repo.parent):
        found = find_project_root(start)
        assert client.project_root(str(start)) == (str(found) if found else None)
    assert client.user_home(os.environ) == str(home)
    assert len(client.socket_path(str(repo), os.environ)) <= 100


def test_the_transport_is_unix_where_there_are_unix_sockets_else_loopback_tcp(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert client.transport({}) == client.transport({"TETHER_RESIDENT_TRANSPORT": "unix"}) == "unix"
    assert client.transport({"TETHER_RESIDENT_TRANSPORT": " TCP "}) == "tcp"
    unknown = {"TETHER_RESIDENT_TRANSPORT": "pipe"}
    assert client.transport(unknown) is None and not client.enabled(unknown)
    assert client.socket_path("/r", {"TETHER_RESIDENT_TRANSPORT": "tcp"}).endswith(".tcp")
    assert client.lock_path("/t/res-1.tcp") == client.lock_path("/t/res-1.sock") == "/t/res-1.lock"
    # The one switch of both warm processes, unless the resident's own names one.
    assert client.transport({"TETHER_TRANSPORT": "tcp"}) == "tcp"
    assert client.transport({"TETHER_TRANSPORT": "tcp", "TETHER_RESIDENT_TRANSPORT": "unix"}) == "unix"
    # Where there are no user ids (Windows): TCP by default, `unix` refused.
    monkeypatch.delattr(os, "getuid")
    assert client.transport({}) == "tcp" and client.transport({"TETHER_RESIDENT_TRANSPORT": "unix"}) is None


def test_off_and_outside_a_project(repo: Path, tmp_path: Path) -> None:
    assert client.hook(["claude", "UserPromptSubmit"], b"{}", {"TETHER_RESIDENT": "0"}) == ("off", b"")
    env = {**os.environ, "TETHER_RESIDENT": "1"}
    assert client.hook(["claude", "UserPromptSubmit"], b"{}", env, cwd=str(tmp_path))[0] == "none"


# -- a real process ---------------------------------------------------------------------------------


@pytest.fixture(params=["unix", "tcp"])
def runtime(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A private socket directory of the test's own, and the resident process turned on, over one transport."""
    with tempfile.TemporaryDirectory(prefix="tr-", dir="/tmp") as tmp:
        monkeypatch.setenv("XDG_RUNTIME_DIR", tmp)
        monkeypatch.setenv("TETHER_RESIDENT", "1")
        monkeypatch.setenv("TETHER_RESIDENT_TRANSPORT", request.param)
        yield Path(tmp)


def send(path: str, fields: dict[str, Any], body: bytes = b"", timeout: float = 10.0) -> tuple[bytes, bytes]:
    """One raw request to the process at `path` (a socket, or a TCP endpoint file), with its token."""
    address, token = transport.endpoint(path)
    header = client.encode_header({**fields, "length": len(body), **({"token": token} if token else {})})
    return client.exchange(address, header + body, timeout)


def wait_for(check: Callable[[], bool], seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)


def status(repo: Path) -> dict[str, Any] | None:
    answered = client.request(str(repo), {"op": "status"}, os.environ, timeout=2.0)
    return answered[0] if answered else None


@pytest.fixture
def resident(repo: Path, runtime: Path) -> Iterator[subprocess.Popen[str]]:
    """`tether resident serve` for the test's repository, up and answering."""
    proc = subprocess.Popen(
        [str(TETHER_BIN), "resident", "serve", "--idle-seconds", "60"],
        cwd=repo,
        env=dict(os.environ),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: status(repo) is not None or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


def hook(repo: Path, event: str, payload: dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TETHER_BIN), "hook", "claude", event],
        input=json.dumps({"cwd": str(repo), **payload}),
        cwd=repo,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


CASES = [
    ("UserPromptSubmit", {"prompt": PROMPT}),
    ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": "src/app/upload.py"}}),
    ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "src/app/upload.py"}}),
    ("SessionStart", {"source": "startup"}),
]


def seed(tether: Callable[..., Any]) -> None:
    assert (
        tether(
            "add", "Upload retry ignores the backoff config", "-c", "gotcha", "-f", "src/app/upload.py"
        ).code
        == 0
    )
    assert (
        tether("add", "Auth tokens expire hourly", "-c", "context", "-f", "src/app/auth.py", "--pin").code
        == 0
    )


@pytest.mark.parametrize(("event", "payload"), CASES)
def test_hooks_answer_as_in_process(
    repo: Path,
    resident: subprocess.Popen[str],
    tether: Callable[..., Any],
    event: str,
    payload: dict[str, Any],
) -> None:
    seed(tether)
    served = hook(repo, event, {"session_id": "via-resident", **payload})
    before = status(repo)
    local = hook(repo, event, {"session_id": "in-process", **payload}, TETHER_RESIDENT="0")
    assert served.returncode == local.returncode == 0
    assert served.stdout == local.stdout
    assert served.stdout or event == "PostToolUse"
    assert before is not None and before["served"] >= 1


def test_the_warm_hook_imports_only_the_standard_library(repo: Path, resident: subprocess.Popen[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(TETHER_BIN), "hook", "claude", "UserPromptSubmit"],
        input=json.dumps({"cwd": str(repo), "session_id": "s", "prompt": PROMPT}),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    imported = {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "imported package" not in line
    }
    ours = {"tether", "tether.__main__", "tether.resident", "tether.resident.client", "tether.transport"}
    foreign = sorted(
        m
        for m in imported - ours
        if m.split(".")[0] not in sys.stdlib_module_names and m not in ("_distutils_hack", "sitecustomize")
    )
    assert foreign == [], f"the warm hook imported {foreign}"
    assert {"json", "socket", "pathlib", "typing", "re"}.isdisjoint(imported), sorted(imported)
    assert "tether.resident.client" in imported


def test_a_read_command_through_the_resident_imports_no_json(
    repo: Path, resident: subprocess.Popen[str], tether: Callable[..., Any]
) -> None:
    seed(tether)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(TETHER_BIN), "search", "upload backoff"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "Upload retry ignores the backoff config" in done.stdout
    imported = {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    assert "tether.resident.client" in imported
    assert {"json", "re", "click", "tether.workspace"}.isdisjoint(imported), sorted(imported)


def test_read_commands_answer_as_in_process(
    repo: Path, resident: subprocess.Popen[str], tether_proc: Callable[..., Any], tether: Callable[..., Any]
) -> None:
    seed(tether)
    for args in (
        ["search", "upload backoff"],
        ["search", "upload", "--json"],
        ["list"],
        ["recall", "-p", PROMPT, "--no-record"],
    ):
        served = tether_proc(*args)
        local = tether_proc(*args, env={"TETHER_RESIDENT": "0"})
        assert (served.returncode, served.stdout, served.stderr) == (
            local.returncode,
            local.stdout,
            local.stderr,
        ), args
    missing = tether_proc("get", "deadbeef")
    assert missing.returncode == 1 and "no memory deadbeef" in missing.stderr
    stats = status(repo)
    assert stats is not None and stats["served"] >= 5


def test_a_write_elsewhere_is_seen_at_once(
    repo: Path, resident: subprocess.Popen[str], tether: Callable[..., Any]
) -> None:
    assert "Kafka" not in hook(repo, "UserPromptSubmit", {"session_id": "a", "prompt": "kafka?"}).stdout
    tether("add", "Kafka consumers must commit offsets manually", "-c", "gotcha")
    out = hook(
        repo, "UserPromptSubmit", {"session_id": "b", "prompt": "how do kafka consumers commit offsets?"}
    )
    assert "Kafka consumers must commit offsets manually" in out.stdout


def test_between_requests_an_in_place_edit_is_found_in_slices(repo: Path, home: Path) -> None:
    # The watch replaces a scan of every note that made a request arriving during it wait past its limit.
    from tether.resident.answers import Answers
    from tether.workspace import Workspace

    with Workspace.open(repo, home=home) as ws:
        ids = [ws.add(f"Staging port fact {n} is 6443").memory.id for n in range(30)]
    answers = Answers(repo, home, watch_seconds=0.0)
    try:
        answers.idle()  # nothing open yet: nothing to watch
        opened = answers.workspace(repo)
        for _ in range(200):
            answers.idle()
            if opened.index._scanned is not None:
                break
        assert opened.index._scanned is not None  # a first pass, done between requests
        note = next((repo / ".tether" / "memories").glob(f"{ids[17]}-*.md"))
        directory = os.stat(note.parent).st_mtime_ns
        note.write_text(note.read_text(encoding="utf-8").replace("6443", "7443"), encoding="utf-8")
        os.utime(note.parent, ns=(directory, directory))  # an editor's in-place save
        for _ in range(200):
            answers.idle()
            if "7443" in opened.get(ids[17]).summary:
                break
        assert "7443" in answers.workspace(repo).get(ids[17]).summary
    finally:
        answers.close()


def test_what_searches_keep_follows_writes_edits_and_rebuilds(
    repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resident's store keeps each search term's postings and the vectors by column between requests
    (`SQLiteStore(warm=True)`): an answer after a write, an in-place note edit or a rebuilt index is the one
    a fresh process gives."""
    from tether.model.timestamps import utcnow
    from tether.resident.answers import Answers
    from tether.workspace import Workspace

    now = utcnow()  # recency reads the clock to the second: both sides read the same second
    monkeypatch.setattr("tether.workspace.utcnow", lambda: now)

    with Workspace.open(repo, home=home) as ws:
        ids = [ws.add(f"Staging port fact {n} is 6443 behind the proxy").memory.id for n in range(20)]
    answers = Answers(repo, home, watch_seconds=0.0)

    def ranked(query: str) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """Through the resident's workspace, and through a fresh one (the same notes, a cold store)."""
        kept = answers.workspace(repo).search(query, limit=50)
        with Workspace.open(repo, home=home) as fresh:
            cold = fresh.search(query, limit=50)
        return [(r.memory.id, r.score) for r in kept], [(r.memory.id, r.score) for r in cold]

    try:
        for query in ("staging proxy port", "kafka offsets", "6443"):
            kept, cold = ranked(query)
            assert kept == cold
        with Workspace.open(repo, home=home) as ws:  # another process writes
            added = ws.add("Kafka consumers commit offsets by hand behind the proxy").memory.id
            ws.archive(ids[3])
        kept, cold = ranked("kafka offsets proxy")
        assert kept == cold and added in [mid for mid, _ in kept] and ids[3] not in [mid for mid, _ in kept]
        note = next((repo / ".tether" / "memories").glob(f"{ids[7]}-*.md"))
        directory = os.stat(note.parent).st_mtime_ns
        note.write_text(note.read_text(encoding="utf-8").replace("6443", "7443 kafka"), encoding="utf-8")
        os.utime(note.parent, ns=(directory, directory))  # an editor's in-place save: found by the watch
        for _ in range(400):
            answers.idle()
            if "7443" in answers.workspace(repo).get(ids[7]).summary:
                break
        kept, cold = ranked("kafka 7443")
        assert kept == cold and kept[0][0] == ids[7]
        with Workspace.open(repo, home=home) as ws:
            ws.reindex()  # a new index file: the resident opens it again, with nothing kept
        kept, cold = ranked("kafka 7443 staging")
        assert kept == cold and kept[0][0] == ids[7]
    finally:
        answers.close()


def test_between_requests_the_due_passes_run_and_a_session_start_does_not(repo: Path, home: Path) -> None:
    # A session start used to run the archive pass and the cleanup count itself when due (6 h): up to a
    # second at 10k memories, on that one session start. Here the quiet moments run them.
    from datetime import timedelta

    from tether.lifecycle.passes import META_HINTS
    from tether.model.timestamps import utcnow
    from tether.resident.answers import Answers
    from tether.store.base import Event
    from tether.workspace import Workspace

    now = utcnow()
    with Workspace.open(repo, home=home, clock=lambda: now - timedelta(days=60)) as ws:
        ws.ack(ws.add("Deploys go through the release branch").memory.id)  # 1 pull in 7 showings: 7 needed
    with Workspace.open(repo, home=home) as ws:
        ignored = ws.add("Upload quotas are per tenant").memory.id
        ws.store.record(
            Event(ignored, "surfaced", now - timedelta(days=50 - 8 * n), "s", n) for n in range(7)
        )
    answers = Answers(repo, home, watch_seconds=0.0)

    def session_start(session: str) -> str:
        payload = {"session_id": session, "cwd": str(repo), "hook_event_name": "SessionStart"}
        _, body = answers.hook({"agent": "claude", "event": "SessionStart"}, json.dumps(payload).encode())
        return body.decode()

    def status() -> str:
        return answers.workspace(repo).get(ignored).status

    try:
        assert "archived" not in session_start("one") and status() == "active"  # due, and not run here
        for _ in range(500):
            answers.idle()
            if answers.workspace(repo).store.get_meta(META_HINTS):
                break  # the passes are done and left their hint
        assert status() == "archived"
        assert "archived 1 memory that was shown 6+ times" in session_start("two")  # said once
        assert "archived 1 memory" not in session_start("three")
    finally:
        answers.close()


def test_a_quiet_moment_opens_the_project_and_remakes_what_a_write_dropped(repo: Path, home: Path) -> None:
    from tether.resident.answers import Answers
    from tether.store.sqlite.store import SQLiteStore
    from tether.workspace import Workspace

    with Workspace.open(repo, home=home) as ws:
        ws.add("Staging port is 6443")
    answers = Answers(repo, home)
    try:
        answers.idle()  # a fresh process: open, and load what the first search would
        ws = answers._ws
        assert ws is not None and isinstance(ws.store, SQLiteStore)
        assert ws.store._postings is not None and ws.store._postings._version == ws.store.version()
        assert ws.store._vectors is not None and ws.store._vectors.identity == ws.store.version()
        with Workspace.open(repo, home=home) as other:
            other.add("Deploys go through make ship")  # another process's write drops all of it
        answers.idle()
        assert ws.store._postings._version == ws.store._vectors.identity == ws.store.version()
        for _ in range(50):  # then, a slice at each quiet moment, what the warm store reads ahead
            answers.idle()
        assert ws.store.prepare(0.0)  # done for this version: every active memory, owners, common words
        assert ws.store._memo._loaded and ws.store._owners is not None and ws.store._owners._complete
        assert [r.memory.summary for r in answers.workspace(repo).search("ship deploys")][:1] == [
            "Deploys go through make ship"
        ]
    finally:
        answers.close()


def test_commands_answered_here_leave_nothing_behind(repo: Path, home: Path) -> None:
    # Regression: a new StringIO per command, kept alive by click's stream cache, grew the process for ever.
    import gc
    import io

    from tether.resident.answers import Answers

    answers = Answers(repo, home, watch_seconds=3600.0)

    def streams_after(commands: int) -> int:
        for _ in range(commands):
            _, body = answers.cli({"argv": ["search", "upload retry"], "cwd": str(repo), "env": {}})
            answer = client._command_answer(body)
            assert answer is not None and answer[0] == 0
        gc.collect()
        return sum(type(o) is io.StringIO for o in gc.get_objects())  # not isinstance: no lazy module wakes

    try:
        assert streams_after(3) == streams_after(30)
    finally:
        answers.close()


def test_a_rebuilt_or_removed_index_is_opened_again(
    repo: Path, resident: subprocess.Popen[str], tether: Callable[..., Any]
) -> None:
    seed(tether)
    first = hook(repo, "UserPromptSubmit", {"session_id": "a", "prompt": PROMPT}).stdout
    assert tether("reindex").code == 0
    assert hook(repo, "UserPromptSubmit", {"session_id": "b", "prompt": PROMPT}).stdout == first
    for path in (repo / ".tether").glob("index.db*"):
        path.unlink()
    assert hook(repo, "UserPromptSubmit", {"session_id": "c", "prompt": PROMPT}).stdout == first
    assert resident.poll() is None


def test_stop_and_a_crash_fall_back(
    repo: Path, resident: subprocess.Popen[str], tether: Callable[..., Any]
) -> None:
    seed(tether)
    expected = hook(
        repo, "UserPromptSubmit", {"session_id": "x", "prompt": PROMPT}, TETHER_RESIDENT="0"
    ).stdout
    resident.send_signal(signal.SIGKILL)
    resident.wait(timeout=10)
    path = Path(client.socket_path(str(repo), os.environ))
    assert path.exists()  # a dead process's socket file
    assert client.hook(["claude", "UserPromptSubmit"], b"{}", os.environ, cwd=str(repo))[0] == "absent"
    # The fallback answers, and starts a new process for the next hook.
    assert hook(repo, "UserPromptSubmit", {"session_id": "y", "prompt": PROMPT}).stdout == expected
    wait_for(lambda: status(repo) is not None)
    assert hook(repo, "UserPromptSubmit", {"session_id": "z", "prompt": PROMPT}).stdout == expected
    assert client.request(str(repo), {"op": "stop"}, os.environ, timeout=2.0) is not None
    wait_for(lambda: not path.exists())


def test_memory_cap_restarts_the_process(repo: Path, runtime: Path) -> None:
    proc = subprocess.Popen(
        [str(TETHER_BIN), "resident", "serve", "--idle-seconds", "30", "--max-rss-mib", "16"],
        cwd=repo,
        env=dict(os.environ),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: status(repo) is not None)
        hook(repo, "UserPromptSubmit", {"session_id": "a", "prompt": PROMPT})
        wait_for(lambda: (status(repo) or {}).get("served") == 0)  # a fresh process, same pid (exec)
    finally:
        # Whichever process serves now (the exec'd one, or one a fallback hook started in the gap) stops.
        client.request(str(repo), {"op": "stop"}, os.environ, timeout=2.0)
        wait_for(lambda: not Path(client.socket_path(str(repo), os.environ)).exists())
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert "exiting: memory" in (proc.stderr.read() if proc.stderr else "")


def test_a_wedged_process_costs_a_bounded_wait(repo: Path, runtime: Path) -> None:
    """A process that accepts and never answers: the hook answers in process, within its deadline."""
    path = client.socket_path(str(repo), os.environ)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if path.endswith(".tcp"):
        wedged = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        wedged.bind(("127.0.0.1", 0))
        Path(path).write_text(f"127.0.0.1 {wedged.getsockname()[1]} {'0' * 64}\n")
    else:
        wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        wedged.bind(path)
    wedged.listen(16)
    try:
        expected = hook(repo, "UserPromptSubmit", {"session_id": "a", "prompt": PROMPT}, TETHER_RESIDENT="0")
        started = time.monotonic()
        done = hook(
            repo, "UserPromptSubmit", {"session_id": "b", "prompt": PROMPT}, TETHER_HOOK_DEADLINE="1.5"
        )
        assert time.monotonic() - started < 1.5 + 5  # interpreter starts on a loaded machine, never a hang
        assert done.stdout == expected.stdout
    finally:
        wedged.close()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the listening sockets in /proc")
@pytest.mark.parametrize("runtime", ["tcp"], indirect=True)
def test_over_tcp_only_loopback_listens_and_only_the_token_is_answered(
    repo: Path, resident: subprocess.Popen[str]
) -> None:
    path = Path(client.socket_path(str(repo), os.environ))
    assert path.suffix == ".tcp" and path.stat().st_mode & 0o777 == 0o600
    (host, port), token = transport.endpoint(str(path))
    assert host == "127.0.0.1" and listening(port) == ["0100007F"]  # 127.0.0.1, nothing else
    for wrong in ({}, {"token": "0" * 64}, {"token": token[:-1]}):
        message = client.encode_header({"op": "status", "length": 0, **wrong})
        head, _ = client.exchange((host, port), message, 5.0)
        assert json.loads(head) == {"ok": False, "fallback": "not authorized", "length": 0}
    head, _ = send(str(path), {"op": "status"})
    answered = json.loads(head)
    assert answered["ok"] and answered["transport"] == "tcp" and answered["refused"] == 3


class SlowAnswers:
    """An in-test answerer: each request waits for `release`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.closed = False

    def answer(self, header: dict[str, Any], body: bytes) -> tuple[bytes, bytes]:
        self.release.wait(10)
        return client.reply_header(len(body)), body

    def idle(self) -> None:
        pass

    def reset(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def held(self) -> dict[str, float]:
        return {}


def test_a_full_queue_answers_busy_at_once(runtime: Path) -> None:
    transport = client.transport(os.environ) or "unix"
    path = runtime / f"t.{'tcp' if transport == 'tcp' else 'sock'}"
    answers = SlowAnswers()
    server = ResidentServer(
        path, answers, idle_seconds=30, max_rss_mib=4096, queue_size=1, max_connections=2, transport=transport
    )
    thread = threading.Thread(target=server.run, args=(lambda m: None,), daemon=True)
    thread.start()
    results: list[str] = []

    def ask() -> None:
        try:
            head, _ = send(str(path), {"op": "hook"}, b"hi", 5.0)
            results.append("ok" if head.startswith(b'{"ok":true') else json.loads(head)["fallback"])
        except OSError as exc:
            results.append(type(exc).__name__)

    askers = [threading.Thread(target=ask) for _ in range(6)]
    for t in askers:
        t.start()
        time.sleep(0.05)
    wait_for(lambda: results.count("busy") >= 3, 5)
    answers.release.set()
    for t in askers:
        t.join(10)
    assert "ok" in results and "busy" in results and len(results) == 6
    server.stopping.set()
    thread.join(10)
    assert answers.closed and not path.exists()


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_soak_small(repo: Path, resident: subprocess.Popen[str], tether: Callable[..., Any]) -> None:
    """9 clients, mixed requests: no error, no leaked descriptor, flat memory (the full one: benchmarks)."""
    seed(tether)
    messages = [
        ({"op": "hook", "agent": "claude", "event": event, "cwd": str(repo)}, body)
        for event, body in (
            (
                "UserPromptSubmit",
                json.dumps({"cwd": str(repo), "session_id": "s", "prompt": PROMPT}).encode(),
            ),
            (
                "PostToolUse",
                json.dumps(
                    {
                        "cwd": str(repo),
                        "session_id": "s",
                        "tool_name": "Read",
                        "tool_input": {"file_path": "src/app/upload.py"},
                    }
                ).encode(),
            ),
        )
    ]
    path = client.socket_path(str(repo), os.environ)
    errors: list[str] = []

    def worker(n: int, count: int) -> None:
        for i in range(count):
            try:
                head, _ = send(path, *messages[(n + i) % 2])
                if not head.startswith(b'{"ok":true'):
                    errors.append(head.decode())
            except OSError as exc:
                errors.append(repr(exc))

    def round_(count: int) -> None:
        threads = [threading.Thread(target=worker, args=(n, count)) for n in range(9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)

    round_(5)
    fds, rss = open_fds(resident.pid), (status(repo) or {})["rss_mib"]
    round_(25)
    assert errors == []
    assert open_fds(resident.pid) <= fds + 2
    assert (status(repo) or {})["rss_mib"] < rss + 30


def test_start_and_stop_print_json(
    repo: Path, runtime: Path, tether_proc: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    assert json.loads(tether_proc("resident", "stop", "--json").stdout) == {"ok": True, "stopping": False}
    started = tether_proc("resident", "start", "--json")
    assert started.returncode == 0 and json.loads(started.stdout) == {"ok": True, "started": True}
    wait_for(lambda: status(repo) is not None)
    again = json.loads(tether_proc("resident", "start", "--json").stdout)
    assert again == {"ok": True, "started": False, "running": True, "reason": "running"}
    pid = status(repo)["pid"]  # type: ignore[index]
    assert json.loads(tether_proc("resident", "stop", "--json").stdout) == {
        "ok": True,
        "stopping": True,
        "pid": pid,
    }
    wait_for(lambda: not Path(client.socket_path(str(repo), os.environ)).exists())
    assert tether_proc("resident", "stop").stdout == "not running\n"  # the text is unchanged
    outside = tether_proc("resident", "start", "--json", cwd=repo.parent)
    assert outside.returncode == 1 and "no .tether/ found" in json.loads(outside.stdout)["error"]
    assert "no .tether/ found" in outside.stderr
