from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.errors import SecretError, ValidationError
from tether.intake.seeds import claude_memory_dir, parse_claude_memory, parse_seed_file


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_seed_list_becomes_validated_memories(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    seed = write_json(
        tmp_path / "seed.json",
        [
            {"summary": "  Run tests with `make test`, not pytest directly  "},
            {
                "summary": "Never call the payments sandbox from unit tests",
                "details": "It rate-limits the whole team.",
                "category": "gotcha",
                "files": ["src/payments.py", "src/"],
                "priority": "high",
                "pinned": True,
                "scope": "project",
            },
        ],
    )
    memories = parse_seed_file(seed, root=repo)
    assert [m.summary for m in memories] == [
        "Run tests with `make test`, not pytest directly",
        "Never call the payments sandbox from unit tests",
    ]
    first, second = memories
    assert (first.category, first.origin, first.scope, first.files) == ("context", "seed", "project", ())
    assert second.files == ("src/payments.py", "src/")
    assert (second.category, second.priority, second.pinned) == ("gotcha", "high", True)
    assert len({m.id for m in memories}) == 2


def test_seed_object_form(tmp_path: Path) -> None:
    seed = write_json(tmp_path / "seed.json", {"memories": [{"summary": "Use uv for installs"}]})
    assert [m.summary for m in parse_seed_file(seed)] == ["Use uv for installs"]


@pytest.mark.parametrize(
    ("entries", "where", "problem"),
    [
        (
            [{"summary": "ok"}, {"summary": "fine", "category": "tip"}],
            "memories[1].category",
            "invalid category",
        ),
        ([{"summary": "ok"}, {"details": "no summary"}], "memories[1].summary", "missing"),
        ([{"summary": "x" * 161}], "memories[0].summary", "161 characters"),
        ([{"summary": "two\nlines"}], "memories[0].summary", "one line"),
        ([{"summary": "ok", "pinned": "yes"}], "memories[0].pinned", "expected bool"),
        ([{"summary": "ok", "files": "src/a.py"}], "memories[0].files", "expected list"),
        ([{"summary": "ok", "files": ["/etc/passwd"]}], "memories[0].files[0]", "relative"),
        ([{"summary": "ok", "scope": "session"}], "memories[0].scope", "invalid scope"),
        ([{"summary": "ok", "sumary": "typo"}], "memories[0].sumary", "unknown field"),
        (["just a string"], "memories[0]", "expected an object"),
    ],
)
def test_bad_seed_entry_names_entry_and_field(
    tmp_path: Path, entries: list[object], where: str, problem: str
) -> None:
    seed = write_json(tmp_path / "seed.json", {"memories": entries})
    with pytest.raises(ValidationError) as info:
        parse_seed_file(seed)
    message = str(info.value)
    assert f"seed.json: {where}:" in message
    assert problem in message


def test_bad_entry_late_in_file_rejects_the_whole_file(tmp_path: Path) -> None:
    entries = [{"summary": f"fact {i}"} for i in range(5)] + [{"summary": "bad", "priority": "urgent"}]
    seed = write_json(tmp_path / "seed.json", entries)
    with pytest.raises(ValidationError, match=r"\[5\]\.priority"):
        parse_seed_file(seed)


def test_seed_with_a_credential_is_refused_unless_allowed(tmp_path: Path) -> None:
    token = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
    seed = write_json(tmp_path / "seed.json", [{"summary": "CI token", "details": f"token is {token}"}])
    with pytest.raises(SecretError, match=r"\[0\].*GitHub token"):
        parse_seed_file(seed)
    assert parse_seed_file(seed, allow_secrets=True)[0].details == f"token is {token}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "line 1 column 2"),
        ('{"facts": []}', "keys facts"),
        ("42", "got int"),
    ],
)
def test_seed_file_that_is_not_a_list_of_memories(tmp_path: Path, content: str, problem: str) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(content, encoding="utf-8")
    with pytest.raises(ValidationError, match=problem):
        parse_seed_file(seed)


def test_missing_seed_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read seed file"):
        parse_seed_file(tmp_path / "nope.json")


def note(directory: Path, name: str, text: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")


def test_claude_memory_notes_map_type_to_category(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    note(memory, "MEMORY.md", "- [Testing](feedback_testing.md) — integration tests hit a real DB\n")
    note(
        memory,
        "feedback_testing.md",
        "---\nname: real db in tests\ndescription: Integration tests must hit a real database, not mocks\n"
        "type: feedback\n---\nMocks hid a broken migration last quarter.\n\n"
        "**Why:** prod incident.\n**How to apply:** use the docker-compose db.\n",
    )
    note(memory, "user_role.md", "---\nname: role\ndescription: User is a data scientist\ntype: user\n---\n")
    note(
        memory,
        "project_freeze.md",
        "---\nname: freeze\ndescription: Merge freeze from 2026-03-05 for the mobile release\n"
        "type: project\n---\nBody.\n",
    )
    note(
        memory,
        "reference_dash.md",
        "---\nname: dash\ndescription: Latency dashboard is grafana.internal/d/api\n"
        "metadata:\n  type: reference\n---\n",
    )
    # Unquoted colon in the description: not valid YAML, still read.
    note(memory, "odd.md", "---\nname: odd\ndescription: Note: keep it\ntype: project\n---\nx\n")
    by_summary = {m.summary: m for m in parse_claude_memory(memory)}
    assert set(by_summary) == {
        "Integration tests must hit a real database, not mocks",
        "User is a data scientist",
        "Merge freeze from 2026-03-05 for the mobile release",
        "Latency dashboard is grafana.internal/d/api",
        "Note: keep it",
    }
    feedback = by_summary["Integration tests must hit a real database, not mocks"]
    assert feedback.category == "pref"
    assert feedback.details.startswith("Mocks hid a broken migration")
    assert feedback.origin == "agent"
    assert (
        by_summary["User is a data scientist"].category,
        by_summary["User is a data scientist"].scope,
    ) == (
        "pref",
        "user",
    )
    assert by_summary["Merge freeze from 2026-03-05 for the mobile release"].category == "context"
    assert by_summary["Latency dashboard is grafana.internal/d/api"].category == "context"
    assert by_summary["Note: keep it"].scope == "project"


def test_claude_memory_skips_unusable_notes_and_says_why(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    note(memory, "empty.md", "---\nname:\ntype: user\n---\n\n")
    key = "AKIA" + "Q3EGRWJ5XN2PZT7H"  # not AWS's documented EXAMPLE key, which is no secret
    note(memory, "aws.md", f"---\nname: aws\ndescription: AWS creds\ntype: reference\n---\nkey {key}\n")
    note(memory, "plain.md", "# Build\n\nRun `make` before pushing.\n")
    logged: list[str] = []
    memories = parse_claude_memory(memory, log=logged.append)
    assert [(m.summary, m.category) for m in memories] == [("Build", "context")]
    assert len(logged) == 2
    assert any("aws.md" in line and "AWS access key" in line for line in logged)
    assert any("empty.md" in line for line in logged)


def test_claude_memory_long_description_moves_into_details(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    long = "Always " + "really " * 30 + "check the lockfile"
    note(memory, "long.md", f"---\nname: x\ndescription: {long}\ntype: feedback\n---\nbody\n")
    (only,) = parse_claude_memory(memory)
    assert len(only.summary) <= 160 and only.summary.endswith("…")
    assert only.details.startswith(long)


def test_claude_memory_dir_accepts_project_dir_and_encodes_paths(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-u-repo"
    note(project / "memory", "a.md", "---\ndescription: A fact\ntype: project\n---\n")
    assert [m.summary for m in parse_claude_memory(project)] == ["A fact"]
    found = claude_memory_dir(Path("/home/u/my_repo.v2"), {"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert found == tmp_path / "projects" / "-home-u-my-repo-v2" / "memory"
    with pytest.raises(ValidationError, match="not a directory"):
        parse_claude_memory(tmp_path / "missing")
