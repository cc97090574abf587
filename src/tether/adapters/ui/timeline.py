"""The event log over time for the stats page: surfaced and acted counts per bucket (pure; no core calls)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tether.model.memory import CATEGORIES
from tether.store.base import Event


def timeline(events: Sequence[Event], categories: dict[str, str], now: datetime) -> dict[str, Any]:
    """Surfaced and acted counts per time bucket, overall and per category.

    The bucket is a day when the log spans up to 60 days, a week up to two years, else 30 days; at most
    60 buckets are kept (the most recent), at least 14 (a line, not a dot, for a young log)."""
    if not events:
        return {"unit": "day", "buckets": [], "all": {"surfaced": [], "acted": []}, "categories": {}}
    first = min(e.at for e in events)
    span = (max(now, max(e.at for e in events)) - first).days
    unit, step = ("day", 1) if span <= 60 else ("week", 7) if span <= 730 else ("month", 30)
    end = max(now, max(e.at for e in events))
    start = (
        end - timedelta(days=step * 59) if span > step * 59 else min(first, end - timedelta(days=step * 13))
    )
    start = start.replace(hour=0, minute=0, second=0, microsecond=0)
    count = (end - start).days // step + 1
    buckets = [start + timedelta(days=step * i) for i in range(count)]
    series: dict[str, Counter[int]] = {}
    for e in events:
        if e.at < start:
            continue
        slot = (e.at - start).days // step
        for key in ("all", categories.get(e.memory_id, "")):
            if key:
                series.setdefault(f"{key}:{e.event}", Counter())[slot] += 1

    def line(key: str, event: str) -> list[int]:
        counts = series.get(f"{key}:{event}", Counter())
        return [counts[i] for i in range(count)]

    return {
        "unit": unit,
        "buckets": [b.strftime("%Y-%m-%d") for b in buckets],
        "all": {"surfaced": line("all", "surfaced"), "acted": line("all", "acted")},
        "categories": {c: {"surfaced": line(c, "surfaced"), "acted": line(c, "acted")} for c in CATEGORIES},
    }
