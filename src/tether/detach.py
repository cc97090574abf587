"""Starting a process that outlives the hook that started it (the distill worker, the warm embedding process).

Claude Code's SessionEnd hook has a 1.5 s budget and kills what it started when it ends (agent-integrations
§1.5); a prompt hook must return in well under a second. So the child runs in its own session, with no
terminal, and its output goes to a log file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def spawn_detached(argv: list[str], log: Path, *, cwd: Path | None = None) -> None:
    """Start `argv` fully detached (own session, no terminal, output appended to `log`) and return at once.

    >>> spawn_detached([sys.executable, "-m", "tether", "distill", "--transcript", t], log)  # doctest: +SKIP
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {}
    if sys.platform == "win32":
        options["creationflags"] = (
            subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
        )
    else:
        options["start_new_session"] = True  # setsid: no controlling terminal, outside the hook's group
    with log.open("ab") as out:
        subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            close_fds=True,
            **options,
        )


def start_once(
    argv: list[str], log: Path, *, cwd: Path, busy: Callable[[], bool], stamp: Path, grace: float
) -> bool:
    """Start one detached worker for a checkout: not when one is at work (`busy`, its lock held) or was started
    within `grace` seconds (`stamp`'s time), so hooks racing in the second before the worker takes its lock
    start only one. True when this call started it; errors are the caller's (a hook logs and goes on)."""
    try:
        if time.time() - stamp.stat().st_mtime < grace:
            return False
    except FileNotFoundError:
        pass
    if busy():
        return False
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    spawn_detached(argv, log, cwd=cwd)
    return True
