"""tether install/uninstall for every agent and scope, on real config files in tmp dirs; the plugin files."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tether.__main__ import build_cli
from tether.adapters.install import guard, jsonc
from tether.adapters.install.installer import AGENTS, config_files, default_command, install, uninstall
from tether.adapters.install.specs import HOOKS, hook_command, mcp_entry
from tether.errors import ConfigError, ValidationError

SCOPES = ("project", "user")
CMD = ["tether"]
LOCAL = "settings.local.json"  # Claude Code's machine-only settings: written only when PATH has no tether


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The record of directories installs made lives in $TETHER_HOME: one per test."""
    path = tmp_path / "tether-home"
    monkeypatch.setenv("TETHER_HOME", str(path))
    return path


# Config files as people have them: other hooks, other MCP servers, odd formatting (4-space indent, one-line
# objects, comments in TOML) that must come back byte for byte after install + install + uninstall.
CLAUDE_SETTINGS = """{
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/guard.sh", "timeout": 3}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "tether reindex --quiet"}]}]
    }
}
"""
CLAUDE_MCP = (
    '{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}}}'
)
CLAUDE_USER_JSON = """{
  "numStartups": 12,
  "projects": {"/home/u/repo": {"hasTrustDialogAccepted": true, "mcpServers": {}}},
  "mcpServers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
  }
}
"""
CODEX_HOOKS = """{
  "description": "team hooks",
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 .codex/hooks/audit.py"}]}],
    "SessionStart": [{"hooks": [{"type": "command", "command": "echo hello"}]}]
  }
}
"""
CODEX_TOML = '''# Codex settings
model = "gpt-5"   # the default model
notes = """
[mcp_servers.tether]
this is a string, not a table
"""

[features]
codex_hooks = true

[mcp_servers.docs]
command = "npx"
args = [
  "-y",  # a comment inside an array
  "docs-server]",
  { weird = "[x]" },
]

[mcp_servers.docs.env]
DOCS_TOKEN = 'x#y'

[projects."/home/u/repo"]
trust_level = "trusted"
'''
CURSOR_HOOKS = """{
  "version": 1,
  "hooks": {
    "afterFileEdit": [{"command": "./format.sh"}, {"command": "python -m tether reindex"}],
    "preToolUse": [{"command": "./audit.sh", "matcher": "Shell"}]
  }
}
"""
CURSOR_MCP = """{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/sse"}
  }
}"""
GEMINI_SETTINGS = """{
  "theme": "GitHub",
  "hooks": {
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", "command": "./guard.sh", "timeout": 2000}]}
    ]
  },
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}
  }
}
"""

# Paths relative to the base (the project root, or home for --user).
EXISTING: dict[tuple[str, str], dict[str, str]] = {
    ("claude", "project"): {".claude/settings.json": CLAUDE_SETTINGS, ".mcp.json": CLAUDE_MCP},
    ("claude", "user"): {".claude/settings.json": CLAUDE_SETTINGS, ".claude.json": CLAUDE_USER_JSON},
    ("codex", "project"): {".codex/hooks.json": CODEX_HOOKS, ".codex/config.toml": CODEX_TOML},
    ("codex", "user"): {".codex/hooks.json": CODEX_HOOKS, ".codex/config.toml": CODEX_TOML},
    ("cursor", "project"): {".cursor/hooks.json": CURSOR_HOOKS, ".cursor/mcp.json": CURSOR_MCP},
    ("cursor", "user"): {".cursor/hooks.json": CURSOR_HOOKS, ".cursor/mcp.json": CURSOR_MCP},
    ("gemini", "project"): {".gemini/settings.json": GEMINI_SETTINGS},
    ("gemini", "user"): {".gemini/settings.json": GEMINI_SETTINGS},
}
CASES = sorted(EXISTING)
MALFORMED_ANY = [
    ("not JSON", "{ not json", "not valid JSON"),
    ("top-level list", "[1, 2]", "JSON object at the top level"),
]
MALFORMED_HOOKS = [
    ("hooks as a list", '{"hooks": []}', "`hooks` should be an object"),
    ("event as an object", '{"hooks": {"Stop": {"hooks": []}}}', "`hooks.Stop` should be a list"),
    ("group as a string", '{"hooks": {"Stop": ["x"]}}', "`hooks.Stop[0]` should be an object"),
]
MALFORMED_SERVERS = [("servers as a list", '{"mcpServers": []}', "`mcpServers` should be an object")]
MALFORMED_TOML = [
    ("not TOML", "model = \n", "not valid TOML"),
    ("servers as a string", 'mcp_servers = "x"\n', "`mcp_servers` should be a table"),
]


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return root, home


def _base(scope: str, root: Path, home: Path) -> Path:
    return root if scope == "project" else home


def _write(base: Path, contents: dict[str, str]) -> None:
    for rel, text in contents.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def _tree(*bases: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for base in bases for p in sorted(base.rglob("*")) if p.is_file()}


def _targets(agent: str, scope: str, root: Path, home: Path) -> list[Path]:
    """The files an install with `tether` on PATH writes (Claude Code's local settings are not among them)."""
    return [p for p in config_files(agent, scope=scope, root=root, home=home) if p.name != LOCAL]


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def _hook_commands(data: object) -> list[str]:
    """Every hook command string in a parsed hooks file (any agent's shape)."""
    found: list[str] = []
    hooks = data.get("hooks", {}) if isinstance(data, dict) else {}
    for entries in hooks.values():
        for entry in entries:
            if "hooks" in entry:  # Claude, Codex, Gemini: matcher group -> handlers
                found.extend(handler["command"] for handler in entry["hooks"])
            else:  # Cursor: flat entries
                found.append(entry["command"])
    return found


def _servers(data: dict[str, Any]) -> dict[str, Any]:
    servers = data.get("mcpServers", data.get("mcp_servers", {}))
    assert isinstance(servers, dict)
    return servers


def _committed(scope: str) -> list[str] | None:
    """The command an install writes: the guard (None) into project files, plain `tether` for the user."""
    return None if scope == "project" else CMD


def _expected_commands(agent: str, scope: str) -> list[str]:
    return [hook_command(_committed(scope), agent, spec.event) for spec in HOOKS[agent]]


def _check_installed(agent: str, scope: str, root: Path, home: Path, originals: dict[str, str]) -> None:
    """tether's hooks and server are there exactly once, and everything that was there still is."""
    base = _base(scope, root, home)
    commands: list[str] = []
    servers: dict[str, Any] = {}
    for path in _targets(agent, scope, root, home):
        data = _load(path)
        commands += _hook_commands(data)
        servers.update(_servers(data))
        rel = str(path.relative_to(base))
        if rel in originals:
            before = (tomllib.loads if path.suffix == ".toml" else json.loads)(originals[rel])
            for other in _hook_commands(before):
                assert _hook_commands(data).count(other) == _hook_commands(before).count(other)
            for name, entry in _servers(before).items():
                assert servers[name] == entry
            for key, value in before.items():  # unrelated settings untouched
                if key == "permissions":  # Claude Code's rules: the user's first, then tether's
                    assert data[key]["allow"][: len(value["allow"])] == value["allow"]
                elif key not in ("hooks", "mcpServers", "mcp_servers"):
                    assert data[key] == value
    for expected in _expected_commands(agent, scope):
        assert commands.count(expected) == 1, expected
    entry = mcp_entry(agent, _committed(scope))
    assert {k: servers["tether"][k] for k in entry} == entry


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_install_twice_keeps_other_entries_and_uninstall_restores_bytes(
    tmp_path: Path, agent: str, scope: str
) -> None:
    root, home = _dirs(tmp_path)
    originals = EXISTING[agent, scope]
    _write(_base(scope, root, home), originals)
    before = _tree(root, home)

    first = install(agent, scope=scope, root=root, home=home, command=CMD)
    targets = _targets(agent, scope, root, home)
    assert first.changed == targets
    assert sorted(first.backups) == sorted(p.with_name(p.name + ".tether-backup") for p in targets)
    for path in targets:
        assert path.with_name(path.name + ".tether-backup").read_bytes() == before[str(path)]
    _check_installed(agent, scope, root, home, originals)
    after_first = _tree(root, home)

    second = install(agent, scope=scope, root=root, home=home, command=CMD)
    assert second.changed == [] and second.backups == [] and second.diff == ""
    assert _tree(root, home) == after_first

    removed = uninstall(agent, scope=scope, root=root, home=home)
    assert removed.changed == targets
    assert _tree(root, home) == before  # byte for byte, and the backups are gone
    assert uninstall(agent, scope=scope, root=root, home=home).changed == []


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_install_creates_files_and_uninstall_removes_them(tmp_path: Path, agent: str, scope: str) -> None:
    root, home = _dirs(tmp_path)
    report = install(agent, scope=scope, root=root, home=home, command=CMD)
    assert report.backups == []
    assert all(path.is_file() for path in report.changed)
    _check_installed(agent, scope, root, home, {})

    uninstall(agent, scope=scope, root=root, home=home)
    assert _tree(root, home) == {}
    assert sorted(p.name for p in [*root.iterdir(), *home.iterdir()]) == []


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_dry_run_writes_nothing_and_returns_the_diff(tmp_path: Path, agent: str, scope: str) -> None:
    root, home = _dirs(tmp_path)
    _write(_base(scope, root, home), EXISTING[agent, scope])
    before = _tree(root, home)

    preview = install(agent, scope=scope, root=root, home=home, command=CMD, dry_run=True)
    assert _tree(root, home) == before
    assert preview.changed == _targets(agent, scope, root, home)
    assert preview.backups and not any(p.exists() for p in preview.backups)
    for expected in _expected_commands(agent, scope):
        assert json.dumps(expected)[1:-1] in preview.diff  # as the JSON file spells it
    assert "tether" in preview.diff and preview.diff.count("\n+") > len(HOOKS[agent])

    real = install(agent, scope=scope, root=root, home=home, command=CMD)
    assert real.diff == preview.diff
    installed = _tree(root, home)
    undo = uninstall(agent, scope=scope, root=root, home=home, dry_run=True)
    assert _tree(root, home) == installed
    assert undo.changed == real.changed and "\n-" in undo.diff


def _malformed_cases() -> list[tuple[str, str, int, str, str, str]]:
    cases = []
    for agent, scope in CASES:
        for index, rel in enumerate(EXISTING[agent, scope]):
            if rel.endswith(".toml"):
                defects = MALFORMED_TOML
            elif agent == "gemini":  # one file holds both
                defects = MALFORMED_ANY + MALFORMED_HOOKS + MALFORMED_SERVERS
            elif index == 0:  # the hooks file
                defects = MALFORMED_ANY + MALFORMED_HOOKS
            else:  # the MCP file
                defects = MALFORMED_ANY + MALFORMED_SERVERS
            if agent == "cursor" and index == 0:  # Cursor entries are flat: no group level
                defects = [d for d in defects if d[0] != "group as a string"]
            for name, text, message in defects:
                cases.append((agent, scope, index, name, text, message))
    return cases


@pytest.mark.parametrize(("agent", "scope", "index", "defect", "text", "message"), _malformed_cases())
def test_malformed_config_is_named_and_nothing_is_written(
    tmp_path: Path, agent: str, scope: str, index: int, defect: str, text: str, message: str
) -> None:
    root, home = _dirs(tmp_path)
    contents = dict(EXISTING[agent, scope])
    rel = list(contents)[index]
    contents[rel] = text
    _write(_base(scope, root, home), contents)
    before = _tree(root, home)
    bad = _base(scope, root, home) / rel

    for run in (install, uninstall):
        with pytest.raises(ConfigError) as caught:
            run(agent, scope=scope, root=root, home=home)
        assert str(bad) in str(caught.value)
        assert message in str(caught.value)
        assert _tree(root, home) == before  # no file written, not even the other agent file or a backup


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_backup_is_made_once_and_never_overwritten(tmp_path: Path, agent: str, scope: str) -> None:
    root, home = _dirs(tmp_path)
    _write(_base(scope, root, home), EXISTING[agent, scope])
    target = _targets(agent, scope, root, home)[0]
    original = target.read_bytes()
    install(agent, scope=scope, root=root, home=home, command=CMD)
    backup = target.with_name(target.name + ".tether-backup")
    assert backup.read_bytes() == original

    data = _load(target)
    data["userAddedLater"] = True
    for groups in data[
        "hooks"
    ].values():  # someone changed tether's timeouts: the next install puts them back
        for group in groups if agent != "cursor" else [{"hooks": groups}]:
            for handler in group["hooks"]:
                if "tether" in handler["command"]:
                    handler["timeout"] = 99
    target.write_text(json.dumps(data, indent=2) + "\n")
    again = install(agent, scope=scope, root=root, home=home, command=CMD)
    assert target in again.changed and backup not in again.backups
    assert backup.read_bytes() == original

    # The file differs from the original now: uninstall keeps the user's later key, and the backup.
    uninstall(agent, scope=scope, root=root, home=home)
    assert _load(target)["userAddedLater"] is True
    assert _hook_commands(_load(target)) == _hook_commands(json.loads(original))
    assert backup.read_bytes() == original


@pytest.mark.parametrize("agent", AGENTS)
def test_a_foreign_server_named_tether_is_refused(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    rel = list(EXISTING[agent, "project"])[-1]
    if rel.endswith(".toml"):
        text = '[mcp_servers.tether]\ncommand = "rope"\nargs = ["serve"]\n'
    else:
        text = json.dumps({"mcpServers": {"tether": {"command": "rope", "args": ["serve"]}}})
    _write(root, {rel: text})
    with pytest.raises(ConfigError, match="does not run `tether mcp`"):
        install(agent, scope="project", root=root, home=home, command=CMD)
    assert _tree(root, home) == {str(root / rel): text.encode()}
    assert uninstall(agent, scope="project", root=root, home=home).changed == []


@pytest.mark.parametrize("agent", ["claude", "cursor", "gemini"])
def test_an_existing_tether_server_is_updated_and_keeps_the_users_keys(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    rel = list(EXISTING[agent, "project"])[-1]
    entry = {"command": "uvx", "args": ["tether", "mcp"], "env": {"TETHER_HOME": "/data"}}
    _write(
        root,
        {rel: json.dumps({"mcpServers": {"a": {"command": "x"}, "tether": entry, "z": {"command": "y"}}})},
    )
    install(agent, scope="project", root=root, home=home, command=CMD)
    servers = _load(root / rel)["mcpServers"]
    assert list(servers) == ["a", "tether", "z"]  # updated in place
    assert [servers["tether"]["command"], *servers["tether"]["args"]] == guard.mcp_argv(agent)
    assert servers["tether"]["env"] == {"TETHER_HOME": "/data"}


def test_codex_toml_edits_keep_every_other_byte(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    config = home / ".codex" / "config.toml"
    _write(home, {".codex/config.toml": CODEX_TOML})
    install("codex", scope="user", root=root, home=home, command=["/opt/my tools/python", "-m", "tether"])
    text = config.read_text()
    added = text.splitlines()
    for line in CODEX_TOML.splitlines():  # every line is still there, in order; tether's table sits with
        added.remove(line)  # the other servers
    assert added[0] == "[mcp_servers.tether]" and text.rindex("[mcp_servers.tether]") > text.index(
        "DOCS_TOKEN"
    )
    data = tomllib.loads(text)
    assert data["mcp_servers"]["tether"] == {
        "command": "/opt/my tools/python",
        "args": ["-m", "tether", "mcp"],
        "required": True,
        "startup_timeout_sec": 30,
        "env_vars": ["TETHER_BIN", "TETHER_HOME"],
    }
    assert data["notes"] == "[mcp_servers.tether]\nthis is a string, not a table\n"
    assert data["mcp_servers"]["docs"]["args"][1] == "docs-server]"
    assert data["projects"] == {"/home/u/repo": {"trust_level": "trusted"}}
    (config.parent / "config.toml.tether-backup").unlink()  # no backup: uninstall cuts tether's table out
    uninstall("codex", scope="user", root=root, home=home)
    assert config.read_text() == CODEX_TOML


def test_codex_existing_tether_table_is_updated_in_place(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    original = (
        'model = "o3"\n\n[mcp_servers.tether]\n# managed by hand\ncommand = "python"\n'
        'args = [\n  "-m",\n  "tether",\n  "mcp",\n]\nstartup_timeout_sec = 20\n\n'
        '[mcp_servers.tether.env]\nTETHER_HOME = "/data"\n\n# other servers below\n[mcp_servers.x]\ncommand = "x"\n'
    )
    _write(root, {".codex/config.toml": original})
    install("codex", scope="project", root=root, home=home, command=CMD)
    text = (root / ".codex" / "config.toml").read_text()
    assert "# managed by hand\n" in text and "startup_timeout_sec = 20\n" in text
    data = tomllib.loads(text)
    argv = guard.mcp_argv()
    assert data["mcp_servers"]["tether"] == {
        "command": argv[0],
        "args": argv[1:],
        "startup_timeout_sec": 20,  # the user's own value stays
        "required": True,
        "env_vars": ["TETHER_BIN", "TETHER_HOME"],
        "env": {"TETHER_HOME": "/data"},
    }
    (root / ".codex" / "config.toml.tether-backup").unlink()  # as if made long ago and thrown away

    uninstall("codex", scope="project", root=root, home=home)
    text = (root / ".codex" / "config.toml").read_text()
    assert text == 'model = "o3"\n\n# other servers below\n[mcp_servers.x]\ncommand = "x"\n'


@pytest.mark.parametrize(
    "original",
    [
        'mcp_servers = { docs = { command = "npx" } }\n',
        '[mcp_servers]\ntether = { command = "tether", args = ["mcp"], env = { A = "1" } }\n',
        'mcp_servers.docs.command = "npx"\n',
        "[mcp_servers]\n\n[x]\ny = 1\n",
        "# only a comment",
        'a = 1\r\nb = "two"\r\n',
    ],
)
def test_codex_toml_in_any_form_is_edited_and_restored(tmp_path: Path, original: str) -> None:
    root, home = _dirs(tmp_path)
    config = home / ".codex" / "config.toml"
    _write(home, {".codex/config.toml": original})
    install("codex", scope="user", root=root, home=home, command=CMD)
    text = config.read_bytes().decode()
    tether_entry = tomllib.loads(text)["mcp_servers"]["tether"]
    assert tether_entry["command"] == "tether" and tether_entry["required"] is True
    if "\r\n" in original:
        assert "\n" not in text.replace("\r\n", "")  # the file's own line endings
    assert install("codex", scope="user", root=root, home=home, command=CMD).changed == []
    config.with_name("config.toml.tether-backup").unlink()
    uninstall("codex", scope="user", root=root, home=home)
    after = tomllib.loads(config.read_text()) if config.exists() else {}
    before = tomllib.loads(original)
    if "tether" in before.get("mcp_servers", {}):  # a hand-made tether entry goes, the rest stays
        del before["mcp_servers"]["tether"]
    assert after == before


def test_a_users_handler_inside_tethers_group_survives_uninstall(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    install("claude", scope="project", root=root, home=home, command=CMD)
    settings = root / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["SessionEnd"][0]["hooks"].append({"type": "command", "command": "say done"})
    settings.write_text(json.dumps(data))
    uninstall("claude", scope="project", root=root, home=home)
    assert json.loads(settings.read_text()) == {
        "hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


@pytest.mark.parametrize("agent", AGENTS)
def test_user_hook_commands_run_the_given_command_even_with_spaces(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    command = ["/opt/my tools/python3", "-m", "tether"]
    install(agent, scope="user", root=root, home=home, command=command)
    commands = [c for p in _targets(agent, "user", root, home) for c in _hook_commands(_load(p))]
    assert [shlex.split(c) for c in commands] == [[*command, "hook", agent, s.event] for s in HOOKS[agent]]
    uninstall(agent, scope="user", root=root, home=home)
    assert _tree(root, home) == {}


def test_install_writes_through_a_symlinked_dotfile(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    dotfiles = tmp_path / "dotfiles"
    _write(dotfiles, {"gemini.json": GEMINI_SETTINGS})
    (home / ".gemini").mkdir()
    link = home / ".gemini" / "settings.json"
    link.symlink_to(dotfiles / "gemini.json")
    install("gemini", scope="user", root=root, home=home, command=CMD)
    assert link.is_symlink()
    assert "tether hook gemini SessionStart" in (dotfiles / "gemini.json").read_text()
    uninstall("gemini", scope="user", root=root, home=home)
    assert link.is_symlink() and (dotfiles / "gemini.json").read_text() == GEMINI_SETTINGS


def test_agent_specific_formats(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    for agent in AGENTS:
        install(agent, scope="project", root=root, home=home, command=CMD)
    codex = json.loads((root / ".codex" / "hooks.json").read_text())
    assert set(codex) <= {"description", "hooks"}  # Codex refuses a hooks.json with other root keys
    assert codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] <= 3  # Codex clamps SessionEnd at 3 s
    cursor = json.loads((root / ".cursor" / "hooks.json").read_text())
    assert cursor["version"] == 1 and "beforeSubmitPrompt" not in cursor["hooks"]
    gemini = json.loads((root / ".gemini" / "settings.json").read_text())
    timeouts = [h["timeout"] for groups in gemini["hooks"].values() for g in groups for h in g["hooks"]]
    assert min(timeouts) >= 1000  # milliseconds
    assert "_" not in "".join(gemini["mcpServers"])  # Gemini splits tool names on `_`
    claude = json.loads((root / ".claude" / "settings.json").read_text())
    assert claude["hooks"]["PreToolUse"][0]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    # Only tools whose use changes something: reads (gotchas), edits (touched files), memory tools.
    post = re.compile(claude["hooks"]["PostToolUse"][0]["matcher"])
    assert all(
        post.fullmatch(t)
        for t in (
            "Read",
            "Edit",
            "Write",
            "mcp__tether__memory_get",
            "mcp__plugin_tether_tether__memory_search",
        )
    )
    assert not any(post.fullmatch(t) for t in ("Bash", "Grep", "Glob"))
    assert json.loads((root / ".mcp.json").read_text())["mcpServers"]["tether"]["type"] == "stdio"


@pytest.mark.parametrize(("agent", "scope"), [("hermes", "project"), ("claude", "global")])
def test_unknown_agent_or_scope(tmp_path: Path, agent: str, scope: str) -> None:
    root, home = _dirs(tmp_path)
    with pytest.raises(ValidationError, match="unknown"):
        install(agent, scope=scope, root=root, home=home)


def _fake_tether(directory: Path, interpreter: str) -> None:
    directory.mkdir(parents=True)
    script = directory / "tether"
    script.write_text(f"#!{interpreter}\nimport sys\n")
    script.chmod(0o755)


@pytest.mark.parametrize(
    ("interpreter", "expected"),
    [
        (sys.executable, ["tether"]),
        ("/usr/bin/some-other-python", [sys.executable, "-m", "tether"]),
        (None, [sys.executable, "-m", "tether"]),
    ],
)
def test_default_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interpreter: str | None, expected: list[str]
) -> None:
    bin_dir = tmp_path / "bin"
    if interpreter is None:
        bin_dir.mkdir()
    else:
        _fake_tether(bin_dir, interpreter)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert default_command() == expected


def test_paths_in_reports_are_under_the_given_dirs(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    for agent in AGENTS:
        for scope in SCOPES:
            base = _base(scope, root, home)
            assert all(
                os.path.commonpath([p, base]) == str(base)
                for p in config_files(agent, scope=scope, root=root, home=home)
            )


# ---- committed files name no machine's path; this machine's path goes to Claude Code's local settings ----


def _git_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


@pytest.mark.parametrize("agent", AGENTS)
def test_committed_files_never_name_this_machines_tether(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)
    venv = tmp_path / "my venv" / "bin"
    report = install(
        agent,
        scope="project",
        root=root,
        home=home,
        command=[str(venv / "python"), "-m", "tether"],
        tether_bin=venv / "tether",
    )
    committed = [p for p in report.changed if p.name != LOCAL]
    assert committed and all(str(tmp_path) not in p.read_text() for p in committed)
    local = root / ".claude" / LOCAL
    if agent == "claude":
        assert json.loads(local.read_text()) == {"env": {"TETHER_BIN": str(venv / "tether")}}
        ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", str(local)])
        assert ignored.returncode == 0  # kept out of commits (.git/info/exclude)
        assert any("settings.local.json" in n and "TETHER_BIN" in n for n in report.notes)
        # With the right tether on PATH later, the override goes.
        install(agent, scope="project", root=root, home=home, command=CMD)
        assert not local.exists()
    else:
        assert not local.exists()
        assert any(f"export TETHER_BIN={venv / 'tether'}" in n for n in report.notes)
    uninstall(agent, scope="project", root=root, home=home)
    assert not (root / ".claude" / "settings.json").exists() and not local.exists()


def test_uninstall_removes_tether_bin_and_keeps_the_rest_of_the_local_settings(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)
    local = root / ".claude" / LOCAL
    _write(root, {".claude/settings.local.json": '{"env": {"DEBUG": "1"}, "model": "opus"}\n'})
    install(
        "claude",
        scope="project",
        root=root,
        home=home,
        command=["/x/python", "-m", "tether"],
        tether_bin=Path("/x/tether"),
    )
    assert json.loads(local.read_text())["env"] == {"DEBUG": "1", "TETHER_BIN": "/x/tether"}
    local.with_name(LOCAL + ".tether-backup").unlink()
    uninstall("claude", scope="project", root=root, home=home)
    assert json.loads(local.read_text()) == {"env": {"DEBUG": "1"}, "model": "opus"}


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        ("read", ["mcp__tether__memory_search", "mcp__tether__memory_get", "mcp__tether__memory_links"]),
        (
            "all",
            [
                "mcp__tether__memory_search",
                "mcp__tether__memory_get",
                "mcp__tether__memory_links",
                "mcp__tether__memory_add",
                "mcp__tether__memory_remove",
                "mcp__tether__memory_pin",
            ],
        ),
        ("none", []),
    ],
)
@pytest.mark.parametrize("scope", SCOPES)
def test_claude_tool_permissions_are_written(
    tmp_path: Path, scope: str, allow: str, expected: list[str]
) -> None:
    root, home = _dirs(tmp_path)
    settings = _base(scope, root, home) / ".claude" / "settings.json"
    _write(_base(scope, root, home), {".claude/settings.json": CLAUDE_SETTINGS})
    install("claude", scope=scope, root=root, home=home, command=CMD, allow_tools=allow)
    assert _load(settings)["permissions"]["allow"] == ["Bash(make test)", *expected]
    # Another choice later reconciles in place; the user's rules stay first.
    install("claude", scope=scope, root=root, home=home, command=CMD, allow_tools="read")
    assert _load(settings)["permissions"]["allow"] == ["Bash(make test)", *expected[:3]] or allow == "none"
    settings.with_name("settings.json.tether-backup").unlink()
    uninstall("claude", scope=scope, root=root, home=home)
    assert _load(settings)["permissions"] == {"allow": ["Bash(make test)"]}


def test_unknown_allow_tools_choice(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    with pytest.raises(ValidationError, match="--allow-tools"):
        install("claude", scope="project", root=root, home=home, command=CMD, allow_tools="some")


def test_codex_entry_is_required_with_room_to_start(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    install("codex", scope="project", root=root, home=home, command=CMD)
    entry = tomllib.loads((root / ".codex" / "config.toml").read_text())["mcp_servers"]["tether"]
    assert entry["required"] is True and entry["startup_timeout_sec"] >= 30
    assert entry["env_vars"] == ["TETHER_BIN", "TETHER_HOME"]  # Codex passes servers few variables


# ---- Gemini's settings.json may hold comments -------------------------------------------------------

GEMINI_JSONC = """{
  // look and feel
  "theme": "GitHub",
  "hooks": {
    /* the team's guard */
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [{"name": "guard", "type": "command", "command": "./guard.sh"}]} // keep
    ]
  },
  "mcpServers": {
    "fs": {"command": "npx"} // files
  }
}
"""


@pytest.mark.parametrize("scope", SCOPES)
def test_gemini_settings_with_comments_keep_them(tmp_path: Path, scope: str) -> None:
    root, home = _dirs(tmp_path)
    base = _base(scope, root, home)
    _write(base, {".gemini/settings.json": GEMINI_JSONC})
    settings = base / ".gemini" / "settings.json"
    install("gemini", scope=scope, root=root, home=home, command=CMD)
    text = settings.read_text()
    for comment in ("// look and feel", "/* the team's guard */", "// keep", "// files"):
        assert comment in text
    assert "tether" in json.dumps(guard.__name__) and '"tether": {' in text
    assert install("gemini", scope=scope, root=root, home=home, command=CMD).changed == []
    uninstall("gemini", scope=scope, root=root, home=home)
    assert settings.read_text() == GEMINI_JSONC  # byte for byte (from the backup)
    # Without the backup, tether's entries are cut out and every comment stays.
    install("gemini", scope=scope, root=root, home=home, command=CMD)
    settings.with_name("settings.json.tether-backup").unlink()
    uninstall("gemini", scope=scope, root=root, home=home)
    assert settings.read_text() == GEMINI_JSONC


# The user's own allowed tool and its comment stay; tether's names go after it.
GEMINI_ALLOWED = """{
  "tools": {
    // the team's safe shell command
    "allowed": ["run_shell_command(git status)"]
  }
}
"""
GEMINI_READ = ["mcp_tether_memory_search", "mcp_tether_memory_get", "mcp_tether_memory_links"]
GEMINI_WRITE = ["mcp_tether_memory_add", "mcp_tether_memory_remove", "mcp_tether_memory_pin"]


@pytest.mark.parametrize(
    ("allow", "expected"), [("read", GEMINI_READ), ("all", GEMINI_READ + GEMINI_WRITE), ("none", [])]
)
@pytest.mark.parametrize("scope", SCOPES)
def test_gemini_allowed_tools_are_written_and_taken_out(
    tmp_path: Path, scope: str, allow: str, expected: list[str]
) -> None:
    root, home = _dirs(tmp_path)
    base = _base(scope, root, home)
    _write(base, {".gemini/settings.json": GEMINI_ALLOWED})
    settings = base / ".gemini" / "settings.json"
    install("gemini", scope=scope, root=root, home=home, command=CMD, allow_tools=allow)
    text = settings.read_text()
    assert "// the team's safe shell command" in text
    assert jsonc.loads(text, comments=True)["tools"]["allowed"] == [
        "run_shell_command(git status)",
        *expected,
    ]
    assert install("gemini", scope=scope, root=root, home=home, command=CMD, allow_tools=allow).changed == []
    # Another choice later reconciles in place: `read` after `all` takes the write tools out again.
    install("gemini", scope=scope, root=root, home=home, command=CMD, allow_tools="read")
    allowed = jsonc.loads(settings.read_text(), comments=True)["tools"]["allowed"]
    assert allowed == ["run_shell_command(git status)", *GEMINI_READ]
    settings.with_name("settings.json.tether-backup").unlink()
    uninstall("gemini", scope=scope, root=root, home=home)
    assert settings.read_text() == GEMINI_ALLOWED


@pytest.mark.parametrize("scope", SCOPES)
def test_gemini_default_allows_only_the_read_tools(tmp_path: Path, scope: str) -> None:
    root, home = _dirs(tmp_path)
    report = install("gemini", scope=scope, root=root, home=home, command=CMD)
    settings = _load(_base(scope, root, home) / ".gemini" / "settings.json")
    assert settings["tools"] == {"allowed": GEMINI_READ}
    assert "mcp_tether_memory_search" in " ".join(report.notes) and "deprecated" in " ".join(report.notes)
    uninstall("gemini", scope=scope, root=root, home=home)
    assert not (_base(scope, root, home) / ".gemini").exists()


def test_gemini_none_writes_no_tools_and_says_how_to_allow(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    report = install("gemini", scope="project", root=root, home=home, command=CMD, allow_tools="none")
    assert "tools" not in _load(root / ".gemini" / "settings.json")
    assert any("--allow-tools read" in note and "gemini -p" in note for note in report.notes)


def test_gemini_trailing_comma_is_refused_with_its_line(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _write(root, {".gemini/settings.json": '{\n  "theme": "GitHub",\n}\n'})
    with pytest.raises(ConfigError, match=r"line 3, column 1; a trailing comma is not allowed"):
        install("gemini", scope="project", root=root, home=home, command=CMD)


def test_claude_settings_stay_strict_json(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _write(root, {".claude/settings.json": '{\n  // a comment\n  "model": "opus"\n}\n'})
    with pytest.raises(ConfigError, match=r"not valid JSON .*line 2"):
        install("claude", scope="project", root=root, home=home, command=CMD)


def test_json_edits_leave_the_rest_of_the_file_as_it_was(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _write(root, {".cursor/mcp.json": CURSOR_MCP})
    install("cursor", scope="project", root=root, home=home, command=CMD)
    text = (root / ".cursor" / "mcp.json").read_text()
    assert text.startswith('{\n  "mcpServers": {\n    "linear": {"url": "https://mcp.linear.app/sse"},\n')


# ---- directories: uninstall removes only those an install created --------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_an_agent_directory_that_was_there_stays(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    existing = home / f".{agent}"
    existing.mkdir()  # there before, empty
    install(agent, scope="user", root=root, home=home, command=CMD)
    uninstall(agent, scope="user", root=root, home=home)
    assert existing.is_dir() and list(existing.iterdir()) == []
    # One the install made goes again.
    install(agent, scope="project", root=root, home=home, command=CMD)
    uninstall(agent, scope="project", root=root, home=home)
    assert list(root.iterdir()) == []


def test_a_dry_run_records_no_directory(tmp_path: Path, tether_home: Path) -> None:
    root, home = _dirs(tmp_path)
    install("cursor", scope="user", root=root, home=home, command=CMD, dry_run=True)
    assert not (home / ".cursor").exists() and not tether_home.exists()


# ---- the commands --------------------------------------------------------------------------------


def test_uninstall_help_is_its_own() -> None:
    cli = build_cli()
    runner = CliRunner()
    install_help = runner.invoke(cli, ["install", "--help"]).output
    uninstall_help = runner.invoke(cli, ["uninstall", "--help"]).output
    assert (
        "Remove from this project's config" in uninstall_help
        and "Remove from your user config" in uninstall_help
    )
    assert "Install into" not in uninstall_help and "--allow-tools" not in uninstall_help
    assert "Install into this project's config" in install_help and "--allow-tools" in install_help


def test_install_command_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(home))
    result = CliRunner().invoke(build_cli(), ["install", "claude", "--allow-tools", "none"])
    assert result.exit_code == 0, result.output
    assert (
        "changed:" in result.output and "permissions" not in (root / ".claude" / "settings.json").read_text()
    )
    result = CliRunner().invoke(build_cli(), ["uninstall", "claude", "--dry-run"])
    assert result.exit_code == 0 and "would change" in result.output


@pytest.mark.parametrize("agent", AGENTS)
def test_install_and_uninstall_print_json(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)

    def tether(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether", *args],
            cwd=root,
            env={**os.environ, "HOME": str(home)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    planned = json.loads(tether("install", agent, "--dry-run", "--json").stdout)
    assert planned["ok"] and planned["dry_run"] and planned["changed"] and planned["diff"]
    assert not any(Path(p).exists() and "tether" in Path(p).read_text() for p in planned["changed"])
    done = tether("install", agent, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"] and (report["agent"], report["scope"]) == (agent, "project")
    assert report["changed"] == planned["changed"] and not report["dry_run"]
    assert json.loads(tether("install", agent, "--json").stdout)["changed"] == []  # idempotent
    removed = json.loads(tether("uninstall", agent, "--json").stdout)
    assert removed["ok"] and removed["changed"] and removed["agent"] == agent
    text = tether("uninstall", agent)
    assert text.stdout == "changed: nothing (already up to date)\n"  # the text is unchanged


def test_install_json_names_the_error(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text('{"hooks": [')
    done = subprocess.run(
        [sys.executable, "-m", "tether", "install", "claude", "--json"],
        cwd=root,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "is not valid JSON" in done.stderr
    answer = json.loads(done.stdout)
    assert (
        answer["ok"] is False
        and "is not valid JSON" in answer["error"]
        and "Nothing was written" in answer["error"]
    )
    assert (root / ".claude" / "settings.json").read_text() == '{"hooks": ['


def test_backups_and_local_settings_stay_out_of_git(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    _git_repo(root)
    _write(root, EXISTING["claude", "project"])
    report = install(
        "claude",
        scope="project",
        root=root,
        home=home,
        command=["/x/python", "-m", "tether"],
        tether_bin=Path("/x/tether"),
    )
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
    ).stdout
    assert ".claude/settings.json\n" in status and ".mcp.json" in status
    assert "tether-backup" not in status and LOCAL not in status
    assert any("*.tether-backup" in n and "exclude" in n for n in report.notes)
    exclude = (root / ".git" / "info" / "exclude").read_text()
    assert exclude.count("*.tether-backup") == 1 and exclude.count(LOCAL) == 1
    install(
        "claude",
        scope="project",
        root=root,
        home=home,
        command=["/y/python", "-m", "tether"],
        tether_bin=Path("/y/tether"),
    )
    assert (root / ".git" / "info" / "exclude").read_text() == exclude  # once
