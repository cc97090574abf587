"""Write tether's hooks and MCP server into an agent's config, and take them out again.

    report = install("claude", scope="project", root=repo, home=Path.home())
    print(report.diff)

Installs merge with what is there (other hooks and servers are never touched), are idempotent, back up a
file before its first change (`<file>.tether-backup`) and can be dry runs. Uninstall removes exactly what
install added, recognising tether's entries by their command; after install + uninstall a file that existed
is back to its original bytes, and a file that install created is gone.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.adapters.install import files
from tether.adapters.install.files import Change, Editor
from tether.adapters.install.jsonconf import FlatHooks, JsonEditor, McpServer, NestedHooks
from tether.adapters.install.specs import HOOKS, mcp_entry
from tether.adapters.install.tomlconf import TomlMcpEditor
from tether.errors import ValidationError

AGENTS = ("claude", "codex", "cursor", "gemini")
SCOPES = ("project", "user")


@dataclass(frozen=True)
class InstallReport:
    """What an install or uninstall changed (or, with dry_run, would change)."""

    agent: str
    scope: str  # "project" | "user"
    changed: list[Path]  # files written or removed (or that would be, with dry_run)
    backups: list[Path]  # backups made by this call (first change to a file only)
    diff: str  # unified diff of every file change
    notes: list[str]  # what the user still has to do or know (trust prompts, feature flags...)


def _same_installation(found: Path) -> bool:
    """Whether the `tether` script found on PATH belongs to the running interpreter's environment."""
    scripts = sysconfig.get_path("scripts")
    try:
        if scripts and os.path.samefile(found.parent, scripts):
            return True
    except OSError:
        pass
    try:
        with found.open("rb") as script:
            first = script.readline(512)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    interpreter = first[2:].decode("utf-8", "replace").strip().split(" ")[0]
    # compare paths without resolving symlinks: two venvs share one base interpreter
    return os.path.normpath(interpreter) == os.path.normpath(sys.executable)


def default_command() -> list[str]:
    """How hooks and the MCP server call tether.

    `["tether"]` when the `tether` on PATH is this installation, else `[sys.executable, "-m", "tether"]`,
    which keeps working when the agent's PATH differs from the shell's.
    """
    found = shutil.which("tether")
    if found and _same_installation(Path(found)):
        return ["tether"]
    return [sys.executable, "-m", "tether"]


def _check(agent: str, scope: str) -> None:
    if agent not in AGENTS:
        raise ValidationError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    if scope not in SCOPES:
        raise ValidationError(
            f"unknown scope {scope!r}; choose 'project' (this repository) or 'user' (everywhere)"
        )


def _targets(agent: str, scope: str, root: Path, home: Path, command: list[str]) -> list[tuple[Path, Editor]]:
    base = root if scope == "project" else home
    server = McpServer(mcp_entry(agent, command))
    if agent == "claude":
        hooks = JsonEditor([NestedHooks(agent, HOOKS[agent], command)])
        mcp_file = root / ".mcp.json" if scope == "project" else home / ".claude.json"
        return [(base / ".claude" / "settings.json", hooks), (mcp_file, JsonEditor([server]))]
    if agent == "codex":
        return [
            (base / ".codex" / "hooks.json", JsonEditor([NestedHooks(agent, HOOKS[agent], command)])),
            (base / ".codex" / "config.toml", TomlMcpEditor(mcp_entry(agent, command))),
        ]
    if agent == "cursor":
        return [
            (
                base / ".cursor" / "hooks.json",
                JsonEditor([FlatHooks(agent, HOOKS[agent], command)], skeleton={"version": 1}),
            ),
            (base / ".cursor" / "mcp.json", JsonEditor([server])),
        ]
    editor = JsonEditor([NestedHooks(agent, HOOKS[agent], command, named=True), server])
    return [(base / ".gemini" / "settings.json", editor)]


def config_files(agent: str, *, scope: str, root: Path, home: Path) -> list[Path]:
    """The files `install` edits for this agent and scope."""
    _check(agent, scope)
    return [path for path, _ in _targets(agent, scope, root, home, ["tether"])]


def _quiet_parse(path: Path) -> dict[str, Any]:
    try:
        text = files.read(path)
        if text is None:
            return {}
        return tomllib.loads(text) if path.suffix == ".toml" else JsonEditor([]).parse(text)
    except Exception:  # notes only: a file we cannot read here says nothing either way
        return {}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _notes(agent: str, scope: str, root: Path, home: Path, command: list[str]) -> list[str]:
    notes: list[str] = []
    if command != ["tether"]:
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
        # Measured with claude -p 2.1.332 (tests/e2e): an MCP call with no allow rule is refused outright.
        allow_in = ".claude/settings.json" if scope == "project" else "~/.claude/settings.json"
        notes.append(
            "Claude Code asks before tether's MCP tools run, and `claude -p` refuses them unless allowed: add "
            f'"permissions": {{"allow": ["mcp__tether__memory_search", "mcp__tether__memory_get"]}} to {allow_in}, '
            "or pass --allowedTools."
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
    return notes


def _run(agent: str, scope: str, changes: list[Change], dry_run: bool, notes: list[str]) -> InstallReport:
    if not dry_run:
        files.apply(changes)
    return InstallReport(
        agent=agent,
        scope=scope,
        changed=[c.path for c in changes],
        backups=[c.backup for c in changes if c.backup is not None],
        diff="".join(c.diff() for c in changes),
        notes=notes,
    )


def install(
    agent: str,
    *,
    scope: str,
    root: Path,
    home: Path,
    dry_run: bool = False,
    command: list[str] | None = None,
) -> InstallReport:
    """Add tether's hooks and MCP server to `agent`'s config at `scope` ("project" under root, "user" under home).

    Raises ConfigError (naming the file and the problem, nothing written) when an existing file is malformed
    or holds an MCP server named `tether` that is not tether.
    """
    _check(agent, scope)
    command = list(command) if command else default_command()
    planned = [
        files.plan_install(path, editor) for path, editor in _targets(agent, scope, root, home, command)
    ]
    changes = [c for c in planned if c is not None]
    return _run(agent, scope, changes, dry_run, _notes(agent, scope, root, home, command))


def uninstall(agent: str, *, scope: str, root: Path, home: Path, dry_run: bool = False) -> InstallReport:
    """Remove what `install` added: tether's hooks and its MCP server, recognised by their command."""
    _check(agent, scope)
    planned = [
        files.plan_uninstall(path, editor) for path, editor in _targets(agent, scope, root, home, ["tether"])
    ]
    changes = [c for c in planned if c is not None]
    notes = [
        f"Removed {c.drop_backup}: {c.path} is back to its original bytes."
        for c in changes
        if c.drop_backup is not None
    ]
    return _run(agent, scope, changes, dry_run, notes)
