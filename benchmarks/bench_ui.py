"""How fast `tether ui` answers, beside a static file served by the same server in the same run.

    .venv/bin/python benchmarks/bench_ui.py [--sizes 1000,2000,10000] [--runs 5] [--quick]

For each size, a git repository with that many memories as real notes (wikilinks, files shared by a few
memories each, surfaced/acted events) is indexed once; then `tether ui --no-open` is started and measured:

1. start → first byte: from spawning the process to the first byte of `/` (token exchanged);
2. over HTTP (no browser), interleaved in one loop: `/static/ui.css`, the list page `/`, `/graph`;
3. in headless chromium (Debian's), interleaved: the static file loaded, the list page to its first row
   visible, the graph page to its canvas drawn and clickable (`data-ready`).

Each line prints the p50 and its ratio to the static file of the same loop. Needs `playwright` and
`/usr/bin/chromium` for part 3 (skipped without them).
"""

from __future__ import annotations

import argparse
import http.client
import os
import queue
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tether.model.memory import Memory, new_id
from tether.notes import format as notes
from tether.project import init_project
from tether.store.base import Event
from tether.workspace import Workspace

TETHER = Path(sys.executable).with_name("tether")
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
AREAS = [
    "auth",
    "billing",
    "upload",
    "search",
    "cache",
    "queue",
    "api",
    "db",
    "ui",
    "deploy",
    "metrics",
    "mail",
]
VERBS = ["retries", "validates", "caches", "locks", "batches", "logs", "signs", "streams"]
CATEGORIES = ["pref", "decision", "gotcha", "context"]


def make_project(base: Path, size: int, seed: int = 7) -> tuple[Path, Path]:
    """A repo with `size` memory notes written directly (fast), then indexed by one `Workspace.open`."""
    rng = random.Random(seed)
    root, home = base / "repo", base / "home"
    home.mkdir(parents=True)
    (root / "src").mkdir(parents=True)
    files = [
        f"src/{area}/{name}.py" for area in AREAS for name in ("core", "views", "models", "tasks", "util")
    ]
    for path in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=root, check=True, env=env)
    paths, _ = init_project(root, home)
    directory = paths.project_notes
    assert directory is not None
    start = datetime(2026, 6, 1, tzinfo=UTC)
    ids = [new_id() for _ in range(size)]
    for n, mid in enumerate(ids):
        area, verb = rng.choice(AREAS), rng.choice(VERBS)
        links = " ".join(f"[[{rng.choice(ids)}]]" for _ in range(rng.choice((0, 0, 1, 2))))
        memory = Memory(
            id=mid,
            summary=f"{area} {verb} item {n}: keep the {rng.choice(AREAS)} contract",
            details=f"Why: the {area} path {verb} under load. {links}",
            category=rng.choice(CATEGORIES),
            files=tuple(sorted({rng.choice(files) for _ in range(rng.choice((1, 1, 2)))})),
            created=start + timedelta(minutes=n),
            updated=start + timedelta(minutes=n),
        )
        (directory / notes.note_name(memory)).write_text(notes.render(memory), encoding="utf-8")
    with Workspace.open(root, home=home) as ws:
        now = ws.clock()
        events = []
        for mid in rng.sample(ids, min(size, 500)):
            for day in range(rng.randint(1, 6)):
                events.append(Event(mid, "surfaced", now - timedelta(days=day * 3), "s", day))
            if rng.random() < 0.4:
                events.append(Event(mid, "acted", now - timedelta(days=1), "s", 1, {"via": "ack"}))
        ws.store.record(events)
    return root, home


class Server:
    def __init__(self, root: Path, home: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(TETHER), "ui", "--no-open"],
            cwd=root,
            env={**os.environ, "TETHER_HOME": str(home)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout or []], daemon=True).start()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", lines.get(timeout=120))
        assert found
        self.port, self.token = int(found.group(1)), found.group(2)
        self.url = found.group(0)
        self.cookie = ""

    def login(self) -> float:
        """Exchange the token for the cookie, then time the first byte of `/` (from the spawn)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("GET", f"/?token={self.token}")
        response = conn.getresponse()
        response.read()
        self.cookie = (response.getheader("set-cookie") or "").split(";")[0]
        conn.request("GET", "/", headers={"Cookie": self.cookie})
        response = conn.getresponse()
        response.read(1)
        first = time.perf_counter() - self.started
        response.read()
        conn.close()
        return first

    def fetch(self, path: str) -> float:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        start = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": self.cookie})
        response = conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - start
        conn.close()
        assert response.status == 200 and body, (path, response.status)
        return elapsed

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def p50(values: list[float]) -> float:
    return statistics.median(values)


def report(label: str, values: list[float], baseline: list[float]) -> None:
    print(
        f"  {label:<34} p50 {p50(values) * 1000:8.1f} ms   ×{p50(values) / p50(baseline):7.1f} the static file"
    )


def http_loop(server: Server, runs: int) -> None:
    times: dict[str, list[float]] = {"/static/ui.css": [], "/": [], "/graph": []}
    for path in times:
        server.fetch(path)  # warm: the graph layout is computed once per change of the graph
    for _ in range(runs):
        for path in times:
            times[path].append(server.fetch(path))
    base = times["/static/ui.css"]
    report("HTTP static file /static/ui.css", base, base)
    report("HTTP list page /", times["/"], base)
    report("HTTP graph page /graph", times["/graph"], base)


def browser_loop(server: Server, runs: int) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  (browser part skipped: pip install playwright)")
        return
    if not CHROMIUM.exists():
        print("  (browser part skipped: apt-get install -y chromium)")
        return
    base = f"http://127.0.0.1:{server.port}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(server.url)
        page.wait_for_selector("h1")
        steps = {
            "static": (f"{base}/static/ui.css", None),
            "list": (f"{base}/", "table.memories tbody tr"),
            "graph": (f"{base}/graph", 'canvas#graph[data-ready="1"]'),
        }
        times: dict[str, list[float]] = {k: [] for k in steps}
        for run in range(runs + 1):
            for name, (address, selector) in steps.items():
                start = time.perf_counter()
                page.goto(address, wait_until="load" if selector is None else "domcontentloaded")
                if selector:
                    page.wait_for_selector(selector)
                if run:  # the first round warms caches
                    times[name].append(time.perf_counter() - start)
        nodes = page.evaluate("JSON.parse(document.getElementById('graph-data').textContent).nodes.length")
        browser.close()
    report("browser static file loaded", times["static"], times["static"])
    report("browser list page, first row shown", times["list"], times["static"])
    report(f"browser graph ({nodes} nodes) interactive", times["graph"], times["static"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,10000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1,000 and 2,000 memories, 3 runs")
    args = parser.parse_args()
    sizes = [1000, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 3 if args.quick else args.runs
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            built = time.perf_counter()
            root, home = make_project(Path(tmp), size)
            print(f"\n{size} memories (built and indexed in {time.perf_counter() - built:.1f} s)")
            starts = []
            for _ in range(3):
                server = Server(root, home)
                starts.append(server.login())
                server.stop()
            print(f"  {'server start → first byte of /':<34} p50 {p50(starts) * 1000:8.1f} ms")
            server = Server(root, home)
            server.login()
            try:
                http_loop(server, runs)
                browser_loop(server, runs)
            finally:
                server.stop()


if __name__ == "__main__":
    main()
