"""The event log's writes in SQL: events appended, and the telemetry counters incremented in place.

Counters are never read, changed and written back: `surfaced = surfaced + n` in one statement, so two
sessions on two machines recording at once both count. A batch's counter rows are updated in a fixed
order, so concurrent batches never deadlock.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg import sql

from tether.store.base import Event
from tether.store.postgres import rows
from tether.store.postgres.tenancy import Tenant

Conn = psycopg.Connection[tuple[Any, ...]]

COUNT = """
INSERT INTO tether_telemetry (project, owner, memory_id, surfaced, first_surfaced, last_surfaced, acted,
    last_acted)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (project, owner, memory_id) DO UPDATE SET
    surfaced = tether_telemetry.surfaced + excluded.surfaced,
    first_surfaced = coalesce(tether_telemetry.first_surfaced, excluded.first_surfaced),
    last_surfaced = coalesce(excluded.last_surfaced, tether_telemetry.last_surfaced),
    acted = tether_telemetry.acted + excluded.acted,
    last_acted = coalesce(excluded.last_acted, tether_telemetry.last_acted)
"""


def record(conn: Conn, tenant: Tenant, visible: dict[str, Any], batch: list[Event]) -> None:
    """Append `batch` and count its `surfaced` and `acted` events, in the caller's transaction.

    An event belongs to its memory's tenant (a user memory's counters are its owner's, whichever project
    showed it); one about a memory not in the store (removed since) to the workspace's project."""
    statement = sql.SQL(
        "SELECT id, project, owner FROM tether_memories WHERE id = ANY(%(ids)s) AND {}"
    ).format(rows.VISIBLE)
    ids = sorted({e.memory_id for e in batch})
    tenants = {mid: (p, o) for mid, p, o in conn.execute(statement, {**visible, "ids": ids})}
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO tether_events (project, owner, memory_id, session, turn, event, receipts, at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    *tenants.get(e.memory_id, tenant.default),
                    e.memory_id,
                    e.session,
                    e.turn,
                    e.event,
                    json.dumps(e.receipts),
                    e.at,
                )
                for e in batch
            ],
        )
    # Per memory: surfaced, first surfaced, last surfaced, acted, last acted (as the SQLite index counts).
    counters: dict[tuple[str, str, str], list[Any]] = {}
    for e in batch:
        if e.event not in ("surfaced", "acted"):
            continue
        counter = counters.setdefault(
            (*tenants.get(e.memory_id, tenant.default), e.memory_id), [0, None, None, 0, None]
        )
        if e.event == "surfaced":
            counter[0] += 1
            counter[1] = counter[1] or e.at
            counter[2] = e.at
        else:
            counter[3] += 1
            counter[4] = e.at
    for key in sorted(counters):
        conn.execute(COUNT, (*key, *counters[key]))
