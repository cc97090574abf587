"""`tether ui` through Starlette's TestClient: the security rules (token, cookie, CSRF, Host, Origin, bind,
headers, escaping), every action as the CLI would do it, and the pieces behind the pages (listing, stats
timeline, graph layout, recall playground recording nothing)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from conftest import Run, note_files
from tether.adapters.ui import command
from tether.adapters.ui.app import build_app
from tether.adapters.ui.core import Filters, UICore, timeline
from tether.adapters.ui.graph import EXACT_MAX, clusters, layout
from tether.adapters.ui.html import html, json_data
from tether.adapters.ui.security import Secrets, check_bind
from tether.adapters.ui.server import bind
from tether.errors import ValidationError
from tether.notes import format as notes
from tether.store.base import Event, Query
from tether.workspace import Workspace

PORT = 8799
BASE = f"http://127.0.0.1:{PORT}"
UPLOAD = "src/app/upload.py"
XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


@dataclass
class UI:
    client: TestClient
    keys: Secrets
    core: UICore
    repo: Path
    home: Path

    def ws(self) -> Workspace:
        return Workspace.open(self.repo, home=self.home)

    def post(self, path: str, data: dict[str, str | list[str]] | None = None, **kw: object) -> object:
        return self.client.post(path, data={"csrf": self.keys.csrf, **(data or {})}, **kw)  # type: ignore[arg-type]


@pytest.fixture
def ui(repo: Path, home: Path) -> Iterator[UI]:
    core = UICore.open(repo, home=home)
    keys = Secrets()
    client = TestClient(build_app(core, port=PORT, keys=keys), base_url=BASE)
    assert client.get(f"/?token={keys.token}", follow_redirects=False).status_code == 303
    try:
        yield UI(client, keys, core, repo, home)
    finally:
        core.close()


def anonymous(ui: UI) -> TestClient:
    return TestClient(build_app(ui.core, port=PORT, keys=ui.keys), base_url=BASE)


def add(ui: UI, summary: str, **kw: object) -> str:
    with ui.ws() as ws:
        return ws.add(summary, **kw).memory.id  # type: ignore[arg-type]


def snapshot(repo: Path) -> tuple[dict[str, bytes], int]:
    """Every note's bytes and the number of events: what a refused change must leave as it was."""
    conn = sqlite3.connect(repo / ".tether" / "index.db")
    try:
        events = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()
    return {p.name: p.read_bytes() for p in note_files(repo)}, events


def note_of(repo: Path, memory_id: str) -> Path:
    [path] = [p for p in note_files(repo) if p.name.startswith(memory_id)]
    return path


def assert_written_as_the_cli_would(ui: UI, memory_id: str) -> None:
    """The note on disk parses to the indexed memory and is exactly what `notes.render` (the CLI's writer) makes."""
    path = note_of(ui.repo, memory_id)
    with ui.ws() as ws:
        memory = ws.get(memory_id)
    assert path.read_text(encoding="utf-8") == notes.render(memory)
    assert notes.read(path, "project") == memory


# -- the guard -------------------------------------------------------------------------------------------

PAGES = ["/", "/graph", "/stats", "/cleanup", "/recall", "/new", "/static/ui.css", "/static/graph.js"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_403_without_the_token_or_cookie(ui: UI, path: str) -> None:
    response = anonymous(ui).get(path)
    assert response.status_code == 403
    assert "tether ui" in response.text


def test_a_wrong_token_is_refused(ui: UI) -> None:
    response = anonymous(ui).get("/?token=guess", follow_redirects=False)
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(ui: UI) -> None:
    client = anonymous(ui)
    response = client.get(f"/stats?token={ui.keys.token}&x=1", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/stats?x=1"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"tether_ui_{PORT}={ui.keys.session};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and ui.keys.token not in cookie
    assert client.get("/stats").status_code == 200


def test_a_cookie_of_another_run_is_refused(ui: UI) -> None:
    client = anonymous(ui)
    client.cookies.set(f"tether_ui_{PORT}", Secrets().session)
    assert client.get("/").status_code == 403


@pytest.mark.parametrize(
    "host", ["evil.example:8799", "127.0.0.1:8800", "localhost.evil.example:8799", "192.168.1.2:8799", ""]
)
def test_a_foreign_host_is_refused_even_with_the_cookie(ui: UI, host: str) -> None:
    response = ui.client.get("/", headers={"host": host})
    assert response.status_code == 403 and "Host" in response.text


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://127.0.0.1:8800", "null", "https://127.0.0.1:8799"]
)
def test_a_foreign_origin_is_refused(ui: UI, origin: str) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    before = snapshot(ui.repo)
    assert ui.client.get("/", headers={"origin": origin}).status_code == 403
    response = ui.post(f"/m/{mid}/pin", headers={"origin": origin})
    assert response.status_code == 403  # type: ignore[attr-defined]
    assert snapshot(ui.repo) == before


def test_the_own_origin_and_cross_site_fetch_metadata(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    assert ui.post(f"/m/{mid}/pin", headers={"origin": BASE}).status_code == 200  # type: ignore[attr-defined]
    assert ui.client.get("/", headers={"sec-fetch-site": "cross-site"}).status_code == 403
    assert ui.client.get("/", headers={"sec-fetch-site": "same-origin"}).status_code == 200
    # Chromium's own form post under Referrer-Policy: no-referrer says `Origin: null`, with fetch metadata.
    null_own = {"origin": "null", "sec-fetch-site": "same-origin"}
    assert ui.post(f"/m/{mid}/unpin", headers=null_own).status_code == 200  # type: ignore[attr-defined]
    for headers in (
        {"origin": "null", "sec-fetch-site": "cross-site"},
        {"origin": "null", "sec-fetch-site": "same-site"},
    ):
        assert ui.post(f"/m/{mid}/pin", headers=headers).status_code == 403  # type: ignore[attr-defined]


def test_security_headers_on_pages_assets_and_refusals(ui: UI) -> None:
    for response in (ui.client.get("/"), ui.client.get("/static/ui.js"), anonymous(ui).get("/")):
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp and "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-content-type-options"] == "nosniff"
    assert ui.client.get("/").headers["cache-control"] == "no-store"


def test_pages_have_no_inline_script_or_style(ui: UI) -> None:
    add(ui, "Upload retries three times", files=[UPLOAD], details="see [[nothing]]")
    for path in ["/", "/graph", "/stats", "/cleanup", "/recall?prompt=upload", "/new"]:
        text = ui.client.get(path).text
        assert not re.search(r"<script(?![^>]*\b(src=|type=\"application/json\"))", text), path
        assert "<style" not in text and " style=" not in text and not re.search(r"\son[a-z]+=", text), path


def mutations(mid: str, other: str) -> list[tuple[str, dict[str, str | list[str]]]]:
    return [
        (f"/m/{mid}/pin", {}),
        (f"/m/{mid}/unpin", {}),
        (f"/m/{mid}/archive", {}),
        (f"/m/{mid}/restore", {}),
        (f"/m/{mid}/supersede", {"new_id": other}),
        (f"/m/{mid}/edit", {"summary": "Changed", "category": "gotcha", "priority": "high", "files": ""}),
        (f"/m/{mid}/delete", {"confirm": mid}),
        ("/new", {"summary": "A new memory", "category": "pref"}),
        ("/cleanup", {"id": [mid]}),
    ]


@pytest.mark.parametrize("index", range(9))
@pytest.mark.parametrize("csrf", [None, "", "wrong"])
def test_a_change_without_the_csrf_token_fails_and_writes_nothing(
    ui: UI, index: int, csrf: str | None
) -> None:
    mid = add(ui, "Upload retries three times", files=["gone/file.py"])
    other = add(ui, "Upload retries four times", files=[UPLOAD])
    path, data = mutations(mid, other)[index]
    before = snapshot(ui.repo)
    form = dict(data) if csrf is None else {**data, "csrf": csrf}
    response = ui.client.post(path, data=form)
    assert response.status_code == 403
    assert "CSRF" in response.text or (not form and "a change must be a form" in response.text)
    assert snapshot(ui.repo) == before


def test_a_change_must_be_a_form(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    before = snapshot(ui.repo)
    response = ui.client.post(f"/m/{mid}/pin", json={"csrf": ui.keys.csrf})
    assert response.status_code == 403 and "form" in response.text
    response = ui.client.post(
        f"/m/{mid}/pin",
        content=b"csrf=" + b"x" * (1 << 21),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 403 and "1 MiB" in response.text
    assert snapshot(ui.repo) == before


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "192.168.1.10", "::", "::1", "localhost", "127.0.0.2", "example.com", ""]
)
def test_a_bind_other_than_127_0_0_1_is_refused_with_the_reason(host: str) -> None:
    with pytest.raises(ValidationError, match="refusing to listen"):
        check_bind(host)
    with pytest.raises(ValidationError, match=r"127\.0\.0\.1"):
        bind(host, 0)
    assert check_bind("127.0.0.1") == "127.0.0.1"


def test_tether_ui_refuses_a_public_bind(tether: Callable[..., Run]) -> None:
    result = tether("ui", "--host", "0.0.0.0", "--no-open")
    assert result.code == 1
    assert "refusing to listen on '0.0.0.0'" in result.err and "loopback" in result.err


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    result = CliRunner().invoke(command.ui, ["--no-open"])
    assert (
        result.exit_code == 1 and "pip install 'tether[ui]'" in result.output and "uvicorn" in result.output
    )


# -- escaping ---------------------------------------------------------------------------------------------


def test_every_page_escapes_memory_text(ui: UI) -> None:
    old = datetime.now(UTC) - timedelta(days=400)
    with Workspace.open(ui.repo, home=ui.home, clock=lambda: old) as ws:
        ids = [
            ws.add(
                xss,
                details=f"{xss} and [[{xss}]] and [[deploy]]",
                category="gotcha",
                files=[UPLOAD, f"docs/{xss}.md"],
            ).memory.id
            for xss in XSS
        ]
        ws.add(XSS[0] + " user", scope="user", details=XSS[1])
        ws.store.record([Event(ids[0], "surfaced", old, "s1", 1, {"receipt": XSS[1], XSS[0]: XSS[1]})])
    with ui.ws() as ws:
        ws.supersede(ids[1], ids[0])
    pages = [
        "/",
        "/?state=all",
        f"/?q={XSS[0]}",
        "/?q=alert&state=all",
        f"/?file=docs/{XSS[1]}.md&state=all",
        "/?scope=user",
        "/graph",
        "/stats",
        "/cleanup",
        f"/recall?prompt={XSS[0]}&file={UPLOAD}&file={XSS[1]}",
        f"/new?supersedes={XSS[0]}&file={XSS[1]}",
        f"/m/{XSS[0]}",
        f"/?category={XSS[0]}&origin={XSS[1]}&sort={XSS[0]}",
    ]
    for mid in ids:
        pages += [f"/m/{mid}", f"/m/{mid}/edit", f"/m/{mid}/delete"]
    for path in pages:
        response = ui.client.get(path)
        assert response.status_code in (200, 400, 404, 405), path
        text = response.text
        for xss in XSS:
            assert xss not in text, path
        assert "<img" not in text and "alert(1)</script>" not in text, path
    detail = ui.client.get(f"/m/{ids[0]}").text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt;" in detail and "&lt;img src=x onerror=alert(1)&gt;" in detail
    )
    # The graph's data block cannot be closed by a label.
    block = re.search(
        r'<script type="application/json" id="graph-data">(.*?)</script>', ui.client.get("/graph").text, re.S
    )
    assert block is not None and "<" not in block.group(1)
    # The edit form is prefilled with the exact text, escaped: saving it unchanged changes nothing.
    response = ui.post(
        f"/m/{ids[0]}/edit",
        {
            "summary": XSS[0],
            "details": f"{XSS[0]} and [[{XSS[0]}]] and [[deploy]]",
            "category": "gotcha",
            "priority": "normal",
            "files": f"{UPLOAD}\ndocs/{XSS[0]}.md",
        },
    )
    assert "unchanged" in response.text  # type: ignore[attr-defined]


def test_html_escapes_every_argument_and_json_blocks_cannot_close() -> None:
    assert (
        html('<a title="{}">{}</a>', '"><script>', "<b>&")
        == '<a title="&quot;&gt;&lt;script&gt;">&lt;b&gt;&amp;</a>'
    )
    assert html("{}", "\x1b[2J\u202e") == "\\x1b[2J\\u202e"
    block = json_data("d", {"l": "</script><!--", "u": "\u2028"})
    assert block.count("</script>") == 1 and "<!--" not in block and "\\u003c/script\\u003e" in block


# -- acting as the CLI would --------------------------------------------------------------------------------


def test_edit_writes_the_note_the_cli_would_and_shows_what_changed(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    response = ui.post(
        f"/m/{mid}/edit",
        {
            "summary": "Upload retries five times",
            "details": "With backoff.\r\nSee [[deploy]].",
            "category": "gotcha",
            "priority": "high",
            "files": f"{UPLOAD}\ndocs/",
        },
    )
    text = response.text  # type: ignore[attr-defined]
    assert "edited" in text and "Upload retries three times" in text and "Upload retries five times" in text
    with ui.ws() as ws:
        memory = ws.get(mid)
        assert (memory.summary, memory.category, memory.priority) == (
            "Upload retries five times",
            "gotcha",
            "high",
        )
        assert memory.details == "With backoff.\nSee [[deploy]]." and memory.files == (UPLOAD, "docs/")
        assert [e.receipts for e in ws.store.events(mid) if e.event == "acted"] == [{"via": "edit"}]
    assert_written_as_the_cli_would(ui, mid)


def test_edit_refuses_what_the_cli_refuses_and_keeps_the_form(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    before = snapshot(ui.repo)
    secret = "aws key AKIAZ7Q3VJ5KXN2WP4RM in the deploy script"
    base = {
        "summary": "Upload retries three times",
        "category": "context",
        "priority": "normal",
        "files": UPLOAD,
    }
    response = ui.post(f"/m/{mid}/edit", {**base, "details": secret})
    assert response.status_code == 400 and "looks like a credential" in response.text  # type: ignore[attr-defined]
    assert secret in response.text  # type: ignore[attr-defined]
    for bad, message in [
        ({"summary": ""}, "summary is empty"),
        ({"summary": "x" * 161}, "161 characters"),
        ({"category": "nope"}, "invalid category"),
        ({"files": "../outside.py"}, "outside the repository"),
    ]:
        response = ui.post(f"/m/{mid}/edit", {**base, **bad})
        assert response.status_code == 400 and message in response.text, bad  # type: ignore[attr-defined]
    assert snapshot(ui.repo) == before
    response = ui.post(f"/m/{mid}/edit", {**base, "details": secret, "allow_secret": "1"})
    assert response.status_code == 200  # type: ignore[attr-defined]
    assert_written_as_the_cli_would(ui, mid)


def test_pin_unpin_archive_restore(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    for action, verb, check in [
        ("pin", "pinned", lambda m: m.pinned),
        ("unpin", "unpinned", lambda m: not m.pinned),
        ("archive", "archived", lambda m: m.status == "archived"),
        ("restore", "restored", lambda m: m.status == "active"),
    ]:
        response = ui.post(f"/m/{mid}/{action}")
        assert response.status_code == 200 and f"<strong>{verb}</strong>" in response.text  # type: ignore[attr-defined]
        with ui.ws() as ws:
            assert check(ws.get(mid)), action
        assert_written_as_the_cli_would(ui, mid)


def test_supersede_and_its_chain(ui: UI) -> None:
    old = add(ui, "Deploys go through rsync", files=[UPLOAD])
    new = add(ui, "Deploys go through make ship", files=[UPLOAD])
    response = ui.post(f"/m/{old}/supersede", {"new_id": new})
    assert f"superseded by {new}" in response.text  # type: ignore[attr-defined]
    with ui.ws() as ws:
        assert ws.get(old).status == "superseded" and ws.get(new).supersedes == old
    assert_written_as_the_cli_would(ui, old)
    assert_written_as_the_cli_would(ui, new)
    page = ui.client.get(f"/m/{old}").text
    assert "replaced by" in page and new in page
    assert "replaces" in ui.client.get(f"/m/{new}").text
    response = ui.post(f"/m/{new}/supersede", {"new_id": new})
    assert "cannot supersede itself" in response.text  # type: ignore[attr-defined]
    response = ui.post(f"/m/{new}/supersede", {"new_id": "00000000"})
    assert "no memory 00000000" in response.text  # type: ignore[attr-defined]


def test_delete_needs_the_confirmation_page(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    page = ui.client.get(f"/m/{mid}/delete").text
    assert "Delete this memory?" in page and "Delete for good" in page
    response = ui.post(f"/m/{mid}/delete")
    assert "not deleted" in response.text  # type: ignore[attr-defined]
    assert note_of(ui.repo, mid).exists()
    response = ui.post(f"/m/{mid}/delete", {"confirm": mid})
    assert "deleted" in response.text and "its note is gone" in response.text  # type: ignore[attr-defined]
    assert [p for p in note_files(ui.repo) if p.name.startswith(mid)] == []
    assert ui.client.get(f"/m/{mid}").status_code == 404


def test_new_memory_and_cleanup_in_bulk(ui: UI) -> None:
    response = ui.post(
        "/new",
        {
            "summary": "Run ruff before committing",
            "category": "pref",
            "files": "src/app/\n",
            "priority": "normal",
            "scope": "project",
        },
    )
    mid = re.search(r'href="/m/([0-9a-f]{8})"', response.text).group(1)  # type: ignore[attr-defined,union-attr]
    assert_written_as_the_cli_would(ui, mid)
    stale = [add(ui, f"Old fact {n}", files=[f"gone/{n}.py"]) for n in range(3)]
    page = ui.client.get("/cleanup").text
    assert all(s in page for s in stale) and "every file it names is gone" in page
    response = ui.post("/cleanup", {"id": stale[:2]})
    assert "archived 2" in response.text  # type: ignore[attr-defined]
    with ui.ws() as ws:
        assert [ws.get(s).status for s in stale] == ["archived", "archived", "active"]
        assert ws.store.get_meta("cleanup.last_pass")
    assert "nothing selected" in ui.post("/cleanup").text  # type: ignore[attr-defined]


def test_the_recall_playground_records_no_surfacing(ui: UI) -> None:
    mid = add(ui, "Upload retries three times with backoff", category="gotcha", files=[UPLOAD])
    add(ui, "Deploys go through make ship", files=["docs/deploy.md"])
    before = snapshot(ui.repo)
    page = ui.client.get(f"/recall?prompt=why+does+upload+retry&file={UPLOAD}").text
    assert "=== Project memory (auto-recalled) ===" in page and mid in page
    assert "rank credit" in page and "magnitude" in page and "coverage" in page
    assert snapshot(ui.repo) == before
    with ui.ws() as ws:
        assert ws.store.telemetry([mid]) == {}


def test_the_recall_playground_asks_as_a_first_prompt_with_the_work_in_progress(ui: UI) -> None:
    mid = add(ui, "Upload retries three times with backoff", category="gotcha", files=[UPLOAD])
    (ui.repo / UPLOAD).write_text("def upload():\n    return 2\n", encoding="utf-8")
    page = ui.client.get("/recall?prompt=now+add+tests&work=1").text
    assert mid in page and f"work in progress: {UPLOAD} (used)" in page
    assert 'name="work" value="1" checked' in page
    alone = ui.client.get("/recall?prompt=now+add+tests").text  # not asked: the prompt alone
    assert "Nothing would be injected" in alone and 'id="work"' not in alone
    with ui.ws() as ws:
        assert ws.store.telemetry([mid]) == {}


# -- what the pages are made of ----------------------------------------------------------------------------


def test_listing_filters_sorts_and_pages(ui: UI) -> None:
    with ui.ws() as ws:
        ids = [
            ws.add(
                f"Fact {n} about uploads",
                category="gotcha" if n % 2 else "pref",
                files=[UPLOAD] if n < 5 else [],
            ).memory.id
            for n in range(12)
        ]
        ws.archive(ids[0])
        ws.store.record(
            [Event(ids[3], "surfaced", ws.clock()) for _ in range(3)] + [Event(ids[3], "acted", ws.clock())]
        )
        ws.add("A user preference", scope="user")
        zeppelin = ws.add("Zeppelin hangar permits expire yearly", category="decision").memory.id
    core = ui.core
    assert core.listing(Filters()).total == 13  # 12 active project + 1 user
    assert core.listing(Filters(state="archived")).total == 1
    assert core.listing(Filters(state="all", scope="project")).total == 13
    assert core.listing(Filters(category="gotcha")).total == 6
    assert core.listing(Filters(file=UPLOAD)).total == 4
    assert core.listing(Filters(scope="user")).rows[0].memory.summary == "A user preference"
    top = core.listing(Filters(sort="surfaced")).rows[0]
    assert top.memory.id == ids[3] and top.follow_through == pytest.approx(1 / 3)
    assert core.listing(Filters(sort="follow")).rows[0].memory.id == ids[3]
    listing = core.listing(Filters(per_page=5, page=3))
    assert (listing.page, listing.pages, len(listing.rows)) == (3, 3, 3)
    assert core.listing(Filters(q="zeppelin permits")).rows[0].memory.id == zeppelin
    assert core.listing(Filters(q="fact 0", state="archived")).rows[0].memory.id == ids[0]
    page = ui.client.get("/?sort=surfaced&page=1").text
    assert page.index(ids[3]) < page.index(ids[1])
    assert 'rel="next"' in ui.client.get("/?state=all").text or core.listing(Filters(state="all")).pages == 1


def test_dead_references_are_listed_and_badged(ui: UI) -> None:
    dead = add(ui, "About a file that is gone", files=["gone/old.py"])
    add(ui, "About a file that exists", files=[UPLOAD])
    assert [r.memory.id for r in ui.core.listing(Filters(state="dead")).rows] == [dead]
    detail = ui.client.get(f"/m/{dead}").text
    assert 'class="badge gone"' in detail


def test_detail_shows_links_both_ways_telemetry_and_receipts(ui: UI) -> None:
    target = add(ui, "Deploys go through make ship", files=["docs/deploy.md"])
    source = add(ui, "Upload deploy notes", details=f"See [[{target}]] and [[nowhere]].", files=[UPLOAD])
    with ui.ws() as ws:
        ws.store.record(
            [Event(source, "surfaced", ws.clock(), "sess-1", 4, {"receipt": "file, sem 0.59", "score": 0.61})]
        )
    page = ui.client.get(f"/m/{source}").text
    assert f'href="/m/{target}"' in page and "Unresolved links" in page and "nowhere" in page
    assert "sess-1" in page and "file, sem 0.59" in page and 'id="surfaced">1<' in page
    assert f'href="/m/{source}"' in ui.client.get(f"/m/{target}").text  # linked from
    # By title and by alias, case and spacing aside (Obsidian's way), as `tether get` resolves them.
    with ui.ws() as ws:
        ws.edit(target, aliases=["Ship Day"])
    loose = add(ui, "Upload timing", details="See [[ship  day]] and [[DEPLOYS go through make ship]].")
    assert ui.client.get(f"/m/{loose}").text.count(f'href="/m/{target}"') >= 2
    graph = ui.core.graph_data()
    ids = [n["id"] for n in graph["nodes"]]
    assert (ids.index(loose), ids.index(target), "wikilink") in graph["edges"]


def test_timeline_buckets_by_span() -> None:
    now = datetime(2026, 6, 30, tzinfo=UTC)
    events = [
        Event("a", "surfaced", now - timedelta(days=2)),
        Event("a", "acted", now - timedelta(days=1)),
        Event("b", "surfaced", now),
    ]
    tl = timeline(events, {"a": "gotcha", "b": "pref"}, now)
    assert tl["unit"] == "day" and len(tl["buckets"]) == 14
    assert sum(tl["all"]["surfaced"]) == 2 and sum(tl["categories"]["gotcha"]["acted"]) == 1
    long = timeline([Event("a", "surfaced", now - timedelta(days=300)), *events], {"a": "gotcha"}, now)
    assert long["unit"] == "week" and sum(long["all"]["surfaced"]) == 3
    assert timeline([], {}, now)["buckets"] == []


def test_stats_page_draws_svg_charts(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", category="gotcha", files=[UPLOAD])
    with ui.ws() as ws:
        ws.store.record([Event(mid, "surfaced", ws.clock()), Event(mid, "acted", ws.clock())])
    page = ui.client.get("/stats").text
    assert page.count("<svg") >= 7 and 'class="bar s-surfaced"' in page and "<polyline" in page
    assert 'id="most-used"' in page and mid in page


def test_graph_clusters_and_layout() -> None:
    edges = [(0, 1, "file"), (1, 2, "wikilink"), (3, 4, "file")]
    found = clusters(6, edges)
    assert [sorted(c.members) for c in found] == [[0, 1, 2], [3, 4], [5]]
    positions, _ = layout(6, edges)
    assert len(set(positions)) == 6
    big = [(0, i, "file") for i in range(1, EXACT_MAX + 50)]
    positions, found = layout(EXACT_MAX + 50, big)
    assert found[0].refine and len(set(positions)) == EXACT_MAX + 50


def test_graph_page_has_nodes_edges_and_kinds(ui: UI) -> None:
    a = add(ui, "Deploys go through make ship", files=["docs/deploy.md"])
    b = add(ui, "Upload notes", details=f"See [[{a}]].", files=[UPLOAD])
    c = add(ui, "Upload notes, corrected", files=[UPLOAD], supersedes=b)
    data = ui.core.graph_data()
    ids = [n["id"] for n in data["nodes"]]
    kinds = {(ids[s], ids[t], k) for s, t, k in data["edges"]}
    assert {(b, a, "wikilink"), (c, b, "supersedes"), (b, UPLOAD, "file")} <= kinds
    page = ui.client.get("/graph").text
    assert 'id="graph-data"' in page and "/static/graph.js" in page and "connected clusters" in page


def test_the_help_and_the_composition_root(tether: Callable[..., Run]) -> None:
    result = tether("ui", "--help")
    assert (
        result.code == 0
        and "--port" in result.out
        and "--no-open" in result.out
        and "127.0.0.1" in result.out
    )
    assert "ui" in tether("--help").out


def test_core_reads_are_not_recorded(ui: UI) -> None:
    mid = add(ui, "Upload retries three times", files=[UPLOAD])
    before = snapshot(ui.repo)
    for path in ["/", f"/m/{mid}", "/stats", "/graph", "/cleanup", f"/m/{mid}/edit", "/?q=upload"]:
        assert ui.client.get(path).status_code == 200
    assert snapshot(ui.repo) == before
    with ui.ws() as ws:
        assert ws.find(Query(status=None))[0].id == mid


# -- anchors and the pending review queue ---------------------------------------------------------------

ANCHORED = "src/app/billing.py"
BILLING = "import os\n\n\ndef charge(card):\n    total = 1\n    return total\n"


def anchored(ui: UI) -> tuple[str, str]:
    """A memory on the symbol `charge` and one on lines 5-6 inside it (`within` charge)."""
    (ui.repo / ANCHORED).write_text(BILLING, encoding="utf-8")
    symbol = add(ui, "Charge retries are idempotent", category="gotcha", at=[f"{ANCHORED}::charge"])
    lines = add(ui, "The total is never zero", at=[f"{ANCHORED}:5-6"])
    return symbol, lines


def anchors_section(page: str) -> str:
    found = re.search(r'<ul class="anchors" id="anchors">(.*?)</ul>', page, re.S)
    assert found is not None, "the detail page has no anchors section"
    return found.group(1)


def test_detail_lists_anchors_and_where_they_are_now(ui: UI) -> None:
    symbol, lines = anchored(ui)
    section = anchors_section(ui.client.get(f"/m/{symbol}").text)
    assert f"<code>{ANCHORED}::charge</code>" in section and "found</span> lines 4-6" in section
    section = anchors_section(ui.client.get(f"/m/{lines}").text)
    assert f"<code>{ANCHORED}:5-6</code>" in section and "<code>charge()</code>" in section  # within
    assert "found</span> lines 5-6" in section and "lost" not in section
    # The code moves down two lines: found where it is now, said how.
    (ui.repo / ANCHORED).write_text("# a\n# b\n" + BILLING, encoding="utf-8")
    section = anchors_section(ui.client.get(f"/m/{lines}").text)
    assert "found</span> lines 7-8" in section and "moved" in section
    section = anchors_section(ui.client.get(f"/m/{symbol}").text)
    assert "found</span> lines 6-8" in section and "by its symbol" in section
    assert "no anchors" in anchors_section(ui.client.get(f"/m/{add(ui, 'Plain', files=[UPLOAD])}").text)


def test_a_lost_anchor_gets_a_badge_and_the_dead_anchors_state_lists_it(ui: UI) -> None:
    symbol, lines = anchored(ui)
    (ui.repo / ANCHORED).write_text("import os\n\n\ndef refund(card):\n    return 0\n", encoding="utf-8")
    for mid in (symbol, lines):
        section = anchors_section(ui.client.get(f"/m/{mid}").text)
        assert '<span class="badge gone lost">lost</span>' in section and "found</span>" not in section, mid
    # The server's repo refresh has run the reanchor pass (it records lost anchors in the notes, which is what
    # `tether list --dead-anchors` reads); the dead anchors state lists them and nothing else.
    assert all(
        a.lost for mid in (symbol, lines) for a in notes.read(note_of(ui.repo, mid), "project").anchors
    )
    add(ui, "Not anchored at all", files=[UPLOAD])
    assert {r.memory.id for r in ui.core.listing(Filters(state="lost")).rows} == {symbol, lines}
    page = ui.client.get("/?state=lost").text
    assert 'value="lost" selected>dead anchors<' in page and symbol in page and lines in page


def test_anchor_text_is_escaped(ui: UI) -> None:
    from tether.model.anchor import Anchor

    mid = add(
        ui,
        "Anchored to markup",
        anchors=[Anchor(f"src/{XSS[1]}.py", symbol=XSS[0], lines=(1, 2), within=XSS[1])],
    )
    for path in (f"/m/{mid}", f"/m/{mid}/edit"):
        text = ui.client.get(path).text
        assert XSS[0] not in text and XSS[1] not in text and "<img" not in text, path
    section = anchors_section(ui.client.get(f"/m/{mid}").text)
    assert "&lt;script&gt;" in section and "lost" in section  # no such file: lost


def test_editing_in_the_ui_keeps_the_anchors_on_disk(ui: UI) -> None:
    symbol, _ = anchored(ui)
    before = notes.read(note_of(ui.repo, symbol), "project").anchors
    assert [a.spec() for a in before] == [f"{ANCHORED}::charge"]
    form = ui.client.get(f"/m/{symbol}/edit").text
    assert 'id="form-anchors"' in form and f"{ANCHORED}::charge" in form
    files = re.search(r'<textarea name="files"[^>]*>(.*?)</textarea>', form, re.S)
    assert files is not None and files.group(1) == ANCHORED  # the anchor's file is one of the files
    response = ui.post(
        f"/m/{symbol}/edit",
        {
            "summary": "Charge retries are idempotent by key",
            "details": "Keyed by the order.",
            "category": "gotcha",
            "priority": "high",
            "files": f"{files.group(1)}\ndocs/",
        },
    )
    assert "edited" in response.text  # type: ignore[attr-defined]
    after = notes.read(note_of(ui.repo, symbol), "project")
    assert after.summary == "Charge retries are idempotent by key" and after.anchors == before
    assert_written_as_the_cli_would(ui, symbol)
    # Dropping the anchor's file drops its anchor (as `tether edit --file` does), and the flash says so.
    response = ui.post(
        f"/m/{symbol}/edit",
        {
            "summary": after.summary,
            "details": after.details,
            "category": "gotcha",
            "priority": "high",
            "files": "docs/",
        },
    )
    assert '<th scope="row">anchors</th>' in response.text  # type: ignore[attr-defined]
    assert notes.read(note_of(ui.repo, symbol), "project").anchors == ()


def agent_requests(ui: UI) -> tuple[str, str]:
    """An agent's pinned memory (an add waiting) and an agent's pin of the person's memory."""
    from tether.lifecycle.review import request_pin

    with ui.ws() as ws:
        added = ws.add(f"Always {XSS[0]} first", scope="user", pinned=True, origin="agent", session="s-7")
        assert added.pending
        mine = ws.add("Staging is on port 6443", files=[UPLOAD]).memory
        assert request_pin(ws, mine.id, True)[1]
    return added.memory.id, mine.id


def test_the_pending_state_lists_requests_with_why_they_wait(ui: UI) -> None:
    added, pin = agent_requests(ui)
    page = ui.client.get("/?state=pending").text
    assert "<h1>Pending review</h1>" in page and "2 requests waiting" in page
    assert 'value="pending" selected>pending review<' in page
    assert (
        f'data-request="{added}" data-kind="add"' in page and f'data-request="{pin}" data-kind="pin"' in page
    )
    assert "it is pinned" in page and "it is user memory" in page and "an agent asked to pin it" in page
    assert "s-7" in page and "user scope" in page and "Staging is on port 6443" in page
    assert XSS[0] not in page and "&lt;script&gt;" in page  # the request's text is data too
    for request_id in (added, pin):
        for action in ("approve", "reject"):
            assert f'action="/review/{request_id}/{action}"' in page


def test_approve_and_reject_do_what_tether_review_does(ui: UI) -> None:
    from tether.lifecycle.review import pending_requests

    added, pin = agent_requests(ui)
    response = ui.post(f"/review/{pin}/approve")
    text = response.text  # type: ignore[attr-defined]
    assert "approved" in text and "(pinned)" in text and f'href="/m/{pin}"' in text
    assert notes.read(note_of(ui.repo, pin), "project").pinned is True
    before = snapshot(ui.repo)
    text = ui.post(f"/review/{added}/reject").text  # type: ignore[attr-defined]
    assert "rejected" in text and "nothing was written" in text and "Nothing waits for review" in text
    assert snapshot(ui.repo) == before and list((ui.home / "memories").glob("*.md")) == []
    with ui.ws() as ws:
        assert pending_requests(ws) == [] and ws.store.get(added) is None
    # Decided already (here or by the CLI): said so, nothing done.
    text = ui.post(f"/review/{added}/approve").text  # type: ignore[attr-defined]
    assert "not approved: no pending request" in text
    assert ui.client.post(f"/review/{pin}/approve").status_code == 403  # without the CSRF token
    assert ui.post(f"/review/{pin}/delete").status_code == 404  # type: ignore[attr-defined]
