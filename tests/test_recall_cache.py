"""What recall keeps between recalls (`tether.recall.cache`): per memory object, per version of the index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.model.memory import Memory
from tether.recall.cache import RecallCache
from tether.workspace import Workspace


def test_facts_are_made_once_per_memory_object() -> None:
    cache = RecallCache()
    cache.check("a:1")
    memory = Memory(
        "0a1b2c3d", "Never call retry_upload twice", details="It double-charges.", files=("src/up.py",)
    )
    facts = cache.facts(memory)
    assert cache.facts(memory) is facts
    assert facts.prose == "Never call retry_upload twice\nIt double-charges."
    assert facts.vocabulary.found(["retry", "charge", "up", "py", "download"]) == {
        "retry",
        "charge",
        "up",
        "py",
    }
    assert facts.identifiers == ("retry_upload",)
    assert {"retry", "upload", "charges"} <= facts.words


def test_a_changed_memory_is_a_new_object_and_gets_new_facts() -> None:
    # The store hands out a new object for a memory written since: nothing made from the old one is reused,
    # whatever the version says.
    cache = RecallCache()
    cache.check("a:1")
    old = Memory("0a1b2c3d", "Uploads retry three times")
    assert cache.facts(old).vocabulary.found(["retry"]) == {"retry"}
    new = old.with_changes(summary="Downloads never retry")
    assert cache.facts(new).memory is new
    assert cache.facts(new).vocabulary.found(["downloads"]) == {"downloads"}


def test_a_new_version_drops_the_pinned_list_and_keeps_each_objects_facts() -> None:
    # A write drops the index-wide lists; the facts of a memory it did not change (the store hands out the
    # same object) are kept, and a changed memory is a new object with facts of its own.
    cache = RecallCache()
    cache.check("a:1")
    memory = Memory("0a1b2c3d", "Pinned rule")
    calls: list[int] = []

    def find() -> list[Memory]:
        calls.append(1)
        return [memory]

    facts = cache.facts(memory)
    assert cache.pinned(find) == [memory]
    assert cache.pinned(find) == [memory]
    cache.check("a:1")
    assert cache.facts(memory) is facts and len(calls) == 1
    cache.check("a:2")
    assert cache.facts(memory) is facts
    assert cache.pinned(find) == [memory] and len(calls) == 2
    changed = memory.with_changes(summary="Pinned rule, reworded")
    assert cache.facts(changed) is not facts
    assert cache.facts(changed).vocabulary.found(["reworded"]) == {"reworded"}


def test_past_the_bound_the_facts_are_made_anew() -> None:
    cache = RecallCache(max_facts=2)
    cache.check("a:1")
    memories = [Memory(f"0a1b2c3{n}", f"rule {n}") for n in range(3)]
    first = cache.facts(memories[0])
    cache.facts(memories[1])
    cache.facts(memories[2])  # over the bound: all dropped, this one kept
    assert cache.facts(memories[0]) is not first


def _in_another_process(repo: Path, home: Path, code: str) -> None:
    script = f"from pathlib import Path\nfrom tether.workspace import Workspace\nws = Workspace.open(Path({str(repo)!r}))\n{code}\nws.close()\n"
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=repo,
        env={**os.environ, "TETHER_HOME": str(home)},
        check=True,
        timeout=60,
    )


def test_a_write_in_another_process_is_seen_by_the_next_warm_recall(repo: Path, home: Path) -> None:
    with Workspace.open(repo, home=home, warm=True) as ws:
        kept = ws.add("Upload retries must stay at three", files=["src/app/upload.py"]).memory
        other = ws.add("The billing cron runs at midnight UTC").memory
        first = ws.recall("why do upload retries fail?", ["src/app/upload.py"], record=False)
        assert [r.memory.id for r in first.memories] == [kept.id]
        assert first.memories[0].receipt.startswith("file, text 0.67")
        # Another process rewrites the memory (its words no longer match), pins the other one and adds one.
        _in_another_process(
            repo,
            home,
            f"ws.edit({kept.id!r}, summary='Keep the upload chunk size at 8 MiB')\n"
            f"ws.pin({other.id!r})\n"
            "ws.add('Upload retries back off exponentially', files=['src/app/upload.py'])",
        )
        second = ws.recaller().recall("why do upload retries fail?", ["src/app/upload.py"], record=False)
        by_id = {r.memory.id: r for r in second.memories}
        assert by_id[kept.id].memory.summary == "Keep the upload chunk size at 8 MiB"
        assert "text" not in by_id[kept.id].receipt  # its old words are not kept: no text match now
        added = [r for r in second.memories if r.memory.summary.startswith("Upload retries back off")]
        assert added and added[0].receipt.startswith("file, text")
        assert ws.search("billing cron")[0].memory.pinned  # the pin is seen too
        ranked = ws.recaller()._rank("billing", [], None, ["pinned"])
        assert [c.memory_id for c in ranked] == [other.id]


def test_the_pull_rate_is_summed_again_after_its_time_a_write_or_this_process_s_pull(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tether.recall import cache as cache_module

    now = [1000.0]
    monkeypatch.setattr(cache_module.time, "monotonic", lambda: now[0])
    sums = iter([0.5, 0.25, 0.2, 0.1])
    cache = cache_module.RecallCache()
    cache.check("ab:1")
    assert cache.pull_rate(lambda: next(sums)) == 0.5
    now[0] += cache_module.PULL_RATE_SECONDS - 1
    assert cache.pull_rate(lambda: next(sums)) == 0.5  # trusted for its time
    now[0] += 2
    assert cache.pull_rate(lambda: next(sums)) == 0.25  # then summed again
    cache.forget_pull_rate()
    assert cache.pull_rate(lambda: next(sums)) == 0.2  # this process pulled
    cache.check("ab:2")
    assert cache.pull_rate(lambda: next(sums)) == 0.1  # the index changed


def test_a_pull_in_this_process_is_seen_by_the_next_recall_at_once(ws: Workspace) -> None:
    shown = ws.add("Upload rule about chunking", files=["src/app/upload.py"]).memory
    pulled = ws.add("Deploys go through the release branch").memory
    for turn in range(6):
        ws.recall("", ["src/app/upload.py"], session=f"s{turn}", turn=1)
    before, _ = ws.explain(shown.id, "", ["src/app/upload.py"])
    assert before.magnitude.feedback is None  # nothing acted on yet: the rate is 0, kept for 30 s
    ws.ack(pulled.id)  # no write to the memories: only the ack can tell the cache
    after, _ = ws.explain(shown.id, "", ["src/app/upload.py"])
    assert after.magnitude.feedback == pytest.approx(-0.03)  # 1 pull in 6 showings: ignored from 6
