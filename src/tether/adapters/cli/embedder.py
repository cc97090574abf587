"""`tether embedder serve|stop|status`: the warm embedding process that lets hooks use a real model.

Registered on the main group by `tether.adapters.cli.main`. Session start launches the process by itself; these
commands start it by hand, stop it, and show what it serves.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from tether.adapters.cli.common import echo, emit, json_option, json_outcome
from tether.config import Config
from tether.embed.policy import in_process
from tether.errors import ConfigError
from tether.project import Paths, resolve


def _project() -> tuple[Paths, Config, str]:
    paths = resolve(Path.cwd(), require_project=True)
    config = Config.for_paths(paths)
    spec = config.text("embedder")
    if in_process(spec):
        raise ConfigError(
            f"the embedder is {spec or 'hashed'!r}, which needs no server: it runs in every process "
            "(`tether config embedder sentence-transformers:all-MiniLM-L6-v2` chooses a model that does)"
        )
    return paths, config, spec


def _remote(paths: Paths, spec: str) -> Any:
    from tether.embed.warm.client import RemoteEmbedder, socket_path

    # Generous: these are commands a person runs, and the server may be busy embedding for a hook.
    return RemoteEmbedder(socket_path(paths.index, spec), spec, timeout=5.0)


@click.group(name="embedder")
def embedder_group() -> None:
    """The warm embedding process: one per project and model, so hooks can use a real model.

    Session start launches it when a real model is configured (`embed_server.enabled`); it exits after
    `embed_server.idle_seconds` without a request.
    """


@embedder_group.command(name="serve")
@click.option(
    "--idle-seconds",
    type=click.IntRange(min=1),
    default=None,
    help="Exit after this many seconds without a request (default: embed_server.idle_seconds).",
)
@click.option(
    "--detach", is_flag=True, help="Start it in the background and return once it answers (or 60 s pass)."
)
def serve(idle_seconds: int | None, detach: bool) -> None:
    """Load the configured model and serve it to this project's hooks until idle."""
    paths, config, spec = _project()
    if detach:
        _detach(paths, spec, idle_seconds)
        return
    from tether.embed.warm.server import serve as run

    def log(message: str) -> None:
        echo(f"{datetime.now():%Y-%m-%dT%H:%M:%S} embedder: {message}")

    # One thread per model call: the server answers one short query at a time, and a thread pool per core
    # fights the hook processes for the CPU (measured on 2 busy cores: a MiniLM query through torch took
    # ~490 ms with the default pool, ~19 ms with one thread). Set it to override.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    idle = idle_seconds if idle_seconds is not None else config.integer("embed_server.idle_seconds")
    reason = run(paths.index, spec, idle_seconds=idle, log=log)
    if reason == "already running":
        log(f"already running for this project (`tether embedder status`); exiting: {reason}")
    if reason == "load failed":
        raise click.ClickException(f"could not load {spec!r}: see the message above")


def _detach(paths: Paths, spec: str, idle_seconds: int | None) -> None:
    from tether.detach import spawn_detached

    remote = _remote(paths, spec)
    if remote.ready():
        echo(f"already serving {remote.id} ({remote.path})")
        return
    argv = ["tether", "embedder", "serve"]
    if idle_seconds is not None:
        argv += ["--idle-seconds", str(idle_seconds)]
    log = paths.logs / "embed-server.log"
    spawn_detached([sys.executable, "-m", *argv], log, cwd=paths.root or Path.cwd())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if remote.ready():
            echo(f"serving {remote.id} ({remote.path})")
            return
        time.sleep(0.2)
    raise click.ClickException(f"the embedding server did not answer within 60 s: see {log}")


@embedder_group.command(name="stop")
@json_outcome
def stop(as_json: bool) -> None:
    """Stop this project's warm embedding process (the next session start launches it again)."""
    from tether.embed.providers import EmbedderError

    paths, _, spec = _project()
    remote = _remote(paths, spec)
    try:
        reply = remote.stop()
    except EmbedderError as exc:
        if as_json:  # nothing to stop is not a failure
            emit({"ok": True, "stopped": False, "running": False, "reason": str(exc)})
        else:
            echo("no embedding server is running for this project")
        return
    if as_json:
        emit({"ok": True, "stopped": True, "pid": reply.get("pid"), "socket": str(remote.path)})
    else:
        echo(f"stopped the embedding server (pid {reply.get('pid', '?')})")


@embedder_group.command(name="status")
@json_option
def status(as_json: bool) -> None:
    """Whether this project's warm embedding process runs, and what it serves."""
    from tether.embed.providers import EmbedderError

    paths = resolve(Path.cwd(), require_project=True)
    spec = Config.for_paths(paths).text("embedder")
    if in_process(spec):
        # A status, not a mistake: an embedder every process computes has nothing to serve.
        if as_json:
            emit({"running": False, "needed": False, "spec": spec or "hashed"})
        else:
            echo(f"not needed: the embedder is {spec or 'hashed'!r}, which runs in every process")
        return
    remote = _remote(paths, spec)
    try:
        state: dict[str, Any] = {"running": True, "needed": True, **remote.ping(op="status")}
    except EmbedderError as exc:
        state = {"running": False, "needed": True, "spec": spec, "reason": str(exc)}
    state["socket"] = str(remote.path)
    if as_json:
        emit(state)
    elif not state["running"]:
        echo(f"not running ({state['reason']})")
    else:
        what = "ready" if state.get("ready") else "loading the model"
        echo(f"{what}: {state['id']} for {state['spec']!r}, pid {state['pid']}")
        echo(f"  socket: {state['socket']}")
        echo(f"  requests embedded: {state['served']}; idle {state['idle_for']}s of {state['idle_seconds']}s")


COMMANDS = [embedder_group]
