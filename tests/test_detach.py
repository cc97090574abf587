"""A detached child outlives its parent: its own session, output in the log, and the call returns at once."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tether.detach import spawn_detached


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_spawn_detached_returns_at_once_while_the_child_keeps_running(tmp_path: Path) -> None:
    done = tmp_path / "done.txt"
    child = (
        "import os, sys, time; time.sleep(1.5); "
        f"open({str(done)!r}, 'w').write(str(os.getsid(0))); print('child finished')"
    )
    started = time.monotonic()
    spawn_detached([sys.executable, "-c", child], tmp_path / "logs" / "distill.log")
    elapsed = time.monotonic() - started
    assert elapsed < 0.5, elapsed
    assert not done.exists()  # still sleeping after we returned
    deadline = time.monotonic() + 20
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.exists(), "the detached child never finished"
    time.sleep(0.2)  # let the child flush stdout
    assert int(done.read_text()) != os.getsid(0)  # its own session: no terminal, outside the hook's group
    assert "child finished" in (tmp_path / "logs" / "distill.log").read_text()
