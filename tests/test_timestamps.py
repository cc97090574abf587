"""`tether.model.timestamps`: one format everywhere (UTC, seconds, `Z`), any ISO 8601 read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tether.model.timestamps import FORMAT, due, iso, parse_iso, utcnow


def test_one_format_in_utc_to_the_second() -> None:
    moment = datetime(2026, 12, 1, 10, 38, 58, 250_000, tzinfo=timezone(timedelta(hours=1)))
    assert iso(moment) == "2026-12-01T09:38:58Z"
    assert iso(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # naive is UTC
    assert FORMAT == "%Y-%m-%dT%H:%M:%SZ"


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T09:38:58Z",
        "2026-12-01T09:38:58+00:00",
        "2026-12-01T10:38:58+01:00",
        "2026-12-01T09:38:58.000Z",
    ],
)
def test_parse_reads_any_iso_form(text: str) -> None:
    assert parse_iso(text) == datetime(2026, 12, 1, 9, 38, 58, tzinfo=UTC)


def test_parse_round_trip_and_errors() -> None:
    now = utcnow()
    assert now.microsecond == 0 and now.tzinfo is UTC
    assert parse_iso(iso(now)) == now
    assert parse_iso("2026-12-01T09:38:58").tzinfo is UTC
    with pytest.raises(ValueError):
        parse_iso("2026-02-30T00:00:00Z")


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        (None, "2026-12-01T00:00:00Z", True),  # never ran
        ("2026-12-01T00:00:00Z", "2026-12-01T05:59:59Z", False),
        ("2026-12-01T00:00:00Z", "2026-12-01T06:00:00Z", True),
        ("2026-12-01T00:00:00+00:00", "2026-12-01T01:00:00Z", False),  # isoformat() as written before
        ("2026-12-01T00:00:00", "2026-12-01T01:00:00Z", False),  # naive: UTC
        ("not a time", "2026-12-01T01:00:00Z", True),  # unreadable: run, and write a good one
    ],
)
def test_due_every_six_hours(last: str | None, now: str, expected: bool) -> None:
    assert due(last, parse_iso(now), timedelta(hours=6)) is expected
