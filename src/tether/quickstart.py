"""A session start in its own process, answered from the index alone when there is nothing to do.

A session start without the resident process (`TETHER_RESIDENT=0`, no Unix sockets, or the one that
launches it) at 10,000 memories does a handful of indexed reads; what it cost was the imports of the
ordinary path (`tether.adapters.hooks`: the workspace, the store's protocols, the memory model, the
config's TOML parser, `pathlib`, `hashlib`), ~90 ms of ~150. `answer` makes the same decisions with
`os`, `json`, `sqlite3` and `datetime` (`tether.store.sqlite.startup` for the SQL, `tether.lean` for
the checks of other modules it repeats) and says what the
ordinary path would have said, or returns None, and the ordinary path runs, whenever anything is to do or
is unusual:

- a config file with a setting in it (defaults only: no TOML parser), a team database, a shared index;
- no index, a damaged or unmigrated one, or a project of 2,000 notes or fewer (whose session start scans
  every note: `tether.lifecycle.background.HOOK_MAX_NOTES`);
- the note directories' stamps not as recorded, no scan of every note in the last minute;
- a repo map not refreshed in the last 30 s at this HEAD (read from `.git`), rule files not as last
  synced (their fingerprint, computed the same way), hints waiting, a periodic pass or the cleanup count
  due, adopted rule files (`tether rules adopt`), a session already known (a resume), a pinned memory whose
  files' existence it cannot settle.

Every check errs towards None: a stamp or fingerprint computed differently only sends the hook the
ordinary way. `tests/test_quickstart.py` pins the answer and the index's rows to the ordinary path's.
"""

from __future__ import annotations

import json
import os

from tether.lean import (
    defaults_only,
    dir_stamps,
    more_entries_than,
    project_root,
    repo_fresh,
    rules_fingerprint,
    scanned_within,
    sha256_hex,
    user_home,
)
from tether.model.limits import HOOK_INPUT_MAX_BYTES
from tether.store.sqlite.startup import StartIndex

TYPE_CHECKING = False  # not `typing`'s (see `tether.store.sqlite.startup`)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

# The session start event's name per agent (`tether.adapters.hooks.agents`).
SESSION_START = {
    "claude": "SessionStart",
    "codex": "SessionStart",
    "gemini": "SessionStart",
    "cursor": "sessionStart",
}
# The constants of the checks this repeats, each named where it lives; tests/test_quickstart.py checks them.
HOOK_MAX_NOTES = 2000  # tether.lifecycle.background
SCAN_EVERY = 60.0  # tether.lifecycle.background
REPO_FRESH_SECONDS = 30.0  # tether.lifecycle.housekeeping
RECALL_BUDGET = 2400  # tether.config.DEFAULTS["recall.budget"]
MAX_CONTEXT_CHARS = 9500  # tether.adapters.hooks.agents
PINNED_HEADER = "=== Project memory (pinned) ==="  # tether.recall.block
FOOTER = "Call the memory_get tool with an id for the full note; memory_search looks further."
CLEANUP_MIN_SESSIONS = 20  # tether.lifecycle.cleanup
CLEANUP_MIN_ACTIVE = 30
EVERY_HOURS = 6  # tether.lifecycle.passes.ARCHIVE_EVERY, tether.lifecycle.cleanup.CHECK_EVERY
STAMPS = "notes.dir_stamps"  # tether.notes.stamps
SCANNED = "notes.scanned"
SHARED_MARK = "team.shared"  # tether.workspace
ARCHIVE_PASS = "archive.last_hook_pass"  # tether.lifecycle.passes
HINTS = "housekeeping.pending_hints"
LAST_PASS = "cleanup.last_pass"  # tether.lifecycle.cleanup
HINTED = "cleanup.hinted"
CHECKED = "cleanup.last_hook_check"
RULES_HASH = "rules.hash"  # tether.intake.rulestate
META_KEYS = (STAMPS, SCANNED, SHARED_MARK, ARCHIVE_PASS, HINTS, LAST_PASS, HINTED, CHECKED, RULES_HASH)


def answer(agent: str, event_name: str, raw: bytes, environ: Mapping[str, str]) -> str | None:
    """What `tether hook AGENT EVENT` prints for this input ("": nothing), having written what the
    ordinary path writes; None when the ordinary path (`tether.adapters.hooks.main`) must run instead.
    Never raises; when it returns None nothing was written."""
    if SESSION_START.get(agent) != event_name:
        return None
    try:
        return _answer(agent, event_name, raw, environ)
    except Exception:
        return None  # the ordinary path runs, and fails open or logs as it does


def _answer(agent: str, event_name: str, raw: bytes, environ: Mapping[str, str]) -> str | None:
    text = raw.decode("utf-8", "replace")
    if len(text) > HOOK_INPUT_MAX_BYTES:
        return None
    payload = json.loads(text) if text.strip() else {}
    if not isinstance(payload, dict):
        return None
    if agent == "cursor":
        roots = payload.get("workspace_roots") or []
        cwd = str(roots[0] if roots else payload.get("cwd") or os.getcwd())
        session = str(payload.get("conversation_id") or payload.get("session_id") or "cursor")
    else:
        cwd = str(payload.get("cwd") or os.getcwd())
        session = str(payload.get("session_id") or f"{agent}-unknown")
    root = project_root(cwd)
    if root is None:
        return ""  # not a tether project: nothing to say
    home = user_home(environ)
    if environ.get("TETHER_DATABASE_URL", "").strip():
        return None
    for config in (os.path.join(home, "config.toml"), os.path.join(root, ".tether", "config.toml")):
        if not defaults_only(config):
            return None
    notes = [os.path.join(root, ".tether", "memories"), os.path.join(home, "memories")]
    if not more_entries_than(notes, HOOK_MAX_NOTES):
        return None  # a small project's session start scans every note
    index = StartIndex.open(os.path.join(root, ".tether", "index.db"))
    if index is None:
        return None
    try:
        context = _context(index, root, notes, home, session)
    finally:
        index.close()
    if context is None:
        return None
    return _render(agent, event_name, context)


def _context(index: StartIndex, root: str, notes: list[str], home: str, session: str) -> str | None:
    """The session start's text, with the session recorded; None (nothing written) when anything is to do."""
    from tether.model.timestamps import iso, parse_iso, utcnow

    now = utcnow()
    meta = index.meta(META_KEYS)
    if meta.get(SHARED_MARK) or meta.get(STAMPS) != dir_stamps(notes):
        return None  # notes came, went or were written by another program: the ordinary sync indexes them
    if index.memories() <= HOOK_MAX_NOTES or not scanned_within(meta.get(SCANNED), SCAN_EVERY):
        return None  # a small project's session start scans every note; a large one's starts the background
    state = index.repo_state()
    if not repo_fresh(state, root, REPO_FRESH_SECONDS) or state.get("mode") != "git":
        return None
    if meta.get(RULES_HASH) != rules_fingerprint(root, index.rule_file_candidates()):
        return None
    if meta.get(HINTS) not in (None, "", "[]"):
        return None  # what the passes found since: said by the ordinary path
    if _due(meta.get(ARCHIVE_PASS), now) or _cleanup_check_due(index, meta, now):
        return None
    if os.path.lexists(os.path.join(home, "adopted", sha256_hex(root.encode())[:16] + ".json")):
        return None
    pinned = []
    for mid, summary, category, scope, files, origin, owner, created, updated in index.pinned():
        if scope == "session" and owner != session:
            continue
        named = json.loads(files) if files != "[]" else []
        if named:
            alive = [_exists(index, state, root, path) for path in named]
            if True not in alive and None in alive:
                return None  # a file `RepoMap.exists` answers in a way this does not repeat
            if True not in alive:
                continue  # pinned to files that are all gone: a dead reference, not an order
        moment = parse_iso(created) if updated == created and created else parse_iso(updated)
        tag = "" if origin == "user" else f"[{origin}] "
        pinned.append((moment, f"★ [{category}] {tag}{mid} — {summary} (via pinned)", mid))
    lines: list[str] = []
    seen: dict[str, int] = {}
    used = 0
    for _, line, mid in sorted(pinned, key=lambda item: item[0], reverse=True):
        if used + len(line) + 2 > RECALL_BUDGET:
            break
        used += len(line) + 3
        lines.append(line)
        seen[mid] = 0
    fresh = {
        "turn": 0,
        "touched": [],
        "seen": seen,
        "denied": [],
        "hints": 0,
        "tools_used": False,
        "query": "",
        "in_progress": None,
    }
    if not index.start_session(session, fresh, iso(now), list(seen)):
        return None
    return "\n".join([PINNED_HEADER, *(f"- {line}" for line in lines), FOOTER]) if lines else ""


def _render(agent: str, event_name: str, context: str) -> str:
    """`agents.render` of a session start's reply, printed as `tether.adapters.hooks.main` prints it."""
    context = context[:MAX_CONTEXT_CHARS]
    if not context:
        return ""
    from tether.model.display import printable_data, safe_json

    if agent == "cursor":
        output: dict[str, object] = {"additional_context": context}
    else:
        output = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": context}}
    return safe_json(printable_data(output))


def _exists(index: StartIndex, state: dict[str, str], root: str, path: str) -> bool | None:
    """`RepoMap.exists` for a repo-relative path; None for one it would first resolve (absolute)."""
    import posixpath

    path = path.replace("\\", "/")
    if os.path.isabs(path):
        return None
    is_dir = path.endswith("/")
    norm = posixpath.normpath(path)
    if norm.startswith("../") or norm in ("..", "."):
        return False
    rel = norm + "/" if is_dir else norm
    target = os.path.join(root, norm)
    if is_dir and index.present_under(rel):
        return os.path.isdir(target)
    if not is_dir and index.present(rel):
        return os.path.lexists(target)
    try:
        changed = os.lstat(target).st_ctime_ns
    except OSError:
        return False
    return changed > int(state.get("refreshed_at_ns", "0"))


def _cleanup_check_due(index: StartIndex, meta: dict[str, str], now: datetime) -> bool:
    """Whether `tether.lifecycle.cleanup.hint_check(in_hook=True)` would count the stale memories."""
    from tether.model.timestamps import iso, parse_iso

    marker = meta.get(LAST_PASS) or ""
    if meta.get(HINTED) == (marker or "never"):
        return False
    if index.sessions_since(iso(parse_iso(marker)) if marker else None) < CLEANUP_MIN_SESSIONS:
        return False
    if index.active("project") + index.active("user") < CLEANUP_MIN_ACTIVE:
        return False
    return _due(meta.get(CHECKED), now)


def _due(last: str | None, now: datetime) -> bool:
    from datetime import timedelta

    from tether.model.timestamps import due

    return due(last, now, timedelta(hours=EVERY_HOURS))
