"""What `tether install` tells the user afterwards: trust prompts, feature flags, allowed tools, caveats.

notes = install_notes("gemini", "project", repo, Path.home(), ["tether"], "read", None)
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tether.adapters.install import files, guard
from tether.adapters.install.jsonconf import load
from tether.adapters.install.specs import tool_rules

AGENT_NAMES = {"claude": "Claude Code", "codex": "Codex", "cursor": "Cursor", "gemini": "Gemini CLI"}


def _quiet_parse(path: Path) -> dict[str, Any]:
    try:
        text = files.read(path)
        if text is None:
            return {}
        # comments allowed: Gemini CLI's settings may hold them, and strict JSON parses the same
        return tomllib.loads(text) if path.suffix == ".toml" else load(text, comments=True)
    except Exception:  # notes only: a file we cannot read here says nothing either way
        return {}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def install_notes(
    agent: str,
    scope: str,
    root: Path,
    home: Path,
    command: list[str],
    allow_tools: str,
    tether_bin: str | None,
) -> list[str]:
    """What the user still has to do or know after installing for `agent` at `scope`.

    `command` is how this machine runs tether, `tether_bin` the path the committed commands use here when
    that is not plain `tether` (Claude Code's settings.local.json), `allow_tools` the MCP tools allowed.
    """
    notes: list[str] = []
    foreign = command != ["tether"]
    if scope == "project":
        notes.append(
            "The committed commands run `tether` from PATH (or $TETHER_BIN) through POSIX sh; a teammate "
            "without tether gets no errors, only one hint at session start. On Windows they need an `sh` on "
            "PATH (Git for Windows has one); otherwise install with --user and leave these files out."
        )
        if foreign and agent == "claude":
            notes.append(
                "The `tether` on PATH is missing or another installation: on this machine the hooks and the "
                f"MCP server use {tether_bin} ({guard.BIN_VAR} in .claude/settings.local.json, not committed)."
                if tether_bin
                else "The `tether` on PATH is missing or another installation, and this one has no `tether` "
                "executable: put tether on PATH (pipx install tether) for the hooks to run here."
            )
        elif foreign:
            where = f"export {guard.BIN_VAR}={tether_bin}" if tether_bin else "put it on PATH"
            notes.append(
                "The `tether` on PATH is missing or another installation, so the committed hooks would not run "
                f"this one: put this installation on PATH (pipx install / uv tool install), or {where} in the "
                f"environment {AGENT_NAMES[agent]} starts from ({agent} has no local, uncommitted settings file)."
            )
    elif foreign:
        notes.append(
            f"Hooks and the MCP server run `{' '.join(command)}`: the `tether` on PATH is missing or belongs "
            "to another installation. Run the install again if this environment moves."
        )
    if agent == "claude":
        if scope == "project":
            notes.append(
                "Claude Code asks once to approve the `tether` server from .mcp.json (claude -p loads it "
                "without asking); hooks in .claude/settings.json run once the folder is trusted."
            )
        allow_in = ".claude/settings.json" if scope == "project" else "~/.claude/settings.json"
        rules = tool_rules(allow_tools)
        if rules:
            notes.append(f"Allowed {', '.join(rules)} in {allow_in} (--allow-tools none leaves them out).")
        else:
            # Measured with claude -p 2.1.332 (tests/e2e): an MCP call with no allow rule is refused outright.
            notes.append(
                "Claude Code asks before tether's MCP tools run, and `claude -p` refuses them unless allowed: "
                "install with --allow-tools read (or all), or pass --allowedTools."
            )
        if scope != "project":
            notes.append("Claude Code rewrites ~/.claude.json while it runs: install with no session open.")
        notes.append("Do not also enable the tether Claude Code plugin: its hooks would run twice.")
    elif agent == "codex":
        if scope == "project":
            notes.append(
                f'Codex reads .codex/ only in a trusted project: `[projects."{root}"] trust_level = "trusted"` '
                "in ~/.codex/config.toml."
            )
        notes.append(
            "The MCP server is `required`: Codex waits for it (up to 30 s) so its tools exist on the first turn."
        )
        notes.append("Codex skips new hooks until you review and trust them: open /hooks in Codex once.")
        disabled = [
            str(path)
            for path in {root / ".codex" / "config.toml", home / ".codex" / "config.toml"}
            if any(
                _table(_quiet_parse(path), "features").get(key) is False for key in ("hooks", "codex_hooks")
            )
        ]
        if disabled:
            notes.append(
                f"Hooks are turned off by `[features] hooks = false` in {', '.join(sorted(disabled))}."
            )
        else:
            notes.append(
                "Hooks are on by default in current Codex; older builds need `[features] codex_hooks = true`."
            )
        notes.append(
            "Codex has no read hook: file gotchas arrive through the apply_patch guard and the MCP tools."
        )
    elif agent == "cursor":
        notes.append(
            "Cursor cannot add context when a prompt is submitted: per-prompt recall comes from the MCP tools "
            "(memory_search); session start, tool hooks and the edit guard work."
        )
        notes.append(
            "With Cursor's 'Third-party skills' on, Cursor also runs Claude Code hooks: if tether is installed "
            "for Claude Code too, turn that off or tether's hooks run twice."
        )
    else:
        settings = _quiet_parse((root if scope == "project" else home) / ".gemini" / "settings.json")
        enabled = _table(settings, "hooksConfig").get("enabled", True)
        legacy = _table(settings, "tools").get("enableHooks", True)
        if enabled is False or legacy is False:
            notes.append("Hooks are disabled in Gemini's settings (hooksConfig.enabled / tools.enableHooks).")
        if scope == "project":
            notes.append("Gemini CLI treats new or changed project hooks as untrusted until you accept them.")
        where = ".gemini/settings.json" if scope == "project" else "~/.gemini/settings.json"
        rules = tool_rules(allow_tools, agent)
        if rules:
            notes.append(
                f"Allowed {', '.join(rules)} in `tools.allowed` of {where} (--allow-tools none leaves them "
                "out). Gemini CLI 0.61.0 warns that tools.allowed is deprecated, and a project's list "
                "replaces the user's own (the lists are not merged)."
            )
        else:
            notes.append(
                "`gemini -p` offers the model only tools that need no confirmation, so it never offers "
                "tether's MCP tools unless allowed: install with --allow-tools read (or all), pass "
                "--allowed-tools, or add a policy rule in ~/.gemini/policies/."
            )
    return notes
