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
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from tether.adapters.install import files, guard
from tether.adapters.install.files import Change, Editor
from tether.adapters.install.jsonconf import AllowTools, EnvVar, FlatHooks, JsonEditor, McpServer, NestedHooks
from tether.adapters.install.notes import install_notes
from tether.adapters.install.specs import ALLOW_TOOLS, HOOKS, mcp_entry, tool_rules
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


def local_bin() -> Path | None:
    """This installation's `tether` executable (the console script beside the running interpreter)."""
    scripts = Path(sysconfig.get_path("scripts") or Path(sys.executable).parent)
    for name in ("tether", "tether.exe"):
        if (scripts / name).is_file():
            return scripts / name
    return None


def _check(agent: str, scope: str, allow_tools: str = "read") -> None:
    if agent not in AGENTS:
        raise ValidationError(f"unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    if scope not in SCOPES:
        raise ValidationError(
            f"unknown scope {scope!r}; choose 'project' (this repository) or 'user' (everywhere)"
        )
    if allow_tools not in ALLOW_TOOLS:
        raise ValidationError(
            f"unknown --allow-tools {allow_tools!r}; choose one of {', '.join(ALLOW_TOOLS)}"
        )


@dataclass(frozen=True)
class _Plan:
    """What one install writes, apart from the agent and scope: how hooks call tether, and options."""

    command: list[str]  # how this machine runs tether (written as is into user-scope files)
    allow_tools: str = "read"
    tether_bin: str | None = None  # TETHER_BIN for the committed commands on this machine (Claude Code)


def _targets(agent: str, scope: str, root: Path, home: Path, plan: _Plan) -> list[tuple[Path, Editor]]:
    committed = scope == "project"
    base = root if committed else home
    # A team commits project files: their commands must not name this machine's paths (`guard`).
    command = None if committed else plan.command
    server = McpServer(mcp_entry(agent, command))
    if agent == "claude":
        allow = AllowTools(tool_rules(plan.allow_tools), frozenset(tool_rules("all")))
        settings = JsonEditor([NestedHooks(agent, HOOKS[agent], command), allow])
        mcp_file = root / ".mcp.json" if committed else home / ".claude.json"
        targets: list[tuple[Path, Editor]] = [
            (base / ".claude" / "settings.json", settings),
            (mcp_file, JsonEditor([server])),
        ]
        if committed:  # this machine's path to tether, in the file Claude Code keeps out of git
            local = JsonEditor([EnvVar(guard.BIN_VAR, plan.tether_bin)])
            targets.append((root / ".claude" / "settings.local.json", local))
        return targets
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
    # Gemini CLI 0.61.0 has no committed file for policy-engine rules (workspace policies are disabled), so
    # the allowed tools go into `tools.allowed`, the settings form of `--allowed-tools`.
    allowed = AllowTools(
        tool_rules(plan.allow_tools, agent), frozenset(tool_rules("all", agent)), ("tools", "allowed")
    )
    editor = JsonEditor(
        [NestedHooks(agent, HOOKS[agent], command, named=True), server, allowed],
        containers=("hooks", "mcpServers", "tools"),
        comments=True,
    )
    return [(base / ".gemini" / "settings.json", editor)]


def config_files(agent: str, *, scope: str, root: Path, home: Path) -> list[Path]:
    """The files `install` may edit for this agent and scope (Claude Code's local settings only if needed)."""
    _check(agent, scope)
    return [path for path, _ in _targets(agent, scope, root, home, _Plan(["tether"]))]


def _keep_out_of_git(root: Path, changes: list[Change], dry_run: bool) -> list[str]:
    """What a project install writes that must never be committed: make sure git ignores it.

    Claude Code's settings.local.json holds this machine's path (Claude Code ignores the file itself only
    when it creates it), and `*.tether-backup` files hold the originals for uninstall. A pattern that no
    ignore file covers yet goes into the repository's own, uncommitted `.git/info/exclude`.
    """
    local = root / ".claude" / "settings.local.json"
    wanted = (
        [("/.claude/settings.local.json", local)] if any(c.path == local and c.new for c in changes) else []
    )
    wanted += [(f"*{files.BACKUP_SUFFIX}", c.backup) for c in changes if c.backup is not None][:1]
    if not wanted:
        return []
    try:
        missing = [
            pattern
            for pattern, path in wanted
            if subprocess.run(
                ["git", "-C", str(root), "check-ignore", "-q", "--no-index", str(path)],
                capture_output=True,
                timeout=10,
            ).returncode
            == 1
        ]
        found = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--git-path", "info/exclude"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return [
            f"Do not commit {', '.join(p for p, _ in wanted)}: they hold this machine's paths or backups."
        ]
    if not missing or found.returncode != 0:  # all ignored already, or not a git repository
        return []
    exclude = Path(found.stdout.strip())
    exclude = exclude if exclude.is_absolute() else root / exclude
    if not dry_run:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        old = files.read(exclude) or ""
        with exclude.open("a", encoding="utf-8") as out:
            out.write(("" if not old or old.endswith("\n") else "\n") + "".join(f"{p}\n" for p in missing))
    return [f"{'Would add' if dry_run else 'Added'} {', '.join(missing)} to {exclude} (not committed)."]


def _made_dirs() -> files.MadeDirs:
    from tether.project import user_home

    return files.MadeDirs(user_home() / "install-made-dirs.txt")


def _run(agent: str, scope: str, changes: list[Change], dry_run: bool, notes: list[str]) -> InstallReport:
    if not dry_run:
        files.apply(changes, _made_dirs())
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
    allow_tools: str = "read",
    tether_bin: Path | None = None,
) -> InstallReport:
    """Add tether's hooks and MCP server to `agent`'s config at `scope` ("project" under root, "user" under home).

    `command` is how this machine runs tether (default: `default_command()`); user-scope files get it as is,
    project files (committed) get `guard`'s commands. When `command` is not plain `tether`, a project
    install for Claude Code points the committed commands at `tether_bin` (default: `local_bin()`) through
    `.claude/settings.local.json`. `allow_tools` (Claude Code, Gemini CLI): `read`, `all` or `none` of the
    MCP tools run without asking.

    Raises ConfigError (naming the file and the problem, nothing written) when an existing file is malformed
    or holds an MCP server named `tether` that is not tether.
    """
    _check(agent, scope, allow_tools)
    command = list(command) if command else default_command()
    override = None
    if command != ["tether"]:
        found = tether_bin or local_bin()
        override = str(found) if found else None
    plan = _Plan(command, allow_tools, override)
    planned = [files.plan_install(path, editor) for path, editor in _targets(agent, scope, root, home, plan)]
    changes = [c for c in planned if c is not None]
    notes = install_notes(agent, scope, root, home, command, allow_tools, override)
    if scope == "project":
        notes += _keep_out_of_git(root, changes, dry_run)
    return _run(agent, scope, changes, dry_run, notes)


def uninstall(agent: str, *, scope: str, root: Path, home: Path, dry_run: bool = False) -> InstallReport:
    """Remove what `install` added: tether's hooks, MCP server, tool rules and TETHER_BIN, recognised by name."""
    _check(agent, scope)
    targets = _targets(agent, scope, root, home, _Plan(["tether"], "none"))
    planned = [files.plan_uninstall(path, editor) for path, editor in targets]
    changes = [c for c in planned if c is not None]
    notes = [
        f"Removed {c.drop_backup}: {c.path} is back to its original bytes."
        for c in changes
        if c.drop_backup is not None
    ]
    return _run(agent, scope, changes, dry_run, notes)
