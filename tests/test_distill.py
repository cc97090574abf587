from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import append, assistant, text, tool, user
from secret_samples import CREDENTIALS, URLSAFE, fake, pem_body
from tether.config import set_value
from tether.intake.autodistill import near_duplicate
from tether.intake.distill import DistillError, distill_session, parse_facts
from tether.intake.llm import AnthropicProvider, LLMProvider, OpenAIProvider
from tether.intake.transcript import USER_MAX
from tether.model.memory import Memory, content_hash
from tether.workspace import Workspace

GITHUB = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"

# ---------------------------------------------------------------- a loopback LLM endpoint


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str → sent as is
    delay: float = 0.0


@dataclass
class FakeLLM:
    """A stdlib HTTP server on 127.0.0.1 that speaks both APIs and records every request."""

    url: str = ""
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def facts(self, facts: list[dict[str, Any]], api: str = "anthropic") -> None:
        text = json.dumps({"facts": facts})
        if api == "anthropic":
            body: dict[str, Any] = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            }
        else:
            body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
        self.replies.append(Reply(body=body))


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    fake = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            fake.requests.append(
                {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
            )
            reply = fake.replies.pop(0) if fake.replies else Reply(500, {"error": {"message": "no reply"}})
            if reply.delay:
                time.sleep(reply.delay)
            data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())
            except OSError:
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()


def anthropic(llm: FakeLLM, timeout: float = 5.0) -> AnthropicProvider:
    return AnthropicProvider(api_key="test-key", model="claude-test", base_url=llm.url, timeout=timeout)


def openai(llm: FakeLLM, key: str | None = "sk-local", timeout: float = 5.0) -> OpenAIProvider:
    return OpenAIProvider(model="qwen-test", base_url=f"{llm.url}/v1", api_key=key, timeout=timeout)


# ---------------------------------------------------------------- transcripts and a store


@dataclass
class Store:
    """Stands in for the core's store through the three callbacks distill is given."""

    memories: list[Memory] = field(default_factory=list)
    near: set[str] = field(default_factory=set)  # texts the store calls near-duplicates

    def existing(self, digest: str) -> bool:
        return any(m.content_hash == digest for m in self.memories)

    def similar(self, value: str) -> bool:
        return any(phrase in value for phrase in self.near)

    def sink(self, memory: Memory) -> None:
        self.memories.append(memory)


@pytest.fixture
def session(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "db.py").write_text("x = 1\n")
    path = tmp_path / "s1.jsonl"
    append(
        path,
        user("the migration test is flaky, fix it", cwd=str(repo)),
        assistant(tool("Read", file_path=str(repo / "src" / "db.py"))),
        assistant(text("The test shares one sqlite file; I will give each test its own.")),
        user("good. always use tmp_path for databases in tests", cwd=str(repo)),
        {"type": "file-history-snapshot", "snapshot": {}},
    )
    return path


def run(transcript: Path, tmp_path: Path, provider: LLMProvider, store: Store, **kw: Any) -> Any:
    return distill_session(
        transcript,
        tmp_path / "state",
        provider=provider,
        existing=store.existing,
        similar=store.similar,
        sink=store.sink,
        root=transcript.parent / "repo",
        **kw,
    )


FACT = {
    "summary": "Tests must use tmp_path for SQLite files",
    "details": "A shared file made the migration test flaky.",
    "category": "gotcha",
    "files": ["src/db.py", "src/made_up.py"],
}

# ---------------------------------------------------------------- distill_session


def test_anthropic_facts_become_distilled_memories(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts([FACT, {"summary": "User wants terse commit messages", "category": "pref"}])
    report = run(session, tmp_path, anthropic(llm), store)

    (request,) = llm.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == "test-key"
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    assert request["body"]["model"] == "claude-test"
    prompt = request["body"]["messages"][0]["content"]
    assert "always use tmp_path" in prompt and "[Read src/db.py]" in prompt
    assert "gotcha" in request["body"]["system"] and "context:" not in request["body"]["system"]

    assert [m.summary for m in store.memories] == [FACT["summary"], "User wants terse commit messages"]
    gotcha = store.memories[0]
    assert (gotcha.origin, gotcha.category, gotcha.scope) == ("distilled", "gotcha", "project")
    assert gotcha.files == ("src/db.py",)  # the invented path is dropped
    assert report.written == store.memories and report.end == session.stat().st_size

    # Nothing new in the transcript: no second call, nothing written.
    again = run(session, tmp_path, anthropic(llm), store)
    assert len(llm.requests) == 1 and not again.called_llm and again.written == []


def test_openai_compatible_endpoint(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts([FACT], api="openai")
    run(session, tmp_path, openai(llm), store)
    (request,) = llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer sk-local"
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    assert [m.summary for m in store.memories] == [FACT["summary"]]


def test_openai_without_key_sends_no_authorization(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    llm.facts([], api="openai")
    report = run(session, tmp_path, openai(llm, key=None), Store())
    assert "authorization" not in llm.requests[0]["headers"]
    assert report.called_llm and report.written == []


def test_never_more_than_three(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts([{"summary": f"Fact number {i}", "category": "decision"} for i in range(5)])
    report = run(session, tmp_path, anthropic(llm), store)
    assert [m.summary for m in store.memories] == ["Fact number 0", "Fact number 1", "Fact number 2"]
    assert report.proposed == 5 and len(report.dropped) == 2


def test_duplicates_are_dropped(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    old = Memory(id="0000aaaa", summary="Use uv, not pip", details="")
    store = Store(memories=[old], near={"Run ruff"})
    llm.facts(
        [
            {"summary": "  use UV,   not pip ", "category": "pref"},  # same content hash as `old`
            {"summary": "Run ruff before every commit please", "category": "pref"},  # near-duplicate
            {"summary": "Pin numpy below 3", "category": "decision"},
            {"summary": "pin numpy below 3", "category": "decision"},  # duplicate within the reply
        ]
    )
    report = run(session, tmp_path, anthropic(llm), store)
    assert [m.summary for m in store.memories] == ["Use uv, not pip", "Pin numpy below 3"]
    reasons = [reason for _, reason in report.dropped]
    assert reasons == [
        "duplicate of an existing memory",
        "near-duplicate of an existing memory",
        "duplicate of an existing memory",
    ]
    assert content_hash("  use UV,   not pip ") == old.content_hash


def test_secrets_are_redacted_or_dropped(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    append(session, user(f"the CI token is {GITHUB}, keep it out of logs"))
    leaky = {"summary": f"CI uses token {GITHUB}", "details": "password: hunter22", "category": "gotcha"}
    llm.facts([leaky])
    store = Store()
    report = run(session, tmp_path, anthropic(llm), store)
    assert GITHUB not in json.dumps(llm.requests[0]["body"])  # the digest is redacted before it leaves
    (memory,) = store.memories
    assert memory.summary == "CI uses token [REDACTED:GitHub token]"
    assert memory.details == "password: [REDACTED:password assignment]"
    assert report.redacted == 1

    append(session, user("one more thing"))
    llm.facts([leaky])
    dropped = run(session, tmp_path, anthropic(llm), store, on_secret="drop")
    assert dropped.written == [] and "credential" in dropped.dropped[0][1]
    assert len(store.memories) == 1


def anthropic_text(value: str) -> Reply:
    return Reply(body={"id": "msg_1", "type": "message", "role": "assistant", "content": [text(value)]})


def test_no_redacted_secret_reaches_the_model_the_log_or_a_note(
    llm: FakeLLM, repo: Path, home: Path, tether: Callable[..., Any]
) -> None:
    """DESIGN §8 end to end: the worker as the session-end hook starts it, output to distill.log."""
    chosen = [c for c in CREDENTIALS if c.format in LEAKY_FORMATS]
    assert len(chosen) == len(LEAKY_FORMATS)
    ghp, slack = (
        next(c.secret for c in CREDENTIALS if c.format == f)
        for f in ("GitHub classic PAT", "Slack bot token")
    )
    pem = pem_body("distill-key", 400)
    bearer = fake("distill-bearer", 48, URLSAFE)
    transcript = repo.parent / "s1.jsonl"
    append(
        transcript,
        *(user(c.text, cwd=str(repo)) for c in chosen),
        user(
            f"here is the deploy key, it has no END line:\n-----BEGIN RSA PRIVATE KEY-----\n{pem}",
            cwd=str(repo),
        ),
        # Tokens where a length cap cuts the text (a prompt's head, a command's 200 characters, a tool error's
        # 300): the caps must not leave the first 12 characters of one behind.
        user(
            "x" * (USER_MAX * 2 // 3 - 21) + f" {ghp} and the rest of a long prompt " + "y" * USER_MAX,
            cwd=str(repo),
        ),
        assistant(
            tool("Bash", command="echo " + "z" * 148 + f' && curl -H "Authorization: Bearer {bearer}" api')
        ),
        {
            "type": "user",
            "cwd": str(repo),
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "is_error": True, "content": "w" * 277 + f" bad token {slack}"}
                ],
            },
        },
    )
    secrets = [c.secret for c in chosen] + [*pem.splitlines()[:-1], bearer, ghp, slack]
    llm.facts(
        [
            {"summary": f"CI pushes with {ghp}", "category": "gotcha"},
            {"summary": f"Slack bot posts as {slack}", "category": "context"},  # dropped, and printed
            {
                "summary": "Staging database login",
                "details": f"password: {chosen[0].secret}",
                "category": "pref",
            },
        ]
    )
    tether("config", "distill.base_url", llm.url)
    tether("config", "distill.model", "claude-test")
    logs = repo / ".tether" / "logs"
    env = {**os.environ, "TETHER_HOME": str(home), "ANTHROPIC_API_KEY": "test-key"}
    env.pop("TETHER_DISTILL_PROVIDER", None)
    env.pop("TETHER_DISTILL_MODEL", None)

    def worker() -> int:
        # What tether.detach.spawn_detached does for the session-end hook: output appended to distill.log.
        logs.mkdir(parents=True, exist_ok=True)
        with (logs / "distill.log").open("ab") as out:
            argv = [
                sys.executable,
                "-m",
                "tether",
                "distill",
                "--transcript",
                str(transcript),
                "--session",
                "s1",
            ]
            return subprocess.run(
                argv, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=120
            ).returncode

    assert worker() == 0
    # A second run whose reply is no JSON but quotes a credential: the error message is logged too.
    append(transcript, user("one more thing", cwd=str(repo)))
    llm.replies.append(anthropic_text(f"I cannot do that with {ghp} in the session"))
    assert worker() == 1

    digest = json.dumps([request["body"] for request in llm.requests])
    log = "".join(path.read_text(encoding="utf-8") for path in logs.glob("*.log"))
    notes = "".join(path.read_text(encoding="utf-8") for path in (repo / ".tether" / "memories").glob("*.md"))
    assert "[REDACTED:" in digest and "[REDACTED:" in log and "[REDACTED:" in notes  # the paths were taken
    assert "category 'context' is not allowed" in log and "holds no JSON" in log
    for secret in secrets:
        for where, haystack in (("digest", digest), ("log", log), ("notes", notes)):
            assert secret not in haystack, f"{secret[:12]}… in the {where}"
            assert secret[:12] not in haystack, f"the start of {secret[:12]}… in the {where}"


# One of each family of rule: provider prefixes, cloud context rules, connection strings, headers, assignments.
LEAKY_FORMATS = (
    "YAML password",
    "AWS access key id",
    "AWS secret access key",
    "Azure storage connection string",
    "OpenAI project key",
    "Anthropic API key",
    "Stripe live secret key",
    "Slack webhook",
    "Discord bot token",
    "Telegram bot token",
    "PostgreSQL URL",
    "Redis URL with password only",
    "Basic auth header",
    "JWT in a cookie",
    "netrc password",
    "password with a comma in it",
)


def test_categories_are_allow_listed(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts([{"summary": "Project uses FastAPI", "category": "context"}, FACT])
    report = run(session, tmp_path, anthropic(llm), store)
    assert [m.category for m in store.memories] == ["gotcha"]
    assert report.dropped == [("Project uses FastAPI", "category 'context' is not allowed")]

    append(session, user("more"))
    llm.facts([{"summary": "Project uses FastAPI", "category": "context"}])
    run(session, tmp_path, anthropic(llm), store, categories=("context",))
    assert [m.category for m in store.memories] == ["gotcha", "context"]


def offset_files(tmp_path: Path) -> list[Path]:
    state = tmp_path / "state"
    return sorted(state.glob("*.json")) if state.exists() else []


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            Reply(500, {"type": "error", "error": {"type": "api_error", "message": "overloaded"}}),
            "HTTP 500: overloaded",
        ),
        (Reply(401, {"error": {"message": "invalid x-api-key"}}), "check ANTHROPIC_API_KEY"),
        (Reply(404, "<html>not found</html>"), "check the model name"),
        (Reply(200, "this is not json"), "not JSON"),
        (Reply(200, {"content": []}), "no text content"),
        (Reply(200, {"content": [{"type": "text", "text": "Sure! Here are some facts."}]}), "no JSON"),
        (Reply(200, {"content": [{"type": "text", "text": '{"facts": {"summary": "x"}}'}]}), '"facts" list'),
    ],
)
def test_errors_write_nothing_and_keep_the_offset(
    llm: FakeLLM, session: Path, tmp_path: Path, reply: Reply, message: str
) -> None:
    store = Store()
    llm.replies.append(reply)
    with pytest.raises(DistillError, match=message):
        run(session, tmp_path, anthropic(llm), store)
    assert store.memories == []
    assert offset_files(tmp_path) == []
    # The next run retries the same part of the session, and succeeds.
    llm.facts([FACT])
    run(session, tmp_path, anthropic(llm), store)
    assert [m.summary for m in store.memories] == [FACT["summary"]]
    assert "always use tmp_path" in llm.requests[1]["body"]["messages"][0]["content"]


def test_openai_error_reply_names_the_key_and_writes_nothing(
    llm: FakeLLM, session: Path, tmp_path: Path
) -> None:
    store = Store()
    llm.replies.append(Reply(404, {"error": {"message": "model 'qwen-test' not found", "type": "api_error"}}))
    with pytest.raises(DistillError, match=r"HTTP 404: model 'qwen-test' not found .*TETHER_DISTILL_MODEL"):
        run(session, tmp_path, openai(llm), store)
    llm.replies.append(Reply(401, {"error": {"message": "Incorrect API key"}}))
    with pytest.raises(DistillError, match="check OPENAI_API_KEY"):
        run(session, tmp_path, openai(llm), store)
    assert store.memories == [] and offset_files(tmp_path) == []


def test_slow_reply_times_out(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.replies.append(Reply(body={"content": [{"type": "text", "text": '{"facts": []}'}]}, delay=3.0))
    started = time.monotonic()
    with pytest.raises(DistillError, match=r"no reply within 0\.5s"):
        run(session, tmp_path, openai(llm, timeout=0.5), store)
    assert time.monotonic() - started < 2.5
    assert store.memories == [] and offset_files(tmp_path) == []


def test_unreachable_endpoint(session: Path, tmp_path: Path) -> None:
    provider = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9", timeout=2)
    with pytest.raises(DistillError, match="cannot reach"):
        run(session, tmp_path, provider, Store())


def test_sink_failure_keeps_the_offset(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    def broken_sink(memory: Memory) -> None:
        raise OSError("disk full")

    llm.facts([FACT])
    with pytest.raises(OSError):
        distill_session(
            session,
            tmp_path / "state",
            provider=anthropic(llm),
            existing=lambda _: False,
            similar=lambda _: False,
            sink=broken_sink,
        )
    assert offset_files(tmp_path) == []


def test_reads_incrementally_and_leaves_a_partial_line(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts([])
    first = run(session, tmp_path, anthropic(llm), store)
    size = session.stat().st_size
    assert first.end == size

    append(session, user("from now on, prefer httpx over requests"))
    complete = session.stat().st_size
    with session.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "message": {"content": "half a li')  # still being written
    llm.facts([{"summary": "Prefer httpx over requests", "category": "pref"}])
    second = run(session, tmp_path, anthropic(llm), store)
    assert (second.start, second.end) == (size, complete)
    prompt = llm.requests[1]["body"]["messages"][0]["content"]
    assert "prefer httpx" in prompt and "migration test is flaky" not in prompt
    (state,) = offset_files(tmp_path)
    assert json.loads(state.read_text())["offset"] == complete


def test_only_tool_noise_advances_without_calling_the_model(
    llm: FakeLLM, session: Path, tmp_path: Path
) -> None:
    llm.facts([])
    run(session, tmp_path, anthropic(llm), Store())
    append(session, assistant(tool("Bash", command="ls")), {"type": "progress"})
    report = run(session, tmp_path, anthropic(llm), Store())
    assert not report.called_llm and report.end == session.stat().st_size and len(llm.requests) == 1


def test_lines_that_are_not_json_are_skipped_counted_and_logged(
    llm: FakeLLM, session: Path, tmp_path: Path
) -> None:
    append(session, "this is not json", "[1, 2]", user("and use ruff"))
    logged: list[str] = []
    llm.facts([])
    report = run(session, tmp_path, anthropic(llm), Store(), log=logged.append)
    assert report.skipped_lines == 2
    assert len(logged) == 2 and all(str(session) in line for line in logged)
    assert "and use ruff" in llm.requests[0]["body"]["messages"][0]["content"]


def test_invalid_category_setting_is_refused(session: Path, tmp_path: Path, llm: FakeLLM) -> None:
    from tether.errors import ValidationError

    with pytest.raises(ValidationError, match="invalid distill category 'tips'"):
        run(session, tmp_path, anthropic(llm), Store(), categories=("tips",))
    assert llm.requests == []


def test_a_second_worker_on_the_same_session_backs_off(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    import fcntl

    from tether.intake.distill_state import state_name

    state = tmp_path / "state"
    state.mkdir()
    with (state / state_name(session)).with_suffix(".lock").open("a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        report = run(session, tmp_path, anthropic(llm), Store())
    assert "another distill run" in report.note and llm.requests == []


# ---------------------------------------------------------------- replies and configuration


@pytest.mark.parametrize(
    "reply",
    [
        '{"facts": [{"summary": "A"}]}',
        '```json\n{"facts": [{"summary": "A"}]}\n```',
        '<think>{"facts": []} maybe</think>\nHere you go: [{"summary": "A"}, "junk"]',
        '{"memories": [{"summary": "A"}]}',
    ],
)
def test_parse_facts_tolerates_wrapping(reply: str) -> None:
    assert parse_facts(reply) == [{"summary": "A"}]


def test_over_long_summary_is_cut_and_kept_in_details(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    long = "When the nightly job " + "really " * 30 + "fails, rerun it"
    llm.facts([{"summary": long, "details": "Because.", "category": "gotcha"}])
    store = Store()
    run(session, tmp_path, anthropic(llm), store)
    (memory,) = store.memories
    assert len(memory.summary) <= 160 and memory.summary.endswith("…")
    assert memory.details == f"{long}\n\nBecause."


@pytest.mark.parametrize(
    ("fact", "duplicate"),
    [
        ("Use pnpm for all installs", True),  # one word inserted
        ("Staging listens on port 8443", False),  # another fact in the same words: a static model says 0.97
        ("The API is cached for ten minutes", False),
        ("User prefers small commits", False),
    ],
)
@pytest.mark.parametrize(
    "embedder", ["hashed", "static"]
)  # static: a model of meaning, blind to these numbers
def test_near_duplicates_are_judged_by_wording_whatever_the_embedder(
    repo: Path, home: Path, fact: str, duplicate: bool, embedder: str
) -> None:
    set_value(repo / ".tether" / "config.toml", "embedder", embedder)
    with Workspace.open(repo, home=home) as ws:
        ws.add("Use pnpm for installs")
        ws.add("Staging listens on port 6443")
        ws.add("The API is cached for five minutes")
        assert ws.embedder.id.startswith(embedder)
        assert (near_duplicate(ws, fact) is not None) == duplicate


# ---------------------------------------------------------------- across runs, scopes, summaries


def test_the_cap_holds_across_runs_of_one_session(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    # Regression: Stop, PreCompact and SessionEnd each ran distill on one session, 3 facts each time.
    store = Store()
    llm.facts(
        [{"summary": "Fact one", "category": "decision"}, {"summary": "Fact two", "category": "decision"}]
    )
    run(session, tmp_path, anthropic(llm), store)
    append(session, user("also: releases are cut from main only"))
    llm.facts([{"summary": f"Later fact {i}", "category": "decision"} for i in range(3)])
    second = run(session, tmp_path, anthropic(llm), store)
    assert [m.summary for m in store.memories] == ["Fact one", "Fact two", "Later fact 0"]
    assert "at most 1 facts" in llm.requests[1]["body"]["system"]
    assert [reason for _, reason in second.dropped] == ["over the limit of 3 facts per session"] * 2

    append(session, user("and never force-push"))
    third = run(session, tmp_path, anthropic(llm), store)
    assert len(llm.requests) == 2 and not third.called_llm  # the session is full: no model call
    assert third.note == "this session already has 3 distilled facts"
    assert third.end == session.stat().st_size and len(store.memories) == 3


def test_each_fact_has_the_scope_the_model_gave(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    llm.facts(
        [
            {"summary": "Team-wide fact", "category": "pref", "scope": "team"},
            {"summary": "Migrations live in db/migrations", "category": "decision", "files": ["src/db.py"]},
            {"summary": "Prefers terse answers", "category": "pref", "scope": "user", "files": ["src/db.py"]},
            {"summary": "@observe session: the flaky test is being fixed", "category": "gotcha"},
        ]
    )
    report = run(session, tmp_path, anthropic(llm), store, session="sess-9")
    assert "scope" in llm.requests[0]["body"]["system"]
    scoped = [(m.summary, m.scope, m.session, m.files) for m in store.memories]
    assert scoped == [
        ("Migrations live in db/migrations", "project", None, ("src/db.py",)),
        ("Prefers terse answers", "user", None, ()),  # a user fact names no repository's files
        ("the flaky test is being fixed", "session", "sess-9", ()),
    ]
    assert report.dropped == [("Team-wide fact", "scope 'team' is not project, user or session")]


def test_a_session_fact_without_a_session_id_belongs_to_the_transcript(
    llm: FakeLLM, session: Path, tmp_path: Path
) -> None:
    store = Store()
    llm.facts([{"summary": "Working on the flaky test", "category": "gotcha", "scope": "session"}])
    run(session, tmp_path, anthropic(llm), store)
    assert store.memories[0].session == session.stem


def test_exact_summary_duplicates_are_refused(llm: FakeLLM, session: Path, tmp_path: Path) -> None:
    store = Store()
    known = {content_hash("Use uv, not pip")}
    llm.facts(
        [
            {
                "summary": "use UV, not pip",
                "details": "Other words than the stored memory's.",
                "category": "pref",
            },
            {"summary": "Pin numpy below 3", "details": "Because of the C API.", "category": "decision"},
            {"summary": "Pin numpy below 3", "details": "Said differently.", "category": "decision"},
        ]
    )
    report = run(session, tmp_path, anthropic(llm), store, existing_summary=lambda d: d in known)
    assert [m.summary for m in store.memories] == ["Pin numpy below 3"]
    assert [reason for _, reason in report.dropped] == ["an existing memory has this summary"] * 2


def test_a_workspace_run_refuses_known_summaries_and_keeps_project_and_user_facts(
    llm: FakeLLM, session: Path, ws: Any
) -> None:
    from tether.intake.autodistill import run_distill
    from tether.store.base import Query

    ws.add("Use uv, not pip", details="Written by hand.")
    llm.facts(
        [
            {"summary": "Use uv, not pip", "details": "The model's own words.", "category": "pref"},
            {"summary": "Prefers terse answers", "category": "pref", "scope": "user"},
            {"summary": "The flaky test is being fixed", "category": "gotcha", "scope": "session"},
        ]
    )
    result = run_distill(ws, session, session="s-1", provider=anthropic(llm))
    # The worker runs at session end, after the session's memory was dropped: a session fact is not kept.
    assert [reason for _, reason in result.report.dropped] == [
        "an existing memory has this summary",
        "session facts are not kept here",
    ]
    assert '"session"' not in llm.requests[0]["body"]["system"]
    scopes = {m.summary: (m.scope, m.session) for m in ws.find(Query(origin="distilled", scope=None))}
    assert scopes == {"Prefers terse answers": ("user", None)}
