"""`tether` and `python -m tether` start here: the composition root that puts the adapters together.

The CLI, the hooks and the MCP server are separate adapters that don't import each other; the two
commands that start the other adapters (`tether hook`, `tether mcp`) are attached to the CLI here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def build_cli() -> Any:
    """The whole `tether` command group."""
    import click

    from tether.cli import cli

    @cli.command(context_settings={"ignore_unknown_options": True})
    @click.argument("agent", type=click.Choice(("claude", "codex", "cursor", "gemini")))
    @click.argument("event")
    def hook(agent: str, event: str) -> None:
        """Run one agent hook: the agent's JSON on stdin, context or a decision on stdout.

        Installed by `tether install`; fails open (exit 0, no output, a line in .tether/logs/hooks.log).
        """
        from tether.hooks import main as hook_main

        sys.exit(hook_main([agent, event]))

    @cli.command()
    @click.option("--http", is_flag=True, help="Serve streamable HTTP on loopback instead of stdio.")
    @click.option(
        "--host", default="127.0.0.1", show_default=True, help="Loopback address to bind with --http."
    )
    @click.option("--port", type=int, default=8765, show_default=True, help="Port for --http.")
    def mcp(http: bool, host: str, port: int) -> None:
        """Serve the memory tools over MCP (stdio by default)."""
        from tether.mcp_server import run

        run(Path.cwd(), http=http, host=host, port=port)

    return cli


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        # Hooks run on every prompt and tool call: skip the CLI framework's import.
        from tether.hooks import main as hook_main

        sys.exit(hook_main(sys.argv[2:]))
    build_cli()
    from tether.cli import main as cli_main

    cli_main(sys.argv[1:])


if __name__ == "__main__":
    main()
