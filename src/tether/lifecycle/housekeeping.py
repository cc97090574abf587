"""What runs at session start and end (and from `tether maintain`): keep memory in step with the repo.

Session start: refresh the repo map, let memories follow renamed files (the notes are rewritten and the
move is logged) and their anchors follow the code (`tether.lifecycle.reanchor`), then the lifecycle passes (archive ignored memories, re-sync changed rule files, the
cleanup hint). Session end: expire the session's memory and start distill when it is enabled.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tether.lifecycle.reanchor import Reanchored, reanchor
from tether.memories import Memories
from tether.model.memory import Memory
from tether.store.base import Event, Query

if TYPE_CHECKING:
    from tether.repo.refresh import Progress


@dataclass
class Housekeeping:
    renamed: list[tuple[str, str, str]] = field(default_factory=list)  # (memory id, old path, new path)
    reanchored: Reanchored = field(default_factory=Reanchored)
    archived: list[Memory] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # per pass, for the benchmark's breakdown


def follow_renames(ws: Memories, renames: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """Rewrite the notes of memories naming a renamed file, or a directory whose files all moved to one new
    directory (`src/old/` → `src/new/`). Paths are repo-relative whatever the process's working directory."""
    if not renames or ws.root is None:
        return []
    repo = ws.repo_map()
    moved: list[tuple[str, str, str]] = []
    mapping = dict(renames)
    for memory in ws.find(Query(status=None, scope="project")):
        files = list(memory.files)
        changed = False
        for index, path in enumerate(files):
            new = mapping.get(path) if not path.endswith("/") else moved_directory(path, renames)
            if new is not None and new != path and not (path.endswith("/") and repo and repo.exists(path)):
                files[index] = new
                moved.append((memory.id, path, new))
                changed = True
        if changed:
            # Anchors ride along with their files.
            anchors = tuple(a.moved(mapping.get(a.path, a.path)) for a in memory.anchors)
            ws.edit(
                memory.id,
                files=ws.absolute(list(dict.fromkeys(files))),
                anchors=anchors,
                record_acted=False,
            )
            ws.store.record(
                [
                    Event(
                        memory.id,
                        "renamed",
                        ws.clock(),
                        receipts={"moves": [[old, new] for mid, old, new in moved if mid == memory.id]},
                    )
                ]
            )
    return moved


def moved_directory(directory: str, renames: list[tuple[str, str]]) -> str | None:
    """Where `directory` (ending in `/`) went, when every renamed file under it kept its place under one new
    directory; None when nothing under it moved, or its files went to different places.

    >>> moved_directory("src/old/", [("src/old/a.py", "lib/new/a.py"), ("src/old/b/c.py", "lib/new/b/c.py")])
    'lib/new/'
    """
    targets = set()
    for old, new in renames:
        if old.startswith(directory):
            rest = old[len(directory) :]
            if not new.endswith("/" + rest) and new != rest:
                return None
            targets.add(new[: len(new) - len(rest)])
    return targets.pop() if len(targets) == 1 else None


def refresh_repo(
    ws: Memories, *, in_hook: bool = False, locked: bool = False, progress: Progress | None = None
) -> Housekeeping:
    """Repo map refresh and rename following, without the lifecycle passes (every syncing command).

    Under the checkout's build lock (`tether.lifecycle.mapbuild`; `locked`: the caller holds it), so a
    command waits for a background build instead of doing its work twice. `in_hook`: never wait, and
    leave a first build or a long backlog of commits to a background build (started here)."""
    report = Housekeeping()
    if ws.root is None:
        return report
    repo = ws.repo_map()
    if repo is None:
        return report
    from tether.lifecycle.mapbuild import build_lock, needs_background, start_build

    if in_hook and repo.fresh(REPO_FRESH_SECONDS):
        return report  # refreshed moments ago at this HEAD: nothing to do
    if in_hook and needs_background(ws):
        start_build(ws)
        return report
    if locked:
        refreshed = repo.refresh(progress)
    else:
        with build_lock(ws, wait=not in_hook) as held:
            if not held:
                return report  # a build is running: it follows the renames
            refreshed = repo.refresh(progress)
    report.renamed = follow_renames(ws, refreshed.renames)
    if report.renamed:
        ws.log(f"memories followed renamed files: {report.renamed}")
    report.reanchored = reanchor(ws)
    return report


# A hook skips the repo refresh when one finished this recently at the same HEAD (the resident process
# refreshes every 15 s between requests): a session start then pays two git calls, not a listing.
REPO_FRESH_SECONDS = 30.0


def maintain(ws: Memories, *, in_hook: bool = False, later: list[str] | None = None) -> Housekeeping:
    """Everything session start does, as a report (also `tether maintain`); `in_hook`: see `refresh_repo`.

    A session start runs the periodic passes (archive, the cleanup count) only when due, and not at all in
    the resident process, whose quiet moments run them (`tether.lifecycle.passes`); it says what they
    found there since. In its own process, a session start leaves the repo map's refresh and the due
    passes of a large project to a background process (`tether.lifecycle.background`), naming them in
    `later` (the caller starts it). Each pass is independent: one that fails is logged and the others still
    run, so a problem in, say, a rule file never costs the agent its pinned memories."""
    from tether.lifecycle.background import HOOK_MAX_FILES, HOOK_MAX_MEMORIES, large
    from tether.lifecycle.cleanup import hint_check
    from tether.lifecycle.passes import META_ARCHIVE_PASS, archive_due, take_hints

    report = Housekeeping()
    elsewhere = in_hook and ws.passes_between_requests
    cold = in_hook and not elsewhere  # a session start in its own process
    later = later if later is not None else []

    def repo() -> None:
        if cold:
            repo = ws.repo_map()
            size = repo.size() if repo is not None else None
            if repo is not None and size is not None and size > HOOK_MAX_FILES:
                if not repo.fresh(REPO_FRESH_SECONDS):
                    later.append("repo map")
                return
        refreshed = refresh_repo(ws, in_hook=in_hook)
        report.renamed, report.reanchored = refreshed.renamed, refreshed.reanchored

    def passes() -> None:
        from tether.lifecycle.archive import archive_pass
        from tether.lifecycle.cleanup import cleanup_hint

        if in_hook:
            report.hints += take_hints(ws)  # what the passes found between requests, or in the background
        if elsewhere:
            return  # the resident process runs them between requests
        archiving = not in_hook or archive_due(ws)  # a session start: at most every ARCHIVE_EVERY
        if cold and (archiving or hint_check(ws, in_hook=True)) and large(ws, HOOK_MAX_MEMORIES):
            later.append("lifecycle passes")
            return
        if archiving:
            now = ws.clock()
            report.archived = archive_pass(ws)
            if in_hook:
                ws.store.set_meta(META_ARCHIVE_PASS, now.isoformat())
        hint = cleanup_hint(ws, in_hook=in_hook)
        if hint:
            report.hints.append(hint)

    def rules() -> None:
        from tether.intake.rulestate import unchanged

        if ws.root is None or unchanged(ws):
            return  # checked without loading the markdown parser and the sync
        from tether.intake.rules import resync_if_changed

        resync_if_changed(ws)

    for name, step in (("repo map", repo), ("rules", rules), ("passes", passes)):
        started = time.perf_counter()
        try:
            step()
        except Exception:
            ws.log(f"housekeeping: the {name} pass failed", exc=True)
        report.seconds[name] = time.perf_counter() - started
    report.hints[:0] = refresh_hints(report)
    if report.archived:
        from tether.lifecycle.archive import archived_hint

        report.hints.insert(0, archived_hint(report.archived))
    return report


def refresh_hints(report: Housekeeping) -> list[str]:
    """What a session start says about memories that followed renamed files and anchors that lost their code."""
    hints = []
    if report.reanchored.lost:
        lost = ", ".join(f"{a.label()} in {a.path}" for _, a in report.reanchored.lost[:5])
        hints.append(
            f"tether: {len(report.reanchored.lost)} memory anchor(s) lost their code ({lost}); those memories "
            "are about their files now (`tether list --dead-anchors`)."
        )
    if report.renamed:
        moves = ", ".join(f"{old} → {new}" for _, old, new in report.renamed[:5])
        hints.append(f"tether: {len(report.renamed)} memory file reference(s) followed renames ({moves}).")
    return hints


def session_start_housekeeping(ws: Memories, later: list[str] | None = None) -> list[str]:
    """`maintain` for a session start; what it and the caller (`later`: the note scan) leave to the
    background goes to one detached process."""
    from tether.lifecycle.background import start

    later = list(later or [])
    hints = maintain(ws, in_hook=True, later=later).hints
    if later:
        start(ws, later)
    return hints


def run_background(ws: Memories, scan: Callable[[], object], *, wait: bool = False) -> bool:
    """What a session start left to the background (`tether maintain --background`): the scan of every
    note (`scan`: the workspace's full sync), the repo map's refresh with renames and anchors followed, the
    due passes to their end, what they found kept for the next session start. False when another such
    process holds the lock (and `wait` is off)."""
    from tether.lifecycle.background import background_lock
    from tether.lifecycle.passes import DuePasses, add_hint

    with background_lock(ws, wait=wait) as held:
        if not held:
            return False
        started = time.perf_counter()
        scan()
        try:
            for hint in refresh_hints(refresh_repo(ws)):
                add_hint(ws, hint)
        except Exception:
            ws.log("housekeeping: the repo map pass failed", exc=True)
        passes = DuePasses(ws)
        while not passes.step(1.0):
            pass
        ws.log(f"{BACKGROUND_DONE} in {time.perf_counter() - started:.2f} s")
        return True


# The line the background process logs when it is through (what a test or a person waits for).
BACKGROUND_DONE = "housekeeping: the background pass is done"


def end_session(ws: Memories, session: str, transcript: str) -> None:
    """Drop the session's own memory; start the detached distill worker when enabled."""
    for memory in ws.find(Query(status=None, scope="session", session=session)):
        ws.store.remove(memory.id)
    if not ws.config.flag("distill.enabled") or not transcript or ws.root is None:
        return
    from tether.detach import spawn_detached

    argv = [sys.executable, "-m", "tether", "distill", "--transcript", transcript, "--session", session]
    spawn_detached(argv, ws.paths.logs / "distill.log")
