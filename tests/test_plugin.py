"""The repository as a Claude Code marketplace, with the plugin in plugins/tether; its launcher run for real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import tether
from test_install_guard import BARE_PATH, StdioPeer, _env, _fake_tether
from tether.adapters.install import guard
from tether.adapters.install.specs import CLAUDE_EVENTS, HOOKS, plugin_hooks

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "plugins" / "tether"


def test_marketplace_lists_the_plugin() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert sorted(p.name for p in (REPO / ".claude-plugin").iterdir()) == ["marketplace.json"]
    assert market["name"] == "tether" and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == "tether" and entry["source"] == "./plugins/tether"
    assert entry["version"] == tether.__version__
    assert (REPO / entry["source"]).resolve() == PLUGIN


def test_plugin_manifest_and_no_dev_scripts() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "tether" and manifest["version"] == tether.__version__
    assert manifest["mcpServers"]["tether"] == {
        "type": "stdio",
        "command": "${CLAUDE_PLUGIN_ROOT}/scripts/tether",
        "args": ["mcp"],
    }
    # A plugin's bin/ joins the agent's PATH: the plugin has none, and the repository's bin/ is not in it.
    assert sorted(p.name for p in PLUGIN.iterdir()) == [".claude-plugin", "hooks", "scripts"]
    assert not (REPO / ".mcp.json").exists()  # would start a second server for anyone developing tether


def test_plugin_hooks_and_launcher_are_what_the_installer_generates() -> None:
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert hooks == plugin_hooks()
    assert set(hooks["hooks"]) <= CLAUDE_EVENTS
    assert [(e, g[0].get("matcher")) for e, g in hooks["hooks"].items()] == [
        (s.event, s.matcher) for s in HOOKS["claude"]
    ]
    launcher = PLUGIN / "scripts" / "tether"
    assert launcher.read_text() == guard.plugin_launcher(tether.__version__)
    assert os.access(launcher, os.X_OK)


def test_plugin_launcher_finds_tether_or_fetches_its_own_version(tmp_path: Path) -> None:
    launcher = str(PLUGIN / "scripts" / "tether")
    fake = _fake_tether(tmp_path / "bin")
    done = subprocess.run(
        [launcher, "hook", "claude", "Stop"],
        env=_env(PATH=f"{fake.parent}:{BARE_PATH}"),
        capture_output=True,
        text=True,
    )
    assert done.stdout == "fake tether:hook claude Stop\n"
    # No tether but uvx: the plugin's own version from PyPI (a fake uvx shows what would run).
    uvx = tmp_path / "uv-bin" / "uvx"
    uvx.parent.mkdir()
    uvx.write_text('#!/bin/sh\nprintf "uvx:%s\\n" "$*"\n')
    uvx.chmod(0o755)
    done = subprocess.run(
        [launcher, "mcp"], env=_env(PATH=f"{uvx.parent}:{BARE_PATH}"), capture_output=True, text=True
    )
    assert done.stdout == f"uvx:--quiet --from tether=={tether.__version__} tether mcp\n"


def test_plugin_launcher_without_any_way_to_tether(tmp_path: Path) -> None:
    launcher = str(PLUGIN / "scripts" / "tether")
    done = subprocess.run(
        [launcher, "hook", "claude", "SessionStart"], env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 0 and json.loads(done.stdout) == {"systemMessage": guard.PLUGIN_HINT}
    done = subprocess.run(
        [launcher, "hook", "claude", "PostToolUse"], env=_env(), capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == ""
    peer = StdioPeer([launcher, "mcp"], _env(), tmp_path)
    listed = peer.ask({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert listed == {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}
    assert peer.close() == 0
