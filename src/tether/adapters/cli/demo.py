"""`tether demo`: a scripted agent session on a sample repo, through the real hook commands.

It builds a small git repository (with a README that lies about deploys, and a history in which billing
files change together), records a few memories tied to files (two gotchas anchored to the functions they
are about), and replays what Claude Code would send to
`tether hook claude <event>` at each step, printing what the agent would be given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

_FILES = {
    "README.md": "# shop\n\nStaging runs on port 8080 on host europa. Deploy with `./deploy.sh`.\n",
    "src/billing/charge.py": (
        "def charge(order, key):\n    return gateway.post(order.total, idempotency_key=key)\n\n\n"
        'def receipt(order):\n    return f"paid {order.total}"\n'
    ),
    "src/billing/refund.py": "def refund(order, cents):\n    return gateway.refund(order.id, cents)\n",
    "src/api/routes.py": "from billing.charge import charge\n\n\ndef pay(request):\n    return charge(request.order, request.key)\n",
    "src/api/errors.py": "class ApiError(Exception):\n    pass\n",
    "deploy/staging.yaml": "port: 6443\nhost: callisto\n",
}
# (summary, category, files, extra flags)
_MEMORIES: list[tuple[str, str, list[str], list[str]]] = [
    ("Staging API is on port 6443, deploys land on host callisto", "context", ["deploy/staging.yaml"], []),
    ("Deploys go exclusively through make ship-v2, never raw rsync", "decision", [], []),
    (
        "charge() must stay idempotent: a retry reuses the same idempotency key",
        "gotcha",
        [],
        ["--priority", "high", "--at", "src/billing/charge.py::charge"],
    ),
    (
        "Receipts show cents as money(): never format order.total by hand",
        "gotcha",
        [],
        ["--at", "src/billing/charge.py::receipt"],
    ),
    ("Refund amounts are integer cents, never floats", "gotcha", ["src/billing/refund.py"], []),
    ("API errors use the ApiError envelope {code, message, details}", "pref", ["src/api/"], []),
    ("Run `make test` before committing: CI runs the same target", "pref", [], ["--pin"]),
]


def run_demo(directory: Path | None = None, echo: Callable[[str], None] = print) -> Path:
    """Build the sample repo in `directory` (default: a new temp dir), replay the session, return the repo."""
    base = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="tether-demo-"))
    repo, home = base / "shop", base / "tether-home"
    repo.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "TETHER_HOME": str(home),
        "GIT_AUTHOR_NAME": "demo",
        "GIT_AUTHOR_EMAIL": "demo@example.com",
        "GIT_COMMITTER_NAME": "demo",
        "GIT_COMMITTER_EMAIL": "demo@example.com",
    }

    tether = [sys.executable, "-m", "tether"]

    def sh(*args: str, show: bool = False) -> str:
        if show:
            shown = ["tether", *args[3:]] if list(args[:3]) == tether else list(args)
            echo("$ " + " ".join(f"'{a}'" if " " in a else a for a in shown))
        out = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {out.stderr.strip()}")
        if show and out.stdout.strip():
            echo(textwrap.indent(out.stdout.rstrip(), "  "))
        return out.stdout

    echo(f"# A sample repo at {repo}")
    sh("git", "init", "-q")
    for path, text in _FILES.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
    sh("git", "add", "-A")
    sh("git", "commit", "-qm", "shop: first version")
    for n in range(3):  # history in which charge.py and refund.py change together
        for path in ("src/billing/charge.py", "src/billing/refund.py"):
            with open(repo / path, "a", encoding="utf-8") as handle:
                handle.write(f"# revision {n}\n")
        sh("git", "commit", "-qam", f"billing: revision {n}")

    echo("\n# 1. Remember what the project has learned, tied to the files (and functions) it is about")
    sh(*tether, "init", show=True)
    ids: dict[str, str] = {}
    for summary, category, files, flags in _MEMORIES:
        args = [*tether, "add", summary, "--category", category, *flags]
        for path in files:
            args += ["--file", path]
        ids[summary] = json.loads(sh(*args, "--json"))["id"]
    sh(*tether, "list", show=True)

    echo("\n# 2. Search by words and meaning")
    sh(*tether, "search", "what format do errors use?", show=True)

    session = "demo-session"

    def hook(event: str, payload: dict[str, Any], title: str) -> None:
        body = {
            "session_id": session,
            "transcript_path": str(base / "transcript.jsonl"),
            "cwd": str(repo),
            "hook_event_name": event,
            **payload,
        }
        out = subprocess.run(
            [*tether, "hook", "claude", event],
            cwd=repo,
            env=env,
            input=json.dumps(body),
            capture_output=True,
            text=True,
            check=False,
        )
        echo(f"\n## {title}\n   (tether hook claude {event})")
        shown = _describe(out.stdout)
        echo(textwrap.indent(shown or "(nothing injected)", "   "))

    echo("\n# 3. An agent session, as Claude Code runs it through the hooks")
    hook("SessionStart", {"source": "startup"}, "Session starts: pinned memories")
    hook(
        "UserPromptSubmit",
        {
            "prompt": "The staging healthcheck is flapping. What port does staging run on, "
            "which host do we deploy to, and with what command?"
        },
        "First prompt: recalled before the model's first turn (the README's 8080/europa/deploy.sh never appear)",
    )
    refund = str(repo / "src/billing/refund.py")
    hook(
        "PostToolUse",
        {
            "tool_name": "Read",
            "tool_input": {"file_path": refund},
            "tool_response": {"type": "text", "file": {"filePath": refund}},
        },
        "The agent reads src/billing/refund.py: its gotcha lands beside the file",
    )
    hook(
        "UserPromptSubmit",
        {"prompt": "Make refunds retry when the gateway times out."},
        "Next prompt: charge.py changes with refund.py in git history, so its gotcha comes along",
    )
    charge = str(repo / "src/billing/charge.py")
    edit = {
        "tool_name": "Edit",
        "tool_input": {"file_path": charge, "old_string": "key", "new_string": "key2"},
    }
    hook(
        "PreToolUse",
        edit,
        "The agent edits src/billing/charge.py: it has seen the gotcha, so the edit goes ahead",
    )
    session = "demo-session-2"
    hook(
        "PreToolUse",
        edit,
        "A second session edits charge() without reading it: deny-once names charge()'s gotcha, not receipt()'s",
    )
    hook("PreToolUse", edit, "It retries the same edit: allowed")
    receipt = {
        "tool_name": "Edit",
        "tool_input": {
            "file_path": charge,
            "old_string": '    return f"paid {order.total}"',
            "new_string": '    return f"paid {order.total / 100}"',
        },
    }
    hook("PreToolUse", receipt, "Then it edits receipt(): the gotcha anchored there lands, once")
    (repo / "src/api/errors.py").write_text(
        "class ApiError(Exception):\n    status = 500\n", encoding="utf-8"
    )
    session = "demo-session-3"
    hook(
        "UserPromptSubmit",
        {"prompt": "Let's pick this up where I left off."},
        "A third session starts on uncommitted work in src/api/errors.py: its first prompt says nothing of its "
        "own, so the work in the tree stands for the touched files",
    )
    session = "demo-session-4"
    hook(
        "UserPromptSubmit",
        {"prompt": "Tidy up charge.py a little before the release."},
        "A fourth session's first prompt names charge.py: the file it names stands for the touched files, ahead of "
        "the work in the tree",
    )

    echo("\n# 4. Why did a memory surface? Receipts and the full breakdown")
    sh(*tether, "explain", ids[_MEMORIES[2][0]], "--file", "src/billing/refund.py", show=True)
    sh(*tether, "recall", "--file", "src/billing/charge.py::receipt", "--no-record", show=True)
    script = Path(sys.executable).with_name("tether")
    command = str(script) if script.exists() else f"{sys.executable} -m tether"
    echo(
        f"\nThe sample repo stays at {repo}; try:\n  cd {repo} && TETHER_HOME={home} {command} recall -p 'how do refunds work?'"
    )
    return repo


def _describe(stdout: str) -> str:
    if not stdout.strip():
        return ""
    data = json.loads(stdout)
    out = data.get("hookSpecificOutput", {})
    if out.get("permissionDecision") == "deny":
        return "DENIED: " + str(out.get("permissionDecisionReason", ""))
    return str(out.get("additionalContext", ""))
