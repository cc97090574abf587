"""The channels that read the code at anchors (`tether.recall.places`): the place words, before the edit's
place is known. The anchor channel's ordering at the edit is tested with each agent's hooks in
`test_anchors_recall.py`."""

from __future__ import annotations

from pathlib import Path

from conftest import git
from tether.recall.places import _lines_holding
from tether.workspace import Workspace


def test_lines_holding_finds_words_and_identifier_parts_not_substrings() -> None:
    lines = ["def retry_upload(attempt):", "    # reupload later", "    return backoffSeconds * attempt"]
    found = _lines_holding(lines, {"upload", "seconds", "attempt", "later", "load"})
    # `upload` is a part of retry_upload (line 1) but only a substring of `reupload` (line 2)
    assert found == {"upload": [1], "seconds": [3], "attempt": [1, 3], "later": [2]}


def test_the_prompts_words_in_the_code_around_an_anchor_order_the_touched_files_memories(
    repo: Path, ws: Workspace
) -> None:
    """Issue 17: before the edit's place is known, what the prompt says of the code a warning sits beside
    orders the touched file's warnings (`places.place_channel`): words 5 lines from the anchor count, words
    40 lines away do not, and a memory whose anchored code is gone gets nothing from it."""
    path = "src/upload.py"
    (repo / "src").mkdir(exist_ok=True)
    blocks = {
        "queue": "def enqueue(job):\n    jobs.append(job)\n",
        "backoff": "def wait_before_retry(attempt):\n    return backoff_seconds * attempt\n",
        "checksum": "def verify(blob):\n    return crc32(blob) == blob.crc\n",
    }
    lines: list[str] = []
    anchors: dict[str, int] = {}
    for name, code in blocks.items():
        lines.extend("pass" for _ in range(40))
        anchors[name] = len(lines) + 1
        lines.append(f"# NOTE: careful here ({name})")
        lines.extend(code.splitlines())
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "upload")
    summaries = {
        "queue": "Keep this in step with the worker",
        "backoff": "Keep this in step with the scheduler",
        "checksum": "Keep this in step with the server",
    }
    ids = {
        name: ws.add(summaries[name], category="gotcha", at=[f"{path}:{line}-{line}"]).memory.id
        for name, line in anchors.items()
    }
    found = ws.recall("the upload backoff seconds are too long", [path], record=False).memories
    assert found[0].memory.id == ids["backoff"], [r.memory.summary for r in found]
    assert found[0].signals["place"] > 0
    assert all("place" not in r.signals for r in found[1:])
    # the checksum's code is 40+ lines from the other anchors: only its own memory is near it
    found = ws.recall("crc32 mismatch", [path], record=False).memories
    assert found[0].memory.id == ids["checksum"] and "place" in found[0].signals
    # the anchored code is gone: the memory is about its file only, and the place says nothing
    (repo / path).write_text("\n".join("pass" for _ in range(200)) + "\n", encoding="utf-8")
    found = ws.recall("the upload backoff seconds are too long", [path], record=False).memories
    assert all("place" not in r.signals for r in found)


def test_the_name_of_the_definition_holding_an_anchor_counts_however_far_above_it_is(
    repo: Path, ws: Workspace
) -> None:
    """A prompt naming a function finds the warning deep inside it (20 lines below the `def`, out of the
    5 lines' reach), and not the warnings inside the file's other functions."""
    path = "src/jobs.py"
    (repo / "src").mkdir(exist_ok=True)
    lines: list[str] = []
    anchors: dict[str, int] = {}
    for name in ("enqueue_batch", "verify_checksum", "schedule_retry"):
        lines.append(f"def {name}(item):")
        lines.extend("    item = step(item)" for _ in range(20))
        anchors[name] = len(lines) + 1
        lines.append("    # NOTE: careful, the order matters here")
        lines.extend("    item = step(item)" for _ in range(10))
        lines.append("    return item")
        lines.append("")
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "jobs")
    ids = {
        name: ws.add(f"The order matters ({n})", category="gotcha", at=[f"{path}:{line}-{line}"]).memory.id
        for n, (name, line) in enumerate(anchors.items())
    }
    for name, prompt in (("verify_checksum", "verify the checksum twice"), ("schedule_retry", "retry later")):
        found = ws.recall(prompt, [path], record=False).memories
        assert found[0].memory.id == ids[name], [r.memory.summary for r in found]
        assert found[0].signals["place"] > 0
        assert all("place" not in r.signals for r in found[1:])
