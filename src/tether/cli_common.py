"""What the commands of the `tether` CLI share: the workspace they open, the `--json` option, printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from tether.errors import TetherError
from tether.memory import Memory
from tether.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


@contextmanager
def workspace(require_project: bool = True, sync_notes: bool = True) -> Iterator[Workspace]:
    ws = Workspace.open(Path.cwd(), require_project=require_project, sync_notes=sync_notes, recover=True)
    if ws.recovered is not None:
        click.echo(
            f"warning: the index was damaged; moved it to {ws.recovered} and rebuilt it from the notes "
            "(memories are intact; usage counts start over)",
            err=True,
        )
    try:
        if ws.last_sync is not None:
            for problem in ws.last_sync.problems:
                click.echo(f"warning: skipped note {problem.path}: {problem.problem}", err=True)
            _follow_renames(ws)
        yield ws
    finally:
        ws.close()


def _follow_renames(ws: Workspace) -> None:
    """Every command that syncs also brings the repo map up to date, so memories follow renamed files."""
    from tether.housekeeping import refresh_repo

    if ws.root is None:
        return
    try:
        moved = refresh_repo(ws).renamed
    except TetherError as exc:
        click.echo(
            f"warning: could not read the repository's history ({exc}); file links not refreshed", err=True
        )
        return
    for memory_id, old, new in moved:
        click.echo(f"note: memory {memory_id} now names {new} (renamed from {old})", err=True)


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def show_memory(memory: Memory, *, full: bool = True) -> None:
    flags = []
    if memory.pinned:
        flags.append("pinned")
    if memory.priority == "high":
        flags.append("high")
    if memory.status != "active":
        flags.append(memory.status)
    head = f"{memory.id}  [{memory.category}] {memory.summary}"
    click.echo(head + (f"  ({', '.join(flags)})" if flags else ""))
    if not full:
        return
    click.echo(
        f"  scope: {memory.scope}   origin: {memory.origin}   updated: {memory.updated:%Y-%m-%d %H:%M}"
    )
    if memory.files:
        click.echo(f"  files: {', '.join(memory.files)}")
    if memory.supersedes:
        click.echo(f"  supersedes: {memory.supersedes}")
    if memory.details:
        click.echo("")
        click.echo(memory.details)


def read_details(details: str | None) -> str:
    if details == "-":
        return sys.stdin.read()
    return details or ""
