"""The `tether` command line: a thin adapter over `tether.workspace` and friends.

Exit codes: 0 ok, 1 a user error (with a message saying what to do), 2 usage.

The group and `main` live here; the commands live in `cli_memories` (single memories), `cli_recall`
(search, recall, explain), `cli_project` (init, config, install, index upkeep), `cli_lifecycle`
(stats, cleanup, intake) and `cli_store` (store status, copy), each registered below.
"""

from __future__ import annotations

import sys

import click

from tether.adapters.cli import lifecycle as cli_lifecycle
from tether.adapters.cli import memories as cli_memories
from tether.adapters.cli import project as cli_project
from tether.adapters.cli import recall as cli_recall
from tether.adapters.cli.common import echo, emit, json_option, read_details, show_memory, workspace
from tether.errors import TetherError, explain_os_error

__all__ = ["cli", "emit", "json_option", "main", "read_details", "show_memory", "workspace"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tether")
def cli() -> None:
    """tether: code-aware memory for coding agents.

    Memories are markdown notes in .tether/memories/, tied to the files they are about, recalled by what
    the agent touches and asks.
    """


@cli.command(name="help")
@click.argument("command", nargs=-1)
def help_(command: tuple[str, ...]) -> None:
    """Show tether's help, or one command's: `tether help`, `tether help rules sync`."""
    target: click.Command = cli
    names: list[str] = []
    for name in command:
        sub = target.commands.get(name) if isinstance(target, click.Group) else None
        if sub is None:
            raise click.UsageError(
                f"no command `tether {' '.join([*names, name])}`: `tether help` lists them"
            )
        target = sub
        names.append(name)
    with click.Context(target, info_name=" ".join(["tether", *names])) as ctx:
        echo(target.get_help(ctx))


def _register() -> None:
    from tether.adapters.cli import anchors as cli_anchors
    from tether.adapters.cli import embedder as cli_embedder
    from tether.adapters.cli import intake as cli_intake
    from tether.adapters.cli import review as cli_review
    from tether.adapters.cli import store as cli_store

    for module in (
        cli_project,
        cli_memories,
        cli_recall,
        cli_lifecycle,
        cli_intake,
        cli_embedder,
        cli_store,
        cli_review,
        cli_anchors,
    ):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None, obj: object = None) -> None:
    """Run the CLI; `obj` (an `Extensions`) is what the composition root adds from the other adapters."""
    try:
        cli.main(args=argv, prog_name="tether", standalone_mode=False, obj=obj)
    except click.exceptions.Abort:
        echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else 1)
    except TetherError as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:  # a full disk, a read-only file system: the machine's state, said plainly
        echo(f"error: {explain_os_error(exc)}", err=True)
        sys.exit(1)
