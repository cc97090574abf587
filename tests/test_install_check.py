"""`tether doctor`'s checks of agent integrations, on real config files and real server processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from tether.__main__ import build_cli, extensions
from tether.adapters.install import guard
from tether.adapters.install.check import AgentProblem, check_agents, installation, probe_server
from tether.adapters.install.installer import install

VENV_TETHER = Path(sys.executable).with_name("tether")
BARE = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(autouse=True)
def tether_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "tether-home"))


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "repo", tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, home


def _env(path: str, **extra: str) -> dict[str, str]:
    return {"PATH": path, "HOME": "/nonexistent", "TETHER_HOME": "/nonexistent/t", **extra}


def _kinds(problems: Sequence[AgentProblem]) -> list[tuple[str, str]]:
    return sorted((p.kind, Path(p.where).name) for p in problems)


def test_nothing_installed_nothing_to_say(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    assert check_agents(root, home, environ=_env(BARE)) == []


@pytest.mark.parametrize("agent", ["claude", "codex", "cursor", "gemini"])
def test_committed_install_with_tether_on_path_is_healthy(tmp_path: Path, agent: str) -> None:
    root, home = _dirs(tmp_path)
    install(agent, scope="project", root=root, home=home, command=["tether"])
    assert check_agents(root, home, environ=_env(f"{VENV_TETHER.parent}:{BARE}")) == []


def test_committed_install_without_tether_here(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    install("claude", scope="project", root=root, home=home, command=["tether"])
    problems = check_agents(root, home, environ=_env(BARE))
    assert _kinds(problems) == [("agent-hook", "settings.json"), ("agent-mcp", ".mcp.json")]
    hook, server = sorted(problems, key=lambda p: p.kind)
    assert "install tether" in hook.message and "stand-in" in server.message


def test_tether_bin_in_claude_local_settings_is_followed(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    install(
        "claude",
        scope="project",
        root=root,
        home=home,
        command=["/x/python", "-m", "tether"],
        tether_bin=VENV_TETHER,
    )
    assert json.loads((root / ".claude" / "settings.local.json").read_text())["env"] == {
        guard.BIN_VAR: str(VENV_TETHER)
    }
    assert check_agents(root, home, environ=_env(BARE)) == []


def test_user_install_pointing_nowhere(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    gone = str(tmp_path / "old-venv" / "bin" / "python")
    install("cursor", scope="user", root=root, home=home, command=[gone, "-m", "tether"])
    problems = check_agents(root, home, environ=_env(BARE))
    assert _kinds(problems) == [("agent-hook", "hooks.json"), ("agent-mcp", "mcp.json")]
    assert gone in problems[0].message or gone in problems[1].message
    assert any("does not start" in p.message for p in problems)


def test_hooks_calling_another_installation_than_path(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    other = tmp_path / "other-venv" / "bin"
    other.mkdir(parents=True)
    (other / "python").symlink_to(sys.executable)
    install("gemini", scope="user", root=root, home=home, command=[str(other / "python"), "-m", "tether"])
    problems = check_agents(root, home, environ=_env(f"{VENV_TETHER.parent}:{BARE}"))
    # (the bare interpreter link has no tether to import, so its server fails too)
    assert _kinds(problems) == [("agent-install", "settings.json"), ("agent-mcp", "settings.json")]
    assert str(VENV_TETHER) in problems[0].message and "another installation" in problems[0].message


def test_a_server_that_never_answers_is_reported_within_the_timeout(tmp_path: Path) -> None:
    tools, failure = probe_server(
        {"command": "sleep", "args": ["30"]}, env=_env(BARE), cwd=tmp_path, timeout=1
    )
    assert tools is None and "within 1 s" in failure
    tools, failure = probe_server(
        {"command": "sh", "args": ["-c", "echo boom >&2"]}, env=_env(BARE), cwd=tmp_path
    )
    assert tools is None and "exited (0)" in failure and "boom" in failure


def test_an_unreadable_config_is_reported(tmp_path: Path) -> None:
    root, home = _dirs(tmp_path)
    (root / ".codex").mkdir()
    (root / ".codex" / "config.toml").write_text("model = \n")
    assert _kinds(check_agents(root, home, environ=_env(BARE))) == [("agent-config", "config.toml")]


def test_installation_is_the_interpreters_bin_directory(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "tether"
    script.parent.mkdir()
    script.write_text("#!/opt/venv/bin/python3.11\n")
    assert installation(str(script)) == "/opt/venv/bin" == installation("/opt/venv/bin/python")


def test_doctor_prints_the_agent_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = _dirs(tmp_path)
    install("codex", scope="project", root=root, home=home, command=["tether"])
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", BARE)
    monkeypatch.delenv(guard.BIN_VAR, raising=False)
    runner = CliRunner()
    result = runner.invoke(build_cli(), ["doctor", "--json"], obj=extensions())
    assert result.exit_code == 1, result.output
    kinds = {(p["kind"], Path(p["where"]).name) for p in json.loads(result.output)["problems"]}
    assert kinds == {("agent-hook", "hooks.json"), ("agent-mcp", "config.toml")}
    # Without the composition root's extensions the CLI knows no agent check (the adapters stay apart).
    assert runner.invoke(build_cli(), ["doctor"]).exit_code == 0
