"""`tether ui`, attached to the CLI by `tether.__main__`."""

from __future__ import annotations

from pathlib import Path

import click


def missing_extra() -> str | None:
    """The name of the first package of the `ui` extra that cannot be imported, or None."""
    import importlib.util

    for name in ("starlette", "uvicorn"):
        if importlib.util.find_spec(name) is None:
            return name
    return None


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0 picks a free one).",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind: only 127.0.0.1 is accepted."
)
@click.option("--no-open", is_flag=True, help="Print the address without opening a browser.")
def ui(port: int, host: str, no_open: bool) -> None:
    """Browse, search, edit and clean up memory in a local web app (127.0.0.1, per-run token)."""
    missing = missing_extra()
    if missing is not None:
        raise click.ClickException(f"the web UI needs {missing}, from the ui extra: pip install 'tether[ui]'")
    from tether.adapters.ui.core import TetherError
    from tether.adapters.ui.server import serve

    try:
        serve(Path.cwd(), port=port, host=host, open_browser=not no_open, say=lambda s: click.echo(s))
    except TetherError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        pass


COMMANDS = (ui,)
