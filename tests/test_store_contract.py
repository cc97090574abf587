"""The store protocols' contract (`tether.store.base`), run against every implementation.

The in-memory reference store, the SQLite index and a team store (Postgres for the shared protocols, a
SQLite index for the checkout's own) must answer alike: a backend that passes these plugs into recall,
lifecycle and the repo map without them changing. Backend-specific behaviour (SQLite's pragmas,
migrations, the vector cache file; Postgres' tenancy, conflicts and tombstones) is tested in the
backend's own file.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tether.embed import HashedEmbedder
from tether.model.anchor import Anchor
from tether.model.memory import Memory
from tether.repo.map import RepoMap
from tether.repo.window import window_key
from tether.store.base import Event, NoteRef, Query, RecentCommit, RecentLines, Store
from tether.store.memory import InMemoryStore
from tether.store.sqlite.store import SQLiteStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
EMBEDDER = HashedEmbedder()


def team_store(server_url: str, local: Store) -> Store:
    """A team store on the session's Postgres, in a tenant of its own (a fresh project and user)."""
    from tether.store.postgres.store import PostgresStore
    from tether.store.postgres.team import TeamStore
    from tether.store.postgres.tenancy import Tenant

    tenant = Tenant(f"git:{secrets.token_hex(20)}", secrets.token_hex(16))
    return TeamStore(PostgresStore(server_url, tenant), local)


@pytest.fixture(params=["memory", "sqlite", "sqlite-warm", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store
    if request.param == "memory":
        s = InMemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "index.db")
    elif request.param == "sqlite-warm":  # a long-lived process's: search from kept postings and columns
        s = SQLiteStore(tmp_path / "index.db", warm=True)
    else:
        s = team_store(request.getfixturevalue("postgres_server"), SQLiteStore(tmp_path / "index.db"))
    try:
        yield s
    finally:
        s.close()


def mem(mid: str, summary: str, **kw: object) -> Memory:
    return Memory(id=mid, summary=summary, created=T0, updated=T0).with_changes(**kw)


def put(store: Store, memory: Memory, note: NoteRef | None = None) -> None:
    store.put(memory, note, EMBEDDER.embed([memory.text])[0], EMBEDDER.id)


# -- MemoryStore -------------------------------------------------------------------------------------------


def test_put_get_update_remove(store: Store) -> None:
    memory = mem("0000000a", "Upload retries", details="See [[0000000b]]", files=("src/up.py", "src/"))
    put(store, memory)
    assert store.get("0000000a") == memory
    changed = memory.with_changes(summary="Upload retries twice", files=("src/up.py",))
    put(store, changed)
    assert store.get("0000000a") == changed
    assert store.owners(["src/"]) == {}
    assert store.owners(["src/up.py"]) == {"src/up.py": ["0000000a"]}
    assert store.linking(["0000000b"]) == ["0000000a"]
    store.remove("0000000a")
    assert store.get("0000000a") is None
    assert store.owners(["src/up.py"]) == {} and store.linking(["0000000b"]) == []
    assert (
        store.text(["upload"], limit=5) == []
        and store.nearest(EMBEDDER.id, EMBEDDER.embed(["upload"])[0], 5) == []
    )


def test_linking_matches_targets_case_and_spacing_aside(store: Store) -> None:
    """Obsidian resolves `[[Deploy Checklist]]` to a note titled "deploy checklist": so do the links."""
    put(store, mem("0000000a", "a", details="See [[Deploy  Checklist#Steps|the list]] and [[0000000C]]."))
    put(store, mem("0000000b", "b", details="See [[deploy checklist]]."))
    assert store.linking(["DEPLOY checklist"]) == ["0000000a", "0000000b"]
    assert store.linking(["0000000c"]) == ["0000000a"]
    assert store.linking(["deploy"]) == [] and store.linking([]) == []


def test_find_filters_and_count(store: Store) -> None:
    put(store, mem("0000000a", "a", category="gotcha", files=("x.py",)))
    put(store, mem("0000000b", "b", category="pref", pinned=True, origin="rules:AGENTS.md"))
    put(store, mem("0000000c", "c", status="archived", supersedes="0000000a"))
    put(store, mem("0000000d", "d", scope="user", origin="agent"))

    def ids(**kw: object) -> list[str]:
        return [m.id for m in store.find(Query(**kw))]  # type: ignore[arg-type]

    assert ids() == ["0000000a", "0000000b", "0000000d"]
    assert ids(status=None) == ["0000000a", "0000000b", "0000000c", "0000000d"]
    assert ids(status=("archived",)) == ["0000000c"]
    assert ids(category="gotcha") == ["0000000a"]
    assert ids(pinned=True) == ["0000000b"]
    assert ids(pinned=False) == ["0000000a", "0000000d"]
    assert ids(origin="rules:") == ["0000000b"]
    assert ids(origin="rules_") == []  # a prefix ends in ':'; no wildcards
    assert ids(scope="user") == ["0000000d"]
    assert ids(file="x.py") == ["0000000a"]
    assert ids(ids=("0000000b", "0000000c")) == ["0000000b"]
    assert ids(status=None, supersedes="0000000a") == ["0000000c"]  # what replaced it (`Memories.chain`)
    assert ids(supersedes="0000000a") == []  # archived: not active
    assert ids(limit=1) == ["0000000a"]
    assert store.count(Query(status=None)) == 4
    assert store.count(Query(status=None, limit=1)) == 4


def test_find_orders_by_creation_then_id(store: Store) -> None:
    put(store, mem("0000000b", "later", created=T0 + timedelta(days=1)))
    put(store, mem("0000000c", "first c"))
    put(store, mem("0000000a", "first a"))
    assert [m.id for m in store.find(Query())] == ["0000000a", "0000000c", "0000000b"]


def test_memories_by_id_any_status_unknown_left_out(store: Store) -> None:
    put(store, mem("0000000a", "a"))
    put(store, mem("0000000b", "b", status="superseded"))
    assert list(store.memories(["0000000b", "ffffffff", "0000000a"])) == ["0000000b", "0000000a"]
    assert [m.id for m in store.by_hash(mem("x", "b").content_hash)] == ["0000000b"]


def test_owners_counts_active_memories_only(store: Store) -> None:
    put(store, mem("0000000a", "a", files=("src/", "src/a.py")))
    put(store, mem("0000000b", "b", files=("src/a.py",)))
    put(store, mem("0000000c", "c", files=("src/",), status="archived"))
    assert {k: sorted(v) for k, v in store.owners(["src/a.py", "src/", "nope"]).items()} == {
        "src/a.py": ["0000000a", "0000000b"],
        "src/": ["0000000a"],
    }


def test_clear_keeps_telemetry_and_session_memory_whole(store: Store) -> None:
    put(store, mem("0000000a", "alpha note"))
    put(store, mem("0000000b", "session scratch about uploads", scope="session", session="s"))
    store.record([Event("0000000a", "acted", T0)])
    store.clear()
    assert [m.id for m in store.find(Query(status=None))] == ["0000000b"]
    assert store.telemetry(["0000000a"])["0000000a"].acted == 1
    # The session memory has no note to rebuild it from: it stays searchable, with its vector.
    assert [h.id for h in store.text(["uploads"], limit=5)] == ["0000000b"]
    assert store.missing_vectors(EMBEDDER.id) == []


def test_note_ref_is_unique_per_path(store: Store) -> None:
    ref = NoteRef("/n/x.md", 1, 10)
    store.put(mem("0000000a", "a"), ref)
    assert store.note_path("0000000a") == "/n/x.md"
    store.put(mem("0000000b", "b"), ref)  # the note at that path now holds another id
    assert store.get("0000000a") is None
    assert store.note_refs() == {"/n/x.md": ("0000000b", ref)}


def test_transaction_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        put(store, mem("0000000a", "a"))
        raise RuntimeError("boom")
    assert store.get("0000000a") is None
    put(store, mem("0000000b", "b"))  # and the store is usable afterwards
    assert store.get("0000000b") is not None


# -- SearchIndex -------------------------------------------------------------------------------------------


def test_text_both_indexes_active_only_higher_is_better(store: Store) -> None:
    put(store, mem("0000000a", "Retry uploads with exponential backoff"))
    put(store, mem("0000000b", "Staging uses port 6443", details="uploads go elsewhere"))
    put(store, mem("0000000c", "Archived upload note", status="archived"))
    hits = {h.id: h for h in store.text(["uploads"], limit=10)}
    assert set(hits) == {"0000000a", "0000000b"}
    assert hits["0000000a"].words > hits["0000000b"].words > 0  # summary hits weigh more
    # The trigram index finds substrings the word index cannot.
    sub = {h.id: h for h in store.text(["xponenti"], limit=10)}
    assert set(sub) == {"0000000a"} and sub["0000000a"].words == 0 and sub["0000000a"].trigram > 0
    assert store.text(["xponenti"], limit=10, trigram=False) == []
    assert store.text(['"quoted" OR'], limit=10) == []  # query syntax in input is data, not run
    assert store.text([], limit=10) == []


def test_tags_and_aliases_round_trip_and_are_searched_like_the_summary(store: Store) -> None:
    tagged = mem("0000000d", "Releases go out on Tuesdays").with_changes(
        tags=("release", "area/ops"), aliases=("Shipping day",)
    )
    put(store, tagged)
    put(store, mem("0000000e", "Dashboards live in Grafana", details="ops watches them"))
    got = store.get("0000000d")
    assert got is not None and (got.tags, got.aliases) == (("release", "area/ops"), ("Shipping day",))
    hits = {h.id: h for h in store.text(["shipping"], limit=10)}
    assert set(hits) == {"0000000d"} and hits["0000000d"].words > 0
    ops = {h.id: h for h in store.text(["ops"], limit=10)}
    assert ops["0000000d"].words > ops["0000000e"].words > 0  # a tag weighs as the summary, details less


def test_anchors_round_trip_on_every_backend(store: Store) -> None:
    # Regression: the team database kept no anchors, so a write through it dropped them from the note.
    anchors = (
        Anchor(path="src/pay.py", symbol="charge", lines=(3, 9), fingerprint="5b0c3e9a41d2"),
        Anchor(path="src/pay.py", lines=(20, 24), within="refund", fingerprint="aa11bb22cc33", lost=True),
    )
    put(store, mem("0000000f", "charge() must stay idempotent", files=("src/pay.py",), anchors=anchors))
    got = store.get("0000000f")
    assert got is not None and got.anchors == anchors


def test_text_stems_and_folds_diacritics(store: Store) -> None:
    put(store, mem("0000000a", "Café menu parsing breaks on naïve dates"))
    assert [h.id for h in store.text(["cafe"], limit=5)] == ["0000000a"]
    assert [h.id for h in store.text(["naive"], limit=5)] == ["0000000a"]
    assert [h.id for h in store.text(["parses"], limit=5)] == ["0000000a"]


def test_text_limit_applies_per_index(store: Store) -> None:
    for i in range(6):
        put(store, mem(f"0000000{i}", f"deploy step {i}"))
    assert len(store.text(["deploy"], limit=3, trigram=False)) == 3


def test_nearest_by_cosine_one_embedder_active_only(store: Store) -> None:
    put(store, mem("0000000a", "retry the upload with backoff"))
    put(store, mem("0000000b", "staging listens on port 6443"))
    put(store, mem("0000000c", "retry upload backoff archived", status="archived"))
    query = EMBEDDER.embed(["upload retry"])[0]
    found = store.nearest(EMBEDDER.id, query, 5)
    assert found[0][0] == "0000000a"
    assert "0000000c" not in dict(found)
    assert all(found[i][1] >= found[i + 1][1] for i in range(len(found) - 1))
    assert store.nearest("other-embedder", query, 5) == []
    assert store.nearest(EMBEDDER.id, [0.0] * EMBEDDER.dimension, 5) == []
    assert store.nearest(EMBEDDER.id, [1.0, 0.0], 5) == []  # another dimension: never compared


def test_vectors_one_per_memory_missing_and_dropped(store: Store) -> None:
    store.put(mem("0000000a", "one"))
    store.put_vectors("other-2", [("0000000a", [0.6, 0.8])])
    assert store.nearest("other-2", [0.6, 0.8], 1) == [("0000000a", pytest.approx(1.0))]
    assert [m.id for m in store.missing_vectors(EMBEDDER.id)] == ["0000000a"]
    assert store.missing_vectors("other-2") == []
    store.drop_vectors(keep="other-2")
    assert store.missing_vectors("other-2") == []
    store.drop_vectors(keep=None)
    assert [m.id for m in store.missing_vectors("other-2")] == ["0000000a"]
    put(store, mem("0000000a", "one, rewritten"))  # a new put replaces the vector
    assert store.missing_vectors("other-2")[0].id == "0000000a" and store.missing_vectors(EMBEDDER.id) == []


# -- EventLog ----------------------------------------------------------------------------------------------


def test_telemetry_and_event_log(store: Store) -> None:
    put(store, mem("0000000a", "a"))
    store.record(
        [
            Event("0000000a", "surfaced", T0, "s1", 1, {"receipt": "file"}),
            Event("0000000a", "surfaced", T0 + timedelta(hours=1), "s1", 2),
            Event("0000000a", "acted", T0 + timedelta(hours=2), "s1", 2, {"via": "get"}),
            Event("0000000a", "archived", T0 + timedelta(hours=3)),
        ]
    )
    tel = store.telemetry(["0000000a"])["0000000a"]
    assert (tel.surfaced, tel.acted) == (2, 1)
    assert tel.first_surfaced == T0 and tel.last_surfaced == T0 + timedelta(hours=1)
    assert tel.last_acted == T0 + timedelta(hours=2)
    assert set(store.telemetry()) == {"0000000a"} and store.telemetry(["ffffffff"]) == {}
    events = list(store.events("0000000a"))
    assert [e.event for e in events] == ["archived", "acted", "surfaced", "surfaced"]
    assert events[-1].receipts == {"receipt": "file"} and events[-1].session == "s1" and events[-1].turn == 1
    assert [e.event for e in store.events("0000000a", limit=1)] == ["archived"]
    assert store.feedback_totals() == (2, 1)
    put(store, mem("0000000b", "b"))
    store.record(
        [Event("0000000b", "surfaced", T0), Event("ffffffff", "acted", T0)]
    )  # a deleted memory's too
    assert store.feedback_totals() == (3, 2)
    assert store.surfaced_in_session("s1", 1) == {"0000000a"}
    assert store.surfaced_in_session("s1", 2) == set()


# -- NoteBook and SessionStore -----------------------------------------------------------------------------


def test_note_problems_round_trip(store: Store) -> None:
    ref = NoteRef("/n/bad.md", 5, 7)
    store.set_note_problem(ref, "frontmatter is not closed")
    assert store.note_problems() == {"/n/bad.md": (ref, "frontmatter is not closed")}
    store.set_note_problem(ref, None)
    assert store.note_problems() == {}


def test_session_state_meta_and_session_count(store: Store) -> None:
    assert store.session_state("s1") is None and store.get_meta("k") is None
    store.put_session_state("s1", {"turn": 1, "seen": {"a": 1}}, T0)
    store.put_session_state("s2", {"turn": 0}, T0 + timedelta(days=2))
    store.put_session_state("s1", {"turn": 2}, T0 + timedelta(days=3))  # an update keeps the start
    assert store.session_state("s1") == {"turn": 2}
    assert store.session_count() == 2
    assert store.session_count(T0 + timedelta(days=1)) == 1
    store.set_meta("k", "v")
    assert store.get_meta("k") == "v"


# -- RepoMapStore: the repo map over each backend gives the same answers ---------------------------------------


def _git(root: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"}
    )


@pytest.fixture
def history(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "src").mkdir()

    def commit(files: dict[str, str], message: str) -> None:
        for name, text in files.items():
            (root / name).write_text(text)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", message)

    commit({"src/a.py": "x = 1\n", "src/b.py": "import a\n", "src/c.py": "y = 1\n"}, "one")
    for i in range(3):
        commit({"src/a.py": f"x = {i + 2}\n", "src/b.py": f"import a  # {i}\n"}, f"pair {i}")
    commit({"src/c.py": "y = 2\n"}, "alone")
    return root


def test_repo_map_answers_alike_over_every_backend(store: Store, history: Path) -> None:
    repo = RepoMap(history, store.repomap())
    report = repo.refresh()
    assert report.rebuilt and report.files == 3
    assert repo.neighbours("src/a.py") == [("src/b.py", 1.0)]
    assert repo.exists("src/c.py") and repo.exists("src/") and not repo.exists("src/gone.py")
    assert repo.refresh().new_commits == 0
    (history / "src" / "a.py").rename(history / "src" / "renamed.py")
    _git(history, "add", "-A")
    _git(history, "commit", "-q", "-m", "rename")
    again = repo.refresh()
    assert again.renames == [("src/a.py", "src/renamed.py")] and not again.rebuilt
    # History follows the rename (4 shared commits; the rename itself is a fifth change of the file).
    assert repo.neighbours("src/renamed.py") == [("src/b.py", 0.8)]


def test_the_recent_change_rows_answer_alike_over_every_backend(store: Store, history: Path) -> None:
    tables = store.repomap()
    RepoMap(history, tables).refresh()
    head = _rev(history, "HEAD")
    key = window_key(head, 1000)
    touches = tables.recent_touches(key, ["src/a.py", "src/c.py", "src/none.py"], 2)
    assert touches == {
        "src/a.py": [(_rev(history, "HEAD~1"), True), (_rev(history, "HEAD~2"), True)],
        "src/c.py": [(head, True), (_rev(history, "HEAD~4"), False)],
    }
    assert tables.recent_touches(window_key(head, 999), ["src/a.py"], 2) is None  # another window
    # commits above, the oldest beyond `keep` dropping out
    with tables.write():
        tables.put_recent("next:1000", [RecentCommit("f" * 40, True, ("src/c.py",))], keep=2, add=True)
    assert tables.recent_touches("next:1000", ["src/a.py", "src/c.py"], 5) == {
        "src/c.py": [("f" * 40, True), (head, True)]
    }
    row = RecentLines(head, 3, 1000, 12, 34, f"{head}^", ((1, 2), (7, 7)))
    with tables.write():
        tables.put_recent_lines({"src/a.py": row, ":(glob)*": row._replace(runs=())})
    assert tables.recent_lines(["src/a.py", ":(glob)*", "src/b.py"]) == {
        "src/a.py": row,
        ":(glob)*": row._replace(runs=()),
    }


def _rev(root: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_repo_map_writes_are_atomic(store: Store) -> None:
    tables = store.repomap()
    with pytest.raises(RuntimeError), tables.write():
        tables.set_state({"mode": "git"})
        raise RuntimeError("boom")
    assert tables.state() == {}


def test_text_among_scores_only_those_and_inactive_never_crowd_out(store: Store) -> None:
    for i in range(5):
        put(store, mem(f"0000000{i}", f"deploy deploy deploy step {i}", status="archived"))
    put(store, mem("0000000a", "the deploy runbook"))
    put(store, mem("0000000b", "deploy notes", details="the deploy waits for the gate"))
    put(store, mem("0000000c", "unrelated"))
    # The limit applies after inactive memories are left out: three archived strong matches cannot hide them.
    assert {h.id for h in store.text(["deploy"], limit=2)} == {"0000000a", "0000000b"}
    among = store.text(["deploy"], limit=1, among=["0000000b", "0000000c", "00000001"])
    assert [h.id for h in among] == ["0000000b"]  # only the listed, active ones; the limit is theirs
    full = {h.id: h.words for h in store.text(["deploy"], limit=10)}
    assert among[0].words == pytest.approx(full["0000000b"])  # comparable with an unrestricted query
    assert store.text(["deploy"], limit=5, among=[]) == []


def test_describe_names_the_backend_and_its_version(store: Store) -> None:
    described = store.describe()
    assert described["backend"] in ("memory", "sqlite", "postgres")
    assert isinstance(described["version"], str) and described["version"]
