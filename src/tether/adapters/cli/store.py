"""CLI commands on the store itself: `tether store status` and `tether store copy` (issue 13).

Registered on the main group by `tether.adapters.cli.main`.
"""

from __future__ import annotations

from pathlib import Path

import click

from tether.adapters.cli.common import echo, emit, json_option, json_outcome, workspace
from tether.errors import ValidationError
from tether.workspace import Workspace


@click.group(name="store")
def store_group() -> None:
    """The memory store: which backend holds the memories, and copying them between SQLite and Postgres."""


@store_group.command()
@json_option
def status(as_json: bool) -> None:
    """Which backend (the checkout's SQLite index or a team database), its version, counts and latency."""
    with workspace(require_project=False) as ws:
        info = ws.store_status()
    if as_json:
        emit(info)
        return
    if info["backend"] == "sqlite":
        echo(f"backend: sqlite, the checkout's own index ({info['version']}) at {info['index']}")
    else:
        extensions = ", ".join(f"{k} {v}" for k, v in sorted(info["extensions"].items()))
        echo(f"backend: postgres, team database {info['url']} ({info['version']}; {extensions})")
        echo(f"  project id: {info['project'] or '(none: user memory only)'}   user id: {info['user']}")
        echo(
            f"  round trip: {info['latency_ms']:.2f} ms; projects in this database: {info['projects_in_database']}"
        )
        unseen = info["project_memories"] - info["notes_here"]
        if unseen > 0:
            echo(
                f"  {unseen} shared memories have no note in this checkout: added elsewhere and not yet "
                "pulled (or their notes were removed by hand: `tether rm --hard ID` deletes one for the team)"
            )
        echo(f"  local index (notes, sessions, repo map): {info['index']}")
    echo(
        f"memories: {info['project_memories']} project, {info['user_memories']} user; events: {info['events']};"
        f" one read: {info['read_ms']:.2f} ms"
    )
    for line in info.get("ignored", []):
        echo(f"warning: ignored {line}", err=True)


@store_group.command()
@click.option(
    "--to", "to_url", metavar="URL", help="Copy this checkout's local index into the database at URL."
)
@click.option(
    "--from", "from_url", metavar="URL", help="Copy the database at URL into this checkout (notes too)."
)
@json_outcome
def copy(to_url: str | None, from_url: str | None, as_json: bool) -> None:
    """Copy memories and the event log between the local SQLite index and a Postgres database.

    `--to` fills a team database from this checkout (its project's and your user memories); `--from`
    brings them back, writing notes, e.g. to leave a team database. Telemetry follows the events.
    """
    from tether.config.database import check_database_url, redact_url
    from tether.store.postgres import transfer
    from tether.store.postgres.connect import open_shared, tenant_for

    if (to_url is None) == (from_url is None):
        raise ValidationError("give one of --to URL or --from URL")
    url = check_database_url(to_url or from_url or "", "--to" if to_url else "--from")
    # The checkout's own index, whatever database is configured: it is one end of the copy.
    with Workspace.open(Path.cwd(), require_project=False, recover=True, team=False) as ws:
        shared = open_shared(url, tenant_for(ws.store, ws.root, ws.paths.home))
        try:
            embedder = ws.embedders.writer()
            if to_url:
                report = transfer.copy(ws.store, shared, embedder=embedder)
                where = f"into {redact_url(url)}"
            else:
                with ws.lock():
                    report = transfer.copy(shared, ws.store, write=ws.write)
                ws.embed_missing()
                where = f"from {redact_url(url)} into {Path(ws.paths.index)}"
        finally:
            shared.close()
    if as_json:
        emit(
            {
                "ok": True,
                "copied": "to" if to_url else "from",
                "from": str(ws.paths.index) if to_url else redact_url(url),
                "into": redact_url(url) if to_url else str(ws.paths.index),
                "memories": report.memories,
                "events": report.events,
                "kept_newer": report.kept_newer,
                "events_skipped": bool(report.events_skipped),
            }
        )
        return
    echo(f"copied {report.memories} memories and {report.events} events {where}")
    if report.kept_newer:
        echo(f"note: {report.kept_newer} memories were newer in the target and kept there")
    if report.events_skipped:
        echo("note: the target already had an event log for this project: events were not copied again")


COMMANDS = (store_group,)
