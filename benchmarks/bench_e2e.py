"""What tether costs inside the real Claude Code: wall time per hook event and characters added to requests.

The same scripted session (a prompt, a Read, an Edit, a final answer) runs in three set-ups built the same way
(`tether init`, the same memories, one of them a gotcha on the file the session edits):

- `bare`: tether is not installed (the baseline, measured in the same run);
- `hook`: `tether install claude --project`, then the MCP server removed (hooks only);
- `full`: `tether install claude --project` with the MCP tools allowed (what a user gets).

Runs are interleaved so a busy machine slows every set-up alike. Per set-up it prints the median wall time and
its ratio to `bare`, how many hooks ran, the median duration Claude Code logged for each hook event (from
`--debug-file`), the MCP server's connect time, and the characters each request carries beyond `bare`'s (the
workspace path is normalized; tokens are estimated at 4 characters each).

    .venv/bin/python benchmarks/bench_e2e.py [--runs 3 | --quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.e2e.conftest import (  # noqa: E402  (the harness lives with the tests)
    INSTALLER,
    REGISTRY_UNREACHABLE,
    ClaudeRun,
    Workspace,
    launch_claude,
    make_workspace,
)
from tests.e2e.mock_anthropic import text, tool_use  # noqa: E402

MODES = ("bare", "hook", "full")  # equal lengths: paths, and so request bodies, differ only by tether
PROMPT = "add a currency parameter"
CHARGE_PY = "def charge(amount, key):\n    return submit(amount, key)\n"
MEMORIES = (
    ("charge() must stay idempotent: a retry reuses the idempotency key", "gotcha", "src/billing/charge.py"),
    ("Staging API is on port 6443, deploys land on host callisto", "context", None),
    ("Deploys go exclusively through make ship-v2, never raw rsync", "decision", None),
    ("Money is integer cents everywhere, never floats", "pref", "src/billing/"),
)
HOOK_LINE = re.compile(
    r"Hooks: (?P<event>[\w:|]+) \[(?P<cmd>[^\]]*)\] finished with status (?P<rc>\d+) \((?P<ms>\d+)ms\)"
)
SESSION_END = re.compile(r"(?P<event>SessionEnd)(?::\w+)? \[(?P<cmd>[^\]]*)\] completed with status")
MCP_CONNECT = re.compile(r'MCP server "tether": Successfully connected .* in (?P<ms>\d+)ms')
CONTEXT = re.compile(r"(?:^|\n\n)([\w:]+ hook additional context: .*?)(?=\n\n|$)", re.S)


def claude_bin() -> Path | None:
    """The pinned Claude Code (installed into .cache/ once); None when it is absent and npm is unreachable."""
    done = subprocess.run([str(INSTALLER)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode == REGISTRY_UNREACHABLE:
        return None
    if done.returncode != 0:
        raise SystemExit(f"{INSTALLER} exited {done.returncode}: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


def build(root: Path, mode: str) -> Workspace:
    ws = make_workspace(root, {"README.md": "# billing\n", "src/billing/charge.py": CHARGE_PY})
    ws.run("tether", "init")
    for summary, category, path in MEMORIES:
        ws.run("tether", "add", summary, "--category", category, *(["--file", path] if path else []))
    if mode != "bare":
        ws.run("tether", "install", "claude", "--project")
        if mode == "hook":
            ws.mcp_config_path.unlink()
        else:
            ws.allow_tools("mcp__tether__memory_search", "mcp__tether__memory_get")
    ws.commit("setup")
    return ws


def session(claude: Path, ws: Workspace, run_dir: Path) -> ClaudeRun:
    target = str(ws.repo / "src/billing/charge.py")
    edit = {
        "file_path": target,
        "old_string": "def charge(amount, key):",
        "new_string": "def charge(amount, key, cur):",
    }
    script = [
        [tool_use("Read", {"file_path": target}, tool_id="toolu_read")],
        [tool_use("Edit", edit, tool_id="toolu_edit")],
        [text("Done.")],
    ]
    run = launch_claude(claude, ws.repo, ws.home, PROMPT, script, run_dir=run_dir)
    if run.returncode != 0 or len(run.requests) != 3:
        raise SystemExit(f"the scripted session did not complete:\n{run.describe()}")
    return run


def normalized(body: dict[str, Any], root: Path) -> str:
    return json.dumps(body, ensure_ascii=False).replace(str(root), "<ROOT>")


def measure(claude: Path, runs: int, scratch: Path) -> dict[str, Any]:
    seconds: dict[str, list[float]] = defaultdict(list)
    hook_ms: dict[str, dict[str, list[int]]] = {m: defaultdict(list) for m in MODES}
    hook_count: dict[str, list[int]] = defaultdict(list)
    mcp_ms: list[int] = []
    chars: dict[str, list[list[int]]] = defaultdict(list)
    contexts: dict[str, int] = {}
    for index in range(runs):
        for mode in MODES:
            root = scratch / f"{mode}{index}"
            ws = build(root, mode)
            run = session(claude, ws, root / "run")
            seconds[mode].append(run.seconds)
            debug = run.debug_text()
            found = [m for m in HOOK_LINE.finditer(debug) if "tether hook" in m["cmd"]]
            for match in found:
                hook_ms[mode][match["event"]].append(int(match["ms"]))
            ends = [m for m in SESSION_END.finditer(debug) if "tether hook" in m["cmd"]]
            hook_count[mode].append(len(found) + len(ends))
            mcp_ms.extend(int(m["ms"]) for m in MCP_CONNECT.finditer(debug))
            chars[mode].append([len(normalized(body, ws.root)) for body in run.requests])
            if mode == "full" and index == 0:
                for body_index, body in enumerate(run.requests):
                    for message in body["messages"]:
                        if message["role"] != "system":
                            continue
                        content = message["content"]
                        texts = (
                            [content] if isinstance(content, str) else [b.get("text", "") for b in content]
                        )
                        for chunk in texts:
                            for ctx in CONTEXT.findall(chunk):
                                contexts[f"request {body_index + 1}: {ctx[:60]}…"] = len(ctx)
    return {
        "seconds": seconds,
        "hook_ms": hook_ms,
        "hook_count": hook_count,
        "mcp_ms": mcp_ms,
        "chars": chars,
        "contexts": contexts,
    }


def report(data: dict[str, Any], runs: int) -> dict[str, Any]:
    base = statistics.median(data["seconds"]["bare"])
    out: dict[str, Any] = {"runs": runs, "modes": {}}
    base_chars = [statistics.median(col) for col in zip(*data["chars"]["bare"], strict=True)]
    print(f"Claude Code session: prompt, Read, Edit, answer; {runs} runs per set-up, interleaved\n")
    print(
        f"{'set-up':<6} {'median s':>9} {'× bare':>7} {'added s':>8} {'hooks':>6} {'s/hook':>7}"
        "  added chars per request (≈tokens)"
    )
    for mode in MODES:
        median = statistics.median(data["seconds"][mode])
        hooks = statistics.median(data["hook_count"][mode]) if data["hook_count"][mode] else 0
        # Only the hooks-only set-up divides cleanly: `full` also waits for the MCP server to start.
        per_hook = (median - base) / hooks if hooks and mode == "hook" else None
        mode_chars = [statistics.median(col) for col in zip(*data["chars"][mode], strict=True)]
        added = [round(c - b) for c, b in zip(mode_chars, base_chars, strict=True)]
        shown = ", ".join(f"{a:+d} (≈{a // 4:+d})" for a in added)
        per = "—" if per_hook is None else f"{per_hook:.3f}"
        print(
            f"{mode:<6} {median:>9.2f} {median / base:>7.2f} {median - base:>+8.2f} {hooks:>6.0f} {per:>7}  {shown}"
        )
        out["modes"][mode] = {
            "median_seconds": round(median, 3),
            "ratio_to_bare": round(median / base, 3),
            "added_seconds": round(median - base, 3),
            "hooks_per_session": hooks,
            "added_seconds_per_hook": None if per_hook is None else round(per_hook, 4),
            "added_chars_per_request": added,
            "seconds": [round(s, 3) for s in data["seconds"][mode]],
        }
    print("\nHook durations Claude Code logged (median ms, set-up full / hook):")
    events = sorted(set(data["hook_ms"]["full"]) | set(data["hook_ms"]["hook"]))
    out["hook_ms"] = {}
    for event in events:
        full, hook = data["hook_ms"]["full"].get(event, []), data["hook_ms"]["hook"].get(event, [])
        med_full = statistics.median(full) if full else None
        med_hook = statistics.median(hook) if hook else None
        out["hook_ms"][event] = {"full": med_full, "hook": med_hook}
        print(f"  {event:<18} {med_full!s:>6} / {med_hook!s:<6} (n={len(full)}/{len(hook)})")
    if data["mcp_ms"]:
        mcp = statistics.median(data["mcp_ms"])
        out["mcp_connect_ms"] = mcp
        print(f"  MCP server connect {mcp:>6.0f} ms (the first request waits for it in this harness)")
    print("\nHook context in the requests of one `full` session (characters):")
    for where, size in data["contexts"].items():
        print(f"  {size:>5}  {where}")
    out["contexts"] = data["contexts"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="sessions per set-up (default 3)")
    parser.add_argument("--quick", action="store_true", help="one session per set-up")
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    claude = claude_bin()
    if claude is None:
        print("skipped: Claude Code is not installed and the npm registry is unreachable")
        return
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        out = report(measure(claude, args.runs, Path(tmp)), args.runs)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
