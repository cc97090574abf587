"""Running a real agent CLI under the e2e harness: its own process group, a deadline, and what it printed.

The agent starts hooks and MCP servers of its own; on timeout the whole group is killed together, so a stuck
run never leaves them behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def run_agent(args: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> Finished:
    """Run `args` in `cwd` with `env` and no stdin; kill its process group after `timeout` seconds."""
    started = time.monotonic()
    process = subprocess.Popen(
        list(args),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n[harness] killed after {timeout}s"
        timed_out = True
    return Finished(process.returncode, stdout, stderr, timed_out, time.monotonic() - started)
