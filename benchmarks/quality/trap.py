"""The seed article's trap, as a pass/fail line: a README that lies, two true notes, one question.

A run passes when the real `tether hook claude UserPromptSubmit` injects 6443, callisto and make ship-v2
and none of the README's values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

QUESTION = "what port does staging run on, which host do we deploy to, and with what command?"
TRUE = ("6443", "callisto", "make ship-v2")
LIES = ("8080", "europa", "deploy.sh")


def run_trap() -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="tether-trap-") as tmp:
        repo, home = Path(tmp) / "repo", Path(tmp) / "home"
        repo.mkdir()
        env = {**os.environ, "TETHER_HOME": str(home)}
        tether = [sys.executable, "-m", "tether"]

        def run(*args: str, stdin: str | None = None) -> str:
            done = subprocess.run(
                args, cwd=repo, env=env, input=stdin, capture_output=True, text=True, check=True
            )
            return done.stdout

        run("git", "init", "-q")
        (repo / "README.md").write_text("Staging runs on port 8080 on host europa. Deploy with ./deploy.sh\n")
        run(*tether, "init")
        run(*tether, "add", "Staging API is on port 6443, deploys land on host callisto", "-c", "context")
        run(*tether, "add", "Deploys go exclusively through make ship-v2, never raw rsync", "-c", "decision")
        payload = {
            "session_id": "trap",
            "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": QUESTION,
        }
        out = run(*tether, "hook", "claude", "UserPromptSubmit", stdin=json.dumps(payload))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
    missing = [fact for fact in TRUE if fact not in context]
    lies = [lie for lie in LIES if lie in context]
    ok = not missing and not lies
    detail = "all three true facts, none of the README's" if ok else f"missing {missing}, lies {lies}"
    return ok, detail


if __name__ == "__main__":
    passed, why = run_trap()
    print(f"trap: {'PASS' if passed else 'FAIL'} ({why})")
    sys.exit(0 if passed else 1)
