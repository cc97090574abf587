"""`tether.model.limits`: every bound is enforced where its input enters, with a message naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import ValidationError
from tether.model import limits
from tether.workspace import Workspace


def test_limits_are_ordered_sensibly() -> None:
    assert limits.SUMMARY_MAX < limits.QUERY_MAX < limits.DETAILS_MAX
    assert limits.DETAILS_MAX * 4 < limits.NOTE_MAX_BYTES  # a note at its largest is still a note
    assert limits.DETAILS_MAX < limits.IMPORT_LINE_MAX < limits.HOOK_INPUT_MAX_BYTES


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"details": "x" * (limits.DETAILS_MAX + 1)}, f"the limit is {limits.DETAILS_MAX}"),
        ({"files": [f"src/f{i}.py" for i in range(limits.FILES_MAX + 1)]}, "name their directory instead"),
        ({"files": ["a" * (limits.PATH_MAX + 1)]}, f"the limit is {limits.PATH_MAX}"),
    ],
)
def test_oversized_fields_are_refused_with_their_limit(
    ws: Workspace, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ws.add("A memory", **kwargs)  # type: ignore[arg-type]


def test_fields_at_their_limit_are_accepted(repo: Path, ws: Workspace) -> None:
    added = ws.add(
        "A memory", details="x" * limits.DETAILS_MAX, files=[f"src/f{i}.py" for i in range(limits.FILES_MAX)]
    )
    assert added.created and len(added.memory.files) == limits.FILES_MAX


def test_a_search_query_over_the_limit_is_an_error(ws: Workspace) -> None:
    with pytest.raises(ValidationError, match=f"the limit is {limits.QUERY_MAX}"):
        ws.search("deploy " * limits.QUERY_MAX)


def test_recall_reads_only_the_tail_of_a_huge_prompt(ws: Workspace) -> None:
    memory = ws.add("Staging API is on port 6443").memory
    pasted = "Traceback: frame in worker\n" * 200_000  # ~5 MB of pasted log before the question
    assert [r.memory.id for r in ws.recall(pasted + "\nwhich port is staging on?").memories] == [memory.id]


def test_a_hook_input_over_the_limit_fails_open_unread(repo: Path, home: Path) -> None:
    from conftest import claude, run_hook

    payload = claude("UserPromptSubmit", repo, prompt="x" * (limits.HOOK_INPUT_MAX_BYTES + 10))
    done = run_hook("claude", "UserPromptSubmit", payload, repo, home)
    assert done.returncode == 0 and done.stdout == ""
    [line] = (repo / ".tether" / "logs" / "hooks.log").read_text().splitlines()
    assert "over" in line
