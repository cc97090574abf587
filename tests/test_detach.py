"""A detached child outlives its parent: its own session, output in the log, and the call returns at once."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tether.detach import spawn_detached, start_once


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


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_start_once_starts_one_worker_not_while_one_works_or_was_just_started(tmp_path: Path) -> None:
    ran, stamp = tmp_path / "ran.txt", tmp_path / "state" / "starting"
    argv = [sys.executable, "-c", f"open({str(ran)!r}, 'a').write('x')"]

    def start(busy: bool) -> bool:
        return start_once(argv, tmp_path / "w.log", cwd=tmp_path, busy=lambda: busy, stamp=stamp, grace=30)

    assert not start(busy=True) and not stamp.exists()  # one is at work: nothing started, nothing stamped
    assert start(busy=False) and stamp.exists()
    assert not start(busy=False)  # started moments ago: its lock may not be taken yet
    os.utime(stamp, (time.time() - 31, time.time() - 31))
    assert start(busy=False)  # the grace is over
    deadline = time.monotonic() + 20
    while (not ran.exists() or len(ran.read_text()) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ran.read_text() == "xx"
