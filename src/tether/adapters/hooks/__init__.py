"""`tether hook <agent> <event>`: the agent's hook JSON on stdin, tether's reply on stdout.

Hooks fail open: malformed input, no project, a locked or corrupt index, any exception or a missed
deadline all mean exit 0 and nothing on stdout, with one line in the log. The agent is never blocked by a
broken memory store.

Imports only the standard library at start (`behaviour` and the core load when a hook has work); never
another adapter.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from tether.adapters.hooks.behaviour import Reply

from tether.model.display import printable_data, safe_json

# Well under the agents' own hook timeouts (Claude Code's prompt hook: the 5-10 s the installer sets),
# so a slow disk or a wedged lock makes tether go quiet instead of making the agent wait.
DEFAULT_DEADLINE_SECONDS = 3.0


# After the deadline, the `finally` blocks and cleanup still run; should one of them block too (a lock, a
# disk that stopped answering), a process that owns itself (`hard`) ends at deadline + this grace, exit 0.
HARD_GRACE_SECONDS = 1.0


class _Deadline(BaseException):
    """Raised in the hook's thread when its deadline passes. A `BaseException`, like `KeyboardInterrupt`:
    the core's `except Exception` handlers (recall's fallback, each housekeeping pass) must not catch it
    and carry on past the deadline."""


def main(
    argv: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None, *, hard: bool = False
) -> int:
    """Run one hook. Always returns 0.

    `hard`: this process is the hook (`tether hook`), so besides the deadline alarm a timer thread ends
    the process (exit 0, nothing on stdout, one log line) if the work still runs `HARD_GRACE_SECONDS`
    later; it is also the only deadline where `SIGALRM` does not exist (Windows) or off the main thread.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    started = time.perf_counter()
    agent = argv[0] if argv else ""
    event_name = argv[1] if len(argv) > 1 else ""
    cwd = Path.cwd()
    try:
        deadline = float(os.environ.get("TETHER_HOOK_DEADLINE", DEFAULT_DEADLINE_SECONDS))
    except ValueError:
        deadline = DEFAULT_DEADLINE_SECONDS
    if not deadline > 0:  # also NaN
        deadline = DEFAULT_DEADLINE_SECONDS
    armed = [True]

    def on_deadline(signum: int, frame: Any) -> None:
        # One-shot: the alarm can be delivered late (after a blocking C call returns), even while an
        # earlier failure is being handled; it must raise at most once, where a handler catches it.
        if armed[0]:
            armed[0] = False
            raise _Deadline(f"hook deadline passed ({deadline:g} s)")

    alarm = _arm(deadline, on_deadline)
    stopper = (
        _hard_stop(deadline + HARD_GRACE_SECONDS, armed, cwd, agent, event_name, started) if hard else None
    )
    failure: BaseException | None = None
    output: dict[str, Any] | None = None
    try:
        try:
            output = _work(agent, event_name, stdin)
        except BaseException as exc:  # fail open, whatever happened
            failure = exc
    except _Deadline as late:  # delivered while the first failure was being caught
        failure = failure or late
    finally:
        armed[0] = False
        alarm()
    if stopper is not None:
        stopper.cancel()
    if failure is not None:
        _log_failure(cwd, agent, event_name, failure, time.perf_counter() - started)
    elif output is not None:
        try:
            # Memory text is data: control characters reach the agent shown, not obeyed (`tether.model.display`).
            stdout.write(safe_json(printable_data(output)))
            stdout.flush()
        except OSError:
            pass  # the agent stopped listening
    return 0


def _arm(deadline: float, handler: Callable[[int, Any], None]) -> Callable[[], None]:
    """Raise through `handler` in this thread after `deadline` seconds; returns the disarming function.

    Where there is no `SIGALRM`/`setitimer` (Windows) or this is not the main thread (signals are handled
    there only), nothing is armed: never a crash, and a hard hook still has its timer thread."""
    if not hasattr(signal, "SIGALRM") or not hasattr(signal, "setitimer"):
        return lambda: None
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, deadline)

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return disarm


def _hard_stop(
    after: float, armed: list[bool], cwd: Path, agent: str, event: str, started: float
) -> threading.Timer:
    def stop() -> None:
        armed[0] = False
        elapsed = time.perf_counter() - started
        _log_failure(cwd, agent, event, _Deadline(f"hook still running {after:g} s in: ended"), elapsed)
        os._exit(0)  # nothing was printed; SQLite and the atomic note writes are crash-safe

    timer = threading.Timer(after, stop)
    timer.daemon = True
    timer.start()
    return timer


def _work(agent: str, event_name: str, stdin: Any) -> dict[str, Any] | None:
    from tether.adapters.hooks.agents import AGENTS, known_event

    if agent not in AGENTS or not known_event(agent, event_name):
        raise ValueError(f"unknown agent/event {agent!r} {event_name!r}: see `tether install --help`")
    from tether.model.limits import HOOK_INPUT_MAX_BYTES

    raw = stdin.read(HOOK_INPUT_MAX_BYTES + 1)  # characters: at least as many bytes
    if len(raw) > HOOK_INPUT_MAX_BYTES:
        raise ValueError(f"hook input over {HOOK_INPUT_MAX_BYTES} bytes: not read (fail open)")
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"hook input is not JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    return _run(agent, event_name, payload)


def _run(agent: str, event_name: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    from tether.adapters.hooks.agents import parse, render
    from tether.adapters.hooks.behaviour import handle
    from tether.errors import NoProjectError
    from tether.workspace import Workspace

    event = parse(agent, event_name, payload)
    if event.kind in ("other", "stop"):
        return render(agent, event_name, event, _empty())
    try:
        ws = Workspace.open(event.cwd, require_project=True, light=True)
    except NoProjectError:
        return render(agent, event_name, event, _empty())  # not a tether project: nothing to say
    try:
        reply = handle(ws, event)
    finally:
        ws.close()
    return render(agent, event_name, event, reply)


def _empty() -> Reply:
    from tether.adapters.hooks.behaviour import Reply

    return Reply()


def _log_failure(cwd: Path, agent: str, event: str, exc: BaseException, elapsed: float) -> None:
    try:
        from tether.project import find_project_root, user_home

        root = find_project_root(cwd)
        logs = root / ".tether" / "logs" if root else user_home() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        import traceback  # a failure's only (with linecache and tokenize: 2 ms of every hook's start)

        where = "".join(traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " | ")
        line = json.dumps(
            {
                "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "hook": f"{agent} {event}",
                "error": where,
                "elapsed_ms": round(elapsed * 1000),
            }
        )
        with open(logs / "hooks.log", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    except Exception:
        pass
