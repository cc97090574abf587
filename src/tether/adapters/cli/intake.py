"""CLI commands bringing memory in: `tether seed` (a seed file, synced) and `tether import` (tether's JSON
lines, Claude Code's notes, basic-memory, the MCP memory server, claude-mem). Registered on the main group by
`tether.adapters.cli.main`; thin adapters over `tether.intake` (`seedsync`, `seeds`, `foreign`, `jsonl`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tether.adapters.cli.common import echo, emit, json_option, plural, workspace
from tether.errors import TetherError
from tether.intake import seeds
from tether.model.memory import Memory


def _line(memory: Memory) -> str:
    return f"{memory.id}  [{memory.category}] {memory.summary}"


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--allow-secret", is_flag=True, help="Store entries that look like credentials anyway.")
@json_option
def seed(file: Path, allow_secret: bool, as_json: bool) -> None:
    """Sync curated facts from a JSON seed file (origin seed): new entries are added, edited ones
    updated in place, removed ones archived; re-running changes nothing.

    The file is a list (or {"memories": [...], "version": ...}) of objects with summary and optionally
    id or key (the entry's stable name; without one an entry is named by its text), details, category,
    files, priority, pinned, scope. It is checked whole before anything is written."""
    from tether.intake.seedsync import seed as sync_seed

    with workspace(require_project=False) as ws:
        report = sync_seed(ws, file, allow_secret=allow_secret)
    if as_json:
        emit(report.to_json())
        return
    echo(
        f"seeded {plural(len(report.added), 'memory', 'memories')} from {report.path} "
        f"({len(report.updated)} updated, {len(report.archived)} archived, {len(report.restored)} restored, "
        f"{report.unchanged + report.present} already present)"
    )


@click.command(name="import")
@click.argument("source", default="-", metavar="FILE|claude-memory|PATH")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--from",
    "fmt",
    type=click.Choice(["claude", "basic-memory", "mcp-memory", "claude-mem"]),
    help="Read PATH in another tool's format: Claude Code's memory notes (a folder), basic-memory notes "
    "(a folder or note), the MCP memory server's memory.jsonl, claude-mem's database (default "
    "~/.claude-mem/claude-mem.db; this repository's observations).",
)
@click.option(
    "--project",
    "project_name",
    help="With --from claude-mem: its project name (default: the repository's directory name).",
)
@click.option("--scope", type=click.Choice(["project", "user"]), help="With --from: import into this scope.")
@click.option("--dry-run", is_flag=True, help="With --from: show what would be written, write nothing.")
@click.option("--allow-secret", is_flag=True, help="Import memories that look like credentials anyway.")
@json_option
def import_(
    source: str,
    directory: Path | None,
    fmt: str | None,
    project_name: str | None,
    scope: str | None,
    dry_run: bool,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """Import JSON lines written by `tether export` (FILE, or standard input), Claude Code's own
    memory notes (`tether import claude-memory [DIR]`, DIR defaulting to Claude's folder for this repo),
    or another tool's memory: `tether import --from claude|basic-memory|mcp-memory|claude-mem PATH [--dry-run]`.

    Every memory passes the same checks as `tether add` (credentials refused); importing is idempotent.
    To import a file literally named claude-memory, write ./claude-memory."""
    if source == "claude-memory" and fmt is None:
        fmt, source = "claude", str(directory) if directory is not None else ""
    elif directory is not None:
        raise click.UsageError("DIR is only for `tether import claude-memory [DIR]`")
    if fmt is not None:
        _import_from(
            fmt,
            source,
            project_name,
            scope=scope,
            dry_run=dry_run,
            allow_secret=allow_secret,
            as_json=as_json,
        )
        return
    if dry_run or scope or project_name:
        raise click.UsageError("--dry-run, --scope and --project are for --from FORMAT PATH")
    with workspace(require_project=False) as ws:
        try:
            if source == "-":
                new, same = ws.import_lines(sys.stdin, allow_secret=allow_secret)
            else:
                with open(source, encoding="utf-8") as handle:
                    new, same = ws.import_lines(handle, allow_secret=allow_secret)
        except OSError as exc:
            raise TetherError(f"cannot read {source}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise TetherError(f"{source} is not UTF-8 text: export it with `tether export`") from None
    if as_json:
        emit({"new": new, "present": same})
        return
    echo(f"imported {plural(new, 'memory', 'memories')} ({same} already present)")


def _import_from(
    fmt: str,
    source: str,
    project_name: str | None,
    *,
    scope: str | None,
    dry_run: bool,
    allow_secret: bool,
    as_json: bool,
) -> None:
    from tether.intake import foreign
    from tether.intake.seeds import claude_memory_dir

    warnings: list[str] = []
    with workspace(require_project=False) as ws:
        if fmt == "claude":
            path = Path(source) if source and source != "-" else claude_memory_dir(ws.root or Path.cwd())
            memories = seeds.parse_claude_memory(path, log=warnings.append)
        elif fmt == "claude-mem":
            from tether.store.sqlite.foreign import read_rows

            path = Path(source) if source and source != "-" else Path.home() / ".claude-mem" / "claude-mem.db"
            project = project_name or (ws.root or Path.cwd()).name
            rows = read_rows(path, "observations")
            memories = foreign.parse_claude_mem(rows, project, root=ws.root, log=warnings.append)
        elif source in ("", "-"):
            raise click.UsageError(f"--from {fmt} needs a PATH")
        elif fmt == "basic-memory":
            path = Path(source)
            memories = foreign.parse_basic_memory(path, log=warnings.append)
        else:
            path = Path(source)
            memories = foreign.parse_mcp_memory(path, log=warnings.append)
        report = foreign.import_memories(
            ws, memories, scope=scope, dry_run=dry_run, allow_secret=allow_secret
        )
    skipped = warnings + report.skipped
    if as_json:
        emit({**report.to_json(), "skipped": skipped, "source": str(path)})
        return
    for warning in skipped:
        echo(f"warning: skipped {warning.removeprefix('skipped ')}", err=True)
    if dry_run:
        for memory in report.new:
            echo(f"  + {_line(memory)}" + (f"  ({memory.scope})" if memory.scope != "project" else ""))
    verb = "would import" if dry_run else "imported"
    echo(
        f"{verb} {plural(len(report.new), 'memory', 'memories')} from {path} "
        f"({report.present} already present, {len(skipped)} skipped)"
    )


COMMANDS: list[click.Command] = [seed, import_]
