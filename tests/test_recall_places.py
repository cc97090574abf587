"""The channels that read the code at anchors (`tether.recall.places`): the place words, before the edit's
place is known. The anchor channel's ordering at the edit is tested with each agent's hooks in
`test_anchors_recall.py`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import git
from tether.anchors.resolve import FileView, resolve
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


def test_an_anchor_widened_to_its_definition_has_no_place_words(repo: Path, ws: Workspace) -> None:
    """A warning whose own lines were edited away is left anchored on the definition that held them
    (`widened`): the definition's name and lines are no longer where the warning was, so the place words
    give it nothing (as the recent-change channel gives it nothing), though it stays a memory of its file."""
    path = "src/check.py"
    (repo / "src").mkdir(exist_ok=True)
    body = ["def verify_checksum(blob):", *("    blob = step(blob)" for _ in range(12))]
    kept = ["    if crc32(blob) != blob.crc:", "        raise Corrupt(blob)", "    return blob", ""]
    (repo / path).write_text("\n".join([*body, *kept]) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "check")
    mid = ws.add("Corrupt blobs must never be retried", category="gotcha", at=[f"{path}:14-15"]).memory.id
    found = {r.memory.id: r for r in ws.recall("verify the checksum twice", [path], record=False).memories}
    assert found[mid].signals["place"] > 0
    rewritten = [
        "    digest = sha256(blob.payload)",
        "    compare(digest, blob.expected)",
        "    return blob",
        "",
    ]
    (repo / path).write_text("\n".join([*body, *rewritten]) + "\n", encoding="utf-8")
    memory = ws.get(mid)
    assert resolve(memory.anchors[0], FileView.read(repo, path)).how == "widened"
    found = {r.memory.id: r for r in ws.recall("verify the checksum twice", [path], record=False).memories}
    assert mid in found and "place" not in found[mid].signals


def test_place_scores_do_not_depend_on_the_hash_seed(repo: Path, ws: Workspace, home: Path) -> None:
    """The place words' idf sums are exact (`math.fsum`), so a set's iteration order, which changes with
    PYTHONHASHSEED from one process to the next, cannot flip a near tie. (The total score also moves with
    the clock, by recency: the place magnitude is compared, to the last bit.)"""
    path = "src/mix.py"
    (repo / "src").mkdir(exist_ok=True)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    lines: list[str] = []
    anchors = []
    for n in range(6):
        lines.extend("pass" for _ in range(30))
        anchors.append(len(lines) + 1)
        lines.append("# NOTE: careful")
        lines.append(" + ".join(words[n % 3 : n % 3 + 4 + n]))  # overlapping word sets, different idf
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "mix")
    for n, line in enumerate(anchors):
        ws.add(f"Careful with the mix {n}", category="gotcha", at=[f"{path}:{line}-{line}"])
    script = (
        "import sys\nfrom pathlib import Path\nfrom tether.workspace import Workspace\n"
        "ws = Workspace.open(Path(sys.argv[1]), home=Path(sys.argv[2]))\n"
        f"found = ws.recall({' '.join(words)!r}, [{path!r}], record=False, limit=10).memories\n"
        "print([(r.memory.id, r.signals['place'].hex()) for r in found])\n"
    )
    outputs = set()
    for seed in range(8):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run(
            [sys.executable, "-c", script, str(repo), str(home)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs


def test_the_touched_files_memories_beside_its_recent_changes_come_first(repo: Path, ws: Workspace) -> None:
    """Issue 17: where work on a file went lately (its last commits, and what is not committed yet) is where
    the next change often lands (`places.recent_channel`): with a prompt that says nothing of the places, the
    warning beside the last commit's lines comes first, then the one beside an uncommitted edit."""
    path = "src/queue.py"
    (repo / "src").mkdir(exist_ok=True)
    lines: list[str] = []
    anchors: dict[str, int] = {}
    for name in ("enqueue", "drain", "purge"):
        lines.extend(f"step_{name}_{n} = {n}" for n in range(40))
        anchors[name] = len(lines) + 1
        lines.append(f"# NOTE: careful with {name}")
        lines.append(f"def {name}(job):")
        lines.append("    return job")
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "queue")
    ids = {
        name: ws.add(f"Keep the {name} order", category="gotcha", at=[f"{path}:{line}-{line}"]).memory.id
        for name, line in anchors.items()
    }
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the memories")  # notes only: the file's last commit is still "queue"

    def order() -> list[str]:
        found = ws.recall("tidy up", [path], record=False, limit=3).memories
        return [r.memory.id for r in found]

    everything_recent = order()  # the file's first commit added every line: no order from it
    for n in range(3):  # the file's first line, three times: the commit that added it is not among the last
        lines[0] = f"version = {n}"
        (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
        git(repo, "commit", "-qam", f"version {n}")
    lines[anchors["drain"]] = "def drain(job, limit=10):"  # the line below the warning
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "commit", "-qam", "drain takes a limit")
    found = ws.recall("tidy up", [path], record=False, limit=3).memories
    assert found[0].memory.id == ids["drain"], everything_recent
    assert found[0].signals["recent"] > max(r.signals.get("recent", 0.0) for r in found[1:])
    # an uncommitted edit beside another warning: the two nearest recent work come first
    lines[anchors["purge"]] = "def purge(job, force=False):"
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert set(order()[:2]) == {ids["drain"], ids["purge"]}


def test_the_first_picks_neighbours_take_the_next_slots(repo: Path, ws: Workspace) -> None:
    """Issue 17: a commit's changed lines cluster, and so do the warnings beside them
    (`places.beside_first`): once the first memory is picked, a warning anchored a few lines from it ranks
    before an equally scored one far away in the same file, and its receipt says so. With the edit's place
    known the anchor channel orders them instead, and nothing is moved."""
    path = "src/ledger.py"
    (repo / "src").mkdir(exist_ok=True)
    lines = [f"entry_{n} = {n}" for n in range(300)]
    lines[9] = "# NOTE: rounding happens once"
    lines[17] = "# NOTE: keep the order of entries"  # 8 lines on: out of reach of the first's words
    lines[199] = "# NOTE: keep the order of entries (archive)"
    (repo / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "ledger")

    def add(memory_id: str, summary: str, line: int) -> str:
        added = ws.add(summary, category="gotcha", at=[f"{path}:{line}-{line}"], memory_id=memory_id)
        return added.memory.id

    first = add("eeeeeeee", "Rounding of ledger totals happens exactly once", 10)
    # Equal in everything but their place; without the ordering the tie goes to the smaller id, the far one.
    far = add("aaaaaaaa", "Keep the order of the archived entries", 200)
    near = add("cccccccc", "Keep the order of the posted entries", 18)
    found = ws.recall("ledger totals rounding", [path], record=False).memories
    assert [r.memory.id for r in found] == [first, near, far], [r.receipt for r in found]
    assert found[1].signals["beside"] > found[2].signals["beside"] > 0
    assert f"beside {first} (8 lines)" in found[1].receipt and "beside" not in found[2].receipt
    located = ws.recall("ledger totals rounding", [f"{path}:250"], record=False).memories
    assert all("beside" not in r.signals for r in located)
