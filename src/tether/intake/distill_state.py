"""Where a distill run over one session stopped: the byte offset reached and the facts written so far.

One small JSON file per transcript in the state directory, written atomically, read by the next run
(`tether.intake.distill`), so a session is read once and its cap of facts holds across runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from pathlib import Path

from tether.intake.llm import DistillError
from tether.model.timestamps import iso, utcnow

__all__ = ["exclusive", "load_state", "save_state", "state_name"]


def state_name(transcript: Path) -> str:
    # The session id (file stem) for people reading the directory, a hash of the full path so two
    # projects' transcripts with the same name never share an offset.
    digest = hashlib.sha256(str(transcript.resolve()).encode()).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", transcript.stem)[:64]
    return f"{stem}-{digest}.json"


def load_state(state_file: Path) -> tuple[int, int]:
    """(byte offset reached, facts written for this session so far)."""
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0, 0
    except (OSError, ValueError) as exc:
        raise DistillError(
            f"distill state {state_file} is unreadable ({exc}): delete it to re-read the session"
        ) from None
    offset = data.get("offset") if isinstance(data, dict) else None
    if not isinstance(offset, int) or offset < 0:
        raise DistillError(
            f"distill state {state_file} has no valid offset: delete it to re-read the session"
        )
    written = data.get("written", 0)
    # A state file from before the count was kept says nothing: count from 0 rather than refuse it.
    return offset, written if isinstance(written, int) and written >= 0 else 0


def save_state(state_file: Path, transcript: Path, offset: int, written: int) -> None:
    """Write the offset and the session's fact count atomically (temp file, fsync, rename): a crash leaves
    the old state or the new."""
    from tether.fs import write_atomic

    write_atomic(
        state_file,
        json.dumps(
            {"transcript": str(transcript), "offset": offset, "written": written, "updated": iso(utcnow())}
        ),
    )


def exclusive(lock_path: Path) -> contextlib.AbstractContextManager[bool]:
    """Yield True while holding an exclusive lock on `lock_path`, False if another process holds it.

    Stop, PreCompact and SessionEnd can all start a worker for the same session; two runs over the
    same bytes would ask the model twice and race on the offset.
    """
    from tether.fs import file_lock

    return file_lock(lock_path, wait=False)
