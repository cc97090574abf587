"""`tether` and `python -m tether` start here: the composition root that puts the adapters together.

The CLI, the hooks, the MCP server, the installer and the web UI are separate adapters that don't import each
other; the commands that reach the others (`tether hook`, `tether mcp`, `tether install`, `tether uninstall`,
`tether ui`) are attached to the CLI here.
"""

from __future__ import annotations

import sys

# Not `typing.TYPE_CHECKING`, and no pathlib at start: a hook answered by the resident process imports
# nothing else (`tether.resident.client`); mypy reads any constant of this name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any

# Read commands the resident process can answer (`tether.resident.answers.READ_COMMANDS`).
_RESIDENT_COMMANDS = ("search", "recall", "explain", "get", "list")


def build_cli() -> Any:
    """The whole `tether` command group (attaching the other adapters' commands is idempotent)."""
    from tether.adapters.cli.main import cli
    from tether.adapters.hooks.command import COMMANDS as HOOK
    from tether.adapters.install.adopt import COMMANDS as ADOPT
    from tether.adapters.install.commands import COMMANDS as INSTALL
    from tether.adapters.mcp.command import COMMANDS as MCP
    from tether.adapters.ui.command import COMMANDS as UI
    from tether.resident.command import COMMANDS as RESIDENT

    for command in (*HOOK, *MCP, *INSTALL, *UI, *RESIDENT):
        if cli.commands.get(command.name or "") is not command:
            cli.add_command(command)
    rules = cli.commands["rules"]
    for command in ADOPT:  # `tether rules adopt`: the installer's, since it edits an agent's settings
        if rules.commands.get(command.name or "") is not command:  # type: ignore[attr-defined]
            rules.add_command(command)  # type: ignore[attr-defined]
    return cli


def check_agents(root: Path | None) -> Sequence[Any]:
    """`tether doctor`'s check of the agent integrations (the installer's), for the project and the user."""
    from pathlib import Path

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
        sys.exit(_hook(args[1:]))
    if args[:1] == ["mcp"]:
        # An agent waits for the tool list before its first turn: no CLI framework, no SDK before it.
        from tether.adapters.mcp.front import main as mcp_front
        from tether.resident.client import tool as through_resident

        served = mcp_front(args[1:], through_resident)
        if served is not None:
            sys.exit(served)
    if args[:1] and args[0] in _RESIDENT_COMMANDS and not {"-h", "--help"} & set(args):
        _command_via_resident(args)
    build_cli()
    from tether.adapters.cli.main import main as cli_main

    cli_main(args, obj=extensions())


def _hook(args: list[str]) -> int:
    """The resident process answers when it is up (this process imports only the client); otherwise the
    hook runs here, with what is left of its deadline, and a missing resident process is started."""
    import os
    import time

    from tether.resident import client

    started = time.monotonic()
    try:
        raw = sys.stdin.buffer.read() if sys.stdin is not None else b""
    except (OSError, ValueError, AttributeError):
        raw = b""
    status, output = client.hook(args, raw, os.environ)
    if status == "served":
        try:
            sys.stdout.buffer.write(output)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # the agent stopped listening
        return 0
    if len(args) == 2:
        # A session start with nothing to do, answered from the index without the ordinary path's imports.
        from tether.quickstart import answer

        quick = answer(args[0], args[1], raw, os.environ)
        if quick is not None:
            try:
                sys.stdout.write(quick)
                sys.stdout.flush()
            except (OSError, ValueError):
                pass  # the agent stopped listening
            if status == "absent":
                from tether.resident.launch import start_quietly

                start_quietly(os.getcwd())
            return 0
    import io

    from tether.adapters.hooks import main as hook_main

    if status in ("late", "busy") or time.monotonic() - started > 0.1:
        try:
            deadline = float(os.environ.get("TETHER_HOOK_DEADLINE", client.DEFAULT_DEADLINE))
        except ValueError:
            deadline = client.DEFAULT_DEADLINE
        os.environ["TETHER_HOOK_DEADLINE"] = f"{max(0.2, deadline - (time.monotonic() - started)):.3f}"
    code = hook_main(args, stdin=io.StringIO(raw.decode("utf-8", "replace")), hard=True)
    if status == "absent":
        from tether.resident.launch import start_quietly

        start_quietly(os.getcwd())
    return code


def _command_via_resident(args: list[str]) -> None:
    """Exit with the resident process's answer to a read command; return when it gave none."""
    import os

    from tether.resident import client

    answered = client.cli(args, os.environ)
    if answered is None:
        from tether.resident.launch import start_quietly

        start_quietly(os.getcwd())  # the first command starts it; the next one finds it
        return
    code, out, err = answered
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    sys.exit(code)


if __name__ == "__main__":
    main()
