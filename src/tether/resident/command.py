"""`tether resident serve|start|status|stop`, attached to the CLI by `tether.__main__`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from tether.adapters.cli.common import emit, json_outcome
from tether.resident import client


def _root() -> Path:
    from tether.errors import NoProjectError

    found = client.project_root(os.getcwd())
    if found is None:
        raise click.ClickException(
            str(NoProjectError(f"no .tether/ found from {os.getcwd()}: run `tether init` first"))
        )
    return Path(found)


@click.group()
def resident() -> None:
    """The project's resident process: it answers hooks and read commands with the index kept open.

    Session start (or the first hook or command) starts it; it exits after `resident.idle_seconds`
    without a request. Set `resident.enabled = false`, or TETHER_RESIDENT=0, to answer everything in process.
    """


@resident.command()
@click.option("--idle-seconds", type=click.FloatRange(0.5), help="Exit after this long without a request.")
@click.option("--max-rss-mib", type=click.FloatRange(16), help="Restart past this much resident memory.")
def serve(idle_seconds: float | None, max_rss_mib: float | None) -> None:
    """Serve the project in the foreground until idle, stopped or orphaned (what session start runs)."""
    import signal

    from tether.config import Config
    from tether.fs import file_lock
    from tether.project import resolve
    from tether.resident.answers import Answers
    from tether.resident.launch import private_dir
    from tether.resident.server import ResidentServer

    root = _root()
    if not client.enabled(os.environ):
        raise click.ClickException(
            "the resident process is off here: TETHER_RESIDENT=0, or TETHER_RESIDENT_TRANSPORT (else "
            "TETHER_TRANSPORT) is not `unix` or `tcp` (or is `unix` where there are no Unix sockets): "
            "unset it, or set it to `tcp`"
        )
    paths = resolve(root, Path(client.user_home(os.environ)))
    config = Config.load(*paths.config_files)
    idle = idle_seconds or float(config.integer("resident.idle_seconds"))
    cap = max_rss_mib or float(config.integer("resident.max_rss_mib"))
    socket = Path(client.socket_path(str(root), os.environ))
    private_dir(socket.parent)

    def log(message: str) -> None:
        click.echo(f"resident {os.getpid()}: {message}", err=True)

    with file_lock(Path(client.lock_path(str(socket))), wait=False) as held:
        if not held:
            log("another process serves this project")
            return
        socket.unlink(missing_ok=True)  # the lock was free: whatever socket is there is a dead one's
        server = ResidentServer(
            socket,
            Answers(root, paths.home, log=log),
            idle_seconds=idle,
            max_rss_mib=cap,
            project_dir=root / ".tether",
            transport=client.transport(os.environ) or "unix",
        )
        Path(client.starting_path(str(socket))).unlink(missing_ok=True)
        signal.signal(signal.SIGTERM, lambda signum, frame: server.stopping.set())
        where = f"127.0.0.1 (endpoint {socket})" if server.transport == "tcp" else str(socket)
        log(f"serving {root} on {where} (idle exit {idle:g}s, memory cap {cap:g} MiB)")
        reason = server.run(log)
        log(f"exiting: {reason}")
    if reason == "memory":
        # A fresh process in this one's place: the lock and socket are released above.
        os.execv(sys.executable, [sys.executable, "-m", "tether", "resident", "serve", *sys.argv[3:]])


@resident.command()
@json_outcome
def start(as_json: bool) -> None:
    """Start the resident process in the background unless it runs (or is off)."""
    from tether.resident.launch import start as launch

    root = _root()
    started = launch(root)
    if not as_json:
        click.echo("started" if started else "not started: running, starting, or off")
        return
    reply: dict[str, object] = {"ok": True, "started": started}
    if not started:
        running = client.request(str(root), {"op": "status"}, os.environ, timeout=2.0) is not None
        reply["running"] = running
        reply["reason"] = "running" if running else "starting, or off (resident.enabled, TETHER_RESIDENT)"
    emit(reply)


@resident.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def status(as_json: bool) -> None:
    """Whether the resident process runs, and what it has served."""
    answered = client.request(str(_root()), {"op": "status"}, os.environ, timeout=2.0)
    reply = answered[0] if answered else {"running": False}
    reply.setdefault("running", answered is not None)
    if as_json:
        click.echo(json.dumps(reply, indent=2))
        return
    if not reply["running"]:
        click.echo("not running")
        return
    click.echo(
        f"running: pid {reply.get('pid')}, served {reply.get('served')}, refused {reply.get('refused')}, "
        f"{reply.get('rss_mib')} MiB, idle {reply.get('idle_for')}s of {reply.get('idle_seconds')}s"
    )


@resident.command()
@json_outcome
def stop(as_json: bool) -> None:
    """Stop the resident process (the next session start or command starts another)."""
    answered = client.request(str(_root()), {"op": "stop"}, os.environ, timeout=2.0)
    if as_json:  # nothing to stop is not a failure
        emit(
            {
                "ok": True,
                "stopping": answered is not None,
                **({"pid": answered[0].get("pid")} if answered else {}),
            }
        )
    else:
        click.echo("stopping" if answered else "not running")


COMMANDS = (resident,)
