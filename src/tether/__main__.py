"""`tether` and `python -m tether` start here: the composition root that puts the adapters together.

The CLI, the hooks, the MCP server, the installer and the web UI are separate adapters that don't import each
other; the commands that reach the others (`tether hook`, `tether mcp`, `tether install`, `tether uninstall`,
`tether ui`) are attached to the CLI here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def build_cli() -> Any:
    """The whole `tether` command group (attaching the other adapters' commands is idempotent)."""
    from tether.adapters.cli.main import cli
    from tether.adapters.hooks.command import COMMANDS as HOOK
    from tether.adapters.install.commands import COMMANDS as INSTALL
    from tether.adapters.mcp.command import COMMANDS as MCP
    from tether.adapters.ui.command import COMMANDS as UI

    for command in (*HOOK, *MCP, *INSTALL, *UI):
        if cli.commands.get(command.name or "") is not command:
            cli.add_command(command)
    return cli


def check_agents(root: Path | None) -> Sequence[Any]:
    """`tether doctor`'s check of the agent integrations (the installer's), for the project and the user."""
    from tether.adapters.install.check import check_agents as check
    from tether.project import find_git_root

    return check(root or find_git_root(Path.cwd()), Path.home())


def extensions() -> Any:
    """What the CLI's commands get from the other adapters (click's `obj`)."""
    from tether.adapters.cli.common import Extensions

    return Extensions(doctor_checks=(check_agents,))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        # Hooks run on every prompt and tool call: skip the CLI framework's import.
        from tether.adapters.hooks import main as hook_main

        sys.exit(hook_main(args[1:], hard=True))
    build_cli()
    from tether.adapters.cli.main import main as cli_main

    cli_main(args, obj=extensions())


if __name__ == "__main__":
    main()
