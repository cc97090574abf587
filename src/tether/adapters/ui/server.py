"""`tether ui`'s server: the app on a loopback socket, its address printed with the per-run token.

The socket is bound before anything else happens, so the printed address is reachable at once and a
browser opened on it waits for the first accept instead of failing.

    $ python -m tether.adapters.ui.server --no-open
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from tether.adapters.ui.core import TetherError, UICore
from tether.adapters.ui.security import BIND_HOST, Secrets, check_bind


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host` (loopback only) and `port` (0: a free one)."""
    check_bind(host)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise TetherError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another port with --port, "
            "or leave it out for a free one"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    cwd: Path,
    *,
    port: int = 0,
    host: str = BIND_HOST,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
    home: Path | None = None,
) -> None:
    """Serve the UI for the project at or above `cwd` until interrupted."""
    import uvicorn

    from tether.adapters.ui.app import build_app

    sock = bind(host, port)
    actual = sock.getsockname()[1]
    core = UICore.open(cwd, home=home)
    keys = Secrets()
    app = build_app(core, port=actual, keys=keys)
    address = f"http://{BIND_HOST}:{actual}/?token={keys.token}"
    say(f"tether ui for {core.title}: {address}")
    say("(the token works for this run only; Ctrl+C stops the server)")
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(address,), daemon=True).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        core.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tether.adapters.ui.server", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1 (0: a free one).")
    parser.add_argument("--host", default=BIND_HOST, help="Only 127.0.0.1 is accepted.")
    parser.add_argument("--no-open", action="store_true", help="Do not open a browser.")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), help="Directory inside the project.")
    args = parser.parse_args(argv)
    try:
        serve(
            args.cwd,
            port=args.port,
            host=args.host,
            open_browser=not args.no_open,
            say=lambda s: print(s, flush=True),
        )
    except TetherError as exc:
        parser.exit(2, f"tether ui: {exc}\n")
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
