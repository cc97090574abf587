"""Property-based fuzzing (hypothesis) of every reader of outside input: the note parser, the frontmatter
writer (render -> parse round trip), hook stdin for each agent, MCP tool arguments and the wire, the
rule-file splitter, the query sanitizer and `tether import`.

The budget is bounded (the `check` profile in conftest: a fixed number of examples, derandomized, so a
run is the same everywhere and the whole suite stays well under a minute).
"""

from __future__ import annotations

import contextlib
import io
import json
import string
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_git_repo
from tether.adapters.hooks import main as hook_main
from tether.adapters.hooks.agents import _EVENTS
from tether.errors import NoteError, TetherError, ValidationError
from tether.intake.rulefiles import split_rules
from tether.model.display import first_control, first_line_break
from tether.model.limits import SUMMARY_MAX
from tether.model.memory import CATEGORIES, PRIORITIES, STATUSES, Memory
from tether.model.prompt import sanitize
from tether.model.timestamps import utcnow
from tether.notes import format as notes
from tether.project import init_project
from tether.workspace import Workspace

FIXTURES = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

# Text as a hostile file can hold it: any code point, the surrogates and separators included.
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=400)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(ANY_TEXT, children, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def project() -> Iterator[tuple[Path, Path]]:
    """One repository for the whole module (hypothesis runs many examples in one test)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo, home = make_git_repo(Path(tmp) / "repo"), Path(tmp) / "home"
        home.mkdir()
        init_project(repo, home)
        with Workspace.open(repo, home=home) as ws:
            ws.add("upload() must stream, never buffer", category="gotcha", files=["src/app/upload.py"])
            ws.add("Staging API listens on port 6443", category="context")
        yield repo, home


# -- notes -------------------------------------------------------------------------------------------------


FRONT_KEYS = [
    "id",
    "summary",
    "category",
    "files",
    "priority",
    "pinned",
    "origin",
    "supersedes",
    "status",
    "created",
    "updated",
    "x",
]
YAML_VALUES = st.one_of(
    ANY_TEXT,
    st.sampled_from(
        [
            "2026-02-30",
            "0a1b2c3d",
            "true",
            "[",
            "{a: 1}",
            "!!binary aGk=",
            "*a",
            "&a [1]",
            "1e9999",
            "~",
            "'\\udcff'",
            '"\\u2028"',
        ]
    ),
    st.integers(),
)


@st.composite
def note_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(ANY_TEXT)
    keys = draw(st.lists(st.sampled_from(FRONT_KEYS), max_size=8))
    lines = [f"{key}: {draw(YAML_VALUES)}" for key in keys]
    return "---\n" + "\n".join(lines) + "\n---\n" + draw(ANY_TEXT)


@given(note_texts())
def test_the_note_parser_raises_nothing_but_a_note_error(text: str) -> None:
    try:
        memory = notes.parse(text, "/r/.tether/memories/x.md", "project")
    except NoteError:
        return
    assert memory.summary and not first_line_break(memory.summary) and not first_control(memory.summary)
    assert len(memory.summary) <= SUMMARY_MAX


SAFE_CHARS = st.characters(
    codec="utf-8",
    exclude_categories=("Cc", "Cs", "Zl", "Zp"),
    exclude_characters="\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\x85",
)
PATHS = st.lists(
    st.text(string.ascii_letters + string.digits + "_-.", min_size=1, max_size=12).filter(
        lambda p: p not in (".", "..")
    ),
    min_size=1,
    max_size=3,
).map("/".join)


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    summary = draw(st.text(SAFE_CHARS, min_size=1, max_size=SUMMARY_MAX)).strip()
    if not summary:
        summary = "x"
    details = draw(st.text(st.one_of(SAFE_CHARS, st.sampled_from("\n\t")), max_size=300)).strip("\n")
    now = utcnow()
    return Memory(
        id=draw(st.text("0123456789abcdef", min_size=8, max_size=8)),
        summary=summary,
        details=details,
        category=draw(st.sampled_from(CATEGORIES)),
        files=tuple(dict.fromkeys(draw(st.lists(PATHS, max_size=4)))),
        priority=draw(st.sampled_from(PRIORITIES)),
        pinned=draw(st.booleans()),
        origin=draw(
            st.sampled_from(["user", "agent", "seed", "distilled", "rules:AGENTS.md", "rules:a b/CLAUDE.md"])
        ),
        status=draw(st.sampled_from(STATUSES)),
        created=now,
        updated=now,
    )


@given(memories())
def test_a_rendered_note_parses_back_to_the_same_memory(memory: Memory) -> None:
    back = notes.parse(notes.render(memory), "/r/.tether/memories/x.md", "project")
    assert back == memory


# -- hooks: every agent, every event, any JSON ------------------------------------------------------------

EVENTS = [(agent, event) for agent, events in _EVENTS.items() for event in events] + [
    ("claude", "NoSuchEvent")
]


@st.composite
def hook_inputs(draw: st.DrawFn, repo: Path) -> tuple[str, str, str]:
    agent, event = draw(st.sampled_from(EVENTS))
    base: dict[str, Any] = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "session_id",
                    "prompt",
                    "tool_name",
                    "tool_input",
                    "cwd",
                    "transcript_path",
                    "source",
                    "workspace_roots",
                    "conversation_id",
                    "file_path",
                ]
            ),
            JSON,
            max_size=6,
        )
    )
    if draw(st.booleans()):
        base["cwd"] = str(repo)
        base["workspace_roots"] = [str(repo)]
        base.setdefault(
            "tool_input",
            {"file_path": str(repo / draw(st.sampled_from(["src/app/upload.py", "x", "../../etc/passwd"])))},
        )
    kind = draw(st.sampled_from(["object", "raw", "json"]))
    body = (
        json.dumps(base) if kind == "object" else draw(ANY_TEXT) if kind == "raw" else json.dumps(draw(JSON))
    )
    return agent, event, body


@settings(suppress_health_check=FIXTURES)
@given(data=st.data())
def test_every_hook_input_exits_0_with_nothing_or_json(
    project: tuple[Path, Path], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, home = project
    monkeypatch.setenv("TETHER_HOME", str(home))
    monkeypatch.chdir(repo)
    agent, event, body = data.draw(hook_inputs(repo))
    out = io.StringIO()
    started = time.monotonic()
    assert hook_main([agent, event], stdin=io.StringIO(body), stdout=out) == 0
    assert time.monotonic() - started < 30  # the deadline is 3 s; generous for a loaded machine
    text = out.getvalue()
    if text:
        json.loads(text)


# -- MCP: tool arguments and the wire ----------------------------------------------------------------------

TOOL_ARGS = {
    "memory_search": ["query", "q", "files", "file", "category", "limit", "k"],
    "memory_get": ["id", "memory_id"],
    "memory_add": ["summary", "details", "category", "files", "scope", "pinned", "supersedes"],
    "memory_remove": ["id", "reason"],
    "memory_links": ["id"],
    "memory_pin": ["id", "pinned"],
}


@settings(suppress_health_check=FIXTURES, max_examples=60)
@given(data=st.data())
def test_mcp_tools_answer_any_arguments_with_a_result_or_a_tool_error(
    project: tuple[Path, Path], data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import ValidationError as PydanticError

    from tether.adapters.mcp.server import build_server

    repo, home = project
    monkeypatch.setenv("TETHER_HOME", str(home))
    tool = data.draw(st.sampled_from(sorted(TOOL_ARGS)))
    arguments = data.draw(st.dictionaries(st.sampled_from(TOOL_ARGS[tool]), JSON, max_size=4))
    server = build_server(repo)

    async def call() -> Any:
        return await server.call_tool(tool, arguments)

    with contextlib.suppress(ToolError, PydanticError, TetherError):  # what an agent is told; else a bug
        anyio.run(call)


@given(
    st.one_of(
        ANY_TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")),
        JSON.map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=200),
    )
)
def test_the_mcp_wire_answers_or_passes_on_every_line(line: bytes) -> None:
    from tether.adapters.mcp.stdio import error_for

    problem = error_for(line)
    if problem is not None:
        assert problem.error.code in (-32700, -32600)
        json.loads(problem.model_dump_json(by_alias=True))


# -- the rule-file splitter and the query sanitizer --------------------------------------------------------

MARKDOWN = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "# Title",
                "## Section",
                "- item",
                "  - nested",
                "* star",
                "1. first",
                "```",
                "~~~",
                "---",
                "| a | b |",
                "|---|---|",
                "@AGENTS.md",
                "",
                "    code",
                "> quote",
                "globs: src/**",
                "alwaysApply: true",
            ]
        ),
        ANY_TEXT,
    ),
    max_size=30,
).map("\n".join)


@given(MARKDOWN, st.sampled_from(["AGENTS.md", "sub/CLAUDE.md", ".cursor/rules/x.mdc", "GEMINI.md"]))
def test_the_rule_splitter_never_fails_and_keeps_lines_in_range(text: str, path: str) -> None:
    lines = text.splitlines()
    for unit in split_rules(path, text):
        assert 1 <= unit.line <= unit.end_line <= max(1, len(lines))


@given(ANY_TEXT, st.integers(min_value=0, max_value=5))
def test_the_query_sanitizer_never_fails_and_never_grows(text: str, repeat: int) -> None:
    prompt = text * (repeat * 50 + 1)
    started = time.monotonic()
    out = sanitize(prompt)
    assert time.monotonic() - started < 5  # linear: a repeated paste costs milliseconds
    assert len(out) <= len(prompt) + 1


# -- import ---------------------------------------------------------------------------------------------


@st.composite
def export_lines(draw: st.DrawFn) -> list[str]:
    fields = {
        "id": st.one_of(st.text("0123456789abcdef", min_size=8, max_size=8), JSON),
        "summary": st.one_of(ANY_TEXT, JSON),
        "details": st.one_of(ANY_TEXT, JSON),
        "pinned": JSON,
        "files": JSON,
        "scope": st.sampled_from(["project", "user", "session", "team"]),
        "created": st.sampled_from(["2026-01-01T00:00:00Z", "0001-01-01T00:00:00+05:00", "nope"]),
        "updated": st.sampled_from(["2026-01-01T00:00:00Z"]),
    }
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        chosen = draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
        record = {name: draw(fields[name]) for name in chosen}
        lines.append(json.dumps(record) if draw(st.integers(0, 9)) else draw(ANY_TEXT))
    return lines


@settings(suppress_health_check=FIXTURES, max_examples=60)
@given(lines=export_lines())
def test_import_takes_valid_lines_or_refuses_the_file_and_writes_nothing(
    project: tuple[Path, Path], lines: list[str]
) -> None:
    repo, home = project
    with Workspace.open(repo, home=home) as ws:
        before = sorted(p.name for p in (repo / ".tether" / "memories").iterdir())
        try:
            ws.import_lines(lines)
        except ValidationError:
            assert sorted(p.name for p in (repo / ".tether" / "memories").iterdir()) == before
