"""Co-change counting on commits made here: pairs in both senses, renames carry a file's counts, sweeps skipped."""

from __future__ import annotations

from tether.repo.cochange import MAX_COMMIT_FILES, CoChangeCounts
from tether.repo.git import Change, Commit


def commit(sha: str, *changes: Change) -> Commit:
    return Commit(sha, changes, len(changes))


def by_path(counts: CoChangeCounts) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    write = counts.result()
    path = {i: p for p, i in counts.ids.items()}
    changes = {path[i]: n for i, n in write.changes.items()}
    pairs = {(path[a], path[b]): n for (a, b), n in write.pairs.items()}
    return changes, pairs


def test_counts_files_and_pairs() -> None:
    counts = CoChangeCounts({})
    counts.add(commit("1", Change("A", "a.py"), Change("A", "b.py")))
    counts.add(commit("2", Change("M", "a.py"), Change("M", "b.py"), Change("A", "c.py")))
    changes, pairs = by_path(counts)
    assert changes == {"a.py": 2, "b.py": 2, "c.py": 1}
    assert pairs[("a.py", "b.py")] == 2
    assert pairs[("a.py", "c.py")] == pairs[("b.py", "c.py")] == 1


def test_a_renamed_file_keeps_its_counts() -> None:
    counts = CoChangeCounts({})
    counts.add(commit("1", Change("A", "old.py"), Change("A", "b.py")))
    counts.add(commit("2", Change("R", "new.py", "old.py")))
    counts.add(commit("3", Change("M", "new.py"), Change("M", "b.py")))
    changes, pairs = by_path(counts)
    assert changes == {"new.py": 3, "b.py": 2}  # the rename commit touched the file too
    assert pairs == {("new.py", "b.py"): 2} or pairs == {("b.py", "new.py"): 2}


def test_a_sweep_is_not_counted_but_its_renames_are_followed() -> None:
    counts = CoChangeCounts({})
    counts.add(commit("1", Change("A", "a.py")))
    sweep = [Change("M", f"f{i}.py") for i in range(MAX_COMMIT_FILES)] + [Change("R", "z.py", "a.py")]
    counts.add(commit("2", *sweep))
    changes, pairs = by_path(counts)
    assert changes == {"z.py": 1} and pairs == {}


def test_counts_start_from_the_ids_the_index_holds() -> None:
    counts = CoChangeCounts({"a.py": 7})
    counts.add(commit("1", Change("M", "a.py"), Change("A", "b.py")))
    write = counts.result()
    assert write.changes[7] == 1 and 7 not in write.new_ids
    assert write.paths == {8: "b.py"} and write.new_ids == {8}
