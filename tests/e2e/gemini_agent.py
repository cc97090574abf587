"""Running the real Gemini CLI (``gemini -p``) offline against the scripted Gemini API mock.

What Gemini CLI 0.61.0 needs, found by running it (more in README.md here):
- ``GEMINI_API_KEY`` (any value) with ``security.auth.selectedType = "gemini-api-key"`` in
  ``$HOME/.gemini/settings.json``, and ``GOOGLE_GEMINI_BASE_URL`` = the mock: the CLI's genai SDK then sends
  ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` for each turn (without ``--model`` its router
  first asks a tools-less ``:generateContent`` question, which the mock answers without spending a turn);
- the repository in ``$HOME/.gemini/trustedFolders.json`` (``"TRUST_FOLDER"``): headless runs in an untrusted
  folder exit 55 ("not running in a trusted directory"), and an untrusted folder's project settings (hooks,
  MCP servers) are not loaded;
- headless mode offers only tools that need no confirmation: ``--approval-mode auto_edit`` adds
  ``replace``/``write_file``; MCP tools need allowing (``--allowed-tools mcp_tether_memory_get,...`` or
  ``tools.allowed`` in settings, both of which 0.61.0 calls deprecated in favour of its policy engine, a user
  policy rule, or ``trust: true`` on the server);
- ``privacy.usageStatisticsEnabled = false`` and auto-update off: under ``strace -f -e connect`` a run connects to
  the mock on 127.0.0.1 and to nothing else (no DNS query).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .codex_agent import NETWORK_ERRORS, RegistryUnreachable
from .mock_gemini import MockGemini
from .scripted_server import LoggedRequest, Script

GEMINI_VERSION = "0.61.0"
GEMINI_PACKAGE = f"@google/gemini-cli@{GEMINI_VERSION}"
# Fixed, so the CLI's model router has nothing to choose (the mock ignores the name).
MOCK_MODEL = "gemini-2.5-pro"

HOME_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def install_gemini(cache_dir: Path) -> Path:
    """Install the pinned Gemini CLI into ``cache_dir`` once (npm registry only); return its launcher."""
    launcher = cache_dir / "node_modules" / ".bin" / "gemini"
    stamp = cache_dir / f".installed-{GEMINI_VERSION}"
    if stamp.exists() and launcher.exists():
        return launcher
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise RuntimeError(
            "node and npm are not on PATH; install Node.js (>= 20) to run the Gemini e2e tests"
        )
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
                GEMINI_PACKAGE,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        output = done.stdout + done.stderr
        if done.returncode != 0:
            if any(code in output for code in NETWORK_ERRORS):
                raise RegistryUnreachable(f"npm could not reach its registry to install {GEMINI_PACKAGE}")
            raise RuntimeError(f"npm install {GEMINI_PACKAGE} failed:\n{output[-3000:]}")
        if not launcher.exists():
            raise RuntimeError(f"{GEMINI_PACKAGE} installed but {launcher} is missing")
        stamp.touch()
    return launcher


def prepare_home(home: Path, repo: Path) -> None:
    """$HOME/.gemini as a user who signed in with an API key and trusted ``repo`` has it."""
    directory = home / ".gemini"
    directory.mkdir(parents=True, exist_ok=True)
    settings = directory / "settings.json"
    if not settings.exists():
        settings.write_text(json.dumps(HOME_SETTINGS, indent=2) + "\n")
    trusted = directory / "trustedFolders.json"
    folders = json.loads(trusted.read_text()) if trusted.exists() else {}
    folders[str(repo)] = "TRUST_FOLDER"
    trusted.write_text(json.dumps(folders, indent=2) + "\n")


@dataclass
class GeminiRun:
    """What one ``gemini -p`` run did: exit status, its JSON result and the model turns it requested."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None
    http_log: list[LoggedRequest]
    run_dir: Path
    seconds: float
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def response(self) -> str | None:
        return None if self.result is None else self.result.get("response")

    def describe(self) -> str:
        routes = ", ".join(f"{r.method} {r.path} -> {r.status}" for r in self.http_log) or "none"
        return (
            f"gemini exited {self.returncode} after {self.seconds:.1f}s; requests: {routes}\n"
            f"stdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}"
        )


def launch_gemini(
    gemini_bin: Path,
    repo: Path,
    env: Mapping[str, str],
    prompt: str,
    script: Script,
    *,
    run_dir: Path,
    extra_args: Sequence[str] = (),
    timeout: float = 90.0,
    approval_mode: str = "auto_edit",
) -> GeminiRun:
    """Run ``gemini -p prompt --output-format json`` in ``repo`` against a mock model replaying ``script``.

    ``env`` must carry HOME (see ``prepare_home``); the API key and base URL are added here.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_home(Path(env["HOME"]), repo)
    with MockGemini(script) as mock:
        args = [
            str(gemini_bin),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--model",
            MOCK_MODEL,
            "--approval-mode",
            approval_mode,
            *extra_args,
        ]
        run_env = {**env, "GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": mock.url}
        started = time.monotonic()
        process = subprocess.Popen(
            args,
            cwd=repo,
            env=run_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            stderr += f"\n[harness] killed after {timeout}s"
        try:
            result = json.loads(stdout[stdout.index("{") :]) if "{" in stdout else None
        except ValueError:
            result = None
        run = GeminiRun(
            args=args,
            returncode=process.returncode,
            stdout=stdout,
            stderr=stderr,
            result=result if isinstance(result, dict) else None,
            http_log=mock.requests,
            run_dir=run_dir,
            seconds=time.monotonic() - started,
            requests=mock.turn_bodies,
        )
    (run_dir / "requests.json").write_text(json.dumps([r.body for r in run.http_log], indent=1))
    (run_dir / "stdout.txt").write_text(stdout)
    (run_dir / "stderr.txt").write_text(stderr)
    if mock.errors:
        raise AssertionError(f"the mock model's script failed: {mock.errors}\n{run.describe()}")
    return run
