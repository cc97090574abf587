"""`tether.config`: known keys only, typed, user file under project file, written back as valid TOML."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tether.config import DEFAULTS, Config, coerce, dump, set_value
from tether.errors import ConfigError


def test_defaults_and_typed_reads() -> None:
    config = Config.load()
    assert config.integer("recall.limit") == 3
    assert config.text("embedder") == "static"
    assert config.flag("distill.enabled") is False
    with pytest.raises(ConfigError, match="not a whole-number setting"):
        config.integer("embedder")
    with pytest.raises(ConfigError, match="not a true/false setting"):
        config.flag("recall.limit")
    with pytest.raises(ConfigError, match=r"unknown config key 'recall\.limt'"):
        config.value("recall.limt")


def test_later_files_win_and_unknown_keys_are_named(tmp_path: Path) -> None:
    user, project = tmp_path / "user.toml", tmp_path / "project.toml"
    user.write_text("[recall]\nlimit = 5\nbudget = 100\n")
    project.write_text("[recall]\nlimit = 2\n")
    config = Config.load(user, project, tmp_path / "absent.toml")
    assert (config.integer("recall.limit"), config.integer("recall.budget")) == (2, 100)
    project.write_text("[recall]\nlimt = 2\n")
    with pytest.raises(ConfigError, match=r"unknown config key 'recall.limt' in .*project.toml"):
        Config.load(project)
    project.write_text("[recall\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Config.load(project)


@pytest.mark.parametrize(
    ("key", "raw", "value"),
    [
        ("recall.limit", "4", 4),
        ("distill.enabled", "yes", True),
        ("distill.enabled", "off", False),
        ("guard.mode", "off", "off"),
    ],
)
def test_coerce(key: str, raw: str, value: object) -> None:
    assert coerce(key, raw) == value


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("recall.limit", "-1", "non-negative whole number"),
        ("recall.limit", "3.5", "non-negative whole number"),
        ("distill.enabled", "maybe", "true or false"),
        ("guard.mode", "sometimes", "must be one of"),
    ],
)
def test_coerce_refuses_with_the_reason(key: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        coerce(key, raw)


def test_set_value_keeps_other_keys_and_writes_valid_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    set_value(path, "recall.limit", "4")
    set_value(path, "embedder", 'odd "quoted" \\ value')
    set_value(path, "distill.enabled", "true")
    data = tomllib.loads(path.read_text())
    assert data["embedder"] == 'odd "quoted" \\ value'  # top-level keys come before tables
    assert data["recall"]["limit"] == 4 and data["distill"]["enabled"] is True
    assert Config.load(path).integer("recall.limit") == 4


def test_every_default_round_trips_through_dump() -> None:
    flat = {key: default for key, (default, _) in DEFAULTS.items()}
    text = dump(flat)
    loaded = tomllib.loads(text)
    for key, value in flat.items():
        section, _, name = key.rpartition(".")
        assert (loaded[section][name] if section else loaded[name]) == value
