"""A real agent CLI under the e2e harness: installed once from the npm registry, run in its own process group.

The agent starts hooks and MCP servers of its own; on timeout the whole group is killed together, so a stuck
run never leaves them behind.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH")


class RegistryUnreachable(RuntimeError):
    """npm could not reach its registry, so the agent cannot be installed here."""


def npm_install(cache_dir: Path, package: str, version: str, command: str, needs: str) -> Path:
    """Install `package` (pinned at `version`) into `cache_dir` once, from the npm registry only, and return
    the launcher of `command`. `needs` says what to install when node or npm is missing."""
    launcher = cache_dir / "node_modules" / ".bin" / command
    stamp = cache_dir / f".installed-{version}"
    if stamp.exists() and launcher.exists():
        return launcher
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RuntimeError(f"node and npm are not on PATH; {needs}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test runs: one installs, the others wait
        if stamp.exists() and launcher.exists():
            return launcher
        done = subprocess.run(
            [
                *("npm", "install", "--prefix", str(cache_dir), "--no-save", "--no-package-lock"),
                *(
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--fetch-timeout=20000",
                    "--fetch-retries=1",
                ),
                package,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        output = done.stdout + done.stderr
        if done.returncode != 0:
            if any(code in output for code in NETWORK_ERRORS):
                raise RegistryUnreachable(f"npm could not reach its registry to install {package}")
            raise RuntimeError(f"npm install {package} failed:\n{output[-3000:]}")
        if not launcher.exists():
            raise RuntimeError(f"{package} installed but {launcher} is missing")
        stamp.touch()
    return launcher


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
