"""The peers benchmark's own logic (benchmarks/bench_peers.py), with no peer installed: the ratios it prints,
the hook JSON it sends, the hook commands it reads from a plugin's hooks.json, the memories it seeds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_peers


@pytest.mark.parametrize(
    ("values", "bases", "expected"),
    [
        ([2.0, 4.0, 9.0], [1.0, 2.0, 3.0], 2.0),  # per-run ratios 2, 2, 3: their median, not 15/6
        ([1.0, 10.0], [1.0, 1.0], 5.5),
        ([0.3], [0.1], 3.0),
    ],
)
def test_paired_is_the_median_of_per_run_ratios(
    values: list[float], bases: list[float], expected: float
) -> None:
    assert bench_peers.paired(values, bases) == pytest.approx(expected)


@pytest.mark.parametrize(("values", "bases"), [([1.0, 2.0], [1.0]), ([], [])])
def test_paired_refuses_runs_without_their_baselines(values: list[float], bases: list[float]) -> None:
    with pytest.raises(ValueError, match="baselines"):
        bench_peers.paired(values, bases)


def test_claude_payload_carries_what_claude_code_sends(tmp_path: Path) -> None:
    body = json.loads(bench_peers.claude_payload("UserPromptSubmit", tmp_path, "s-1", prompt="why?"))
    assert body["hook_event_name"] == "UserPromptSubmit"
    assert body["cwd"] == str(tmp_path)
    assert body["session_id"] == "s-1"
    assert body["prompt"] == "why?"
    assert body["transcript_path"].startswith(str(tmp_path))


def test_claude_mem_hooks_lists_each_events_commands_in_order(tmp_path: Path) -> None:
    spec = {
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "a start"}]},
                {"hooks": [{"type": "command", "command": "a context"}]},
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "a session-init"}]}],
        }
    }
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "hooks.json").write_text(json.dumps(spec), encoding="utf-8")
    assert bench_peers.claude_mem_hooks(tmp_path) == {
        "SessionStart": ["a start", "a context"],
        "UserPromptSubmit": ["a session-init"],
    }


def test_every_tool_is_seeded_with_the_same_memories() -> None:
    first, again = bench_peers.texts(50), bench_peers.texts(50)
    assert first == again
    assert len({summary for summary, _, _ in first}) == 50
    assert {category for _, _, category in first} <= {"pref", "decision", "gotcha", "context"}
