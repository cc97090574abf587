"""Per-session hook state, kept in the index so it survives between hook processes.

Each hook is a fresh process; what one learns (turn number, files touched, gotchas already shown, files
already denied once) must be there for the next. Updates are read-modify-write inside one write
transaction, so parallel hooks of one session don't lose each other's changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from tether.store.base import SessionStore

# Recent files are what recall ranks by; older ones have stopped describing the current work.
TOUCHED_KEEP = 12


@dataclass
class SessionState:
    turn: int = 0
    touched: list[str] = field(default_factory=list)  # most recent last
    seen: dict[str, int] = field(default_factory=dict)  # memory id → turn it was last shown
    denied: list[str] = field(default_factory=list)  # files whose first edit was denied once
    hints: int = 0  # point-of-action hints given (pinned ones don't count)
    tools_used: bool = False  # the agent calls memory tools itself: stop volunteering hints
    # What the latest prompt asks (`tether.model.prompt.sanitize`: at most a few hundred characters, empty when
    # it held a credential): a read's hint ranks the file's gotchas by it.
    query: str = ""
    # The work in progress when the session's first prompt came (`tether.repo.worktree.in_progress`; None
    # until then): the touched files of its prompts until the agent touches some.
    in_progress: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys other writers keep here (the MCP server's)

    def touch(self, paths: list[str]) -> None:
        for path in paths:
            if path in self.touched:
                self.touched.remove(path)
            self.touched.append(path)
        del self.touched[:-TOUCHED_KEEP]

    def recently_seen(self, memory_id: str, cooldown: int) -> bool:
        turn = self.seen.get(memory_id)
        return turn is not None and self.turn - turn < cooldown

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionState:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "extra"}
        state = cls(**known)
        state.extra = {k: v for k, v in data.items() if k not in cls.__dataclass_fields__}
        if "memory_tools" in state.extra:
            state.tools_used = True  # the MCP server saw this session call memory tools
        return state

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "extra"}
        return {**self.extra, **data}


@contextmanager
def session_state(store: SessionStore, session: str, now: datetime) -> Iterator[SessionState]:
    """Load, yield for changes, and save one session's state atomically."""
    with store.transaction():
        raw = store.session_state(session)
        state = SessionState.from_json(raw) if raw else SessionState()
        yield state
        store.put_session_state(session, state.to_json(), now)
