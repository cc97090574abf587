"""Files a prompt names stand for touched files (`tether.recall.named`): which words count, how a name is
found in a real repository's map, what is never taken, and the prompt hook, `tether recall` and the playground
ranking with them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Run, claude, commit_all, context_of, run_hook
from tether.recall.named import LOOKUPS, MOST, candidates, named_files, take_named, with_named
from tether.workspace import Workspace


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("why does `src/app/upload.py:40` retry?", ["src/app/upload.py"]),
        ("see @docs/deploy.md, then upload.py.", ["docs/deploy.md", "upload.py"]),
        ("src/app/upload.py::upload and ./src/app/auth.py", ["src/app/upload.py", "src/app/auth.py"]),
        ("fetch https://example.com/src/app/upload.py first", []),  # a URL's path
        ("bump to v1.2 (python 3.11)", []),  # versions are no file names
        ("compare ../outside/secret.py and ~/notes.md", []),
        ("upload.py and upload.py again", ["upload.py"]),
    ],
)
def test_candidates_are_the_path_like_words(prompt: str, expected: list[str]) -> None:
    assert candidates(prompt) == expected


@pytest.fixture
def mapped(repo: Path, ws: Workspace) -> Workspace:
    """The repository with a few more files, committed, and its repo map built."""
    for path in (
        "web/src/index.ts",
        "api/src/index.ts",
        "cli/src/index.ts",
        "lib/src/index.ts",
        "lib/billing.py",
    ):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("x = 1\n", encoding="utf-8")
    commit_all(repo, "more files")
    repo_map = ws.repo_map()
    assert repo_map is not None
    repo_map.refresh()
    return ws


def test_a_name_is_found_as_a_path_or_as_a_file_name_that_few_files_have(
    repo: Path, mapped: Workspace
) -> None:
    def names(prompt: str) -> list[str]:
        return named_files(prompt, repo, mapped.repo_map())

    assert names("why does src/app/upload.py retry?") == ["src/app/upload.py"]
    assert names("why does upload.py retry?") == ["src/app/upload.py"]  # one file of that name
    assert names("what does app/upload.py do") == ["src/app/upload.py"]  # the end of a path
    assert names("look at the Makefile and billing.py") == [
        "lib/billing.py"
    ]  # Makefile: no extension, no slash
    assert names("fix index.ts") == []  # four files have that name: none of them is meant
    assert names("fix web/src/index.ts") == ["web/src/index.ts"]
    assert names(f"read {repo / 'docs/deploy.md'}") == ["docs/deploy.md"]  # absolute, inside the root
    assert names("fix nothing.py or src/app/gone.py") == []  # no such files
    many = " ".join(f"{d}/src/index.ts" for d in ("web", "api", "cli", "lib")) + " upload.py docs/deploy.md"
    assert len(names(many)) == MOST


def test_a_prompt_full_of_paths_is_looked_up_only_so_far(repo: Path, mapped: Workspace) -> None:
    # A pasted log: the first LOOKUPS path-like words are looked up, the file named after them is not.
    log = " ".join(f"pkg/gone_{i}.py" for i in range(LOOKUPS)) + " upload.py"
    assert named_files(log, repo, mapped.repo_map()) == []
    assert named_files("upload.py " + log, repo, mapped.repo_map()) == ["src/app/upload.py"]


def test_nothing_outside_the_root_is_ever_taken(repo: Path, mapped: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n", encoding="utf-8")
    (repo / "src" / "link.py").symlink_to(outside)
    repo_map = mapped.repo_map()
    assert repo_map is not None
    repo_map.refresh()  # the map lists the link: a lookup by name must still leave it out
    assert repo_map.named("link.py", 3) == ["src/link.py"]
    prompt = f"compare {outside}, ../outside.py, src/link.py and link.py"
    assert named_files(prompt, repo, mapped.repo_map()) == []
    assert named_files(prompt, None, None) == []


def test_named_files_come_first_then_the_latest_touched() -> None:
    assert with_named(["a"], ["b", "c"]) == ["a", "b", "c"]
    assert with_named(["a", "b"], ["c", "a", "d"]) == ["a", "b", "c", "d"]  # each once
    assert with_named([str(i) for i in range(7)], ["x"]) == [*(str(i) for i in range(MOST)), "x"]
    assert take_named("no names here", Path("/nowhere"), None, ["t"]) == ([], ["t"])


def test_the_prompt_hook_ranks_with_the_files_the_prompt_names(
    repo: Path, mapped: Workspace, home: Path
) -> None:
    # Nothing in these gotchas shares a word with the prompts: only the file they are tied to says they matter.
    gotchas = [
        mapped.add(text, category="gotcha", files=["src/app/upload.py"])
        for text in (
            "chunks are 5 MB, the server rejects others",
            "a failed part is sent again, never the whole",
        )
    ]
    ids = {g.memory.id for g in gotchas}

    def injected(session: str, prompt: str) -> set[str]:
        event = claude("UserPromptSubmit", repo, session, prompt=prompt)
        out = run_hook("claude", "UserPromptSubmit", event, repo, home).stdout
        return {i for i in ids if i in context_of(out)}

    assert injected("plain", "please make the progress bar smoother") == set()
    assert injected("named", "please make the progress bar in upload.py smoother") == ids
    assert injected("mention", "please make @src/app/upload.py smoother") == ids


def test_tether_recall_and_the_playground_take_them_too(
    repo: Path, mapped: Workspace, tether: Callable[..., Run]
) -> None:
    from tether.adapters.ui.core import UICore

    gotcha = mapped.add(
        "chunks are 5 MB, the server rejects others", category="gotcha", files=["src/app/upload.py"]
    )
    run = tether("recall", "--prompt", "smoother progress in upload.py", "--no-record")
    assert gotcha.memory.id in run.out
    assert "named in the prompt: src/app/upload.py (taken as touched)" in run.err
    run = tether("recall", "--prompt", "smoother progress bar", "--no-record")
    assert gotcha.memory.id not in run.out
    run = tether("explain", gotcha.memory.id, "--prompt", "smoother progress in upload.py", "--json")
    assert '"file": "src/app/upload.py"' in run.out  # the same evidence the hook's recall had
    played = UICore(mapped).playground("smoother progress in upload.py", [])
    assert played.files == ["src/app/upload.py"] and gotcha.memory.id in played.block


def test_both_stores_find_a_name_by_the_end_of_its_path(ws: Workspace) -> None:
    from tether.store.memory import InMemoryRepoMap

    paths = [
        "a/charge.py",
        "b/charge.py",
        "b/recharge.py",
        "charge.py",
        "c/[x]*.py",
        "c/ax.py",
        "d/Charge.py",
    ]
    stores = [ws.store.repomap(), InMemoryRepoMap()]
    for tables in stores:
        with tables.write():
            tables.set_files(paths)
    for tables in stores:
        assert tables.ending_with("charge.py", 10) == ["a/charge.py", "b/charge.py", "charge.py"]
        assert tables.ending_with("charge.py", 2) == ["a/charge.py", "b/charge.py"]
        assert tables.ending_with("b/charge.py", 10) == ["b/charge.py"]
        assert tables.ending_with("[x]*.py", 10) == ["c/[x]*.py"]  # glob characters are only characters
        assert tables.ending_with("Charge.py", 10) == ["d/Charge.py"]  # paths are case-sensitive


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_prompt_is_read_without_error(mapped: Workspace, prompt: str) -> None:
    root = mapped.root
    assert root is not None
    found = named_files(
        "upload.py " + prompt + " " + prompt.replace(" ", "/") + "\x00.py", root, mapped.repo_map()
    )
    assert "src/app/upload.py" in found and len(found) <= MOST
    assert all((root / path).resolve().is_relative_to(root.resolve()) for path in found)


def test_search_ranks_the_named_files_memories_as_touched(mapped: Workspace) -> None:
    tied = mapped.add(
        "a failed part is sent again, never the whole", category="gotcha", files=["src/app/upload.py"]
    )
    # Its words are the query's: without the name, this one comes first.
    mapped.add("the upload py scripts in tools/ upload docs, not upload.py", category="context")
    found = mapped.search("what should I know about upload.py")
    assert found[0].memory.id == tied.memory.id and found[0].confidence == "strong"
    # The library's recall, what the hooks inject, takes them as the hook does.
    recalled = mapped.recall("what should I know about upload.py", record=False).memories
    assert recalled[0].memory.id == tied.memory.id and "file" in recalled[0].receipt
