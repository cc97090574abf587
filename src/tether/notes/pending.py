"""Agent writes that wait for the person's approval (`tether review`): pinning, user scope, superseding a rule
file's or the user's own memory (DESIGN §8).

A request is a JSON file in `.tether/pending/` (or `$TETHER_HOME/pending/` outside a project): local to this
machine and ignored by git, so a clone can neither carry one nor approve one. It is not in the index, so a
pending memory is never recalled, injected or found by search until it is approved.

>>> Pending(Path(".tether/pending")).requests()  # doctest: +SKIP
[Request(id='1a2b3c4d', kind='add', ...)]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tether.errors import NotFoundError, ValidationError
from tether.fs import RefusedFile, read_limited, write_atomic
from tether.model.limits import IMPORT_LINE_MAX
from tether.model.memory import Memory, check_id, from_dict, to_dict
from tether.model.timestamps import iso, parse_iso

KINDS = ("add", "pin", "unpin")


@dataclass(frozen=True)
class Request:
    """One write an agent asked for. `add`: the whole memory as it would be written; `pin`/`unpin`: the id."""

    id: str  # the memory's id (for an add, the id it will have)
    kind: str
    reasons: tuple[str, ...]
    requested: datetime
    memory: Memory | None = None  # the memory to add
    session: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "reasons": list(self.reasons),
            "requested": iso(self.requested),
            "memory": to_dict(self.memory) if self.memory is not None else None,
            "session": self.session,
        }

    @classmethod
    def from_json(cls, data: Any) -> Request:
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            raise ValidationError("not a pending request")
        memory = from_dict(data["memory"]) if data.get("memory") is not None else None
        reasons = data.get("reasons") or []
        if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
            raise ValidationError("reasons must be a list of text")
        session = data.get("session")
        return cls(
            id=check_id(str(data.get("id", ""))),
            kind=str(data["kind"]),
            reasons=tuple(reasons),
            requested=parse_iso(str(data.get("requested", ""))),
            memory=memory,
            session=session if isinstance(session, str) else None,
        )


class Pending:
    """The requests in one directory, one file each (`<kind>-<id>.json`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, request: Request) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text(
                "# requests waiting for `tether review`: local to this machine\n*\n", encoding="utf-8"
            )
        path = self.directory / f"{request.kind}-{request.id}.json"
        write_atomic(path, json.dumps(request.to_json(), ensure_ascii=False, indent=2) + "\n", mode=0o600)
        return path

    def requests(self) -> list[Request]:
        """Every readable request, oldest first (one that cannot be read is left where it is, unread)."""
        out: list[Request] = []
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return out
        for name in names:
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                raw = read_limited(self.directory / name, IMPORT_LINE_MAX)
                out.append(Request.from_json(json.loads(raw)))
            except (OSError, RefusedFile, ValueError, ValidationError, RecursionError):
                continue
        return sorted(out, key=lambda r: (r.requested, r.id))

    def get(self, request_id: str) -> Request:
        wanted = check_id(request_id)
        for request in self.requests():
            if request.id == wanted:
                return request
        raise NotFoundError(f"no pending request {wanted}: `tether review` lists them")

    def remove(self, request: Request) -> None:
        (self.directory / f"{request.kind}-{request.id}.json").unlink(missing_ok=True)
