"""`tether demo` replays its scripted session through the real hook processes and shows each step."""

from __future__ import annotations

import re
from pathlib import Path

from tether.adapters.cli.demo import run_demo


def test_demo_shows_recall_gotchas_cochange_and_deny_once(tmp_path: Path, home: Path) -> None:
    lines: list[str] = []
    repo = run_demo(tmp_path, echo=lines.append)
    out = "\n".join(lines)
    assert (repo / ".tether" / "memories").is_dir()
    first_prompt = (
        out.split("## First prompt")[1].split("##")[0].split("(tether hook claude UserPromptSubmit)")[1]
    )
    for fact in ("6443", "callisto", "make ship-v2"):
        assert fact in first_prompt
    # As words: a random memory id may hold "8080" (8080b358 did).
    for lie in ("8080", "europa", "deploy.sh"):
        assert not re.search(rf"\b{re.escape(lie)}\b", first_prompt)
    assert "=== Project memory (pinned) ===" in out
    assert '· gotcha "Refund amounts are integer cents, never floats"' in out
    assert "co-change(src/billing/charge.py)" in out
    assert out.count("DENIED: tether: src/billing/charge.py has known gotchas at line 1") == 1
    denied = out.split("A second session edits charge()")[1].split("##")[0]
    assert '· ★ gotcha on charge(): "charge() must stay idempotent' in denied
    assert "Receipts show cents" not in denied and "+1 more gotcha anchored elsewhere" in denied
    receipt = out.split("Then it edits receipt()")[1].split("##")[0]
    assert '   · gotcha on receipt(): "Receipts show cents' in receipt  # normal priority: context, no pause
    assert "charge() must stay idempotent" not in receipt
    assert (
        "It retries the same edit: allowed\n   (tether hook claude PreToolUse)\n   (nothing injected)" in out
    )
    resumed = out.split("A third session starts on uncommitted work")[1].split("##")[0]
    assert "API errors use the ApiError envelope" in resumed and "via dir(src/api/)" in resumed
    named = out.split("A fourth session's first prompt names charge.py")[1].split("\n# 4.")[0]
    assert "Receipts show cents as money()" in named and "ApiError" not in named  # the name, not the tree
