"""Soft-archive, cleanup, stats and telemetry, driven by a clock the tests run forward (DESIGN §6).

Real data in a real index: a git repository made in tmp_path, memories written as notes, surfacings made
by the real recall, sessions made by the hooks' own session-state code.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import git
from tether import lifecycle
from tether.adapters import hooks
from tether.adapters.hooks.session import session_state
from tether.lifecycle.housekeeping import maintain, refresh_repo
from tether.model.memory import Memory
from tether.notes.format import read as read_note
from tether.store.base import Event, Query
from tether.workspace import Workspace


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, days: float = 0, hours: float = 0) -> None:
        self.now += timedelta(days=days, hours=hours)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))


def agent_pulls(ws: Workspace, times: int = 100) -> None:
    """An agent that has pulled (`memory_get`) a memory `times` times here: the project's pull rate
    (`Memories.pull_rate`) that scales what counts as ignored. The memory it pulled is gone again (its
    counters stay)."""
    pulled = ws.add("The memory the agent pulled").memory
    for _ in range(times):
        ws.ack(pulled.id, session="s-pull")
    ws.delete(pulled.id)


@pytest.fixture
def lws(repo: Path, home: Path, clock: Clock) -> Iterator[Workspace]:
    """A project whose agent follows up what it is shown (the archive pass and the penalty at their floors)."""
    ws = Workspace.open(repo, home=home, clock=clock)
    agent_pulls(ws)
    try:
        yield ws
    finally:
        ws.close()


@pytest.fixture
def quiet(repo: Path, home: Path, clock: Clock) -> Iterator[Workspace]:
    """A project whose agent never pulls a memory: it reads what the hooks inject, nothing more."""
    ws = Workspace.open(repo, home=home, clock=clock)
    try:
        yield ws
    finally:
        ws.close()


UPLOAD = "src/app/upload.py"
_sessions = iter(range(10_000))


def surface(ws: Workspace, memory: Memory, files: tuple[str, ...] = (UPLOAD,)) -> None:
    """Show `memory` through the real recall in a fresh session; fail if recall did not pick it."""
    result = ws.recaller().recall("", files, session=f"s{next(_sessions)}", turn=1)
    assert memory.id in [r.memory.id for r in result.memories]


def surface_over(ws: Workspace, clock: Clock, memory: Memory, times: int, days: float) -> None:
    """`times` surfacings evenly spread over `days` (the first now, the last `days` later)."""
    for index in range(times):
        if index:
            clock.advance(days=days / (times - 1))
        surface(ws, memory)


# -- soft-archive -------------------------------------------------------------------------------------


def test_ignored_six_times_over_45_days_is_archived_and_restorable(lws: Workspace, clock: Clock) -> None:
    gotcha = lws.add("Uploads over 5 MB need the chunked endpoint", category="gotcha", files=[UPLOAD]).memory
    surface_over(lws, clock, gotcha, times=6, days=46)

    archived = lifecycle.archive_pass(lws)

    assert [m.id for m in archived] == [gotcha.id]
    stored = lws.get(gotcha.id)
    assert stored.status == "archived"
    note = Path(lws.store.note_path(gotcha.id) or "")
    assert note.is_file() and read_note(note, "project").status == "archived"
    assert gotcha.id not in [r.memory.id for r in lws.recaller().recall("", (UPLOAD,), record=False).memories]
    (event,) = [e for e in lws.store.events(gotcha.id) if e.event == "archived"]
    assert event.at == clock.now and "6 times over 46 days" in event.receipts["reason"]

    lws.restore(gotcha.id)
    clock.advance(days=1)
    assert lifecycle.archive_pass(lws) == []  # a restore vouches for it: the old showings don't count
    assert lws.get(gotcha.id).status == "active"


def test_what_counts_as_ignored_follows_the_agents_pull_rate(quiet: Workspace, clock: Clock) -> None:
    """Shown and never pulled is what every memory gets from an agent that reads only what the hooks inject:
    nothing is penalized or archived for it. An agent that pulls rarely leaves a memory unpulled by chance
    for as many showings as it takes, at its rate, to expect one pull; one that pulls often, for the floor."""
    memory = quiet.add(
        "Uploads over 5 MB need the chunked endpoint", category="gotcha", files=[UPLOAD]
    ).memory
    beside = quiet.add("Upload retries back off exponentially", files=[UPLOAD]).memory  # 24 showings in all
    surface_over(quiet, clock, memory, times=12, days=90)

    def feedback() -> float | None:
        return quiet.recaller().explain(memory.id, "", [UPLOAD])[0].magnitude.feedback

    assert quiet.pull_rate() == 0.0
    assert feedback() is None and lifecycle.archive_pass(quiet) == []
    assert not [
        c for c in lifecycle.cleanup_candidates(quiet) if c.unanswered
    ]  # nor listed for cleanup as ignored

    agent_pulls(quiet, times=1)  # 1 pull in 24 showings: a memory shown 12 times unpulled is chance
    assert quiet.pull_rate() == pytest.approx(1 / 24)
    assert feedback() is None and lifecycle.archive_pass(quiet) == []

    agent_pulls(quiet, times=4)  # 5 pulls in 24 showings: the floors (4 for the penalty, 6 to archive)
    assert feedback() == pytest.approx(-0.12)
    assert {m.id for m in lifecycle.archive_pass(quiet)} == {memory.id, beside.id}


@pytest.mark.parametrize(
    ("times", "days", "archived"),
    [
        (6, 46, True),
        (6, 45, True),
        (6, 44, False),  # not spread over long enough
        (5, 60, False),  # not shown often enough
        (12, 90, True),
    ],
)
def test_archive_thresholds(lws: Workspace, clock: Clock, times: int, days: float, archived: bool) -> None:
    memory = lws.add("Upload retries back off exponentially", files=[UPLOAD]).memory
    surface_over(lws, clock, memory, times=times, days=days)
    assert [m.id for m in lifecycle.archive_pass(lws)] == ([memory.id] if archived else [])


def test_follow_up_resets_the_streak(lws: Workspace, clock: Clock) -> None:
    memory = lws.add("Upload handler must stay idempotent", files=[UPLOAD]).memory
    surface_over(lws, clock, memory, times=6, days=30)
    clock.advance(days=1)
    lws.ack(memory.id, session="s-ack")  # the agent used it
    clock.advance(days=1)
    surface_over(lws, clock, memory, times=5, days=40)
    assert lifecycle.archive_pass(lws) == []  # 11 showings over 72 days, but only 5 since the ack

    clock.advance(days=10)
    surface(lws, memory)  # the sixth since the ack, 50 days after the first of them
    assert [m.id for m in lifecycle.archive_pass(lws)] == [memory.id]


def test_pinned_and_user_memories_are_exempt(lws: Workspace, clock: Clock) -> None:
    pinned = lws.add("Never bypass the upload virus scan", files=[UPLOAD], pinned=True).memory
    plain = lws.add("Upload size limit lives in settings", files=[UPLOAD]).memory
    for _ in range(8):
        lws.store.record(
            [Event(m.id, "surfaced", clock(), f"x{next(_sessions)}", 1) for m in (pinned, plain)]
        )
        clock.advance(days=10)
    assert [m.id for m in lifecycle.archive_pass(lws)] == [plain.id]
    assert lws.get(pinned.id).status == "active"


def test_session_start_housekeeping_archives_and_says_so(lws: Workspace, clock: Clock) -> None:
    memory = lws.add("Upload quotas are per tenant", files=[UPLOAD]).memory
    surface_over(lws, clock, memory, times=7, days=50)
    report = maintain(lws)
    assert [m.id for m in report.archived] == [memory.id]
    assert any("archived 1 memory that was" in hint for hint in report.hints)
    assert maintain(lws).archived == []  # already archived: nothing more to do


def test_a_session_start_runs_the_archive_pass_at_most_every_six_hours(lws: Workspace, clock: Clock) -> None:
    memory = lws.add("Upload quotas are per tenant", files=[UPLOAD]).memory
    assert maintain(lws, in_hook=True).archived == []  # the pass ran: nothing to archive yet
    # Shown 7 times over the last 50 days and never used: archivable from now on.
    lws.store.record(
        Event(memory.id, "surfaced", clock.now - timedelta(days=50 - 8 * n), "s", n) for n in range(7)
    )
    clock.advance(hours=1)
    assert maintain(lws, in_hook=True).archived == []  # an hour after the last pass: not run
    assert lws.get(memory.id).status == "active"
    clock.advance(hours=6)
    assert [m.id for m in maintain(lws, in_hook=True).archived] == [memory.id]  # due again


def test_tether_maintain_always_runs_the_archive_pass(lws: Workspace, clock: Clock) -> None:
    memory = lws.add("Upload quotas are per tenant", files=[UPLOAD]).memory
    maintain(lws, in_hook=True)
    lws.store.record(
        Event(memory.id, "surfaced", clock.now - timedelta(days=50 - 8 * n), "s", n) for n in range(7)
    )
    assert [m.id for m in maintain(lws).archived] == [memory.id]  # right after the hook's pass


# -- telemetry under concurrent sessions ---------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tether.store.base import Event
    from tether.workspace import Workspace
    repo, home, mid, worker = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    ws = Workspace.open(repo, home=home, sync_notes=False)
    for turn in range(40):
        ws.store.record([Event(mid, "surfaced", ws.clock(), "w" + worker, turn)])
        if turn % 4 == 0:
            ws.ack(mid, session="w" + worker, turn=turn)
    ws.close()
    """
)


def test_counts_and_event_log_stay_exact_with_concurrent_sessions(
    ws: Workspace, repo: Path, home: Path
) -> None:
    memory = ws.add("Upload workers share one queue", files=[UPLOAD]).memory
    workers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(repo), str(home), memory.id, str(n)])
        for n in range(6)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * 6

    tel = ws.store.telemetry([memory.id])[memory.id]
    events = list(ws.store.events(memory.id, limit=10_000))
    assert tel.surfaced == 6 * 40 == sum(e.event == "surfaced" for e in events)
    assert tel.acted == 6 * 10 == sum(e.event == "acted" for e in events)
    assert {e.session for e in events} == {f"w{n}" for n in range(6)}


# -- cleanup ------------------------------------------------------------------------------------------


def _session(ws: Workspace, count: int) -> None:
    for _ in range(count):
        with session_state(ws.store, f"session-{next(_sessions)}", ws.clock()) as state:
            state.turn = 1


def _stale_project(repo: Path, ws: Workspace, clock: Clock) -> dict[str, list[Memory]]:
    """32 active memories: 20 fresh and used, 6 long unused, 4 naming deleted files, 2 pinned and old."""
    for n in range(4):
        (repo / "src" / "legacy").mkdir(exist_ok=True)
        (repo / "src" / "legacy" / f"mod{n}.py").write_text(f"X = {n}\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "legacy modules")
    refresh_repo(ws)
    groups: dict[str, list[Memory]] = {"unused": [], "dead": [], "pinned": [], "fresh": []}
    for n in range(6):
        groups["unused"].append(ws.add(f"Old convention number {n} for reports").memory)
    for n in range(4):
        groups["dead"].append(ws.add(f"Legacy module {n} quirk", files=[f"src/legacy/mod{n}.py"]).memory)
    for n in range(2):
        groups["pinned"].append(ws.add(f"Pinned rule {n} that nobody acks", pinned=True).memory)
    clock.advance(days=120)
    for n in range(20):
        fresh = ws.add(f"Recent decision {n} about the API").memory
        ws.ack(fresh.id)
        groups["fresh"].append(fresh)
    git(repo, "rm", "-q", "-r", "src/legacy")
    git(repo, "commit", "-q", "-m", "drop legacy")
    refresh_repo(ws)
    return groups


def test_cleanup_candidates_ranked_by_age_and_disuse(repo: Path, lws: Workspace, clock: Clock) -> None:
    groups = _stale_project(repo, lws, clock)
    candidates = lifecycle.cleanup_candidates(lws)
    ids = [c.memory.id for c in candidates]

    assert set(ids) == {m.id for m in groups["unused"] + groups["dead"]}
    assert not {m.id for m in groups["pinned"]} & set(ids)
    # Dead references are as old and as unused, and name nothing: they lead.
    assert set(ids[:4]) == {m.id for m in groups["dead"]}
    dead = candidates[0]
    assert dead.dead and dead.idle_days == 120
    assert any("every file it names is gone" in r for r in dead.reasons)
    assert any(r == "not used for 120 days" for r in candidates[-1].reasons)


def test_cleanup_counts_ignored_memories(lws: Workspace, clock: Clock) -> None:
    memory = lws.add("Upload progress bars update every 100 ms", files=[UPLOAD]).memory
    surface_over(lws, clock, memory, times=4, days=3)
    (candidate,) = lifecycle.cleanup_candidates(lws)
    assert candidate.memory.id == memory.id and candidate.unanswered == 4
    assert candidate.reasons == ["shown 4 times since last used"]
    lws.ack(memory.id)
    assert lifecycle.cleanup_candidates(lws) == []


def test_cleanup_hint_once_per_pass(repo: Path, lws: Workspace, clock: Clock) -> None:
    groups = _stale_project(repo, lws, clock)
    _session(lws, 19)
    assert lifecycle.cleanup_hint(lws) is None  # 19 sessions: not yet
    _session(lws, 1)
    hint = lifecycle.cleanup_hint(lws)
    assert hint is not None
    assert "10 of 32 memories look stale after 20 sessions" in hint
    assert groups["dead"][0].id in hint or groups["dead"][1].id in hint
    assert lifecycle.cleanup_hint(lws) is None  # said once
    _session(lws, 5)
    assert lifecycle.cleanup_hint(lws) is None

    clock.advance(days=1)
    archived = lifecycle.cleanup(lws, [m.id for m in groups["dead"]])
    assert {m.status for m in archived} == {"archived"}
    clock.advance(hours=1)
    _session(lws, 25)
    # A new pass with 25 sessions since, but 28 active memories and 6 stale ones: no hint.
    assert lifecycle.cleanup_hint(lws) is None
    for n in range(4):
        lws.add(f"Another forgotten convention {n}")
    clock.advance(days=100)
    for memory in groups["fresh"]:
        lws.ack(memory.id)
    hint = lifecycle.cleanup_hint(lws)
    assert hint is not None and "10 of 32 memories look stale after 25 sessions" in hint
    assert lifecycle.cleanup_hint(lws) is None


def test_a_session_start_counts_cleanup_candidates_at_most_every_six_hours(
    repo: Path, lws: Workspace, clock: Clock
) -> None:
    # Counting them reads every memory (450 ms at 10k): a session start with too few to say so must not
    # pay for it each time.
    groups = _stale_project(repo, lws, clock)
    _session(lws, 20)
    lws.ack(groups["unused"][0].id)
    assert len(lifecycle.cleanup_candidates(lws)) == 9
    assert lifecycle.cleanup_hint(lws, in_hook=True) is None  # counted: too few
    newly = groups["fresh"][0]
    clock.advance(hours=0.1)  # shown after it was last used
    lws.store.record([Event(newly.id, "surfaced", clock(), f"s{n}", 1) for n in range(6)])  # 10 stale
    assert len(lifecycle.cleanup_candidates(lws)) == 10
    clock.advance(hours=1)
    assert lifecycle.cleanup_hint(lws, in_hook=True) is None  # counted an hour ago: not again yet
    clock.advance(hours=6)
    hint = lifecycle.cleanup_hint(lws, in_hook=True)
    assert hint is not None and "10 of 32 memories look stale" in hint


def run_in_slices(ws: Workspace, chunk: int = 200) -> int:
    """The due passes as the resident process runs them between requests; the slices it took."""
    from tether.lifecycle.passes import DuePasses

    passes = DuePasses(ws, chunk=chunk)
    while not passes.step(0.0):  # the smallest slice there is: one part at a time
        assert passes.slices < 10_000
    return passes.slices


def test_in_the_resident_a_session_start_leaves_the_due_passes_to_its_quiet_moments(
    repo: Path, lws: Workspace, clock: Clock
) -> None:
    groups = _stale_project(repo, lws, clock)
    _session(lws, 20)
    ignored = lws.add("Upload quotas are per tenant", files=[UPLOAD]).memory
    surface_over(lws, clock, ignored, times=7, days=50)
    lws.passes_between_requests = True  # what the resident process sets on its workspace
    start = maintain(lws, in_hook=True)
    assert start.archived == [] and start.hints == []  # both passes are due, and neither ran here
    assert lws.get(ignored.id).status == "active"

    assert run_in_slices(lws) > 3  # in parts: a request between two parts waits for one part only
    assert lws.get(ignored.id).status == "archived"
    assert run_in_slices(lws) == 1  # nothing is due any more: one look
    hints = maintain(lws, in_hook=True).hints  # the next session start says what they found, once
    assert any("archived 1 memory that was" in h for h in hints)
    assert any("10 of 32 memories look stale after 20 sessions" in h for h in hints)
    assert groups["dead"][0].id in " ".join(hints) or groups["dead"][1].id in " ".join(hints)
    assert maintain(lws, in_hook=True).hints == []


def test_the_passes_in_slices_find_what_one_pass_finds(repo: Path, lws: Workspace, clock: Clock) -> None:
    from tether.lifecycle import passes

    _stale_project(repo, lws, clock)
    _session(lws, 20)
    for n in range(3):
        surface_over(lws, clock, lws.add(f"Ignored upload rule {n}", files=[UPLOAD]).memory, times=7, days=50)
    expected_archived = {m.id for m, _ in lifecycle.archive_candidates(lws)}
    expected_stale = [c.memory.id for c in lifecycle.cleanup_candidates(lws)]
    run_in_slices(lws, chunk=4)  # parts of 4 memories over ~40: a pass in many parts
    archived = {m.id for m in lws.find(lifecycle_query("archived"))}
    assert archived == expected_archived and len(archived) == 3
    (hint,) = [h for h in passes.take_hints(lws) if "look stale" in h]
    worst = [c.memory.id for c in lifecycle.cleanup_candidates(lws)][:3]
    assert all(mid in hint for mid in worst) and set(worst) <= set(expected_stale)


def lifecycle_query(status: str) -> Query:
    return Query(status=(status,), scope="project")


def test_cleanup_hint_needs_thirty_active(lws: Workspace, clock: Clock) -> None:
    for n in range(12):
        lws.add(f"Stale fact {n}")
    clock.advance(days=200)
    _session(lws, 40)
    assert len(lifecycle.cleanup_candidates(lws)) == 12
    assert lifecycle.cleanup_hint(lws) is None  # 12 active memories: pruning does not matter yet


# -- stats ---------------------------------------------------------------------------------------------


def test_stats_per_category(lws: Workspace, clock: Clock) -> None:
    used = lws.add("Upload endpoint needs auth header", category="gotcha", files=[UPLOAD]).memory
    ignored = lws.add("Upload module owner is the infra team", category="context", files=[UPLOAD]).memory
    old = lws.add("Use requests for HTTP", category="decision").memory
    lws.add("Use httpx for HTTP", category="decision", supersedes=old.id)
    gone = lws.add("Tabs in the Makefile", category="pref").memory
    lws.archive(gone.id)
    for _ in range(3):
        surface(lws, used)
        clock.advance(days=1)
    lws.ack(used.id)
    lws.ack(used.id)

    data = lifecycle.stats(lws)
    cats = data["categories"]
    assert cats["gotcha"] == {
        "active": 1,
        "archived": 0,
        "superseded": 0,
        "surfaced": 3,
        "acted": 2,
        "follow_through": 1.0,
    }
    assert cats["context"]["surfaced"] == 3 and cats["context"]["acted"] == 0
    assert cats["context"]["follow_through"] == 0.0
    # Superseding counts as acting on the old memory (DESIGN §1), which was never shown.
    assert cats["decision"] == {
        "active": 1,
        "archived": 0,
        "superseded": 1,
        "surfaced": 0,
        "acted": 1,
        "follow_through": None,
    }
    assert cats["pref"]["archived"] == 1
    assert data["total"]["active"] == 3 and data["total"]["follow_through"] == 0.5
    assert [m["id"] for m in data["most_ignored"]] == [ignored.id]
    assert [m["id"] for m in data["most_used"]][:1] == [used.id]


def test_session_start_hook_gives_the_cleanup_hint_once(repo: Path, home: Path) -> None:
    then = datetime.now(UTC).replace(microsecond=0) - timedelta(days=200)
    with Workspace.open(repo, home=home, clock=lambda: then) as old:
        for n in range(10):
            old.add(f"Convention {n} nobody uses any more")
    with Workspace.open(repo, home=home) as ws:
        for n in range(20):
            ws.ack(ws.add(f"Current decision {n}").memory.id)
        _session(ws, 20)

    def start(session: str) -> str:
        payload = {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        out = io.StringIO()
        hooks.main(["claude", "SessionStart"], stdin=io.StringIO(json.dumps(payload)), stdout=out)
        return out.getvalue()

    first = start("hint-1")
    assert "10 of 30 memories look stale after 20 sessions" in first
    assert "tether cleanup" in first
    assert "look stale" not in start("hint-2")
