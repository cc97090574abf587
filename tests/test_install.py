"""tether install/uninstall for every agent and scope, on real config files in tmp dirs; the plugin files."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.adapters.install.installer import AGENTS, config_files, default_command, install, uninstall
from tether.adapters.install.specs import CLAUDE_EVENTS, HOOKS, hook_command
from tether.errors import ConfigError, ValidationError

REPO = Path(__file__).resolve().parent.parent
SCOPES = ("project", "user")
CMD = ["tether"]

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
    ("inline servers", 'mcp_servers = { docs = { command = "npx" } }\n', "could not be edited safely"),
    (
        "inline tether",
        '[mcp_servers]\ntether = { command = "tether", args = ["mcp"] }\n',
        "only edits that form",
    ),
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


def _expected_commands(agent: str, command: list[str] = CMD) -> list[str]:
    return [hook_command(command, agent, spec.event) for spec in HOOKS[agent]]


def _check_installed(agent: str, scope: str, root: Path, home: Path, originals: dict[str, str]) -> None:
    """tether's hooks and server are there exactly once, and everything that was there still is."""
    base = _base(scope, root, home)
    commands: list[str] = []
    servers: dict[str, Any] = {}
    for path in config_files(agent, scope=scope, root=root, home=home):
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
                if key not in ("hooks", "mcpServers", "mcp_servers"):
                    assert data[key] == value
    for expected in _expected_commands(agent):
        assert commands.count(expected) == 1, expected
    assert servers["tether"]["command"] == "tether"
    assert servers["tether"]["args"] == ["mcp"]


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_install_twice_keeps_other_entries_and_uninstall_restores_bytes(
    tmp_path: Path, agent: str, scope: str
) -> None:
    root, home = _dirs(tmp_path)
    originals = EXISTING[agent, scope]
    _write(_base(scope, root, home), originals)
    before = _tree(root, home)

    first = install(agent, scope=scope, root=root, home=home, command=CMD)
    targets = config_files(agent, scope=scope, root=root, home=home)
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
    assert preview.changed == config_files(agent, scope=scope, root=root, home=home)
    assert preview.backups and not any(p.exists() for p in preview.backups)
    for expected in _expected_commands(agent):
        assert expected in preview.diff
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
        if run is uninstall and defect == "inline servers":
            continue  # nothing of tether's to remove there: uninstall leaves the file alone
        with pytest.raises(ConfigError) as caught:
            run(agent, scope=scope, root=root, home=home)
        assert str(bad) in str(caught.value)
        assert message in str(caught.value)
        assert _tree(root, home) == before  # no file written, not even the other agent file or a backup


@pytest.mark.parametrize(("agent", "scope"), CASES)
def test_backup_is_made_once_and_never_overwritten(tmp_path: Path, agent: str, scope: str) -> None:
    root, home = _dirs(tmp_path)
    _write(_base(scope, root, home), EXISTING[agent, scope])
    target = config_files(agent, scope=scope, root=root, home=home)[0]
    original = target.read_bytes()
    install(agent, scope=scope, root=root, home=home, command=CMD)
    backup = target.with_name(target.name + ".tether-backup")
    assert backup.read_bytes() == original

    data = _load(target)
    data["userAddedLater"] = True
    target.write_text(json.dumps(data, indent=2) + "\n")
    again = install(agent, scope=scope, root=root, home=home, command=["/opt/other/python", "-m", "tether"])
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
    assert servers["tether"]["command"] == "tether" and servers["tether"]["args"] == ["mcp"]
    assert servers["tether"]["env"] == {"TETHER_HOME": "/data"}


def test_codex_toml_edits_keep_every_other_byte(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    config = root / ".codex" / "config.toml"
    _write(root, {".codex/config.toml": CODEX_TOML})
    install("codex", scope="project", root=root, home=home, command=["/opt/my tools/python", "-m", "tether"])
    text = config.read_text()
    assert text.startswith(CODEX_TOML)  # appended; nothing before it rewritten
    data = tomllib.loads(text)
    assert data["mcp_servers"]["tether"] == {
        "command": "/opt/my tools/python",
        "args": ["-m", "tether", "mcp"],
    }
    assert data["notes"] == "[mcp_servers.tether]\nthis is a string, not a table\n"
    assert data["mcp_servers"]["docs"]["args"][1] == "docs-server]"


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
    assert data["mcp_servers"]["tether"] == {
        "command": "tether",
        "args": ["mcp"],
        "startup_timeout_sec": 20,
        "env": {"TETHER_HOME": "/data"},
    }
    (root / ".codex" / "config.toml.tether-backup").unlink()  # as if made long ago and thrown away

    uninstall("codex", scope="project", root=root, home=home)
    text = (root / ".codex" / "config.toml").read_text()
    assert text == 'model = "o3"\n\n# other servers below\n[mcp_servers.x]\ncommand = "x"\n'


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
def test_hook_commands_run_the_given_command_even_with_spaces(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    command = ["/opt/my tools/python3", "-m", "tether"]
    install(agent, scope="project", root=root, home=home, command=command)
    commands = [
        c
        for p in config_files(agent, scope="project", root=root, home=home)
        for c in _hook_commands(_load(p))
    ]
    assert [shlex.split(c) for c in commands] == [[*command, "hook", agent, s.event] for s in HOOKS[agent]]
    uninstall(agent, scope="project", root=root, home=home)
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


# ---- the repository as a Claude Code plugin (.claude-plugin/plugin.json + hooks/hooks.json) -------------


def test_plugin_manifest() -> None:
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "tether"
    assert manifest["version"] == tether.__version__
    assert isinstance(manifest["description"], str) and manifest["description"]
    # Only plugin.json lives in .claude-plugin/; hooks/hooks.json is found by convention (not re-declared).
    assert sorted(p.name for p in (REPO / ".claude-plugin").iterdir()) == ["plugin.json"]
    assert "hooks" not in manifest
    server = manifest["mcpServers"]["tether"]
    assert server == {"type": "stdio", "command": "tether", "args": ["mcp"]}


def test_plugin_hooks_file() -> None:
    data = json.loads((REPO / "hooks" / "hooks.json").read_text())
    assert set(data) == {"description", "hooks"}
    hooks = data["hooks"]
    for event, groups in hooks.items():
        assert event in CLAUDE_EVENTS
        assert isinstance(groups, list) and groups
        for group in groups:
            assert set(group) <= {"matcher", "hooks"}
            for handler in group["hooks"]:
                assert handler["type"] == "command"
                assert shlex.split(handler["command"]) == ["tether", "hook", "claude", event]
                assert isinstance(handler["timeout"], int) and 0 < handler["timeout"] <= 30
    assert hooks["PreToolUse"][0]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    # Reads bring gotchas, edits record touched files, memory tools silence hints; nothing else.
    assert [g.get("matcher") for g in hooks["PostToolUse"]] == [
        "Read|Edit|Write|MultiEdit|NotebookEdit|mcp__.*memory_.*"
    ]
    assert set(hooks) >= {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd"}


def test_plugin_hooks_match_what_install_writes(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    install("claude", scope="project", root=root, home=home, command=["tether"])
    installed = json.loads((root / ".claude" / "settings.json").read_text())
    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())
    assert plugin["hooks"] == installed["hooks"]


def test_no_plugin_mcp_json_at_the_repo_root() -> None:
    # The plugin declares its server inline in plugin.json: a root .mcp.json would also be this repository's
    # project-scope MCP config and start a second `tether` server for anyone developing tether in Claude Code.
    assert not (REPO / ".mcp.json").exists() or "tether" not in json.loads(
        (REPO / ".mcp.json").read_text()
    ).get("mcpServers", {})


def test_paths_in_reports_are_under_the_given_dirs(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    for agent in AGENTS:
        for scope in SCOPES:
            base = _base(scope, root, home)
            assert all(
                os.path.commonpath([p, base]) == str(base)
                for p in config_files(agent, scope=scope, root=root, home=home)
            )
