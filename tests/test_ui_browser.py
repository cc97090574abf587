"""`tether ui` in a real browser: Debian's chromium, headless, driven by Playwright against the real server
(`tether ui --no-open` on a free loopback port) in a real git repository. Every action by clicks and
typing, the note on disk checked after each; memory text holding markup renders inert; a screenshot of each
page lands in `tests/artifacts/ui/` (git-ignored).

No fixed sleeps: every step waits for a selector or a navigation, with generous timeouts for a loaded
two-core machine.
"""

from __future__ import annotations

import os
import queue
import re
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import TETHER_BIN, make_git_repo
from tether.notes import format as notes
from tether.project import init_project
from tether.store.base import Event
from tether.workspace import Workspace

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (bin/check installs it)")
CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "needs Debian's chromium (apt-get install -y chromium; bin/check installs it)",
        allow_module_level=True,
    )

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "ui"
TIMEOUT_MS = 60_000
UPLOAD = "src/app/upload.py"
XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")


@dataclass
class Server:
    repo: Path
    home: Path
    url: str  # with the token
    proc: subprocess.Popen[str]
    base: str = field(init=False)

    def __post_init__(self) -> None:
        self.base = self.url.split("/?", 1)[0]

    def ws(self, when: datetime | None = None) -> Workspace:
        return Workspace.open(self.repo, home=self.home, clock=(lambda: when) if when else None)

    def add(self, summary: str, **kw: Any) -> str:
        with self.ws() as ws:
            return ws.add(summary, **kw).memory.id

    def note(self, memory_id: str) -> Path | None:
        found = [p for p in (self.repo / ".tether" / "memories").glob("*.md") if p.name.startswith(memory_id)]
        return found[0] if found else None

    def on_disk(self, memory_id: str) -> Any:
        """The note as the CLI reads it, checked to be exactly what the CLI's writer makes of it."""
        path = self.note(memory_id)
        assert path is not None, f"no note for {memory_id}"
        memory = notes.read(path, "project")
        assert path.read_text(encoding="utf-8") == notes.render(memory)
        return memory

    def events(self) -> int:
        conn = sqlite3.connect(self.repo / ".tether" / "index.db")
        try:
            return int(conn.execute("SELECT count(*) FROM events WHERE event = 'surfaced'").fetchone()[0])
        finally:
            conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("ui")
    home = base / "home"
    home.mkdir()
    repo = make_git_repo(base / "repo")
    init_project(repo, home)
    env = {**os.environ, "TETHER_HOME": str(home)}
    proc = subprocess.Popen(
        [str(TETHER_BIN), "ui", "--no-open"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    try:
        first = lines.get(timeout=120)
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", first)
        assert found, first
        yield Server(repo, home, found.group(0), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watch:
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    problems: list[str] = field(
        default_factory=list
    )  # console errors (a CSP violation is one) and page errors


@pytest.fixture
def page(server: Server, browser: Any) -> Iterator[tuple[Any, Watch]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    watch = Watch()

    def on_dialog(dialog: Any) -> None:
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.on("request", lambda r: watch.requests.append(r.url))
    # A refused inline script or style (CSP) is a console error; a 400 answer to a refused form is expected.
    tab.on(
        "console",
        lambda m: (
            watch.problems.append(m.text) if m.type == "error" and "status of 400" not in m.text else None
        ),
    )
    tab.on("pageerror", lambda e: watch.problems.append(str(e)))
    tab.goto(server.url)
    tab.wait_for_selector("h1")
    try:
        yield tab, watch
    finally:
        assert watch.problems == []
        context.close()


def shot(tab: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def open_memory(tab: Any, server: Server, memory_id: str) -> None:
    tab.goto(f"{server.base}/?state=all")
    tab.fill('input[name="q"]', "")
    tab.click(f'tr[data-id="{memory_id}"] a.summary')
    tab.wait_for_selector(f'article.memory[data-id="{memory_id}"]')


# -- signing in -------------------------------------------------------------------------------------------


def test_the_token_becomes_a_cookie_and_leaves_the_address_bar(
    server: Server, page: tuple[Any, Watch]
) -> None:
    tab, _ = page
    assert "token" not in tab.url and tab.url.rstrip("/") == server.base
    assert tab.evaluate("document.cookie") == ""  # HttpOnly: no script can read it
    [cookie] = tab.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_without_the_token_the_server_refuses(server: Server, browser: Any) -> None:
    context = browser.new_context()
    tab = context.new_page()
    response = tab.goto(server.base + "/")
    assert response is not None and response.status == 403
    context.close()


# -- browse ----------------------------------------------------------------------------------------------


def test_browse_search_filter_sort_and_page(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    with server.ws() as ws:
        ids = [
            ws.add(
                f"Browse fact {n} about queues", category="pref" if n % 2 else "context", files=["Makefile"]
            ).memory.id
            for n in range(55)
        ]
        zeppelin = ws.add(
            "Zeppelin hangar permits expire yearly", category="decision", files=["docs/deploy.md"]
        ).memory.id
        ws.store.record([Event(ids[4], "surfaced", ws.clock()) for _ in range(5)])
    tab.goto(server.base + "/")
    tab.fill('input[name="q"]', "zeppelin permits")
    tab.press('input[name="q"]', "Enter")
    tab.wait_for_selector(f'tr[data-id="{zeppelin}"]')
    assert tab.locator("table.memories tbody tr").count() >= 1
    shot(tab, "browse-search")
    with tab.expect_navigation():  # the next select must act on the reset page, not the one it replaces
        tab.click("text=Reset")
    tab.wait_for_selector("#count")
    tab.select_option('select[name="category"]', "pref")  # applies at once (ui.js)
    tab.wait_for_url(re.compile(r"category=pref"))
    summaries = tab.locator("table.memories tbody tr .cat").all_inner_texts()
    assert summaries and set(summaries) == {"pref"}
    tab.click('th a:has-text("surfaced")')
    tab.wait_for_url(re.compile(r"sort=surfaced"))
    assert (
        tab.locator("table.memories tbody tr").first.get_attribute("data-id") != ids[4]
    )  # ids[4] is context
    tab.select_option('select[name="category"]', "context")
    tab.wait_for_url(re.compile(r"category=context"))
    assert tab.locator("table.memories tbody tr").first.get_attribute("data-id") == ids[4]
    with tab.expect_navigation():
        tab.click("text=Reset")
    tab.wait_for_selector("#count")
    assert "page 1 of" in tab.inner_text("#count")
    tab.click('a[rel="next"]')
    tab.wait_for_url(re.compile(r"page=2"))
    assert "page 2 of" in tab.inner_text("#count")
    shot(tab, "browse")


# -- acting ----------------------------------------------------------------------------------------------


def test_edit_by_typing_and_the_note_on_disk(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    mid = server.add("Upload retries three times", files=[UPLOAD])
    open_memory(tab, server, mid)
    shot(tab, "detail")
    tab.click("text=Edit")
    tab.wait_for_selector("form.memory-form")
    tab.fill('input[name="summary"]', "Upload retries five times with backoff")
    tab.fill('textarea[name="details"]', "The backoff doubles.\nSee [[deploy]].")
    tab.select_option('select[name="category"]', "gotcha")
    tab.select_option('select[name="priority"]', "high")
    tab.fill('textarea[name="files"]', f"{UPLOAD}\ndocs/")
    shot(tab, "edit")
    tab.click('button:has-text("Save")')
    tab.wait_for_selector(".flash.ok table.diff")
    assert "Upload retries three times" in tab.inner_text(".flash.ok")
    memory = server.on_disk(mid)
    assert memory.summary == "Upload retries five times with backoff"
    assert (memory.category, memory.priority, memory.files) == ("gotcha", "high", (UPLOAD, "docs/"))
    assert memory.details == "The backoff doubles.\nSee [[deploy]]."


def test_a_secret_is_refused_as_the_cli_refuses_it(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    mid = server.add("Deploy credentials live in the vault", files=["docs/deploy.md"])
    before = server.note(mid).read_bytes()  # type: ignore[union-attr]
    tab.goto(f"{server.base}/m/{mid}/edit")
    tab.fill('textarea[name="details"]', "the key is AKIAZ7Q3VJ5KXN2WP4RM")
    tab.click('button:has-text("Save")')
    tab.wait_for_selector("#form-error")
    assert "looks like a credential" in tab.inner_text("#form-error")
    assert server.note(mid).read_bytes() == before  # type: ignore[union-attr]


def test_pin_unpin_archive_restore_by_clicks(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    mid = server.add("Cache keys include the tenant", files=[UPLOAD])
    open_memory(tab, server, mid)
    for button, check in [
        ("Pin", lambda m: m.pinned),
        ("Unpin", lambda m: not m.pinned),
        ("Archive", lambda m: m.status == "archived"),
        ("Restore", lambda m: m.status == "active"),
    ]:
        with tab.expect_navigation():  # the previous action's flash is on the page being replaced
            tab.click(f'.actions button:text-is("{button}")')
        tab.wait_for_selector(".flash.ok")
        assert check(server.on_disk(mid)), button


def test_supersede_by_typing_an_id(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    old = server.add("Deploys go through rsync", files=["docs/deploy.md"])
    new = server.add("Deploys go through make ship", files=["docs/deploy.md"])
    open_memory(tab, server, old)
    tab.fill('input[name="new_id"]', new)
    tab.click('button:has-text("Supersede")')
    tab.wait_for_selector(f'.flash.ok:has-text("superseded by {new}")')
    assert server.on_disk(old).status == "superseded"
    assert server.on_disk(new).supersedes == old
    assert "replaced by" in tab.inner_text("ul.chain")


def test_delete_through_the_confirmation_page(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    mid = server.add("A memory to delete for good", files=[UPLOAD])
    open_memory(tab, server, mid)
    tab.click("text=Delete…")
    tab.wait_for_selector("text=Delete this memory?")
    shot(tab, "delete")
    assert server.note(mid) is not None
    tab.click('button:has-text("Delete for good")')
    tab.wait_for_selector('.flash.ok:has-text("deleted")')
    assert server.note(mid) is None


def test_new_memory_by_typing(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    tab.click('nav a:has-text("New")')
    tab.wait_for_selector("form.memory-form")
    tab.fill('input[name="summary"]', "Run ruff format before committing")
    tab.select_option('select[name="category"]', "pref")
    tab.fill('textarea[name="files"]', "src/app/")
    tab.click('button:has-text("Add")')
    tab.wait_for_selector(".flash.ok")
    mid = tab.get_attribute("article.memory", "data-id")
    memory = server.on_disk(mid)
    assert (memory.summary, memory.category, memory.files, memory.origin) == (
        "Run ruff format before committing",
        "pref",
        ("src/app/",),
        "user",
    )


def test_cleanup_in_bulk(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    stale = [server.add(f"Notes on the removed module {n}", files=[f"gone/module{n}.py"]) for n in range(3)]
    tab.click('nav a:has-text("Cleanup")')
    tab.wait_for_selector("#cleanup-form")
    shot(tab, "cleanup")
    tab.click('button:has-text("Select all")')
    tab.click('button:has-text("Archive selected")')
    tab.wait_for_selector('.flash.ok:has-text("archived")')
    assert all(server.on_disk(mid).status == "archived" for mid in stale)


def test_recall_playground_shows_the_block_and_records_nothing(
    server: Server, page: tuple[Any, Watch]
) -> None:
    tab, _ = page
    mid = server.add("Upload retries need an idempotency key", category="gotcha", files=[UPLOAD])
    before = server.events()
    tab.click('nav a:has-text("Recall")')
    tab.fill('textarea[name="prompt"]', "why does upload retry twice?")
    tab.fill('input[name="file"] >> nth=0', UPLOAD)
    tab.click('button:has-text("Recall")')
    tab.wait_for_selector("#block")
    assert "=== Project memory (auto-recalled) ===" in tab.inner_text("#block") and mid in tab.inner_text(
        "#block"
    )
    assert tab.locator(f'details.card.injected[data-id="{mid}"] table.kv').is_visible()
    shot(tab, "recall")
    assert server.events() == before


def test_recall_playground_asks_as_a_first_prompt_with_the_work_in_progress(
    server: Server, page: tuple[Any, Watch]
) -> None:
    tab, _ = page
    mid = server.add("Upload retries need an idempotency key", category="gotcha", files=[UPLOAD])
    (server.repo / UPLOAD).write_text("def upload():\n    return 2\n", encoding="utf-8")
    before = server.events()
    tab.click('nav a:has-text("Recall")')
    tab.fill('textarea[name="prompt"]', "now add tests")
    tab.check('input[name="work"]')
    tab.click('button:has-text("Recall")')
    tab.wait_for_selector("#work")
    assert tab.inner_text("#work") == f"work in progress: {UPLOAD} (used)"
    assert mid in tab.inner_text("#block") and tab.is_checked('input[name="work"]')
    assert server.events() == before


def test_stats_are_svg_charts(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    mid = server.add("Stats fact about the queue", category="decision", files=["Makefile"])
    with server.ws() as ws:
        now = ws.clock()
        ws.store.record(
            [Event(mid, "surfaced", now - timedelta(days=d)) for d in range(5)] + [Event(mid, "acted", now)]
        )
    tab.click('nav a:has-text("Stats")')
    tab.wait_for_selector("svg.chart.bar")
    assert tab.locator("svg.chart").count() >= 7 and tab.locator("svg.chart polyline").count() >= 2
    heights = tab.locator("svg.chart.bar rect.bar").evaluate_all("rs => rs.map(r => r.getBBox().height)")
    assert any(h > 0 for h in heights)
    shot(tab, "stats")


def test_graph_filters_clusters_and_a_click_opens_the_memory(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    a = server.add("Graph: deploys go through make ship", category="decision", files=["docs/deploy.md"])
    b = server.add(
        "Graph: deploy checklist",
        details=f"Follow [[{a}]] first.",
        category="gotcha",
        files=["docs/deploy.md"],
    )
    tab.click('nav a:has-text("Graph")')
    tab.wait_for_selector('canvas#graph[data-ready="1"]')
    status = tab.inner_text("#graph-status")
    assert "connected clusters" in status
    shown = int(status.split()[0])
    tab.uncheck('input[name="cat"][value="gotcha"]')
    tab.wait_for_function(f"parseInt(document.getElementById('graph-status').textContent) < {shown}")
    tab.check('input[name="cat"][value="gotcha"]')
    tab.wait_for_function(f"parseInt(document.getElementById('graph-status').textContent) === {shown}")
    tab.uncheck('input[name="kind"][value="file"]')
    tab.check('input[name="kind"][value="file"]')
    tab.fill("#graph-find", b)
    tab.wait_for_function("document.getElementById('graph-status').textContent.includes('selected')")
    shot(tab, "graph")
    box = tab.locator("canvas#graph").bounding_box()
    tab.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.wait_for_url(re.compile(rf"/m/{b}$"))
    tab.wait_for_selector(f'article.memory[data-id="{b}"]')


# -- anchors and the pending review queue ----------------------------------------------------------------

BILLING = "src/app/billing.py"


def test_an_anchored_memory_shows_its_anchor(server: Server, page: tuple[Any, Watch]) -> None:
    tab, _ = page
    (server.repo / BILLING).write_text("import os\n\n\ndef charge(card):\n    return 1\n", encoding="utf-8")
    mid = server.add("Charge is idempotent per order", category="gotcha", at=[f"{BILLING}::charge"])
    open_memory(tab, server, mid)
    anchor = tab.locator("ul.anchors li.anchor")
    assert anchor.count() == 1
    text = anchor.inner_text()
    assert f"{BILLING}::charge" in text and "found lines 4-5" in text and "lost" not in text
    shot(tab, "detail-anchors")
    assert [a.spec() for a in server.on_disk(mid).anchors] == [f"{BILLING}::charge"]


def open_pending(tab: Any, server: Server) -> None:
    tab.goto(server.base + "/")
    tab.wait_for_selector("#count")
    with tab.expect_navigation():
        tab.select_option('select[name="state"]', "pending")  # applies at once (ui.js)
    tab.wait_for_selector('main h1:text-is("Pending review")')


def test_approve_an_agents_pin_by_a_click(server: Server, page: tuple[Any, Watch]) -> None:
    from tether.lifecycle.review import request_pin

    tab, _ = page
    mid = server.add("Staging listens on port 6443", files=[UPLOAD])
    with server.ws() as ws:
        assert request_pin(ws, mid, True)[1]
    assert not server.on_disk(mid).pinned
    open_pending(tab, server)
    row = tab.locator(f'tr[data-request="{mid}"]')
    assert "an agent asked to pin it" in row.inner_text() and "Staging listens" in row.inner_text()
    shot(tab, "pending")
    with tab.expect_navigation():
        row.locator('button:text-is("Approve")').click()
    tab.wait_for_selector('.flash.ok:has-text("approved")')
    assert "(pinned)" in tab.inner_text(".flash.ok")
    assert server.on_disk(mid).pinned
    assert tab.locator(f'tr[data-request="{mid}"]').count() == 0
    assert not list((server.repo / ".tether" / "pending").glob(f"*-{mid}.json"))


def test_reject_an_agents_pinned_memory_by_a_click_writes_nothing(
    server: Server, page: tuple[Any, Watch]
) -> None:
    tab, _ = page
    with server.ws() as ws:
        added = ws.add("Agent: always deploy on Fridays", pinned=True, origin="agent", files=[UPLOAD])
    assert added.pending == ("it is pinned",)
    mid = added.memory.id
    notes_dir = server.repo / ".tether" / "memories"
    before = {p.name: p.read_bytes() for p in notes_dir.glob("*.md")}
    open_pending(tab, server)
    row = tab.locator(f'tr[data-request="{mid}"]')
    assert "it is pinned" in row.inner_text() and "agent" in row.inner_text()
    with tab.expect_navigation():
        row.locator('button:text-is("Reject")').click()
    tab.wait_for_selector('.flash.ok:has-text("rejected")')
    assert "nothing was written" in tab.inner_text(".flash.ok")
    assert server.note(mid) is None
    assert {p.name: p.read_bytes() for p in notes_dir.glob("*.md")} == before
    assert not list((server.repo / ".tether" / "pending").glob(f"*-{mid}.json"))
    with server.ws() as ws:
        assert ws.store.get(mid) is None


# -- memory text is data ---------------------------------------------------------------------------------


def test_markup_in_memory_text_renders_inert_on_every_page(server: Server, page: tuple[Any, Watch]) -> None:
    tab, watch = page
    old = datetime.now(UTC) - timedelta(days=200)
    with server.ws(old) as ws:
        ids = [
            ws.add(
                xss, details=f"{xss} [[{xss}]]", category="gotcha", files=[UPLOAD, f"gone/{xss}.py"]
            ).memory.id
            for xss in XSS
        ]
        ws.store.record([Event(ids[0], "surfaced", old, "s", 1, {"receipt": XSS[1]})])
        assert ws.add(XSS[1], details=XSS[0], pinned=True, origin="agent", session=XSS[0]).pending
    pages = [
        "/?state=pending",
        "/?state=all&sort=age",
        "/?q=alert",
        "/graph",
        "/stats",
        "/cleanup",
        f"/recall?prompt=alert&file={UPLOAD}",
    ]
    pages += [f"/m/{mid}{suffix}" for mid in ids for suffix in ("", "/edit", "/delete")]
    for number, path in enumerate(pages):
        tab.goto(server.base + path)
        tab.wait_for_selector("main h1")
        if path == "/graph":
            tab.wait_for_selector('canvas#graph[data-ready="1"]')
            tab.fill("#graph-find", ids[1])  # the tooltip and labels draw the text too
        assert tab.locator("main img").count() == 0, path
        assert tab.locator("main script").count() <= 1, path  # only the graph's JSON data block
        if number < 2:
            assert XSS[0] in tab.inner_text("main"), path  # shown as text, exactly
    shot(tab, "xss")
    assert watch.dialogs == []
    assert not [u for u in watch.requests if re.search(r"/x(\?|$)", u)]
