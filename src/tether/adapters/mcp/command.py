"""`tether mcp`, attached to the CLI by `tether.__main__`."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--http", is_flag=True, help="Serve streamable HTTP on loopback instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to bind with --http.")
@click.option("--port", type=int, default=8765, show_default=True, help="Port for --http.")
@click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A directory inside the project to serve (default: $CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR, "
    "else the current directory).",
)
def mcp(http: bool, host: str, port: int, project: Path | None) -> None:
    """Serve the memory tools over MCP (stdio by default)."""
    from tether.adapters.mcp import project_start

    if not http:
        from tether.adapters.mcp.front import serve
        from tether.project import user_home

        serve(project_start(project, Path.cwd()), user_home())  # answers the handshake before the SDK loads
        return
    from tether.adapters.mcp.server import run

    run(project_start(project, Path.cwd()), http=True, host=host, port=port)


COMMANDS = (mcp,)
