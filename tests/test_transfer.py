"""`tether store copy` (`tether.store.postgres.transfer`): SQLite ⇄ Postgres, and back, exactly.

Export a checkout, copy it to Postgres, copy that into an empty checkout, export again: the two exports
are the same bytes, and the telemetry and event log came along.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from tether.config.database import redact_url
from tether.project import init_project
from tether.workspace import Workspace


def export_text(ws: Workspace) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in ws.export())


def fill(ws: Workspace) -> None:
    """Memories of every kind, and telemetry from recall and acknowledgements."""
    first = ws.add(
        "Uploads retry three times", details="See [[deploy]] and the backoff", files=["src/app/upload.py"]
    )
    ws.add("Never log tokens", category="gotcha", priority="high", pinned=True, files=["src/app/auth.py"])
    ws.add("Staging listens on 6443 — naïve café ports", category="decision", files=["docs/"])
    ws.add("I prefer short answers", category="pref", scope="user")
    archived = ws.add("An old idea nobody used").memory
    ws.archive(archived.id, reason="stale")
    ws.add("Uploads retry five times now", supersedes=first.memory.id)
    ws.recall("how do uploads retry?", files=["src/app/upload.py"], session="s1", turn=1)
    ws.ack(first.memory.id, session="s1", turn=1)


def test_copy_to_postgres_and_back_is_exact(
    repo: Path,
    home: Path,
    tmp_path: Path,
    pg_url: str,
    tether: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tether")
    empty = tmp_path / "empty"
    subprocess.run(["git", "clone", "-q", str(repo), str(empty)], check=True)
    init_project(empty, home)
    with Workspace.open(repo, home=home) as ws:
        fill(ws)
        before = export_text(ws)
        telemetry = ws.store.telemetry()
        events = list(ws.store.events(None, limit=10_000))
    copied = tether("store", "copy", "--to", pg_url)
    assert copied.code == 0, copied.err
    assert f"copied 6 memories and {len(events)} events" in copied.out
    again = tether("store", "copy", "--to", pg_url)  # a second copy doubles nothing
    assert again.code == 0 and "events were not copied again" in again.out

    monkeypatch.chdir(empty)
    back = tether("store", "copy", "--from", pg_url)
    assert back.code == 0, back.err
    with Workspace.open(empty, home=home) as restored:
        assert export_text(restored) == before
        assert restored.store.telemetry() == telemetry
        assert [
            (e.memory_id, e.event, e.session, e.turn, e.receipts) for e in restored.store.events(None, 10_000)
        ] == [(e.memory_id, e.event, e.session, e.turn, e.receipts) for e in events]
        assert (
            len(list((empty / ".tether" / "memories").glob("*.md"))) == 5
        )  # notes written, user one in home
        assert restored.search("uploads")  # indexed, with vectors embedded


def test_copy_needs_exactly_one_direction(repo: Path, tether: Callable[..., Any]) -> None:
    assert tether("store", "copy").code == 1
    assert tether("store", "copy", "--to", "postgresql:///a", "--from", "postgresql:///b").code == 1
    refused = tether("store", "copy", "--to", "mysql://nope")
    assert refused.code == 1 and "must be a Postgres URL" in refused.err
    refused = tether("store", "copy", "--to", "mysql://nope", "--json")
    assert refused.code == 1 and "must be a Postgres URL" in refused.err
    assert (
        json.loads(refused.out)["ok"] is False
        and "must be a Postgres URL" in json.loads(refused.out)["error"]
    )


def test_copy_prints_json(repo: Path, home: Path, pg_url: str, tether: Callable[..., Any]) -> None:
    with Workspace.open(repo, home=home) as ws:
        fill(ws)
        events = len(list(ws.store.events(None, limit=10_000)))
    copied = tether("store", "copy", "--to", pg_url, "--json")
    assert copied.code == 0, copied.err
    report = json.loads(copied.out)
    assert report == {
        "ok": True,
        "copied": "to",
        "from": str(repo / ".tether" / "index.db"),
        "into": redact_url(pg_url),  # no password
        "memories": 6,
        "events": events,
        "kept_newer": 0,
        "events_skipped": False,
    }
    again = json.loads(tether("store", "copy", "--to", pg_url, "--json").out)
    assert again["events_skipped"] is True
