"""`tether stats` (DESIGN §6): per category, how often memories were surfaced and acted on."""

from __future__ import annotations

from typing import Any

from tether.memories import Memories
from tether.model.memory import CATEGORIES, Memory
from tether.store.base import Query, Telemetry


def stats(ws: Memories, top: int = 5) -> dict[str, Any]:
    """Per category: active, archived, superseded, surfaced, acted and follow-through; the most ignored
    and most used memories.

    Follow-through is the share of the memories shown at least once that were acted on at least once
    (None when none was shown). Session memory is left out: it expires with its session.
    """
    memories = [m for m in ws.find(Query(status=None)) if m.scope != "session"]
    telemetry = ws.store.telemetry([m.id for m in memories])
    rows: dict[str, dict[str, Any]] = {}
    for category in (*CATEGORIES, "all"):
        rows[category] = {"active": 0, "archived": 0, "superseded": 0, "surfaced": 0, "acted": 0}
        rows[category].update({"_shown": 0, "_followed": 0})
    for memory in memories:
        tel = telemetry.get(memory.id) or Telemetry()
        for key in (memory.category, "all"):
            row = rows[key]
            row[memory.status] += 1
            row["surfaced"] += tel.surfaced
            row["acted"] += tel.acted
            if tel.surfaced:
                row["_shown"] += 1
                row["_followed"] += int(tel.acted > 0)
    for row in rows.values():
        shown, followed = row.pop("_shown"), row.pop("_followed")
        row["follow_through"] = round(followed / shown, 3) if shown else None

    def entry(memory: Memory) -> dict[str, Any]:
        tel = telemetry.get(memory.id) or Telemetry()
        return {
            "id": memory.id,
            "summary": memory.summary,
            "category": memory.category,
            "status": memory.status,
            "surfaced": tel.surfaced,
            "acted": tel.acted,
        }

    def count(mid: str, name: str) -> int:
        tel = telemetry.get(mid)
        return getattr(tel, name) if tel else 0

    active = [m for m in memories if m.status == "active"]
    ignored = sorted(
        (m for m in active if count(m.id, "surfaced") > 0 and count(m.id, "acted") == 0),
        key=lambda m: (-count(m.id, "surfaced"), m.id),
    )
    used = sorted(
        (m for m in memories if count(m.id, "acted") > 0),
        key=lambda m: (-count(m.id, "acted"), -count(m.id, "surfaced"), m.id),
    )
    total = rows.pop("all")
    return {
        "categories": rows,
        "total": total,
        "most_ignored": [entry(m) for m in ignored[:top]],
        "most_used": [entry(m) for m in used[:top]],
    }
