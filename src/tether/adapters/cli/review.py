"""`tether review`: what agents asked to write and only the person may allow, and what arrived by git.

Registered on the main group by `tether.adapters.cli.main`.
"""

from __future__ import annotations

from pathlib import Path

import click
from click.shell_completion import CompletionItem

from tether.adapters.cli.common import COMPLETION_HELP_CHARS, echo, emit, json_option, workspace
from tether.model.display import printable
from tether.model.memory import to_dict
from tether.workspace import Workspace


def complete_request_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Shell completion of a pending request's id (`review approve|reject`), described by what it asks.
    Quiet and empty on any failure, as memory ids' completion is."""
    from tether.lifecycle.review import pending_requests

    try:
        with Workspace.open(Path.cwd(), require_project=False, sync_notes=False) as ws:
            requests = [r for r in pending_requests(ws) if r.id.startswith(incomplete.strip().lower())]
    except Exception:  # no project, a damaged index: no suggestions, never a traceback
        return []
    return [
        CompletionItem(
            r.id,
            help=printable(f"{r.kind}: {r.memory.summary if r.memory else r.id}")[:COMPLETION_HELP_CHARS],
        )
        for r in requests
    ]


@click.group(name="review", invoke_without_command=True)
@click.option(
    "--incoming", is_flag=True, help="Memories other authors' commits added or changed since you last looked."
)
@click.option("--mark", is_flag=True, help="With --incoming: mark everything up to HEAD as looked at.")
@json_option
@click.pass_context
def review(ctx: click.Context, incoming: bool, mark: bool, as_json: bool) -> None:
    """List agents' writes waiting for your approval (pins, user memory, superseding a rule file's or your
    own memory): none is recalled until approved. `tether review approve ID`, `tether review reject ID`.
    """
    if ctx.invoked_subcommand is not None:
        return
    if incoming:
        _incoming(mark, as_json)
        return
    from tether.lifecycle.review import pending_requests

    with workspace(require_project=False) as ws:
        requests = pending_requests(ws)
    if as_json:
        emit([r.to_json() for r in requests])
        return
    for request in requests:
        if request.memory is not None:
            m = request.memory
            flags = ", ".join(
                f for f, on in (("pinned", m.pinned), (f"{m.scope} scope", m.scope != "project")) if on
            )
            extra = f" ({flags})" if flags else ""
            supersedes = f"; supersedes {m.supersedes}" if m.supersedes else ""
            echo(f"{request.id}  add [{m.category}] {m.summary}{extra}{supersedes}")
        else:
            echo(f"{request.id}  {request.kind} this memory")
        echo(f"  asked {request.requested:%Y-%m-%d %H:%M}: {'; '.join(request.reasons)}")
    if not requests:
        echo("nothing waits for review", err=True)


def _incoming(mark: bool, as_json: bool) -> None:
    from tether.lifecycle.incoming import incoming, mark_reviewed

    with workspace(require_project=True) as ws:
        found = incoming(ws)
        memories = {mid: m for i in found if (mid := i.memory_id) and (m := ws.store.get(mid))}
        head = mark_reviewed(ws) if mark else None
    if as_json:
        emit(
            [
                {**vars(i), "memory": to_dict(m) if (m := memories.get(i.memory_id or "")) else None}
                for i in found
            ]
        )
    else:
        for item in found:
            memory = memories.get(item.memory_id or "")
            what = f"{memory.id} [{memory.category}] {memory.summary}" if memory else item.path
            echo(f"{item.status} {what}  — {item.author}, {item.commit}")
        if not found:
            echo("no memory arrived from other authors since you last looked", err=True)
    if head is not None:
        echo(f"marked as looked at up to {head[:12]}", err=True)


@review.command(name="approve")
@click.argument("ids", nargs=-1, required=True, shell_complete=complete_request_id)
@json_option
def approve(ids: tuple[str, ...], as_json: bool) -> None:
    """Write what the agent asked for (the memory keeps origin agent)."""
    from tether.lifecycle import review as queue

    written = []
    with workspace(require_project=False) as ws:
        for request_id in ids:
            memory = queue.approve(ws, request_id)
            written.append(memory)
            if not as_json:
                echo(f"approved: {memory.id} {memory.summary}{'  (pinned)' if memory.pinned else ''}")
    if as_json:
        emit([to_dict(m) for m in written])


@review.command(name="reject")
@click.argument("ids", nargs=-1, required=True, shell_complete=complete_request_id)
@json_option
def reject(ids: tuple[str, ...], as_json: bool) -> None:
    """Drop what the agent asked for: nothing is written."""
    from tether.lifecycle import review as queue

    dropped = []
    with workspace(require_project=False) as ws:
        for request_id in ids:
            request = queue.reject(ws, request_id)
            dropped.append(request)
            if not as_json:
                echo(f"rejected: {request.kind} {request.id}")
    if as_json:
        emit([r.to_json() for r in dropped])


COMMANDS = (review,)
