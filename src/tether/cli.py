"""The `tether` command line: a thin adapter over `tether.workspace` and friends.

Exit codes: 0 ok, 1 a user error (with a message saying what to do), 2 usage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from tether.errors import TetherError
from tether.memory import CATEGORIES, PRIORITIES, SCOPES, Memory
from tether.store import Query
from tether.workspace import Workspace, to_dict

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tether")
def cli() -> None:
    """tether: code-aware memory for coding agents.

    Memories are markdown notes in .tether/memories/, tied to the files they are about, recalled by what
    the agent touches and asks.
    """


@cli.command()
def init() -> None:
    """Create .tether/ at the git root (memories/, config.toml, .gitignore)."""
    from tether.project import init_project

    paths, created = init_project(Path.cwd())
    click.echo(f"{'initialized' if created else 'already initialized'}: {paths.tether_dir}")


@cli.command()
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
@click.option("--supersedes", metavar="ID", help="The memory this one replaces.")
@click.option("--allow-secret", is_flag=True, help="Store text that looks like a credential anyway.")
@json_option
def add(
    summary: str,
    details: str | None,
    category: str,
    files: tuple[str, ...],
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
            scope=scope,
            pinned=pin,
            priority=priority,
            supersedes=supersedes,
            session=session,
            allow_secret=allow_secret,
        )
    if as_json:
        emit({**to_dict(result.memory), "new": result.created})
        return
    if not result.created:
        click.echo("already known (same content):")
    show_memory(result.memory, full=False)


@cli.command()
@click.argument("memory_id")
@json_option
def get(memory_id: str, as_json: bool) -> None:
    """Show one memory in full, with what it replaced and what replaced it."""
    with workspace(require_project=False) as ws:
        memory = ws.get(memory_id)
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
        click.echo(f"\n  {relation}: {other.id} [{other.status}] {other.summary}")
    for label, group in (("links to", outgoing), ("linked from", incoming)):
        for other in group:
            click.echo(f"  {label}: {other.id} {other.summary}")


@cli.command(name="list")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option("--scope", "-s", type=click.Choice(SCOPES), help="Only this scope.")
@click.option("--file", "-f", "file", help="Only memories naming this path.")
@click.option("--origin", help="Only this origin (user, agent, seed, distilled, rules: for all rule files).")
@click.option("--pinned", is_flag=True, help="Only pinned memories.")
@click.option("--archived", is_flag=True, help="Archived memories instead of active ones.")
@click.option("--superseded", is_flag=True, help="Superseded memories instead of active ones.")
@click.option("--all", "show_all", is_flag=True, help="Every status.")
@click.option("--dead", is_flag=True, help="Only memories whose every file is gone.")
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
            from tether.memory import normalize_path

            file = normalize_path(file, ws.root, ws.cwd)
        if dead:
            found = [m for m, _ in ws.dead_refs()]
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
    if as_json:
        emit([to_dict(m) for m in found])
        return
    for memory in found:
        show_memory(memory, full=False)
    if not found:
        click.echo("no memories match", err=True)


@cli.command()
@click.argument("query")
@click.option("--file", "-f", "files", multiple=True, help="Files being worked on, to rank by too.")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="Only this category.")
@click.option(
    "--limit", "-k", type=click.IntRange(1, 200), default=10, show_default=True, help="Most results."
)
@json_option
def search(query: str, files: tuple[str, ...], category: str | None, limit: int, as_json: bool) -> None:
    """Search memories by meaning and words (the recall fusion, text first). Records nothing."""
    with workspace(require_project=False) as ws:
        results = ws.search(query, files=files, category=category, limit=limit)
    if as_json:
        emit([r.to_json() for r in results])
        return
    for r in results:
        click.echo(f"{r.score:5.3f}  {r.line()}")
    if not results:
        click.echo("no matches", err=True)


@cli.command()
@click.argument("memory_id")
@click.option("--summary", help="New one-line summary.")
@click.option("--details", "-d", help="New details; '-' reads standard input.")
@click.option("--category", "-c", type=click.Choice(CATEGORIES), help="New category.")
@click.option("--file", "-f", "files", multiple=True, help="Replace the file list (repeatable).")
@click.option("--priority", type=click.Choice(PRIORITIES), help="New priority.")
@click.option("--allow-secret", is_flag=True, help="Store text that looks like a credential anyway.")
def edit(
    memory_id: str,
    summary: str | None,
    details: str | None,
    category: str | None,
    files: tuple[str, ...],
    priority: str | None,
    allow_secret: bool,
) -> None:
    """Change a memory with flags, or open its note in $EDITOR when no flag is given."""
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
    with workspace(require_project=False) as ws:
        if changes:
            show_memory(ws.edit(memory_id, allow_secret=allow_secret, **changes), full=False)
            return
        memory = ws.get(memory_id)
        path = ws.store.note_path(memory.id)
        if path is None:
            raise TetherError(f"{memory.id} is session memory and has no note: edit it with flags")
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        subprocess.run([*editor.split(), path], check=False)
        report = ws.sync()
        for problem in report.problems:
            if problem.path == path:
                raise TetherError(
                    f"the note no longer parses ({problem.problem}); it was kept as you saved it: "
                    f"fix it with `tether edit {memory.id}`"
                )
        show_memory(ws.get(memory.id), full=False)


@cli.command()
@click.argument("memory_id")
@click.option("--hard", is_flag=True, help="Delete the note for good instead of archiving it.")
def rm(memory_id: str, hard: bool) -> None:
    """Archive a memory (reversible with `tether restore`), or delete it with --hard."""
    with workspace(require_project=False) as ws:
        memory = ws.delete(memory_id) if hard else ws.archive(memory_id, reason="rm")
    click.echo(f"{'deleted' if hard else 'archived'}: {memory.id} {memory.summary}")


@cli.command()
@click.argument("memory_id")
def restore(memory_id: str) -> None:
    """Make an archived or superseded memory active again."""
    with workspace(require_project=False) as ws:
        memory = ws.restore(memory_id)
    click.echo(f"restored: {memory.id} {memory.summary}")


@cli.command()
@click.argument("memory_id")
def pin(memory_id: str) -> None:
    """Pin a memory: ranks first, pierces hint budgets, exempt from decay."""
    with workspace(require_project=False) as ws:
        memory = ws.pin(memory_id, True)
    click.echo(f"pinned: {memory.id} {memory.summary}")


@cli.command()
@click.argument("memory_id")
def unpin(memory_id: str) -> None:
    """Unpin a memory."""
    with workspace(require_project=False) as ws:
        memory = ws.pin(memory_id, False)
    click.echo(f"unpinned: {memory.id} {memory.summary}")


@cli.command()
@click.argument("memory_id")
@click.option("--session", help="The session that used it.")
def ack(memory_id: str, session: str | None) -> None:
    """Mark a memory as used (acted on): it counts as followed, not ignored."""
    with workspace(require_project=False) as ws:
        memory = ws.ack(memory_id, session=session)
    click.echo(f"acknowledged: {memory.id} {memory.summary}")


@cli.command()
@click.argument("old_id")
@click.argument("new_id")
def supersede(old_id: str, new_id: str) -> None:
    """Mark OLD as replaced by NEW: OLD leaves recall and search but stays readable."""
    with workspace(require_project=False) as ws:
        memory = ws.supersede(old_id, new_id)
    click.echo(f"{old_id} superseded by {memory.id}")


@cli.command()
@click.option("--embeddings", is_flag=True, help="Only re-embed (after switching embedders).")
def reindex(embeddings: bool) -> None:
    """Rebuild the index from the notes (telemetry is kept)."""
    with workspace(require_project=False, sync_notes=False) as ws:
        report = ws.reindex(embeddings_only=embeddings)
        count = ws.store.count(Query(status=None))
    if embeddings:
        click.echo(f"re-embedded {len(report.updated)} memories with {ws.embedder.id}")
    else:
        click.echo(f"indexed {count} memories from notes ({len(report.problems)} notes skipped)")
    for problem in report.problems:
        click.echo(f"warning: skipped note {problem.path}: {problem.problem}", err=True)


@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """List every problem: notes that do not parse, dead file references, index gaps."""
    with workspace(require_project=False, sync_notes=False) as ws:
        report = ws.doctor()
    if as_json:
        emit(
            {
                "memories": report.memories,
                "notes": report.notes,
                "problems": [vars(p) for p in report.problems],
            }
        )
    else:
        click.echo(f"{report.memories} memories, {report.notes} notes")
        for p in report.problems:
            click.echo(f"{p.kind}: {p.where}: {p.message}")
        if not report.problems:
            click.echo("no problems")
    if report.problems:
        sys.exit(1)


@cli.command(name="export")
def export_() -> None:
    """Print every memory as JSON lines (round-trips with `tether import`)."""
    with workspace(require_project=False) as ws:
        for item in ws.export():
            click.echo(json.dumps(item, ensure_ascii=False, sort_keys=True))


@cli.command()
@click.option("--prompt", "-p", default="", help="What the agent was asked.")
@click.option("--file", "-f", "files", multiple=True, help="A file being touched. Repeatable.")
@click.option("--session", help="Session id (for cooldown and recording).")
@click.option("--turn", type=int, help="Turn number in the session.")
@click.option("--limit", "-k", type=click.IntRange(0, 50), help="Most memories (default: recall.limit).")
@click.option("--budget", type=click.IntRange(0), help="Most characters (default: recall.budget).")
@click.option("--no-record", is_flag=True, help="Dry run: do not count this as a surfacing.")
@json_option
def recall(
    prompt: str,
    files: tuple[str, ...],
    session: str | None,
    turn: int | None,
    limit: int | None,
    budget: int | None,
    no_record: bool,
    as_json: bool,
) -> None:
    """What an agent would be given for this prompt and these files, with receipts."""
    from tether.recall import Recaller

    with workspace(require_project=False) as ws:
        result = Recaller(ws).recall(
            prompt, files, session=session, turn=turn, limit=limit, budget=budget, record=not no_record
        )
    if as_json:
        emit(result.to_json())
        return
    for r in result.memories:
        click.echo(f"{r.score:5.3f}  {r.line()}")
    if not result.memories:
        click.echo("nothing to recall for this context", err=True)


@cli.command()
@click.argument("memory_id")
@click.option("--prompt", "-p", default="", help="The prompt to explain against.")
@click.option("--file", "-f", "files", multiple=True, help="A file being touched. Repeatable.")
@json_option
def explain(memory_id: str, prompt: str, files: tuple[str, ...], as_json: bool) -> None:
    """The full score breakdown of one memory for a context, and its rank."""
    from tether.recall import Recaller, receipt

    with workspace(require_project=False) as ws:
        candidate, rank = Recaller(ws).explain(memory_id, prompt, files)
    data = {
        "id": candidate.memory_id,
        "rank": rank,
        "score": round(candidate.score, 4),
        "rank_credit": {k: round(v, 4) for k, v in candidate.rrf.items()},
        "magnitudes": {k: round(v, 4) for k, v in candidate.magnitude.items()},
        "multiplier": candidate.multiplier,
        "evidence": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in candidate.evidence.items()},
        "receipt": receipt(candidate),
        "injectable": rank is not None,
    }
    if as_json:
        emit(data)
        return
    click.echo(f"{candidate.memory_id}: score {data['score']}, rank {rank if rank else '— (not injectable)'}")
    sections: dict[str, dict[str, Any]] = {
        "rank credit": data["rank_credit"],  # type: ignore[dict-item]
        "magnitude": data["magnitudes"],  # type: ignore[dict-item]
        "evidence": data["evidence"],  # type: ignore[dict-item]
    }
    for section, values in sections.items():
        for key, value in values.items():
            click.echo(f"  {section}: {key} = {value}")
    if candidate.multiplier != 1.0:
        click.echo(f"  multiplier: priority high x{candidate.multiplier}")
    click.echo(f"  receipt: via {data['receipt']}")


@cli.command(name="config")
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--user", is_flag=True, help="Write the user config ($TETHER_HOME/config.toml) instead.")
@click.option("--list", "list_all", is_flag=True, help="Every key with its value and meaning.")
@json_option
def config_(key: str | None, value: str | None, user: bool, list_all: bool, as_json: bool) -> None:
    """Read or set a configuration key (e.g. `tether config guard.mode deny-once`)."""
    from tether.config import DEFAULTS, Config, coerce, set_value
    from tether.project import resolve

    paths = resolve(Path.cwd(), require_project=not user and value is not None)
    config = Config.load(*paths.config_files)
    if as_json and value is None:
        emit({name: config[name] for name in DEFAULTS} if key is None else {key: config[key]})
        return
    if list_all or key is None:
        for name, (_, meaning) in DEFAULTS.items():
            click.echo(f"{name} = {config[name]!r}  # {meaning}")
        return
    if value is None:
        coerce(key, config[key] if key in DEFAULTS else None)
        click.echo(config[key])
        return
    target = paths.home / "config.toml" if user else paths.project_config
    click.echo(f"{key} = {set_value(target, key, value)!r}")


def _install_options(func: F) -> F:
    func = click.option("--dry-run", is_flag=True, help="Print the diff, write nothing.")(func)
    func = click.option("--user", "scope", flag_value="user", help="Install for your user (all projects).")(
        func
    )
    func = click.option(
        "--project", "scope", flag_value="project", default=True, help="Install into this project (default)."
    )(func)
    return click.argument("agent", type=click.Choice(("claude", "codex", "cursor", "gemini")))(func)


def _show_install(report: Any, dry_run: bool) -> None:
    if report.diff:
        click.echo(report.diff.rstrip())
    verb = "would change" if dry_run else "changed"
    click.echo(f"{verb}: {', '.join(str(p) for p in report.changed) or 'nothing (already up to date)'}")
    for backup in report.backups:
        click.echo(f"backup: {backup}")
    for note in report.notes:
        click.echo(f"note: {note}")


@cli.command()
@_install_options
def install(agent: str, scope: str, dry_run: bool) -> None:
    """Write tether's hooks and MCP server into an agent's config (merged, idempotent, backed up)."""
    from tether.install import install as do_install
    from tether.project import find_git_root

    root = find_git_root(Path.cwd()) or Path.cwd()
    _show_install(do_install(agent, scope=scope, root=root, home=Path.home(), dry_run=dry_run), dry_run)


@cli.command()
@_install_options
def uninstall(agent: str, scope: str, dry_run: bool) -> None:
    """Remove exactly what `tether install` added."""
    from tether.install import uninstall as do_uninstall
    from tether.project import find_git_root

    root = find_git_root(Path.cwd()) or Path.cwd()
    _show_install(do_uninstall(agent, scope=scope, root=root, home=Path.home(), dry_run=dry_run), dry_run)


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to build the sample repo (default: a new temporary directory).",
)
def demo(directory: Path | None) -> None:
    """Replay a scripted agent session on a sample repo through the real hooks."""
    from tether.demo import run_demo

    run_demo(directory, echo=click.echo)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="tether", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else 1)
    except TetherError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)


def _register_lifecycle() -> None:
    from tether.cli_lifecycle import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


_register_lifecycle()
