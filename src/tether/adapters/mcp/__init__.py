"""The MCP server: six memory tools over stdio or streamable HTTP (`server`, `tools`, `results`), with
`front` answering the stdio handshake before the SDK is imported, and where the server finds its project.

May import the MCP SDK and the core; never another adapter. This module and `front` import the standard
library only (an agent waits on them before its first turn).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Where an agent tells its MCP servers which project they serve, when their working directory may not say:
# Claude Code sets CLAUDE_PROJECT_DIR in a stdio server's environment (2.1.332, measured in tests/e2e);
# Gemini CLI sets GEMINI_PROJECT_DIR for its hooks. Codex and Cursor start servers in the project instead.
PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")


def project_start(project: Path | None, cwd: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Where the server looks for its project: `--project`, else the agent's variable, else the cwd."""
    if project is not None:
        return project
    env = os.environ if environ is None else environ
    for name in PROJECT_VARS:
        value = env.get(name)
        if value and Path(value).is_dir():
            return Path(value)
    return cwd
