"""`tether export` / `tether import`: every memory as JSON lines, and back (round-trips byte for byte).

>>> lines = [json.dumps(item) for item in export(ws)]  # doctest: +SKIP
>>> import_lines(other_ws, lines)  # (new, already present)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from tether.errors import ValidationError
from tether.memories import Memories
from tether.model.memory import Memory, from_dict, to_dict
from tether.store.base import Query


def export(memories: Memories) -> Iterator[dict[str, Any]]:
    """Every memory but session ones, any status, oldest first."""
    for memory in memories.store.find(Query(status=None)):
        if memory.scope != "session":
            yield to_dict(memory)


def import_lines(memories: Memories, lines: Iterable[str], *, allow_secret: bool = False) -> tuple[int, int]:
    """Import JSON lines from `export`. Checks every line (`Memories.admit`: fields, types, credentials)
    before writing any. Returns (new, same)."""
    incoming: list[Memory] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValidationError(
                f"line {number}: not a tether memory ({exc}); export with `tether export`"
            ) from None
        try:
            incoming.append(memories.admit(from_dict(data), allow_secret=allow_secret))
        except ValidationError as exc:
            raise ValidationError(f"line {number}: {exc}") from None
    conflicts = []
    for memory in incoming:
        existing = memories.store.get(memory.id)
        if existing is not None and to_dict(existing) != to_dict(memory):
            conflicts.append(memory.id)
    if conflicts:
        raise ValidationError(
            f"{len(conflicts)} id(s) already exist with different content ({', '.join(conflicts[:5])}): "
            "nothing was imported; remove or edit those memories first"
        )
    # Stored as exported (ids, times, status kept), each already admitted; written under the writer lock.
    new = same = 0
    for memory in incoming:
        memories.notes_dir(memory.scope)
    with memories.lock():
        for memory in incoming:
            if memories.store.get(memory.id) is not None:
                same += 1
                continue
            memories.write(memory)
            new += 1
    return new, same
