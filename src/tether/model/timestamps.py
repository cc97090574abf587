"""The one timestamp format: UTC, to the second, ISO 8601 with a `Z` (`2026-12-01T09:38:58Z`).

Notes, the index, the event log and exports all write it; reading accepts any ISO 8601 form (older indexes
wrote microseconds), naive times being UTC.

>>> iso(parse_iso("2026-12-01T10:38:58.250+01:00"))
'2026-12-01T09:38:58Z'
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utcnow() -> datetime:
    """Now, in UTC, to the second (what every clock in tether reads)."""
    return datetime.now(UTC).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """`moment` in the one format; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(FORMAT)


def parse_iso(text: str) -> datetime:
    """An ISO 8601 time (a trailing `Z` included) as an aware datetime in UTC. Raises `ValueError`, also for
    a time that exists only in its own zone (`0001-01-01T00:00:00+05:00` is before year 1 in UTC)."""
    parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text.strip()!r} is outside the years 1-9999 in UTC") from None


def due(last: str | None, now: datetime, every: timedelta) -> bool:
    """Whether a periodic pass last run at `last` (an ISO time; None: never) is due again at `now`. An
    unreadable `last` is due: the pass runs and writes a good one.

    >>> due("2026-12-01T00:00:00Z", parse_iso("2026-12-01T07:00:00Z"), timedelta(hours=6))
    True
    """
    if last is None:
        return True
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    try:
        return now - parse_iso(last) >= every
    except (TypeError, ValueError):
        return True
