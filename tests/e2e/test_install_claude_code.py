"""bin/install-claude-code, run from a copy in tmp_path so the real cache is never touched (no agent needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from .conftest import INSTALLER, REGISTRY_UNREACHABLE

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not on PATH")


def installer_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "bin" / "install-claude-code"
    copy.parent.mkdir()
    shutil.copy2(INSTALLER, copy)
    return copy


def run(installer: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installer)], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_an_installed_copy_is_reused_without_npm_or_network(tmp_path: Path) -> None:
    installer = installer_copy(tmp_path)
    cache = tmp_path / ".cache" / "claude-code"
    binary = cache / "node_modules" / ".bin" / "claude"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (cache / ".installed-2.1.332").touch()

    started = time.monotonic()
    done = run(installer, PATH="/usr/bin:/bin", npm_config_registry="http://127.0.0.1:9/")

    assert (done.returncode, done.stdout) == (0, f"{binary}\n"), done.stderr
    assert time.monotonic() - started < 1.0


@needs_npm
def test_an_unreachable_registry_exits_75_with_a_clear_message(tmp_path: Path) -> None:
    done = run(installer_copy(tmp_path), npm_config_registry="http://127.0.0.1:9/")

    assert done.returncode == REGISTRY_UNREACHABLE, done.stderr
    assert "npm registry (http://127.0.0.1:9/) cannot be reached" in done.stderr
    assert done.stdout == ""
    assert not list((tmp_path / ".cache" / "claude-code").glob(".installed-*"))


class NotFound(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@needs_npm
def test_a_registry_without_the_package_is_a_failure_not_a_skip(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = run(installer_copy(tmp_path), npm_config_registry=f"http://127.0.0.1:{server.server_port}/")
    finally:
        server.shutdown()

    assert done.returncode == 1, done.stderr
    assert "npm could not resolve @anthropic-ai/claude-code@2.1.332" in done.stderr
