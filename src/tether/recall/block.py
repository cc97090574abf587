"""The text an agent is given: the injected block's header, one line per memory, and its footer.

The prompt hook injects it, the recall playground of the web UI shows it, and the quality benchmark counts
its tokens; one definition keeps the three the same.

>>> block([])
''
>>> block(["[gotcha] 0a1b2c3d — charge() must stay idempotent (via file)"]).splitlines()[0]
'=== Project memory (auto-recalled) ==='
"""

from __future__ import annotations

from collections.abc import Sequence

HEADER = "=== Project memory (auto-recalled) ==="
PINNED_HEADER = "=== Project memory (pinned) ==="
FOOTER = "Call the memory_get tool with an id for the full note; memory_search looks further."
FALLBACK = "Project memory is available: search project memory with memory_search before you start."


def block(lines: Sequence[str], header: str = HEADER) -> str:
    """The block for these memory lines (`Recalled.line()`), or "" when there are none: say nothing."""
    if not lines:
        return ""
    return "\n".join([header, *(f"- {line}" for line in lines), FOOTER])
