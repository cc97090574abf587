"""Anchors follow the code on sync, in real git repositories: code added above, a moved function, a renamed
file, deleted code (flagged), and no note rewritten when nothing moved."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor_sources import LANGS, SOURCES, above, def_line
from conftest import git
from tether.lifecycle.housekeeping import refresh_repo
from tether.lifecycle.reanchor import dead_anchors, reanchor
from tether.workspace import Workspace


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def setup(repo: Path, ws: Workspace, name: str) -> tuple[str, str]:
    path = f"src/{name}"
    (repo / path).write_text(SOURCES[name], encoding="utf-8")
    commit(repo, f"add {name}")
    refresh_repo(ws)
    memory = ws.add(
        "Never retry a charge with a new key", category="gotcha", at=[f"{path}::charge_card"]
    ).memory
    assert memory.files == (path,)
    return path, memory.id


def note_of(ws: Workspace, memory_id: str) -> Path:
    found = ws.store.note_path(memory_id)
    assert found is not None
    return Path(found)


@pytest.mark.parametrize("name", LANGS)
def test_anchors_follow_code_added_above_and_a_moved_function(repo: Path, ws: Workspace, name: str) -> None:
    path, mid = setup(repo, ws, name)
    old = ws.get(mid).anchors[0]
    shifted = above(path, SOURCES[name])
    (repo / path).write_text(shifted, encoding="utf-8")
    commit(repo, "code above")
    report = refresh_repo(ws).reanchored
    now = ws.get(mid).anchors[0]
    assert report.moved and report.moved[0][0] == mid
    assert now.lines is not None and now.lines[0] == def_line(shifted) and now.symbol == old.symbol
    assert f"lines: {now.lines[0]}-{now.lines[1]}" in note_of(ws, mid).read_text()
    # nothing changed since: no pass work, no note rewritten
    stamp = note_of(ws, mid).stat().st_mtime_ns
    assert reanchor(ws).checked == 0 and note_of(ws, mid).stat().st_mtime_ns == stamp
    # the function moved to the end of the file, uncommitted: a sync follows the work tree
    lines = shifted.splitlines(keepends=True)
    first, last = now.lines
    moved = "".join(lines[: first - 1] + lines[last:]) + "\n" + "".join(lines[first - 1 : last])
    (repo / path).write_text(moved, encoding="utf-8")
    refresh_repo(ws)
    assert ws.get(mid).anchors[0].lines == (def_line(moved), def_line(moved) + (now.lines[1] - now.lines[0]))


@pytest.mark.parametrize("name", LANGS)
def test_anchors_ride_along_with_a_renamed_file(repo: Path, ws: Workspace, name: str) -> None:
    path, mid = setup(repo, ws, name)
    new = f"lib/{name}"
    (repo / "lib").mkdir()
    git(repo, "mv", path, new)
    commit(repo, "move billing")
    report = refresh_repo(ws)
    memory = ws.get(mid)
    assert (mid, path, new) in report.renamed
    assert memory.files == (new,) and memory.anchors[0].path == new and not memory.anchors[0].lost


@pytest.mark.parametrize("name", LANGS)
def test_deleted_code_is_flagged_and_the_memory_degrades_to_its_file(
    repo: Path, ws: Workspace, name: str, tether: object
) -> None:
    path, mid = setup(repo, ws, name)
    anchor = ws.get(mid).anchors[0]
    assert anchor.lines is not None
    lines = SOURCES[name].splitlines(keepends=True)
    (repo / path).write_text(
        "".join(lines[: anchor.lines[0] - 1] + lines[anchor.lines[1] :]), encoding="utf-8"
    )
    report = refresh_repo(ws).reanchored
    assert [(m, a.symbol) for m, a in report.lost] == [(mid, "charge_card")]
    memory = ws.get(mid)
    assert memory.anchors[0].lost and memory.files == (path,)
    assert "lost: true" in note_of(ws, mid).read_text()  # the note says so
    assert [m.id for m, _ in dead_anchors(ws)] == [mid]
    problems = [p for p in ws.doctor().problems if p.kind == "dead-anchor"]
    assert problems and problems[0].where == mid and "charge_card()" in problems[0].message
    # the code comes back (a revert): found again
    (repo / path).write_text(SOURCES[name], encoding="utf-8")
    back = refresh_repo(ws).reanchored
    assert [m for m, _ in back.found] == [mid] and not ws.get(mid).anchors[0].lost


def test_a_body_edited_in_place_rewrites_no_note(repo: Path, ws: Workspace) -> None:
    path, mid = setup(repo, ws, "billing.py")
    stamp = note_of(ws, mid).stat().st_mtime_ns
    (repo / path).write_text(SOURCES["billing.py"].replace("order.total", "order.amount"), encoding="utf-8")
    report = refresh_repo(ws).reanchored
    assert report.checked == 1 and not report.changed
    assert note_of(ws, mid).stat().st_mtime_ns == stamp
