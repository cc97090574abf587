"""What agents ask to write and only the person may allow (DESIGN §8), and the person's answer.

An agent's `memory_add` that pins, writes user scope or supersedes a rule file's or the person's own memory
is queued by `Memories.add` (`tether.notes.pending`) instead of written; so is an agent's `memory_pin`.
`tether review` lists the queue; approving carries a request out as asked, rejecting drops it.

>>> [r.id for r in pending_requests(ws)]  # doctest: +SKIP
['1a2b3c4d']
"""

from __future__ import annotations

from tether.memories import Memories
from tether.model.memory import Memory
from tether.notes.pending import Pending, Request


def request_pin(ws: Memories, memory_id: str, pinned: bool = True) -> tuple[Memory, bool]:
    """An agent asking to pin (or unpin) a memory: a pin is the person's veto over the statistics, so it
    waits for `tether review`. Returns the memory as it is and whether a request was made."""
    memory = ws.get(memory_id)
    if memory.pinned == pinned:
        return memory, False
    kind = "pin" if pinned else "unpin"
    Pending(ws.paths.pending).put(Request(memory.id, kind, (f"an agent asked to {kind} it",), ws.clock()))
    return memory, True


def pending_requests(ws: Memories) -> list[Request]:
    """What agents asked for and the person has not decided yet, oldest first."""
    return Pending(ws.paths.pending).requests()


def approve(ws: Memories, request_id: str) -> Memory:
    """Carry out a pending request as asked (an added memory keeps `origin: agent`); it leaves the queue."""
    pending = Pending(ws.paths.pending)
    request = pending.get(request_id)
    if request.kind == "add":
        assert request.memory is not None
        m = request.memory
        memory = ws.add(
            m.summary,
            details=m.details,
            category=m.category,
            files=ws.absolute(m.files, m.scope),
            scope=m.scope,
            pinned=m.pinned,
            priority=m.priority,
            origin=m.origin,
            supersedes=m.supersedes,
            session=request.session,
            memory_id=m.id,
            approved=True,
            allow_secret=True,  # checked when the agent asked; the person has now read it
        ).memory
    else:
        memory = ws.pin(request.id, request.kind == "pin")
    pending.remove(request)
    return memory


def reject(ws: Memories, request_id: str) -> Request:
    """Drop a pending request: nothing is written."""
    pending = Pending(ws.paths.pending)
    request = pending.get(request_id)
    pending.remove(request)
    return request
