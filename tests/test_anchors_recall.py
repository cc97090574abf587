"""Edit-time recall: locations rank a file's memories (library, CLI, MCP), and each agent's before-edit hook
names the gotcha of the function being edited first, among three anchored ones."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from anchor_sources import SOURCES, line_of
from conftest import git
from tether.adapters.hooks import main as hook_main
from tether.anchors.locations import Location
from tether.recall.evidence import CHANNELS
from tether.workspace import Workspace

GOTCHAS = {
    "charge_card": "Never retry a charge with a new key",
    "refund": "Refunds are integer cents, never floats",
    "capture": "Capture only after the fraud check passed",
}


def anchored(repo: Path, ws: Workspace, name: str = "billing.py") -> tuple[str, dict[str, str]]:
    path = f"src/{name}"
    (repo / path).write_text(SOURCES[name], encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "billing")
    ids = {}
    for function, summary in GOTCHAS.items():
        ids[function] = ws.add(summary, category="gotcha", at=[f"{path}::{function}"]).memory.id
    ws.add("Billing talks to the gateway only through gateway.py", category="gotcha", files=[path])
    return path, ids


def test_recall_ranks_the_memory_anchored_at_the_location_first(repo: Path, ws: Workspace) -> None:
    path, ids = anchored(repo, ws)
    text = SOURCES["billing.py"]
    for function, needle in (("refund", "gateway.refund"), ("capture", "gateway.capture")):
        line = line_of(text, needle)
        for files, locations in (
            ([f"{path}:{line}"], []),
            ([f"{path}::{function}"], []),
            ([], [Location(path, lines=(line, line))]),
        ):
            result = ws.recall("", files, record=False, locations=locations)
            top = result.memories[0]
            assert top.memory.id == ids[function], (files, [r.memory.summary for r in result.memories])
            assert f"at {function}()" in top.receipt and top.signals["anchor"] > 0
    # without a location, the file's memories are level: the anchors decide nothing
    plain = ws.recall("", [path], record=False)
    assert {r.memory.id for r in plain.memories} <= {*ids.values(), *(m.id for m in ws.find())}


def test_a_memory_naming_what_the_edit_writes_or_where_it_lands_gets_credit(
    repo: Path, ws: Workspace
) -> None:
    path, _ = anchored(repo, ws)
    rule = ws.add(
        "Subclass `Charger` for new providers; never call charge_card twice", category="pref"
    ).memory
    line = line_of(SOURCES["billing.py"], "return charge_card(order, order.key)")
    result = ws.recall("", [], record=False, locations=[Location(path, lines=(line, line))], limit=5)
    found = {r.memory.id: r for r in result.memories}
    assert rule.id in found and "names(Charger)" in found[rule.id].receipt  # the definition the edit is in
    caller = ws.add("Callers of charge_card pass the order's own key", category="gotcha", files=[path]).memory
    place = Location(path, lines=(1, 1), text="x = charge_card(o, k)")
    no_code = [c for c in CHANNELS if c != "code"]
    written = {
        r.memory.id: r
        for r in ws.recall("", [], record=False, locations=[place], limit=9, channels=no_code).memories
    }
    assert "names(charge_card)" in written[caller.id].receipt and written[caller.id].signals["ident"] > 0
    assert rule.id not in written  # credit, not evidence: naming what an edit writes does not inject a rule
    # The file's code does use both names the rule gives: that is evidence (the code channel, issue 17).
    coded = {r.memory.id: r for r in ws.recall("", [], record=False, locations=[place], limit=9).memories}
    assert "code(" in coded[rule.id].receipt


def test_cli_recall_explain_and_add_take_places(repo: Path, ws: Workspace, tether: Any) -> None:
    path, ids = anchored(repo, ws)
    done = tether("recall", "--file", f"{path}::capture", "--json", "--no-record")
    assert done.code == 0, done.err
    assert json.loads(done.out)["memories"][0]["id"] == ids["capture"]
    explained = tether("explain", ids["refund"], "--file", f"{path}::refund", "--json")
    assert json.loads(explained.out)["evidence"]["anchor"] == "refund()"
    bad = tether("add", "Typo", "--at", f"{path}::refnud")
    assert (
        bad.code == 1 and "no symbol 'refnud'" in bad.err and "refund" in bad.err and "charge_card" in bad.err
    )
    added = tether("add", "Line gotcha", "--at", f"{path}:5", "--json")
    assert added.code == 0 and json.loads(added.out)["anchors"][0]["within"] == "charge_card"
    shown = tether("get", ids["refund"])
    assert f"at: {path} refund (lines" in shown.out
    moved = tether("edit", ids["refund"], "--at", f"{path}::capture")
    assert moved.code == 0
    ws.sync()
    assert ws.get(ids["refund"]).anchors[0].symbol == "capture"
    assert tether("edit", ids["refund"], "--no-anchors").code == 0
    ws.sync()
    assert ws.get(ids["refund"]).anchors == () and ws.get(ids["refund"]).files == (path,)


# -- the before-edit hook, per agent ---------------------------------------------------------------------

OLD = "    return gateway.refund(order.id, cents)"
NEW = "    return gateway.refund(order.id, int(cents))"


def payloads(repo: Path, path: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    absolute = str(repo / path)
    text = SOURCES["billing.py"]
    base = {"session_id": "s", "cwd": str(repo)}
    claude = {**base, "hook_event_name": "PreToolUse"}
    return {
        "claude Edit": (
            "claude",
            "PreToolUse",
            {
                **claude,
                "tool_name": "Edit",
                "tool_input": {"file_path": absolute, "old_string": OLD, "new_string": NEW},
            },
        ),
        "claude MultiEdit": (
            "claude",
            "PreToolUse",
            {
                **claude,
                "tool_name": "MultiEdit",
                "tool_input": {"file_path": absolute, "edits": [{"old_string": OLD, "new_string": NEW}]},
            },
        ),
        "claude Write": (
            "claude",
            "PreToolUse",
            {
                **claude,
                "tool_name": "Write",
                "tool_input": {"file_path": absolute, "content": text.replace(OLD, NEW)},
            },
        ),
        "codex apply_patch": (
            "codex",
            "PreToolUse",
            {
                **claude,
                "tool_name": "apply_patch",
                "tool_input": {
                    "command": f"*** Begin Patch\n*** Update File: {path}\n@@ def refund(order, cents):\n-{OLD}\n+{NEW}\n*** End Patch"
                },
            },
        ),
        "gemini replace": (
            "gemini",
            "BeforeTool",
            {
                **base,
                "hook_event_name": "BeforeTool",
                "tool_name": "replace",
                "tool_input": {"file_path": absolute, "old_string": OLD, "new_string": NEW},
            },
        ),
        "cursor Edit": (
            "cursor",
            "preToolUse",
            {
                "conversation_id": "s",
                "workspace_roots": [str(repo)],
                "hook_event_name": "preToolUse",
                "tool_name": "Edit",
                "tool_input": {"file_path": absolute, "old_string": OLD, "new_string": NEW},
            },
        ),
    }


def run(agent: str, event: str, payload: dict[str, Any], session: str) -> str:
    payload = {**payload, "session_id": session, "conversation_id": session}
    out = io.StringIO()
    assert hook_main([agent, event], io.StringIO(json.dumps(payload)), out) == 0
    if not out.getvalue():
        return ""
    data = json.loads(out.getvalue())
    specific = data.get("hookSpecificOutput", {})
    return str(
        specific.get("permissionDecisionReason")
        or specific.get("additionalContext")
        or data.get("reason")
        or data.get("agent_message")
        or data.get("additional_context")
        or ""
    )


@pytest.mark.parametrize(
    "case",
    ["claude Edit", "claude MultiEdit", "claude Write", "codex apply_patch", "gemini replace", "cursor Edit"],
)
def test_each_agents_edit_in_an_anchored_function_names_that_gotcha_first(
    repo: Path, ws: Workspace, tether: Any, case: str
) -> None:
    assert tether("config", "guard.mode", "deny-once").code == 0
    path, ids = anchored(repo, ws)
    agent, event, payload = payloads(repo, path)[case]
    text = run(agent, event, payload, f"session-{case}")
    lines = [line for line in text.splitlines() if line.startswith("·")]
    assert lines, text
    assert lines[0].startswith(f'· gotcha on refund(): "{GOTCHAS["refund"]}" [{ids["refund"]}]'), text
    assert "Billing talks to the gateway" in lines[1]  # about the whole file: still shown, after
    assert GOTCHAS["charge_card"] not in text and GOTCHAS["capture"] not in text  # elsewhere: counted only
    assert "+2 more gotchas anchored elsewhere" in text
    assert f"{path} has known gotchas at line " in text.splitlines()[0]  # the pause names the place
    # deny-once: the same edit again goes through; an edit in another anchored function pauses again
    assert run(agent, event, payload, f"session-{case}") == ""
    other = json.loads(
        json.dumps(payload).replace("gateway.refund(order.id, cents)", "gateway.capture(order.id)")
    )
    if case == "codex apply_patch":
        other["tool_input"]["command"] = (
            other["tool_input"]["command"]
            .replace("def refund(order, cents):", "def capture(order):")
            .replace("int(cents)", "int(order.id)")
        )
    elif case == "claude Write":
        other["tool_input"]["content"] = SOURCES["billing.py"].replace(
            "gateway.capture(order.id)", "gateway.capture(order.key)"
        )
    elif case == "claude MultiEdit":
        other["tool_input"]["edits"][0]["new_string"] = "    return gateway.capture(order.key)"
    else:
        other["tool_input"]["new_string"] = "    return gateway.capture(order.key)"
    again = run(agent, event, other, f"session-{case}")
    assert f'gotcha on capture(): "{GOTCHAS["capture"]}"' in again, again


def test_an_edit_without_a_place_lists_the_files_best_gotchas_and_the_next_edit_the_rest(
    repo: Path, ws: Workspace, tether: Any
) -> None:
    assert tether("config", "guard.mode", "deny-once").code == 0
    path, _ = anchored(repo, ws)
    payload = {
        "session_id": "s",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / path), "old_string": "not in the file", "new_string": "x"},
    }
    text = run("claude", "PreToolUse", payload, "nowhere")
    listed = [line for line in text.splitlines() if line.startswith("· gotcha")]
    assert len(listed) == 3 and f"· (+1 more gotcha on {path}: " in text  # `hints.per_read`, then counted
    again = run("claude", "PreToolUse", payload, "nowhere")  # the pause was once; the rest come now
    summaries = [*GOTCHAS.values(), "Billing talks to the gateway"]
    assert all(any(summary in line for line in [*listed, again]) for summary in summaries)


def test_a_rule_naming_a_symbol_comes_with_an_edit_where_it_is_defined(
    repo: Path, ws: Workspace, tether: Any
) -> None:
    (repo / "AGENTS.md").write_text(
        "# Rules\n\n- Raise `ModelRetry` to ask the model again; never loop on validation errors yourself.\n"
        "- Keep imports sorted.\n",
        encoding="utf-8",
    )
    source = (
        "class ModelRetry(Exception):\n    def __init__(self, message):\n        self.message = message\n"
    )
    (repo / "src" / "app" / "exceptions.py").write_text(source, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rules")
    assert tether("rules", "sync").code == 0
    ws.sync()
    rule = next(m for m in ws.find() if "ModelRetry" in m.summary)
    assert rule.origin.startswith("rules:") and rule.anchors == ()
    edit = Location("src/app/exceptions.py", lines=(3, 3), text="        self.message = message.strip()")
    result = ws.recall("", [], record=False, locations=[edit])
    top = {r.memory.id: r for r in result.memories}
    assert rule.id in top and "names(ModelRetry)" in top[rule.id].receipt
    elsewhere = ws.recall("", ["src/app/upload.py:1"], record=False)
    assert rule.id not in {r.memory.id for r in elsewhere.memories}


def test_distance_orders_a_files_memories_beyond_the_near_lines(repo: Path, ws: Workspace) -> None:
    """Issue 10b: past 40 lines every anchor counted alike (a flat penalty), so a memory 60 lines from the
    edit ranked level with one 500 lines away; distance now orders the whole file, and only "near" ones are
    named in the receipt."""
    path = "src/long.py"
    (repo / "src").mkdir(exist_ok=True)
    (repo / path).write_text("".join(f"value_{i} = {i}\n" for i in range(1, 601)), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "long")
    ids = {}
    for line, summary in (
        (560, "Keep the far table sorted"),
        (70, "Keep the near table sorted"),
        (300, "Keep the mid table sorted"),
    ):
        ids[line] = ws.add(summary, category="gotcha", at=[f"{path}:{line}-{line}"]).memory.id
    result = ws.recall("", [], record=False, locations=[Location(path, lines=(10, 10))])
    assert [r.memory.id for r in result.memories] == [ids[70], ids[300], ids[560]]
    assert all("near" not in r.receipt for r in result.memories)
    assert result.memories[0].signals["file"] > 0
