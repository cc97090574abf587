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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .mock_gemini import MockGemini
from .process import npm_install, run_agent
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
    return npm_install(
        cache_dir,
        GEMINI_PACKAGE,
        GEMINI_VERSION,
        "gemini",
        "install Node.js (>= 20) to run the Gemini e2e tests",
    )


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
        done = run_agent(args, repo, run_env, timeout)
        stdout, stderr = done.stdout, done.stderr
        try:
            result = json.loads(stdout[stdout.index("{") :]) if "{" in stdout else None
        except ValueError:
            result = None
        run = GeminiRun(
            args=args,
            returncode=done.returncode,
            stdout=stdout,
            stderr=stderr,
            result=result if isinstance(result, dict) else None,
            http_log=mock.requests,
            run_dir=run_dir,
            seconds=done.seconds,
            requests=mock.turn_bodies,
        )
    (run_dir / "requests.json").write_text(json.dumps([r.body for r in run.http_log], indent=1))
    (run_dir / "stdout.txt").write_text(stdout)
    (run_dir / "stderr.txt").write_text(stderr)
    if mock.errors:
        raise AssertionError(f"the mock model's script failed: {mock.errors}\n{run.describe()}")
    return run
