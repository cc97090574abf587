"""tether inside the real Codex CLI: `tether install codex --project`, hooks trusted as in `/hooks`.

The trap: a README that lies about staging, two true notes in memory, and a question only memory answers.
Codex hands hook context to the model as plain ``role: "developer"`` input messages.
"""

from __future__ import annotations

import json

import pytest

from .conftest import RunCodex, Workspace
from .mock_openai import input_texts, say
from .test_tether_claude import HEADER, LYING_README, PORT_NOTE, SHIP_NOTE, remember, tether

pytestmark = pytest.mark.e2e


def test_trap_true_notes_reach_the_first_request(workspace: Workspace, run_codex: RunCodex) -> None:
    workspace.write("README.md", LYING_README)
    workspace.write("deploy.sh", "#!/bin/sh\nrsync -a . europa:/srv/orbit\n", executable=True)
    tether(workspace, "init")
    port = remember(workspace, PORT_NOTE, "--category", "context")
    ship = remember(workspace, SHIP_NOTE, "--category", "decision")
    tether(workspace, "install", "codex", "--project")
    workspace.commit("tether")
    prompt = "what port does staging run on, which host do we deploy to, and with what command?"

    # run_codex trusts every hook Codex lists for the repo first, as a user does once in /hooks.
    run = run_codex(workspace.repo, workspace.home, prompt, [[say("6443, callisto, make ship-v2.")]])

    assert run.returncode == 0, run.describe()
    first = run.requests[0]
    developer = input_texts(first, "developer")
    recalled = [t for t in developer if t.startswith(HEADER)]
    assert len(recalled) == 1, developer
    for fact in ("6443", "callisto", "make ship-v2", port, ship):
        assert fact in recalled[0], recalled[0]
    # Right after the prompt, like Codex places UserPromptSubmit context.
    items = first["input"]
    at = next(i for i, item in enumerate(items) if prompt in json.dumps(item))
    assert input_texts({"input": [items[at + 1]]}) == [recalled[0]]
    body = json.dumps(first)
    for lie in ("8080", "europa", "deploy.sh"):
        assert lie not in body, lie
