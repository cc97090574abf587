"""The resident process: one per project (and user home, database, interpreter), on a private Unix socket,
or (`transport="tcp"`: Windows) on a random port of 127.0.0.1 whose every request must carry the token the
process wrote, with the port, to its endpoint file (mode 0600, in the private runtime directory).

It holds a lock file for its whole life (`client.lock_path`), so a second one exits at once and a socket
file whose lock is free belongs to a dead process and is replaced. Connections are read in threads, at most
`max_connections` at once, into a bounded queue (`queue_size`); one worker, the main thread, answers them in
order, each within its own time limit (the hook's deadline, or `op_seconds`), so the open index is used by
one thread and a request that runs over is interrupted (SIGALRM) and its workspace reopened. Anything over
those bounds is answered `busy` at once, and the client does the work itself.

It exits by itself after `idle_seconds` without a request, when its socket file is removed or taken over,
when the project's `.tether/` goes, on `stop`, or on SIGTERM; it restarts itself (a fresh `exec` of the same
command) when its resident memory passes `max_rss_mib`.

>>> ResidentServer(path, answers, idle_seconds=1800, max_rss_mib=768).run(print)  # doctest: +SKIP
'idle'
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tether.resident.client import reply_header
from tether.transport import authorized, listen

# Reading one request (header and body) from a connected client; a hook sends it in one write.
READ_SECONDS = 2.0
_MAX_HEADER = 64 * 1024
_MAX_BODY = 8 * 1024 * 1024
# How often the lifecycle checks run when no request comes: a stop or a removed socket is noticed quickly.
_TICK_SECONDS = 0.5
# How long no request must come before the answerer's idle work runs (in slices: `Answerer.idle`): the
# requests of a busy stretch are a few hundred ms apart, and idle work waiting for half a second of quiet
# would not run at all in one.
IDLE_SLICE_SECONDS = 0.05


class Answerer(Protocol):
    """What the process answers with (`tether.resident.answers.Answers`; tests pass their own)."""

    def answer(self, header: dict[str, Any], body: bytes) -> tuple[bytes, bytes]: ...

    def idle(self) -> None: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...

    def held(self) -> dict[str, float]: ...


class _Overrun(BaseException):
    """A request ran past its time limit (a BaseException: nothing in the request's code catches it)."""


@dataclass
class Job:
    conn: socket.socket
    header: dict[str, Any]
    body: bytes
    received: float


def encode(reply: dict[str, Any], body: bytes = b"") -> tuple[bytes, bytes]:
    """A reply's header line (compact JSON, `ok` first) and body."""
    fields = {"ok": reply.pop("ok", True), **reply, "length": len(body)}
    return json.dumps(fields, separators=(",", ":")).encode() + b"\n", body


def fallback(reason: str) -> tuple[bytes, bytes]:
    return encode({"ok": False, "fallback": reason})


def rss_mib() -> float:
    """This process's resident memory now (Linux: /proc; elsewhere the peak, which only grows)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return peak_rss_mib()


def peak_rss_mib() -> float:
    """The most resident memory this process has had (since its last exec); 0 where no system call says
    (Windows has no `resource`: there the memory cap never restarts the process)."""
    try:
        import resource
    except ImportError:
        return 0.0

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class ResidentServer:
    """The socket, its reader threads, the queue and the worker; `run` drives its life."""

    def __init__(
        self,
        path: Path,
        answers: Answerer,
        *,
        idle_seconds: float,
        max_rss_mib: float,
        queue_size: int = 64,
        max_connections: int = 64,
        op_seconds: float = 30.0,
        project_dir: Path | None = None,
        transport: str = "unix",
    ) -> None:
        self.path = path
        self.transport = transport
        self.answers = answers
        self.idle_seconds = idle_seconds
        self.max_rss_mib = max_rss_mib
        self.op_seconds = op_seconds
        self.project_dir = project_dir
        self.jobs: queue.Queue[Job] = queue.Queue(maxsize=queue_size)
        self.stopping = threading.Event()
        self.served = 0
        self.refused = 0
        self.overruns = 0
        self.started = time.monotonic()
        self.last_used = time.monotonic()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._listener, self.token = listen(str(path), transport, backlog=128)
        self._listener.settimeout(_TICK_SECONDS)
        self._inode = os.stat(path).st_ino

    # -- reading requests (threads) ---------------------------------------------------------------

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed
            if not self._slots.acquire(blocking=False):
                self._refuse(conn, "busy")
                continue
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        queued = False
        try:
            conn.settimeout(READ_SECONDS)
            data = b""
            while b"\n" not in data:
                chunk = conn.recv(1 << 16)
                if not chunk or len(data) > _MAX_HEADER:
                    return
                data += chunk
            line, _, body = data.partition(b"\n")
            header = json.loads(line)
            length = int(header.get("length") or 0) if isinstance(header, dict) else -1
            if not 0 <= length <= _MAX_BODY:
                self._refuse(conn, "a request of the wrong shape")
                return
            if not authorized(self.token, header.pop("token", None)):
                self._refuse(conn, "not authorized")  # another user on this machine, or a stale token
                return
            while len(body) < length:
                chunk = conn.recv(min(1 << 20, length - len(body)))
                if not chunk:
                    return
                body += chunk
            try:
                self.jobs.put_nowait(Job(conn, header, body[:length], time.time()))
                queued = True
            except queue.Full:
                self._refuse(conn, "busy")
        except (OSError, ValueError):
            pass
        finally:
            self._slots.release()
            if not queued:
                conn.close()

    def _refuse(self, conn: socket.socket, reason: str) -> None:
        self.refused += 1
        with contextlib.suppress(OSError):
            conn.settimeout(0.5)
            conn.sendall(b"".join(fallback(reason)))
        conn.close()

    # -- answering (the main thread) --------------------------------------------------------------

    def _answer(self, job: Job) -> tuple[bytes, bytes]:
        op = job.header.get("op")
        if op == "status":
            return encode(self.status())
        if op == "stop":
            self.stopping.set()
            return encode({"stopping": True, "pid": os.getpid()})
        limit = self.op_seconds
        deadline = job.header.get("deadline")
        if isinstance(deadline, int | float):
            limit = deadline - time.time()
            if limit <= 0:
                return fallback("late")  # the client has given up and is doing it itself
        return self._within(limit, lambda: self.answers.answer(job.header, job.body))

    def _within(self, seconds: float, work: Callable[[], tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            return work()  # Windows has no SIGALRM: there the client's own timeout bounds the wait
        armed = [True]

        def overrun(signum: int, frame: Any) -> None:
            if armed[0]:
                armed[0] = False
                raise _Overrun

        previous = signal.signal(signal.SIGALRM, overrun)
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        try:
            try:
                return work()
            finally:
                armed[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Overrun:
            self.overruns += 1
            self.answers.reset()  # whatever it held may be mid-transaction: open it again
            return fallback("late")
        finally:
            signal.signal(signal.SIGALRM, previous)

    def _idle(self) -> tuple[bytes, bytes]:
        self.answers.idle()
        return b"", b""

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "socket": str(self.path),
            "transport": self.transport,
            "served": self.served,
            "refused": self.refused,
            "overruns": self.overruns,
            "queued": self.jobs.qsize(),
            "uptime_seconds": round(time.monotonic() - self.started, 1),
            "idle_for": round(time.monotonic() - self.last_used, 1),
            "idle_seconds": self.idle_seconds,
            "rss_mib": round(rss_mib(), 1),
            "peak_rss_mib": round(peak_rss_mib(), 1),
            "max_rss_mib": self.max_rss_mib,
            "held_mib": self.answers.held(),
        }

    def why_stop(self) -> str | None:
        """Why the process should exit now, or None to keep serving."""
        if self.stopping.is_set():
            return "stopped"
        try:
            if os.stat(self.path).st_ino != self._inode:
                return "socket taken over"
        except FileNotFoundError:
            return "socket removed"
        if self.project_dir is not None and not self.project_dir.is_dir():
            return "project gone"
        if time.monotonic() - self.last_used > self.idle_seconds:
            return "idle"
        return None

    def run(self, log: Callable[[str], None]) -> str:
        """Serve until a reason to stop; returns it (`memory`: the caller starts a fresh process)."""
        acceptor = threading.Thread(target=self._accept, daemon=True)
        acceptor.start()
        last_check = 0.0
        try:
            while True:
                try:
                    job = self.jobs.get(timeout=IDLE_SLICE_SECONDS)
                except queue.Empty:
                    if time.monotonic() - last_check > _TICK_SECONDS:
                        last_check = time.monotonic()
                        reason = self.why_stop()
                        if reason is not None:
                            return reason
                    try:
                        self._within(self.op_seconds, self._idle)
                    except Exception as exc:
                        log(f"idle work failed: {exc!r}")
                    continue
                self.last_used = time.monotonic()
                try:
                    head, body = self._answer(job)
                except Exception as exc:  # an answerer's bug: the client falls back, the process goes on
                    log(f"request failed: {exc!r}")
                    head, body = fallback("error")
                self.served += 1
                with contextlib.suppress(OSError):
                    job.conn.settimeout(1.0)
                    job.conn.sendall(head + body)
                job.conn.close()
                if job.header.get("op") not in ("status", "stop") and rss_mib() > self.max_rss_mib:
                    return "memory"  # requests made it grow: a fresh process (the caller execs one)
                if time.monotonic() - last_check > _TICK_SECONDS:
                    last_check = time.monotonic()
                    reason = self.why_stop()
                    if reason is not None:
                        return reason
        finally:
            self.stopping.set()
            self._listener.close()
            self._drain()
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == self._inode:
                    self.path.unlink()
            self.answers.close()

    def _drain(self) -> None:
        """Tell whoever is still queued to do it themselves."""
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                return
            self._refuse(job.conn, "stopping")


__all__ = ["Answerer", "Job", "ResidentServer", "encode", "fallback", "reply_header", "rss_mib"]
