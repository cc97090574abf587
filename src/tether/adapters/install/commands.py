"""`tether install` and `tether uninstall`: the installer's commands, attached to the CLI by `tether.__main__`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from tether.errors import TetherError, explain_os_error
from tether.model.display import printable, safe_json

if TYPE_CHECKING:
    from tether.adapters.install.installer import InstallReport

F = TypeVar("F", bound=Callable[..., Any])


def echo(message: str) -> None:
    """Config diffs and paths may hold anything a file can: control characters are shown, not obeyed."""
    click.echo(printable(message))


AGENT = click.argument("agent", type=click.Choice(("claude", "codex", "cursor", "gemini")))


def _scope_options(verb: str) -> Callable[[F], F]:
    """--project, --user and --dry-run, worded for installing or removing."""

    def decorate(func: F) -> F:
        func = click.option("--dry-run", is_flag=True, help="Print the diff, write nothing.")(func)
        func = click.option(
            "--user", "scope", flag_value="user", help=f"{verb} your user config (all projects)."
        )(func)
        return click.option(
            "--project",
            "scope",
            flag_value="project",
            default=True,
            help=f"{verb} this project's config, the files a team commits (default).",
        )(func)

    return decorate


def _json_outcome(func: F) -> F:
    """`--json`: `{"ok": true, ...}` naming what changed, or `{"ok": false, "error": "..."}` besides the
    usual message and exit 1. (`tether.adapters.cli.common.json_outcome`'s twin: adapters do not import
    each other.)"""

    @functools.wraps(func)
    def run(*args: Any, as_json: bool, **kwargs: Any) -> Any:
        try:
            return func(*args, as_json=as_json, **kwargs)
        except (TetherError, click.ClickException, OSError) as exc:
            if as_json and not isinstance(exc, click.UsageError):
                if isinstance(exc, click.ClickException):
                    text = exc.format_message()
                elif isinstance(exc, OSError) and not isinstance(exc, TetherError):
                    text = explain_os_error(exc)
                else:
                    text = str(exc)
                echo(safe_json({"ok": False, "error": text}, indent=2))
            raise

    json_flag = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
    return cast(F, json_flag(run))


def _report(report: InstallReport, dry_run: bool, as_json: bool) -> None:
    if not as_json:
        _show_install(report, dry_run)
        return
    data = {
        "ok": True,
        "agent": report.agent,
        "scope": report.scope,
        "dry_run": dry_run,
        "changed": [str(p) for p in report.changed],
        "backups": [str(p) for p in report.backups],
        "notes": report.notes,
        "diff": report.diff,
    }
    echo(safe_json(data, indent=2))


def _show_install(report: InstallReport, dry_run: bool) -> None:
    if report.diff:
        echo(report.diff.rstrip())
    verb = "would change" if dry_run else "changed"
    echo(f"{verb}: {', '.join(str(p) for p in report.changed) or 'nothing (already up to date)'}")
    for backup in report.backups:
        echo(f"backup: {backup}")
    for note in report.notes:
        echo(f"note: {note}")


@click.command()
@AGENT
@_scope_options("Install into")
@click.option(
    "--allow-tools",
    type=click.Choice(("read", "all", "none")),
    default="read",
    show_default=True,
    help="Claude Code and Gemini CLI: tether's MCP tools that run without asking (read: search, get, "
    "links; all: also add, remove, pin; none: they ask, and headless `-p` runs cannot use them).",
)
@_json_outcome
def install(agent: str, scope: str, dry_run: bool, allow_tools: str, as_json: bool) -> None:
    """Write tether's hooks and MCP server into an agent's config (merged, idempotent, backed up).

    Project files are what a team commits: their commands run tether when a machine has it and stay quiet
    (one hint at session start) when it does not, and they never name this machine's paths.
    """
    from tether.adapters.install.installer import install as do_install
    from tether.project import find_git_root

    root = find_git_root(Path.cwd()) or Path.cwd()
    report = do_install(
        agent, scope=scope, root=root, home=Path.home(), dry_run=dry_run, allow_tools=allow_tools
    )
    _report(report, dry_run, as_json)


@click.command()
@AGENT
@_scope_options("Remove from")
@_json_outcome
def uninstall(agent: str, scope: str, dry_run: bool, as_json: bool) -> None:
    """Remove exactly what `tether install` added (hooks, MCP server, tool rules, TETHER_BIN)."""
    from tether.adapters.install.installer import uninstall as do_uninstall
    from tether.project import find_git_root

    root = find_git_root(Path.cwd()) or Path.cwd()
    report = do_uninstall(agent, scope=scope, root=root, home=Path.home(), dry_run=dry_run)
    _report(report, dry_run, as_json)


COMMANDS = (install, uninstall)
