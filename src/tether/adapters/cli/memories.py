"""CLI commands on single memories: add, get, list, edit, rm, restore, pin, unpin, ack, supersede.

Registered on the main group by `tether.adapters.cli.main`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import click

from tether.adapters.cli.common import (
    complete_memory_id,
    echo,
    emit,
    json_option,
    note_outside_project,
    read_details,
    show_memory,
    workspace,
)
from tether.errors import TetherError
from tether.model.memory import CATEGORIES, PRIORITIES, SCOPES, Memory, to_dict
from tether.store.base import Query
from tether.workspace import Workspace


@click.command()
@click.argument("summary")
@click.option("--details", "-d", help="Markdown body (the why, the how); '-' reads standard input.")
@click.option(
    "--category",
    "-c",
    type=click.Choice(CATEGORIES),
    default="context",
    show_default=True,
    help="What kind of knowledge this is.",
)
@click.option(
    "--file", "-f", "files", multiple=True, help="A file or directory (ending in /) it is about. Repeatable."
)
@click.option(
    "--at",
    "at",
    multiple=True,
    metavar="PATH::SYMBOL|PATH:START-END",
    help="A place inside a file it is about: a symbol (src/pay.py::charge_card) or lines (src/pay.py:120-140). Repeatable.",
)
@click.option("--tag", "tags", multiple=True, help="A tag (Obsidian's: one word, no #). Repeatable.")
@click.option("--alias", "aliases", multiple=True, help="Another title [[wikilinks]] find it by. Repeatable.")
@click.option(
    "--scope",
    "-s",
    type=click.Choice(SCOPES),
    default="project",
    show_default=True,
    help="project (in the repo), user (follows you), session (expires with it).",
)
@click.option("--session", help="Session id, for --scope session.")
@click.option("--pin", is_flag=True, help="Pin it: ranks first, never decays.")
@click.option(
    "--priority",
    type=click.Choice(PRIORITIES),
    default="normal",
    show_default=True,
    help="high multiplies its score within a bound.",
)
@click.option(
    "--supersedes", metavar="ID", shell_complete=complete_memory_id, help="The memory this one replaces."
)
@click.option("--allow-secret", is_flag=True, help="Store text that looks like a credential anyway.")
@json_option
def add(
    summary: str,
    details: str | None,
    category: str,
    files: tuple[str, ...],
    at: tuple[str, ...],
    tags: tuple[str, ...],
    aliases: tuple[str, ...],
    scope: str,
    session: str | None,
    pin: bool,
    priority: str,
    supersedes: str | None,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """Remember something. Prints the new memory (or the existing one with the same content)."""
    with workspace(require_project=scope == "project") as ws:
        result = ws.add(
            summary,
            details=read_details(details),
            category=category,
            files=files,
            at=at,
            scope=scope,
            pinned=pin,
            priority=priority,
            supersedes=ws.resolve(supersedes) if supersedes else None,
            session=session,
            allow_secret=allow_secret,
            tags=tags,
            aliases=aliases,
        )
        root = ws.root
    missing = [f for f in result.memory.files if root is not None and not (root / f).exists()]
    for path in missing:  # a typo, or a file still to be written: either way, say so
        echo(f"warning: {path} does not exist (yet); the memory names it anyway", err=True)
    if as_json:
        emit(
            {**to_dict(result.memory), "new": result.created, "restored": result.restored, "missing": missing}
        )
        return
    if result.restored:
        echo("restored (the same content was archived):")
    elif not result.created:
        echo(
            f"already known (same content){'' if result.memory.status == 'active' else ', ' + result.memory.status}:"
        )
    show_memory(result.memory, full=False)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@json_option
def get(memory_id: str, as_json: bool) -> None:
    """Show one memory in full, with what it replaced and what replaced it."""
    with workspace(require_project=False) as ws:
        memory = ws.get(ws.resolve(memory_id))
        chain = ws.chain(memory)
        outgoing, incoming = ws.links(memory)
    if as_json:
        emit(
            {
                **to_dict(memory),
                "chain": [to_dict(m) for m in chain],
                "links_out": [m.id for m in outgoing],
                "links_in": [m.id for m in incoming],
            }
        )
        return
    show_memory(memory)
    for other in chain:
        relation = "replaced by" if other.supersedes == memory.id else "replaces"
        echo(f"\n  {relation}: {other.id} [{other.status}] {other.summary}")
    for label, group in (("links to", outgoing), ("linked from", incoming)):
        for other in group:
            echo(f"  {label}: {other.id} {other.summary}")


@click.command(name="list")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option("--scope", "-s", type=click.Choice(SCOPES), help="Only this scope.")
@click.option("--file", "-f", "file", help="Only memories naming this path.")
@click.option("--origin", help="Only this origin (user, agent, seed, distilled, rules: for all rule files).")
@click.option("--pinned", is_flag=True, help="Only pinned memories.")
@click.option("--archived", is_flag=True, help="Archived memories instead of active ones.")
@click.option("--superseded", is_flag=True, help="Superseded memories instead of active ones.")
@click.option("--all", "show_all", is_flag=True, help="Every status.")
@click.option("--dead", is_flag=True, help="Only memories whose every file is gone.")
@click.option("--dead-anchors", is_flag=True, help="Only memories with an anchor whose code is gone.")
@json_option
def list_(
    category: str | None,
    scope: str | None,
    file: str | None,
    origin: str | None,
    pinned: bool,
    archived: bool,
    superseded: bool,
    show_all: bool,
    dead: bool,
    dead_anchors: bool,
    as_json: bool,
) -> None:
    """List memories (active ones unless told otherwise)."""
    status: tuple[str, ...] | None = ("active",)
    if show_all:
        status = None
    elif archived or superseded:
        status = tuple(s for s, on in (("archived", archived), ("superseded", superseded)) if on)
    with workspace(require_project=False) as ws:
        if file is not None:
            from tether.model.memory import normalize_path

            file = normalize_path(file, ws.root, ws.cwd)
        if dead:
            found = [m for m, _ in ws.dead_refs()]
        elif dead_anchors:
            from tether.lifecycle.reanchor import dead_anchors as lost

            found = [m for m, _ in lost(ws)]
        else:
            found = ws.find(
                Query(
                    status=status,
                    category=category,
                    scope=scope,
                    origin=origin,
                    file=file,
                    pinned=True if pinned else None,
                )
            )
        note_outside_project(ws)
    if as_json:
        emit([to_dict(m) for m in found])
        return
    for memory in found:
        show_memory(memory, full=False)
    if not found:
        echo("no memories match", err=True)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@click.option("--summary", help="New one-line summary.")
@click.option("--details", "-d", help="New details; '-' reads standard input.")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="New category.")
@click.option("--file", "-f", "files", multiple=True, help="Replace the file list (repeatable).")
@click.option(
    "--at",
    "at",
    multiple=True,
    metavar="PATH::SYMBOL|PATH:START-END",
    help="Replace the anchors: a symbol (src/pay.py::charge_card) or lines (src/pay.py:120-140). Repeatable.",
)
@click.option("--no-anchors", is_flag=True, help="Drop every anchor (the memory stays tied to its files).")
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeatable; --tag '' removes them).")
@click.option(
    "--alias", "aliases", multiple=True, help="Replace the aliases (repeatable; --alias '' removes them)."
)
@click.option("--priority", type=click.Choice(PRIORITIES), help="New priority.")
@click.option("--allow-secret", is_flag=True, help="Store text that looks like a credential anyway.")
@json_option
def edit(
    memory_id: str,
    summary: str | None,
    details: str | None,
    category: str | None,
    files: tuple[str, ...],
    at: tuple[str, ...],
    no_anchors: bool,
    tags: tuple[str, ...],
    aliases: tuple[str, ...],
    priority: str | None,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """Change a memory with flags, or open its note in $EDITOR when no flag is given."""
    if at and no_anchors:
        raise click.UsageError("--at and --no-anchors contradict each other: give one")
    changes: dict[str, Any] = {}
    if summary is not None:
        changes["summary"] = summary
    if details is not None:
        changes["details"] = read_details(details)
    if category is not None:
        changes["category"] = category
    if files:
        changes["files"] = list(files)
    if priority is not None:
        changes["priority"] = priority
    if tags:
        changes["tags"] = list(tags)
    if aliases:
        changes["aliases"] = list(aliases)
    anchors = list(at) if at or no_anchors else None
    with workspace(require_project=False) as ws:
        memory_id = ws.resolve(memory_id)
        if changes or anchors is not None:
            _show(ws.edit(memory_id, allow_secret=allow_secret, at=anchors, **changes), as_json)
            return
        memory = ws.get(memory_id)
        path = ws.store.note_path(memory.id)
        if path is None:
            raise TetherError(f"{memory.id} is session memory and has no note: edit it with flags")
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor and not (sys.stdin.isatty() and sys.stdout.isatty()):
            # vi with no terminal hangs or garbles the caller's output (an agent, a script, CI).
            raise click.UsageError(
                "no $EDITOR or $VISUAL set and no terminal to open vi in: set EDITOR, "
                "or change the memory with flags (--summary, --details, --category, ...)"
            )
        editor = editor or "vi"
        subprocess.run([*editor.split(), path], check=False)
        report = ws.sync()
        for problem in report.problems:
            if problem.path == path:
                raise TetherError(
                    f"the note no longer parses ({problem.problem}); it was kept as you saved it: "
                    f"fix it with `tether edit {memory.id}`"
                )
        _show(ws.get(memory.id), as_json)


def _show(memory: Memory, as_json: bool) -> None:
    if as_json:
        emit(to_dict(memory))
    else:
        show_memory(memory, full=False)


def _change(verb: str, memory_id: str, action: Callable[[Workspace, str], Memory], as_json: bool) -> None:
    """Apply `action` to the memory `memory_id` names (an id or its unambiguous prefix) and print
    `<verb>: <id> <summary>` of the memory it returns (with --json: the memory and what was done)."""
    with workspace(require_project=False) as ws:
        memory = action(ws, ws.resolve(memory_id))
    if as_json:
        emit({**to_dict(memory), "done": verb})
    else:
        echo(f"{verb}: {memory.id} {memory.summary}")


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@click.option("--hard", is_flag=True, help="Delete the note for good instead of archiving it.")
@json_option
def rm(memory_id: str, hard: bool, as_json: bool) -> None:
    """Archive a memory (reversible with `tether restore`), or delete it with --hard."""
    if hard:
        _change("deleted", memory_id, lambda ws, mid: ws.delete(mid), as_json)
    else:
        _change("archived", memory_id, lambda ws, mid: ws.archive(mid, reason="rm"), as_json)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@json_option
def restore(memory_id: str, as_json: bool) -> None:
    """Make an archived or superseded memory active again."""
    _change("restored", memory_id, lambda ws, mid: ws.restore(mid), as_json)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@json_option
def pin(memory_id: str, as_json: bool) -> None:
    """Pin a memory: ranks first, pierces hint budgets, exempt from decay."""
    _change("pinned", memory_id, lambda ws, mid: ws.pin(mid, True), as_json)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@json_option
def unpin(memory_id: str, as_json: bool) -> None:
    """Unpin a memory."""
    _change("unpinned", memory_id, lambda ws, mid: ws.pin(mid, False), as_json)


@click.command()
@click.argument("memory_id", shell_complete=complete_memory_id)
@click.option("--session", help="The session that used it.")
@json_option
def ack(memory_id: str, session: str | None, as_json: bool) -> None:
    """Mark a memory as used (acted on): it counts as followed, not ignored."""
    _change("acknowledged", memory_id, lambda ws, mid: ws.ack(mid, session=session), as_json)


@click.command()
@click.argument("old_id", shell_complete=complete_memory_id)
@click.argument("new_id", shell_complete=complete_memory_id)
@json_option
def supersede(old_id: str, new_id: str, as_json: bool) -> None:
    """Mark OLD as replaced by NEW: OLD leaves recall and search but stays readable."""
    with workspace(require_project=False) as ws:
        old_id = ws.resolve(old_id)
        memory = ws.supersede(old_id, ws.resolve(new_id))
    if as_json:
        emit({**to_dict(memory), "superseded": old_id})
    else:
        echo(f"{old_id} superseded by {memory.id}")


COMMANDS = (add, get, list_, edit, rm, restore, pin, unpin, ack, supersede)
