"""Many writers at once (nine agent sessions is normal) and kill -9 mid-burst: no lost or broken write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TETHER_BIN, index_ids, note_files
from tether.notes import format as notes

WRITERS = 9
PER_WRITER = 100

# Each add opens its own Workspace, as separate `tether add` processes do: the open syncs the notes the
# other writers are producing at that very moment, which is where a lost update would come from.
WRITER = """
import sys, time
from pathlib import Path
from tether.workspace import Workspace

repo, home, name, count, go = sys.argv[1:6]
while not Path(go).exists():
    time.sleep(0.005)
for i in range(int(count)):
    with Workspace.open(Path(repo), home=Path(home)) as ws:
        added = ws.add(f"writer {name} memory {i}: the upload retry limit is {i}", files=["src/app/upload.py"])
    assert added.created
    print(added.memory.id, flush=True)
"""

# The same writer where there is no `fcntl` (Windows): the writer lock is the filelock library's (imported
# first, so it keeps its own reference: on Linux its `flock`, on Windows its `LockFileEx`).
WRITER_WITHOUT_FCNTL = "import filelock, sys\nsys.modules['fcntl'] = None\n" + WRITER


@pytest.mark.parametrize(
    ("writer", "writers", "per_writer"),
    [(WRITER, WRITERS, PER_WRITER), (WRITER_WITHOUT_FCNTL, 4, 25)],
    ids=["flock", "filelock"],
)
def test_nine_writers_lose_nothing(
    repo: Path, home: Path, writer: str, writers: int, per_writer: int
) -> None:
    go = repo.parent / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", writer, str(repo), str(home), str(n), str(per_writer), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    time.sleep(0.5)  # let every interpreter start, so the writes really overlap
    go.touch()
    printed: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert err == ""
        printed += out.split()
    total = writers * per_writer
    assert len(printed) == len(set(printed)) == total
    assert len(note_files(repo)) == total
    # Read the index as the writers left it, before any later sync could repair it.
    assert index_ids(repo) == set(printed)
    listed = subprocess.run(
        [str(TETHER_BIN), "list", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "TETHER_HOME": str(home)},
        check=True,
    )
    assert {m["id"] for m in json.loads(listed.stdout)} == set(printed)
    doctor = subprocess.run(
        [str(TETHER_BIN), "doctor"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "TETHER_HOME": str(home)},
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


BURST = """
import sys
from pathlib import Path
from tether.workspace import Workspace

repo, home = sys.argv[1:3]
with Workspace.open(Path(repo), home=Path(home)) as ws:
    for i in range(100000):
        added = ws.add(f"burst memory {i} about the cache eviction order", details="x" * (i % 500))
        print(added.memory.id, flush=True)
"""


def test_kill_9_mid_burst_loses_nothing_acknowledged(repo: Path, home: Path) -> None:
    for round_ in range(3):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                BURST.replace("burst memory", f"burst {round_} memory"),
                str(repo),
                str(home),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        acknowledged: list[str] = []
        deadline = time.monotonic() + 60
        while len(acknowledged) < 40 + 17 * round_ and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acknowledged.append(line.strip())
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        acknowledged += rest.split()  # printed after the add returned, even if not yet read by us
        assert proc.returncode == -signal.SIGKILL
        assert len(acknowledged) >= 40

        after = subprocess.run(
            [str(TETHER_BIN), "list", "--json"],
            cwd=repo,
            capture_output=True,
            text=True,
            env={**os.environ, "TETHER_HOME": str(home)},
        )
        assert after.returncode == 0, after.stderr
        assert "warning" not in after.stderr, after.stderr
        listed = {m["id"] for m in json.loads(after.stdout)}
        names = {p.name[:8] for p in note_files(repo)}
        missing_notes = set(acknowledged) - names
        missing_index = set(acknowledged) - listed
        assert not missing_notes and not missing_index, (missing_notes, missing_index)
        assert index_ids(repo) >= set(acknowledged)
        # No half-written note is left behind where sync would see it.
        assert not [
            p for p in (repo / ".tether" / "memories").iterdir() if not p.name.endswith(".md")
        ] or all(
            p.name.startswith(".")
            for p in (repo / ".tether" / "memories").iterdir()
            if not p.name.endswith(".md")
        )


OPENER = """
import sys, time
from pathlib import Path
from tether.store.sqlite.schema import connect

index, go = Path(sys.argv[1]), Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
connect(index).close()
"""


def test_nine_processes_opening_a_fresh_index_at_once_all_succeed(tmp_path: Path) -> None:
    # SQLite skips the busy handler for some of the locks a switch to WAL takes; without a retry, a few of
    # nine processes creating the index together fail with "database is locked" (seen in CI).
    failures: list[str] = []
    for trial in range(6):
        index, go = tmp_path / f"index-{trial}.db", tmp_path / f"go-{trial}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(index), str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(WRITERS)
        ]
        time.sleep(0.4)
        go.touch()
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            if proc.returncode:
                failures.append(err.strip().splitlines()[-1])
    assert failures == []


# -- many writers on the same memories --------------------------------------------------------------------

# Each writer owns one field of every shared memory and sets it to increasing values; with nine of them on
# the same memories at once, a lost update shows as a field holding an older value than its writer's last
# acknowledged one (a read outside the writer lock, a stale record written back).
SAME = """
import sys, json, random, time
from pathlib import Path
from tether.workspace import Workspace

repo, home, role, count, ids, go = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(","), Path(sys.argv[6])
rng = random.Random(role)
while not go.exists():  # sleep, not spin: nine spinning processes on two cores starve the writers
    time.sleep(0.005)
cats = ["pref", "decision", "gotcha", "context"]
FILES = ["src/app/upload.py", "src/app/auth.py", "docs/deploy.md", "Makefile"]
with Workspace.open(Path(repo), home=Path(home)) as ws:
    for i in range(count):
        mid = rng.choice(ids)
        if role == "summary":
            ws.edit(mid, summary=f"{mid} summary v{i}")
        elif role == "details":
            ws.edit(mid, details=f"details v{i}")
        elif role == "category":
            ws.edit(mid, category=cats[i % 4])
        elif role == "priority":
            ws.edit(mid, priority="high" if i % 2 else "normal")
        elif role == "files":
            ws.edit(mid, files=[FILES[i % 4]])
        elif role == "pin":
            ws.pin(mid, bool(i % 2))
        elif role == "status":
            ws.archive(mid) if i % 2 else ws.restore(mid)
        elif role == "ack":
            ws.ack(mid)
        elif role == "supersede":
            new = ws.add(f"replacement {i} of a scratch memory").memory
            old = ws.add(f"scratch {i} memory, replaced").memory
            ws.supersede(old.id, new.id)
            mid = f"{old.id}>{new.id}"
        print(json.dumps([role, mid, i]), flush=True)
"""
ROLES = ["summary", "details", "category", "priority", "files", "pin", "status", "ack", "supersede"]


def _last_acked(lines: list[str]) -> dict[tuple[str, str], int]:
    last: dict[tuple[str, str], int] = {}
    for line in lines:
        role, mid, i = json.loads(line)
        last[(role, mid)] = i
    return last


@pytest.mark.parametrize("roles", [ROLES[:2], ROLES], ids=["two-writers", "nine-writers"])
def test_writers_on_the_same_memories_lose_no_acknowledged_change(
    repo: Path, home: Path, roles: list[str]
) -> None:
    from tether.workspace import Workspace

    with Workspace.open(repo, home=home) as ws:
        ids = [ws.add(f"shared memory {n} about the upload queue").memory.id for n in range(3)]
    go = repo.parent / "go-same"
    count = 30
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME, str(repo), str(home), role, str(count), ",".join(ids), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in roles
    ]
    time.sleep(0.5)
    go.touch()
    lines: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        lines += out.splitlines()
    assert len(lines) == count * len(roles)
    last = _last_acked(lines)
    cats = ["pref", "decision", "gotcha", "context"]
    with Workspace.open(repo, home=home) as ws:
        for (role, mid), i in last.items():
            if role == "supersede":
                old, new = mid.split(">")
                assert (ws.get(old).status, ws.get(new).status) == ("superseded", "active")
                continue
            m = ws.get(mid)
            expected = {
                "summary": (m.summary, f"{mid} summary v{i}"),
                "details": (m.details, f"details v{i}"),
                "category": (m.category, cats[i % 4]),
                "priority": (m.priority, "high" if i % 2 else "normal"),
                "files": (
                    m.files,
                    (["src/app/upload.py", "src/app/auth.py", "docs/deploy.md", "Makefile"][i % 4],),
                ),
                "pin": (m.pinned, bool(i % 2)),
                "status": (m.status, "archived" if i % 2 else "active"),
            }
            if role in expected:
                got, want = expected[role]
                assert got == want, (role, mid, got, want)
        acks = sum(1 for line in lines if json.loads(line)[0] == "ack")
        acted = sum(
            e.receipts.get("via") == "ack" for e in ws.store.events(limit=100_000) if e.event == "acted"
        )
        assert acted == acks
        # The notes say the same as the index: nothing written back stale by a writer.
        for mid in ids:
            note = notes.read(Path(ws.store.note_path(mid) or ""), "project")
            assert note == ws.get(mid).with_changes(updated=note.updated)
        assert ws.doctor().problems == []


RACER = """
import sys, time
from pathlib import Path
from tether.workspace import Workspace

repo, home, count, go = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():  # sleep, not spin: the reindexer should not starve the writers
    time.sleep(0.005)
for i in range(count):
    with Workspace.open(repo, home=home) as ws:
        ws.reindex()
    print(i, flush=True)
"""


def test_commands_racing_reindex_lose_nothing(repo: Path, home: Path) -> None:
    import sqlite3

    from tether.workspace import Workspace

    with Workspace.open(repo, home=home) as ws:
        baseline = {ws.add(f"baseline {n}: the upload queue drains hourly").memory.id for n in range(30)}
    go = repo.parent / "go-race"
    reindexer = subprocess.Popen(
        [sys.executable, "-c", RACER, str(repo), str(home), "40", str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(repo), str(home), str(n), "40", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    time.sleep(0.5)
    go.touch()
    # A reader watching the index while it is rebuilt: it must never see fewer memories than before (the
    # old reindex committed an empty index first, and hooks recalled from it meanwhile).
    fewest = len(baseline)
    watcher = sqlite3.connect(repo / ".tether" / "index.db", timeout=30)
    while reindexer.poll() is None:
        fewest = min(fewest, watcher.execute("SELECT count(*) FROM memories").fetchone()[0])
        time.sleep(0.002)
    watcher.close()
    printed: list[str] = []
    for proc in writers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        printed += out.split()
    assert fewest >= len(baseline), f"a reader saw {fewest} memories during a reindex"
    _, err = reindexer.communicate(timeout=300)
    assert reindexer.returncode == 0, err
    assert index_ids(repo) >= set(printed) | baseline, "a reindex dropped a memory added meanwhile"
    listed = subprocess.run(
        [str(TETHER_BIN), "list", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "TETHER_HOME": str(home)},
        check=True,
    )
    assert {m["id"] for m in json.loads(listed.stdout)} >= set(printed)
