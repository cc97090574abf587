"""CLI commands on the project as a whole: init, config, reindex, doctor, export, demo.

Registered on the main group by `tether.adapters.cli.main`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tether.adapters.cli.common import (
    ReportedProblem,
    echo,
    emit,
    extensions,
    json_option,
    memories,
    progress_line,
    workspace,
)
from tether.model.display import safe_json
from tether.store.base import Query


@click.command()
@click.option(
    "--database",
    metavar="URL",
    help="Share memory through the team database at URL (postgresql://...): a user-level setting, "
    "written to $TETHER_HOME/config.toml, never to the project. 'none' goes back to the local index.",
)
@json_option
def init(database: str | None, as_json: bool) -> None:
    """Create .tether/ at the git root (memories/, config.toml, .gitignore)."""
    from tether.project import init_project

    paths, created = init_project(Path.cwd())
    said: dict[str, object] = {"tether_dir": str(paths.tether_dir), "created": created}
    if not as_json:
        echo(f"{'initialized' if created else 'already initialized'}: {paths.tether_dir}")
    if database is not None:
        from tether.config.database import redact_url, set_database_url

        url = None if database.strip().lower() in ("", "none") else database.strip()
        written = set_database_url(paths.home, url)
        said.update(database=redact_url(url) if url else None, config=str(written))
        if url is None and not as_json:
            echo(f"team database: off (removed from {written}); memory is this checkout's own again")
        elif url is not None:
            if not as_json:
                echo(f"team database: {redact_url(url)} (in {written}, for your user only)")
            with workspace() as ws:  # connects, migrates, and shares this checkout's notes
                shared = ws.store.count(Query(status=None))
            said["shared"] = shared
            if not as_json:
                echo(f"shared: {memories(shared)}; `tether store status` for more")
    if as_json:
        emit(said)


@click.command(name="config")
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--user", is_flag=True, help="Write the user config ($TETHER_HOME/config.toml) instead.")
@click.option("--list", "list_all", is_flag=True, help="Every key with its value and meaning.")
@click.option(
    "--approve",
    "approve",
    metavar="KEY",
    help="Use this checkout's project value of a user-level KEY (embedder, distill.*, ...) on this machine.",
)
@json_option
def config_(
    key: str | None, value: str | None, user: bool, list_all: bool, approve: str | None, as_json: bool
) -> None:
    """Read or set a configuration key (e.g. `tether config guard.mode deny-once`).

    Keys that choose where memories, prompts and API keys are sent, or what tether starts (embedder,
    embed_server.enabled, distill.enabled, distill.provider, distill.base_url), are read from your own
    config; a project's value for one is used only once you approve it here with --approve KEY.
    """
    from tether.config import DEFAULTS, USER_LEVEL, Approvals, Config, project_may_set, set_value
    from tether.errors import ConfigError
    from tether.project import resolve

    paths = resolve(Path.cwd(), require_project=(not user and value is not None) or approve is not None)
    config = Config.for_paths(paths)
    if approve is not None:
        found = config.project_value(approve)
        if found is None or paths.root is None:
            raise ConfigError(
                f"{paths.project_config} sets no unapproved {approve}: nothing to approve "
                f"(user-level keys: {', '.join(USER_LEVEL)})"
            )
        Approvals(paths.approvals).approve(paths.root, approve, found)
        echo(f"approved {approve} = {found!r} for {paths.root} (a changed value asks again)")
        return
    if as_json and value is None:
        emit({name: config.value(name) for name in DEFAULTS} if key is None else {key: config.value(key)})
        return
    if list_all or key is None:
        for name, (_, meaning) in DEFAULTS.items():
            note = (
                f"  (project value {config.project_value(name)!r} not approved)"
                if config.project_value(name) is not None
                else ""
            )
            echo(f"{name} = {config.value(name)!r}  # {meaning}{note}")
        for ignored in config.ignored:
            echo(f"warning: {ignored.message()}", err=True)
        return
    if value is None:
        echo(str(config.value(key)))
        return
    target = paths.home / "config.toml" if user else paths.project_config
    written = set_value(target, key, value)
    echo(f"{key} = {written!r}")
    if not user and paths.root is not None and not project_may_set(key, written):
        # Typed here by the person: that is the approval, for this checkout and this value.
        Approvals(paths.approvals).approve(paths.root, key, written)
        echo(
            f"note: {key} is a user-level setting ({USER_LEVEL[key]}): approved for this checkout; "
            "teammates who clone it are asked to approve it themselves",
            err=True,
        )


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to build the sample repo (default: a new temporary directory).",
)
def demo(directory: Path | None) -> None:
    """Replay a scripted agent session on a sample repo through the real hooks."""
    from tether.adapters.cli.demo import run_demo

    run_demo(directory, echo=click.echo)


@click.command()
@click.option("--embeddings", is_flag=True, help="Only re-embed (after switching embedders).")
@json_option
def reindex(embeddings: bool, as_json: bool) -> None:
    """Rebuild the index from the notes (telemetry is kept), with its progress on a terminal."""
    with workspace(require_project=False, sync_notes=False) as ws:
        with progress_line() as progress:  # on a terminal only, never with --json
            report = ws.reindex(embeddings_only=embeddings, progress=progress)
        count = ws.store.count(Query(status=None))
    if as_json:
        emit(
            {
                "memories": count,
                "re_embedded": len(report.updated) if embeddings else None,
                "embedder": ws.embedder.id,
                "skipped": [{"path": str(p.path), "problem": p.problem} for p in report.problems],
            }
        )
        return
    if embeddings:
        echo(f"re-embedded {memories(len(report.updated))} with {ws.embedder.id}")
    else:
        echo(f"indexed {memories(count)} from notes ({len(report.problems)} notes skipped)")
    for problem in report.problems:
        echo(f"warning: skipped note {problem.path}: {problem.problem}", err=True)


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """List every problem: notes that do not parse, dead file references, index gaps, agent integrations."""
    with workspace(require_project=False, sync_notes=False) as ws:
        report = ws.doctor()
        root = ws.root
    problems: list[ReportedProblem] = [*report.problems]
    for check in extensions(ctx).doctor_checks:  # e.g. the installer's look at agent configs
        problems += check(root)
    if as_json:
        emit(
            {
                "memories": report.memories,
                "notes": report.notes,
                "problems": [{"kind": p.kind, "where": p.where, "message": p.message} for p in problems],
            }
        )
    else:
        echo(f"{memories(report.memories)}, {report.notes} notes")
        for p in problems:
            echo(f"{p.kind}: {p.where}: {p.message}")
        if not problems:
            echo("no problems")
    if problems:
        sys.exit(1)


@click.command(name="export")
def export_() -> None:
    """Print every memory as JSON lines (round-trips with `tether import`)."""
    with workspace(require_project=False) as ws:
        for item in ws.export():
            echo(safe_json(item, sort_keys=True))


COMMANDS = (init, config_, demo, reindex, doctor, export_)
